"""Merge the per-process NDJSON logs of one run into one report: per kernel and per process.

`jitguard run` (and the vLLM plugin) leave one `<host>-<pid>.ndjson` file per process in a
directory. `build_report(directory)` reads them all and returns a plain dict, the JSON that
`jitguard report --json` prints and `jitguard fix --from` reads:

    >>> report = build_report("jitguard-logs/run-1")            # doctest: +SKIP
    >>> [(k["name"], k["variants"]) for k in report["kernels"]]  # doctest: +SKIP
    [('fused_moe_kernel', 22)]

The logs are read as a stream (`jitguard.report.event_logs.read_logs`) and folded into one tally
per kernel and per process as they come: memory grows with kernels, processes and distinct
variants, not with compile records. A line that is not a valid record is skipped and named (file,
line, reason), never fatal; an unreadable file is named and the others are reported.
`jitguard.report.render_tables` renders the dict as text and markdown.

This module imports neither Triton nor torch.
"""

from __future__ import annotations

import heapq
import os
from dataclasses import dataclass, field
from typing import Any

from jitguard.events import CompileEvent
from jitguard.render_text import cause_line
from jitguard.report.event_logs import LogInputError, LogItem, LogPaths, MergedLogs, ProcessLog, read_logs
from jitguard.report.kernel_tally import ARRIVAL_ORDER, PHASES, KernelTally, Rank, spec_words
from jitguard.report.process_groups import group_totals, process_group
from jitguard.report.worker_compiles import WorkerCompiles
from jitguard.runtime.argv_redaction import redact_argv
from jitguard.runtime.dynamo_recompiles import RECORD_TYPE as GRAPH_COMPILE_TYPE
from jitguard.runtime.phase_marks import RECORD_TYPE as PHASE_MARK_TYPE
from jitguard.tuning.records import RECORD_TYPE as TUNING_RECORD_TYPE
from jitguard.tuning.records import TuningRecord, remedy_lines, summarize_tunings

__all__ = ["PHASES", "REPORT_FORMAT", "TIMELINE_POINTS", "ReportInputError", "build_report", "spec_words"]

REPORT_FORMAT = 1

# The timeline (one point per compile, for the HTML page) keeps at most this many points: the
# slowest compiles; `timeline_dropped` counts the others.
TIMELINE_POINTS = 20_000

# The loader's error, under the name the report's callers catch.
ReportInputError = LogInputError


@dataclass
class _ProcessTally:
    compiles: int = 0
    recompiles: int = 0
    serving_compiles: int = 0
    compile_ms: float = 0.0
    labels: set[str] = field(default_factory=set)


class _ReportFold:
    """Folds each process, compile and tuning read from the logs into the report's tallies."""

    def __init__(self) -> None:
        self.kernels: dict[tuple[str, str, str], KernelTally] = {}
        self.processes: dict[int, tuple[ProcessLog, int, _ProcessTally]] = {}  # id -> (process, read order, tally)
        self.tunings: list[TuningRecord] = []
        self.timeline: list[tuple[float, int, Rank, int, dict[str, Any]]] = []  # heap: slowest kept
        self.timeline_dropped = 0
        self.seen = 0
        self.by_origin: dict[str, dict[str, int]] = {}  # origin -> {"compiles": cold or unknown, "loads": from a cache}
        self.graph_compiles: list[dict[str, Any]] = []  # torch.compile graph compiles (dynamo_recompiles)
        self.worker_compiles = WorkerCompiles()  # pool workers' compiles, counted once every parent is read

    def __call__(self, item: LogItem) -> None:
        process = item.process
        known = self.processes.get(id(process))
        if known is None:
            known = self.processes[id(process)] = (process, len(self.processes), _ProcessTally())
            self.worker_compiles.add_process(process)
        if item.kind == PHASE_MARK_TYPE:
            self.worker_compiles.add_mark(process, item.item)
        elif item.kind == TUNING_RECORD_TYPE:
            self.tunings.append(item.item)
        elif item.kind == GRAPH_COMPILE_TYPE:
            self.graph_compiles.append(dict(item.item, pid=process.pid))
        elif item.kind == "compile" and not self.worker_compiles.hold(item.item, process):
            self.seen += 1
            self._add_event(item.item, process, known[1], known[2])

    def add_worker_compiles(self) -> None:
        """Count the held worker compiles and hand-overs, each in the phase of the process that asked for it."""
        for event, process in self.worker_compiles.resolved():
            _, read_order, tally = self.processes[id(process)]
            self.seen += 1
            self._add_event(event, process, read_order, tally)

    def _add_event(self, event: CompileEvent, process: ProcessLog, read_order: int, tally: _ProcessTally) -> None:
        rank: Rank = (process.started if process.started is not None else float("inf"), process.pid, read_order,
                      self.seen)
        slot = (event.kernel, event.binding, event.file)
        kernel = self.kernels.get(slot)
        if kernel is None:
            kernel = self.kernels[slot] = KernelTally(*slot)
        kernel.add(event, process, rank)
        counts = self.by_origin.setdefault(event.origin, {"compiles": 0, "loads": 0})
        counts["loads" if event.loaded else "compiles"] += 1
        tally.compiles += 1
        tally.recompiles += event.is_recompile
        tally.serving_compiles += event.phase == "serving"
        tally.compile_ms += event.compile_ms or 0.0
        tally.labels.add(event.label)
        self._add_point(event, process, rank)

    def _add_point(self, event: CompileEvent, process: ProcessLog, rank: Rank) -> None:
        ms = event.compile_ms or 0.0
        if len(self.timeline) >= TIMELINE_POINTS:
            self.timeline_dropped += 1
            if ms <= self.timeline[0][0]:
                return
        point = {"process": id(process), "time": event.time, "compile_ms": event.compile_ms, "phase": event.phase,
                 "kernel": event.label, "variant": event.variant, "causes": [cause_line(c) for c in event.causes]}
        entry = (ms, -self.seen, rank, id(process), point)
        if len(self.timeline) >= TIMELINE_POINTS:
            heapq.heapreplace(self.timeline, entry)
        else:
            heapq.heappush(self.timeline, entry)

    def timeline_points(self, index_of: dict[int, int]) -> list[dict[str, Any]]:
        """The kept points in report order, each naming its process by its row in `processes`."""
        points = []
        for _, _, _, process_id, point in sorted(self.timeline, key=lambda entry: entry[2]):
            points.append(dict(point, process=index_of[process_id]))
        return points


def _process_entry(process: ProcessLog, tally: _ProcessTally) -> dict[str, Any]:
    return {
        "host": process.host, "node": process.node or process.host, "pid": process.pid, "ppid": process.ppid,
        "role": process.role, "rank": process.rank,
        # Redacted again: a log written by an older jitguard, or by hand, may hold secrets.
        "argv": redact_argv(process.argv), "triton_version": process.triton_version,
        "started": process.started, "compiles": tally.compiles, "recompiles": tally.recompiles,
        "serving_compiles": tally.serving_compiles, "compile_ms": round(tally.compile_ms, 3),
        "kernels": sorted(tally.labels), "file": os.path.basename(process.file),
        "skipped_lines": process.skipped_lines, "events_not_written": process.events_not_written,
        "group": process_group(process.argv),
    }


def _fold_loaded(logs: MergedLogs, fold: _ReportFold) -> None:
    for process in logs.processes:
        fold(LogItem("process", process, None))
        for event in process.events:
            fold(LogItem("compile", process, event))
        for tuning in process.tunings:
            fold(LogItem(TUNING_RECORD_TYPE, process, tuning))
        for mark in process.phase_marks:
            fold(LogItem(PHASE_MARK_TYPE, process, mark))


def build_report(path: LogPaths | MergedLogs) -> dict[str, Any]:
    """The merged report of every log at `path` (or of already loaded logs), as a JSON-ready dict."""
    fold = _ReportFold()
    if isinstance(path, MergedLogs):
        logs = path
        _fold_loaded(logs, fold)
    else:
        logs = read_logs(path, fold)
    fold.add_worker_compiles()
    kernels = [tally.entry() for tally in fold.kernels.values()]
    _add_autotune(kernels, fold.tunings)
    kernels.sort(key=lambda k: (-k["compiles"], -k["compile_ms"], k["name"]))
    tallies = {id(process): tally for process, _, tally in fold.processes.values()}
    processes = [_process_entry(process, tallies.get(id(process)) or _ProcessTally()) for process in logs.processes]
    report = {
        "jitguard_report": REPORT_FORMAT,
        "directory": os.path.abspath(logs.directory),
        "files": len(logs.files),
        "skipped_lines": logs.skipped_lines,
        "skipped": [line.to_dict() for line in logs.skipped],
        "unreadable_files": [{"file": file, "error": error} for file, error in logs.unreadable],
        "totals": {
            "processes": len(processes),
            "nodes": len({p["node"] for p in processes}),
            "kernels": len(kernels),
            "compiles": sum(p["compiles"] for p in processes),
            "recompiles": sum(p["recompiles"] for p in processes),
            "serving_compiles": sum(p["serving_compiles"] for p in processes),
            "compile_ms": round(sum(tallies[id(p)].compile_ms for p in logs.processes if id(p) in tallies), 3),
            "events_not_written": sum(p.events_not_written for p in logs.processes),
            "by_origin": fold.by_origin,
            # Kernels a compile worker handed over, tied to that worker's compile event and counted there.
            "handovers_tied": fold.worker_compiles.tied,
            "arrivals": _arrival_totals(kernels),
        },
        "processes": processes,
        "process_groups": group_totals(processes),
        "torch_compile": _graph_compile_summary(fold.graph_compiles),
        "kernels": kernels,
        "timeline": fold.timeline_points({id(process): index for index, process in enumerate(logs.processes)}),
    }
    if fold.timeline_dropped:
        report["timeline_dropped"] = fold.timeline_dropped
    return report


def _graph_compile_summary(compiles: list[dict[str, Any]]) -> dict[str, Any]:
    """{"graphs": how many graph compiles torch.compile made, "recompiles": each recompile with its reason,
    "handovers_unseen": the pids whose monitor could not see the Inductor kernels torch launches without a Triton
    compile there (loads from torch's caches, compile workers' hand-overs): a gap in their counts}."""
    recompiles = sorted((c for c in compiles if c.get("recompile_reason")), key=lambda c: (c["time"], c["pid"]))
    unseen = sorted({c["pid"] for c in compiles if c.get("handovers_seen") is False})
    return {"graphs": len(compiles), "recompiles": recompiles, "handovers_unseen": unseen}


def _arrival_totals(kernels: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """{arrival: {"count", "ms"}} summed over the kernels: cold compiles apart from loads."""
    totals: dict[str, dict[str, Any]] = {}
    for name in ARRIVAL_ORDER:
        found = [k["arrivals"][name] for k in kernels if name in k["arrivals"]]
        if found:
            totals[name] = {"count": sum(f["count"] for f in found), "ms": round(sum(f["ms"] for f in found), 3)}
    return totals


def _add_autotune(kernels: list[dict[str, Any]], tunings: list[TuningRecord]) -> None:
    """Give each autotuned kernel its `"autotune"` entry (tunings, configs timed, varying key params)."""
    by_kernel: dict[tuple[str, str, str], list] = {}
    for tuning in tunings:
        by_kernel.setdefault((tuning.kernel, tuning.binding, tuning.file), []).append(tuning)
    for kernel in kernels:
        found = by_kernel.get((kernel["name"], kernel.get("binding") or "", kernel["file"]))
        if not found:
            continue
        entry = summarize_tunings(found)[kernel["name"]]
        entry["remedy"] = remedy_lines(kernel["name"], entry)
        kernel["autotune"] = entry


