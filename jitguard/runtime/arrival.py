"""How a compiled kernel arrived in a process: compiled cold, loaded from the local disk cache, loaded
from an entry a compile bundle installed, loaded through Triton's remote cache, or handed over by one of
Inductor's compile workers (which logged the compile itself).

The compilation listener (Triton 3.4+) says whether the disk cache was hit. Where it is absent (3.2,
3.3) or did not fire (another tool took its slot), the entry's own files tell: an entry whose group
file is older than the compile's start was on disk before it. A bundle marks the entries it installs
with `BUNDLE_MARKER`. Through Triton's remote manager every hit is read from the remote store.

A kernel torch makes launchable without calling Triton (`runtime.inductor_launchers`) is "disk" when it came
from torch's own caches, "worker" when a compile worker compiled (or loaded) it: that worker's event is the
compile, the report counts the two once.
"""

from __future__ import annotations

import glob
import os

ARRIVALS = ("cold", "disk", "bundle", "remote", "worker")
BUNDLE_MARKER = "jitguard-bundle.json"  # written by a bundle install into each cache entry it adds


def entry_written_before(entry_dir: str, started_wall: float) -> bool | None:
    """Whether the cache entry's group file existed before `started_wall` (time.time()); None without one."""
    groups = glob.glob(os.path.join(glob.escape(entry_dir), "__grp__*.json"))
    if not groups:
        return None
    try:
        oldest = min(os.stat(path).st_mtime for path in groups)
    except OSError:
        return None
    return oldest < started_wall


def kernel_arrival(cache_hit: bool | None, entry_dir: str | None, started_wall: float | None,
                   remote: bool) -> str | None:
    """"cold" | "disk" | "bundle" | "remote", or None when this Triton and this cache cannot tell."""
    if cache_hit is None and entry_dir is not None and started_wall is not None and not remote:
        before = entry_written_before(entry_dir, started_wall)
        cache_hit = before
    if cache_hit is None:
        return None
    if not cache_hit:
        return "cold"
    if remote:
        return "remote"
    if entry_dir is not None and os.path.exists(os.path.join(entry_dir, BUNDLE_MARKER)):
        return "bundle"
    return "disk"


def handover_arrival(from_torch_cache: bool) -> str:
    """How a kernel torch made launchable without a Triton compile in this process arrived: "disk" from torch's
    caches (its FX graph cache and Triton bundle), else "worker" (an Inductor compile worker handed it over)."""
    return "disk" if from_torch_cache else "worker"
