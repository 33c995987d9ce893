"""Inductor kernels made launchable in this process without a Triton compile here: handed over by one of
Inductor's compile workers, or loaded from torch's own caches (its FX graph cache and the Triton bundle it keeps,
launched through its static launcher).

Inductor makes a generated kernel launchable in `CachingAutotuner.precompile()`. When the autotuner arrives with
its compile results already made, no Triton hook fires in this process, so the monitor wraps `precompile` and
records one event per such kernel (`handover_events`): origin "inductor", `arrived` "worker" (a worker compiled or
loaded it and logged its own event, which the report ties this one to by the kernel's hash, counting it once) or
"disk" (torch's cache: the autotuner came from `StaticAutotunerFuture`, torch's future over a cached kernel). A
result this process compiled itself was already recorded by the compile listener and is skipped.

The wrapper is put in when `torch._inductor.runtime.triton_heuristics` is imported (a `sys.meta_path` finder
waits for it), or at once when it already is. A torch without these names gets no wrapper: its reports say that
Inductor's cached and handed-over kernels are not seen (`handover_hook_active` is False). Imports neither Triton
nor torch.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jitguard.events import CONFIG_OPTIONS, CompileEvent
from jitguard.internal_frames import callers
from jitguard.runtime.arrival import handover_arrival
from jitguard.runtime.bootstrap.triton_hook import find_spec_with_other_finders
from jitguard.runtime.compile_origin import InductorFacts, dynamo_compile_id

AUTOTUNER_MODULE = "torch._inductor.runtime.triton_heuristics"
AUTOTUNER_CLASS = "CachingAutotuner"
CACHED_FUTURE_MODULE = "torch._inductor.codecache"
CACHED_FUTURE_CLASS = "StaticAutotunerFuture"  # torch's future over a kernel loaded from its own caches
_WRAPPED = "__jitguard_handover__"
_CALLER_DEPTH = 6  # StaticAutotunerFuture.result calls precompile directly; a few frames of slack


@dataclass
class HandedOverKernel:
    """One compile result an autotuner brought along: what the hand-over event is built from."""

    name: str
    digest: str  # Triton's hash of the compiled kernel (its cache directory's name)
    file: str
    line: int
    options: dict[str, Any] = field(default_factory=dict)
    compile_id: str | None = None


def _result_name(result: Any, autotuner: Any) -> str:
    kernel = getattr(result, "kernel", None)
    for value in (getattr(kernel, "name", None), getattr(getattr(kernel, "metadata", None), "name", None),
                  getattr(getattr(autotuner, "fn", None), "__name__", None),
                  (getattr(autotuner, "inductor_meta", None) or {}).get("kernel_name")):
        if isinstance(value, str) and value:
            return value
    return "?"


def _result_options(result: Any) -> dict[str, Any]:
    config = getattr(result, "config", None)
    return {name: getattr(config, name) for name in CONFIG_OPTIONS if isinstance(getattr(config, name, None), int)}


def _definition_line(file: str, name: str) -> int:
    """The line of `def name(` in the generated module `file` (read, never run), 0 when not found: a hand-over
    from a worker or torch's cache carries no function object to ask."""
    prefix = f"def {name}("
    try:
        with open(file, encoding="utf-8", errors="replace") as source:
            for number, text in enumerate(source, 1):
                if text.lstrip().startswith(prefix):
                    return number
    except OSError:
        pass
    return 0


def handed_over_kernels(autotuner: Any, compile_id: str | None) -> list[HandedOverKernel]:
    """The kernels an autotuner holds compiled before `precompile` makes them launchable."""
    fn = getattr(getattr(autotuner, "fn", None), "fn", None)
    code = getattr(fn, "__code__", None)
    file = str(getattr(autotuner, "filename", None) or (code.co_filename if code is not None else ""))
    line = code.co_firstlineno if code is not None else 0
    kernels = []
    for result in list(getattr(autotuner, "compile_results", None) or []):
        digest = getattr(getattr(result, "kernel", None), "hash", None)
        name = _result_name(result, autotuner)
        if not line and file:
            line = _definition_line(file, name)
        kernels.append(HandedOverKernel(name=name, digest=str(digest or ""), file=file,
                                        line=line, options=_result_options(result), compile_id=compile_id))
    return kernels


def loaded_from_torch_cache(frame: Any) -> bool:
    """Whether `precompile` was called by torch's future over a kernel from its own caches."""
    future_class = getattr(sys.modules.get(CACHED_FUTURE_MODULE), CACHED_FUTURE_CLASS, None)
    return future_class is not None and any(isinstance(caller.f_locals.get("self"), future_class)
                                            for caller in callers(frame, _CALLER_DEPTH))


def asking_compile_id(autotuner: Any, from_torch_cache: bool) -> str | None:
    """The graph compile that asked for the kernel: the id Inductor gave a worker's autotuner
    (`set_compile_info`), or for a cached one the compile running now (its stored id is an old run's)."""
    stored = getattr(autotuner, "compile_id", None)
    current = dynamo_compile_id()
    first, second = (current, stored) if from_torch_cache else (stored, current)
    value = first if first is not None else second
    return str(value) if value is not None else None


def handover_events(monitor: Any, autotuner: Any, from_torch_cache: bool, compile_ms: float,
                    frame: Any) -> list[CompileEvent]:
    """One event per kernel `autotuner` brought along compiled that the listener did not already record in this
    process (that one this process compiled itself)."""
    history = monitor._direct_history
    arrived = handover_arrival(from_torch_cache)
    kernels = handed_over_kernels(autotuner, asking_compile_id(autotuner, from_torch_cache))
    events = []
    for kernel in kernels:
        if kernel.digest and history.recorded(kernel.digest):
            continue  # this process compiled it (the listener's event stands)
        where = (kernel.name, kernel.file, kernel.line)
        variant, _ = history.add(where, kernel.digest, {}, kernel.options)
        facts = InductorFacts(compile_id=kernel.compile_id)
        events.append(CompileEvent(
            kernel=kernel.name, file=kernel.file, line=kernel.line,
            call_site=monitor._tc.user_call_site(frame, monitor._skip_dirs), pid=os.getpid(), ppid=os.getppid(),
            rank=monitor.rank, role=monitor.role, device=0, phase=monitor.phase, variant=variant, key=kernel.digest,
            options=dict(kernel.options), compile_ms=compile_ms / max(1, len(kernels)),
            disk_cache_hit=arrived == "disk", arrived=arrived, causes=[], triton_version=monitor.triton_version,
            time=time.time(), origin="inductor", inductor=facts.to_dict()))
    return events


def _wrap_precompile(precompile: Callable, on_handover: Callable[[Any, bool, float, Any], None]) -> Callable:
    @functools.wraps(precompile)
    def precompile_and_record(self: Any, *args: Any, **kwargs: Any) -> Any:
        warm_cache_only = kwargs.get("warm_cache_only", args[0] if args else False)
        arriving = (not warm_cache_only and bool(getattr(self, "compile_results", None))
                    and not getattr(self, "launchers", None))
        started = time.perf_counter()
        result = precompile(self, *args, **kwargs)
        if arriving:
            on_handover(self, loaded_from_torch_cache(sys._getframe(1)), (time.perf_counter() - started) * 1000.0,
                        sys._getframe(1))
        return result

    setattr(precompile_and_record, _WRAPPED, precompile)
    return precompile_and_record


class _PatchWhenReady:
    """A `sys.meta_path` finder that finds nothing: at each import it asks `ready()` whether the watched module
    is complete yet (its class defined), and stops asking once it is. The watched module's own import is
    followed to its end, so a module that completes without the class stops the asking too.

    Asking at every import covers a module that was mid-import when the monitor started (Triton is often
    first imported from inside Inductor's own modules): it completes before any later import returns."""

    def __init__(self, name: str, ready: Callable[[], bool]) -> None:
        self.name, self.ready, self.done = name, ready, False

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if self.done:
            return None
        if fullname == self.name:
            return self._followed_spec(fullname, path, target)
        self.done = self.ready()
        return None

    def _followed_spec(self, fullname: str, path: Any, target: Any) -> Any:
        spec = find_spec_with_other_finders(self, fullname, path, target)
        loader: Any = getattr(spec, "loader", None)
        if spec is None or loader is None or not hasattr(loader, "exec_module"):
            return spec
        finder = self

        class _Loader:
            def create_module(self, spec: Any) -> Any:
                create = getattr(loader, "create_module", None)
                return create(spec) if create is not None else None

            def exec_module(self, module: Any) -> None:
                spec.loader = loader  # the module sees its own loader, never this wrapper
                module.__loader__ = loader
                loader.exec_module(module)
                finder.ready()
                finder.done = True  # complete: with the class (wrapped now) or without (nothing to wrap)

        spec.loader = _Loader()
        return spec


class HandoverHook:
    """`CachingAutotuner.precompile` wrapped for one monitor; `remove()` puts torch's method back."""

    def __init__(self, on_handover: Callable[[Any, bool, float, Any], None], module_name: str = AUTOTUNER_MODULE,
                 class_name: str = AUTOTUNER_CLASS) -> None:
        self._on_handover = on_handover
        self._module_name, self._class_name = module_name, class_name
        self._finder: _PatchWhenReady | None = None
        self._patched: Any = None
        self._lock = threading.Lock()

    @property
    def active(self) -> bool:
        """Whether torch's hand-over point is wrapped now (False before Inductor is imported, or on a torch
        without it)."""
        return self._patched is not None

    def install(self) -> None:
        """Wrap the hand-over point now if its module is complete, else as soon as it is."""
        if not self._patch_if_ready():
            self._finder = _PatchWhenReady(self._module_name, self._patch_if_ready)
            sys.meta_path.insert(0, self._finder)

    def _patch_if_ready(self) -> bool:
        """Wrap `precompile` once its class exists; True when there is nothing left to wait for."""
        if self._patched is not None:
            return True
        autotuner: Any = getattr(sys.modules.get(self._module_name), self._class_name, None)
        precompile = getattr(autotuner, "precompile", None)
        if precompile is None:
            return False  # not imported, or mid-import
        with self._lock:
            if not hasattr(precompile, _WRAPPED):
                autotuner.precompile = _wrap_precompile(precompile, self._on_handover)
            self._patched = autotuner
        return True

    def remove(self) -> None:
        """Put torch's own `precompile` back (unless someone wrapped it over ours) and stop waiting."""
        if self._finder is not None:
            self._finder.done = True
            if self._finder in sys.meta_path:
                sys.meta_path.remove(self._finder)
        self._finder = None
        with self._lock:
            patched: Any = self._patched
            self._patched = None
        original = getattr(getattr(patched, "precompile", None), _WRAPPED, None)
        if patched is not None and original is not None:
            patched.precompile = original
