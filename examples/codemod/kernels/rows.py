"""Sample kernels for the codemod example: each shows a way a kernel recompiles as batches change."""

import triton
import triton.language as tl
from triton import jit as tjit


@triton.jit
def rms_norm_rows(x_ptr, w_ptr, out_ptr, num_tokens, hidden, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = (cols < hidden) & (row < num_tokens)
    x = tl.load(x_ptr + row * hidden + cols, mask=mask, other=0.0).to(tl.float32)
    rms = tl.sqrt(tl.sum(x * x, axis=0) / hidden + eps)
    w = tl.load(w_ptr + cols, mask=cols < hidden, other=0.0)
    tl.store(out_ptr + row * hidden + cols, x / rms * w, mask=mask)


@triton.autotune(configs=[triton.Config({"BLOCK": 128}), triton.Config({"BLOCK": 256})], key=["hidden"])
@tjit(do_not_specialize=["num_token"])  # misspelled: Triton ignores the name silently
def scale_rows(x_ptr, scale_ptr, num_tokens, hidden, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = (cols < hidden) & (row < num_tokens)
    s = tl.load(scale_ptr + row)
    tl.store(x_ptr + row * hidden + cols, tl.load(x_ptr + row * hidden + cols, mask=mask) * s, mask=mask)


class PaddedScales:
    @staticmethod
    @triton.jit(do_not_specialize=["num_tokens"])
    def kernel(scale_ptr, num_tokens, scale_stride_group, CHUNKS: tl.constexpr):
        # scales are [groups, align(T, 4), CHUNKS]: the group stride grows with the token count
        token = tl.program_id(0)
        group = tl.program_id(1)
        offs = tl.arange(0, CHUNKS)
        tl.store(scale_ptr + group * scale_stride_group + token * CHUNKS + offs, tl.zeros((CHUNKS,), tl.float32),
                 mask=token < num_tokens)


@triton.jit
def gather_tokens(src_ptr, dst_ptr, idx_ptr, num_tokens: tl.constexpr, hidden, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    src = tl.load(idx_ptr + row)
    values = tl.load(src_ptr + src * hidden + cols, mask=cols < hidden)
    tl.store(dst_ptr + row * hidden + cols, values, mask=(cols < hidden) & (row < num_tokens))
