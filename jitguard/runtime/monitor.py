"""The runtime monitor: hooks Triton's compile path and records a `CompileEvent` per compile.

Nothing runs on a cache hit: Triton calls the hooks only when its in-memory cache misses. The
hooks chain whatever was installed before (and pass its return value on unchanged: jitguard's own
code never asks Triton to skip a compile), notice when another tool replaces them, and never let
an internal error reach the host program (it is logged once).

    >>> import jitguard
    >>> with jitguard.watch() as rec:          # doctest: +SKIP
    ...     run_my_model()
    >>> rec.variants("fused_moe_kernel")       # doctest: +SKIP
    2

Modes: "log" (a line per recompile on stderr), "warn" (a `RecompileWarning` for every compile
after `mark_serving()`), "error" (raise `RecompileError` instead). A per-kernel variant budget
acts the same way whatever the phase.

Autotune tunings (an `@triton.autotune` kernel benchmarking every config for a new key value) are
recorded too (`jitguard.tuning.recorder`): kept in `.tunings`, written as `"type": "tuning"` NDJSON
records, logged when a kernel tunes again or tunes during serving (with the varying key parameter
and the remedy), summed up at exit, and acted on by warn/error modes during serving like compiles.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import importlib.util
import os
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from jitguard.events import COST_PROBE_ATTRIBUTE, Cause, CompileEvent
from jitguard.explain import explain_recompile, short_path
from jitguard.internal_frames import internal_paths
from jitguard.render_text import event_kernel_names, format_event_line, format_summary, format_tuning_summary
from jitguard.runtime.compile_origin import origin_of_jit_kernel
from jitguard.runtime.direct_compiles import DirectCompile, DirectCompileHistory, record_direct_compile
from jitguard.runtime.dynamo_recompiles import graph_compile_records
from jitguard.runtime.inductor_launchers import HandoverHook, handover_events
from jitguard.runtime.ndjson_sink import NdjsonSink
from jitguard.runtime.phase_marks import phase_mark
from jitguard.tuning.records import TuningRecord, format_tuning_line, remedy_lines, summarize_tunings

MODES = ("log", "warn", "error")


class RecompileError(AssertionError):
    """A kernel compiled where it must not: after `mark_serving()` in error mode, over budget, or
    inside `no_recompiles()`. The message lists every new variant with its causes."""

    jitguard_verdict = True  # raised through Triton's hooks to the host, never swallowed as internal

    def __init__(self, message: str, events: list[CompileEvent] | None = None,
                 tunings: list[TuningRecord] | None = None) -> None:
        super().__init__(message)
        self.events = list(events or [])
        self.tunings = list(tunings or [])
        self.prices: dict[str, dict[str, dict[str, Any]]] = {}  # {kernel: {param: cost}} when a failure priced its fix


class RecompileWarning(UserWarning):
    """A kernel compiled or autotuned during serving (mode "warn")."""

    jitguard_verdict = True  # under `-W error` it is the host's exception


class Recorder:
    """Collects the compile events and autotune tunings seen while it is attached (see `watch`)."""

    def __init__(self) -> None:
        self.events: list[CompileEvent] = []
        self.tunings: list[TuningRecord] = []
        self._lock = threading.Lock()

    def _add(self, event: CompileEvent) -> None:
        with self._lock:
            self.events.append(event)

    def _add_tuning(self, record: TuningRecord) -> None:
        with self._lock:
            self.tunings.append(record)

    def variants(self, kernel_name: str) -> int:
        """How many new variants of `kernel_name` were compiled while recording: a function's name
        counts every kernel so named, a bound name (`copy_plain = triton.jit(...)(_copy)`) or a name as
        `kernels()` keys it that kernel alone."""
        events = list(self.events)
        names = event_kernel_names(events)
        return sum(1 for e, name in zip(events, names) if kernel_name == name or e.answers_to(kernel_name))

    @property
    def recompiles(self) -> list[CompileEvent]:
        """Events that were not the first variant of their kernel in this process."""
        return [e for e in self.events if e.is_recompile]

    def kernels(self) -> dict[str, int]:
        """{kernel name: new variants} for everything recorded. A kernel called by another name than its
        function's is keyed `function (as name)` (`Class.kernel` for a class attribute); kernels of one
        name in different files are keyed with their file (`_fwd_kernel (decode/attn.py:40)`)."""
        counts: dict[str, int] = {}
        for name in event_kernel_names(list(self.events)):
            counts[name] = counts.get(name, 0) + 1
        return counts

    def clear(self) -> None:
        with self._lock:
            self.events.clear()
            self.tunings.clear()


class Monitor:
    """The one installed monitor (see module docstring). Use `install()` / `watch()`, not this class."""

    def __init__(self, mode: str = "log", directory: str | None = None,
                 budget: int | dict[str, int] | None = None, summary: bool = True,
                 log_first_compiles: bool = False, stream: Any = None) -> None:
        if mode not in MODES:
            raise ValueError(f"jitguard: mode must be one of {', '.join(MODES)}, not {mode!r}")
        self.mode = mode
        self.budget = checked_budget(budget)
        self.summary = summary
        self.log_first_compiles = log_first_compiles
        self.stream = stream
        self.sink = NdjsonSink(directory, warn=self._write_line) if directory else None
        self.phase = "warmup"
        self.role: str | None = "torchrun worker" if os.environ.get("TORCHELASTIC_RUN_ID") else None
        self.rank: int | None = _rank_from_env()
        # Asked at each compile for (role, rank) where one process serves several (a Ray worker runs
        # tasks and actors one after another); None keeps the names set by set_process_info.
        self.name_source: Callable[[], tuple[str | None, int | None] | None] | None = None
        self.events: list[CompileEvent] = []
        self.tunings: list[TuningRecord] = []
        self._subscribers: list[Callable[[CompileEvent], None]] = []
        self._tuning_subscribers: list[Callable[[TuningRecord], None]] = []
        self._tunings_per_kernel: dict[tuple[str, str], int] = {}  # (kernel label, file) -> tunings so far
        self._tuning_recorder: Any = None
        self._histories: dict[Any, dict[Any, tuple]] = {}  # kernel -> {key: (params, options)} it compiled
        self._bindings: dict[Any, str] = {}  # kernel -> the name it is called by, when not its function's
        self._previous: dict[str, Callable | None] = {}
        self._ours: dict[str, Callable] = {}
        self._local = threading.local()
        self._lock = threading.RLock()
        self._reported_errors: set[str] = set()
        self._reported_replacements: set[str] = set()
        self._installed = False
        self._skip_dirs: tuple[str, ...] = ()
        self._direct_history = DirectCompileHistory()  # variants of kernels compiled by triton.compile calls
        self.serving_since: float | None = None  # time.time() of mark_serving()
        self._graph_compiles_written: set[str] = set()  # Dynamo compile ids already in the log
        self._undo_compile_patch: Callable[[], None] | None = None  # before 3.4: triton.compile wrapped
        self.handover_hook = HandoverHook(self._record_handover)  # Inductor kernels no Triton compile made here

    # --- install / uninstall ------------------------------------------------------------------

    def install(self) -> None:
        from jitguard import triton_compat as tc
        self._tc = tc
        self.triton_version = tc.TRITON_VERSION
        dirs = [tc.TRITON_DIR + os.sep, os.path.dirname(contextlib.__file__) + os.sep]
        # jitguard's machinery and its kernels' wrappers are skipped: the user's line is the call site.
        dirs += internal_paths()
        kernels_spec = importlib.util.find_spec("jitguard.kernels")
        if kernels_spec is not None and kernels_spec.origin:
            dirs.append(os.path.dirname(os.path.abspath(kernels_spec.origin)) + os.sep)
        torch_dir = tc.torch_dir()
        if torch_dir:
            dirs.append(torch_dir + os.sep)
        self._skip_dirs = tuple(dirs)
        self._ours = {"pre_compile": self._pre_compile_hook, "post_compile": self._post_compile_hook,
                      "listener": self._listener_hook}
        for slot, hook in self._ours.items():
            self._previous[slot] = tc.get_hook(slot)
            tc.set_hook(slot, hook)
        if not tc.has_listener():  # no listener tells of direct triton.compile calls: wrap the entry point
            self._undo_compile_patch = tc.patch_compile_entry(self._wrap_compile)
        if self.sink is not None:
            self.sink.process_info = {"role": self.role, "rank": self.rank, "triton_version": self.triton_version}
        try:
            self.handover_hook.install()
        except Exception as exc:  # Triton's compiles are still watched without Inductor's hand-overs
            self._internal_error(exc)
        try:
            from jitguard.tuning.recorder import start_tuning_recording
            self._tuning_recorder = start_tuning_recording(on_record=self._on_tuning, phase=lambda: self.phase)
        except Exception as exc:  # compiles are still watched without tunings
            self._internal_error(exc)
        self._installed = True

    def uninstall(self) -> None:
        """Put back the hooks that were there before, unless another tool replaced ours since."""
        if not self._installed:
            return
        for slot, hook in self._ours.items():
            current = self._tc.get_hook(slot)
            if current is hook:
                self._tc.set_hook(slot, self._previous.get(slot))
        if self._undo_compile_patch is not None:
            self._undo_compile_patch()
            self._undo_compile_patch = None
        self.handover_hook.remove()
        if self._tuning_recorder is not None:
            self._tuning_recorder.stop()
            self._tuning_recorder = None
        self._installed = False
        self.write_graph_compiles()
        if self.sink is not None:
            self.sink.close()

    def replaced_hooks(self) -> dict[str, Any]:
        """{slot: what is there now} for every slot where our hook is no longer installed."""
        if not self._installed:
            return {}
        out = {}
        for slot, hook in self._ours.items():
            current = self._tc.get_hook(slot)
            if slot == "listener" and not self._tc.has_listener():
                continue
            if current is not hook:
                out[slot] = current
        return out

    def _warn_replaced(self, slot: str, evidence: str) -> None:
        if slot in self._reported_replacements:
            return
        self._reported_replacements.add(slot)
        current = self._tc.get_hook(slot)
        name = getattr(current, "__qualname__", None) or repr(current)
        self._write_line(f"[jitguard] warning: another tool replaced Triton's {slot} hook with {name} and does "
                         f"not chain to jitguard ({evidence}); jitguard may miss compiles: install jitguard "
                         "last, or have that tool call the hook it replaced")

    def _check_replacements(self) -> None:
        """Warn when both compile hooks were replaced (nothing shows whether the new ones chain).

        A tool that replaces one slot and chains to us is fine; one that does not chain is caught
        in the hooks themselves, from the evidence of a pre/post pair that is missing one half.
        """
        replaced = self.replaced_hooks()
        if "pre_compile" in replaced and "post_compile" in replaced:
            self._warn_replaced("post_compile", "both compile hooks were replaced")

    # --- the hooks (called by Triton, only on the compile path) -------------------------------

    def _pre_compile_hook(self, *args: Any, **kwargs: Any) -> Any:
        try:
            pending = getattr(self._local, "pending", None)
            if pending is None:
                pending = self._local.pending = {}
            if pending and "post_compile" in self.replaced_hooks():
                self._warn_replaced("post_compile", "a compile started and never finished in jitguard")
            pending.clear()  # a compile that raised never reaches the post hook: forget it
            pending[_pending_key(kwargs)] = (time.perf_counter(), time.time())
            self._local.cache_hit = None
        except Exception as exc:  # never reach the host program
            self._internal_error(exc)
        previous = self._previous.get("pre_compile")
        if previous is not None:
            return previous(*args, **kwargs)  # its answer (even "skip") is its own business
        return None

    def _listener_hook(self, *args: Any, **kwargs: Any) -> Any:
        event = None
        try:
            named = self._tc.listener_arguments(args, kwargs)
            if self._jit_launch_compiles(named["src"], sys._getframe(1)):
                self._local.cache_hit = self._tc.listener_cache_hit(args, kwargs)
            else:  # a triton.compile call no JIT launch made (Inductor, Gluon by hand, an IR file)
                call = DirectCompile(named["src"], named["metadata"], self._tc.listener_cache_hit(args, kwargs),
                                     self._tc.listener_compile_ms(named["times"]))
                event = self._record_direct(call, sys._getframe(1))
        except Exception as exc:
            self._internal_error(exc)
        previous = self._previous.get("listener")
        result = previous(*args, **kwargs) if previous is not None else None
        if event is not None:
            self._enforce(event)
        return result

    def _jit_launch_compiles(self, src: Any, frame: Any) -> bool:
        """Whether `src` is compiled by its kernel's own `JITFunction.run` (a launch or warm-up, which the JIT
        hooks record), read off the stack so that a tool holding the pre-compile slot changes nothing."""
        jit_fn = self._tc.source_kernel(src)
        return jit_fn is not None and self._tc.find_run_frame(jit_fn, frame) is not None

    def _wrap_compile(self, compile: Callable) -> Callable:
        """`triton.compile` that records the calls no JIT launch made (Triton before 3.4, no listener)."""
        monitor = self

        def compile_and_record(src: Any, *args: Any, **kwargs: Any) -> Any:
            # A kernel that bound this wrapper keeps it after uninstall: then it only compiles.
            if not monitor._installed or monitor._jit_launch_compiles(src, sys._getframe(1)):
                return compile(src, *args, **kwargs)
            started, started_wall = time.perf_counter(), time.time()
            compiled = compile(src, *args, **kwargs)
            event = None
            try:
                call = DirectCompile(src, getattr(compiled, "metadata", None), None,
                                     (time.perf_counter() - started) * 1000.0, started_wall)
                event = monitor._record_direct(call, sys._getframe(1))
            except Exception as exc:
                monitor._internal_error(exc)
            if event is not None:
                monitor._enforce(event)
            return compiled

        compile_and_record.__jitguard_wrapper__ = True  # type: ignore[attr-defined]
        return compile_and_record

    def write_graph_compiles(self) -> None:
        """Log the torch.compile graph compiles of this process not logged yet (`dynamo_recompiles`)."""
        if self.sink is None:
            return
        try:
            for record in graph_compile_records(self.serving_since, self._graph_compiles_written,
                                                self.handover_hook.active):
                self.sink.write(record)
        except Exception as exc:  # never reach the host program
            self._internal_error(exc)

    def _record_direct(self, call: DirectCompile, frame: Any) -> CompileEvent | None:
        self._rename_from_source()
        event = record_direct_compile(self, call, frame, self._direct_history)
        if event is not None:
            self._dispatch(event)
        return event

    def _record_handover(self, autotuner: Any, from_torch_cache: bool, compile_ms: float, frame: Any) -> None:
        """Inductor made kernels launchable that no Triton compile here made (`inductor_launchers`)."""
        events = []
        try:
            self._rename_from_source()
            events = handover_events(self, autotuner, from_torch_cache, compile_ms, frame)
            for event in events:
                self._dispatch(event)
        except Exception as exc:  # never reach the host program
            self._internal_error(exc)
        for event in events:
            self._enforce(event)  # may raise RecompileError: the kernels are launchable already

    def write_phase_mark(self) -> None:
        """Log that this process is in `self.phase` from now on (read for its compile workers' compiles)."""
        if self.sink is not None:
            self.sink.write(phase_mark(self.phase, time.time()), counted=False)

    def _post_compile_hook(self, *args: Any, **kwargs: Any) -> Any:
        event = None
        try:
            event = self._record(kwargs, sys._getframe(1))
        except Exception as exc:
            self._internal_error(exc)
        previous = self._previous.get("post_compile")
        result = previous(*args, **kwargs) if previous is not None else None
        if event is not None:
            self._enforce(event)  # may raise RecompileError / warn: the kernel is compiled and cached
        return result

    # --- building the event -------------------------------------------------------------------

    def _record(self, hook_kwargs: dict, frame: Any) -> CompileEvent | None:
        tc = self._tc
        info = hook_kwargs.get("fn")
        jit_fn = getattr(info, "jit_function", None)
        if jit_fn is None or getattr(jit_fn, COST_PROBE_ATTRIBUTE, False):
            return None  # a cost check's copy of a kernel: not the program's compile
        self._rename_from_source()
        compile_info = hook_kwargs.get("compile") or {}
        key = hook_kwargs.get("key")
        started, started_wall = (getattr(self._local, "pending", None) or {}).pop(_pending_key(hook_kwargs),
                                                                                   (None, None))
        if started is None and "pre_compile" in self.replaced_hooks():
            self._warn_replaced("pre_compile", "a compile finished that jitguard did not see start")
        compile_ms = (time.perf_counter() - started) * 1000.0 if started is not None else None
        listener_hit = getattr(self._local, "cache_hit", None) if tc.has_listener() else None
        self._local.cache_hit = None
        device = compile_info.get("device", 0)
        if not isinstance(device, int):
            device = getattr(device, "index", 0) or 0
        arrived = _arrival(jit_fn, device, key, listener_hit, started_wall)
        cache_hit = listener_hit if listener_hit is not None else (None if arrived is None else arrived != "cold")
        run_frame = tc.find_run_frame(jit_fn, frame)
        bound_args = tc.bound_args_of(run_frame)
        params = tc.param_specs(jit_fn, compile_info, bound_args)
        options = tc.launch_options(compile_info)
        passed = tc.explicit_launch_options(key)
        if passed is not None:
            options["passed"] = passed
        file, line = tc.kernel_location(jit_fn)
        variant, causes = self._variant_and_causes(jit_fn, device, key, params, options)
        tuner = tc.autotuner_on_stack(frame)
        if tuner is not None:
            _config_causes_expected(causes, tc.autotune_config_names(tuner))
        if variant > 1 and not causes:
            causes = [Cause("(unknown)", "variants compiled before jitguard was watching", "this variant", None,
                            "install jitguard earlier (jitguard run, or JITGUARD=1) to see what changed")]
        event = CompileEvent(
            kernel=tc.kernel_name(jit_fn), module=getattr(jit_fn, "module", "") or "", file=file, line=line,
            call_site=tc.user_call_site(run_frame or frame, self._skip_dirs), pid=os.getpid(), ppid=os.getppid(),
            rank=self.rank, role=self.role, device=device, phase=self.phase, variant=variant,
            key=tc.key_string(key), params=params, options=options, compile_ms=compile_ms,
            disk_cache_hit=cache_hit, arrived=arrived, causes=causes, triton_version=self.triton_version,
            time=time.time(),
            is_manual_warmup=bool(hook_kwargs.get("is_manual_warmup")), autotuning=tc.is_autotuning(frame),
            binding=self._bindings.get(jit_fn, ""), origin=origin_of_jit_kernel(tc.is_gluon_kernel(jit_fn)))
        try:
            event.cache_miss = _cache_miss(jit_fn, device, key, arrived)
        except Exception as exc:  # the compile is recorded without it
            self._internal_error(exc)
        self._dispatch(event)
        return event

    def _variant_and_causes(self, jit_fn: Any, device: int, key: Any, params: dict,
                            options: dict) -> tuple[int, list[Cause]]:
        """This variant's number among the kernel's variants Triton holds on `device`, and what changed."""
        tc = self._tc
        with self._lock:
            if jit_fn not in self._histories:
                self._warn_unknown_demotions(jit_fn)
                self._bindings[jit_fn] = tc.binding_name(jit_fn)
            cache = tc.kernel_cache(jit_fn, device)
            # Forget variants Triton no longer holds (a cleared cache, keys-only sweeps that ended).
            history = {k: v for k, v in self._histories.get(jit_fn, {}).items() if k in cache and k != key}
            causes = explain_recompile(params, options, list(history.values()))
            history[key] = (params, options)
            self._histories[jit_fn] = history
            return max(len(cache), len(history)), causes

    def _rename_from_source(self) -> None:
        source = self.name_source
        if source is None:
            return
        try:
            named = source()
        except Exception as exc:  # the compile is recorded under the names it had
            self._internal_error(exc)
            return
        if named is None:
            return
        role, rank = named
        if (role is not None and role != self.role) or (rank is not None and rank != self.rank):
            set_process_info(role=role, rank=rank)

    def _warn_unknown_demotions(self, jit_fn: Any) -> None:
        file, line = self._tc.kernel_location(jit_fn)
        for option, entry in self._tc.unknown_demotion_names(jit_fn):
            self._write_line(f"[jitguard] warning: {self._tc.kernel_name(jit_fn)} ({file}:{line}): {option} lists "
                             f"{entry!r}, which is not a parameter; Triton ignores it silently "
                             f"(parameters: {', '.join(self._tc.param_names(jit_fn))})")

    def subscribe_tunings(self, callback: Callable[[TuningRecord], None]) -> Callable[[], None]:
        """Call `callback(record)` for every autotune tuning from now on (see `subscribe`)."""
        with self._lock:
            self._tuning_subscribers.append(callback)

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._tuning_subscribers:
                    self._tuning_subscribers.remove(callback)

        return unsubscribe

    def _on_tuning(self, record: TuningRecord) -> None:
        """One autotune tuning (the kernel benchmarked every config for a new key): keep it, tell the
        subscribers, log it when it is a re-tune or during serving, write it, then apply the mode."""
        try:
            with self._lock:
                self.tunings.append(record)
                where = (record.label, record.file)
                count = self._tunings_per_kernel[where] = self._tunings_per_kernel.get(where, 0) + 1
                subscribers = list(self._tuning_subscribers)
            for callback in subscribers:
                try:
                    callback(record)
                except Exception as exc:
                    self._internal_error(exc)
            if count > 1 or record.phase == "serving" or self.log_first_compiles:
                self._write_line(self._tuning_log_line(record, count))
            if self.sink is not None:
                self.sink.process_info.update(role=self.role, rank=self.rank)
                self.sink.write(record.to_dict())  # never raises: a failure is warned once and counted
        except Exception as exc:  # never reach the host program
            self._internal_error(exc)
            return
        if record.phase == "serving":
            message = f"[jitguard] {record.label} autotuned during serving: {format_tuning_line(record)}"
            if self.mode == "error":
                raise RecompileError(message, tunings=[record])
            if self.mode == "warn":
                warnings.warn(message, RecompileWarning, stacklevel=2)

    def _tuning_log_line(self, record: TuningRecord, count: int) -> str:
        """`[jitguard] autotune k (f.py:3) tuned n=65: 2 configs, ...; tuning #2 of k: <remedy>`."""
        shown = dataclasses.replace(record, call_site=short_path(record.call_site, keep=3))  # as compile lines show it
        line = "[jitguard] " + format_tuning_line(shown).removeprefix("jitguard: ")
        if count < 2:
            return line
        with self._lock:
            same = [t for t in self.tunings if (t.label, t.file) == (record.label, record.file)]
        entry = summarize_tunings(same)[record.kernel]
        varying = ", ".join(entry["key_params_varying"])
        line += f"; tuning #{count} of {record.label}" + (f", key {varying} varies" if varying else "")
        remedy = remedy_lines(record.kernel, entry)
        return line + "".join(f"; remedy: {text.split('; ', 1)[-1]}" for text in remedy)

    def subscribe(self, callback: Callable[[CompileEvent], None]) -> Callable[[], None]:
        """Call `callback(event)` for every compile from now on, in the thread that compiled; returns
        the function that unsubscribes it. A callback that raises is reported once, never propagated."""
        with self._lock:
            self._subscribers.append(callback)

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._subscribers:
                    self._subscribers.remove(callback)

        return unsubscribe

    def _dispatch(self, event: CompileEvent) -> None:
        # Subscribers (recorders, no_recompiles) and the log line come first and never depend on
        # the log file: a full disk must not silence a guard.
        with self._lock:
            self.events.append(event)
            subscribers = list(self._subscribers)
        for callback in subscribers:
            try:
                callback(event)
            except Exception as exc:  # one subscriber must not silence the others
                self._internal_error(exc)
        # A config variant compiled while autotune benchmarks is expected: the tuning's own line
        # (one per tuning, with the varying key) says what matters, not one line per config.
        config_variant = event.autotuning and bool(event.causes) and all(c.advice == "expected" for c in event.causes)
        # A cold compile of a variant the cache held under another key is said even as a first compile.
        if (event.is_recompile or self.log_first_compiles or event.phase == "serving" or event.cache_miss) \
                and not config_variant:
            self._write_line(format_event_line(event))
        if self.sink is not None:
            self.sink.process_info.update(role=self.role, rank=self.rank)
            self.sink.write(event)  # never raises: a failure is warned once and counted
        self._check_replacements()

    # --- modes and budgets --------------------------------------------------------------------

    def unwritten_events_line(self) -> str | None:
        """The exit line about compile events the log could not hold, or None when it holds them all."""
        sink = self.sink
        if sink is None or sink.events_not_written == 0:
            return None
        return (f"[jitguard] {sink.events_not_written} compile event(s) of pid {os.getpid()} could not be written "
                f"to {sink.directory} ({sink.last_error}); they are missing from its log")

    def _over_budget(self, event: CompileEvent) -> int | None:
        if self.budget is None:
            return None
        if isinstance(self.budget, dict):
            named = [name for name in (event.binding, event.label, event.kernel) if name in self.budget]
            limit = self.budget[named[0]] if named else None
        else:
            limit = self.budget
        if limit is not None and event.variant > limit:
            return limit
        return None

    def _enforce(self, event: CompileEvent) -> None:
        limit = self._over_budget(event)
        problem = None
        if limit is not None:
            problem = f"{event.label} compiled variant #{event.variant}, over its budget of {limit}"
        elif event.phase == "serving":
            problem = f"{event.label} compiled during serving"
        if problem is None:
            return
        message = f"[jitguard] {problem}: {format_event_line(event)}"
        if self.mode == "error":
            raise RecompileError(message, [event])
        if self.mode == "warn":
            warnings.warn(message, RecompileWarning, stacklevel=2)
        elif limit is not None:
            self._write_line(message)

    # --- output -------------------------------------------------------------------------------

    def _write_line(self, line: str) -> None:
        try:
            stream = self.stream or sys.stderr
            stream.write(line + "\n")
            stream.flush()
        except Exception:  # a closed stderr must not break the host
            pass

    def _internal_error(self, exc: BaseException) -> None:
        kind = f"{type(exc).__name__}: {exc}"
        if kind in self._reported_errors:
            return
        self._reported_errors.add(kind)
        self._write_line(f"[jitguard] internal error (reported once; the program goes on): {kind}")

    def summary_lines(self) -> list[str]:
        """The end-of-process table (kernel, variants, total compile ms, top causes), then each
        autotuned kernel with its tuning count and the remedy."""
        return format_summary(self.events) + format_tuning_summary(self.tunings)


def _config_causes_expected(causes: list[Cause], config_names: set[str]) -> None:
    """A parameter or option an autotune config sets varies because the configs differ: expected,
    never "make it runtime" (the tuner picks among them; bucketing its key is the remedy for storms)."""
    for cause in causes:
        if cause.param in config_names and cause.advice != "expected":
            cause.advice = "expected"
            cause.message = f"{cause.param} is set by the autotune configs: one variant per config (expected)"


def _arrival(jit_fn: Any, device: int, key: Any, listener_hit: bool | None, started_wall: float | None) -> str | None:
    """How the kernel under `key` arrived (runtime.arrival): the listener's word, else its cache entry's age."""
    from jitguard import triton_cache
    from jitguard.runtime.arrival import kernel_arrival

    entry_dir = triton_cache.compiled_entry_dir(jit_fn, device, key)
    return kernel_arrival(listener_hit, entry_dir, started_wall, triton_cache.remote_cache_active())


def _cache_miss(jit_fn: Any, device: int, key: Any, arrived: str | None) -> dict[str, Any] | None:
    """Record the entry's key components; for a cold compile, what differs from the same variant's other entries."""
    from jitguard import triton_cache, triton_compat
    from jitguard.runtime.cache_miss import miss_reason, write_key_sidecar

    entry_dir = triton_cache.compiled_entry_dir(jit_fn, device, key)
    compiled = triton_compat.kernel_cache(jit_fn, device).get(key)
    components = triton_cache.key_components(jit_fn, compiled, triton_compat.key_string(key)) if compiled else None
    if entry_dir is None or components is None:
        return None
    write_key_sidecar(entry_dir, components)
    if arrived != "cold":
        return None
    return miss_reason(os.path.dirname(entry_dir), triton_compat.kernel_name(jit_fn), entry_dir, components)


def _pending_key(hook_kwargs: dict) -> tuple:
    info = hook_kwargs.get("fn")
    return (id(getattr(info, "jit_function", None)), repr(hook_kwargs.get("key")))


def checked_budget(budget: Any) -> int | dict[str, int] | None:
    """`budget` if it is None, an int >= 1 or {kernel name: int >= 1}; else one ValueError naming what is wrong."""
    def is_count(value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and value >= 1

    if budget is None or is_count(budget):
        return budget
    expected = "a variant budget is an int >= 1, or a dict {kernel name: int >= 1}"
    if isinstance(budget, dict):
        bad = [f"{k!r}: {v!r}" for k, v in budget.items() if not isinstance(k, str) or not is_count(v)]
        if not bad:
            return dict(budget)
        raise ValueError(f"jitguard: {expected}; got {', '.join(bad)}")
    raise ValueError(f"jitguard: {expected}; got {budget!r}")


def _rank_from_env() -> int | None:
    for name in ("RANK", "LOCAL_RANK"):
        value = os.environ.get(name)
        if value is not None and value.strip().lstrip("-").isdigit():
            return int(value)
    return None


# --- the module-level API (the one installed monitor) ------------------------------------------

_monitor: Monitor | None = None
_atexit_registered = False
_install_lock = threading.RLock()


def current() -> Monitor | None:
    """The installed monitor, or None."""
    return _monitor


def install(mode: str | None = None, dir: str | None = None,  # matches the env name
            budget: int | dict[str, int] | None = None, summary: bool | None = None,
            log_first_compiles: bool = False, stream: Any = None) -> Monitor:
    """Install the monitor (idempotent: a second call returns the installed one).

    Defaults come from JITGUARD_MODE, JITGUARD_DIR and JITGUARD_SUMMARY (0 turns the exit table off).
    Log lines go to `stream` (default: stderr). Under `jitguard run` the monitor starts with the
    run's settings on the first import of Triton, also when that import is this call's own.
    A `budget` that is not an int >= 1 or {kernel name: int >= 1} raises ValueError here.
    """
    global _monitor, _atexit_registered
    if _monitor is not None:
        return _monitor
    from jitguard import triton_compat  # noqa: F401 - under `jitguard run`, importing Triton starts the monitor
    with _install_lock:  # two threads installing at once get one monitor
        if _monitor is not None:
            return _monitor  # started by that import (or another thread): the one a later call would get
        mode = mode or os.environ.get("JITGUARD_MODE") or "log"
        directory = dir or os.environ.get("JITGUARD_DIR") or None
        if summary is None:
            summary = os.environ.get("JITGUARD_SUMMARY", "1") not in ("0", "false", "no")
        monitor = Monitor(mode=mode, directory=directory, budget=budget, summary=summary,
                          log_first_compiles=log_first_compiles, stream=stream)
        monitor.install()
        _monitor = monitor
        if not _atexit_registered:
            atexit.register(_at_exit)
            _atexit_registered = True
        return monitor


def uninstall() -> None:
    """Remove the monitor and put back the hooks that were installed before it."""
    global _monitor
    if _monitor is not None:
        _monitor.uninstall()
        _monitor = None


def _at_exit() -> None:
    monitor = _monitor
    if monitor is None:
        return
    if monitor.summary:
        for line in monitor.summary_lines():
            monitor._write_line(line)
    monitor.write_graph_compiles()
    if monitor.sink is not None:
        monitor.sink.record_unwritten_count()
    unwritten = monitor.unwritten_events_line()
    if unwritten:  # said even with the summary off: the report cannot show what was never written
        monitor._write_line(unwritten)


def mark_serving() -> None:
    """From now on, compiles are "during serving": warn/error modes act on them."""
    monitor = install()
    monitor.write_graph_compiles()  # the warm-up's graph compiles, before the phase turns
    monitor.phase = "serving"
    monitor.serving_since = time.time()
    monitor.write_phase_mark()
    monitor._check_replacements()


def mark_warmup() -> None:
    """Back to the warm-up phase (e.g. between test cases)."""
    if _monitor is not None:
        _monitor.phase = "warmup"
        _monitor.write_phase_mark()


def set_name_source(source: Callable[[], tuple[str | None, int | None] | None] | None) -> None:
    """Ask `source()` for (role, rank) before each compile is recorded (None: keep the current names).

    For a process whose role changes while it runs, such as a Ray worker that runs one task, then another.
    """
    install().name_source = source


def set_process_info(role: str | None = None, rank: int | None = None) -> None:
    """Name this process's role ("engine core", "worker") and rank for every later event."""
    monitor = install()
    if role is not None:
        monitor.role = role
    if rank is not None:
        monitor.rank = rank
    if monitor.sink is not None:
        monitor.sink.process_info.update(role=monitor.role, rank=monitor.rank)
        monitor.sink.write_process_record(force=True)


def record_process_role(role: str | None, rank: int | None = None) -> None:
    """Name this process's role and rank in its log: through the running monitor, or, before Triton is
    imported (no monitor yet), in a process record of its own in JITGUARD_DIR, so a process that never
    compiles is still in the report. Nothing without a monitor or JITGUARD_DIR."""
    running = current()
    if running is not None:
        set_process_info(role=role, rank=rank)  # appends an updated record to its file
        if running.sink is not None:
            return
    directory = os.environ.get("JITGUARD_DIR")
    if not directory:
        return
    sink = NdjsonSink(directory)
    sink.process_info = {"role": role, "rank": rank, "triton_version": ""}
    sink.write_process_record()
    sink.close()


@contextlib.contextmanager
def watch(mode: str = "log", dir: str | None = None,
          budget: int | dict[str, int] | None = None) -> Iterator[Recorder]:
    """Record every compile inside the block; installs the monitor for the block if it is not installed.

    When a monitor is already installed (by `jitguard run`, say), its mode and directory stay.
    """
    installed_here = _monitor is None
    monitor = install(mode=mode, dir=dir, budget=budget, summary=False) if installed_here else _monitor
    assert monitor is not None
    recorder = Recorder()
    unsubscribe = monitor.subscribe(recorder._add)
    unsubscribe_tunings = monitor.subscribe_tunings(recorder._add_tuning)
    try:
        yield recorder
    finally:
        unsubscribe()
        unsubscribe_tunings()
        if installed_here:
            uninstall()
