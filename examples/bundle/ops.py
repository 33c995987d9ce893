"""The toy server's kernel: it specializes on `n_cols` (1, a multiple of 16, other), three variants."""

import triton
import triton.language as tl


@triton.jit
def scale_rows(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    tl.store(out_ptr + cols, tl.load(x_ptr + cols, mask=mask) * 2.0, mask=mask)
