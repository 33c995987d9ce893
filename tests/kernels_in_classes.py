"""Two kernels named `kernel`, each in a class of its own (vLLM 0.33's `VllmTritonJitKernel` layout:
`PackSeqTritonKernel.kernel`, `UnpackSeqTritonKernel.kernel` in one file), one a staticmethod."""

import triton
import triton.language as tl


class PackRows:
    @staticmethod
    @triton.jit
    def kernel(x_ptr, n_rows, BLOCK: tl.constexpr):
        offsets = tl.arange(0, BLOCK)
        tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n_rows) * 2, mask=offsets < n_rows)


class UnpackRows:
    @triton.jit
    def kernel(x_ptr, n_rows, BLOCK: tl.constexpr):
        offsets = tl.arange(0, BLOCK)
        tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n_rows) + 1, mask=offsets < n_rows)
