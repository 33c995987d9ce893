"""One function jitted twice under other names: two kernels sharing one `__name__` (`_scale_rows`).

The pattern of sglang's `_cat_pad_cl3d`: the same body compiled with and without specialization
of its row count. The tests import this module by name, as a cost check or a warm-up would.
"""

import triton
import triton.language as tl


def _scale_rows(x_ptr, n_rows, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_rows
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2, mask=mask)


scale_rows_specialized = triton.jit(_scale_rows)
scale_rows_any_count = triton.jit(do_not_specialize=["n_rows"])(_scale_rows)


scale_rows_tuned = None


def make_tuned_binding():
    """`scale_rows_tuned`: the same function autotuned under a name of its own, built on first use
    (Triton 3.2's autotune asks the active driver for its benchmarker when it wraps the kernel)."""
    global scale_rows_tuned
    if scale_rows_tuned is None:
        scale_rows_tuned = triton.autotune(
            configs=[triton.Config({"BLOCK": 64}, num_warps=2), triton.Config({"BLOCK": 128}, num_warps=4)],
            key=["n_rows"])(triton.jit(_scale_rows))
    return scale_rows_tuned
