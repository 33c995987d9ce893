"""A kernel taking its output dtype as a constexpr, the pattern of FP8 quantization kernels:
`OUT_DTYPE` is called with a Triton dtype object (tl.float8e4nv), which JSON cannot hold as itself."""

import triton
import triton.language as tl


@triton.jit
def quantize_rows_kernel(x_ptr, y_ptr, n_cols, scale, BLOCK: tl.constexpr, OUT_DTYPE: tl.constexpr):
    """One row per program: y = (x * scale) cast to OUT_DTYPE; `n_cols` bounds the mask."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask)
    tl.store(y_ptr + row * n_cols + cols, (x * scale).to(OUT_DTYPE), mask=mask)
