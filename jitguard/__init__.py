"""jitguard: find and fix Triton JIT recompilation.

    import jitguard
    with jitguard.watch() as rec:
        serve_a_few_requests()
    print(rec.variants("fused_moe_kernel"))

`import jitguard` imports neither torch nor Triton; each name below loads its module on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "watch": "jitguard.runtime.monitor",
    "install": "jitguard.runtime.monitor",
    "uninstall": "jitguard.runtime.monitor",
    "mark_serving": "jitguard.runtime.monitor",
    "mark_warmup": "jitguard.runtime.monitor",
    "set_process_info": "jitguard.runtime.monitor",
    "Recorder": "jitguard.runtime.monitor",
    "RecompileError": "jitguard.runtime.monitor",
    "RecompileWarning": "jitguard.runtime.monitor",
    "offline": "jitguard.runtime.offline_backend",
    "no_recompiles": "jitguard.guard.recompile_guard",
    "sweep": "jitguard.guard.variant_sweep",
    "assert_max_variants": "jitguard.guard.variant_sweep",
    "warmup": "jitguard.startup.replay",
    "CompileEvent": "jitguard.events",
    "ParamSpec": "jitguard.events",
    "explain_recompile": "jitguard.explain",
    "autotune": "jitguard.tuning.bucketed_autotune",
}

__all__ = sorted(_LAZY) + ["__version__"]


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'jitguard' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
