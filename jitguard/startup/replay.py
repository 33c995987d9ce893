"""`jitguard.warmup(plan)`: replay a warm-up plan at start-up through Triton's warm-up API.

For each planned variant, rebuild arguments of the recorded classes (see jitguard/startup/plan.py)
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

import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any, TextIO

from jitguard.render_text import kernel_label
from jitguard.replay.arguments import TORCH_DTYPE_NAMES, constexpr_value, representative_arg
from jitguard.replay.kernel_loading import module_attribute, resolve_kernel
from jitguard.startup.plan import load_plan


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
    # for "compiled": how it arrived, "cold" | "disk" | "bundle" | "remote" (None: this Triton cannot tell)
    arrived: str | None = None

    @property
    def loaded(self) -> bool:
        """New in memory, read from a cache or a bundle rather than compiled."""
        return self.status == "compiled" and self.arrived in ("disk", "bundle", "remote")

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
    bundle: Any = None  # the bundle install's InstallResult, when warmup() was given a bundle

    @property
    def compiled(self) -> list[VariantOutcome]:
        """Variants new in memory: compiled cold or loaded (see `cold` and `loaded`)."""
        return [o for o in self.outcomes if o.status == "compiled"]

    @property
    def loaded(self) -> list[VariantOutcome]:
        """Variants loaded from the disk cache, a bundle or the remote cache."""
        return [o for o in self.outcomes if o.loaded]

    @property
    def cold(self) -> list[VariantOutcome]:
        """Variants compiled (not known to be loaded)."""
        return [o for o in self.outcomes if o.status == "compiled" and not o.loaded]

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
        lines = [f"[jitguard] warm-up: {len(self.cold)} compiled, {_loaded_text(self.loaded)}"
                 f"{len(self.cached)} already compiled, {len(self.failures)} failed{pretune}, {self.seconds:.2f} s"]
        lines += [f"[jitguard] warm-up FAILED {o.label}: {o.reason}" for o in self.failures]
        lines += [f"[jitguard] warm-up pre-tune FAILED {failure}" for failure in self.pretune_failures]
        return "\n".join(lines)


def _loaded_text(loaded: list[VariantOutcome]) -> str:
    """`3 loaded (2 from the bundle, 1 from disk), ` or "" when none was loaded."""
    if not loaded:
        return ""
    origins = {"bundle": "from the bundle", "disk": "from disk", "remote": "from the remote cache"}
    counts = [(sum(1 for o in loaded if o.arrived == a), text) for a, text in origins.items()]
    return f"{len(loaded)} loaded ({', '.join(f'{n} {text}' for n, text in counts if n)}), "


# The launch options a variant's line names: the two a tuned config most often changes (the line stays short).
_DESCRIBED_OPTIONS = ("num_warps", "num_stages")


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
    parts += [f"{k}={v}" for k, v in options.items() if k in _DESCRIBED_OPTIONS]
    return ", ".join(parts)


def _warm_one(jit_fn: Any, variant: dict[str, Any], check_key: bool = True) -> tuple[str, str, str | None]:
    """Compile one variant; returns (status, reason, how it arrived). `check_key`: the plan's keys come
    from this Triton version, so the rebuilt key must equal the recorded one."""
    from jitguard import triton_compat

    reason = variant.get("unrebuildable")
    if reason:
        return "failed", reason, None
    device, device_index = triton_compat.active_device()
    names = triton_compat.param_names(jit_fn)
    params = variant.get("params") or {}
    missing = [n for n in names if n not in params]
    if missing:
        changed = f"the kernel's parameters changed since the plan was made (not in plan: {', '.join(missing)})"
        return "failed", changed, None
    unknown = [n for n in params if n not in names]
    if unknown:
        return "failed", f"the kernel's parameters changed since the plan was made (gone: {', '.join(unknown)})", None
    args = [representative_arg(n, params[n], device) for n in names]
    launch_kwargs = variant.get("launch_kwargs")
    if launch_kwargs is None:  # the key did not say which options the call passed: pass them all
        launch_kwargs = dict(variant.get("options") or {})
    recorded_key = (variant.get("key") or "") if check_key else ""
    cache = triton_compat.kernel_cache(jit_fn, device_index)
    if recorded_key and recorded_key in {triton_compat.key_string(k) for k in cache}:
        return "cached", "", None
    before, started_wall = set(cache), time.time()
    jit_fn.warmup(*args, grid=(1,), **launch_kwargs)
    cache = triton_compat.kernel_cache(jit_fn, device_index)
    new_keys = [triton_compat.key_string(k) for k in cache if k not in before]
    if recorded_key and recorded_key not in {triton_compat.key_string(k) for k in cache}:
        got = new_keys[0] if new_keys else "(nothing new)"
        return "failed", f"rebuilt a different variant: recorded key {recorded_key!r}, warmed {got!r}", None
    if not new_keys:
        return "cached", "", None
    return "compiled", "", _arrival(jit_fn, device_index, [k for k in cache if k not in before], started_wall)


def _arrival(jit_fn: Any, device_index: int, new_keys: list[Any], started_wall: float) -> str | None:
    """How the variant just made arrived, from its cache entry (jitguard.runtime.arrival)."""
    from jitguard import triton_cache
    from jitguard.runtime.arrival import kernel_arrival

    if not new_keys:
        return None
    entry_dir = triton_cache.compiled_entry_dir(jit_fn, device_index, new_keys[0])
    return kernel_arrival(None, entry_dir, started_wall, triton_cache.remote_cache_active())


# A pre-tune launches the kernel: its pointer buffers must hold what it may touch, at most this many elements.
PRETUNE_MAX_ELEMENTS = 2**26


def resolve_launcher(entry: dict[str, Any]) -> Any:
    """What the program launches for a plan entry: the module attribute named by its qualname (an
    autotuner, heuristics, or the kernel itself). LookupError with a one-line reason otherwise."""
    module, name, target = module_attribute(entry)
    if target is None:
        raise LookupError(f"kernel {name!r} is not a module-level name of {module.__name__} (made inside a "
                          "function?): pre-tune it with jitguard.tuning.pretune.pretune and a launcher")
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
            values[name] = constexpr_value(name, value) if kind == "constexpr" else value
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
    from jitguard.tuning.pretune import pretune, tunings_to_pretune

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


def _install_bundle(data: dict[str, Any], bundle: str | os.PathLike, say: Any) -> Any:
    """Install a compile bundle's matching entries into Triton's cache before the warm-up (see
    jitguard/runtime/bundle_install.py); the plan's kernels it resolves are checked against the bundle's sources."""
    from jitguard import triton_compat
    from jitguard.runtime.bundle_install import install_bundle

    kernels = {}
    for entry in data["kernels"]:
        try:
            kernels[kernel_label(entry)] = resolve_kernel(entry)
        except LookupError:
            pass  # named by the warm-up itself
    try:
        arch: int | None = int(triton_compat.active_driver().get_current_target().arch)
    except Exception:  # no target to compare: Triton's key still keeps another arch's entries unused
        arch = None
    installed = install_bundle(bundle, arch=arch, kernels=kernels)
    for line in installed.skipped:
        say(f"[jitguard] bundle: {line}")
    say(installed.summary())
    return installed


def _status_text(outcome: VariantOutcome) -> str:
    if outcome.loaded:
        return {"bundle": "loaded from the bundle", "disk": "loaded from disk"}.get(
            str(outcome.arrived), "loaded from the remote cache")
    return outcome.status


def _warm_variants(name: str, jit_fn: Any, lookup_error: str, variants: list[dict[str, Any]], same_version: bool,
                   counter: list[int], result: WarmupResult, say: Any, quiet: bool) -> None:
    """Warm each variant of one kernel; `counter` is [variants done, variants in the plan] for the progress lines."""
    kernel_seconds = 0.0
    for index, variant in enumerate(variants, start=1):
        counter[0] += 1
        outcome = VariantOutcome(kernel=name, index=index, status="failed", describe=_describe(variant))
        t0 = time.perf_counter()
        if jit_fn is None:
            outcome.reason = lookup_error
        else:
            try:
                outcome.status, outcome.reason, outcome.arrived = _warm_one(jit_fn, variant, check_key=same_version)
            except Exception as exc:  # one bad variant must not stop the others
                outcome.status, outcome.reason = "failed", f"{type(exc).__name__}: {exc}".splitlines()[0]
        outcome.seconds = time.perf_counter() - t0
        kernel_seconds += outcome.seconds
        result.outcomes.append(outcome)
        step = f"{counter[0]}/{counter[1]}"
        if outcome.status == "failed":
            say(f"[jitguard] warm-up {step} FAILED {outcome.label} ({outcome.describe}): {outcome.reason}")
        elif not quiet:
            say(f"[jitguard] warm-up {step} {outcome.label} {_status_text(outcome)} in {outcome.seconds:.2f} s "
                f"({outcome.describe})")
    if variants and not quiet:
        say(f"[jitguard] warm-up {name}: {len(variants)} variant(s), {kernel_seconds:.2f} s")


def _pretune_entry(entry: dict[str, Any], name: str, jit_fn: Any, lookup_error: str, result: WarmupResult,
                   say: Any, quiet: bool) -> None:
    """Pre-tune the autotune keys a plan entry recorded (nothing for a kernel that is not autotuned)."""
    keys_tuned = (entry.get("autotune") or {}).get("keys_tuned") or []
    if keys_tuned and jit_fn is None:
        from jitguard.tuning.pretune import tunings_to_pretune

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


def warmup(plan: dict[str, Any] | str | os.PathLike, stream: TextIO | None = None, quiet: bool = False,
           strict: bool = False, bundle: str | os.PathLike | None = None) -> WarmupResult:
    """Precompile every variant of `plan` (a dict or a JSON file) on the current device.

    A plan is code: the warm-up imports the modules it names (each only after a static check that its
    file defines a Triton kernel of the recorded name). Load only plans you wrote or trust; a field of
    the wrong type is a PlanInputError naming its path, before anything is imported.

    Prints a progress line per variant (to `stream`, default stderr; `quiet=True` prints only the
    summary and failures). Returns a `WarmupResult`; `strict=True` raises `WarmupError` if any
    variant failed. Call it before serving, under the same backend (a GPU, or `jitguard.offline`).
    `bundle`: a compile bundle (`jitguard bundle`) whose matching entries go into Triton's cache first,
    so the variants load instead of compiling; a bundle is code, pass only one you trust.
    """
    data = load_plan(plan)
    out = stream or sys.stderr
    result = WarmupResult()
    started = time.perf_counter()

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
    if bundle is not None:
        result.bundle = _install_bundle(data, bundle, say)
    counter = [0, sum(len(k.get("variants") or []) for k in data["kernels"])]  # variants done, in all
    for entry in data["kernels"]:
        name = kernel_label(entry)
        try:
            jit_fn = resolve_kernel(entry)
            lookup_error = ""
        except LookupError as exc:
            jit_fn, lookup_error = None, str(exc)
        _warm_variants(name, jit_fn, lookup_error, entry.get("variants") or [], same_version, counter, result,
                       say, quiet)
        _pretune_entry(entry, name, jit_fn, lookup_error, result, say, quiet)
    result.seconds = time.perf_counter() - started
    say(result.summary().splitlines()[0])
    if strict and not result.ok:
        raise WarmupError(result.summary(), result)
    return result
