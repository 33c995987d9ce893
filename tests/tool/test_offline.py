"""The offline backend: real sm_90 compiles with no GPU, keys-only sweeps, the driver restored, and no
cache shared with a real GPU in the same process."""

import os
import subprocess
import sys
from typing import ClassVar

import pytest
import torch
import triton
import triton.language as tl

import jitguard
from jitguard import triton_compat
from tests import kernels_for_tests as k


def test_compile_true_produces_sm90_cubin_and_ptx():
    with jitguard.offline():
        compiled = k.add_one_kernel[(1,)](torch.zeros(64), torch.zeros(64), 5, BLOCK=64)
    assert "ptx" in compiled.asm and ".target sm_90" in compiled.asm["ptx"]
    assert compiled.asm.get("cubin")  # ptxas ran


def test_ptxas_path_assembles_what_an_offline_compile_wrote():
    """triton_compat.ptxas_path: the ptxas this Triton runs for sm_90 (3.2's `_path_to_binary`, 3.5+'s
    `get_ptxas`) assembles an offline compile's PTX, and says what it did with -v (registers used: the helper
    asserts both, and finds nothing serialized in a kernel with no wgmma)."""
    from tests.kernels.mma_checks import ptxas_serialization_notes

    with jitguard.offline():
        compiled = k.add_one_kernel[(1,)](torch.zeros(64), torch.zeros(64), 5, BLOCK=64)
    assert ptxas_serialization_notes(compiled.asm["ptx"]) == []


def _triton_cache_files() -> set[str]:
    root = os.environ["TRITON_CACHE_DIR"]
    return {os.path.join(d, f) for d, _, files in os.walk(root) for f in files}


def test_compile_false_counts_keys_over_thousands_of_values_without_compiling():
    for kernel in (k.add_one_kernel, k.add_one_dns_name):  # another test in this worker may have compiled them
        triton_compat.forget_compiled_variants(kernel)
    before = _triton_cache_files()
    launched = []
    with jitguard.offline(compile=False), jitguard.watch() as rec:
        for n in range(1, 4097):
            launched.append(k.add_one_kernel[(1,)](torch.zeros(8), torch.zeros(8), n, BLOCK=1024))
            launched.append(k.add_one_dns_name[(1,)](torch.zeros(8), torch.zeros(8), n, BLOCK=1024))
    assert rec.variants("add_one_kernel") == 3
    assert rec.variants("add_one_dns_name") == 1
    # Keys only: no launch got a compiled kernel, and the compiler wrote nothing to Triton's disk cache.
    assert not any("ptx" in (getattr(kernel, "asm", None) or {}) for kernel in launched)
    assert _triton_cache_files() == before


def test_keys_only_entries_do_not_outlive_the_context():
    with jitguard.offline(compile=False):
        k.add_one_kernel[(1,)](torch.zeros(8), torch.zeros(8), 999, BLOCK=2048)
    with jitguard.offline(), jitguard.watch() as rec:
        compiled = k.add_one_kernel[(1,)](torch.zeros(8), torch.zeros(8), 999, BLOCK=2048)
    assert rec.variants("add_one_kernel") == 1  # compiled for real this time
    assert compiled.asm.get("cubin")


class ValueKeyedKernelCache:
    """A kernel cache outside Triton's, keyed by argument values (as FlagGems' LibEntry keeps the
    compiled kernel and launches it itself on later calls)."""

    def __init__(self, kernel):
        self.kernel = kernel
        self.compiled = {}

    def __call__(self, x, y, n, BLOCK):
        key = (n == 1, n % 16 == 0, BLOCK)
        if key not in self.compiled:
            self.compiled[key] = self.kernel[(1,)](x, y, n, BLOCK=BLOCK)
            return
        self.compiled[key][(1,)](x, y, n)


@pytest.mark.parametrize("launch", ["kernel[grid](...)", "kernel.run(...)"])
def test_a_keys_only_stub_kept_by_someone_else_refuses_to_run_after_its_context(launch):
    cache = ValueKeyedKernelCache(k.add_one_kernel)
    x, y = torch.zeros(8), torch.zeros(8)
    with jitguard.offline(compile=False):
        cache(x, y, 3, BLOCK=4096)
        cache(x, y, 5, BLOCK=4096)  # the stub, launched inside its context: fine
    stub = cache.compiled[(False, False, 4096)]
    with pytest.raises(RuntimeError, match=r"keys-only stub made by jitguard.offline\(compile=False\) after that "
                                           "context closed") as raised:
        if launch == "kernel.run(...)":
            stub.run(1, 1, 1, 0, None, (), None, None, None, x, y, 5)
        else:
            cache(x, y, 5, BLOCK=4096)
    assert "'add_one_kernel'" in str(raised.value) and "LibEntry" in str(raised.value)
    with jitguard.offline(compile=False):  # a later keys-only context does not revive the old stub
        with pytest.raises(RuntimeError, match="after that context closed"):
            stub[(1,)](x, y, 5)


def test_previous_driver_and_tritons_classes_are_restored():
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.jit import JITFunction
    before = triton_compat.get_active_driver_raw()
    classes_before = [dict(JITFunction.__dict__), dict(Autotuner.__dict__)]
    with jitguard.offline():
        assert triton_compat.get_active_driver_raw() is not before
        with jitguard.offline(compile=False):
            pass
    assert triton_compat.get_active_driver_raw() is before
    assert [dict(JITFunction.__dict__), dict(Autotuner.__dict__)] == classes_before  # GPU launches pay nothing


def test_import_jitguard_imports_neither_torch_nor_triton():
    code = "import sys, jitguard; print('torch' in sys.modules, 'triton' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_jitguard_offline_env_activates_for_the_process():
    code = ("import os, torch, jitguard.runtime.offline_backend as o; "
            "assert o.activate_from_env(os.environ['JITGUARD_OFFLINE']);"
            "from tests.kernels_for_tests import add_one_kernel as kern;"
            "c = kern[(1,)](torch.zeros(8), torch.zeros(8), 3, BLOCK=32); print(c.asm['ptx'].count('sm_90'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**__import__("os").environ, "JITGUARD_OFFLINE": "sm90"}, check=True)
    assert int(out.stdout.strip()) >= 1


def test_each_arch_compiles_for_its_own_target():
    with jitguard.offline(arch=90):
        sm90 = k.add_one_kernel[(1,)](torch.zeros(64), torch.zeros(64), 5, BLOCK=16)
    with jitguard.offline(arch=80):
        sm80 = k.add_one_kernel[(1,)](torch.zeros(64), torch.zeros(64), 5, BLOCK=16)
    assert ".target sm_90" in sm90.asm["ptx"]
    assert ".target sm_80" in sm80.asm["ptx"]

# ---- a process that also runs kernels on a GPU ----------------------------------------------------
# The GPU is simulated by a second driver: device 0, real sm_90 compiles, a launcher that records
# every launch and a module handle that sticks (as a real one does), so a kernel compiled "on the
# GPU" keeps its launcher however it is later found. Kernels are defined here so no other test
# fills their caches.

@triton.jit
def gpu_then_offline_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n) + 1, mask=offsets < n)


@triton.jit
def offline_then_gpu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n) + 2, mask=offsets < n)


CONFIGS = [triton.Config({"BLOCK": 32}, num_warps=1), triton.Config({"BLOCK": 64}, num_warps=2)]


def _gpu_benchmark(kernel_call, quantiles=None, **kwargs):
    """The simulated GPU's benchmarker: runs the config and times it by its num_warps (2 warps wins)."""
    kernel_call()
    launched = FakeGpu.launches[-1]
    ms = 1.0 if launched.num_warps == 2 else 5.0
    return [ms for _ in quantiles] if quantiles is not None else ms


class _RecordingLauncher:
    def __init__(self, src, metadata):
        self.metadata = metadata

    def __call__(self, *args, **kwargs):
        FakeGpu.launches.append(self.metadata)


class _GpuUtils:
    def load_binary(self, name, kernel, shared, device):
        return triton_compat.load_binary_result(object(), object(), 32, 0, 1024)

    def get_device_properties(self, device):
        return {"max_shared_mem": 232448, "multiprocessor_count": 132, "warpSize": 32, "max_num_regs": 65536}


class FakeGpu:
    """A driver standing for a real GPU (device 0); `launches` lists the metadata of each launch."""

    launches: ClassVar[list] = []

    def __init__(self):
        from triton.backends.compiler import GPUTarget
        self.target = GPUTarget("cuda", 90, 32)
        self.utils = _GpuUtils()
        self.launcher_cls = _RecordingLauncher
        self.backend = "cuda"

    def get_current_target(self):
        return self.target

    def get_current_device(self):
        return 0

    def set_current_device(self, device):
        pass

    def get_current_stream(self, device=None):
        return 0

    def get_device_capability(self, device=0):
        return (9, 0)

    def get_active_torch_device(self):
        return torch.device("cpu")

    def get_device_interface(self):
        return torch.cpu

    def get_benchmarker(self):
        return _gpu_benchmark

    def get_empty_cache_for_benchmark(self):
        return torch.empty(1, dtype=torch.int32)

    def clear_cache(self, cache):
        pass

    def map_python_to_cpp_type(self, ty):
        return "void*" if ty.startswith("*") else ty

    def __enter__(self):
        self.saved = triton_compat.get_active_driver_raw()
        triton_compat.set_active_driver_raw(self)
        return self

    def __exit__(self, *exc_info):
        triton_compat.set_active_driver_raw(self.saved)


def _call(kernel, n, block=None):
    x, y = torch.zeros(64), torch.zeros(64)
    if block is None:
        return kernel[(1,)](x, y, n)
    return kernel[(1,)](x, y, n, BLOCK=block)


def _gpu_cache(kernel):
    return dict(triton_compat.kernel_cache(triton_compat.unwrap_jit_function(kernel), 0))


@pytest.mark.parametrize("compile", [False, True], ids=["keys-only", "compile"])
def test_offline_call_does_not_launch_what_the_gpu_compiled(compile):
    n = 16 if compile else 7  # one variant per case
    with FakeGpu():
        gpu_kernel = _call(gpu_then_offline_kernel, n, block=64)
    gpu_entries = _gpu_cache(gpu_then_offline_kernel)
    launches = len(FakeGpu.launches)

    with jitguard.offline(compile=compile), jitguard.watch() as rec:
        offline_kernel = _call(gpu_then_offline_kernel, n, block=64)
    assert len(FakeGpu.launches) == launches, "the offline call launched the GPU's compiled kernel"
    assert offline_kernel is not gpu_kernel
    assert rec.variants("gpu_then_offline_kernel") == 1  # the offline call compiled (or stubbed) its own
    if compile:
        assert ".target sm_90" in offline_kernel.asm["ptx"]

    assert _gpu_cache(gpu_then_offline_kernel) == gpu_entries  # nothing offline landed on the GPU's device
    with FakeGpu():
        assert _call(gpu_then_offline_kernel, n, block=64) is gpu_kernel
    assert len(FakeGpu.launches) == launches + 1


def test_gpu_call_after_offline_compiles_and_launches_its_own_kernel():
    with jitguard.offline():
        offline_kernel = _call(offline_then_gpu_kernel, 5, block=32)
    launches = len(FakeGpu.launches)
    with FakeGpu(), jitguard.watch() as rec:
        gpu_kernel = _call(offline_then_gpu_kernel, 5, block=32)
    assert gpu_kernel is not offline_kernel
    assert rec.variants("offline_then_gpu_kernel") == 1
    assert len(FakeGpu.launches) == launches + 1, "the GPU call went to the offline backend's no-op launcher"


def test_autotune_choices_stay_on_the_side_that_benchmarked():
    # Decorated offline (Triton 3.2 picks the benchmarker then); fake timings: 1 ms each, the first wins.
    with jitguard.offline(compile=False):
        @triton.autotune(configs=CONFIGS, key=["n"])
        @triton.jit
        def autotuned_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
            offsets = tl.arange(0, BLOCK)
            tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n) + 3, mask=offsets < n)

        _call(autotuned_kernel, 11)
    assert autotuned_kernel.best_config.kwargs == {"BLOCK": 32}

    launches = len(FakeGpu.launches)
    with FakeGpu():
        _call(autotuned_kernel, 11)  # the same tuning key: the GPU benchmarks it for itself
        _call(autotuned_kernel, 12)  # a new key: benchmarked with the GPU's benchmarker, not the fake one
    assert [m.num_warps for m in FakeGpu.launches[launches:]] == [1, 2, 2, 1, 2, 2]
    assert autotuned_kernel.best_config.kwargs == {"BLOCK": 64}

    with jitguard.offline(compile=False), jitguard.watch() as rec:
        _call(autotuned_kernel, 12)  # tuned on the GPU, not yet offline: every config compiles here
    assert rec.variants("autotuned_kernel") == 2
    assert len(FakeGpu.launches) == launches + 6


def test_each_keys_only_context_counts_every_autotune_config():
    """Keys-only entries and offline autotune choices are dropped together: a second context sees
    the same variants as the first, not just the remembered winner."""
    with jitguard.offline(compile=False):  # Triton 3.2 needs an active driver to decorate an autotuner
        @triton.autotune(configs=CONFIGS, key=["n"])
        @triton.jit
        def retuned_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
            offsets = tl.arange(0, BLOCK)
            tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n) + 4, mask=offsets < n)

    counts = []
    for _ in range(2):
        with jitguard.offline(compile=False), jitguard.watch() as rec:
            _call(retuned_kernel, 11)
        counts.append(rec.variants("retuned_kernel"))
    assert counts == [2, 2]


def test_keys_only_skips_the_compiler_for_a_kernel_set_up_on_the_gpu_before_any_offline_context():
    # A fresh process, so no offline context ran before the GPU call (Triton 3.2 captures the compiler
    # on a kernel's first call, 3.6+ on each device's first call).
    code = ("import torch, jitguard; from tests.tool.test_offline import FakeGpu, _call, gpu_then_offline_kernel as k\n"
            "with FakeGpu(): _call(k, 7, block=64)\n"
            "with jitguard.offline(compile=False), jitguard.watch() as rec: stub = _call(k, 1, block=64)\n"
            "print(rec.variants('gpu_then_offline_kernel'), bool(getattr(stub, 'asm', {}).get('cubin')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["1", "False"]  # one variant seen, and no cubin: the compiler did not run
