"""Compiles a pool worker makes for the process that asked for them (Inductor's compile workers), read back as that
process's: in its phase, tied to its hand-over, counted once.

A compile worker never learns whether its parent is warming up or serving, nor which graph compile asked for the
kernel. Its parent knows both: it logs a phase mark each time it turns (`runtime.phase_marks`), and an event with
`arrived` "worker" when it makes a worker's kernel launchable (`runtime.inductor_launchers`), carrying the graph's
compile id and the kernel's hash. Once every log is read, each worker compile takes the phase its asking process
(the first ancestor outside a pool: the pool's workers may be children of a pool process) was in at that time, and
the compile id of the hand-over of the same hash; a hand-over tied to a worker's compile is not counted again.
A hand-over no worker log explains (its worker was not watched) is counted as it is.

Pure: no I/O, no Triton, no torch.
"""

from __future__ import annotations

import bisect
from dataclasses import replace
from typing import Any

from jitguard.events import CompileEvent
from jitguard.report.process_groups import process_group

HANDED_OVER = "worker"  # CompileEvent.arrived of a kernel a worker compiled and the asking process made launchable
_MAX_ANCESTORS = 8  # a pool is one or two levels deep; a longer chain is a cycle in bad logs


class WorkerCompiles:
    """Holds pool workers' compiles and hand-overs until every log is read, with every process's phase marks."""

    def __init__(self) -> None:
        self._marks: dict[tuple[str, int], list[tuple[float, str]]] = {}
        self._processes: dict[tuple[str, int], Any] = {}  # (host, pid) -> ProcessLog
        self._held: list[tuple[CompileEvent, Any]] = []
        self.tied = 0  # hand-overs tied to a worker's compile (not counted twice)

    def add_process(self, process: Any) -> None:
        self._processes[(process.host, process.pid)] = process

    def add_mark(self, process: Any, mark: dict[str, Any]) -> None:
        """A phase mark ({"phase", "time"}) of `process`."""
        marks = self._marks.setdefault((process.host, process.pid), [])
        bisect.insort(marks, (float(mark["time"]), str(mark["phase"])))

    def hold(self, event: CompileEvent, process: Any) -> bool:
        """Keep `event` for `resolved()` when it is a pool worker's compile or a hand-over; False otherwise."""
        if event.arrived != HANDED_OVER and process_group(process.argv) is None:
            return False
        self._held.append((event, process))
        return True

    def _asker(self, process: Any) -> Any:
        """The first ancestor of a pool process that is not in a pool (None when its log is missing)."""
        current = process
        for _ in range(_MAX_ANCESTORS):
            if process_group(current.argv) is None:
                return current if current is not process else None
            parent = self._processes.get((current.host, current.ppid)) if current.ppid else None
            if parent is None:
                return None
            current = parent
        return None

    def phase_at(self, process: Any, when: float) -> str | None:
        """The phase `process` was in at `when`, from its marks; None when it logged none."""
        marks = self._marks.get((process.host, process.pid))
        if not marks:
            return None
        index = bisect.bisect_right(marks, (when, "~"))
        return marks[index - 1][1] if index else "warmup"

    def resolved(self) -> list[tuple[CompileEvent, Any]]:
        """The held events to count, in the order they were read: worker compiles in their asker's phase with its
        compile id, and the hand-overs no worker compile explains."""
        handovers = {(process.host, process.pid, event.key): event
                     for event, process in self._held if event.arrived == HANDED_OVER and event.key}
        tied: set[tuple[str, int, str]] = set()
        out = []
        for event, process in self._held:
            if event.arrived == HANDED_OVER and process_group(process.argv) is None:
                continue  # counted below, once the worker compiles are matched
            asker = self._asker(process)
            if asker is None:
                out.append((event, process))
                continue
            handover = handovers.get((asker.host, asker.pid, event.key))
            if handover is not None:  # the asker's phase when the kernel reached it
                tied.add((asker.host, asker.pid, event.key))
                phase = handover.phase
            else:
                phase = self.phase_at(asker, event.time) or event.phase
            out.append((_as_asked(event, phase, handover), process))
        for event, process in self._held:
            if event.arrived == HANDED_OVER and process_group(process.argv) is None:
                if (process.host, process.pid, event.key) not in tied:
                    out.append((event, process))
        self.tied = len(tied)
        return out


def _as_asked(event: CompileEvent, phase: str, handover: CompileEvent | None) -> CompileEvent:
    """The worker's event in its asker's phase, with the graph compile id the hand-over carries."""
    facts = dict(event.inductor) if event.inductor else None
    asked_by = (handover.inductor or {}).get("compile_id") if handover is not None else None
    if asked_by and (facts is None or not facts.get("compile_id")):
        facts = dict(facts or {"ops": [], "nodes": [], "recompile_reason": None}, compile_id=asked_by)
    return replace(event, phase=phase, inductor=facts)
