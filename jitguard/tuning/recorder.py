"""Recording autotune tunings as they happen: each benchmark run a new tuning key triggers.

    >>> from jitguard.tuning.recorder import record_tunings
    >>> from jitguard.tuning.records import summarize_tunings
    >>> with record_tunings() as recorder:          # doctest: +SKIP
    ...     serve_a_few_requests()
    >>> summarize_tunings(recorder.records)["moe_kernel"]["tunings"]    # doctest: +SKIP
    64

The monitor starts a `TuningRecorder` on install and writes each `TuningRecord` (see
`jitguard.tuning.records`) to its NDJSON log. A tuning answered from Triton's disk cache
(`cache_results`, 3.6+) times nothing and is not recorded. Triton is reached only through
`jitguard.triton_compat` and the autotune observer (`jitguard.tuning.autotune_observer`).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from jitguard.tuning.records import TuningRecord, json_value


def _current_phase() -> str:
    """The installed monitor's phase; "warmup" with none (nothing was marked as serving)."""
    monitor_module = sys.modules.get("jitguard.runtime.monitor")
    monitor = monitor_module.current() if monitor_module is not None else None
    return str(getattr(monitor, "phase", None) or "warmup")


def build_record(tuner: Any, args: tuple, kwargs: dict, configs_timings: Mapping[Any, Any],
                 bench_s: float | None, phase: str | None = None) -> TuningRecord:
    """The record of one tuning, from what the autotune observer saw (Triton imported here)."""
    from jitguard import triton_compat
    from jitguard.tuning.bucketed_autotune import bucket_of, bucketed_values

    jit_fn = triton_compat.unwrap_jit_function(tuner)
    name = triton_compat.kernel_name(jit_fn) if jit_fn is not None else getattr(tuner, "__name__", "?")
    file, line = triton_compat.kernel_location(jit_fn) if jit_fn is not None else ("", 0)
    binding = triton_compat.binding_name(jit_fn) if jit_fn is not None else ""
    values, dtypes = triton_compat.autotune_call_values(tuner, args, kwargs)
    best = triton_compat.autotuner_best_config(tuner)
    if configs_timings:  # the best config is the fastest timing; Triton sets best_config after this call
        best = min(configs_timings, key=lambda c: _first(configs_timings[c]))
    return TuningRecord(kernel=name, file=file, line=line, call_site=_call_site(),
                        key={k: json_value(v) for k, v in values.items()},
                        bucketed_key={k: json_value(v) for k, v in bucketed_values(tuner, values).items()},
                        bucket=bucket_of(tuner), dtypes=dtypes, configs_timed=len(configs_timings),
                        tuning_s=float(bench_s or 0.0), best_config=str(best) if best is not None else "",
                        phase=phase or _current_phase(), time=time.time(), pid=os.getpid(), binding=binding)


def _call_site() -> str:
    """'path:line' of the launch that triggered the tuning (first frame outside Triton, torch, jitguard)."""
    from jitguard import triton_compat
    from jitguard.internal_frames import internal_paths
    skip = [triton_compat.TRITON_DIR + os.sep, os.path.dirname(threading.__file__) + os.sep, *internal_paths()]
    torch_dir = triton_compat.torch_dir()
    if torch_dir:
        skip.append(torch_dir + os.sep)
    return triton_compat.user_call_site(sys._getframe(1), tuple(skip))


def _first(timing: Any) -> float:
    """Triton's timing of one config: a float, or [median, p20, p80]."""
    if isinstance(timing, (list, tuple)):
        return float(timing[0]) if timing else float("inf")
    return float(timing)


class TuningRecorder:
    """Records every autotune tuning while started; `on_record` (e.g. the monitor's sink) sees each.

    A failing `on_record` (full disk, closed file) never reaches the host program and never loses
    the record: it stays in `.records` and the failure is reported once on stderr.
    """

    def __init__(self, on_record: Callable[[TuningRecord], Any] | None = None,
                 phase: Callable[[], str] | None = None) -> None:
        self.records: list[TuningRecord] = []
        self.on_record = on_record
        self.phase = phase  # where the phase comes from (default: the installed monitor)
        self._lock = threading.Lock()
        self._started = False
        self._sink_failed = False

    def _observe(self, tuner: Any, args: tuple, kwargs: dict, configs_timings: Mapping[Any, Any],
                 bench_s: float | None, from_disk: bool) -> None:
        if from_disk:
            return
        record = build_record(tuner, args, kwargs, configs_timings, bench_s,
                              phase=self.phase() if self.phase is not None else None)
        with self._lock:
            self.records.append(record)
        if self.on_record is not None:
            try:
                self.on_record(record)
            except Exception as exc:  # a sink failure must not break the launch
                if _is_verdict(exc):
                    raise  # a verdict for the host (error mode), not a failure of ours
                if not self._sink_failed:
                    self._sink_failed = True
                    print(f"jitguard: could not write a tuning record ({exc!r}); "
                          "later records are kept in memory only", file=sys.stderr)

    def start(self) -> TuningRecorder:
        from jitguard.tuning.autotune_observer import add_autotune_observer
        if not self._started:
            add_autotune_observer(self._observe)
            self._started = True
        return self

    def stop(self) -> None:
        from jitguard.tuning.autotune_observer import remove_autotune_observer
        if self._started:
            remove_autotune_observer(self._observe)
            self._started = False

    def __enter__(self) -> TuningRecorder:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def start_tuning_recording(on_record: Callable[[TuningRecord], Any] | None = None,
                           phase: Callable[[], str] | None = None) -> TuningRecorder:
    """Start recording tunings (what the monitor calls on install); `.stop()` on uninstall.

    An exception from `on_record` reaches the launch only when it is a verdict for the host
    (`RecompileError` of the monitor's error mode); anything else is reported once and dropped.
    """
    return TuningRecorder(on_record, phase).start()


def _is_verdict(exc: BaseException) -> bool:
    from jitguard.tuning.autotune_observer import passes_through_hooks
    return passes_through_hooks(exc)


def record_tunings(on_record: Callable[[TuningRecord], Any] | None = None) -> TuningRecorder:
    """Context manager: `with record_tunings() as recorder: ...`, then `recorder.records`."""
    return TuningRecorder(on_record)
