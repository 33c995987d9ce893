"""L2 prefetch of weight rows: a program's weight stream started before its inputs exist.

A decode GEMM's programs know their expert (they route themselves) microseconds before the
launch they depend on has written their activations; the weights they will read do not depend on
it. ``prefetch_rows_l2(row_ptrs, row_elems, ELEM_BYTES, MODE)`` asks the L2 for every row of a
weight tile (``row_ptrs`` [R]: each row's first element; ``row_elems`` elements a row) and does not
wait: no registers are filled, the program goes on at once, and its K loop later finds the lines
in the L2 (or already on their way).

- MODE 0: nothing (the kernel is the same code without it);
- MODE 1: one ``prefetch.global.L2`` per 128-byte line (sm_80 and later);
- MODE 2: one ``cp.async.bulk.prefetch.L2.global`` per row (sm_90's bulk copy engine; each row's
  start 16-byte aligned and its length a multiple of 16 bytes: :func:`bulk_rows_ok`).

Worth it only where the rows prefetched fit the L2 beside what streams through it meanwhile
(the caller decides). Not for the interpreter (inline PTX).
"""

from __future__ import annotations

import triton
import triton.language as tl

__all__ = ["L2_LINE_BYTES", "PREFETCH_BULK_ROWS", "PREFETCH_LINES", "PREFETCH_OFF", "bulk_rows_ok",
           "prefetch_rows_l2"]

PREFETCH_OFF = 0
PREFETCH_LINES = 1
PREFETCH_BULK_ROWS = 2
L2_LINE_BYTES = 128
_LINE = tl.constexpr(L2_LINE_BYTES)


def bulk_rows_ok(base_ptr: int, row_stride_bytes: int, expert_stride_bytes: int, row_bytes: int) -> bool:
    """Whether every row of a weight tensor can take a bulk prefetch (MODE 2): each row's start
    16-byte aligned (base, row and expert strides) and its length a multiple of 16 bytes."""
    return all(v % 16 == 0 for v in (base_ptr, row_stride_bytes, expert_stride_bytes, row_bytes)) and row_bytes > 0


@triton.jit
def _prefetch_line(ptrs):
    tl.inline_asm_elementwise("prefetch.global.L2 [$1]; mov.u32 $0, 0;", "=r,l", [ptrs], dtype=tl.int32,
                              is_pure=False, pack=1)


@triton.jit
def _prefetch_bulk(ptrs, nbytes):
    tl.inline_asm_elementwise("cp.async.bulk.prefetch.L2.global [$1], $2; mov.u32 $0, 0;", "=r,l,r",
                              [ptrs, nbytes], dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def prefetch_rows_l2(row_ptrs, row_elems, ELEM_BYTES: tl.constexpr, MODE: tl.constexpr):
    """Ask the L2 for ``row_elems`` elements from each of ``row_ptrs`` (MODE as in the module
    docstring); returns at once."""
    if MODE == 1:
        LINE_ELEMS: tl.constexpr = _LINE // ELEM_BYTES
        for off in range(0, row_elems, LINE_ELEMS):
            _prefetch_line(row_ptrs + off)
    elif MODE == 2:
        _prefetch_bulk(row_ptrs, tl.full(row_ptrs.shape, 0, tl.int32) + row_elems * ELEM_BYTES)
