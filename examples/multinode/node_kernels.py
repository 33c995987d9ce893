"""The kernels the cluster job's actors and task run: one per actor, one for the task.

Their arguments are plain Python values and a stand-in for a tensor (Triton keys a pointer only on
its dtype and `data_ptr() % 16`), so the workers skip importing torch; under `jitguard run --offline`
each call goes through Triton's real binder, cache and compiler, as it would on a GPU node.
"""

from __future__ import annotations

import triton
import triton.language as tl


class DevicePointer:
    """What Triton reads of a tensor argument: a dtype and an address (16-byte aligned here)."""

    def __init__(self, address: int = 1 << 20, dtype: str = "float32") -> None:
        self.address = address
        self.dtype = dtype

    def data_ptr(self) -> int:
        return self.address


@triton.jit
def embed_rows(out_ptr, num_tokens, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < num_tokens
    tl.store(out_ptr + offs, tl.load(out_ptr + offs, mask=mask) * 2, mask=mask)


@triton.jit
def sample_rows(logits_ptr, num_tokens, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < num_tokens
    tl.store(logits_ptr + offs, tl.load(logits_ptr + offs, mask=mask) - 1, mask=mask)


@triton.jit
def fill_table(table_ptr, num_rows, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(table_ptr + offs, offs, mask=offs < num_rows)


def triton_variants(kernel) -> int:  # type: ignore[no-untyped-def]
    """How many compiled variants Triton itself holds for `kernel`, over the devices of this process."""
    device_caches = getattr(kernel, "device_caches", None)
    if device_caches is not None:  # Triton 3.3+: {device: (kernel_cache, ...)}
        return sum(len(entry[0]) for entry in device_caches.values())
    return sum(len(cache) for cache in kernel.cache.values())  # Triton 3.2: {device: kernel_cache}
