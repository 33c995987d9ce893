"""A costly price says how much it is likely to cost, from what the lost width touches: a mask bound
(every access it guards: large) against a row stride that only offsets one row's base address once
per program (small). Real sm_90 compiles of two small kernels, both ways."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

from jitguard.price.demotion_cost import demotion_cost, signature_from_call


@triton.jit
def row_scale(x_ptr, y_ptr, n_cols, row_stride, BLOCK: tl.constexpr):
    """One row per program: `n_cols` bounds the mask, `row_stride` offsets the row's base address."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * row_stride + cols, mask=mask)
    tl.store(y_ptr + row * row_stride + cols, x * 2, mask=mask)


@pytest.mark.parametrize("param, likely", [("n_cols", "large"), ("row_stride", "small")])
def test_a_mask_bound_is_likely_large_and_a_row_stride_small(param: str, likely: str) -> None:
    x = torch.zeros(4 * 1024, dtype=torch.bfloat16)
    signature = signature_from_call(row_scale, x, x, 1024, 1024, BLOCK=1024)
    cost = demotion_cost(row_scale, param, "do_not_specialize", signature)
    assert cost.verdict == "costly", cost
    assert cost.likely == likely and cost.detail.startswith(f"likely {likely} (")
    assert cost.to_json()["likely"] == likely
