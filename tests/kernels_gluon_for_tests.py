"""A tiny @gluon.jit kernel (Triton 3.5+): its compiles are counted with origin "gluon"."""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def gluon_add_one(x_ptr, y_ptr, n, BLOCK: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [4], [0])
    offsets = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout=layout)
    mask = offsets < n
    gl.store(y_ptr + offsets, gl.load(x_ptr + offsets, mask=mask) + 1, mask=mask)
