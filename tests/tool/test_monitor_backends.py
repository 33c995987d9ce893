"""The same recompile story on the offline backend (CPU) and on a real GPU: one body, two backends."""

import contextlib

import pytest
import torch

import jitguard
from jitguard import triton_compat
from tests import kernels_for_tests as k


@pytest.fixture(params=["offline", pytest.param("gpu", marks=pytest.mark.gpu)])
def backend(request):
    for kernel in (k.add_one_kernel, k.add_one_dns_name):
        for cache in triton_compat.all_kernel_caches(kernel):
            cache.clear()
    if request.param == "gpu":
        yield "cuda", contextlib.nullcontext()
    else:
        yield "cpu", jitguard.offline()


def test_token_counts_compile_three_variants_stock_and_one_fixed(backend):
    device, context = backend
    x = torch.zeros(4096, device=device)
    y = torch.zeros(4096, device=device)
    with context, jitguard.watch() as rec:
        for n in (1, 2, 3, 16, 17, 32, 100, 4096):
            k.add_one_kernel[(64,)](x, y, n, BLOCK=64)
            k.add_one_dns_name[(64,)](x, y, n, BLOCK=64)
    assert rec.variants("add_one_kernel") == 3
    assert rec.variants("add_one_dns_name") == 1
    if device == "cuda":
        torch.cuda.synchronize()
        assert torch.all(y == 1)  # the kernels really ran
