"""Why a kernel compiled cold although Triton's cache held it: the part of the cache key that differs.

Triton's disk key hashes its own build, the kernel's source (with the functions and globals it uses),
the target and compiler, the launch options and specialization, and the environment knobs; the entry
keeps none of them readably. jitguard writes them beside each entry it sees (`KEY_SIDECAR`, also for
entries a bundle installs). When a kernel compiles cold, the entries of the same kernel with the same
specialization and options are compared with this compile's, and each component that differs is named
(a launcher that changed a knob, a rebuilt Triton wheel, an edited kernel). Entries written without
jitguard carry no sidecar and are not compared.
"""

from __future__ import annotations

import glob
import json
import os
import tempfile
from typing import Any

KEY_SIDECAR = "jitguard-key.json"
# component -> how a message names it; "specialization" selects the entries to compare, never differs
COMPONENT_WORDS = {"triton_build": "Triton build", "source": "kernel source", "target": "target",
                   "compiler": "compiler", "env": "knobs"}


def write_key_sidecar(entry_dir: str, components: dict[str, Any]) -> None:
    """Record the key components beside a cache entry (once; a failure to write is not the program's problem)."""
    path = os.path.join(entry_dir, KEY_SIDECAR)
    if os.path.exists(path) or not os.path.isdir(entry_dir):
        return
    try:
        handle, tmp = tempfile.mkstemp(dir=entry_dir, prefix=f".{KEY_SIDECAR}.tmp.")
        with os.fdopen(handle, "w") as f:
            json.dump(components, f, sort_keys=True)
        os.replace(tmp, path)
    except OSError:
        pass


def _read(path: str) -> dict[str, Any] | None:
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _differences(mine: dict[str, Any], theirs: dict[str, Any]) -> list[str]:
    lines = []
    for component, words in COMPONENT_WORDS.items():
        if component == "env":
            here, there = mine.get("env") or {}, theirs.get("env") or {}
            lines += [f"knob {k} ({there.get(k)!r} there, {here.get(k)!r} here)"
                      for k in sorted(set(here) | set(there)) if here.get(k) != there.get(k)]
        elif mine.get(component) != theirs.get(component):
            lines.append(f"{words} ({_short(theirs.get(component))} there, {_short(mine.get(component))} here)")
    return lines


def _short(value: Any) -> str:
    text = str(value)
    return text[:12] if len(text) > 12 and all(c in "0123456789abcdef" for c in text) else text


def miss_reason(cache_dir: str, kernel_name: str, entry_dir: str, components: dict[str, Any],
                limit: int = 2000) -> dict[str, Any] | None:
    """{"entries": n, "differs": [...]} when the cache holds `kernel_name` with this specialization under other keys
    (the closest entry's differing components); None when it holds none (a new variant, not a miss)."""
    groups = glob.glob(os.path.join(glob.escape(cache_dir), "*", f"__grp__{glob.escape(kernel_name)}.json"))
    candidates = []
    for group in groups[:limit]:
        other = os.path.dirname(group)
        if os.path.abspath(other) == os.path.abspath(entry_dir):
            continue
        theirs = _read(os.path.join(other, KEY_SIDECAR))
        if theirs is not None and theirs.get("specialization") == components.get("specialization"):
            candidates.append(_differences(components, theirs))
    candidates = [c for c in candidates if c]
    if not candidates:
        return None
    return {"entries": len(candidates), "differs": min(candidates, key=len)}

