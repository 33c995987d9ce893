"""With `jitguard.offline()` active on a machine without CUDA, the torch.cuda calls kernel wrappers make
around a launch work with CPU tensors, so the launch (and its compile) is reached; they are restored
when the last context closes."""

from __future__ import annotations

import pytest
import torch

import jitguard
from jitguard import triton_compat
from tests import kernels_for_tests as K

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="with CUDA the real calls answer")

CALLS = {
    "device(None)": lambda x: torch.cuda.device(x.device.index).__enter__(),
    "device(0)": lambda x: torch.cuda.device(0).__enter__(),
    "current_device": lambda x: torch.cuda.current_device(),
    "set_device": lambda x: torch.cuda.set_device(0),
    "current_stream": lambda x: torch.cuda.current_stream().cuda_stream,
    "Stream": lambda x: torch.cuda.Stream(),
    "synchronize": lambda x: torch.cuda.synchronize(),
    "get_device_capability": lambda x: torch.cuda.get_device_capability(),
    "multi_processor_count": lambda x: torch.cuda.get_device_properties(0).multi_processor_count,
}


@pytest.mark.parametrize("name", list(CALLS))
def test_a_wrapper_s_cuda_call_answers_only_while_offline(name: str) -> None:
    x = torch.zeros(64)
    with pytest.raises(Exception):  # noqa: B017 - each fails its own way without CUDA
        CALLS[name](x)
    with jitguard.offline(compile=False):
        CALLS[name](x)
    with pytest.raises(Exception):  # noqa: B017 - restored
        CALLS[name](x)


def test_answers_are_those_of_one_sm90_device() -> None:
    with jitguard.offline(arch=90, compile=False):
        assert (torch.cuda.current_device(), torch.cuda.device_count()) == (0, 1)
        assert torch.cuda.get_device_capability() == (9, 0)
        assert torch.cuda.get_device_properties(0).multi_processor_count == 132
    assert torch.cuda.device_count() == 0


def _wrapper(x: torch.Tensor, y: torch.Tensor, n: int) -> None:
    """A launch as GPU libraries wrap it: device guard, stream, grid from the SM count, synchronize."""
    with torch.cuda.device(x.device.index):
        torch.cuda.set_device(torch.cuda.current_device())
        sms = torch.cuda.get_device_properties(x.device).multi_processor_count
        with torch.cuda.stream(torch.cuda.Stream()):
            K.add_one_kernel[(min(sms, 4),)](x, y, n, BLOCK=64)
        torch.cuda.current_stream().synchronize()
        torch.cuda.synchronize()


def test_a_wrapped_launch_compiles_offline_and_nesting_restores_at_the_last_exit() -> None:
    # An offline compile of these very variants by an earlier test in this process stays in the kernel's
    # cache for the offline device (a hit compiles nothing): start from an empty cache.
    triton_compat.forget_compiled_variants(K.add_one_kernel)
    x, y = torch.zeros(64), torch.zeros(64)
    with jitguard.offline(compile=False):
        with jitguard.offline(compile=False), jitguard.watch() as recorder:
            for n in (16, 17):
                _wrapper(x, y, n)
        assert recorder.variants("add_one_kernel") == 2
        torch.cuda.current_device()  # the outer context is still open
    with pytest.raises(Exception):  # noqa: B017
        torch.cuda.current_device()
