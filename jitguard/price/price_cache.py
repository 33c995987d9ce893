"""A disk cache of demotion prices: a failing guard prices each advised demotion once, not every run.

A price (`demotion_cost.DemotionCost`: verdict, detail, alternative) is a function of the kernel's
code (Triton's own cache key of the function: its source, the JIT functions it calls and the
globals it reads), the parameter, the demotion, the arch, the recorded variants, Triton's version
and jitguard's (its version and the source of the modules that compute prices).
`demotion_cost.cost_in_subprocess` looks a price up here before it starts a child process, and
`DemotionCostChecker.cost_for_report_kernel` (what `jitguard report` and `fix` price through)
before it compiles; both store definitive verdicts ("free", "costly") after, under the same key,
so either answers what the other priced. An "unknown" verdict (a timeout, a failed import) is
never stored, so it is asked again next time.

Where: `$JITGUARD_CACHE_DIR/prices` (`JITGUARD_CACHE_DIR=off`: no cache), else
`$XDG_CACHE_HOME/jitguard/prices`, else `~/.cache/jitguard/prices`; one small JSON file per price,
written whole (a temporary file renamed into place) so a reader never sees half of one. Never
raises: an unreadable, corrupt or unwritable cache is a miss, and the price is computed as if there
were no cache. A cache can only make advice faster, never change a verdict of the guard itself.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import tempfile
from pathlib import Path
from typing import Any

CACHE_ENV = "JITGUARD_CACHE_DIR"
CACHE_OFF = ("off", "0", "none", "false")
CACHED_VERDICTS = ("free", "costly")
_FORMAT = 3  # bump when what a price says, or how it is keyed, changes


def prices_dir() -> Path | None:
    """The directory of cached prices, or None when the cache is switched off."""
    configured = os.environ.get(CACHE_ENV)
    if configured is not None:
        if configured.strip().lower() in CACHE_OFF or not configured.strip():
            return None
        return Path(configured) / "prices"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "jitguard" / "prices"


# The modules whose code decides a price and its words: a development checkout changes them without
# a new version number, so their source is part of every key.
_PRICING_MODULES = ("jitguard.price.demotion_cost", "jitguard.price.ptx_facts", "jitguard.startup.replay",
                    "jitguard.replay.arguments", "jitguard.runtime.offline_backend")


@functools.cache
def _pricing_code() -> str:
    digest = hashlib.sha256()
    for name in _PRICING_MODULES:
        spec = importlib.util.find_spec(name)
        try:
            digest.update(Path(spec.origin).read_bytes() if spec and spec.origin else name.encode())
        except OSError:
            digest.update(name.encode())
    return digest.hexdigest()


def price_key(kernel_code_key: str, param: str, demotion: str, arch: int, signature: list[dict[str, Any]],
              triton_version: str) -> str:
    """The file name of one price: a hash of everything the price depends on (jitguard's version and
    the source of the modules that compute it included)."""
    from jitguard import __version__

    payload = json.dumps({"format": _FORMAT, "jitguard": __version__, "pricing_code": _pricing_code(),
                          "triton": triton_version, "code": kernel_code_key, "param": param, "demotion": demotion,
                          "arch": arch, "signature": signature}, sort_keys=True, default=repr)
    return hashlib.sha256(payload.encode()).hexdigest()


def lookup(key: str) -> dict[str, str] | None:
    """The cached price {"verdict", "detail"[, "alternative", "likely"]} under `key`, or None."""
    where = prices_dir()
    if where is None:
        return None
    try:
        data = json.loads((where / f"{key}.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("verdict") not in CACHED_VERDICTS or not isinstance(
            data.get("detail"), str):
        return None
    return {k: v for k, v in data.items() if k in ("verdict", "detail", "alternative", "likely") and isinstance(v, str)}


def store(key: str, price: dict[str, str]) -> bool:
    """Keep a definitive price under `key`; False when it was not kept (not definitive, no cache,
    or the directory cannot be written)."""
    where = prices_dir()
    if where is None or price.get("verdict") not in CACHED_VERDICTS:
        return False
    try:
        where.mkdir(parents=True, exist_ok=True)
        handle, tmp = tempfile.mkstemp(dir=where, prefix=f".{key[:16]}.", suffix=".tmp")
        try:
            with os.fdopen(handle, "w") as stream:
                json.dump(price, stream)
            os.replace(tmp, where / f"{key}.json")
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError:
        return False
    return True
