import triton  # noqa: I001 - the import forms `fix --bucket` recognises, as a kernel file has them
import triton.language as tl
from triton import autotune
import triton as tr


@triton.autotune(
    configs=[triton.Config({'BLOCK': 64}), triton.Config({'BLOCK': 128})],
    key=['num_tokens', 'hidden'],  # re-tunes per count
    warmup=5,
)
@triton.jit
def rows(x_ptr, num_tokens, hidden, BLOCK: tl.constexpr):
    pass


@autotune(configs=[], key=["n"])
@triton.jit
def plain(x_ptr, n, BLOCK: tl.constexpr):
    pass


@tr.autotune(configs=[], key=["m"])
@tr.jit
def aliased(x_ptr, m, BLOCK: tl.constexpr):
    pass
