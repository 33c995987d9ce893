"""Call capture: which kernel call is running, a fresh in-memory cache per block, compiles per scope.

The layer under `no_recompiles` (the judge) and `sweep` (the table): a `CallScope` is a block of
code whose kernel calls and compiles are tracked; subclasses say what to make of them.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jitguard.events import CompileEvent, bound_label

# --- which kernel call is running; a fresh in-memory cache per block --------------------------------
#
# While at least one `CallScope` is open, `run` of Triton's JITFunction, Autotuner and Heuristics is
# wrapped (the originals come back when the last scope closes). Only the outermost call of a kernel
# counts, so the runs @triton.autotune makes while benchmarking belong to the call that triggered
# them. An isolating scope empties a kernel's in-memory cache (and an autotuner's chosen configs) on
# its first call in the scope and puts the entries back on exit; what was compiled inside stays.
# Compile events arrive through `Monitor.subscribe`, in the thread that made the call.

@dataclass(frozen=True)
class KernelId:
    """A kernel as the user wrote it: name, source file and the first line of its definition, and the
    module-level name it is called by when that is not its function's (`CompileEvent.binding`)."""

    name: str
    file: str
    line: int
    binding: str = ""

    @classmethod
    def of_event(cls, event: CompileEvent) -> KernelId:
        return cls(event.kernel, event.file, event.line, event.binding)

    @property
    def label(self) -> str:
        """The kernel as messages name it (`bound_label`)."""
        return bound_label(self.name, self.binding)

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
        self._unsubscribe: Callable[[], None] | None = None
        self._unsubscribe_tunings: Callable[[], None] | None = None
        self._seen_keys: dict[KernelId, set[str]] = {}
        self.internal_errors: list[BaseException] = []

    # --- hooks for subclasses ----------------------------------------------------------------

    def call_started(self, call: KernelCall) -> None:
        """A kernel call began inside the scope."""

    def compile_seen(self, event: CompileEvent, call: KernelCall | None) -> None:
        """A kernel compiled inside the scope; `call` is the kernel call that caused it, if known."""

    def tuning_seen(self, record: Any, call: KernelCall | None) -> None:
        """An autotuner benchmarked its configs for a new key inside the scope (a `TuningRecord`)."""

    # --- for subclasses ----------------------------------------------------------------------

    def first_compile_of_key(self, kernel: KernelId, key: str) -> bool:
        """False when this scope already saw `kernel` compile `key` (a nested isolated block compiling
        a variant again); the first time, remembers it and returns True."""
        seen = self._seen_keys.setdefault(kernel, set())
        if key and key in seen:
            return False
        seen.add(key)
        return True

    def keys_seen(self, kernel: KernelId) -> int:
        """How many distinct variants of `kernel` this scope saw compile."""
        return len(self._seen_keys.get(kernel, ()))

    # --- context manager ---------------------------------------------------------------------

    def open(self) -> None:
        """Start tracking (what `__enter__` does)."""
        from jitguard.runtime.monitor import watch
        self._stashed_caches = []
        self._isolated = set()
        self._keep_alive = []
        self._seen_keys = {}
        self.internal_errors = []
        self.paused = False
        self._watch = watch()
        self._watch.__enter__()
        from jitguard.runtime import monitor as monitor_module
        self._monitor = monitor_module.current()
        self._unsubscribe = self._monitor.subscribe(self._on_event)
        self._unsubscribe_tunings = self._monitor.subscribe_tunings(self._on_tuning)
        _register(self)

    def close(self) -> None:
        """Stop tracking and put back every cache entry the scope set aside (what `__exit__` does)."""
        _unregister(self)
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._unsubscribe_tunings is not None:
            self._unsubscribe_tunings()
            self._unsubscribe_tunings = None
        self._monitor = None
        if self._watch is not None:
            self._watch.__exit__(None, None, None)
            self._watch = None
        for cache, stashed in self._stashed_caches:
            cache.update(stashed)  # earlier entries win; variants compiled inside stay
        self._stashed_caches = []
        self._keep_alive = []

    def __enter__(self) -> CallScope:
        self.open()
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
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
        for configs in triton_compat.autotuner_config_caches(launcher, jit_fn):
            self._set_aside(configs)

    def _set_aside(self, cache: dict) -> None:
        self._stashed_caches.append((cache, dict(cache)))
        cache.clear()

    def _on_event(self, event: CompileEvent) -> None:
        # Called inside Triton's compile hook: an exception here would be swallowed, so keep it.
        try:
            if not self.paused:
                self.compile_seen(event, current_call())
        except Exception as exc:
            self.internal_errors.append(exc)

    def _on_tuning(self, record: Any) -> None:
        # Called after the tuner's run, while its call is still on this thread's call stack.
        try:
            if not self.paused:
                self.tuning_seen(record, current_call())
        except Exception as exc:
            self.internal_errors.append(exc)


# --- the one run wrapper, shared by every open scope ---------------------------------------------

class _CaptureState:
    """What call capture keeps between scopes: one instance, the process's."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.open_scopes: list[CallScope] = []
        self.run_patch: Any = None  # the ClassPatch of Triton's `run` methods while a scope is open
        self.local = threading.local()  # .stack: the kernel calls running in this thread
        self.kernel_ids: dict[int, tuple[Any, KernelId]] = {}


_STATE = _CaptureState()


def _call_stack() -> list[KernelCall]:
    stack = getattr(_STATE.local, "stack", None)
    if stack is None:
        stack = _STATE.local.stack = []
    return stack


def current_call() -> KernelCall | None:
    """The outermost kernel call running in this thread, or None."""
    stack = _call_stack()
    return stack[-1] if stack else None


def open_scopes() -> list[CallScope]:
    """The scopes open now, outermost first."""
    with _STATE.lock:
        return list(_STATE.open_scopes)


def kernel_id_of(jit_fn: Any) -> KernelId:
    """The `KernelId` of a JITFunction (as the monitor names it in its events)."""
    known = _STATE.kernel_ids.get(id(jit_fn))
    if known is not None and known[0] is jit_fn:
        return known[1]
    from jitguard import triton_compat
    file, line = triton_compat.kernel_location(jit_fn)
    kid = KernelId(triton_compat.kernel_name(jit_fn), file, line, triton_compat.binding_name(jit_fn))
    _STATE.kernel_ids[id(jit_fn)] = (jit_fn, kid)
    return kid


def _wrap_run(original: Callable) -> Callable:
    from jitguard.triton_compat import is_manual_warmup_call, unwrap_jit_function

    @functools.wraps(original)
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        scopes = [s for s in open_scopes() if not s.paused]
        if not scopes:
            return original(self, *args, **kwargs)
        jit_fn = unwrap_jit_function(self)
        stack = _call_stack()
        if jit_fn is None or any(c.jit_fn is jit_fn for c in stack):
            return original(self, *args, **kwargs)  # autotune benchmarking: part of the outer call
        call = KernelCall(kernel_id_of(jit_fn), jit_fn, manual_warmup=is_manual_warmup_call(kwargs))
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


def _register(scope: CallScope) -> None:
    from jitguard import triton_compat
    with _STATE.lock:
        if not _STATE.open_scopes:
            _STATE.run_patch = triton_compat.patch_launcher_runs(_wrap_run)
        _STATE.open_scopes.append(scope)


def _unregister(scope: CallScope) -> None:
    with _STATE.lock:
        if scope in _STATE.open_scopes:
            _STATE.open_scopes.remove(scope)
        if not _STATE.open_scopes:
            if _STATE.run_patch is not None:
                _STATE.run_patch.restore()
                _STATE.run_patch = None
            _STATE.kernel_ids.clear()
