"""The compile-only backend: real Triton compiles for sm_90 on a machine with no GPU.

`offline()` makes a fake CUDA driver the active one. A real `@triton.jit` kernel called with CPU
torch tensors then goes through the real `JITFunction.run` (binder, in-memory cache, hooks) and,
with `compile=True`, the real compiler down to a cubin via the `ptxas` shipped in the wheel.
Launches do nothing. With `compile=False` the compiler is skipped: keys, hooks and variant counts
are real, so a sweep over thousands of token counts takes seconds.

    >>> import jitguard
    >>> with jitguard.offline(compile=False), jitguard.watch() as rec:   # doctest: +SKIP
    ...     for n in range(1, 100):
    ...         my_kernel[(1,)](x, n, BLOCK=128)
    ...     rec.variants("my_kernel")
    3

`JITGUARD_OFFLINE=sm90` activates it (compile=True) for a whole process (see `activate_from_env`).

Offline work and real GPU work can share a process (a pytest run that checks maths on the GPU,
then counts variants offline): they never share a cache. The fake driver reports device index
`OFFLINE_DEVICE_BASE + arch` (1000090 for sm_90), so Triton's per-device kernel caches keep what
the GPU compiled apart from what an offline context compiled or stubbed, both ways: an offline call
never finds (or launches) a GPU kernel, a GPU call never finds an offline one, and each arch has its
own caches. Compile events recorded offline carry that device index. While a context is open,
`@triton.autotune` keeps its chosen configs per side, times configs offline with a fake timer
(1 ms each: the first config wins) and writes no offline timings to Triton's disk cache; a GPU
autotune never inherits that timer. `compile=False` skips the compiler even for a kernel that ran
on a GPU before the first offline context. On a machine without CUDA, the `torch.cuda` calls kernel
wrappers make around a launch (`torch.cuda.device(i)`, `current_device`, `current_stream`,
`synchronize`, ...) answer as one device while a context is open (`offline_torch_cuda`). When the last
context closes, Triton's classes and `torch.cuda` are as they were: GPU launches pay nothing.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Iterator
from typing import Any

from jitguard.runtime.offline_torch_cuda import TorchCudaStandIns

# Triton (through triton_compat) is imported on first use, never at import: under `jitguard run`
# the first `import triton` starts the monitor, which imports this module's `activate_from_env`.

H100_MAX_SHARED_MEM = 232448  # bytes per block, sm_90 (H100 and H200)
OFFLINE_DEVICE_BASE = 1_000_000
"""The offline driver's device index is this plus the arch: no real GPU has it, and each arch gets its
own caches (what one device's cache holds was compiled for one target)."""


class _NoOpLauncher:
    """Stands in for the CUDA launcher: accepts every launch and does nothing."""

    def __init__(self, src: Any, metadata: Any) -> None:
        self.metadata = metadata

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        return None


class _OfflineUtils:
    def __init__(self, arch: int) -> None:
        self.arch = arch

    def load_binary(self, name: str, kernel: Any, shared: int, device: int) -> tuple:
        from jitguard import triton_compat
        return triton_compat.load_binary_result(None, None, 0, 0, 1024)

    def unload_module(self, module: Any) -> None:
        return None

    def get_device_properties(self, device: int) -> dict:
        return {"max_shared_mem": H100_MAX_SHARED_MEM, "multiprocessor_count": 132, "sm_clock_rate": 1980000,
                "mem_clock_rate": 3201000, "mem_bus_width": 6144, "warpSize": 32, "max_num_regs": 65536}

    def set_current_device(self, device: int) -> None:
        return None


def _fake_bench(kernel_call: Any, quantiles: Any = None, **kwargs: Any) -> Any:
    """Autotune's benchmark, offline: run the call once (so the config compiles) and report 1 ms."""
    kernel_call()
    if quantiles is not None:
        return [1.0 for _ in quantiles]
    return 1.0


class _KeysOnlySession:
    """The span while at least one `compile=False` context is open; its stubs are valid only inside it."""

    def __init__(self) -> None:
        self.open = True


class _OfflineState:
    """What the offline backend keeps between calls: one instance, the process's."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.driver_class: Any = None  # built once, on first use (it subclasses Triton's DriverBase)
        self.open_contexts = 0  # of any kind
        self.keys_only_contexts = 0  # compile=False ones
        self.keys_only_session: _KeysOnlySession | None = None
        self.stubbed_kernels: list[Any] = []  # JITFunctions whose caches hold keys-only stubs
        self.offline_tuned: weakref.WeakSet[Any] = weakref.WeakSet()  # autotuners holding offline choices
        self.saved_drivers: list[Any] = []  # the driver each open context replaced
        self.env_driver: Any = None  # JITGUARD_OFFLINE's driver, active for the whole process
        self.side_split: Any = None  # the ClassPatch of Triton's classes while the split is installed
        self.torch_cuda = TorchCudaStandIns()  # torch.cuda's device/stream calls, answered while active


_STATE = _OfflineState()


class _OfflineDriverMethods:
    """What the offline driver answers in Triton's driver interface: targets sm_`arch`, launches nothing.
    `_make_driver_class` mixes it into Triton's DriverBase, which is fetched at run time."""

    gpu_target: Any = None  # Triton's GPUTarget class, set on the built class

    def __init__(self, arch: int = 90) -> None:
        self.arch = arch
        self.utils = _OfflineUtils(arch)
        self.launcher_cls = _NoOpLauncher
        self.backend = "cuda"

    @classmethod
    def is_active(cls) -> bool:
        return True

    def get_current_target(self) -> Any:
        return self.gpu_target("cuda", self.arch, 32)

    def get_current_device(self) -> int:
        return OFFLINE_DEVICE_BASE + self.arch

    def set_current_device(self, device: int) -> None:
        return None  # one fake device: moving to a real GPU's index would share its caches

    def get_current_stream(self, device: int | None = None) -> int:
        return 0

    def get_device_capability(self, device: int = 0) -> tuple[int, int]:
        return divmod(self.arch, 10)

    def map_python_to_cpp_type(self, ty: str) -> str:
        return "void*" if ty.startswith("*") else ty

    def get_active_torch_device(self) -> Any:
        import torch
        return torch.device("cpu")

    def get_device_interface(self) -> Any:
        import torch
        return torch.cpu

    def get_benchmarker(self) -> Any:
        return _fake_bench

    def get_empty_cache_for_benchmark(self) -> Any:
        import torch
        return torch.empty(1, dtype=torch.int32)

    def clear_cache(self, cache: Any) -> None:
        return None

    def assemble_tensormap_to_arg(self, tensormaps_info: Any, args: Any) -> Any:
        return args


def _make_driver_class() -> type:
    if _STATE.driver_class is not None:
        return _STATE.driver_class
    from jitguard import triton_compat  # may start the monitor (and build the class) first
    if _STATE.driver_class is not None:
        return _STATE.driver_class
    DriverBase, GPUTarget = triton_compat.offline_driver_base()

    class OfflineCudaDriver(_OfflineDriverMethods, DriverBase):  # type: ignore[misc,valid-type]  # Triton's class
        """A CUDA driver with no GPU behind it: targets sm_`arch`, launches nothing."""

        gpu_target = staticmethod(GPUTarget)  # a class or a factory: never bound as a method

    _STATE.driver_class = OfflineCudaDriver
    return OfflineCudaDriver


class KeysOnlyStubError(RuntimeError):
    """A keys-only stub ran after its `offline(compile=False)` context closed: nothing was compiled."""


class _KeysOnlyKernel:
    """What `compile=False` puts in Triton's cache instead of a compiled kernel.

    Launching it inside its context does nothing. Outside (a cache of someone else's kept it, keyed
    by argument values as FlagGems' LibEntry does) it raises: it must never pretend to have run.
    """

    def __init__(self, src: Any, options: dict, session: _KeysOnlySession) -> None:
        self._session = session
        self.src = src
        self.name = getattr(getattr(src, "fn", None), "__name__", "?")
        self.function = None
        self.packed_metadata = ()
        self.n_regs = 0
        self.n_spills = 0
        self.asm: dict = {}
        self.metadata = type("KeysOnlyMetadata", (), dict(options or {}, shared=0, name=self.name))()

    def _check_open(self) -> None:
        if not self._session.open:
            raise KeysOnlyStubError(
                f"jitguard: kernel {self.name!r} was launched through a keys-only stub made by "
                "jitguard.offline(compile=False) after that context closed; it was never compiled, so nothing "
                "would run. A kernel cache outside Triton's (keyed by argument values, like FlagGems' LibEntry) "
                "still holds it: clear that cache when the context ends, or use jitguard.offline(compile=True)")

    def launch_metadata(self, grid: Any, stream: Any, *args: Any) -> None:
        self._check_open()
        return None

    def run(self, *args: Any, **kwargs: Any) -> None:
        self._check_open()
        return None

    def __getitem__(self, grid: Any) -> Any:
        self._check_open()
        return self._launch

    def _launch(self, *args: Any, **kwargs: Any) -> None:
        self._check_open()
        return None


def _offline_active() -> bool:
    """Whether the active driver is an offline one: which side (GPU or offline) a call is on."""
    if _STATE.driver_class is None:
        return False
    from jitguard import triton_compat
    return isinstance(triton_compat.get_active_driver_raw(), _STATE.driver_class)


def _compile_keys_only(src: Any, target: Any = None, options: Any = None, **kwargs: Any) -> Any:
    from jitguard import triton_compat
    jit_fn = triton_compat.unwrap_jit_function(getattr(src, "fn", None))
    if jit_fn is not None and jit_fn not in _STATE.stubbed_kernels:
        _STATE.stubbed_kernels.append(jit_fn)
    assert _STATE.keys_only_session is not None  # only chosen while a keys-only context is open
    return _KeysOnlyKernel(src, options or {}, _STATE.keys_only_session)


class _OfflineSide:
    """What the side split asks of the offline backend (see `jitguard.runtime.offline_sides`)."""

    @staticmethod
    def active() -> bool:
        return _offline_active()

    @staticmethod
    def keys_only() -> bool:
        return _STATE.keys_only_contexts > 0

    compile_keys_only = staticmethod(_compile_keys_only)
    bench = staticmethod(_fake_bench)

    @staticmethod
    def tuned_offline(tuner: Any) -> None:
        _STATE.offline_tuned.add(tuner)


def _install_side_split() -> None:
    """While offline contexts are open, give each side its own compiler choice and autotune state.

    Kernel caches need nothing here: the offline device index keeps them apart. Removing the split
    (when the last context closes) leaves Triton's classes and every kernel as Triton would have
    them, with no cost on GPU launches.
    """
    from jitguard.runtime.offline_sides import split_sides
    if _STATE.side_split is None:
        _STATE.side_split = split_sides(_OfflineSide)


def _remove_side_split() -> None:
    if _STATE.side_split is not None:
        _STATE.side_split.restore()
        _STATE.side_split = None


def _drop_stub_entries() -> None:
    from jitguard import triton_compat
    from jitguard.runtime.offline_sides import forget_offline_autotune_choices
    for jit_fn in _STATE.stubbed_kernels:
        for cache in triton_compat.all_kernel_caches(jit_fn):
            for key in [k for k, v in cache.items() if isinstance(v, _KeysOnlyKernel)]:
                del cache[key]
    _STATE.stubbed_kernels.clear()
    # Offline autotune choices go with the stubs: a later context benchmarks (and compiles) every
    # config again, as the first one did, instead of compiling the one remembered choice.
    for tuner in list(_STATE.offline_tuned):
        forget_offline_autotune_choices(tuner)
    _STATE.offline_tuned.clear()


@contextlib.contextmanager
def offline(arch: int = 90, compile: bool = True) -> Iterator[Any]:
    """Activate the compile-only backend for sm_`arch` (see module docstring); restores the previous driver.

    `compile=False` computes keys only: entries it puts in Triton's cache are dropped on exit, so a
    later `compile=True` context compiles for real. Kernels already compiled on a real GPU in this
    process are neither found nor launched here, and nothing made here reaches the GPU's caches.
    """
    if arch < 70:
        raise ValueError(f"offline(arch={arch}): jitguard's offline backend targets CUDA sm_70 or newer")
    driver_class = _make_driver_class()
    from jitguard import triton_compat
    with _STATE.lock:
        _STATE.saved_drivers.append(triton_compat.get_active_driver_raw())
        triton_compat.set_active_driver_raw(driver_class(arch))
        _install_side_split()
        _STATE.torch_cuda.install(arch)
        _STATE.open_contexts += 1
        if not compile:
            _STATE.keys_only_contexts += 1
            if _STATE.keys_only_contexts == 1:
                _STATE.keys_only_session = _KeysOnlySession()
    try:
        yield triton_compat.get_active_driver_raw()
    finally:
        with _STATE.lock:
            if not compile:
                _STATE.keys_only_contexts -= 1
                if _STATE.keys_only_contexts == 0 and _STATE.keys_only_session is not None:
                    _STATE.keys_only_session.open = False
                    _STATE.keys_only_session = None
                    _drop_stub_entries()
            triton_compat.set_active_driver_raw(_STATE.saved_drivers.pop())
            _STATE.open_contexts -= 1
            if _STATE.open_contexts == 0 and _STATE.env_driver is None:
                _remove_side_split()
                _STATE.torch_cuda.remove()


@contextlib.contextmanager
def driver_for_imports(arch: int = 90) -> Iterator[None]:
    """Module code that needs Triton's driver while it is imported (3.2's `@triton.autotune` creates it
    in the decorator) imports on a machine without a GPU: with no driver to be had, the import runs
    under a `compile=False` context for sm_`arch`; with a GPU or an offline driver active, as it is."""
    from jitguard import triton_compat
    if _offline_active() or triton_compat.backend_driver_available():
        yield
        return
    with offline(arch=arch, compile=False):
        yield


def activate_from_env(value: str | None) -> bool:
    """Activate the backend for the whole process from `JITGUARD_OFFLINE` ("sm90", "90", "1"); True if done."""
    if not value or value.lower() in ("0", "false", "no", "off"):
        return False
    digits = "".join(ch for ch in value if ch.isdigit())
    arch = int(digits) if digits and value.lower() not in ("1", "true", "yes", "on") else 90
    if _STATE.env_driver is None:
        driver_class = _make_driver_class()
        from jitguard import triton_compat
        with _STATE.lock:
            _STATE.env_driver = driver_class(arch)
            triton_compat.set_active_driver_raw(_STATE.env_driver)
            _install_side_split()
            _STATE.torch_cuda.install(arch)
    return True
