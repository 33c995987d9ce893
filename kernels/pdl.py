"""Programmatic dependent launch (PDL) on sm_90: a launch that starts while the one before it runs.

``pdl_supported()`` says whether this Triton's launcher takes ``launch_pdl``; inside a kernel,
``launch_dependents()`` lets the next PDL-linked launch start and ``wait_for_prior_launch()`` blocks
until the launch before has completed and its writes are visible. Without ``launch_pdl`` both are
no-ops. Used by the decode MoE layer's launches (``moe_decode``, ``moe_decode_route``).
"""

from __future__ import annotations

import functools
import os

import triton
import triton.language as tl

_INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"

__all__ = ["launch_dependents", "pdl_enter", "pdl_supported", "wait_for_prior_launch"]


@functools.cache
def pdl_supported() -> bool:
    """Whether this Triton's NVIDIA launcher takes ``launch_pdl`` (programmatic dependent launch); asked once."""
    if _INTERPRETED:
        return False
    try:
        from triton.backends.nvidia.compiler import CUDAOptions
    except ImportError:
        return False
    return "launch_pdl" in getattr(CUDAOptions, "__dataclass_fields__", {})


@triton.jit
def wait_for_prior_launch():
    """PTX griddepcontrol.wait: blocks until the previous launch has completed and its writes are visible."""
    tl.inline_asm_elementwise("griddepcontrol.wait; // $0", "=r", [], dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def launch_dependents():
    """PTX griddepcontrol.launch_dependents: a PDL-linked next launch may start now."""
    tl.inline_asm_elementwise("griddepcontrol.launch_dependents; // $0", "=r", [], dtype=tl.int32, is_pure=False,
                              pack=1)


@triton.jit
def pdl_enter(LAUNCH_DEPENDENTS: tl.constexpr, WAIT_PRIOR: tl.constexpr):
    """A PDL-linked launch's start: WAIT_PRIOR 3 waits for the launch before and only then lets the
    next launch start (LAUNCH_DEPENDENTS; the next may then read what the launch before wrote);
    WAIT_PRIOR 1 lets it start first and then waits. Other WAIT_PRIOR values wait later, in the kernel.
    Also called from Gluon kernels (``moe_decode_gluon``): scalar code only."""
    if WAIT_PRIOR == 3:
        wait_for_prior_launch()
    if LAUNCH_DEPENDENTS:
        launch_dependents()
    if WAIT_PRIOR == 1:
        wait_for_prior_launch()
