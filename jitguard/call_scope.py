"""Which Triton kernel call is running, and a fresh in-memory cache for a block of code.

`no_recompiles` and `sweep` judge compiles by the kernel call that caused them. While at least
one `CallScope` is open, `run` of Triton's `JITFunction`, `Autotuner` and `Heuristics` is wrapped
(the originals come back when the last scope closes). The wrapper:

- tells every open scope when a kernel call starts: only the outermost call of a kernel counts,
  so the runs `@triton.autotune` makes while benchmarking its configs belong to the call that
  triggered them;
- for an isolating scope, empties the kernel's in-memory cache (and an autotuner's chosen
  configs) on the kernel's first call in the scope; on exit the earlier entries are put back,
  and what was compiled inside stays. A variant compiled by an earlier test then compiles again
  (a disk-cache hit, milliseconds), so a block's verdict depends only on its own calls, never
  on test order or on which xdist worker ran what before.

Compile events reach the scope through `Monitor.listeners`, in the thread that made the call.
Importing this module imports neither Triton nor torch; opening a scope imports Triton.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from jitguard.events import CompileEvent


@dataclass(frozen=True)
class KernelId:
    """A kernel as the user wrote it: name, source file and the line of its `def`."""

    name: str
    file: str
    line: int

    @classmethod
    def of_event(cls, event: CompileEvent) -> "KernelId":
        return cls(event.kernel, event.file, event.line)

    def where(self) -> str:
        """'file:line' of the kernel's definition."""
        return f"{self.file}:{self.line}" if self.file else "?"


@dataclass
class KernelCall:
    """One outermost call of a kernel (a launch, or `kernel.warmup(...)` when `manual_warmup`)."""

    kernel: KernelId
    jit_fn: Any
    manual_warmup: bool
    numbers: dict[int, int] = field(default_factory=dict)  # id(scope) -> this call's number there


class CallScope:
    """A block of code whose kernel calls and compiles are tracked; subclass and override the two hooks.

    Use as a context manager (re-entering the same object after it closed is fine).
    """

    def __init__(self, isolate: bool = True) -> None:
        self.isolate = isolate
        self.paused = False
        self._stashed_caches: list[tuple[dict, dict]] = []
        self._isolated: set[int] = set()
        self._keep_alive: list[Any] = []
        self._watch: Any = None
        self._monitor: Any = None
        self._listener: Callable[[CompileEvent], None] | None = None
        self.internal_errors: list[BaseException] = []

    # --- hooks for subclasses ----------------------------------------------------------------

    def call_started(self, call: KernelCall) -> None:
        """A kernel call began inside the scope."""

    def compile_seen(self, event: CompileEvent, call: KernelCall | None) -> None:
        """A kernel compiled inside the scope; `call` is the kernel call that caused it, if known."""

    # --- context manager ---------------------------------------------------------------------

    def open(self) -> None:
        """Start tracking (what `__enter__` does)."""
        from jitguard.monitor import watch
        self._stashed_caches = []
        self._isolated = set()
        self._keep_alive = []
        self.internal_errors = []
        self.paused = False
        self._watch = watch()
        self._watch.__enter__()
        from jitguard import monitor as monitor_module
        self._monitor = monitor_module.current()
        self._listener = self._on_event
        with self._monitor._lock:
            self._monitor.listeners.append(self._listener)
        _register(self)

    def close(self) -> None:
        """Stop tracking and put back every cache entry the scope set aside (what `__exit__` does)."""
        _unregister(self)
        if self._monitor is not None:
            with self._monitor._lock:
                if self._listener in self._monitor.listeners:
                    self._monitor.listeners.remove(self._listener)
        self._monitor = None
        if self._watch is not None:
            self._watch.__exit__(None, None, None)
            self._watch = None
        for cache, stashed in self._stashed_caches:
            cache.update(stashed)  # earlier entries win; variants compiled inside stay
        self._stashed_caches = []
        self._keep_alive = []

    def __enter__(self) -> "CallScope":
        self.open()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    # --- called by the run wrapper and the monitor --------------------------------------------

    def _isolate(self, launcher: Any, jit_fn: Any) -> None:
        """Empty the caches behind this call on its kernel's first call in the scope."""
        from jitguard import triton_compat
        if id(jit_fn) in self._isolated:
            return
        self._isolated.add(id(jit_fn))
        self._keep_alive.append(jit_fn)  # ids stay unique while the scope is open
        for cache in triton_compat.all_kernel_caches(jit_fn):
            self._set_aside(cache)
        # An autotuner remembers its chosen config per key; a fresh scope benchmarks again.
        wrapper = launcher
        while wrapper is not None and wrapper is not jit_fn:
            chosen = getattr(wrapper, "cache", None)
            if isinstance(chosen, dict) and type(wrapper).__name__ == "Autotuner":
                self._set_aside(chosen)
            wrapper = getattr(wrapper, "fn", None)

    def _set_aside(self, cache: dict) -> None:
        self._stashed_caches.append((cache, dict(cache)))
        cache.clear()

    def _on_event(self, event: CompileEvent) -> None:
        # Called inside Triton's compile hook: an exception here would be swallowed, so keep it.
        try:
            if not self.paused:
                self.compile_seen(event, current_call())
        except Exception as exc:  # noqa: BLE001
            self.internal_errors.append(exc)


# --- the one run wrapper, shared by every open scope ---------------------------------------------

_lock = threading.RLock()
_open_scopes: list[CallScope] = []
_originals: dict[type, Callable] = {}
_local = threading.local()


def _call_stack() -> list[KernelCall]:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


def current_call() -> KernelCall | None:
    """The outermost kernel call running in this thread, or None."""
    stack = _call_stack()
    return stack[-1] if stack else None


def open_scopes() -> list[CallScope]:
    """The scopes open now, outermost first."""
    with _lock:
        return list(_open_scopes)


_kernel_ids: dict[int, tuple[Any, KernelId]] = {}


def kernel_id_of(jit_fn: Any) -> KernelId:
    """The `KernelId` of a JITFunction (as the monitor names it in its events)."""
    known = _kernel_ids.get(id(jit_fn))
    if known is not None and known[0] is jit_fn:
        return known[1]
    from jitguard import triton_compat
    file, line = triton_compat.kernel_location(jit_fn)
    kid = KernelId(triton_compat.kernel_name(jit_fn), file, line)
    _kernel_ids[id(jit_fn)] = (jit_fn, kid)
    return kid


def _wrap_run(original: Callable) -> Callable:
    from jitguard.triton_compat import unwrap_jit_function

    @functools.wraps(original)
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        scopes = [s for s in open_scopes() if not s.paused]
        if not scopes:
            return original(self, *args, **kwargs)
        jit_fn = unwrap_jit_function(self)
        stack = _call_stack()
        if jit_fn is None or any(c.jit_fn is jit_fn for c in stack):
            return original(self, *args, **kwargs)  # autotune benchmarking: part of the outer call
        call = KernelCall(kernel_id_of(jit_fn), jit_fn, manual_warmup=bool(kwargs.get("warmup", False)))
        for scope in scopes:
            if scope.isolate:
                scope._isolate(self, jit_fn)
            scope.call_started(call)
        stack.append(call)
        try:
            return original(self, *args, **kwargs)
        finally:
            stack.pop()

    run.__jitguard_wrapper__ = True  # type: ignore[attr-defined]
    return run


def _launcher_classes() -> list[type]:
    from triton.runtime.autotuner import Autotuner, Heuristics
    from triton.runtime.jit import JITFunction
    return [JITFunction, Autotuner, Heuristics]


def _register(scope: CallScope) -> None:
    with _lock:
        if not _open_scopes:
            for cls in _launcher_classes():
                original = cls.__dict__.get("run")
                if original is None or getattr(original, "__jitguard_wrapper__", False):
                    continue
                _originals[cls] = original
                cls.run = _wrap_run(original)
        _open_scopes.append(scope)


def _unregister(scope: CallScope) -> None:
    with _lock:
        if scope in _open_scopes:
            _open_scopes.remove(scope)
        if not _open_scopes:
            for cls, original in _originals.items():
                if getattr(cls.__dict__.get("run"), "__jitguard_wrapper__", False):
                    cls.run = original  # type: ignore[method-assign]
            _originals.clear()
            _kernel_ids.clear()
