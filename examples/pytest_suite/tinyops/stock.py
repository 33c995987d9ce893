"""Scale the rows of a [num_tokens, hidden] activation: one program per token."""

import torch
import triton
import triton.language as tl


@triton.jit
def scale_rows_kernel(x_ptr, out_ptr, num_tokens, hidden, scale, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = (cols < hidden) & (row < num_tokens)
    x = tl.load(x_ptr + row * hidden + cols, mask=mask)
    tl.store(out_ptr + row * hidden + cols, x * scale, mask=mask)


def scale_rows(x: torch.Tensor, scale: float) -> torch.Tensor:
    """x * scale, computed by `scale_rows_kernel`; `x` is [num_tokens, hidden], contiguous."""
    num_tokens, hidden = x.shape
    out = torch.empty_like(x)
    scale_rows_kernel[(num_tokens,)](x, out, num_tokens, hidden, scale, BLOCK=triton.next_power_of_2(hidden))
    return out
