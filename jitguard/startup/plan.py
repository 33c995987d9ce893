"""Warm-up plans: every variant a run compiled, per kernel, as JSON (no Triton, no torch here).

A plan lists, per kernel, every variant a run compiled: each parameter's class (int `one`,
`div16`, `plain`, i64; pointer dtype and alignment), the constexpr values and the launch options.
`jitguard.warmup(plan)` (jitguard/startup/replay.py) replays it at start-up.

    plan = build_plan("jitguard-logs/")          # a directory of NDJSON logs, or report.json
    json.dump(plan, open("plan.json", "w"))

An autotuned kernel's entry also carries `"autotune": {"key": [...], "keys_tuned": [{param: value}, ...],
"bucket": {...}, "tunings_by_dtype": [{"key": {param: value}, "dtypes": ["torch.float16", ...]}, ...]}`
(from the report's `autotune` entry, or the logs' tuning records): the warm-up pre-tunes each key
value with each set of tensor dtypes it was tuned for, so serving finds every tuning done. Plans
and reports written before `tunings_by_dtype` existed lack it: their key values are pre-tuned once.
The plan's top-level `tunings` counts the pre-tune launches (one per key value and dtype set).

Representative values: int `one` -> 1, `div16` -> 16, `plain` (and `off`, not specialized) -> 17;
i64 -> 2**31 + 16 / 2**31 + 17; u64 -> 2**63 + 16 / 2**63 + 17. A variant that cannot be rebuilt
from its recorded classes (tuple arguments, unknown dtype) is marked with the reason.
"""

from __future__ import annotations

import json
import os
from typing import Any

from jitguard.events import DECORATOR_ORIGINS, CompileEvent
from jitguard.replay.arguments import unrebuildable_reason

PLAN_FORMAT = 1

class PlanInputError(ValueError):
    """The input of `build_plan` or `warmup` is unusable (no such file, not a report, not a plan)."""


def _param_entry(name: str, spec: Any) -> dict[str, Any]:
    observed = spec.observed if isinstance(spec.observed, dict) else None
    entry: dict[str, Any] = {"kind": spec.kind, "type": spec.type, "spec": spec.spec}
    if spec.kind == "constexpr":
        entry["value"] = spec.value
    if spec.kind == "ptr" and observed and observed.get("dtype"):
        entry["dtype"] = observed["dtype"]
    return entry


def _report_json(path: str) -> Any:
    """The JSON value of a report file, or None when the file is not one JSON document (NDJSON logs
    under another suffix); PlanInputError when it cannot be read or is JSON no reader survives."""
    from jitguard.report.json_input import load_json_file

    try:
        return load_json_file(path, PlanInputError)
    except PlanInputError as exc:
        if ": not JSON (" in str(exc):
            return None  # maybe NDJSON with another suffix: read as logs
        raise


def _events_from(source: Any) -> list[CompileEvent]:
    """Compile events from a path (report JSON, NDJSON file or directory), a report dict, a
    Recorder, or an iterable of CompileEvent / event dicts (each checked: a bad one names its field)."""
    from jitguard.report.event_logs import InvalidRecord, LogInputError, compile_event_from_record, load_logs

    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if os.path.isfile(path) and not path.endswith(".ndjson"):
            data = _report_json(path)
            if isinstance(data, dict):
                return _events_from_report(data, path)
        try:
            return load_logs(path).events
        except LogInputError as exc:
            raise PlanInputError(str(exc)) from exc
    if isinstance(source, dict):
        return _events_from_report(source, "report")
    if isinstance(source, (list, tuple)) and source and all(isinstance(s, (str, os.PathLike)) for s in source):
        return _events_from_sources([os.fspath(s) for s in source])
    events = getattr(source, "events", source)
    out = []
    for item in events:
        if isinstance(item, CompileEvent):
            out.append(item)
        elif isinstance(item, dict) and item.get("type", "compile") == "compile":
            try:
                out.append(compile_event_from_record(item))
            except InvalidRecord as exc:
                raise PlanInputError(f"compile event {len(out) + 1}: {exc}") from exc
    return out


def _tunings_from(source: Any) -> dict[tuple[str, str, str], dict[str, Any]]:
    """{(kernel, binding, file): its autotune entry} from the same sources as `_events_from`: a report's
    `kernels[].autotune`, or the tuning records of logs, a Recorder, or records given directly."""
    from jitguard.report.event_logs import LogInputError, load_logs
    from jitguard.tuning.records import TuningRecord, iter_tuning_records

    report: dict | None = None
    records: list[TuningRecord] = []
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        data = None
        if os.path.isfile(path) and not path.endswith(".ndjson"):
            data = _report_json(path)
        if isinstance(data, dict):
            report = data
        else:
            try:
                records = load_logs(path).tunings
            except LogInputError:
                records = []
    elif isinstance(source, dict):
        report = source
    else:
        items = list(getattr(source, "tunings", None) or ([] if hasattr(source, "events") else source))
        records = [i for i in items if isinstance(i, TuningRecord)]
        records += list(iter_tuning_records(i for i in items if isinstance(i, dict)))
    if report is not None:
        return {(k.get("name", "?"), k.get("binding") or "", k.get("file") or ""): k["autotune"]
                for k in report.get("kernels") or []
                if isinstance(k.get("autotune"), dict) and k["autotune"].get("keys_tuned")}
    return _summarize_per_kernel(records)


def _summarize_per_kernel(records: list[Any]) -> dict[tuple[str, str, str], dict[str, Any]]:
    from jitguard.tuning.records import summarize_tunings

    groups: dict[tuple[str, str, str], list[Any]] = {}
    for record in records:
        groups.setdefault((record.kernel, record.binding, record.file), []).append(record)
    return {slot: summarize_tunings(group)[slot[0]] for slot, group in groups.items()}


def _events_from_sources(sources: list[str]) -> list[CompileEvent]:
    """The compile events of several nodes' logs: directories, logs, globs, `@list` files
    (jitguard.report.log_sources), and report JSON files, all together."""
    from jitguard.report.event_logs import LogInputError, load_logs

    events: list[CompileEvent] = []
    logs = []
    for path in sources:
        if os.path.isfile(path) and not path.endswith(".ndjson"):
            events.extend(_events_from(path))  # a report JSON (or a log under another name)
        else:
            logs.append(path)
    if logs:
        try:
            events.extend(load_logs(logs).events)
        except LogInputError as exc:
            raise PlanInputError(str(exc)) from exc
    return events


def _events_from_report(report: dict, where: str) -> list[CompileEvent]:
    """The variants a `jitguard report --json` lists per kernel (`variant_list`); a report written
    before reports carried them is read through the logs it was merged from (its `directory`)."""
    from jitguard.report.event_logs import InvalidRecord, LogInputError, compile_event_from_record, load_logs
    from jitguard.report.json_input import REPORT_SHAPE, check_shape

    if "kernels" not in report or "directory" not in report:
        raise PlanInputError(f"{where}: not a `jitguard report --json` output (no 'kernels'/'directory')")
    check_shape(report, REPORT_SHAPE, where, PlanInputError)
    kernels = report["kernels"]
    if kernels and all("variant_list" in kernel for kernel in kernels):
        events = []
        for kernel in kernels:
            for variant in kernel["variant_list"]:
                record = {"type": "compile", "kernel": kernel.get("name"), "module": kernel.get("module") or "",
                          "file": kernel.get("file") or "", "line": kernel.get("line") or 0,
                          "binding": kernel.get("binding") or "", **variant}
                try:
                    events.append(compile_event_from_record(record))
                except InvalidRecord as exc:
                    raise PlanInputError(
                        f"{where}: kernel {kernel.get('name')!r}: a variant is unusable: {exc}") from exc
        return events
    directory = report["directory"]
    try:
        return load_logs(directory).events
    except LogInputError as exc:
        raise PlanInputError(f"{where}: the report keeps per-kernel totals only, and the logs it was merged "
                             f"from are gone ({exc}); pass the directory of NDJSON logs instead") from exc


def build_plan(report_or_events: Any) -> dict[str, Any]:
    """A warm-up plan (a JSON-ready dict) from observed compiles.

    `report_or_events`: a directory of NDJSON logs (or one log file), a `jitguard report --json`
    file or dict (its logs are read from the directory it names), a list of such paths (several
    nodes' logs, globs, `@list` files), a `Recorder`, or a list of `CompileEvent`. Each distinct
    variant (per kernel, by Triton key) appears once, whichever node compiled it.
    """
    events = _events_from(report_or_events)
    kernels: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    seen: dict[tuple[str, str, str, str], set[str]] = {}
    versions = set()
    left_out: dict[str, set[str]] = {}
    for event in events:
        if event.triton_version:
            versions.add(event.triton_version)
        if event.origin not in DECORATOR_ORIGINS:
            # torch.compile warms its own kernels (and a bundle ships their cache entries); a direct
            # `triton.compile` call has no function to replay
            left_out.setdefault(event.origin, set()).add(event.kernel)
            continue
        slot = (event.module, event.kernel, event.binding, event.file)
        params = {name: _param_entry(name, spec) for name, spec in event.params.items()}
        options = {k: v for k, v in event.options.items() if k != "passed"}
        launch_kwargs = event.options.get("passed")  # what the compiling call passed explicitly
        identity = event.key or json.dumps([params, options], sort_keys=True, default=repr)
        if identity in seen.setdefault(slot, set()):
            continue
        seen[slot].add(identity)
        # `qualname` is what replay imports: the bound name of a function jitted under another name.
        entry = kernels.setdefault(slot, {"name": event.kernel, "module": event.module, "binding": event.binding,
                                          "qualname": event.called_as, "file": event.file, "line": event.line,
                                          "variants": []})
        variant: dict[str, Any] = {"params": params, "options": options, "launch_kwargs": launch_kwargs,
                                   "key": event.key, "compile_ms": event.compile_ms}
        reason = unrebuildable_reason(params)
        if reason:
            variant["unrebuildable"] = reason
        entry["variants"].append(variant)
    for (name, binding, file), tuned in _tunings_from(report_or_events).items():
        for (_, kernel_name, kernel_binding, kernel_file), entry in kernels.items():
            if (kernel_name, kernel_binding, kernel_file) == (name, binding, file):
                entry["autotune"] = {"key": list(tuned.get("key") or []),
                                     "keys_tuned": [dict(k) for k in tuned.get("keys_tuned") or []],
                                     "bucket": dict(tuned.get("bucket") or {})}
                if isinstance(tuned.get("tunings_by_dtype"), list):  # absent from older reports
                    entry["autotune"]["tunings_by_dtype"] = [
                        {"key": dict(t.get("key") or {}), "dtypes": list(t.get("dtypes") or [])}
                        for t in tuned["tunings_by_dtype"] if isinstance(t, dict)]
    plan_kernels = sorted(kernels.values(), key=lambda k: (k["module"], k["name"]))
    return {
        "jitguard_warmup_plan": PLAN_FORMAT,
        "triton_versions": sorted(versions),
        "kernels": plan_kernels,
        "variants": sum(len(k["variants"]) for k in plan_kernels),
        "tunings": sum(_pretune_count(k.get("autotune") or {}) for k in plan_kernels),
        "left_out": {origin: sorted(names) for origin, names in sorted(left_out.items())},
    }


def _pretune_count(autotune: dict[str, Any]) -> int:
    """How many tunings the warm-up pre-tunes for one kernel: one per key value and dtype set."""
    by_dtype = autotune.get("tunings_by_dtype")
    return len(by_dtype) if isinstance(by_dtype, list) else len(autotune.get("keys_tuned") or [])


def load_plan(plan: dict[str, Any] | str | os.PathLike) -> dict[str, Any]:
    """A plan dict, from a dict or a JSON file; raises PlanInputError naming the file and, for a field
    of the wrong type, its path (`kernels[0].variants[2].params: 7, expected an object`).

    A plan is code: `jitguard.warmup` imports the modules it names (after the same static check the
    price check makes: the module's file must define a Triton kernel of that name). Load plans you
    wrote or trust, as you would a Python file.
    """
    from jitguard.report.json_input import PLAN_SHAPE, check_shape, load_json_file

    if isinstance(plan, (str, os.PathLike)):
        where = os.fspath(plan)
        data = load_json_file(where, PlanInputError)
    else:
        data, where = plan, "plan"
    if not isinstance(data, dict) or "jitguard_warmup_plan" not in data:
        raise PlanInputError(f"{where}: not a jitguard warm-up plan (write one with `jitguard warmup-plan`)")
    check_shape(data, PLAN_SHAPE, where, PlanInputError)
    return data
