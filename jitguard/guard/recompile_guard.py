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

Before the fix, each advised demotion shows its price (`jitguard.price.demotion_cost`, computed at failure
time in a child process: `price: n: costly: 2 of 2 128-bit loads become 32-bit; instead: ...`). An
autotune tuning after warm-up (the kernel benchmarking every config again for a new key value)
fails the block too, naming the varying key parameter and the remedy.

"Warm-up" means a kernel's first `warmup` calls inside the block: they may compile anything. Calls
count only inside the block; `kernel.warmup(...)` calls never count and may always compile; the
compiles `@triton.autotune` makes while benchmarking belong to the call that triggered them.

By default the block is isolated (`isolate=True`): each kernel starts the block with an empty
in-memory cache (restored on exit), so the verdict depends only on the calls made in the block,
not on what ran before it (test order, pytest-xdist). Pass `isolate=False` to assert that code
warmed up before the block compiles nothing more (then `warmup=0` is the usual choice).
"""

from __future__ import annotations

import os
import sys
import threading
import time
import types
from collections.abc import Iterable
from contextlib import ContextDecorator
from dataclasses import dataclass
from typing import Any

from jitguard.events import DECORATOR_ORIGINS, CompileEvent, variant_dict
from jitguard.explain import fix_parts
from jitguard.render_text import format_new_variants
from jitguard.runtime.call_capture import CallScope, KernelCall, KernelId, kernel_id_of

# The failure prices each advised demotion in a child process (this one keeps its driver); all of a
# failure's checks together stop after this many seconds, the rest say "price unknown".
PRICE_BUDGET_S = 60.0


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


@dataclass
class ScopedTuning:
    """An autotune tuning seen inside a `no_recompiles` block (a `TuningRecord` and its call number)."""

    record: Any
    call_number: int
    after_warmup: bool

    @property
    def kernel(self) -> KernelId:
        return KernelId(self.record.kernel, self.record.file, self.record.line, self.record.binding)


class no_recompiles(CallScope, ContextDecorator):  # the public name is a function-like verb
    """Context manager (and decorator): raise `RecompileError` if a kernel compiles a new variant after warm-up.

    `warmup`: how many calls of each kernel may compile (int >= 0). `kernels`: only judge these
    kernels (names, or the kernel objects themselves); None judges every kernel. `isolate`: see the
    module docstring. Inside the block, `.compiles` lists every compile seen and `.new_variants`
    the ones after warm-up; `.tunings` every autotune tuning and `.new_tunings` the ones after
    warm-up (an autotuner benchmarking all its configs again for a new key value fails the block
    too: on a server that is a stall on the request path).
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
        self.tunings: list[ScopedTuning] = []
        self._called_names: set[str] = set()  # every kernel called, judged or not
        self._lock = threading.Lock()  # kernels may be called from several threads

    @property
    def new_variants(self) -> list[ScopedCompile]:
        """Compiles after warm-up so far: what the block will fail on."""
        return [c for c in self.compiles if c.after_warmup]

    @property
    def new_tunings(self) -> list[ScopedTuning]:
        """Autotune tunings after warm-up so far: the block fails on them too."""
        return [t for t in self.tunings if t.after_warmup]

    # --- scope hooks ---------------------------------------------------------------------------

    def _judges(self, kernel: KernelId) -> bool:
        if not self._kernel_names and not self._kernel_ids:
            return True
        named = kernel.name in self._kernel_names or (kernel.binding and kernel.binding in self._kernel_names)
        return bool(named) or kernel in self._kernel_ids

    def call_started(self, call: KernelCall) -> None:
        with self._lock:
            self._called_names.add(call.kernel.name)
            if call.kernel.binding:
                self._called_names.add(call.kernel.binding)
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

    def tuning_seen(self, record: Any, call: KernelCall | None) -> None:
        kernel = KernelId(record.kernel, record.file, record.line, record.binding)
        if not self._judges(kernel):
            return
        with self._lock:
            number = call.numbers.get(id(self), 0) if call is not None and call.kernel == kernel else 0
            if number == 0 and not (call is not None and call.manual_warmup):
                number = self.calls.get(kernel, 0)
            after_warmup = not (call is not None and call.manual_warmup) and number > self.warmup
            self.tunings.append(ScopedTuning(record, number, after_warmup))

    def _judge_compile(self, kernel: KernelId, event: CompileEvent, call: KernelCall | None) -> None:
        if not self.first_compile_of_key(kernel, event.key):
            return  # a variant this block already has, compiled again by a nested isolated block
        number = call.numbers.get(id(self), 0) if call is not None and call.kernel == kernel else 0
        if number == 0 and not (call is not None and call.manual_warmup):
            number = self.calls.get(kernel, 0)  # compiled outside a tracked call: charge the latest one
        if number == 0 and event.origin not in DECORATOR_ORIGINS:
            # No launch to count (Inductor's kernels, a triton.compile call): its n-th variant is its n-th use.
            number = self.keys_seen(kernel)
        manual = event.is_manual_warmup or (call is not None and call.manual_warmup)
        after_warmup = not manual and number > self.warmup
        self.compiles.append(ScopedCompile(event, number, after_warmup, self._line_in_block_file()))

    def _line_in_block_file(self) -> str:
        """Where the block's own code (the test) was when this compile happened: the kernel's call
        site is often a library wrapper shared by every step, this says which step it was."""
        if not self.block_file:
            return ""
        frame: types.FrameType | None = sys._getframe(1)
        while frame is not None:
            if frame.f_code.co_filename == self.block_file:
                return f"{frame.f_code.co_filename}:{frame.f_lineno}"
            frame = frame.f_back
        return ""

    # --- context manager -----------------------------------------------------------------------

    def __enter__(self) -> no_recompiles:
        if self.block_file is None:
            self.block_file = _caller_file()
        self._reset()
        self.open()
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        __tracebackhide__ = True  # pytest shows the user's `with` line, not this frame
        self.close()
        if exc is not None:
            if (self.new_variants or self.new_tunings) and hasattr(exc, "add_note"):
                exc.add_note(self.failure_message())
            return
        if self.internal_errors:
            first = self.internal_errors[0]
            raise RuntimeError(f"jitguard.no_recompiles could not judge this block: "
                               f"{type(first).__name__}: {first}") from first
        if self.new_variants or self.new_tunings:
            from jitguard.runtime.monitor import RecompileError
            prices = self.advised_prices()
            error = RecompileError(self.failure_message(prices=prices), [c.event for c in self.new_variants],
                                   [t.record for t in self.new_tunings])
            error.prices = {kernel.label: by_param for kernel, by_param in prices.items()}
            raise error
        self._check_named_kernels_were_called()

    def _check_named_kernels_were_called(self) -> None:
        __tracebackhide__ = True
        missing = sorted(n for n in self._kernel_names if n not in self._called_names)
        missing += sorted(k.label for k in self._kernel_ids if k not in self.calls)
        if missing:
            seen = ", ".join(sorted(self._called_names)) or "none"
            raise ValueError(f"jitguard.no_recompiles(kernels=...): no kernel named {', '.join(map(repr, missing))} "
                             f"was called inside the block (kernels called: {seen}); misspelled?")

    # --- the message ---------------------------------------------------------------------------

    def failure_message(self, prices: dict[KernelId, dict[str, dict[str, Any]]] | None = None) -> str:
        """The text of the `RecompileError`: every new variant and tuning, its causes, call site, the
        price of each advised demotion (`prices`, default: `advised_prices()`, computed in child
        processes), and the fix."""
        return format_new_variants(self.compiles, self.warmup, self._warmup_subject(), tunings=self.tunings,
                                   prices=self.advised_prices() if prices is None else prices)

    def advised_prices(self, budget_s: float = PRICE_BUDGET_S) -> dict[KernelId, dict[str, dict[str, Any]]]:
        """{kernel: {param: {"verdict", "detail"[, "alternative"]}}} for every demotion the failure advises.

        Each is `jitguard.price.demotion_cost.cost_in_subprocess` over the variants this block recorded:
        a test process must not swap its own driver. A kernel that cannot be imported by name (a
        script's `__main__`, one made inside a function) or a check past `budget_s` seconds in all
        gets verdict "unknown" with the reason.
        """
        from jitguard.price.demotion_cost import cost_in_subprocess

        deadline = time.monotonic() + budget_s
        prices: dict[KernelId, dict[str, dict[str, Any]]] = {}
        for kernel, late in _by_kernel(self.new_variants).items():
            parts = fix_parts([cause for item in late for cause in item.event.causes])
            demotions = [(param, option) for option, params in parts.options.items() for param in params]
            if not demotions:
                continue
            event = late[0].event
            signature = [variant_dict(c.event) for c in self.compiles if c.kernel == kernel]
            unreachable = _why_not_importable(event)
            for param, option in demotions:
                left = deadline - time.monotonic()
                if unreachable:
                    price = {"verdict": "unknown", "detail": unreachable}
                elif left <= 1:
                    price = {"verdict": "unknown", "detail": f"the cost checks ran past {budget_s:.0f} s; "
                                                             "`jitguard report` prices it"}
                else:
                    price = cost_in_subprocess(f"{event.module}:{event.called_as}", param, option, signature=signature,
                                               timeout=left).to_json()
                prices.setdefault(kernel, {})[param] = price
        return prices

    def _warmup_subject(self) -> str:
        if not self._kernel_names and not self._kernel_ids:
            return "each kernel"
        names = sorted(self._kernel_names | {k.label for k in self._kernel_ids})
        return ", ".join(names)


def _by_kernel(compiles: list[ScopedCompile]) -> dict[KernelId, list[ScopedCompile]]:
    out: dict[KernelId, list[ScopedCompile]] = {}
    for item in compiles:
        out.setdefault(item.kernel, []).append(item)
    return out


def _why_not_importable(event: CompileEvent) -> str | None:
    """Why a child process could not import this kernel as `module:name`, or None when it can."""
    if not event.module or event.module == "__main__":
        return (f"{event.label} is defined in a script run as __main__, which the cost check never runs; "
                "`jitguard report` on its log prices it")
    module = holder = sys.modules.get(event.module)
    for part in event.called_as.split("."):  # a class attribute's path (`Pack.kernel`) included
        holder = getattr(holder, part, None) if holder is not None else None
    if module is not None and holder is None:
        return (f"{event.called_as} is not a module-level name of {event.module} (made inside a function?), "
                "so a child process cannot import it")
    return None


def _caller_file() -> str:
    """The file of the code that entered the block (skipping contextlib and this module)."""
    frame: types.FrameType | None = sys._getframe(2)
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

