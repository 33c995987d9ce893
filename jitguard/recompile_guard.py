"""`no_recompiles()`: fail when a Triton kernel compiles a new variant after its warm-up calls.

    import jitguard

    with jitguard.no_recompiles(warmup=1):
        for num_tokens in (16, 17, 32):
            my_kernel[(1,)](x, y, num_tokens, BLOCK=128)

raises, on exit, a `RecompileError` (an `AssertionError`) that lists every new variant:

    Expected no new Triton variants after warm-up (the first call of each kernel), but 1 was compiled:

    my_kernel (kernels/ops.py:12): 1 variant in warm-up, 1 new after it
      variant #2 at call 2, called from tests/test_ops.py:31
        num_tokens: int32 divisible by 16 -> int32, value 17
      fix: @triton.jit(do_not_specialize_on_alignment=["num_tokens"])
        num_tokens flips between divisible-by-16 and not: ...

"Warm-up" means a kernel's first `warmup` calls inside the block: they may compile anything. Calls
count only inside the block; `kernel.warmup(...)` calls never count and may always compile; the
compiles `@triton.autotune` makes while benchmarking belong to the call that triggered them.

By default the block is isolated (`isolate=True`): each kernel starts the block with an empty
in-memory cache (restored on exit), so the verdict depends only on the calls made in the block,
not on what ran before it (test order, pytest-xdist). Pass `isolate=False` to assert that code
warmed up before the block compiles nothing more (then `warmup=0` is the usual choice).
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from contextlib import ContextDecorator
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from jitguard.events import Cause, CompileEvent
from jitguard.explain import fix_hint, short_path, without_weaker_advice


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
    """A kernel as the user wrote it: name, source file and the first line of its definition."""

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
        self._unsubscribe: Callable[[], None] | None = None
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
        self._unsubscribe = self._monitor.subscribe(self._on_event)
        _register(self)

    def close(self) -> None:
        """Stop tracking and put back every cache entry the scope set aside (what `__exit__` does)."""
        _unregister(self)
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
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
        from triton.runtime.autotuner import Autotuner
        wrapper = launcher
        while wrapper is not None and wrapper is not jit_fn:
            if isinstance(wrapper, Autotuner) and isinstance(getattr(wrapper, "cache", None), dict):
                self._set_aside(wrapper.cache)
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


# --- no_recompiles ------------------------------------------------------------------------------------

@dataclass
class ScopedCompile:
    """A compile seen inside a `no_recompiles` block, with the number of the call that caused it."""

    event: CompileEvent
    call_number: int  # this kernel's n-th call in the block; 0 when compiled outside a tracked call
    after_warmup: bool
    block_line: str = ""  # "file:line" of the statement in the block's own file that led to the call

    @property
    def kernel(self) -> KernelId:
        return KernelId.of_event(self.event)


class no_recompiles(CallScope, ContextDecorator):  # noqa: N801 - the public name is a function-like verb
    """Context manager (and decorator): raise `RecompileError` if a kernel compiles a new variant after warm-up.

    `warmup`: how many calls of each kernel may compile (int >= 0). `kernels`: only judge these
    kernels (names, or the kernel objects themselves); None judges every kernel. `isolate`: see the
    module docstring. Inside the block, `.compiles` lists every compile seen and `.new_variants`
    the ones after warm-up.
    """

    def __init__(self, warmup: int = 1, kernels: Iterable[Any] | str | None = None, *, isolate: bool = True) -> None:
        if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
            raise ValueError(f"jitguard.no_recompiles: warmup must be an int >= 0 (calls per kernel), not {warmup!r}")
        super().__init__(isolate=isolate)
        self.warmup = warmup
        self._kernel_names, self._kernel_ids = _kernel_filter(kernels)
        self.kernels = kernels
        self.block_file: str | None = None  # the test's file; found on entry when not set
        self._reset()

    def _reset(self) -> None:
        self.calls: dict[KernelId, int] = {}
        self.compiles: list[ScopedCompile] = []
        self._seen_keys: dict[KernelId, set[str]] = {}
        self._called_names: set[str] = set()  # every kernel called, judged or not
        self._lock = threading.Lock()  # kernels may be called from several threads

    @property
    def new_variants(self) -> list[ScopedCompile]:
        """Compiles after warm-up so far: what the block will fail on."""
        return [c for c in self.compiles if c.after_warmup]

    # --- scope hooks ---------------------------------------------------------------------------

    def _judges(self, kernel: KernelId) -> bool:
        if not self._kernel_names and not self._kernel_ids:
            return True
        return kernel.name in self._kernel_names or kernel in self._kernel_ids

    def call_started(self, call: KernelCall) -> None:
        with self._lock:
            self._called_names.add(call.kernel.name)
            if call.manual_warmup or not self._judges(call.kernel):
                return
            number = self.calls.get(call.kernel, 0) + 1
            self.calls[call.kernel] = number
            call.numbers[id(self)] = number

    def compile_seen(self, event: CompileEvent, call: KernelCall | None) -> None:
        kernel = KernelId.of_event(event)
        if not self._judges(kernel):
            return
        with self._lock:
            self._judge_compile(kernel, event, call)

    def _judge_compile(self, kernel: KernelId, event: CompileEvent, call: KernelCall | None) -> None:
        seen = self._seen_keys.setdefault(kernel, set())
        if event.key and event.key in seen:
            return  # a variant this block already has, compiled again by a nested isolated block
        seen.add(event.key)
        number = call.numbers.get(id(self), 0) if call is not None and call.kernel == kernel else 0
        if number == 0 and not (call is not None and call.manual_warmup):
            number = self.calls.get(kernel, 0)  # compiled outside a tracked call: charge the latest one
        manual = event.is_manual_warmup or (call is not None and call.manual_warmup)
        after_warmup = not manual and number > self.warmup
        self.compiles.append(ScopedCompile(event, number, after_warmup, self._line_in_block_file()))

    def _line_in_block_file(self) -> str:
        """Where the block's own code (the test) was when this compile happened: the kernel's call
        site is often a library wrapper shared by every step, this says which step it was."""
        if not self.block_file:
            return ""
        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_code.co_filename == self.block_file:
                return f"{frame.f_code.co_filename}:{frame.f_lineno}"
            frame = frame.f_back
        return ""

    # --- context manager -----------------------------------------------------------------------

    def __enter__(self) -> "no_recompiles":
        if self.block_file is None:
            self.block_file = _caller_file()
        self._reset()
        self.open()
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
        __tracebackhide__ = True  # pytest shows the user's `with` line, not this frame
        self.close()
        if exc is not None:
            if self.new_variants and hasattr(exc, "add_note"):
                exc.add_note(self.failure_message())
            return False
        if self.internal_errors:
            first = self.internal_errors[0]
            raise RuntimeError(f"jitguard.no_recompiles could not judge this block: "
                               f"{type(first).__name__}: {first}") from first
        if self.new_variants:
            from jitguard.monitor import RecompileError
            raise RecompileError(self.failure_message(), [c.event for c in self.new_variants])
        self._check_named_kernels_were_called()
        return False

    def _check_named_kernels_were_called(self) -> None:
        __tracebackhide__ = True
        missing = sorted(n for n in self._kernel_names if n not in self._called_names)
        missing += sorted(k.name for k in self._kernel_ids if k not in self.calls)
        if missing:
            seen = ", ".join(sorted(self._called_names)) or "none"
            raise ValueError(f"jitguard.no_recompiles(kernels=...): no kernel named {', '.join(map(repr, missing))} "
                             f"was called inside the block (kernels called: {seen}); misspelled?")

    # --- the message ---------------------------------------------------------------------------

    def failure_message(self) -> str:
        """The text of the `RecompileError`: every new variant, its causes, call site and the fix."""
        return format_new_variants(self.compiles, self.warmup, self._warmup_subject())

    def _warmup_subject(self) -> str:
        if not self._kernel_names and not self._kernel_ids:
            return "each kernel"
        names = sorted(self._kernel_names | {k.name for k in self._kernel_ids})
        return ", ".join(names)


def _caller_file() -> str:
    """The file of the code that entered the block (skipping contextlib and this module)."""
    frame = sys._getframe(2)
    here = os.path.abspath(__file__)
    while frame is not None:
        name = frame.f_code.co_filename
        if os.path.abspath(name) != here and not name.endswith(os.sep + "contextlib.py"):
            return name
        frame = frame.f_back
    return ""


def _kernel_filter(kernels: Iterable[Any] | str | None) -> tuple[set[str], set[KernelId]]:
    if kernels is None:
        return set(), set()
    if isinstance(kernels, str) or not isinstance(kernels, Iterable):
        kernels = [kernels]
    names: set[str] = set()
    ids: set[KernelId] = set()
    for kernel in kernels:
        if isinstance(kernel, str):
            names.add(kernel)
            continue
        from jitguard.triton_compat import unwrap_jit_function
        jit_fn = unwrap_jit_function(kernel)
        if jit_fn is None:
            raise TypeError(f"jitguard.no_recompiles(kernels=...): {kernel!r} is neither a kernel name nor a "
                            "@triton.jit kernel")
        ids.add(kernel_id_of(jit_fn))
    return names, ids


# --- formatting ----------------------------------------------------------------------------------

def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _warmup_words(warmup: int, subject: str) -> str:
    if warmup == 0:
        return "no warm-up calls"
    calls = "the first call" if warmup == 1 else f"the first {warmup} calls"
    return f"{calls} of {subject}"


def format_new_variants(compiles: list[ScopedCompile], warmup: int, subject: str = "each kernel") -> str:
    """The failure text: a headline in the style 'Expected ... but N were compiled', then per kernel
    each new variant with its call, call site and causes by argument name, then the fix."""
    new = [c for c in compiles if c.after_warmup]
    was = "was" if len(new) == 1 else "were"
    lines = [f"Expected no new Triton variants after warm-up ({_warmup_words(warmup, subject)}), "
             f"but {len(new)} {was} compiled:"]
    by_kernel: dict[KernelId, list[ScopedCompile]] = {}
    for item in compiles:
        by_kernel.setdefault(item.kernel, []).append(item)
    for kernel, items in by_kernel.items():
        late = [c for c in items if c.after_warmup]
        if not late:
            continue
        early = len(items) - len(late)
        lines.append("")
        lines.append(f"{kernel.name} ({short_path(kernel.where())}): {_plural(early, 'variant')} in warm-up, "
                     f"{len(late)} new after it")
        for item in late:
            event = item.event
            tags = " [autotune config]" if event.autotuning else ""
            site = f", called from {short_path(event.call_site)}" if event.call_site else ""
            if item.block_line and item.block_line != event.call_site:
                site += f", reached from {short_path(item.block_line)}"
            lines.append(f"  variant #{event.variant} at call {item.call_number}{tags}{site}")
            for cause in event.causes:
                lines.append(f"    {cause.param}: {cause.before} -> {cause.after}")
            if not event.causes:
                lines.append("    (first variant of this kernel in the block: it was not called during warm-up)")
        lines.extend(_fix_lines([c for item in late for c in item.event.causes]))
    if warmup == 0 and any(c.call_number == 1 for c in new):
        lines.append("")
        lines.append("note: with warmup=0 an isolated block compiles on each kernel's first call; use warmup=1, "
                     "call kernel.warmup(...) inside the block, or isolate=False to rely on warm-up done before it")
    return "\n".join(lines)


def _fix_lines(causes: list[Cause]) -> list[str]:
    causes = without_weaker_advice(causes)
    hint = fix_hint(causes)
    messages: list[str] = []
    for cause in causes:
        if cause.advice and cause.advice != "expected" and cause.message and cause.message not in messages:
            messages.append(cause.message)
    if hint:
        decorator = hint if not hint.startswith("do_not_specialize") else None
        if decorator is None:
            parts = hint.split("; ")
            jit_args = ", ".join(p for p in parts if p.startswith("do_not_specialize"))
            rest = [p for p in parts if not p.startswith("do_not_specialize")]
            decorator = f"@triton.jit({jit_args})" + (f"; {'; '.join(rest)}" if rest else "")
        out = [f"  fix: {decorator}"]
    else:
        expected = sorted({c.param for c in causes if c.advice == "expected"})
        if expected:
            out = [f"  no decorator fix: {', '.join(expected)} changed in an expected way (dtype, launch options, "
                   "constexpr or autotune config); call these variants during warm-up, or raise warmup"]
        else:
            out = ["  fix: call this kernel during warm-up with the arguments it will see later"]
    out.extend(f"    {message}" for message in messages)
    return out
