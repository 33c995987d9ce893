"""A copy of a kernel with other demotion lists: what the cost check compiles both ways.

Importing this module imports Triton (through `jitguard.triton_compat`).
"""

from __future__ import annotations

from typing import Any

from jitguard import triton_compat


def jit_function_copy(jit_fn: Any, do_not_specialize: list, do_not_specialize_on_alignment: list) -> Any:
    """A new JITFunction over the same Python function with the given demotion lists, of the
    original's class (a Gluon kernel's copy is a Gluon kernel: 3.5+'s `GluonJITFunction`).

    `JITFunction(fn, version, do_not_specialize, do_not_specialize_on_alignment, debug, noinline, ...)`
    is the same in 3.2-3.9; 3.5+ registers every JITFunction by `module:qualname`, so the
    original's registry entry is put back (the copy must not replace the user's kernel there).
    """
    registry = triton_compat.kernel_registry()
    registry_key = triton_compat.registry_key(jit_fn)
    saved = registry.get(registry_key) if registry is not None else None
    base = triton_compat.jit_function_type()
    cls = type(jit_fn) if isinstance(jit_fn, base) else base
    copy = cls(jit_fn.fn, do_not_specialize=list(do_not_specialize),
               do_not_specialize_on_alignment=list(do_not_specialize_on_alignment),
               debug=getattr(jit_fn, "debug", None), noinline=getattr(jit_fn, "noinline", None))
    if registry is not None and saved is not None:
        registry[registry_key] = saved
    return copy
