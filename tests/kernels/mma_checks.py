"""PTX checks shared by the sm_90 compile tests of the MoE GEMMs (test_fused_moe, test_moe_decode)."""

from __future__ import annotations

import re
import subprocess
import tempfile

import pytest
import triton

from jitguard import triton_compat

TRITON_VERSION = tuple(int(part) for part in triton.__version__.split(".")[:2])
# Checked: Triton 3.6 compiles an 8-token swapped tile to mma.sync m16n8 (FP8 on f16, each e4m3
# operand converted); 3.9 to wgmma m64n8 (FP8 on e4m3). 3.7 and 3.8 were not checked.
FP8_N8_CONVERTED = pytest.mark.xfail(TRITON_VERSION < (3, 9), strict=False,
                                     reason="Triton < 3.9 converts FP8 to f16 for an N = 8 MMA (seen on 3.6)")


def assert_tokens_in_mma_n_slot(ptx: str, block_m: int, operand: str) -> None:
    """A swapped tile multiplies on tensor cores with the token tile as the MMA's N, on the
    operand type itself: wgmma m64n<block_m>, and no mma.sync; before Triton 3.9, for block_m = 8,
    mma.sync m16n8 instead (what Triton 3.6 emits there)."""
    wgmma = set(re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n(\d+)k\d+\.f32\.(\w+)\.", ptx))
    mma = set(re.findall(r"mma\.sync\.aligned\.m16n(\d+)k\d+\.row\.col\.f32\.(\w+)\.", ptx))
    want = (str(block_m), operand)
    if block_m == 8 and TRITON_VERSION < (3, 9) and want in mma:
        return
    assert want in wgmma and "mma.sync" not in ptx, (
        f"expected wgmma m64n{block_m} {operand} and no mma.sync, found wgmma {sorted(wgmma)} mma {sorted(mma)}")


def ptxas_serialization_notes(ptx: str) -> list[str]:
    """The lines of this Triton's ptxas log (-v, sm_90a) saying it serialized the PTX's wgmma (C7514, C7515 and
    the like: registers of a wgmma in flight read or written, and more); fails if ptxas fails or its log is not
    the verbose one (no register count)."""
    with tempfile.NamedTemporaryFile("w", suffix=".ptx") as f:
        f.write(ptx)
        f.flush()
        run = subprocess.run([triton_compat.ptxas_path(90), "-v", "--gpu-name=sm_90a", f.name, "-o", "/dev/null"],
                             capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    assert re.search(r"Used \d+ registers", run.stderr), run.stderr[-2000:]
    return [line for line in run.stderr.splitlines() if "wgmma.mma_async instructions are serialized" in line]
