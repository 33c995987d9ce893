"""Phase marks: a `"type": "phase"` log record each time a process turns to serving (`mark_serving()`) or back to
warm-up (`mark_warmup()`), with the time it turned.

A compile in a child process that never learns the phase (Inductor's compile workers compile for their parent)
takes the phase its parent was in at that time: the report reads the parent's marks
(`jitguard.report.worker_compiles`). Pure: no I/O, no Triton, no torch.
"""

from __future__ import annotations

import os
from typing import Any

RECORD_TYPE = "phase"
PHASES = ("warmup", "serving")


def phase_mark(phase: str, when: float) -> dict[str, Any]:
    """The log record of this process turning to `phase` at `when` (time.time())."""
    if phase not in PHASES:
        raise ValueError(f"jitguard: a phase is one of {', '.join(PHASES)}, not {phase!r}")
    return {"type": RECORD_TYPE, "pid": os.getpid(), "phase": phase, "time": when}
