"""Told after each tuning a Triton autotuner makes: `Autotuner.run` wrapped while an observer is in.

Facts relied on, identical in Triton 3.2 .. 3.9: a benchmark run sets `self.bench_time` and
`self.configs_timings` (a new dict) on the tuner; a 3.6+ disk-cache hit sets only the latter.
Importing this module imports Triton (through `jitguard.triton_compat`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from jitguard import triton_compat
from jitguard.triton_compat import ClassPatch

_autotune_observers: list[Callable[..., None]] = []
_observer_patch = ClassPatch()  # Autotuner.run wrapped while any observer is installed
_observing = threading.local()  # .tuner: the tuner whose run is being observed in this thread


def passes_through_hooks(exc: BaseException) -> bool:
    """Whether an exception raised by a jitguard hook or observer is a verdict meant for the host
    (`RecompileError` in error mode), not an internal failure to swallow."""
    return bool(getattr(exc, "jitguard_verdict", False))


def _observing_run(beneath: Callable) -> Callable:
    """`Autotuner.run` that calls `beneath` and tells the observers about a tuning it made."""

    def run(tuner: Any, *args: Any, **kwargs: Any) -> Any:
        state = tuner.__dict__
        timings_before = state.get("configs_timings")
        if getattr(_observing, "tuner", None) is tuner:  # another wrapper stacked over ours: observe once
            return beneath(tuner, *args, **kwargs)
        outer, _observing.tuner = getattr(_observing, "tuner", None), tuner
        bench_time_before = state.get("bench_time")
        try:
            result = beneath(tuner, *args, **kwargs)
        finally:
            _observing.tuner = outer
        timings = state.get("configs_timings")
        if timings is not None and timings is not timings_before:  # a tuning happened in this call
            bench_time = state.get("bench_time")
            from_disk = bench_time is bench_time_before  # 3.6+ disk-cache hit: timings read, nothing run
            for observer in list(_autotune_observers):
                try:
                    observer(tuner, args, kwargs, dict(timings), None if from_disk else bench_time, from_disk)
                except Exception as exc:  # an observer must never break the host's launch
                    if passes_through_hooks(exc):
                        raise
        return result

    # Its own marker, not `__jitguard_wrapper__`: call capture must still wrap this run.
    run.__jitguard_observer__ = True  # type: ignore[attr-defined]
    return run


def add_autotune_observer(observer: Callable[..., None]) -> None:
    """Call `observer(tuner, args, kwargs, configs_timings, bench_s, from_disk)` after each tuning.

    Costs one extra call per autotuned launch while any observer is installed; nothing after the
    last one is removed (`Autotuner.run` goes back through `ClassPatch`).
    """
    autotuner = triton_compat.autotuner_type()
    if not _observer_patch.active:
        _observer_patch.replace(autotuner, "run", _observing_run(autotuner.__dict__["run"]))
    if observer not in _autotune_observers:
        _autotune_observers.append(observer)


def remove_autotune_observer(observer: Callable[..., None]) -> None:
    """Stop calling `observer`; the last one out puts `Autotuner.run` back."""
    if observer in _autotune_observers:
        _autotune_observers.remove(observer)
    if not _autotune_observers:
        _observer_patch.restore()  # a tool that wrapped run over ours keeps its wrapper, which still works
