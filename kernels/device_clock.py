"""Device-side timestamps for probes: where a kernel's programs spend a launch's time.

``global_time_ns()`` reads PTX ``%globaltimer`` (nanoseconds, one clock for every SM, so stamps
of different programs and launches compare). ``stamp(stamps_ptr, pid, slot, STAMPS)`` stores it
at ``stamps_ptr[pid * N_STAMPS + slot]`` when the constexpr ``STAMPS`` is on; off, it compiles to
nothing, so a kernel that takes stamps is the same code when not asked for them. Not for the
interpreter (inline PTX).
"""

from __future__ import annotations

import triton
import triton.language as tl

__all__ = ["N_STAMPS", "global_time_ns", "stamp"]

# Slots per program: start, set-up done (routing, pointers), wait for the prior launch done, K loop
# done, end (epilogue and reduce done). moe_decode's GEMM stamps these five.
N_STAMPS = 5
_SLOTS = tl.constexpr(N_STAMPS)


@triton.jit
def global_time_ns():
    """The GPU's global nanosecond timer (PTX %globaltimer), as int64."""
    return tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)


@triton.jit
def stamp(stamps_ptr, pid, slot: tl.constexpr, STAMPS: tl.constexpr):
    """With STAMPS: this program's time at ``slot`` (0 .. N_STAMPS - 1)."""
    if STAMPS:
        tl.store(stamps_ptr + pid * _SLOTS + slot, global_time_ns())
