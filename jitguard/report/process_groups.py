"""Processes a report shows as one row: pools of look-alike workers, such as Inductor's compile workers.

torch.compile compiles its generated Triton kernels in a pool of worker processes (16 on a 16-core
host), each started from `torch/_inductor/compile_worker/`; listed one by one they bury the server's
own processes. A group is known by what a worker's argv runs, never by its pid or its multiprocessing
name ("ForkProcess-3" names any pool's worker). The text report collapses each group into one row of
totals; the JSON keeps every process with its `group`, and `process_groups` holds the totals.

Pure: no I/O, no Triton, no torch.
"""

from __future__ import annotations

from typing import Any

# (what the argv runs, the group's name)
KNOWN_POOLS = (
    ("torch/_inductor/compile_worker", "Inductor compile workers"),
)
_ARGV_WORDS = 2  # the interpreter and the script: later words are the program's own arguments


def process_group(argv: list[str] | None) -> str | None:
    """The pool a process belongs to, from its argv; None for a process of its own."""
    for word in (argv or [])[:_ARGV_WORDS]:
        text = str(word).replace("\\", "/")
        for marker, name in KNOWN_POOLS:
            if marker in text:
                return name
    return None


def group_totals(processes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per group of report process entries (each with "group"): its name, member count,
    pids, and summed compiles, recompiles, serving compiles and compile ms, in first-member order."""
    groups: dict[str, dict[str, Any]] = {}
    for process in processes:
        name = process.get("group")
        if not name:
            continue
        entry = groups.setdefault(name, {"name": name, "processes": 0, "pids": [], "compiles": 0, "recompiles": 0,
                                         "serving_compiles": 0, "compile_ms": 0.0})
        entry["processes"] += 1
        entry["pids"].append(process["pid"])
        for field in ("compiles", "recompiles", "serving_compiles", "compile_ms"):
            entry[field] += process.get(field) or 0
    for entry in groups.values():
        entry["compile_ms"] = round(entry["compile_ms"], 3)
    return list(groups.values())
