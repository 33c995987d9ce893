"""The offline backend: real sm_90 compiles with no GPU, keys-only sweeps, the driver restored."""

import subprocess
import sys

import torch

import jitguard
from jitguard import triton_compat

from tests import kernels_for_tests as k


def test_compile_true_produces_sm90_cubin_and_ptx():
    with jitguard.offline():
        compiled = k.add_one_kernel[(1,)](torch.zeros(64), torch.zeros(64), 5, BLOCK=64)
    assert "ptx" in compiled.asm and ".target sm_90" in compiled.asm["ptx"]
    assert compiled.asm.get("cubin")  # ptxas ran


def test_compile_false_counts_keys_over_thousands_of_values_quickly():
    import time
    start = time.perf_counter()
    with jitguard.offline(compile=False), jitguard.watch() as rec:
        for n in range(1, 4097):
            k.add_one_kernel[(1,)](torch.zeros(8), torch.zeros(8), n, BLOCK=1024)
            k.add_one_dns_name[(1,)](torch.zeros(8), torch.zeros(8), n, BLOCK=1024)
    elapsed = time.perf_counter() - start
    assert rec.variants("add_one_kernel") == 3
    assert rec.variants("add_one_dns_name") == 1
    assert elapsed < 30


def test_keys_only_entries_do_not_outlive_the_context():
    with jitguard.offline(compile=False):
        k.add_one_kernel[(1,)](torch.zeros(8), torch.zeros(8), 999, BLOCK=2048)
    with jitguard.offline(), jitguard.watch() as rec:
        compiled = k.add_one_kernel[(1,)](torch.zeros(8), torch.zeros(8), 999, BLOCK=2048)
    assert rec.variants("add_one_kernel") == 1  # compiled for real this time
    assert compiled.asm.get("cubin")


def test_previous_driver_is_restored():
    before = triton_compat.get_active_driver_raw()
    with jitguard.offline():
        assert triton_compat.get_active_driver_raw() is not before
        with jitguard.offline(compile=False):
            pass
    assert triton_compat.get_active_driver_raw() is before


def test_import_jitguard_imports_neither_torch_nor_triton():
    code = "import sys, jitguard; print('torch' in sys.modules, 'triton' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_jitguard_offline_env_activates_for_the_process():
    code = ("import os, torch, jitguard.offline as o; assert o.activate_from_env(os.environ['JITGUARD_OFFLINE']);"
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
