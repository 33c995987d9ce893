"""The demotion cost check: real offline sm_90 compiles with and without a demotion, compared.

Each case is a small kernel, the parameter to demote, the recorded class of that parameter, and the
verdict a user must see: costly where the demotion makes the generated code worse (narrower loads
and stores, lost contiguity), free where it compiles to the same code that matters.
"""

import pytest
import torch
import triton
import triton.language as tl

from jitguard.demotion_cost import (ALTERNATIVE_ON_ALIGNMENT, ALTERNATIVE_WARMUP, DemotionCostChecker,
                                    demotion_cost, kernel_by_name, signature_from_call)


@triton.jit
def mask_bound_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)


@triton.jit
def row_loop_kernel(x_ptr, y_ptr, num_rows, N_COLS: tl.constexpr):
    cols = tl.arange(0, N_COLS)
    for row in range(tl.program_id(0), num_rows, tl.num_programs(0)):
        tl.store(y_ptr + row * N_COLS + cols, tl.load(x_ptr + row * N_COLS + cols) * 2)


@triton.jit
def row_stride_kernel(x_ptr, y_ptr, stride_row, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    tile = tl.load(x_ptr + rows[:, None] * stride_row + cols[None, :])
    tl.store(y_ptr + rows[:, None] * BLOCK_N + cols[None, :], tile * 2)


@triton.jit
def element_stride_kernel(x_ptr, y_ptr, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs * stride) + 1)


@triton.jit
def base_offset_kernel(x_ptr, y_ptr, start, BLOCK: tl.constexpr):
    offs = start + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) + 1)


@triton.jit
def scalar_compare_kernel(x_ptr, y_ptr, limit, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if limit > 0:
        x = x * 2
    tl.store(y_ptr + offs, x)


@triton.jit
def tile_mask_kernel(x_ptr, y_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    tile = tl.load(x_ptr + rows[:, None] * BLOCK_N + cols[None, :], mask=mask)
    tl.store(y_ptr + rows[:, None] * BLOCK_N + cols[None, :], tile + 1, mask=mask)


X = torch.zeros(64)
Y = torch.zeros(64)

CASES = [
    # id, kernel, call args, param, demotion, verdict, words the detail must hold
    ("mask-bound-contiguous", mask_bound_kernel, (X, Y, 4096), {"BLOCK": 1024}, "n_elements",
     "do_not_specialize", "costly", "128-bit loads become 32-bit"),
    ("row-loop-bound", row_loop_kernel, (X, Y, 4096), {"N_COLS": 256}, "num_rows",
     "do_not_specialize", "free", ""),
    ("row-stride-in-addressing", row_stride_kernel, (X, Y, 4096), {"BLOCK_M": 16, "BLOCK_N": 64}, "stride_row",
     "do_not_specialize", "costly", "128-bit loads become 32-bit"),
    ("unit-stride-in-addressing", element_stride_kernel, (X, Y, 1), {"BLOCK": 1024}, "stride",
     "do_not_specialize", "costly", "128-bit loads become 32-bit"),
    ("pointer-like-int-offset", base_offset_kernel, (X, Y, 4096), {"BLOCK": 1024}, "start",
     "do_not_specialize", "costly", "128-bit loads become 32-bit"),
    ("pointer-alignment", mask_bound_kernel, (X, Y, 4096), {"BLOCK": 1024}, "x_ptr",
     "do_not_specialize_on_alignment", "costly", "128-bit loads become 32-bit"),
    ("scalar-compare-only", scalar_compare_kernel, (X, Y, 4096), {"BLOCK": 1024}, "limit",
     "do_not_specialize", "free", ""),
    ("2d-mask-on-strided-axis", tile_mask_kernel, (X, Y, 4096, 4096), {"BLOCK_M": 32, "BLOCK_N": 64}, "M",
     "do_not_specialize", "free", ""),
    ("2d-mask-on-contiguous-axis", tile_mask_kernel, (X, Y, 4096, 4096), {"BLOCK_M": 32, "BLOCK_N": 64}, "N",
     "do_not_specialize", "costly", "128-bit loads become 32-bit"),
]


@pytest.fixture(scope="module")
def checker():
    return DemotionCostChecker(arch=90)


@pytest.mark.parametrize("kernel, args, constexprs, param, demotion, verdict, words",
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_verdict_per_case(checker, kernel, args, constexprs, param, demotion, verdict, words):
    signature = signature_from_call(kernel, *args, **constexprs)
    cost = checker.cost(kernel, param, demotion, signature)
    print(cost)
    assert cost.verdict == verdict, cost.detail
    assert words in cost.detail
    assert "\n" not in cost.detail
