"""The kernels under test, in a module of their own: pricing a demotion imports them by this module's name."""

import torch
import triton
import triton.language as tl


@triton.jit
def scale_rows_kernel(x_ptr, out_ptr, num_tokens, hidden, scale, BLOCK: tl.constexpr):
    """One program per row: ``num_tokens`` only bounds which rows run."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = (cols < hidden) & (row < num_tokens)
    x = tl.load(x_ptr + row * hidden + cols, mask=mask)
    tl.store(out_ptr + row * hidden + cols, x * scale, mask=mask)


@triton.jit
def add_one_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """``n`` bounds a mask over contiguous offsets: divisible by 16, it lets loads and stores be 128-bit."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1, mask=mask)


def scale_rows(x: torch.Tensor, scale: float) -> torch.Tensor:
    """``x * scale``, one program per token (row)."""
    out = torch.empty_like(x)
    block = triton.next_power_of_2(x.shape[1])
    scale_rows_kernel[(x.shape[0],)](x, out, x.shape[0], x.shape[1], scale, BLOCK=block)
    return out


def add_one(x: torch.Tensor) -> torch.Tensor:
    """``x + 1`` over every element."""
    out = torch.empty_like(x)
    add_one_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
    return out
