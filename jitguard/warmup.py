"""Warm-up plans: build one from observed compiles, replay it at start-up through Triton's warm-up API.

A plan lists, per kernel, every variant a run compiled: each parameter's class (int `one`,
`div16`, `plain`, i64; pointer dtype and alignment), the constexpr values and the launch options.
`warmup(plan)` rebuilds each variant with representative values and calls the kernel's own
`JITFunction.warmup(*args, grid=..., **constexprs_and_options)`, which compiles into Triton's
in-memory cache without launching. The same traffic then finds every variant already compiled.

    plan = build_plan("jitguard-logs/")          # a directory of NDJSON logs, or report.json
    json.dump(plan, open("plan.json", "w"))
    ...
    result = jitguard.warmup("plan.json")        # at start-up, before serving
    assert result.ok, result.summary()

Representative values: int `one` -> 1, `div16` -> 16, `plain` (and `off`, not specialized) -> 17;
i64 -> 2**31 + 16 / 2**31 + 17; u64 -> 2**63 + 16 / 2**63 + 17. Pointers: a small tensor of the
recorded dtype on Triton's active torch device, offset by one element when the variant was
`unaligned`. A variant the plan cannot rebuild (kernel not importable, tuple arguments, unknown
dtype, a rebuilt key that differs from the recorded one) is reported by name, never skipped.

Plan and event handling import neither Triton nor torch; `warmup` imports both.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
import time
import types
from dataclasses import dataclass, field
from typing import Any, TextIO

import click

from jitguard.events import CompileEvent

PLAN_FORMAT = 1

# Triton pointer element types -> torch dtype names.
_TORCH_DTYPE_NAMES = {
    "fp64": "float64", "fp32": "float32", "fp16": "float16", "bf16": "bfloat16",
    "i64": "int64", "i32": "int32", "i16": "int16", "i8": "int8", "i1": "bool", "u1": "bool",
    "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
    "fp8e4nv": "float8_e4m3fn", "fp8e5": "float8_e5m2", "fp8e4b8": "float8_e4m3fnuz",
    "fp8e5b16": "float8_e5m2fnuz",
}

INT_VALUES = {
    ("i32", "one"): 1, ("i32", "div16"): 16, ("i32", "plain"): 17, ("i32", "off"): 17,
    ("i64", "div16"): 2**31 + 16, ("i64", "plain"): 2**31 + 17, ("i64", "off"): 2**31 + 17,
    ("u64", "div16"): 2**63 + 16, ("u64", "plain"): 2**63 + 17, ("u64", "off"): 2**63 + 17,
}


class PlanInputError(ValueError):
    """The input of `build_plan` or `warmup` is unusable (no such file, not a report, not a plan)."""


class WarmupError(RuntimeError):
    """Raised by `warmup(..., strict=True)` when a variant could not be rebuilt; lists every one."""

    def __init__(self, message: str, result: "WarmupResult") -> None:
        super().__init__(message)
        self.result = result


# --- building a plan (no Triton, no torch) ------------------------------------------------------

def _param_entry(name: str, spec: Any) -> dict[str, Any]:
    observed = spec.observed if isinstance(spec.observed, dict) else None
    entry: dict[str, Any] = {"kind": spec.kind, "type": spec.type, "spec": spec.spec}
    if spec.kind == "constexpr":
        entry["value"] = spec.value
    if spec.kind == "ptr" and observed and observed.get("dtype"):
        entry["dtype"] = observed["dtype"]
    return entry


def _unrebuildable_reason(params: dict[str, dict[str, Any]]) -> str | None:
    """Why a variant cannot be rebuilt from its recorded classes, or None."""
    for name, entry in params.items():
        kind, ty = entry.get("kind"), entry.get("type") or ""
        if kind == "tuple":
            return f"argument {name!r} is a tuple ({ty}): its elements' classes are not recorded"
        if kind == "ptr":
            if _TORCH_DTYPE_NAMES.get(ty.lstrip("*")) is None and not entry.get("dtype"):
                return f"argument {name!r}: unknown pointer dtype {ty!r}"
        elif kind == "int":
            if (_int_type(ty), entry.get("spec")) not in INT_VALUES:
                return f"argument {name!r}: no representative value for {ty} {entry.get('spec')}"
        elif kind not in ("constexpr", "float", "bool", "none"):
            return f"argument {name!r}: unknown kind {kind!r} (type {ty!r})"
    return None


def _int_type(ty: str) -> str:
    if ty in ("i64",):
        return "i64"
    if ty in ("u64",):
        return "u64"
    return "i32"


def _events_from(source: Any) -> list[CompileEvent]:
    """Compile events from a path (report JSON, NDJSON file or directory), a report dict, a
    Recorder, or an iterable of CompileEvent / event dicts."""
    from jitguard.report import ReportInputError, load_logs

    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if os.path.isfile(path) and not path.endswith(".ndjson"):
            try:
                with open(path, encoding="utf-8") as handle:
                    data = json.load(handle)
            except json.JSONDecodeError:
                data = None  # maybe NDJSON with another suffix
            except OSError as exc:
                raise PlanInputError(f"{path}: cannot read ({exc.strerror or exc})") from exc
            if isinstance(data, dict):
                return _events_from_report(data, path)
        try:
            return load_logs(path).events
        except ReportInputError as exc:
            raise PlanInputError(str(exc)) from exc
    if isinstance(source, dict):
        return _events_from_report(source, "report")
    events = getattr(source, "events", source)
    out = []
    for item in events:
        if isinstance(item, CompileEvent):
            out.append(item)
        elif isinstance(item, dict) and item.get("type", "compile") == "compile":
            out.append(CompileEvent.from_dict(item))
    return out


def _events_from_report(report: dict, where: str) -> list[CompileEvent]:
    """The variants a `jitguard report --json` lists per kernel (`variant_list`); a report written
    before reports carried them is read through the logs it was merged from (its `directory`)."""
    from jitguard.report import ReportInputError, load_logs

    if "kernels" not in report or "directory" not in report:
        raise PlanInputError(f"{where}: not a `jitguard report --json` output (no 'kernels'/'directory')")
    kernels = report["kernels"]
    if kernels and all("variant_list" in kernel for kernel in kernels):
        return [CompileEvent.from_dict({"kernel": kernel["name"], "module": kernel.get("module") or "",
                                        "file": kernel.get("file") or "", "line": kernel.get("line") or 0,
                                        **variant})
                for kernel in kernels for variant in kernel["variant_list"]]
    directory = report["directory"]
    try:
        return load_logs(directory).events
    except ReportInputError as exc:
        raise PlanInputError(f"{where}: the report keeps per-kernel totals only, and the logs it was merged "
                             f"from are gone ({exc}); pass the directory of NDJSON logs instead") from exc


def build_plan(report_or_events: Any) -> dict[str, Any]:
    """A warm-up plan (a JSON-ready dict) from observed compiles.

    `report_or_events`: a directory of NDJSON logs (or one log file), a `jitguard report --json`
    file or dict (its logs are read from the directory it names), a `Recorder`, or a list of
    `CompileEvent`. Each distinct variant (per kernel, by Triton key) appears once.
    """
    events = _events_from(report_or_events)
    kernels: dict[tuple[str, str, str], dict[str, Any]] = {}
    seen: dict[tuple[str, str, str], set[str]] = {}
    versions = set()
    for event in events:
        if event.triton_version:
            versions.add(event.triton_version)
        slot = (event.module, event.kernel, event.file)
        params = {name: _param_entry(name, spec) for name, spec in event.params.items()}
        options = {k: v for k, v in event.options.items() if k != "passed"}
        launch_kwargs = event.options.get("passed")  # what the compiling call passed explicitly
        identity = event.key or json.dumps([params, options], sort_keys=True, default=repr)
        if identity in seen.setdefault(slot, set()):
            continue
        seen[slot].add(identity)
        entry = kernels.setdefault(slot, {"name": event.kernel, "module": event.module,
                                          "qualname": event.kernel, "file": event.file, "line": event.line,
                                          "variants": []})
        variant: dict[str, Any] = {"params": params, "options": options, "launch_kwargs": launch_kwargs,
                                   "key": event.key, "compile_ms": event.compile_ms}
        reason = _unrebuildable_reason(params)
        if reason:
            variant["unrebuildable"] = reason
        entry["variants"].append(variant)
    plan_kernels = sorted(kernels.values(), key=lambda k: (k["module"], k["name"]))
    return {
        "jitguard_warmup_plan": PLAN_FORMAT,
        "triton_versions": sorted(versions),
        "kernels": plan_kernels,
        "variants": sum(len(k["variants"]) for k in plan_kernels),
    }


def load_plan(plan: dict[str, Any] | str | os.PathLike) -> dict[str, Any]:
    """A plan dict, from a dict or a JSON file; raises PlanInputError naming the file."""
    if isinstance(plan, (str, os.PathLike)):
        path = os.fspath(plan)
        try:
            with open(path, encoding="utf-8") as handle:
                data = json.load(handle)
        except OSError as exc:
            raise PlanInputError(f"{path}: cannot read ({exc.strerror or exc})") from exc
        except json.JSONDecodeError as exc:
            raise PlanInputError(f"{path}: not JSON ({exc.msg}, line {exc.lineno})") from exc
        where = path
    else:
        data, where = plan, "plan"
    if not isinstance(data, dict) or "jitguard_warmup_plan" not in data or not isinstance(data.get("kernels"), list):
        raise PlanInputError(f"{where}: not a jitguard warm-up plan (write one with `jitguard warmup-plan`)")
    return data


# --- replaying a plan ------------------------------------------------------------------------------

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
    """The outcome of `warmup(plan)`: one `VariantOutcome` per planned variant, and the time taken."""

    outcomes: list[VariantOutcome] = field(default_factory=list)
    seconds: float = 0.0

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
        """True when every planned variant is now in Triton's in-memory cache."""
        return not self.failures

    def seconds_by_kernel(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for outcome in self.outcomes:
            out[outcome.kernel] = out.get(outcome.kernel, 0.0) + outcome.seconds
        return out

    def summary(self) -> str:
        """One line, then one line per failure."""
        lines = [f"[jitguard] warm-up: {len(self.compiled)} compiled, {len(self.cached)} already compiled, "
                 f"{len(self.failures)} failed, {self.seconds:.2f} s"]
        lines += [f"[jitguard] warm-up FAILED {o.label}: {o.reason}" for o in self.failures]
        return "\n".join(lines)


def _import_by_file(file: str, module_name: str) -> Any:
    absolute = os.path.abspath(file)
    for module in list(sys.modules.values()):  # already loaded under another name (e.g. __main__)
        if os.path.abspath(getattr(module, "__file__", None) or "") == absolute:
            return module
    name = module_name if module_name and module_name != "__main__" else \
        "jitguard_warmup_" + os.path.splitext(os.path.basename(file))[0]
    spec = importlib.util.spec_from_file_location(name, absolute)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {file}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _registry_lookup(module_name: str, name: str) -> Any:
    """A kernel defined inside a function is not a module attribute; Triton's own registry
    (`module:qualname`, 3.5+) still knows it once the function has run."""
    try:
        from triton.runtime import jit as triton_jit
    except ImportError:  # pragma: no cover
        return None
    registry = getattr(triton_jit, "_triton_jit_function_registry", None) or {}
    for full_name, fn in list(registry.items()):
        mod, _, qualname = full_name.partition(":")
        if mod == module_name and qualname.rsplit(".", 1)[-1] == name:
            return fn
    return None


def resolve_kernel(entry: dict[str, Any]) -> Any:
    """The JITFunction a plan entry names: by module first, by file path second.

    Raises LookupError with a one-line reason naming the kernel, module and file.
    """
    from jitguard import triton_compat

    module_name, name, file = entry.get("module") or "", entry.get("qualname") or entry["name"], entry.get("file") or ""
    errors = []
    module = None
    if module_name and module_name != "__main__":
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:  # noqa: BLE001 - any import failure is reported, then the file is tried
            errors.append(f"import {module_name}: {type(exc).__name__}: {exc}")
    if module is None and file:
        if os.path.isfile(file):
            try:
                module = _import_by_file(file, module_name)
            except Exception as exc:  # noqa: BLE001
                errors.append(f"load {file}: {type(exc).__name__}: {exc}")
        else:
            errors.append(f"{file}: no such file")
    if module is None:
        raise LookupError(f"kernel {name!r} cannot be imported ({'; '.join(errors) or 'no module or file recorded'})")
    target: Any = module
    for part in name.split("."):
        target = getattr(target, part, None)
        if target is None:
            break
    jit_fn = triton_compat.unwrap_jit_function(target) if target is not None else None
    if jit_fn is None:
        jit_fn = _registry_lookup(module.__name__, name.rsplit(".", 1)[-1])
    if jit_fn is None:
        where = getattr(module, "__file__", None) or module.__name__
        raise LookupError(f"kernel {name!r} is gone: module {module.__name__} ({where}) has no Triton kernel of that name")
    return jit_fn


def _torch_dtype(entry: dict[str, Any]) -> Any:
    import torch
    names = []
    element = (entry.get("type") or "").lstrip("*")
    if element in _TORCH_DTYPE_NAMES:
        names.append(_TORCH_DTYPE_NAMES[element])
    if entry.get("dtype"):
        names.append(entry["dtype"])
    for name in names:
        dtype = getattr(torch, name, None)
        if isinstance(dtype, torch.dtype):
            return dtype
    raise ValueError(f"unknown pointer dtype {entry.get('type')!r}")


def _representative(name: str, entry: dict[str, Any], device: Any) -> Any:
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
        value = INT_VALUES.get((_int_type(entry.get("type") or ""), entry.get("spec")))
        if value is None:
            raise ValueError(f"argument {name!r}: no representative value for {entry.get('type')} {entry.get('spec')}")
        return value
    if kind == "ptr":
        import torch
        dtype = _torch_dtype(entry)
        buffer = torch.zeros(64, dtype=dtype, device=device)
        if entry.get("spec") == "unaligned":
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
    from triton.runtime.driver import driver

    from jitguard import triton_compat

    reason = variant.get("unrebuildable")
    if reason:
        return "failed", reason
    active = driver.active
    device = active.get_active_torch_device()
    device_index = active.get_current_device()
    names = triton_compat.param_names(jit_fn)
    params = variant.get("params") or {}
    missing = [n for n in names if n not in params]
    if missing:
        return "failed", f"the kernel's parameters changed since the plan was made (not in plan: {', '.join(missing)})"
    unknown = [n for n in params if n not in names]
    if unknown:
        return "failed", f"the kernel's parameters changed since the plan was made (gone: {', '.join(unknown)})"
    args = [_representative(n, params[n], device) for n in names]
    launch_kwargs = variant.get("launch_kwargs")
    if launch_kwargs is None:  # the key did not say which options the call passed: pass them all
        launch_kwargs = {k: v for k, v in (variant.get("options") or {}).items()}
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
        except Exception:  # noqa: BLE001 - a closed stream must not stop the warm-up
            pass

    from jitguard import triton_compat

    recorded_versions = data.get("triton_versions") or []
    same_version = not recorded_versions or triton_compat.TRITON_VERSION in recorded_versions
    if not same_version:
        say(f"[jitguard] warm-up: the plan was recorded with Triton {', '.join(recorded_versions)}, this is "
            f"{triton_compat.TRITON_VERSION}: keys are not compared, re-record the plan to check them")
    for entry in data["kernels"]:
        name = entry.get("name") or "?"
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
                except Exception as exc:  # noqa: BLE001 - one bad variant must not stop the others
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
    result.seconds = time.perf_counter() - started
    say(result.summary().splitlines()[0])
    if strict and result.failures:
        raise WarmupError(result.summary(), result)
    return result


# --- the command ---------------------------------------------------------------------------------

@click.command("warmup-plan")
@click.argument("report", type=click.Path(path_type=str))
@click.option("-o", "--output", "output", type=click.Path(dir_okay=False, path_type=str), default="warmup-plan.json",
              show_default=True, help="Where to write the plan (JSON); '-' prints it.")
def warmup_plan_command(report: str, output: str) -> None:
    """Turn REPORT (a directory of NDJSON logs, or a `jitguard report --json` file) into a warm-up
    plan that `jitguard.warmup(plan)` replays at start-up."""
    try:
        plan = build_plan(report)
    except PlanInputError as exc:
        click.echo(f"jitguard warmup-plan: {exc}", err=True)
        sys.exit(2)
    if not plan["kernels"]:
        click.echo(f"jitguard warmup-plan: {report}: no compiles recorded, nothing to plan", err=True)
        sys.exit(2)
    text = json.dumps(plan, indent=1, default=repr)
    if output == "-":
        click.echo(text)
    else:
        try:
            with open(output, "w", encoding="utf-8") as handle:
                handle.write(text + "\n")
        except OSError as exc:
            click.echo(f"jitguard warmup-plan: {output}: cannot write ({exc.strerror or exc})", err=True)
            sys.exit(2)
    summary_stream_is_err = output == "-"
    for entry in plan["kernels"]:
        bad = [v for v in entry["variants"] if v.get("unrebuildable")]
        note = f", {len(bad)} cannot be rebuilt: {bad[0]['unrebuildable']}" if bad else ""
        click.echo(f"  {entry['name']} ({entry['module']}): {len(entry['variants'])} variant(s){note}",
                   err=summary_stream_is_err)
    where = "stdout" if output == "-" else output
    click.echo(f"[jitguard] wrote {where}: {len(plan['kernels'])} kernel(s), {plan['variants']} variant(s)",
               err=summary_stream_is_err)



class _CallableWarmupModule(types.ModuleType):
    """DESIGN.md names both the module `jitguard/warmup.py` and the function `jitguard.warmup(plan)`.

    Importing the submodule makes Python set the package attribute `jitguard.warmup` to this
    module, hiding the function; calling the module calls the function, so both spellings work.
    """

    def __call__(self, plan: dict[str, Any] | str | os.PathLike, stream: TextIO | None = None,
                 quiet: bool = False, strict: bool = False) -> WarmupResult:
        return warmup(plan, stream=stream, quiet=quiet, strict=strict)


sys.modules[__name__].__class__ = _CallableWarmupModule
