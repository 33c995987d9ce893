"""torch.compile's graph compiles as log records: which function, which compile (Dynamo's id "0/1"), and
for a recompile the guard that failed, in torch's own words.

Inductor compiles a graph's Triton kernels in its worker pool, where nothing says which graph asked for
them; the process that ran Dynamo knows. The monitor writes one `"type": "graph_compile"` record per
graph compile Dynamo kept (`torch._dynamo.utils.get_compilation_metrics()`) when serving starts and at
exit, and the report lists the recompiles with their reasons and phase. Each record also says whether this
process saw the Inductor kernels torch makes launchable without a Triton compile (`handovers_seen`: loads from
torch's caches and compile workers' hand-overs, `runtime.inductor_launchers`), so that a torch without that hook
point reads as a gap in the report, not as zero loads. Reads only what the host has already imported (never
imports torch).
"""

from __future__ import annotations

import os
import sys
from typing import Any

RECORD_TYPE = "graph_compile"


def _start_seconds(metrics: Any) -> float | None:
    start_us = getattr(metrics, "start_time_us", None)
    if isinstance(start_us, (int, float)):
        return start_us / 1e6
    start = getattr(metrics, "start_time", None)
    return float(start) if isinstance(start, (int, float)) else None


def graph_compile_records(serving_since: float | None, written: set[str],
                          handovers_seen: bool | None = None) -> list[dict[str, Any]]:
    """Records of the graph compiles Dynamo kept and `written` lacks (their ids are added to it); [] where
    torch.compile never ran in this process. A compile that started after `serving_since` is "serving"."""
    utils = sys.modules.get("torch._dynamo.utils")
    get_metrics = getattr(utils, "get_compilation_metrics", None)
    if get_metrics is None:
        return []
    try:
        kept = list(get_metrics())
    except Exception:  # torch's internals moved: no graph records, the compiles are still counted
        return []
    records = []
    for metrics in kept:
        compile_id = str(getattr(metrics, "compile_id", None) or "")
        if not compile_id or compile_id in written:
            continue
        written.add(compile_id)
        start = _start_seconds(metrics)
        serving = serving_since is not None and start is not None and start >= serving_since
        reason = getattr(metrics, "recompile_reason", None)
        records.append({"type": RECORD_TYPE, "pid": os.getpid(), "compile_id": compile_id,
                        "function": str(getattr(metrics, "co_name", None) or ""),
                        "file": str(getattr(metrics, "co_filename", None) or ""),
                        "line": int(getattr(metrics, "co_firstlineno", None) or 0),
                        "recompile_reason": str(reason) if reason else None,
                        "phase": "serving" if serving else "warmup", "time": start or 0.0,
                        "handovers_seen": handovers_seen})
    return records
