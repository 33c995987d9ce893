"""Merge the per-process NDJSON logs of one run into one report: per kernel and per process.

`jitguard run` (and the vLLM plugin) leave one `<host>-<pid>.ndjson` file per process in a
directory. `build_report(directory)` reads them all and returns a plain dict, the JSON that
`jitguard report --json` prints and `jitguard fix --from` reads:

    >>> report = build_report("jitguard-logs/run-1")            # doctest: +SKIP
    >>> [(k["name"], k["variants"]) for k in report["kernels"]]  # doctest: +SKIP
    [('fused_moe_kernel', 22)]

`format_text` and `format_markdown` render that dict as tables. Logs are read by
`jitguard.report.event_logs`: a line that is not a valid record is skipped and named (file, line, reason),
never fatal; an unreadable file is named and the others are reported.

This module imports neither Triton nor torch.
"""

from __future__ import annotations

import os
from typing import Any

from jitguard.events import CompileEvent, constexpr_words
from jitguard.explain import fix_for_advice, strongest_advice
from jitguard.render_text import (
    cause_line,
    cost_lines,
    kernel_label,
    kernel_where,
    markdown_table,
    md_code,
    md_text,
    table,
)
from jitguard.report.event_logs import LogInputError, MergedLogs, ProcessLog, load_logs
from jitguard.runtime.argv_redaction import redact_argv
from jitguard.tuning.records import format_autotune_summary, remedy_lines, summarize_tunings

REPORT_FORMAT = 1

PHASES = ("warmup", "serving")


# The loader's error, under the name the report's callers catch.
ReportInputError = LogInputError


def spec_words(spec: Any) -> str:
    """A parameter's specialization in a few words: 'i32 div16', '*fp32 aligned16', 'constexpr 64'."""
    if spec.kind == "constexpr":
        return f"constexpr {constexpr_words(spec.value)}"
    if spec.kind == "none":
        return "None"
    parts = [spec.type or spec.kind]
    if spec.spec:
        parts.append(spec.spec)
    return " ".join(parts)


def _process_label(process: ProcessLog) -> dict[str, Any]:
    return {"host": process.host, "pid": process.pid, "role": process.role, "rank": process.rank}


def _kernel_entry(name: str, binding: str, file: str, items: list[tuple[ProcessLog, CompileEvent]]) -> dict[str, Any]:
    events = [event for _, event in items]
    first = events[0]
    by_phase = {phase: {"compiles": 0, "compile_ms": 0.0} for phase in PHASES}
    for event in events:
        bucket = by_phase.setdefault(event.phase, {"compiles": 0, "compile_ms": 0.0})
        bucket["compiles"] += 1
        bucket["compile_ms"] += event.compile_ms or 0.0
    for bucket in by_phase.values():
        bucket["compile_ms"] = round(bucket["compile_ms"], 3)

    by_process: dict[tuple[str, int], dict[str, Any]] = {}
    keys_by_process: dict[tuple[str, int], set[str]] = {}
    for process, event in items:
        slot = (process.host, process.pid)
        entry = by_process.setdefault(slot, dict(_process_label(process), compiles=0, compile_ms=0.0))
        entry["compiles"] += 1
        entry["compile_ms"] = round(entry["compile_ms"] + (event.compile_ms or 0.0), 3)
        keys_by_process.setdefault(slot, set()).add(event.key)
    for slot, entry in by_process.items():
        entry["variants"] = len(keys_by_process[slot])

    params: dict[str, dict[str, Any]] = {}
    one_seen: dict[str, bool] = {}
    for event in events:
        for param_name, spec in event.params.items():
            entry = params.setdefault(param_name, {"specs_seen": [], "recompiles_caused": 0, "advice": None,
                                                   "_codes": []})
            if spec.kind == "int" and spec.spec == "one":
                one_seen[param_name] = True
            words = spec_words(spec)
            if words not in entry["specs_seen"]:
                entry["specs_seen"].append(words)

    causes: dict[tuple, dict[str, Any]] = {}
    for event in events:
        counted: set[str] = set()
        for cause in event.causes:
            cause_slot = (cause.param, cause.before, cause.after, cause.advice)
            cause_entry = causes.get(cause_slot)
            if cause_entry is None:
                cause_entry = causes[cause_slot] = {
                    "param": cause.param, "before": cause.before, "after": cause.after,
                    "advice": cause.advice, "message": cause.message, "count": 0}
            cause_entry["count"] += 1
            if cause.param in params and cause.param not in counted:
                counted.add(cause.param)
                params[cause.param]["recompiles_caused"] += 1
                params[cause.param]["_codes"].append(cause.advice)
            elif cause.param not in params and cause.param != "(none)" and cause.param not in counted:
                # A launch option (num_warps, ...): listed with the parameters so nothing is hidden.
                counted.add(cause.param)
                option = params.setdefault(cause.param, {"specs_seen": [], "recompiles_caused": 0,
                                                         "advice": None, "_codes": []})
                option["recompiles_caused"] += 1
                option["_codes"].append(cause.advice)
    for param_name, entry in params.items():
        entry["advice"] = strongest_advice(entry.pop("_codes"), took_value_one=one_seen.get(param_name, False))

    # Each distinct variant once, with its classes and options: enough for `jitguard warmup-plan`
    # to rebuild it from this report alone, after the logs are gone.
    variant_list: dict[str, dict[str, Any]] = {}
    for event in events:
        if event.key not in variant_list:
            variant_list[event.key] = {"key": event.key, "triton_version": event.triton_version,
                                       "params": {n: spec.to_dict() for n, spec in event.params.items()},
                                       "options": dict(event.options), "compile_ms": event.compile_ms}

    total_ms = sum(event.compile_ms or 0.0 for event in events)
    return {
        "name": name,
        "binding": binding,  # the module-level name the program calls it by, when not `name`; else ""
        "module": first.module,
        "file": file,
        "line": first.line,
        "variants": len({event.key for event in events}),
        "compiles": len(events),
        "recompiles": sum(1 for event in events if event.is_recompile),
        "compile_ms": round(total_ms, 3),
        "by_phase": by_phase,
        "by_process": sorted(by_process.values(), key=lambda p: (p["rank"] is None, p["rank"] or 0, p["pid"])),
        "params": params,
        "causes": sorted(causes.values(), key=lambda c: -c["count"]),
        # One fix per parameter, from its strongest advice across every process.
        "fix": fix_for_advice({param: entry["advice"] for param, entry in params.items()}) or None,
        "variant_list": list(variant_list.values()),
    }


def build_report(path: str | os.PathLike | MergedLogs) -> dict[str, Any]:
    """The merged report of every log at `path` (or of already loaded logs), as a JSON-ready dict."""
    logs = path if isinstance(path, MergedLogs) else load_logs(path)
    grouped: dict[tuple[str, str, str], list[tuple[ProcessLog, CompileEvent]]] = {}
    for process in logs.processes:
        for event in process.events:
            grouped.setdefault((event.kernel, event.binding, event.file), []).append((process, event))
    kernels = [_kernel_entry(name, binding, file, items) for (name, binding, file), items in grouped.items()]
    _add_autotune(kernels, logs)
    kernels.sort(key=lambda k: (-k["compiles"], -k["compile_ms"], k["name"]))

    processes = []
    for process in logs.processes:
        events = process.events
        processes.append({
            "host": process.host, "pid": process.pid, "ppid": process.ppid, "role": process.role,
            "rank": process.rank,
            # Redacted again: a log written by an older jitguard, or by hand, may hold secrets.
            "argv": redact_argv(process.argv), "triton_version": process.triton_version,
            "started": process.started, "compiles": len(events),
            "recompiles": sum(1 for e in events if e.is_recompile),
            "serving_compiles": sum(1 for e in events if e.phase == "serving"),
            "compile_ms": round(sum(e.compile_ms or 0.0 for e in events), 3),
            "kernels": sorted({e.label for e in events}),
            "file": os.path.basename(process.file), "skipped_lines": process.skipped_lines,
            "events_not_written": process.events_not_written,
        })
    events = logs.events
    return {
        "jitguard_report": REPORT_FORMAT,
        "directory": os.path.abspath(logs.directory),
        "files": len(logs.files),
        "skipped_lines": logs.skipped_lines,
        "skipped": [line.to_dict() for line in logs.skipped],
        "unreadable_files": [{"file": file, "error": error} for file, error in logs.unreadable],
        "totals": {
            "processes": len(processes),
            "kernels": len(kernels),
            "compiles": len(events),
            "recompiles": sum(1 for e in events if e.is_recompile),
            "serving_compiles": sum(1 for e in events if e.phase == "serving"),
            "compile_ms": round(sum(e.compile_ms or 0.0 for e in events), 3),
            "events_not_written": sum(p.events_not_written for p in logs.processes),
        },
        "processes": processes,
        "kernels": kernels,
        "timeline": _timeline(logs),
    }


def _add_autotune(kernels: list[dict[str, Any]], logs: MergedLogs) -> None:
    """Give each autotuned kernel its `"autotune"` entry (tunings, configs timed, varying key params)."""
    by_kernel: dict[tuple[str, str, str], list] = {}
    for tuning in logs.tunings:
        by_kernel.setdefault((tuning.kernel, tuning.binding, tuning.file), []).append(tuning)
    for kernel in kernels:
        tunings = by_kernel.get((kernel["name"], kernel.get("binding") or "", kernel["file"]))
        if not tunings:
            continue
        entry = summarize_tunings(tunings)[kernel["name"]]
        entry["remedy"] = remedy_lines(kernel["name"], entry)
        kernel["autotune"] = entry


def _timeline(logs: MergedLogs) -> list[dict[str, Any]]:
    """One point per compile (for the HTML page): process, time, ms, phase, kernel, variant."""
    points = []
    for index, process in enumerate(logs.processes):
        for event in process.events:
            points.append({"process": index, "time": event.time, "compile_ms": event.compile_ms,
                           "phase": event.phase, "kernel": event.label, "variant": event.variant,
                           "causes": [cause_line(c) for c in event.causes]})
    return points


# --- text and markdown ------------------------------------------------------------------------

def _role_words(entry: dict[str, Any]) -> str:
    role = entry.get("role") or "-"
    if entry.get("rank") is not None:
        role += f" (rank {entry['rank']})"
    return role


def _argv_words(argv: list[str], width: int = 60) -> str:
    # The script's name, not its directory, is what tells processes apart in a narrow column.
    shown = [os.path.basename(argv[0]) or argv[0], *argv[1:]] if argv else []
    text = " ".join(shown) if shown else "?"
    return text if len(text) <= width else text[: width - 3] + "..."


def _ms(value: float) -> str:
    return f"{value:.0f}"


def _process_rows(report: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    header = ["pid", "ppid", "role", "compiles", "recompiles", "compile ms", "argv"]
    rows = [[str(p["pid"]), str(p["ppid"] if p["ppid"] is not None else "?"), _role_words(p), str(p["compiles"]),
             str(p["recompiles"]), _ms(p["compile_ms"]), _argv_words(p["argv"])] for p in report["processes"]]
    if any(p.get("events_not_written") for p in report["processes"]):
        # Only when a process lost events, so the usual table keeps its columns.
        header.insert(-1, "not written")
        for row, process in zip(rows, report["processes"]):
            row.insert(-1, str(process.get("events_not_written") or 0))
    return header, rows


def _kernel_rows(report: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    header = ["kernel", "where", "variants", "compiles", "processes", "warmup ms", "serving ms", "fix"]
    rows = []
    for k in report["kernels"]:
        rows.append([kernel_label(k), kernel_where(k["file"], k["line"]), str(k["variants"]), str(k["compiles"]),
                     str(len(k["by_process"])), _ms(k["by_phase"]["warmup"]["compile_ms"]),
                     _ms(k["by_phase"]["serving"]["compile_ms"]), k["fix"] or "-"])
    return header, rows


def summary_line(report: dict[str, Any]) -> str:
    """'3 process(es), 1 kernel(s), 9 compile(s) (6 recompile(s), 2 during serving), 0.9 s compiling'."""
    t = report["totals"]
    line = (f"{t['processes']} process(es), {t['kernels']} kernel(s), {t['compiles']} compile(s) "
            f"({t['recompiles']} recompile(s), {t['serving_compiles']} during serving), "
            f"{t['compile_ms'] / 1000:.1f} s compiling")
    if t.get("events_not_written"):
        line += f", {t['events_not_written']} event(s) not written to the logs"
    return line


_SKIPPED_SHOWN = 10


def _problem_lines(report: dict[str, Any]) -> list[str]:
    """What the report could not use: unreadable files, then skipped lines with file:line and reason."""
    lines = []
    for entry in report.get("unreadable_files") or []:
        lines.append(f"could not read {entry['file']} ({entry['error']}); the report covers the other logs")
    if report["skipped_lines"]:
        files = [p["file"] for p in report["processes"] if p["skipped_lines"]]
        lines.append(f"skipped {report['skipped_lines']} unreadable line(s) in " + ", ".join(files))
        details = report.get("skipped") or []
        lines.extend(f"  {d['file']}:{d['line']}: {d['reason']}" for d in details[:_SKIPPED_SHOWN])
        if len(details) > _SKIPPED_SHOWN:
            lines.append(f"  ... and {len(details) - _SKIPPED_SHOWN} more")
    return lines


def format_text(report: dict[str, Any]) -> str:
    """The report as plain-text tables: summary, processes, kernels, then each kernel's causes."""
    lines = [f"[jitguard] report of {report['directory']}: {summary_line(report)}"]
    lines.extend(f"[jitguard] {line}" for line in _problem_lines(report))
    lines.append("")
    lines.append("Processes")
    lines.extend(table(*_process_rows(report)))
    if report["kernels"]:
        lines.append("")
        lines.append("Kernels")
        lines.extend(table(*_kernel_rows(report)))
    for k in report["kernels"]:
        lines.append("")
        lines.append(f"{kernel_label(k)} ({kernel_where(k['file'], k['line'])}): {k['variants']} variant(s), "
                     f"{k['compiles']} compile(s), {_ms(k['compile_ms'])} ms")
        per_process = ", ".join(f"pid {p['pid']}" + (f" rank {p['rank']}" if p["rank"] is not None else "")
                                + (f" {p['role']}" if p["role"] else "") + f": {p['variants']}"
                                for p in k["by_process"])
        lines.append(f"  variants per process: {per_process}")
        if k["causes"]:
            # Tile-config and launch-option switches (autotune trying its configs) are expected: one
            # row says how many and which, the table keeps the causes that need a decision.
            expected = [c for c in k["causes"] if c["advice"] == "expected"]
            rows = [[c["param"], f"{c['before']} -> {c['after']}", str(c["count"]), c["advice"] or "-"]
                    for c in k["causes"] if c["advice"] != "expected" or len(expected) <= 3]
            if len(expected) > 3:
                names = ", ".join(dict.fromkeys(c["param"] for c in expected))
                rows.append([names, f"{len(expected)} config/option switches", str(sum(c["count"] for c in expected)),
                             "expected"])
            lines.extend(table(["param", "change", "count", "advice"], rows))
        if k["fix"]:
            lines.append(f"  fix: {k['fix']}")
        lines.extend(f"  {line}" for line in cost_lines(k))
        if k.get("autotune"):
            lines.append(f"  {format_autotune_summary(k['name'], k['autotune'])}")
            lines.extend(f"  remedy: {line}" for line in k["autotune"]["remedy"])
    return "\n".join(lines) + "\n"


def format_markdown(report: dict[str, Any]) -> str:
    """The report as GitHub-flavoured markdown (for an issue or a PR comment).

    Every name from the logs is escaped (md_text) or a code span (md_code): a backtick in argv or a
    `<script>` in a role stays text.
    """
    lines = ["# jitguard report", "", summary_line(report) + "."]
    problems = _problem_lines(report)
    if problems:
        lines += [""] + [f"> {md_text(line.strip())}  " for line in problems]
    lines += ["", "## Processes", ""]
    header, rows = _process_rows(report)
    lines += markdown_table(header, [[md_text(c) for c in row[:-1]] + [md_code(row[-1], in_table=True)]
                                     for row in rows])
    if report["kernels"]:
        lines += ["", "## Kernels", ""]
        header, rows = _kernel_rows(report)
        lines += markdown_table(header, [[md_text(c) for c in row[:-1]]
                                         + [md_code(row[-1], in_table=True) if row[-1] != "-" else "-"]
                                         for row in rows])
    for k in report["kernels"]:
        lines += ["", f"### {md_code(kernel_label(k))}", "",
                  f"{k['variants']} variant(s), {k['compiles']} compile(s), {_ms(k['compile_ms'])} ms "
                  f"({md_text(kernel_where(k['file'], k['line']))})."]
        lines += ["", *markdown_table(["pid", "role", "variants", "compile ms"],
                                      [[str(p["pid"]), md_text(_role_words(p)), str(p["variants"]),
                                        _ms(p["compile_ms"])] for p in k["by_process"]])]
        if k["causes"]:
            lines += ["", *markdown_table(["param", "before", "after", "count", "advice"],
                                          [[md_text(c["param"]), md_text(c["before"]), md_text(c["after"]),
                                            str(c["count"]), md_text(c["advice"] or "-")] for c in k["causes"]])]
        if k["fix"]:
            lines += ["", f"Fix: {md_code(k['fix'])}"]
        costs = cost_lines(k)
        if costs:
            lines += [""] + [f"- {md_text(line)}" for line in costs]
        if k.get("autotune"):
            lines += ["", md_text(format_autotune_summary(k["name"], k["autotune"])) + "."]
            lines += [f"- remedy: {md_code(line)}" for line in k["autotune"]["remedy"]]
    return "\n".join(lines) + "\n"
