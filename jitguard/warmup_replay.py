"""`jitguard.warmup(plan)`: replay a warm-up plan at start-up through Triton's warm-up API.

For each planned variant, rebuild arguments of the recorded classes (see jitguard/warmup_plan.py)
and call the kernel's own `JITFunction.warmup(*args, grid=..., **constexprs_and_options)`, which
compiles into Triton's in-memory cache without launching. The same traffic then finds every
variant already compiled.

    result = jitguard.warmup("plan.json")        # at start-up, before serving
    assert result.ok, result.summary()

Autotuned kernels whose plan entry carries `autotune.keys_tuned` are pre-tuned: the kernel is
launched once per recorded key value and tensor dtype set (`autotune.tunings_by_dtype`: Triton's
tuning key holds the tensors' dtypes too), grid (1,), the other arguments rebuilt from the
kernel's variant whose pointer dtypes are the recorded ones (in the recorded order), each pointer a
zeroed buffer of as many elements as the product of the int arguments, at least 64, so the
autotuner benchmarks its configs now and serving finds every tuning done. A plan written before
`tunings_by_dtype` existed is pre-tuned as then: once per key value, from the first rebuildable
variant. A tuning that cannot be rebuilt (a tensor in the key, buffers too large, no variant with
the recorded dtypes) is a named failure, never skipped silently.

Pointers: a small tensor of the recorded dtype on Triton's active torch device, offset by one
element when the variant was `unaligned`. A variant the plan cannot rebuild (kernel not
importable, tuple arguments, unknown dtype, a rebuilt key that differs from the recorded one) is
reported by name, never skipped. Kernels are found by importing their module by name: a script's
top level is never run again to find one.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any, TextIO

from jitguard.render_text import kernel_label
from jitguard.warmup_plan import INT_VALUES, TORCH_DTYPE_NAMES, int_type_of, load_plan


class WarmupError(RuntimeError):
    """Raised by `warmup(..., strict=True)` when a variant could not be rebuilt; lists every one."""

    def __init__(self, message: str, result: WarmupResult) -> None:
        super().__init__(message)
        self.result = result


@dataclass
class VariantOutcome:
    """What happened to one variant of a plan: compiled, already compiled, or failed (with why)."""

    kernel: str
    index: int  # 1-based index of the variant within its kernel's plan entry
    status: str  # "compiled" | "cached" | "failed"
    seconds: float = 0.0
    reason: str = ""
    describe: str = ""

    @property
    def label(self) -> str:
        return f"{self.kernel}#{self.index}"


@dataclass
class WarmupResult:
    """The outcome of `warmup(plan)`: one `VariantOutcome` per planned variant, the key values
    pre-tuned per autotuned kernel, the pre-tunes that failed (each names kernel, values and why),
    and the time taken."""

    outcomes: list[VariantOutcome] = field(default_factory=list)
    seconds: float = 0.0
    pretuned: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    pretune_failures: list[str] = field(default_factory=list)
    # {kernel: [{"key": key values, "dtypes": the tensor dtypes launched, or None for an older plan}]}
    pretuned_tunings: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    @property
    def compiled(self) -> list[VariantOutcome]:
        return [o for o in self.outcomes if o.status == "compiled"]

    @property
    def cached(self) -> list[VariantOutcome]:
        return [o for o in self.outcomes if o.status == "cached"]

    @property
    def failures(self) -> list[VariantOutcome]:
        return [o for o in self.outcomes if o.status == "failed"]

    @property
    def ok(self) -> bool:
        """True when every planned variant is now in Triton's in-memory cache and every planned
        tuning was pre-tuned."""
        return not self.failures and not self.pretune_failures

    def summary(self) -> str:
        """One line, then one line per failure."""
        tuned = sum(len(v) for v in self.pretuned.values())
        pretune = (f", {tuned} autotune key(s) pre-tuned, {len(self.pretune_failures)} failed"
                   if self.pretuned or self.pretune_failures else "")
        lines = [f"[jitguard] warm-up: {len(self.compiled)} compiled, {len(self.cached)} already compiled, "
                 f"{len(self.failures)} failed{pretune}, {self.seconds:.2f} s"]
        lines += [f"[jitguard] warm-up FAILED {o.label}: {o.reason}" for o in self.failures]
        lines += [f"[jitguard] warm-up pre-tune FAILED {failure}" for failure in self.pretune_failures]
        return "\n".join(lines)


def _loaded_from(file: str) -> Any:
    """A module of this process loaded from `file` (the running script's `__main__` included), or None."""
    absolute = os.path.realpath(file)
    for module in list(sys.modules.values()):
        origin = getattr(module, "__file__", None)
        if origin and os.path.realpath(origin) == absolute:
            return module
    return None


def importable_name(file: str) -> str | None:
    """The dotted module name `file` is imported under from some sys.path entry, or None."""
    absolute = os.path.realpath(file)
    if not absolute.endswith(".py"):
        return None
    for entry in sys.path:
        root = os.path.realpath(entry or os.getcwd())
        if not absolute.startswith(root + os.sep):
            continue
        parts = os.path.relpath(absolute, root)[:-3].split(os.sep)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if not parts or not all(part.isidentifier() for part in parts):
            continue
        name = ".".join(parts)
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is not None and spec.origin and os.path.realpath(spec.origin) == absolute:
            return name
    return None


def _kernel_module(module_name: str, file: str) -> tuple[Any, list[str]]:
    """The module that defines a planned kernel, found by importing modules by name, never by
    running a file: (module, []) or (None, [why not, ...])."""
    errors: list[str] = []
    if module_name and module_name != "__main__":
        try:
            return importlib.import_module(module_name), []
        except Exception as exc:  # any import failure is reported, then the file is tried
            errors.append(f"import {module_name}: {type(exc).__name__}: {exc}")
    if file:
        loaded = _loaded_from(file)
        if loaded is not None:
            return loaded, []  # already running here (this very script, say): nothing is executed again
    if module_name == "__main__":
        errors.append(f"it was defined in a script run as `python {file or '?'}` (module __main__), and jitguard "
                      "does not run scripts to find kernels: move the kernel into an importable module, or call "
                      "jitguard.warmup from that script after the kernel is defined")
        return None, errors
    if not file:
        return None, errors or ["no module or file recorded"]
    if not os.path.isfile(file):
        errors.append(f"{file}: no such file")
        return None, errors
    name = importable_name(file)
    if name is None:
        errors.append(f"{file} is not importable as a module (no sys.path entry holds it); jitguard does not "
                      "run files to find kernels")
        return None, errors
    try:
        return importlib.import_module(name), []
    except Exception as exc:
        errors.append(f"import {name} ({file}): {type(exc).__name__}: {exc}")
        return None, errors


def _module_attribute(entry: dict[str, Any]) -> tuple[Any, str, Any]:
    """(module, qualname, the attribute it names or None) for a plan entry; LookupError naming the
    kernel when its module cannot be imported."""
    module_name, name, file = entry.get("module") or "", entry.get("qualname") or entry["name"], entry.get("file") or ""
    module, errors = _kernel_module(module_name, file)
    if module is None:
        raise LookupError(f"kernel {name!r} cannot be imported ({'; '.join(errors)})")
    target: Any = module
    for part in name.split("."):
        target = getattr(target, part, None)
        if target is None:
            break
    return module, name, target


def resolve_kernel(entry: dict[str, Any]) -> Any:
    """The JITFunction a plan entry names: by its module's name first, else by the name its file is
    importable under. A script (`__main__`) is never run again: its kernels are found only in the
    script itself. Raises LookupError with a one-line reason naming the kernel, module and file.
    """
    from jitguard import triton_compat

    module, name, target = _module_attribute(entry)
    jit_fn = triton_compat.unwrap_jit_function(target) if target is not None else None
    if jit_fn is None:
        # A kernel defined inside a function is no module attribute; Triton's registry may know it.
        jit_fn = triton_compat.registered_kernel(module.__name__, name.rsplit(".", 1)[-1])
    if jit_fn is None:
        where = getattr(module, "__file__", None) or module.__name__
        raise LookupError(f"kernel {name!r} is gone: module {module.__name__} ({where}) "
                          "has no Triton kernel of that name")
    return jit_fn


def _torch_dtype(entry: dict[str, Any]) -> Any:
    import torch
    names = []
    element = (entry.get("type") or "").lstrip("*")
    if element in TORCH_DTYPE_NAMES:
        names.append(TORCH_DTYPE_NAMES[element])
    if entry.get("dtype"):
        names.append(entry["dtype"])
    for name in names:
        dtype = getattr(torch, name, None)
        if isinstance(dtype, torch.dtype):
            return dtype
    raise ValueError(f"unknown pointer dtype {entry.get('type')!r}")


def representative_arg(name: str, entry: dict[str, Any], device: Any, elements: int = 64) -> Any:
    """A value of parameter `name` in the class a recorded `entry` names (a tensor of `elements`
    zeros of its dtype and alignment, an int of its divisibility class, the constexpr itself): what a
    warm-up or a cost check passes to compile that variant, and a pre-tune launches with."""
    kind = entry.get("kind")
    if kind == "constexpr":
        return entry.get("value")
    if kind == "none":
        return None
    if kind == "bool":
        return True
    if kind == "float":
        return 1.5
    if kind == "int":
        value = INT_VALUES.get((int_type_of(entry.get("type") or ""), entry.get("spec")))
        if value is None:
            raise ValueError(f"argument {name!r}: no representative value for {entry.get('type')} {entry.get('spec')}")
        return value
    if kind == "ptr":
        import torch
        dtype = _torch_dtype(entry)
        unaligned = entry.get("spec") == "unaligned"
        buffer = torch.zeros(elements + unaligned, dtype=dtype, device=device)
        if unaligned:
            view = buffer[1:]
            if view.data_ptr() % 16 == 0:  # pragma: no cover - a 16-byte element type
                raise ValueError(f"argument {name!r}: cannot make an unaligned {dtype} pointer")
            return view
        return buffer
    raise ValueError(f"argument {name!r}: cannot rebuild kind {kind!r}")


def _describe(variant: dict[str, Any]) -> str:
    parts = []
    for name, entry in variant.get("params", {}).items():
        if entry.get("kind") == "constexpr":
            parts.append(f"{name}={entry.get('value')!r}")
        elif entry.get("kind") in ("int", "ptr") and entry.get("spec") not in (None, "off", "aligned16"):
            parts.append(f"{name}:{entry.get('spec')}")
    options = variant.get("launch_kwargs")
    if options is None:
        options = variant.get("options") or {}
    parts += [f"{k}={v}" for k, v in options.items() if k in ("num_warps", "num_stages")]
    return ", ".join(parts)


def _warm_one(jit_fn: Any, variant: dict[str, Any], check_key: bool = True) -> tuple[str, str]:
    """Compile one variant; returns (status, reason). `check_key`: the plan's keys come from this
    Triton version, so the rebuilt key must equal the recorded one."""
    from jitguard import triton_compat

    reason = variant.get("unrebuildable")
    if reason:
        return "failed", reason
    device, device_index = triton_compat.active_device()
    names = triton_compat.param_names(jit_fn)
    params = variant.get("params") or {}
    missing = [n for n in names if n not in params]
    if missing:
        return "failed", f"the kernel's parameters changed since the plan was made (not in plan: {', '.join(missing)})"
    unknown = [n for n in params if n not in names]
    if unknown:
        return "failed", f"the kernel's parameters changed since the plan was made (gone: {', '.join(unknown)})"
    args = [representative_arg(n, params[n], device) for n in names]
    launch_kwargs = variant.get("launch_kwargs")
    if launch_kwargs is None:  # the key did not say which options the call passed: pass them all
        launch_kwargs = dict(variant.get("options") or {})
    recorded_key = (variant.get("key") or "") if check_key else ""
    cache = triton_compat.kernel_cache(jit_fn, device_index)
    if recorded_key and recorded_key in {triton_compat.key_string(k) for k in cache}:
        return "cached", ""
    before = set(cache)
    jit_fn.warmup(*args, grid=(1,), **launch_kwargs)
    cache = triton_compat.kernel_cache(jit_fn, device_index)
    new_keys = [triton_compat.key_string(k) for k in cache if k not in before]
    if recorded_key and recorded_key not in {triton_compat.key_string(k) for k in cache}:
        got = new_keys[0] if new_keys else "(nothing new)"
        return "failed", f"rebuilt a different variant: recorded key {recorded_key!r}, warmed {got!r}"
    return ("compiled", "") if new_keys else ("cached", "")


# A pre-tune launches the kernel: its pointer buffers must hold what it may touch, at most this many elements.
PRETUNE_MAX_ELEMENTS = 2**26


def resolve_launcher(entry: dict[str, Any]) -> Any:
    """What the program launches for a plan entry: the module attribute named by its qualname (an
    autotuner, heuristics, or the kernel itself). LookupError with a one-line reason otherwise."""
    module, name, target = _module_attribute(entry)
    if target is None:
        raise LookupError(f"kernel {name!r} is not a module-level name of {module.__name__} (made inside a "
                          "function?): pre-tune it with jitguard.autotune_pretune.pretune and a launcher")
    return target


def _pretune_arguments(jit_fn: Any, launcher: Any, variant: dict[str, Any], key_values: dict[str, Any],
                       device: Any) -> dict[str, Any]:
    """Keyword arguments that launch `launcher` once with `key_values` in its tuning key; ValueError
    naming the parameter when a key value cannot be represented."""
    from jitguard import triton_compat

    supplied = triton_compat.launcher_supplied_names(launcher)
    params = variant.get("params") or {}
    names = [n for n in triton_compat.param_names(jit_fn) if n not in supplied]
    values: dict[str, Any] = {}
    for name in names:
        entry = params.get(name) or {}
        if name in key_values:
            value = key_values[name]
            kind = entry.get("kind")
            if kind == "int" and not (isinstance(value, int) and not isinstance(value, bool)):
                raise ValueError(f"key {name}={value!r} cannot be represented: the kernel takes an int there")
            if kind in ("ptr", "tuple", "none"):
                raise ValueError(f"key {name}={value!r} cannot be represented: a {kind} argument's value in the key "
                                 "is not recorded")
            values[name] = value
        elif entry.get("kind") == "int":
            values[name] = representative_arg(name, entry, device)
    elements = 1
    for value in values.values():
        if isinstance(value, int) and not isinstance(value, bool):
            elements *= max(abs(value), 1)
    if elements > PRETUNE_MAX_ELEMENTS:
        shown = ", ".join(f"{k}={v}" for k, v in values.items() if isinstance(v, int))
        raise ValueError(f"pointer buffers for {shown} would need {elements} elements (over {PRETUNE_MAX_ELEMENTS})")
    args = {}
    for name in names:
        args[name] = values[name] if name in values else representative_arg(name, params.get(name) or {}, device,
                                                                              max(elements, 64))
    return args


def _pointer_dtypes(variant: dict[str, Any]) -> list[tuple[str, str]]:
    """[(parameter, dtype as `str(tensor.dtype)` spells it)] of a variant's pointers, in argument order."""
    out = []
    for name, entry in (variant.get("params") or {}).items():
        if entry.get("kind") != "ptr":
            continue
        dtype = entry.get("dtype") or TORCH_DTYPE_NAMES.get((entry.get("type") or "").lstrip("*")) or "?"
        out.append((name, dtype if dtype.startswith("torch.") else f"torch.{dtype}"))
    return out


def _variant_for_dtypes(variants: list[dict[str, Any]], dtypes: list[str]) -> tuple[dict[str, Any], list[str]] | None:
    """(the first rebuildable variant whose pointers have exactly the tensor dtypes `dtypes`, its
    pointer names in the order that reproduces `dtypes`), or None. Triton's tuning key lists the
    dtypes in the order the call passed the tensors: a variant in argument order is preferred, then
    one whose pointers, reordered, give the same list (a call that passed them as keywords)."""
    candidates = [v for v in variants if not v.get("unrebuildable")]
    for variant in candidates:
        pointers = _pointer_dtypes(variant)
        if [d for _, d in pointers] == list(dtypes):
            return variant, [n for n, _ in pointers]
    for variant in candidates:
        pointers = _pointer_dtypes(variant)
        if sorted(d for _, d in pointers) != sorted(dtypes):
            continue
        order: list[str] = []
        for dtype in dtypes:
            order.append(next(n for n, d in pointers if d == dtype and n not in order))
        return variant, order
    return None


def _pretune(entry: dict[str, Any], jit_fn: Any, result: WarmupResult) -> None:
    """Pre-tune one autotuned plan entry: every recorded key value (and dtype set), launched once
    (see module docstring)."""
    from jitguard import triton_compat
    from jitguard.autotune_pretune import pretune, tunings_to_pretune

    name = entry.get("name") or "?"
    autotune = entry.get("autotune") or {}
    keys = list(autotune.get("keys_tuned") or [])
    by_dtype = isinstance(autotune.get("tunings_by_dtype"), list)  # absent from plans of older versions
    tunings = tunings_to_pretune({name: autotune})[name]
    try:
        launcher = resolve_launcher(entry)
        if not triton_compat.is_autotuned(launcher):
            raise LookupError(f"{name} is no longer autotuned (the plan recorded tunings)")
        variants = entry.get("variants") or []
        variant = next((v for v in variants if not v.get("unrebuildable")), None)
        if variant is None:
            raise LookupError(f"no variant of {name} can be rebuilt to launch it")
    except LookupError as exc:
        result.pretune_failures.extend(_pretune_label(name, t) + f": {exc}" for t in tunings)
        return
    device, _ = triton_compat.active_device()

    def launch(**key_values: Any) -> None:
        launcher[(1,)](**_pretune_arguments(jit_fn, launcher, variant, key_values, device))

    def launch_with(dtypes: list[str], **key_values: Any) -> None:
        found = _variant_for_dtypes(variants, dtypes)
        if found is None:
            have = sorted({str([d for _, d in _pointer_dtypes(v)]) for v in variants if not v.get("unrebuildable")})
            raise LookupError(f"no rebuildable variant of {name} in the plan has pointers of dtypes {dtypes} "
                              f"(variants have {', '.join(have) or 'none'})")
        chosen, pointer_order = found
        arguments = _pretune_arguments(jit_fn, launcher, chosen, key_values, device)
        # Triton's tuning key lists tensor dtypes in keyword order: pass the pointers last, in the recorded order.
        ordered = {k: v for k, v in arguments.items() if k not in pointer_order}
        ordered.update((k, arguments[k]) for k in pointer_order if k in arguments)
        launcher[(1,)](**ordered)

    if by_dtype:
        done = pretune({name: autotune}, {name: launch_with}, pass_dtypes=True)
    else:
        done = pretune({name: {"keys_tuned": keys}}, {name: launch})
    result.pretuned.setdefault(name, []).extend(done.pretuned.get(name, []))
    result.pretuned_tunings.setdefault(name, []).extend(done.pretuned_tunings.get(name, []))
    result.pretune_failures.extend(done.errors)


def _pretune_label(name: str, tuning: dict[str, Any]) -> str:
    """`kernel {key values}`, and ` dtypes [...]` when the plan recorded them: how a pre-tune failure starts."""
    dtypes = tuning.get("dtypes")
    return f"{name} {tuning['key']}" + (f" dtypes {dtypes}" if dtypes is not None else "")


def warmup(plan: dict[str, Any] | str | os.PathLike, stream: TextIO | None = None, quiet: bool = False,
           strict: bool = False) -> WarmupResult:
    """Precompile every variant of `plan` (a dict or a JSON file) on the current device.

    Prints a progress line per variant (to `stream`, default stderr; `quiet=True` prints only the
    summary and failures). Returns a `WarmupResult`; `strict=True` raises `WarmupError` if any
    variant failed. Call it before serving, under the same backend (a GPU, or `jitguard.offline`).
    """
    data = load_plan(plan)
    out = stream or sys.stderr
    result = WarmupResult()
    started = time.perf_counter()
    total = sum(len(k.get("variants") or []) for k in data["kernels"])
    done = 0

    def say(line: str) -> None:
        try:
            out.write(line + "\n")
            out.flush()
        except Exception:  # a closed stream must not stop the warm-up
            pass

    from jitguard import triton_compat

    recorded_versions = data.get("triton_versions") or []
    same_version = not recorded_versions or triton_compat.TRITON_VERSION in recorded_versions
    if not same_version:
        say(f"[jitguard] warm-up: the plan was recorded with Triton {', '.join(recorded_versions)}, this is "
            f"{triton_compat.TRITON_VERSION}: keys are not compared, re-record the plan to check them")
    for entry in data["kernels"]:
        name = kernel_label(entry)
        variants = entry.get("variants") or []
        try:
            jit_fn = resolve_kernel(entry)
            lookup_error = ""
        except LookupError as exc:
            jit_fn, lookup_error = None, str(exc)
        kernel_seconds = 0.0
        for index, variant in enumerate(variants, start=1):
            done += 1
            outcome = VariantOutcome(kernel=name, index=index, status="failed", describe=_describe(variant))
            t0 = time.perf_counter()
            if jit_fn is None:
                outcome.reason = lookup_error
            else:
                try:
                    outcome.status, outcome.reason = _warm_one(jit_fn, variant, check_key=same_version)
                except Exception as exc:  # one bad variant must not stop the others
                    outcome.status, outcome.reason = "failed", f"{type(exc).__name__}: {exc}".splitlines()[0]
            outcome.seconds = time.perf_counter() - t0
            kernel_seconds += outcome.seconds
            result.outcomes.append(outcome)
            if outcome.status == "failed":
                say(f"[jitguard] warm-up {done}/{total} FAILED {outcome.label} ({outcome.describe}): {outcome.reason}")
            elif not quiet:
                say(f"[jitguard] warm-up {done}/{total} {outcome.label} {outcome.status} in {outcome.seconds:.2f} s"
                    f" ({outcome.describe})")
        if variants and not quiet:
            say(f"[jitguard] warm-up {name}: {len(variants)} variant(s), {kernel_seconds:.2f} s")
        keys_tuned = (entry.get("autotune") or {}).get("keys_tuned") or []
        if keys_tuned and jit_fn is None:
            from jitguard.autotune_pretune import tunings_to_pretune

            result.pretune_failures.extend(f"{_pretune_label(name, t)}: {lookup_error}"
                                           for t in tunings_to_pretune({name: entry["autotune"]})[name])
        elif keys_tuned:
            failed_before, t0 = len(result.pretune_failures), time.perf_counter()
            _pretune(entry, jit_fn, result)
            for failure in result.pretune_failures[failed_before:]:
                say(f"[jitguard] warm-up pre-tune FAILED {failure}")
            if not quiet:
                say(f"[jitguard] warm-up {name}: {len(result.pretuned.get(name, []))} autotune key(s) pre-tuned, "
                    f"{time.perf_counter() - t0:.2f} s")
    result.seconds = time.perf_counter() - started
    say(result.summary().splitlines()[0])
    if strict and not result.ok:
        raise WarmupError(result.summary(), result)
    return result
