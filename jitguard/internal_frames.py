"""Call frames: walking a frame's callers, and jitguard's own machinery as file paths (frames in these files
are never a user's call site)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

# Modules whose frames sit between a user's launch and a compile or a tuning. The demo is not
# among them: there the demo is the user.
INTERNAL_MODULES = (
    "triton_compat",
    "runtime/monitor",
    "runtime/offline_backend",
    "runtime/offline_sides",
    "runtime/call_capture",
    "guard/recompile_guard",
    "guard/variant_sweep",
    "guard/pytest_plugin",
    "startup/replay",
    "tuning/recorder",
    "tuning/autotune_observer",
    "tuning/bucketed_tuner",
    "tuning/pretune",
)

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def internal_paths() -> list[str]:
    """The files of INTERNAL_MODULES, absolute."""
    return [os.path.join(PACKAGE_DIR, *name.split("/")) + ".py" for name in INTERNAL_MODULES]


def callers(frame: Any, limit: int | None = None) -> Iterator[Any]:
    """`frame`, then each frame that called it, outward: at most `limit` frames (all when None)."""
    depth = 0
    while frame is not None and (limit is None or depth < limit):
        yield frame
        frame = frame.f_back
        depth += 1
