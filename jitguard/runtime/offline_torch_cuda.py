"""What kernel wrappers ask of `torch.cuda` around a launch, answered while the offline backend is active.

A wrapper written for a GPU enters `torch.cuda.device(x.device.index)`, reads `current_device()` or
`get_device_properties(...).multi_processor_count` to size its grid, takes `current_stream()` and
calls `synchronize()`. On a machine without CUDA each of those raises (with a CPU tensor,
`torch.cuda.device(None)` even fails on `None < 0`), so the launch the offline backend exists to
compile is never reached. While an offline context is open on such a machine, these names answer as
one sm_`arch` device would (index 0, 132 SMs, a do-nothing stream) and launch nothing; they are put
back when the last context closes. Where CUDA is available nothing is replaced: the real calls work.

`torch.cuda.is_available()` is left alone: a program that checks it keeps choosing its CPU path, as
it would on this machine.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

SM_COUNT = 132  # H100 SXM / H200: what a grid sized by the SM count sees


class _Stream:
    """A CUDA stream that orders nothing: every launch offline is a no-op."""

    cuda_stream = 0
    stream_id = 0
    device_index = 0
    device_type = 1  # CUDA, as torch numbers device types

    def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any) -> None:
        self.priority = priority

    def synchronize(self) -> None:
        return None

    def wait_stream(self, stream: Any) -> None:
        return None

    def wait_event(self, event: Any) -> None:
        return None

    def record_event(self, event: Any = None) -> Any:
        return event if event is not None else _Event()

    def query(self) -> bool:
        return True

    def __enter__(self) -> _Stream:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None


class _Event:
    """A CUDA event that has always happened, 0 ms after any other."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> None:
        self.enable_timing = enable_timing

    def record(self, stream: Any = None) -> None:
        return None

    def wait(self, stream: Any = None) -> None:
        return None

    def synchronize(self) -> None:
        return None

    def query(self) -> bool:
        return True

    def elapsed_time(self, end: Any) -> float:
        return 0.0


class _DeviceProperties:
    """What `torch.cuda.get_device_properties` tells a wrapper about the offline device."""

    def __init__(self, arch: int) -> None:
        self.major, self.minor = divmod(arch, 10)
        self.name = f"jitguard offline sm_{arch}"
        self.multi_processor_count = SM_COUNT
        self.total_memory = 80 * 2**30
        self.warp_size = 32
        self.max_threads_per_multi_processor = 2048
        self.regs_per_multiprocessor = 65536
        self.shared_memory_per_block_optin = 232448
        self.L2_cache_size = 50 * 2**20


@contextlib.contextmanager
def _device(device: Any = None) -> Iterator[None]:
    """`torch.cuda.device(index)` / `device_of(tensor)`: one device, nothing to switch."""
    yield


@contextlib.contextmanager
def _stream_context(stream: Any = None) -> Iterator[Any]:
    yield stream


def _replacements(arch: int) -> dict[str, Any]:
    """torch.cuda attribute -> what it is while offline."""
    properties = _DeviceProperties(arch)
    stream = _Stream()
    return {
        "device": _device,
        "device_of": _device,
        "current_device": lambda: 0,
        "set_device": lambda device: None,
        "device_count": lambda: 1,
        "synchronize": lambda device=None: None,
        "current_stream": lambda device=None: stream,
        "default_stream": lambda device=None: stream,
        "stream": _stream_context,
        "Stream": _Stream,
        "Event": _Event,
        "get_device_capability": lambda device=None: (properties.major, properties.minor),
        "get_device_name": lambda device=None: properties.name,
        "get_device_properties": lambda device=None: properties,
    }


class TorchCudaStandIns:
    """Replaces `torch.cuda` names with offline answers (`install`) and puts the originals back
    (`remove`). Installs nothing when torch is missing or CUDA is available."""

    def __init__(self) -> None:
        self._saved: dict[str, Any] = {}
        self._missing: set[str] = set()
        self.installed = False

    def install(self, arch: int) -> None:
        try:
            import torch
        except ImportError:
            return
        if self.installed or torch.cuda.is_available():
            return
        for name, stand_in in _replacements(arch).items():
            if hasattr(torch.cuda, name):
                self._saved[name] = getattr(torch.cuda, name)
            else:
                self._missing.add(name)
            setattr(torch.cuda, name, stand_in)
        self.installed = True

    def remove(self) -> None:
        if not self.installed:
            return
        import torch
        for name, original in self._saved.items():
            setattr(torch.cuda, name, original)
        for name in self._missing:
            delattr(torch.cuda, name)
        self._saved, self._missing = {}, set()
        self.installed = False
