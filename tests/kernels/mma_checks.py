"""PTX checks shared by the sm_90 compile tests of the MoE GEMMs (test_fused_moe, test_moe_decode)."""

from __future__ import annotations

import re
import subprocess
import tempfile

import pytest
import triton

from jitguard import triton_compat
from jitguard.kernels.moe_configs import MIN_TOKEN_TILE

TRITON_VERSION = tuple(int(part) for part in triton.__version__.split(".")[:2])
# Triton before 3.9 compiles an 8-token swapped tile to mma.sync m16n8, not wgmma m64n8 (seen on 3.6; 3.7 and 3.8
# not checked). Before 3.3 token tiles start at 16 (MIN_TOKEN_TILE): the 8-token cases compile 16-token tiles, on wgmma.
N8_ON_MMA_SYNC = MIN_TOKEN_TILE == 8 and TRITON_VERSION < (3, 9)


class Fp8ConvertedToF16(AssertionError):
    """An FP8 GEMM's PTX converts its e4m3 operands to f16 and multiplies those."""


# The one failure expected of an 8-token FP8 swapped tile where it runs on mma.sync: strict, so the mark goes
# once this Triton keeps FP8 on e4m3 there, and any other failure of the case still fails it.
FP8_N8_CONVERTED = pytest.mark.xfail(
    N8_ON_MMA_SYNC, strict=True, raises=Fp8ConvertedToF16,
    reason="Triton < 3.9 runs an 8-token tile on mma.sync m16n8 and converts FP8 operands to f16 there (seen on 3.6)")


def assert_fp8_not_converted(ptx: str) -> None:
    """Raise Fp8ConvertedToF16 if the PTX converts e4m3 pairs to f16 (the FP8 operands taken off e4m3)."""
    if re.search(r"cvt\.rn\.f16x2\.e4m3x2", ptx):
        raise Fp8ConvertedToF16("FP8 operands converted to f16 (cvt.rn.f16x2.e4m3x2) before the MMA")


def assert_tokens_in_mma_n_slot(ptx: str, block_m: int, operand: str) -> None:
    """A swapped tile multiplies on tensor cores with the token tile as the MMA's N, on the operand type
    itself (no f16 conversion of FP8): wgmma m64n<block_m> and no mma.sync; where this Triton has no
    wgmma with N = 8 (N8_ON_MMA_SYNC), an 8-token tile on mma.sync m16n8 and no wgmma."""
    if operand == "e4m3":
        assert_fp8_not_converted(ptx)
    wgmma = set(re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n(\d+)k\d+\.f32\.(\w+)\.", ptx))
    mma = set(re.findall(r"mma\.sync\.aligned\.m16n(\d+)k\d+\.row\.col\.f32\.(\w+)\.", ptx))
    want = (str(block_m), operand)
    if block_m == 8 and N8_ON_MMA_SYNC:
        assert want in mma and not wgmma, (
            f"expected mma.sync m16n8 {operand} and no wgmma, found wgmma {sorted(wgmma)} mma {sorted(mma)}")
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
