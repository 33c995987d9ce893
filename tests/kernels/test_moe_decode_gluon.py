"""The decode layer's GEMMs in Gluon (``moe_decode_gluon``): FP8 block-scaled (``moe_decode.GLUON_FP8_GEMMS``) and
bf16 / fp16 (``GLUON_BF16_GEMMS``).

Offline (jitguard's fake sm_90 driver, real compiles): where the plan takes the Gluon kernel, one
variant per GEMM for every M, and what the PTX does (each step's wgmma waited only after the next
step's tiles landed, e4m3 operands never converted). On a GPU: the layer against the fp32 reference
and against the ``tl`` kernel, captured once and replayed with new inputs. Skipped with a reason
where this Triton has no Gluon (3.2-3.4) or under the interpreter.
"""

from __future__ import annotations

import re

import pytest
import torch

import jitguard
from jitguard import triton_compat
from jitguard.kernels import moe_decode
from jitguard.kernels.moe_configs import expert_size_class, expert_weight_bytes
from jitguard.kernels.moe_decode import (
    MAX_DECODE_TOKENS,
    MoeDecodeWorkspace,
    fused_moe_decode,
    fused_moe_decode_reference,
    plan_fused_moe_decode,
)
from jitguard.kernels.moe_decode_gluon import GluonTile, gluon_gemms_supported
from jitguard.kernels.moe_routing import softmax_topk_reference
from tests.kernels.mma_checks import ptxas_serialization_notes
from tests.kernels.test_moe_decode import (
    _captured_graph,
    _compile_side,
    _fp8_block_layer,
    _offline_layer,
    _rel_err,
    _replays_with_new_inputs,
    _tied_logits,
    _zero_weights,
)

needs_gluon = pytest.mark.skipif(not gluon_gemms_supported(),
                                 reason="this Triton has no Gluon Hopper wgmma (Triton >= 3.5), or is interpreted")


@pytest.fixture
def gluon_on(monkeypatch):
    monkeypatch.setattr(moe_decode, "GLUON_FP8_GEMMS", "always")


def _tiles(monkeypatch, up_n: int, up_s: int, down_n: int, down_s: int) -> None:
    """Both paths' Gluon tiles set to these (gate_up out_n x stages, down out_n x stages) at every token count, for
    FP8 and bf16, on every GPU: every table that would win over GLUON_TILES at a listed point emptied
    (GLUON_TILES_AT, GLUON_TILES_ON_GPU on the GPUs it names, GLUON_BF16_TILES_AT for bf16)."""
    tiles = (GluonTile(up_n, up_s), GluonTile(down_n, down_s))
    monkeypatch.setattr(moe_decode, "GLUON_TILES", {"pairs": tiles, "grouped": tiles})
    monkeypatch.setattr(moe_decode, "GLUON_TILES_AT", {})
    monkeypatch.setattr(moe_decode, "GLUON_TILES_ON_GPU", {})
    monkeypatch.setattr(moe_decode, "GLUON_BF16_TILES_AT", {})


def _listed_fp8_tiles():
    """Every (expert size class, path, M, (gate_up, down) tiles) that GLUON_TILES_AT (the H200's) or any GPU's
    GLUON_TILES_ON_GPU lists."""
    for table in (moe_decode.GLUON_TILES_AT, *moe_decode.GLUON_TILES_ON_GPU.values()):
        for size_class, paths in table.items():
            for path, by_tokens in paths.items():
                for M, tiles in by_tokens.items():
                    yield size_class, path, M, tiles


def _shipped_fp8_tile_entries() -> list[tuple[str, str, tuple[tuple[int, int], tuple[int, int]], int]]:
    """(expert size class, path, (gate_up, down) tiles, M): each distinct listed tile pair of a size class and path,
    at the fewest and the most tokens it is listed at."""
    listed: dict[tuple, set[int]] = {}
    for size_class, path, M, tiles in _listed_fp8_tiles():
        listed.setdefault((size_class, path, tiles), set()).add(M)
    return [(*key, M) for key, tokens in sorted(listed.items()) for M in sorted({min(tokens), max(tokens)})]


SHIPPED_FP8_TILE_ENTRIES = _shipped_fp8_tile_entries()
# (H, I) of the experts each size class's tile entries run on: 737 KB and 9.4 MB an expert in e4m3.
TILE_TEST_SHAPES = {"small": (384, 640), "large": (2048, 1536)}


def _plan(M, E, k, H, I, path="grouped", ws=None):
    w13, w2, kw = _zero_weights(E, H, I, "block")
    x = torch.randn(M, H).to(torch.bfloat16)
    return plan_fused_moe_decode(x, torch.randn(M, E), w13, w2, k, path=path, workspace=ws, **kw)


def test_gluon_tile_rejects_what_one_warpgroup_cannot_run():
    with pytest.raises(ValueError, match="out_n must be 32, 64 or 128"):
        GluonTile(16, 4)
    with pytest.raises(ValueError, match=r"stages must be in 2\.\.8"):
        GluonTile(64, 1)


@needs_gluon
def test_a_down_tile_of_32_columns_is_refused_by_name(gluon_on, monkeypatch):
    """32 output columns are 64 weight rows for gate_up (gate and up) but 32 for down: one line naming it."""
    _tiles(monkeypatch, 32, 4, 32, 4)
    with pytest.raises(ValueError, match=r"the Gluon down tile's out_n must be 64 or 128"):
        _plan(3, 16, 4, 256, 384)


@needs_gluon
def test_plan_takes_gluon_only_on_the_grouped_and_pairs_fp8_block_paths_with_128_multiples(gluon_on):
    """GLUON_FP8_GEMMS "always": the grouped and pairs paths with block scales and H, I multiples of 128
    run on Gluon; the chain path, and an I of 320, stay on tl's kernels; "never": nothing does."""
    assert _plan(3, 16, 4, 256, 384).gemms == "gluon"
    assert _plan(3, 16, 4, 256, 320).gemms == "tl"
    assert _plan(1, 16, 4, 256, 384, path="pairs").gemms == "gluon"
    assert _plan(12, 16, 4, 256, 384, path="chain").gemms == "tl"
    moe_decode.GLUON_FP8_GEMMS = "never"
    assert _plan(3, 16, 4, 256, 384).gemms == "tl"


@needs_gluon
def test_measured_gluon_token_counts_by_expert_size_and_path():
    """GLUON_FP8_GEMMS "measured" (the default): Gluon where it timed faster, the
    pairs path at 1-2 tokens for both expert sizes and 4-5 for small experts (4 with
    64-column gate_up tiles), the grouped path at 3 and 7-64 tokens for small experts (21-64 with the top-k sum
    launched apart) and 3, 5-8, 10, 12 and 13 for large ones (with their own tiles); tl's kernels elsewhere (the pairs
    path's per-pair handoff at 6
    tokens and the chain path past these counts were faster)."""
    assert moe_decode.GLUON_FP8_GEMMS == "measured"
    small = expert_weight_bytes(2048, 768, 1)
    large = expert_weight_bytes(7168, 1024, 1)
    taken = {(size, path, M) for size, eb in (("small", small), ("large", large)) for path in ("pairs", "grouped")
             for M in range(1, 65) if moe_decode.takes_gluon_gemms(M, path, True, 2048, 768, eb)}
    assert taken == {*(("small", "pairs", M) for M in (1, 2, 4, 5)), ("small", "grouped", 3),
                     *(("small", "grouped", M) for M in range(7, 65)),
                     ("large", "pairs", 1), ("large", "pairs", 2),
                     *(("large", "grouped", M) for M in (3, 5, 6, 7, 8, 10, 12, 13))}
    # GLUON_FP8_TOKENS_ON_GPU: on an H100 small experts take the grouped path's Gluon GEMMs at 5 and 6 tokens
    # too, the pairs path's at 1, 2 and 4; large ones the H200's counts but 8 (tl's grouped GEMMs there); another
    # GPU, or none, the H200's.
    h100 = "NVIDIA H100 80GB HBM3"
    taken_h100 = {(size, path, M) for size, eb in (("small", small), ("large", large))
                  for path in ("pairs", "grouped") for M in range(1, 65)
                  if moe_decode.takes_gluon_gemms(M, path, True, 2048, 768, eb, gpu_name=h100)}
    assert taken_h100 == ((taken - {("small", "pairs", 5), ("large", "grouped", 8)})
                          | {("small", "grouped", 5), ("small", "grouped", 6)})
    assert {(size, path, M) for size, eb in (("small", small), ("large", large)) for path in ("pairs", "grouped")
            for M in range(1, 65)
            if moe_decode.takes_gluon_gemms(M, path, True, 2048, 768, eb, gpu_name="Some GPU")} == taken
    assert not moe_decode.takes_gluon_gemms(1, "pairs", False, 2048, 768, small)  # bf16 / no block scales
    assert not moe_decode.takes_gluon_gemms(1, "chain", True, 2048, 768, small)
    assert not moe_decode.takes_gluon_gemms(1, "pairs", True, 2048, 320, small)  # I not a multiple of 128


@needs_gluon
def test_auto_path_takes_the_grouped_path_where_only_its_gemms_run_in_gluon(monkeypatch):
    """Given H and I, choose_decode_path sends FP8 block scales to the grouped path at the token counts
    where its GEMMs run in Gluon and the pairs path's would not (Qwen3-30B-like M = 3 and 9-64 past the
    chain's FP8_CHAIN_ABOVE_TOKENS, DeepSeek-V3-TP2-like M = 6, 10, 12, 13); with tl's GEMMs everywhere ("never") or
    without H and I, the pairs path and the chain as before; "always" takes no chain token count."""
    small, large = expert_weight_bytes(2048, 768, 1), expert_weight_bytes(7168, 1024, 1)
    qwen3 = [moe_decode.choose_decode_path(M, 128, 8, True, True, small, 2048, 768) for M in range(1, 65)]
    assert qwen3 == ["pairs", "pairs", "grouped", "pairs", "pairs", "pairs"] + ["grouped"] * 58
    # On an H100 (GLUON_FP8_TOKENS_ON_GPU) the grouped path at 5 and 6 tokens, where its Gluon GEMMs measured faster.
    qwen3_h100 = [moe_decode.choose_decode_path(M, 128, 8, True, True, small, 2048, 768, "NVIDIA H100 80GB HBM3")
                  for M in range(1, 65)]
    assert qwen3_h100 == ["pairs", "pairs", "grouped", "pairs"] + ["grouped"] * 60
    deepseek = [moe_decode.choose_decode_path(M, 256, 8, True, True, large, 7168, 1024) for M in range(1, 15)]
    assert deepseek == ["pairs", "pairs", "grouped", "pairs", "grouped", "grouped", "grouped", "grouped", "chain",
                        "grouped", "chain", "grouped", "grouped", "chain"]
    assert [moe_decode.choose_decode_path(M, 256, 8, True, True, large, 7168, 1024, "NVIDIA H100 80GB HBM3")
            for M in range(1, 15)] == deepseek
    assert moe_decode.choose_decode_path(3, 128, 8, True, True, small) == "pairs"
    assert moe_decode.choose_decode_path(9, 128, 8, True, True, small) == "chain"
    monkeypatch.setattr(moe_decode, "GLUON_FP8_GEMMS", "always")
    assert moe_decode.choose_decode_path(21, 128, 8, True, True, small, 2048, 768) == "grouped"
    assert moe_decode.choose_decode_path(11, 256, 8, True, True, large, 7168, 1024) == "chain"
    monkeypatch.setattr(moe_decode, "GLUON_FP8_GEMMS", "never")
    assert moe_decode.choose_decode_path(3, 128, 8, True, True, small, 2048, 768) == "pairs"
    assert moe_decode.choose_decode_path(6, 256, 8, True, True, large, 7168, 1024) == "pairs"
    assert moe_decode.choose_decode_path(9, 128, 8, True, True, small, 2048, 768) == "chain"


def test_tiles_by_token_count_and_expert_size(monkeypatch):
    """gluon_tiles: GLUON_TILES_AT's tiles where it lists the expert size class, path and token count, else
    GLUON_TILES' (small experts: on the pairs path down 128 x 4 at 1 and 2 tokens, gate_up's 64 columns at 4 and 5
    (6 stages at 5, with down's 4); on the grouped path down's 128 x 4 at 3, gate_up 32 x 8 with down 128 x 4 at 7,
    gate_up's 4 stages at 8-9 (with down's 128 x 3 at 8), 8 at 11 and down's 4 at 10-11, both 4 at 17-20, gate_up's
    6 stages and down's 128 x 4 at 21-40; large experts: gate_up's on the pairs path at 1 and 2, on the grouped at 3,
    5-8, 10, 12, 13, with down's 128 x 3 at 3 and 128 x 4 at 7)."""
    small, large = expert_weight_bytes(2048, 768, 1), expert_weight_bytes(7168, 1024, 1)
    up, down = moe_decode.GLUON_TILES["pairs"]
    assert moe_decode.gluon_tiles("pairs", 1, small) == (up, GluonTile(down.out_n, 4))
    assert moe_decode.gluon_tiles("pairs", 2, small) == (up, GluonTile(down.out_n, 4))
    assert moe_decode.gluon_tiles("pairs", 4, small) == (GluonTile(64, 3), down)
    assert moe_decode.gluon_tiles("pairs", 5, small) == (GluonTile(64, 6), GluonTile(down.out_n, 4))
    assert moe_decode.gluon_tiles("pairs", 6, small) == (up, down)
    assert moe_decode.gluon_tiles("pairs", 1, large) == (GluonTile(32, 8), down)
    assert moe_decode.gluon_tiles("pairs", 2, large) == (GluonTile(64, 4), down)
    assert moe_decode.gluon_tiles("pairs", 5, large) == (up, down)
    assert [moe_decode.gluon_tiles("grouped", M, large)[0] for M in range(2, 10)] == [
        moe_decode.GLUON_TILES["grouped"][0], GluonTile(32, 8), moe_decode.GLUON_TILES["grouped"][0],
        GluonTile(32, 8), GluonTile(32, 8), GluonTile(32, 8), GluonTile(32, 8), moe_decode.GLUON_TILES["grouped"][0]]
    assert moe_decode.gluon_tiles("grouped", 3, large)[1] == GluonTile(128, 3)
    assert moe_decode.gluon_tiles("grouped", 7, large)[1] == GluonTile(128, 4)
    grouped_up, grouped_down = moe_decode.GLUON_TILES["grouped"]
    assert moe_decode.gluon_tiles("grouped", 3, small) == (grouped_up, GluonTile(128, 4))
    assert [moe_decode.gluon_tiles("grouped", M, small) for M in range(6, 14)] == [
        (grouped_up, grouped_down), (GluonTile(32, 8), GluonTile(128, 4)), (GluonTile(32, 4), GluonTile(128, 3)),
        (GluonTile(32, 4), grouped_down),
        (grouped_up, GluonTile(grouped_down.out_n, 4)), (GluonTile(32, 8), GluonTile(grouped_down.out_n, 4)),
        (grouped_up, grouped_down), (grouped_up, grouped_down)]
    assert {moe_decode.gluon_tiles("grouped", M, small) for M in range(21, 41)} == {(GluonTile(32, 6),
                                                                                    GluonTile(128, 4))}
    assert moe_decode.gluon_tiles("grouped", 41, small) == (grouped_up, grouped_down)
    monkeypatch.setattr(moe_decode, "GLUON_TILES_AT", {"large": {"grouped": {6: ((64, 3), (64, 5))}}})
    assert moe_decode.gluon_tiles("pairs", 2, small) == (up, down)
    assert moe_decode.gluon_tiles("grouped", 6, large) == (GluonTile(64, 3), GluonTile(64, 5))
    assert moe_decode.gluon_tiles("grouped", 6, None) == (GluonTile(64, 3), GluonTile(64, 5))  # unknown: large


def test_tiles_tuned_on_another_gpu_are_taken_there_first(monkeypatch):
    """GLUON_TILES_ON_GPU: on the GPU it names (torch.cuda.get_device_name's name), its tiles where it lists the
    expert size class, path and token count, GLUON_TILES_AT's elsewhere; on any other GPU, and with no GPU name,
    GLUON_TILES_AT's; bf16 keeps GLUON_BF16_TILES_AT's. The shipped H100 entry: Qwen3-30B-sized experts, gate_up
    32 x 8 on the pairs path at 1 token, down 128 x 4 on the grouped path at 5, 6, 10-13, 17-20 and 48 (128 x 3 at
    14)."""
    small, large = expert_weight_bytes(2048, 768, 1), expert_weight_bytes(7168, 1024, 1)
    h100, h200 = "NVIDIA H100 80GB HBM3", moe_decode.GLUON_TABLES_GPU
    assert moe_decode.gluon_tiles("pairs", 1, small, gpu_name=h100) == (GluonTile(32, 8), GluonTile(128, 6))
    assert moe_decode.gluon_tiles("pairs", 1, small, gpu_name=h200) == (GluonTile(32, 6), GluonTile(128, 4))
    assert moe_decode.gluon_tiles("pairs", 1, small) == moe_decode.gluon_tiles("pairs", 1, small, gpu_name=h200)
    assert {moe_decode.gluon_tiles("grouped", M, small, gpu_name=h100)[1]
            for M in (5, 6, 10, 11, 12, 13, 17, 18, 19, 20, 48)} == {GluonTile(128, 4)}
    assert moe_decode.gluon_tiles("grouped", 14, small, gpu_name=h100) == (GluonTile(32, 8), GluonTile(128, 3))
    for M in (2, 4, 16, 32):  # not listed for the H100: the H200's
        for path in ("pairs", "grouped"):
            assert moe_decode.gluon_tiles(path, M, small, gpu_name=h100) == moe_decode.gluon_tiles(path, M, small)
    for M in range(1, 14):  # DeepSeek-sized experts: on the H100 its own gate_up at 2 tokens on the pairs path only
        assert moe_decode.gluon_tiles("grouped", M, large, gpu_name=h100) == moe_decode.gluon_tiles("grouped", M, large)
        if M != 2:
            assert moe_decode.gluon_tiles("pairs", M, large, gpu_name=h100) == moe_decode.gluon_tiles("pairs", M, large)
    assert moe_decode.gluon_tiles("pairs", 2, large, gpu_name=h100) == (GluonTile(64, 8), GluonTile(128, 3))
    assert (moe_decode.gluon_tiles("pairs", 2, small, unquantized=True, gpu_name=h100)
            == moe_decode.gluon_tiles("pairs", 2, small, unquantized=True))
    monkeypatch.setattr(moe_decode, "GLUON_TILES_ON_GPU", {"Some GPU": {"large": {"grouped": {6: ((64, 4), (64, 5))}}}})
    assert moe_decode.gluon_tiles("grouped", 6, large, gpu_name="Some GPU") == (GluonTile(64, 4), GluonTile(64, 5))
    assert moe_decode.gluon_tiles("grouped", 6, large, gpu_name=h100) == moe_decode.gluon_tiles("grouped", 6, large)
    assert moe_decode.gpu_name(torch.device("cpu")) is None


def test_unknown_gluon_mode_is_one_line_error(monkeypatch):
    monkeypatch.setattr(moe_decode, "GLUON_FP8_GEMMS", True)
    with pytest.raises(ValueError, match=r"GLUON_FP8_GEMMS must be one of \('measured', 'always', 'never'\), got True"):
        moe_decode.takes_gluon_gemms(1, "pairs", True, 2048, 768)
    monkeypatch.setattr(moe_decode, "GLUON_FP8_GEMMS", "measured")
    monkeypatch.setattr(moe_decode, "GLUON_BF16_GEMMS", "yes")
    with pytest.raises(ValueError,
                       match=r"GLUON_BF16_GEMMS must be one of \('measured', 'always', 'never'\), got 'yes'"):
        moe_decode.takes_gluon_gemms(1, "pairs", False, 2048, 768, unquantized=True)


# ---- bf16 / fp16 on the Gluon GEMMs (GLUON_BF16_GEMMS) ------------------------------------------------

def _bf16_plan(M, E, k, H, I, path="pairs", ws=None, dtype=torch.bfloat16):
    """A bf16 (or ``dtype``) layer of zero CPU weights planned: (plan, x)."""
    w13, w2 = (w.to(dtype) for w in _zero_weights(E, H, I, "bf16")[:2])
    x = torch.randn(M, H).to(dtype)
    return plan_fused_moe_decode(x, torch.randn(M, E), w13, w2, k, path=path, workspace=ws), x


@needs_gluon
def test_bf16_takes_gluon_only_where_listed_or_asked(monkeypatch):
    """GLUON_BF16_GEMMS "measured": the token counts GLUON_BF16_TOKENS lists by the size class of the expert's
    weight count and path (and "auto" takes the grouped path where it lists that path's); "always": the pairs
    and grouped paths with H, I multiples of 128; "never": nowhere. FP8's switch does not decide bf16, nor
    bf16's FP8."""
    assert moe_decode.GLUON_BF16_GEMMS == "measured"
    monkeypatch.setattr(moe_decode, "GLUON_BF16_TOKENS", {"small": {"pairs": (1,), "grouped": (5,)}})
    taken = {(path, M) for path in ("pairs", "grouped", "chain") for M in range(1, 65)
             if moe_decode.takes_gluon_gemms(M, path, False, 2048, 768, unquantized=True)}
    assert taken == {("pairs", 1), ("grouped", 5)}
    # Mixtral-sized experts (4096 x 14336) are of the large class: none listed.
    assert not moe_decode.takes_gluon_gemms(1, "pairs", False, 4096, 14336, unquantized=True)
    assert moe_decode.choose_decode_path(5, 128, 8, False, False, None, 2048, 768) == "grouped"
    assert moe_decode.choose_decode_path(5, 128, 8, False, False) == "chain"  # H and I unknown
    assert moe_decode.choose_decode_path(6, 128, 8, False, False, None, 2048, 768) == "chain"
    monkeypatch.setattr(moe_decode, "GLUON_BF16_GEMMS", "always")
    monkeypatch.setattr(moe_decode, "GLUON_FP8_GEMMS", "never")
    assert moe_decode.takes_gluon_gemms(7, "grouped", False, 2048, 768, unquantized=True)
    assert not moe_decode.takes_gluon_gemms(7, "chain", False, 2048, 768, unquantized=True)
    assert not moe_decode.takes_gluon_gemms(1, "pairs", False, 2048, 320, unquantized=True)
    assert not moe_decode.takes_gluon_gemms(1, "pairs", True, 2048, 768)  # FP8 "never"
    plan, _ = _bf16_plan(1, 16, 4, 256, 384)
    assert plan.gemms == "gluon"
    monkeypatch.setattr(moe_decode, "GLUON_BF16_GEMMS", "never")
    monkeypatch.setattr(moe_decode, "GLUON_FP8_GEMMS", "always")
    assert _bf16_plan(1, 16, 4, 256, 384)[0].gemms == "tl"


@needs_gluon
def test_measured_bf16_gluon_token_counts_and_the_paths_auto_takes():
    """The shipped bf16 table: Qwen3-30B-sized experts on the Gluon GEMMs at 2 tokens
    (pairs) and 3-7 (grouped), which "auto" takes in place of the chain there; one token stays on tl's pairs
    path (level, two launches against four), 8-64 on the chain; Mixtral-sized experts (large class) as before."""
    taken = {(path, M) for path in ("pairs", "grouped") for M in range(1, 65)
             if moe_decode.takes_gluon_gemms(M, path, False, 2048, 768, unquantized=True)}
    assert taken == {("pairs", 2), *(("grouped", M) for M in range(3, 8))}
    qwen3 = [moe_decode.choose_decode_path(M, 128, 8, False, False, None, 2048, 768) for M in range(1, 65)]
    assert qwen3 == ["pairs", "pairs"] + ["grouped"] * 5 + ["chain"] * 57
    mixtral = [moe_decode.choose_decode_path(M, 8, 2, False, False, None, 4096, 14336) for M in range(1, 9)]
    assert mixtral == ["pairs"] + ["chain"] * 7
    assert not any(moe_decode.takes_gluon_gemms(M, path, False, 4096, 14336, unquantized=True)
                   for path in ("pairs", "grouped") for M in range(1, 65))
    assert moe_decode.gluon_tiles("pairs", 2, None, unquantized=True) == (GluonTile(32, 7), GluonTile(128, 6))
    assert moe_decode.gluon_tiles("grouped", 4, None, unquantized=True) == (GluonTile(32, 4), GluonTile(128, 4))
    assert {moe_decode.gluon_tiles("grouped", M, None, unquantized=True) for M in (3, 5, 6, 7)} == {
        (GluonTile(32, 6), GluonTile(128, 4))}


@needs_gluon
def test_bf16_gluon_tiles_by_path_and_token_count(monkeypatch):
    """gluon_tiles for bf16 / fp16: GLUON_BF16_TILES_AT's by path and token count, else GLUON_TILES' (never the
    FP8 table's, whatever the expert size)."""
    monkeypatch.setattr(moe_decode, "GLUON_BF16_TILES_AT", {"pairs": {1: ((64, 4), (128, 5))}})
    assert moe_decode.gluon_tiles("pairs", 1, None, unquantized=True) == (GluonTile(64, 4), GluonTile(128, 5))
    assert moe_decode.gluon_tiles("pairs", 2, None, unquantized=True) == moe_decode.GLUON_TILES["pairs"]
    assert moe_decode.gluon_tiles("grouped", 8, None, unquantized=True) == moe_decode.GLUON_TILES["grouped"]
    assert moe_decode.gluon_tiles("pairs", 1, None) != (GluonTile(64, 4), GluonTile(128, 5))


@needs_gluon
@pytest.mark.parametrize("path", ["pairs", "grouped"])
def test_bf16_gluon_plan_routes_first_and_reads_x_and_the_intermediate_unquantized(path, monkeypatch):
    """bf16 on the Gluon GEMMs: on the pairs path an x launch that only routes ("route_tokens": no row
    quantized, each token's routing in its own program), on the grouped path the route launch; then gate_up
    reading x itself and writing the bf16 intermediate that down reads, both with BLOCK_SCALED off, down's
    pair rows summed by the reduce launched after it."""
    monkeypatch.setattr(moe_decode, "GLUON_BF16_GEMMS", "always")
    M, k = 3, 4
    plan, x = _bf16_plan(M, 16, k, 256, 384, path=path)
    assert plan.gemms == "gluon"
    names = [name for name, _ in plan.launches]
    assert names == ["route_tokens" if path == "pairs" else "route", "gate_up", "down", "reduce"]
    first, gate_up, down = (launch for _, launch in plan.launches[:3])
    if path == "pairs":
        assert first.keywords["ROUTE"] is False and first.keywords["ROUTE_TOKENS"] is True
        assert "ROUTERS_APART" not in first.keywords and first.keywords["WRITE_XQ"] is False
    assert gate_up.keywords["BLOCK_SCALED"] is False and down.keywords["BLOCK_SCALED"] is False
    assert gate_up.args[0].data_ptr() == x.data_ptr()  # x as the caller gave it
    assert down.args[0].data_ptr() == gate_up.args[4].data_ptr()  # down's A is gate_up's C
    assert down.args[0].dtype == torch.bfloat16


@needs_gluon
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("path", ["pairs", "grouped"])
def test_real_sm90_compile_of_the_bf16_gemms_leaves_each_wgmma_in_flight(path, dtype, monkeypatch):
    """bf16 (and fp16) on the Gluon kernel compiles for sm_90 to wgmma of that type (k16) with no e4m3 anywhere
    and no arrival counter (gate_up quantizes nothing, down's sum is launched apart), each step's wgmma waited
    only after the next step's cp.async tiles; one variant per GEMM."""
    _compile_side()
    monkeypatch.setattr(moe_decode, "GLUON_BF16_GEMMS", "always")
    kernel = moe_decode.moe_decode_gemm_gluon_kernel
    triton_compat.forget_compiled_variants(triton_compat.unwrap_jit_function(kernel))
    with jitguard.offline(compile=True):
        plan, _ = _bf16_plan(3, 16, 4, 256, 384, path=path, dtype=dtype)
        for _, launch in plan.launches:
            launch()
    ptx = _compiled_ptx(kernel)
    assert len(ptx) == 2
    assert sorted(_is_gate_up(p) for p in ptx) == [False, True]
    for p in ptx:
        kind = "bf16" if dtype == torch.bfloat16 else "f16"
        assert re.search(rf"wgmma\.mma_async\.sync\.aligned\.m64n8k16\.f32\.{kind}\.{kind}", p)
        assert "e4m3" not in p
        assert not re.search(r"atom\.global", p)
        issued_to_wait = p.split("wgmma.wait_group.sync.aligned", 1)[0].rsplit("wgmma.mma_async", 1)[-1]
        assert "cp.async.wait_group" in issued_to_wait


@needs_gluon
@pytest.mark.parametrize("path", ["pairs", "grouped"])
def test_real_sm90_compile_of_the_bf16_gemms_accumulating_in_the_mma_waits_one_step_behind(path, monkeypatch):
    """GLUON_BF16_ACCUMULATE_IN_MMA: in both bf16 GEMMs' K loop each step's wgmma adds onto the accumulator in flight
    and only the step before it is waited for (wgmma.wait_group 1), one full wait after the loop; off (shipped),
    every wait is a full one (each step's product folded in before the next is issued). Neither serialized."""
    _compile_side()
    monkeypatch.setattr(moe_decode, "GLUON_BF16_GEMMS", "always")
    kernel = moe_decode.moe_decode_gemm_gluon_kernel
    waits = {}
    for in_mma in (False, True):
        monkeypatch.setattr(moe_decode, "GLUON_BF16_ACCUMULATE_IN_MMA", in_mma)
        triton_compat.forget_compiled_variants(triton_compat.unwrap_jit_function(kernel))
        with jitguard.offline(compile=True):
            plan, _ = _bf16_plan(3, 16, 4, 256, 384, path=path)
            for _, launch in plan.launches:
                launch()
        ptx = _compiled_ptx(kernel)
        assert len(ptx) == 2
        waits[in_mma] = [sorted(re.findall(r"wgmma\.wait_group\.sync\.aligned (\d+)", p)) for p in ptx]
        for p in ptx:
            assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n8k16\.f32\.bf16\.bf16", p)
            assert ptxas_serialization_notes(p) == []
    assert waits[False] == [["0", "0"], ["0", "0"]]
    assert waits[True] == [["0", "1", "1"], ["0", "1", "1"]]


@needs_gluon
@pytest.mark.parametrize("scheme,switch", [("block", True), ("block", False), ("bf16", False), ("bf16", True)],
                         ids=["fp8-quantized-by-down", "fp8-quantized-by-gate-up", "bf16", "bf16-in-the-mma"])
@pytest.mark.parametrize("tiles", [(32, 4, 64, 4), (64, 6, 128, 8), (128, 3, 128, 3)],
                         ids=["32-columns", "64-columns", "128-columns"])
@pytest.mark.parametrize("path", ["pairs", "grouped"])
def test_real_sm90_compile_leaves_no_wgmma_serialized_by_ptxas(path, tiles, scheme, switch, monkeypatch):
    """Both Gluon GEMMs as this Triton's ptxas assembles them for sm_90a: no wgmma serialized (C7514 / C7515, which
    ptxas does where registers of a wgmma in flight are read or written: the form with two
    FP8 products in flight was, at every tile), in each setting the layer can take."""
    _compile_side()
    monkeypatch.setattr(moe_decode, "GLUON_FP8_GEMMS", "always")
    monkeypatch.setattr(moe_decode, "GLUON_BF16_GEMMS", "always")
    monkeypatch.setattr(moe_decode, "GLUON_INTER_QUANTIZED_BY_DOWN", switch)
    monkeypatch.setattr(moe_decode, "GLUON_BF16_ACCUMULATE_IN_MMA", switch)
    _tiles(monkeypatch, *tiles)
    kernel = moe_decode.moe_decode_gemm_gluon_kernel
    triton_compat.forget_compiled_variants(triton_compat.unwrap_jit_function(kernel))
    with jitguard.offline(compile=True):
        if scheme == "bf16":
            plan, _ = _bf16_plan(3, 16, 4, 256, 384, path=path)
        else:
            plan = _plan(3, 16, 4, 256, 384, path=path)
        for _, launch in plan.launches:
            launch()
    ptx = _compiled_ptx(kernel)
    assert plan.gemms == "gluon" and len(ptx) == 2
    for p in ptx:
        assert ptxas_serialization_notes(p) == []


@needs_gluon
@pytest.mark.parametrize("path,routers_apart,scheme,from_counts", [
    ("grouped", True, "block", False), ("pairs", True, "block", False), ("pairs", False, "block", False),
    ("grouped", True, "bf16", False), ("pairs", True, "bf16", False), ("grouped", True, "block", True),
    ("grouped", True, "bf16", True)],
    ids=["grouped", "pairs", "pairs-routed-after-the-row", "grouped-bf16", "pairs-bf16", "grouped-tiles-from-counts",
         "grouped-bf16-tiles-from-counts"])
def test_one_gluon_variant_per_gemm_for_m_1_to_64(path, routers_apart, scheme, from_counts, gluon_on, monkeypatch):
    """Keys only: over M = 1..64 on either path the Gluon kernel compiles once for gate_up and once for
    down (every token-count integer is in do_not_specialize), tl's decode GEMM never, and the first
    launch once on the pairs path, its routing in programs of their own or not (X_LAUNCH_ROUTERS_APART;
    with bf16 it only routes); twice on the grouped path: its few-token router up to FEW_TOKENS tokens,
    routers apart past it (ROUTE_ALIGN_APART "counter"), or once with the GEMMs' token tiles from the route
    launch's counts (GLUON_TILES_FROM_COUNTS from one token: routers apart at every M, nothing aligned). FP8 block
    scales and bf16 (GLUON_BF16_GEMMS). One tile at every M (no other down stages by token count: the shipped
    table's are the next test's)."""
    _compile_side()
    monkeypatch.setattr(moe_decode, "X_LAUNCH_ROUTERS_APART", routers_apart)
    monkeypatch.setattr(moe_decode, "GLUON_TILES_FROM_COUNTS", from_counts)
    monkeypatch.setattr(moe_decode, "GLUON_TILES_FROM_COUNTS_MIN_TOKENS", {"small": 1, "large": 1})
    monkeypatch.setattr(moe_decode, "GLUON_TILES_AT", {})
    monkeypatch.setattr(moe_decode, "GLUON_BF16_GEMMS", "always")
    monkeypatch.setattr(moe_decode, "GLUON_BF16_TILES_AT", {})
    for kernel in (moe_decode.moe_decode_gemm_gluon_kernel, moe_decode.moe_decode_route_kernel):
        triton_compat.forget_compiled_variants(triton_compat.unwrap_jit_function(kernel))  # earlier tests' keys
    E, k, H, I = 16, 4, 256, 384
    w13, w2, kw, x, logits, ws = _offline_layer(E, k, H, I, scheme, MAX_DECODE_TOKENS)
    with jitguard.offline(compile=False), jitguard.watch() as rec:
        for M in range(1, MAX_DECODE_TOKENS + 1):
            fused_moe_decode(x[:M], logits[:M], w13, w2, k, workspace=ws, path=path, **kw)
    # Both paths take 8-row token tiles (GLUON_BLOCK_M), whatever the tile table's block_m.
    assert rec.variants("moe_decode_gemm_gluon_kernel") == 2
    assert rec.variants("moe_decode_gemm_kernel") == 0
    assert rec.variants("moe_decode_route_kernel") == (1 if path == "pairs" or from_counts else 2)


def _keywords(launch) -> dict:
    """The keyword arguments a plan's launch (a functools.partial) will pass."""
    return launch.keywords


@needs_gluon
@pytest.mark.parametrize("scheme", ["block", "bf16"])
def test_tiles_from_counts_route_launch_aligns_nothing_and_the_sum_launch_zeroes_the_counts(scheme, gluon_on,
                                                                                           monkeypatch):
    """GLUON_TILES_FROM_COUNTS on the grouped path's Gluon GEMMs: the route launch's routers apart (2 M programs)
    store each expert's pairs in rank order (EXPERT_PAIRS into the workspace's expert_pairs), both GEMMs read the
    workspace's per-expert counts (TILES_FROM_COUNTS, E_POW2 the expert count's power of two) and the top-k sum
    launch zeroes those counts, from GLUON_TILES_FROM_COUNTS_MIN_TOKENS tokens; off, or on the pairs path, or with
    the sum in down's last programs (no launch after down to zero them), or with gate_up's last writers quantizing
    the intermediate (they read the sorted layout), none of it."""
    monkeypatch.setattr(moe_decode, "GLUON_BF16_GEMMS", "always")
    E, k, H, I = 20, 4, 256, 384
    w13, w2, kw, x, logits, ws = _offline_layer(E, k, H, I, scheme, MAX_DECODE_TOKENS)

    def plan(M, path="grouped"):
        p = plan_fused_moe_decode(x[:M], logits[:M], w13, w2, k, workspace=ws, path=path, **kw)
        assert p.gemms == "gluon"
        return dict(p.launches)

    def takes_counts(launches) -> bool:
        route = _keywords(launches.get("route", launches.get("quantize_x", launches.get("route_tokens"))))
        gemms = [_keywords(launches[name]) for name in ("gate_up", "down")]
        zeroes = launches["reduce"].keywords.get("zero_counts") if "reduce" in launches else None
        used = [route.get("EXPERT_PAIRS", False), *(g.get("TILES_FROM_COUNTS", False) for g in gemms),
                zeroes is not None]
        assert len(set(used)) == 1, used  # all of it or none
        if used[0]:
            assert route["ROUTERS_APART"] and route["expert_pairs_ptr"] is ws.expert_pairs
            assert all(g["counts_ptr"] is ws.counts and g["expert_pairs_ptr"] is ws.expert_pairs
                       and g["num_experts"] == E and g["E_POW2"] == 32 for g in gemms)
            assert zeroes is ws.counts
        return used[0]

    monkeypatch.setattr(moe_decode, "GLUON_TILES_FROM_COUNTS", False)
    assert not any(takes_counts(plan(M)) for M in (3, 16))
    monkeypatch.setattr(moe_decode, "GLUON_TILES_FROM_COUNTS", True)
    # These experts are small (expert_size_class): from counts from the small class's threshold.
    assert expert_size_class(expert_weight_bytes(H, I, 1)) == "small"
    monkeypatch.setattr(moe_decode, "GLUON_TILES_FROM_COUNTS_MIN_TOKENS", {"small": 4, "large": 1})
    assert [takes_counts(plan(M)) for M in (1, 3, 4, 5, 8, 16, 64)] == [False, False, True, True, True, True, True]
    monkeypatch.setattr(moe_decode, "GLUON_TILES_FROM_COUNTS_MIN_TOKENS", {"small": 1, "large": 4})
    assert all(takes_counts(plan(M)) for M in (1, 3, 8, 16, 64))
    assert not takes_counts(plan(3, "pairs"))
    if scheme == "block":
        monkeypatch.setattr(moe_decode, "GLUON_INTER_QUANTIZED_BY_DOWN", False)
        assert not takes_counts(plan(8))
        monkeypatch.setattr(moe_decode, "GLUON_INTER_QUANTIZED_BY_DOWN", True)
    monkeypatch.setattr(moe_decode, "GLUON_DOWN_SUM_LAUNCH", False)
    assert not takes_counts(plan(8))


@needs_gluon
@pytest.mark.parametrize("gpu", [None, *moe_decode.GLUON_TILES_ON_GPU])
def test_shipped_choice_compiles_one_gluon_variant_per_gemm_and_path_over_m_1_to_64(gpu, monkeypatch):
    """Keys only, the shipped GLUON_FP8_GEMMS ("measured"), small experts, the H200's tiles (``gpu`` None) or those
    GLUON_TILES_ON_GPU gives a GPU: over M = 1..64 the Gluon kernel compiles once per distinct tile of a GEMM on each
    path it takes (pairs at 1, 2, 4 and 5 tokens, grouped at 3 and 7-64); M = 1..64 again compiles nothing new, in the
    Gluon kernel or the x launch (whose routing is on for the pairs path)."""
    _compile_side()
    monkeypatch.setattr(moe_decode, "gpu_name", lambda device: gpu)
    E, k, H, I = 128, 8, 256, 128
    w13, w2, kw, x, logits, ws = _offline_layer(E, k, H, I, "block", MAX_DECODE_TOKENS)
    eb = expert_weight_bytes(H, I, 1)
    gluon_paths = set()
    for M in range(1, MAX_DECODE_TOKENS + 1):
        path = moe_decode.choose_decode_path(M, E, k, True, True, eb, H, I, gpu)
        if moe_decode.takes_gluon_gemms(M, path, True, H, I, eb, gpu_name=gpu):
            gluon_paths.add(path)
    assert gluon_paths == {"pairs", "grouped"}
    with jitguard.offline(compile=False), jitguard.watch() as rec:
        for sweep in range(2):
            for M in range(1, MAX_DECODE_TOKENS + 1):
                plan = plan_fused_moe_decode(x[:M], logits[:M], w13, w2, k, workspace=ws, **kw)
                for _, launch in plan.launches:
                    launch()
            if sweep == 0:
                first = {name: rec.variants(name) for name in ("moe_decode_gemm_gluon_kernel",
                                                               "moe_decode_route_kernel")}
    # One variant per distinct tile: gate_up's and down's on each path, and the other tiles where
    # GLUON_TILES_AT lists a token count of that path; on the grouped path, one each with tiles from counts and
    # aligned (below GLUON_TILES_FROM_COUNTS_MIN_TOKENS).
    tiles = {(path, gated, moe_decode.gluon_tiles(path, M, eb, gpu_name=gpu)[0 if gated else 1],
              path == "grouped" and moe_decode.takes_tiles_from_counts(moe_decode.QUANT_BLOCK, M, H, I))
             for M in range(1, MAX_DECODE_TOKENS + 1)
             for path in (moe_decode.choose_decode_path(M, E, k, True, True, eb, H, I, gpu),)
             if moe_decode.takes_gluon_gemms(M, path, True, H, I, eb, gpu_name=gpu) for gated in (True, False)}
    assert len(tiles) > 2 * len(gluon_paths)  # the shipped table lists other down stages
    assert first["moe_decode_gemm_gluon_kernel"] == len(tiles)
    assert rec.variants("moe_decode_gemm_gluon_kernel") == first["moe_decode_gemm_gluon_kernel"]
    assert rec.variants("moe_decode_route_kernel") == first["moe_decode_route_kernel"]


def _compiled_ptx(kernel) -> list[str]:
    jit_fn = triton_compat.unwrap_jit_function(kernel)
    return [k.asm["ptx"] for cache in triton_compat.all_kernel_caches(jit_fn) for k in cache.values()]


def _compile_layer(H: int, I: int, path: str = "grouped"):
    """One 3-token FP8 block-scaled layer (16 experts, top 4) planned and compiled for sm_90 offline, the
    Gluon kernel's earlier variants forgotten first: (plan, the PTX of each Gluon GEMM it compiled)."""
    kernel = moe_decode.moe_decode_gemm_gluon_kernel
    triton_compat.forget_compiled_variants(triton_compat.unwrap_jit_function(kernel))
    with jitguard.offline(compile=True):
        plan = _plan(3, 16, 4, H, I, path=path)
        for _, launch in plan.launches:
            launch()
    return plan, _compiled_ptx(kernel)


def _is_gate_up(ptx: str) -> bool:
    """Whether a Gluon GEMM's PTX is gate_up's: its silu's exponential."""
    return "ex2.approx" in ptx


@needs_gluon
@pytest.mark.parametrize("scheme", ["block", "bf16"])
def test_real_sm90_compile_of_tiles_from_counts_scans_within_warps_and_keeps_each_wgmma_in_flight(scheme, gluon_on,
                                                                                               monkeypatch):
    """GLUON_TILES_FROM_COUNTS: both GEMMs still compile for sm_90 to wgmma left in flight while the next tiles
    land; each program's search of the counts for its tile (a scan and three sums over E) runs in warp shuffles
    with no CTA barrier or shared memory beyond the aligned layout's kernel; the route launch takes the pairs'
    ranks with relaxed atomics and has no arrival (no acq_rel atomic, no last router)."""
    _compile_side()
    monkeypatch.setattr(moe_decode, "GLUON_BF16_GEMMS", "always")
    _tiles(monkeypatch, 32, 4, 64, 4)
    E, k, H, I = 20, 4, 256, 384
    w13, w2, kw, x, logits, ws = _offline_layer(E, k, H, I, scheme, MAX_DECODE_TOKENS)
    kernels = (moe_decode.moe_decode_gemm_gluon_kernel, moe_decode.moe_decode_route_kernel)
    ptx = {}
    for from_counts in (False, True):
        monkeypatch.setattr(moe_decode, "GLUON_TILES_FROM_COUNTS", from_counts)
        for kernel in kernels:
            triton_compat.forget_compiled_variants(triton_compat.unwrap_jit_function(kernel))
        with jitguard.offline(compile=True):
            plan = plan_fused_moe_decode(x[:9], logits[:9], w13, w2, k, workspace=ws, path="grouped", **kw)
            for _, launch in plan.launches:
                launch()
        gemms = _compiled_ptx(kernels[0])
        assert len(gemms) == 2
        (route,) = _compiled_ptx(kernels[1])
        ptx[from_counts] = {"gate_up": next(p for p in gemms if _is_gate_up(p)),
                            "down": next(p for p in gemms if not _is_gate_up(p)), "route": route}
    for name in ("gate_up", "down"):
        on, off = ptx[True][name], ptx[False][name]
        assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k\d+\.f32", on)
        issued_to_wait = on.split("wgmma.wait_group.sync.aligned", 1)[0].rsplit("wgmma.mma_async", 1)[-1]
        assert "cp.async.wait_group" in issued_to_wait
        assert on.count("shfl.sync") > off.count("shfl.sync")
        for op in ("bar.sync", "st.shared", "ld.shared"):
            assert on.count(op) == off.count(op), (name, op)
    assert re.search(r"atom\.global\.(gpu\.relaxed|relaxed\.gpu)\.add", ptx[True]["route"])
    assert not re.search(r"acq_rel", ptx[True]["route"])
    assert re.search(r"acq_rel", ptx[False]["route"])  # the aligned layout's last router arrives


@needs_gluon
@pytest.mark.parametrize("by_down", [True, False], ids=["inter-quantized-by-down", "inter-quantized-by-gate-up"])
@pytest.mark.parametrize("sum_launch", [True, False], ids=["sum-launched-apart", "sum-in-down"])
@pytest.mark.parametrize("tiles", [(32, 4, 64, 4), (64, 4, 64, 4), (128, 3, 128, 3)],
                         ids=["32-columns", "64-columns", "128-columns"])
def test_real_sm90_compile_leaves_each_wgmma_in_flight_until_the_next_tiles_land(tiles, sum_launch, by_down, gluon_on,
                                                                                 monkeypatch):
    """Both GEMMs compile for sm_90 to e4m3 wgmma (never converted to f16); in the K loop each step
    waits for its cp.async tiles before it waits for the previous step's wgmma (the MMA runs while
    weights stream); PDL-linked (down lets the top-k reduce start where that sum is launched apart,
    GLUON_DOWN_SUM_LAUNCH); gate_up's group counter where its tiles share a group (the intermediate quantized by
    gate_up, not down) and, with the sum in down, down's arrival counter are gpu-scope acq_rel atomics."""
    _compile_side()
    monkeypatch.setattr(moe_decode, "GLUON_DOWN_SUM_LAUNCH", sum_launch)
    monkeypatch.setattr(moe_decode, "GLUON_INTER_QUANTIZED_BY_DOWN", by_down)
    up_n, up_s, down_n, down_s = tiles
    _tiles(monkeypatch, up_n, up_s, down_n, down_s)
    plan, ptx = _compile_layer(256, 384)
    assert plan.gemms == "gluon"
    assert len(ptx) == 2, "expected gate_up and down to compile"
    for p in ptx:
        assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k32\.f32\.e4m3\.e4m3", p)
        assert not re.search(r"cvt\.rn\.f16x2\.e4m3x2", p), "FP8 operands converted to f16"
        # The first wait for a wgmma (the K loop's) comes after the wait for the next step's cp.async
        # tiles, issued after that wgmma: the MMA ran while they landed (tl.dot's scaled step waits at once).
        issued_to_wait = p.split("wgmma.wait_group.sync.aligned", 1)[0].rsplit("wgmma.mma_async", 1)[-1]
        assert "cp.async.wait_group" in issued_to_wait
    # Arrival counters: down's with the sum in it, and gate_up's when its tiles write part of a group each
    # (a 128-column tile quantizes its whole group from registers, with no counter; none where down quantizes).
    counted = [p for p in ptx if re.search(r"atom\.global\.(gpu\.acq_rel|acq_rel\.gpu)\.add\.u32", p)]
    assert len(counted) == (up_n < 128 and not by_down) + (not sum_launch)
    if moe_decode.pdl_supported():
        # Both wait for the launch before; gate_up lets down start, down the reduce where there is one.
        assert all("griddepcontrol.wait" in p for p in ptx)
        assert {_is_gate_up(p): p.count("griddepcontrol.launch_dependents") for p in ptx} == {True: 1,
                                                                                              False: int(sum_launch)}


@needs_gluon
@pytest.mark.skipif(not moe_decode.pdl_supported(), reason="this Triton's launcher has no launch_pdl")
@pytest.mark.parametrize("ahead", [True, False])
def test_real_sm90_compile_with_down_weights_before_the_wait(ahead, gluon_on, monkeypatch):
    """GLUON_DOWN_WEIGHTS_BEFORE_WAIT (on by default): gate_up waits for the launch before it before it
    lets down start, and down issues its first weight copies before its own wait; off, gate_up lets down
    start first and down waits at its start."""
    _compile_side()
    monkeypatch.setattr(moe_decode, "GLUON_DOWN_WEIGHTS_BEFORE_WAIT", ahead)
    _, ptx = _compile_layer(256, 384, path="pairs")
    gate_up = [p for p in ptx if _is_gate_up(p)]
    down = [p for p in ptx if not _is_gate_up(p)]
    assert len(gate_up) == len(down) == 1
    assert (gate_up[0].index("griddepcontrol.wait") < gate_up[0].index("griddepcontrol.launch_dependents")) == ahead
    copies_before_wait = re.search(r"cp\.async\.c[ag]", down[0][:down[0].index("griddepcontrol.wait")])
    assert bool(copies_before_wait) == ahead


@needs_gluon
@pytest.mark.parametrize("path", ["grouped", "pairs"])
def test_real_sm90_compile_with_the_intermediate_quantized_by_down(path, gluon_on, monkeypatch):
    """GLUON_INTER_QUANTIZED_BY_DOWN: gate_up's sm_90 code has no group counter (no atomics) and converts nothing to
    e4m3 (it writes bf16); down converts its A to e4m3 and multiplies e4m3 on wgmma, its product still in flight
    until the next tiles land; off, gate_up quantizes and down converts nothing."""
    _compile_side()
    ptx = {}
    for by_down in (False, True):
        monkeypatch.setattr(moe_decode, "GLUON_INTER_QUANTIZED_BY_DOWN", by_down)
        _, compiled = _compile_layer(256, 384, path=path)
        ptx[by_down] = {_is_gate_up(p): p for p in compiled}
        assert len(ptx[by_down]) == 2
    to_e4m3 = re.compile(r"cvt\.rn\.satfinite\.e4m3x2")
    assert re.search(r"atom\.global", ptx[False][True]) and to_e4m3.search(ptx[False][True])
    assert not to_e4m3.search(ptx[False][False])
    gate_up, down = ptx[True][True], ptx[True][False]
    assert not re.search(r"atom\.global", gate_up) and not to_e4m3.search(gate_up)
    assert to_e4m3.search(down)
    for p in (gate_up, down):
        assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k32\.f32\.e4m3\.e4m3", p)
        issued_to_wait = p.split("wgmma.wait_group.sync.aligned", 1)[0].rsplit("wgmma.mma_async", 1)[-1]
        assert "cp.async.wait_group" in issued_to_wait


@needs_gluon
@pytest.mark.parametrize("path", ["grouped", "pairs"])
def test_real_sm90_compile_with_stamps_reads_the_global_timer_five_times_and_without_none(path, gluon_on):
    """The timeline probe's stamps (STAMPS, device_clock) on both Gluon GEMMs: each reads %globaltimer at its
    five points (start, set-up, wait, K loop, end); without them the PTX is the plan's as shipped."""
    _compile_side()
    kernel = moe_decode.moe_decode_gemm_gluon_kernel
    buf = torch.zeros(1 << 12, dtype=torch.int64)
    plan, plain = _compile_layer(256, 384, path=path)
    assert plan.gemms == "gluon" and len(plain) == 2
    triton_compat.forget_compiled_variants(triton_compat.unwrap_jit_function(kernel))
    with jitguard.offline(compile=True):
        for name, launch in plan.launches:
            if name in ("gate_up", "down"):
                launch.func(*launch.args, **{**launch.keywords, "STAMPS": True, "stamps_ptr": buf})
    stamped = _compiled_ptx(kernel)
    assert len(stamped) == 2
    assert all("%globaltimer" not in p for p in plain)
    assert [p.count("%globaltimer") for p in stamped] == [5, 5]


@needs_gluon
@pytest.mark.parametrize("path", ["grouped", "pairs"])
def test_real_sm90_compile_with_the_top_k_sum_in_a_launch_of_its_own(path, gluon_on, monkeypatch):
    """GLUON_DOWN_SUM_LAUNCH: the plan ends with down then the top-k reduce; down has no arrival counter
    (no atomics) and, PDL-linked, lets the reduce start as gate_up lets down start."""
    _compile_side()
    monkeypatch.setattr(moe_decode, "GLUON_DOWN_SUM_LAUNCH", True)
    plan, ptx = _compile_layer(256, 384, path=path)
    assert [name for name, _ in plan.launches][-3:] == ["gate_up", "down", "reduce"]
    assert len(ptx) == 2
    down = [p for p in ptx if not _is_gate_up(p)]
    assert len(down) == 1, "expected one down variant (no silu)"
    assert not re.search(r"atom\.global", down[0])
    if moe_decode.pdl_supported():
        assert all(p.count("griddepcontrol.launch_dependents") == 1 for p in ptx)


@needs_gluon
@pytest.mark.parametrize("M,path", [(1, "pairs"), (8, "grouped"), (64, "grouped")])
def test_shipped_gluon_layer_sums_bf16_pair_rows_in_a_launch_after_down(M, path):
    """The shipped choice (small experts, FP8 block scales) on the Gluon GEMMs ends with down then the top-k
    reduce (GLUON_DOWN_SUM_LAUNCH), which reads down's pair rows in the activation dtype
    (GLUON_DOWN_ROWS_IN_ACT_DTYPE): the pairs path at 1 token, the grouped path at 8 and 64."""
    E, k, H, I = 128, 8, 256, 128
    w13, w2, kw, x, logits, ws = _offline_layer(E, k, H, I, "block", MAX_DECODE_TOKENS)
    plan = plan_fused_moe_decode(x[:M], logits[:M], w13, w2, k, workspace=ws, **kw)
    assert (plan.path, plan.gemms) == (path, "gluon")
    names = [name for name, _ in plan.launches]
    assert names[-3:] == ["gate_up", "down", "reduce"]
    down, reduce = (launch for name, launch in plan.launches if name in ("down", "reduce"))
    rows = reduce.args[0]
    assert rows.dtype == x.dtype == torch.bfloat16 and rows.shape == (M * k, H)
    assert down.keywords["SUM_TOPK"] is False
    assert down.args[4].data_ptr() == rows.data_ptr()  # down's c is the reduce's input


# ---- on a GPU -------------------------------------------------------------------------------------------

def _replay_gluon_beside_tl(switch: str, x, logits, w13, w2, k: int, path: str, gen: torch.Generator, ref_tol: float,
                            **fp8_kw) -> None:
    """The layer on the Gluon GEMMs (``switch`` "always") and on tl's ("never") captured in one CUDA graph, then
    three replays with new tokens and logits: each time the Gluon output within ``ref_tol`` of the fp32 reference
    (activations quantized as the kernels do where ``fp8_kw`` asks for FP8), within 1e-2 of tl's on the same
    inputs, and the routing the call left in the workspace softmax_topk_reference's."""
    M = x.shape[0]
    ws_tl, ws_gl = MoeDecodeWorkspace.for_layer(w13, w2, k), MoeDecodeWorkspace.for_layer(w13, w2, k)
    out_tl, out_gl = torch.empty_like(x), torch.empty_like(x)

    def layer(gluon: bool):
        setattr(moe_decode, switch, "always" if gluon else "never")
        try:
            plan = plan_fused_moe_decode(x, logits, w13, w2, k, renormalize=True, workspace=ws_gl if gluon else ws_tl,
                                         out=out_gl if gluon else out_tl, path=path, **fp8_kw)
        finally:
            setattr(moe_decode, switch, "measured")
        assert plan.gemms == ("gluon" if gluon else "tl")
        for _, launch in plan.launches:
            launch()

    graph = _captured_graph(lambda: (layer(True), layer(False)))
    for ref in _replays_with_new_inputs(graph, x, logits, (out_gl, out_tl), w13, w2, k, gen, fp8_kw):
        assert _rel_err(out_gl, ref) < ref_tol
        assert _rel_err(out_gl, out_tl.float().cpu()) < 1e-2
        ref_w, ref_ids = softmax_topk_reference(logits.cpu(), k, True)
        got_w, got_ids = ws_gl.routing(M)
        assert torch.equal(got_ids.cpu(), ref_ids)
        torch.testing.assert_close(got_w.cpu(), ref_w, rtol=1e-5, atol=1e-6)


@pytest.mark.gpu
@needs_gluon
@pytest.mark.parametrize("path,M", [("grouped", 1), ("grouped", 3), ("grouped", 8), ("grouped", 13), ("grouped", 17),
                                    ("grouped", 11), ("grouped", 12), ("grouped", 64),
                                    ("pairs", 1), ("pairs", 2), ("pairs", 3), ("pairs", 4), ("pairs", 5),
                                    ("pairs", 8)])
@pytest.mark.parametrize("tiles", [(32, 4, 64, 4, True, True), (64, 4, 64, 4, True, True),
                                   (128, 3, 128, 3, True, True), (64, 2, 128, 6, True, True),
                                   (32, 8, 128, 3, True, True), (32, 6, 128, 3, False, True),
                                   (32, 6, 128, 3, True, False), None, (32, 6, 64, 3, True, True, True),
                                   (32, 6, 128, 3, False, True, True), (32, 6, 64, 3, True, True, True, True)],
                         ids=["32-columns", "64-columns", "128-columns", "mixed", "8-stages", "down-waits-first",
                              "routed-after-the-row", "shipped-tiles", "down-sum-launch",
                              "down-sum-launch-waits-first", "down-sum-launch-bf16-rows"])
def test_gluon_layer_matches_reference_and_tl_kernel_across_graph_replays(path, M, tiles, monkeypatch):
    """FP8 block scales on the grouped and pairs paths, GEMMs on Gluon: each of three graph replays with new
    tokens and logits within 4e-2 of the fp32 reference (activations quantized), and within 1e-2 of
    tl's kernel on the same inputs (H = 384, I = 640: a K loop of 3 and 5 steps, I's last group
    written by four 32-column tiles, two of 64 or one of 128); the pairs path's x launch routing in
    programs of its own (shipped) or after each row; "shipped-tiles": the shipped tiles with down's stages
    by token count (GLUON_TILES_AT: gate_up 32 x 7 and down 128 x 6 at 1 token, down's 6 stages at 2 tokens and
    4 at 5 on the pairs path, gate_up's 64 columns at 4 and 5; on the grouped down's 128 x 4 at 3 and 4 stages
    at 10-12, gate_up's 4 stages at 7-9 and 8 at 11, both 4 at 17-20); "down-sum-launch": the top-k sum in a launch
    after down (GLUON_DOWN_SUM_LAUNCH), down's weights before its wait or not, its pair rows fp32 or bf16
    (GLUON_DOWN_ROWS_IN_ACT_DTYPE)."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    E, k, H, I = 16, 4, 384, 640
    shipped = (moe_decode.GLUON_DOWN_SUM_LAUNCH, moe_decode.GLUON_DOWN_ROWS_IN_ACT_DTYPE)
    up_n, up_s, down_n, down_s, ahead, routers_apart, sum_launch, act_rows = (
        (*tiles, False, False)[:8] if tiles else (None, None, None, None, True, True, *shipped))
    monkeypatch.setattr(moe_decode, "GLUON_DOWN_SUM_LAUNCH", sum_launch)
    monkeypatch.setattr(moe_decode, "GLUON_DOWN_ROWS_IN_ACT_DTYPE", act_rows)
    monkeypatch.setattr(moe_decode, "GLUON_DOWN_WEIGHTS_BEFORE_WAIT", ahead)
    monkeypatch.setattr(moe_decode, "X_LAUNCH_ROUTERS_APART", routers_apart)
    if tiles is not None:
        _tiles(monkeypatch, up_n, up_s, down_n, down_s)
    gen = torch.Generator().manual_seed(M)
    x, logits, w13, w2, kw = _fp8_block_layer(M, E, k, H, I, gen, "cuda")
    _replay_gluon_beside_tl("GLUON_FP8_GEMMS", x, logits, w13, w2, k, path, gen, 4e-2, **kw)


def test_shipped_fp8_tile_entries_cover_every_table_and_size_class():
    """The GPU test below runs every tile pair the FP8 tables ship, of the H200's tables and every other GPU's, on
    whatever Hopper GPU runs it (a tile's maths does not depend on the GPU that chose it)."""
    entries = {(size_class, path, tiles) for size_class, path, tiles, _M in SHIPPED_FP8_TILE_ENTRIES}
    for size_class, path, M, tiles in _listed_fp8_tiles():
        assert (size_class, path, tiles) in entries, (size_class, path, M)
    assert {size_class for size_class, *_ in SHIPPED_FP8_TILE_ENTRIES} == set(TILE_TEST_SHAPES) == {"small", "large"}
    for size_class, (H, I) in TILE_TEST_SHAPES.items():
        assert expert_size_class(expert_weight_bytes(H, I, 1)) == size_class


@pytest.mark.gpu
@needs_gluon
@pytest.mark.parametrize("size_class,path,tiles,M", SHIPPED_FP8_TILE_ENTRIES,
                         ids=[f"{c}-{p}-{t[0][0]}x{t[0][1]}-{t[1][0]}x{t[1][1]}-M{M}"
                              for c, p, t, M in SHIPPED_FP8_TILE_ENTRIES])
def test_every_shipped_fp8_gluon_tile_matches_reference_across_graph_replays(size_class, path, tiles, M, monkeypatch):
    """Each tile pair of every GPU's FP8 tables (``SHIPPED_FP8_TILE_ENTRIES``), forced on this GPU at the fewest and
    most tokens it is listed at, with experts of its size class (small: H = 384, I = 640; large: H = 2048, I = 1536,
    so the large class's switches apply, tiles from counts from one token among them): three graph replays with new
    inputs, each within 4e-2 of the fp32 reference and 1e-2 of tl's kernel. The
    shipped-tile tests ran the tables of the GPU at hand only, and the large class's never at its size."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    H, I = TILE_TEST_SHAPES[size_class]
    (up_n, up_s), (down_n, down_s) = tiles
    _tiles(monkeypatch, up_n, up_s, down_n, down_s)
    gen = torch.Generator().manual_seed(500 + M)
    x, logits, w13, w2, kw = _fp8_block_layer(M, 16, 4, H, I, gen, "cuda")
    _replay_gluon_beside_tl("GLUON_FP8_GEMMS", x, logits, w13, w2, 4, path, gen, 4e-2, **kw)


@pytest.mark.gpu
@needs_gluon
@pytest.mark.parametrize("path,M", [("pairs", 1), ("pairs", 2), ("pairs", 5), ("grouped", 3), ("grouped", 8),
                                    ("grouped", 17), ("grouped", 64)])
@pytest.mark.parametrize("tiles", [None, (32, 6, 64, 3, True), (64, 2, 128, 8, True), (128, 3, 128, 7, True),
                                   (32, 5, 64, 4, False)],
                         ids=["shipped-tiles", "6-and-3-stages", "2-and-8-stages", "128-columns-7-stages",
                              "down-waits-first"])
def test_gluon_inter_quantized_by_down_equals_shipped_layer_across_graph_replays(path, M, tiles, monkeypatch):
    """GLUON_INTER_QUANTIZED_BY_DOWN: gate_up writes the bf16 intermediate only and down quantizes each step's tile
    in registers, two steps ahead of its wgmma (2-8 weight stages, K loops of 3 and 5 steps, down's weights before
    its wait or not): each of three graph replays within 4e-2 of the fp32 reference and 1e-2 of tl's kernel, and
    bit for bit the layer with gate_up's last writers quantizing (the same scales and e4m3 values, the same MMA)."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    if tiles is not None:
        up_n, up_s, down_n, down_s, ahead = tiles
        monkeypatch.setattr(moe_decode, "GLUON_DOWN_WEIGHTS_BEFORE_WAIT", ahead)
        _tiles(monkeypatch, up_n, up_s, down_n, down_s)
    gen = torch.Generator().manual_seed(100 + M)
    E, k, H, I = 16, 4, 384, 640
    x, logits, w13, w2, kw = _fp8_block_layer(M, E, k, H, I, gen, "cuda")
    monkeypatch.setattr(moe_decode, "GLUON_INTER_QUANTIZED_BY_DOWN", True)
    _replay_gluon_beside_tl("GLUON_FP8_GEMMS", x, logits, w13, w2, k, path, gen, 4e-2, **kw)
    outs = {}
    monkeypatch.setattr(moe_decode, "GLUON_FP8_GEMMS", "always")
    for by_down in (False, True):
        monkeypatch.setattr(moe_decode, "GLUON_INTER_QUANTIZED_BY_DOWN", by_down)
        plan = plan_fused_moe_decode(x, logits, w13, w2, k, renormalize=True, path=path, **kw)
        for _, launch in plan.launches:
            launch()
        torch.cuda.synchronize()
        outs[by_down] = plan.out.clone()
    assert torch.equal(outs[True], outs[False])


@pytest.mark.gpu
@needs_gluon
@pytest.mark.parametrize("routers_apart", [False, True], ids=["routed-after-the-row", "routers-apart"])
def test_gluon_pairs_routing_breaks_ties_to_the_lower_expert(routers_apart, monkeypatch):
    """Logits on a coarse grid (ties at the k-th place, all-equal rows): the experts the x launch routes
    the Gluon pairs path to are softmax_topk_reference's, lower index first, and the layer matches the
    reference computed with them; with the routing in each token's program or in programs of its own."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    monkeypatch.setattr(moe_decode, "GLUON_FP8_GEMMS", "always")
    monkeypatch.setattr(moe_decode, "X_LAUNCH_ROUTERS_APART", routers_apart)
    E, k, H, I, M = 16, 4, 256, 384, 6
    gen = torch.Generator().manual_seed(7)
    x, _, w13, w2, kw = _fp8_block_layer(M, E, k, H, I, gen, "cuda")
    logits = _tied_logits(M, E, gen).cuda()
    ws = MoeDecodeWorkspace.for_layer(w13, w2, k)
    plan = plan_fused_moe_decode(x, logits, w13, w2, k, renormalize=True, workspace=ws, path="pairs", **kw)
    assert plan.gemms == "gluon"
    for _, launch in plan.launches:
        launch()
    torch.cuda.synchronize()
    ref_w, ref_ids = softmax_topk_reference(logits.cpu(), k, True)
    got_w, got_ids = ws.routing(M)
    assert torch.equal(got_ids.cpu(), ref_ids)
    torch.testing.assert_close(got_w.cpu(), ref_w, rtol=1e-5, atol=1e-6)
    ref_kw = {key: v.cpu() if torch.is_tensor(v) else v for key, v in kw.items()}
    ref = fused_moe_decode_reference(x.cpu(), logits.cpu(), w13.cpu(), w2.cpu(), k, renormalize=True,
                                     quantize_activations=True, **ref_kw)
    assert _rel_err(plan.out, ref) < 4e-2


def _bf16_layer_on_gpu(M: int, E: int, H: int, I: int, gen: torch.Generator):
    """A bf16 layer's CUDA inputs: (x, logits, w13, w2), the weights scaled to keep the output near unit size."""
    x = torch.randn(M, H, generator=gen).to(torch.bfloat16).cuda()
    logits = torch.randn(M, E, generator=gen).cuda()
    w13 = (torch.randn(E, 2 * I, H, generator=gen) / H**0.5).to(torch.bfloat16).cuda()
    w2 = (torch.randn(E, H, I, generator=gen) / I**0.5).to(torch.bfloat16).cuda()
    return x, logits, w13, w2


@pytest.mark.gpu
@needs_gluon
@pytest.mark.parametrize("path,M", [("pairs", 1), ("pairs", 2), ("pairs", 3), ("pairs", 5), ("grouped", 1),
                                    ("grouped", 3), ("grouped", 8), ("grouped", 13), ("grouped", 64)])
@pytest.mark.parametrize("tiles", [None, (32, 7, 128, 6, True), (64, 4, 64, 4, True), (128, 3, 128, 3, True),
                                   (32, 6, 128, 3, False)],
                         ids=["shipped-tiles", "32x7-128x6", "64-columns", "128-columns", "down-waits-first"])
def test_bf16_gluon_layer_matches_reference_and_tl_kernel_across_graph_replays(path, M, tiles, monkeypatch):
    """bf16 on the Gluon GEMMs (BLOCK_SCALED off): each of three graph replays with new tokens and logits within
    2e-2 of the fp32 reference and within 1e-2 of tl's kernel on the same inputs (H = 384, I = 640: K loops of 6
    and 10 steps of 64 columns, I's last 128 columns in tiles of 32, 64 or 128), and the routing left in the
    workspace softmax_topk_reference's; down's weights copied before its wait or not."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    E, k, H, I = 16, 4, 384, 640
    if tiles is not None:
        _tiles(monkeypatch, *tiles[:4])
        monkeypatch.setattr(moe_decode, "GLUON_DOWN_WEIGHTS_BEFORE_WAIT", tiles[4])
    gen = torch.Generator().manual_seed(100 + M)
    _replay_gluon_beside_tl("GLUON_BF16_GEMMS", *_bf16_layer_on_gpu(M, E, H, I, gen), k, path, gen, 2e-2)


@pytest.mark.gpu
@needs_gluon
@pytest.mark.parametrize("path,M", [("pairs", 1), ("pairs", 5), ("grouped", 3), ("grouped", 13), ("grouped", 64)])
@pytest.mark.parametrize("tiles", [None, (32, 7, 128, 6, True), (128, 3, 128, 3, True), (32, 6, 128, 3, False)],
                         ids=["shipped-tiles", "32x7-128x6", "128-columns", "down-waits-first"])
def test_bf16_gluon_layer_accumulating_in_the_mma_matches_reference_and_tl_across_graph_replays(path, M, tiles,
                                                                                              monkeypatch):
    """GLUON_BF16_ACCUMULATE_IN_MMA: the bf16 Gluon layer with each step's wgmma adding onto the accumulator in flight
    (no products, no folds), three graph replays with new inputs each within 2e-2 of the fp32 reference and 1e-2 of
    tl's kernel (K loops of 6 and 10 steps, 2-7 stages: each copy lands in the stage whose wgmma was waited for)."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    E, k, H, I = 16, 4, 384, 640
    if tiles is not None:
        _tiles(monkeypatch, *tiles[:4])
        monkeypatch.setattr(moe_decode, "GLUON_DOWN_WEIGHTS_BEFORE_WAIT", tiles[4])
    monkeypatch.setattr(moe_decode, "GLUON_BF16_ACCUMULATE_IN_MMA", True)
    gen = torch.Generator().manual_seed(200 + M)
    _replay_gluon_beside_tl("GLUON_BF16_GEMMS", *_bf16_layer_on_gpu(M, E, H, I, gen), k, path, gen, 2e-2)


@pytest.mark.gpu
@needs_gluon
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
def test_shipped_bf16_choice_through_fused_moe_from_logits_matches_reference(dtype):
    """The shipped bf16 / fp16 choice end to end (GLUON_BF16_GEMMS "measured", small-class experts: 128 experts,
    top 8, H = 256, I = 128): fused_moe_from_logits at M = 1..9 takes tl's pairs path at 1, the Gluon pairs path at
    2, the grouped path on Gluon at 3-7 and the chain from 8, and every output is within 2e-2 of the fp32
    reference."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from jitguard.kernels.moe_dispatch import fused_moe_from_logits

    E, k, H, I = 128, 8, 256, 128
    gen = torch.Generator().manual_seed(26)
    w13 = (torch.randn(E, 2 * I, H, generator=gen) / H**0.5).to(dtype).cuda()
    w2 = (torch.randn(E, H, I, generator=gen) / I**0.5).to(dtype).cuda()
    ws = MoeDecodeWorkspace.for_layer(w13, w2, k, dtype)
    want = {1: ("pairs", "tl"), 2: ("pairs", "gluon"), **dict.fromkeys(range(3, 8), ("grouped", "gluon")),
            8: ("chain", "tl"), 9: ("chain", "tl")}
    for M, (path, gemms) in want.items():
        x = torch.randn(M, H, generator=gen).to(dtype).cuda()
        logits = torch.randn(M, E, generator=gen).cuda()
        plan = plan_fused_moe_decode(x, logits, w13, w2, k, renormalize=True, workspace=ws)
        assert (plan.path, plan.gemms) == (path, gemms), M
        out = fused_moe_from_logits(x, logits, w13, w2, k, renormalize=True, workspace=ws)
        torch.cuda.synchronize()
        ref = fused_moe_decode_reference(x.cpu(), logits.cpu(), w13.cpu(), w2.cpu(), k, renormalize=True)
        assert _rel_err(out, ref) < 2e-2, M


@pytest.mark.gpu
@needs_gluon
@pytest.mark.parametrize("scheme", ["block", "bf16"])
@pytest.mark.parametrize("M", [1, 3, 8, 13, 17, 64])
def test_gluon_tiles_from_counts_equal_the_aligned_layer_bit_for_bit_across_graph_replays(scheme, M, monkeypatch):
    """GLUON_TILES_FROM_COUNTS from one token (the route launch aligning nothing, each Gluon GEMM program finding its
    token tile from the per-expert counts): the grouped layer with it and without it captured in one CUDA graph,
    then three replays with new tokens and logits: the outputs equal bit for bit (the same pairs in the same tiles,
    each row computed the same), within 4e-2 (FP8 block scales) or 2e-2 (bf16) of the fp32 reference, the routing
    the reference's, and the counters zero after every replay (the sum launch zeroes them for the next call). 16
    experts, top 4: at 64 tokens an expert holds about 16 pairs, two or three token tiles."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    monkeypatch.setattr(moe_decode, "GLUON_FP8_GEMMS", "always")
    monkeypatch.setattr(moe_decode, "GLUON_BF16_GEMMS", "always")
    monkeypatch.setattr(moe_decode, "GLUON_TILES_FROM_COUNTS_MIN_TOKENS", {"small": 1, "large": 1})
    E, k, H, I = 16, 4, 384, 640
    gen = torch.Generator().manual_seed(300 + M)
    if scheme == "block":
        x, logits, w13, w2, kw = _fp8_block_layer(M, E, k, H, I, gen, "cuda")
        tol = 4e-2
    else:
        x, logits, w13, w2 = _bf16_layer_on_gpu(M, E, H, I, gen)
        kw, tol = {}, 2e-2
    workspaces = {on: MoeDecodeWorkspace.for_layer(w13, w2, k) for on in (False, True)}
    outs = {on: torch.empty_like(x) for on in (False, True)}

    def layer(on: bool):
        monkeypatch.setattr(moe_decode, "GLUON_TILES_FROM_COUNTS", on)
        plan = plan_fused_moe_decode(x, logits, w13, w2, k, renormalize=True, workspace=workspaces[on], out=outs[on],
                                     path="grouped", **kw)
        assert plan.gemms == "gluon"
        assert ("EXPERT_PAIRS" in plan.launches[0][1].keywords) == on
        for _, launch in plan.launches:
            launch()

    graph = _captured_graph(lambda: (layer(False), layer(True)))
    for ref in _replays_with_new_inputs(graph, x, logits, tuple(outs.values()), w13, w2, k, gen, kw):
        assert torch.equal(outs[True], outs[False])
        assert _rel_err(outs[True], ref) < tol
        _, ref_ids = softmax_topk_reference(logits.cpu(), k, True)
        assert torch.equal(workspaces[True].routing(M)[1].cpu(), ref_ids)
        assert not workspaces[True].counts.any()
