"""The decode layer's GEMMs in Gluon (``moe_decode_gluon``): FP8 block-scaled (``DecodeConfig.gluon_fp8_gemms``) and
bf16 / fp16 (``gluon_bf16_gemms``).

Offline (jitguard's fake sm_90 driver, real compiles): where the plan takes the Gluon kernel, one
variant per GEMM for every M, and what the PTX does (each step's wgmma waited only after the next
step's tiles landed, e4m3 operands never converted). On a GPU: the layer against the fp32 reference
and against the ``tl`` kernel, captured once and replayed with new inputs. Skipped with a reason
where this Triton has no Gluon (3.2-3.4) or under the interpreter.
"""

from __future__ import annotations

import dataclasses
import re

import pytest
import torch

import jitguard
from jitguard import triton_compat
from jitguard.kernels import moe_decode
from jitguard.kernels.moe_configs import expert_size_class, expert_weight_bytes
from jitguard.kernels.moe_decode import (
    DEFAULT_DECODE_CONFIG,
    MAX_DECODE_TOKENS,
    DecodeConfig,
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


def _config(base: DecodeConfig = DEFAULT_DECODE_CONFIG, **changes) -> DecodeConfig:
    return dataclasses.replace(base, **changes)


# Both GEMMs on Gluon wherever the plan can take it (FP8 block scales; with GLUON_BOTH, bf16 too) / on tl's kernel.
GLUON_ON = _config(gluon_fp8_gemms="always")
GLUON_BOTH = _config(gluon_fp8_gemms="always", gluon_bf16_gemms="always")
TL_ONLY = _config(gluon_fp8_gemms="never", gluon_bf16_gemms="never")


def _tiles(base: DecodeConfig, up_n: int, up_s: int, down_n: int, down_s: int) -> DecodeConfig:
    """``base`` with both paths' Gluon tiles set to these (gate_up out_n x stages, down out_n x stages) at every token
    count, for FP8 and bf16, on every GPU: every table that would win over gluon_tiles at a listed point emptied
    (gluon_tiles_at, gluon_tiles_on_gpu on the GPUs it names, gluon_bf16_tiles_at for bf16)."""
    tiles = (GluonTile(up_n, up_s), GluonTile(down_n, down_s))
    return _config(base, gluon_tiles={"pairs": tiles, "grouped": tiles}, gluon_tiles_at={}, gluon_tiles_on_gpu={},
                   gluon_bf16_tiles_at={})


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


def _plan(M, E, k, H, I, path="grouped", ws=None, config=GLUON_ON):
    w13, w2, kw = _zero_weights(E, H, I, "block")
    x = torch.randn(M, H).to(torch.bfloat16)
    return plan_fused_moe_decode(x, torch.randn(M, E), w13, w2, k, path=path, workspace=ws, config=config, **kw)


def test_gluon_tile_rejects_what_one_warpgroup_cannot_run():
    with pytest.raises(ValueError, match="out_n must be 32, 64 or 128"):
        GluonTile(16, 4)
    with pytest.raises(ValueError, match=r"stages must be in 2\.\.8"):
        GluonTile(64, 1)


@needs_gluon
def test_a_down_tile_of_32_columns_is_refused_by_name():
    """32 output columns are 64 weight rows for gate_up (gate and up) but 32 for down: one line naming it."""
    with pytest.raises(ValueError, match=r"the Gluon down tile's out_n must be 64 or 128"):
        _plan(3, 16, 4, 256, 384, config=_tiles(GLUON_ON, 32, 4, 32, 4))


@needs_gluon
def test_plan_takes_gluon_only_on_the_grouped_and_pairs_fp8_block_paths_with_128_multiples():
    """gluon_fp8_gemms "always": the grouped and pairs paths with block scales and H, I multiples of 128
    run on Gluon; the chain path, and an I of 320, stay on tl's kernels; "never": nothing does."""
    assert _plan(3, 16, 4, 256, 384).gemms == "gluon"
    assert _plan(3, 16, 4, 256, 320).gemms == "tl"
    assert _plan(1, 16, 4, 256, 384, path="pairs").gemms == "gluon"
    assert _plan(12, 16, 4, 256, 384, path="chain").gemms == "tl"
    assert _plan(3, 16, 4, 256, 384, config=_config(gluon_fp8_gemms="never")).gemms == "tl"


@needs_gluon
def test_measured_gluon_token_counts_by_expert_size_and_path():
    """gluon_fp8_gemms "measured" (the default): Gluon where it timed faster, the
    pairs path at 1-2 tokens for both expert sizes and 4-5 for small experts (4 with
    64-column gate_up tiles), the grouped path at 3 and 7-64 tokens for small experts (21-64 with the top-k sum
    launched apart) and 3, 5-8, 10, 12 and 13 for large ones (with their own tiles); tl's kernels elsewhere (the pairs
    path's per-pair handoff at 6
    tokens and the chain path past these counts were faster)."""
    assert DEFAULT_DECODE_CONFIG.gluon_fp8_gemms == "measured"
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
def test_auto_path_takes_the_grouped_path_where_only_its_gemms_run_in_gluon():
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
    assert moe_decode.choose_decode_path(21, 128, 8, True, True, small, 2048, 768, config=GLUON_ON) == "grouped"
    assert moe_decode.choose_decode_path(11, 256, 8, True, True, large, 7168, 1024, config=GLUON_ON) == "chain"
    assert moe_decode.choose_decode_path(3, 128, 8, True, True, small, 2048, 768, config=TL_ONLY) == "pairs"
    assert moe_decode.choose_decode_path(6, 256, 8, True, True, large, 7168, 1024, config=TL_ONLY) == "pairs"
    assert moe_decode.choose_decode_path(9, 128, 8, True, True, small, 2048, 768, config=TL_ONLY) == "chain"


def test_tiles_by_token_count_and_expert_size():
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
    other = _config(gluon_tiles_at={"large": {"grouped": {6: ((64, 3), (64, 5))}}})
    assert moe_decode.gluon_tiles("pairs", 2, small, config=other) == (up, down)
    assert moe_decode.gluon_tiles("grouped", 6, large, config=other) == (GluonTile(64, 3), GluonTile(64, 5))
    assert moe_decode.gluon_tiles("grouped", 6, None, config=other) == (GluonTile(64, 3), GluonTile(64, 5))  # large


def test_tiles_tuned_on_another_gpu_are_taken_there_first():
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
    other = _config(gluon_tiles_on_gpu={"Some GPU": {"large": {"grouped": {6: ((64, 4), (64, 5))}}}})
    assert (moe_decode.gluon_tiles("grouped", 6, large, gpu_name="Some GPU", config=other)
            == (GluonTile(64, 4), GluonTile(64, 5)))
    assert (moe_decode.gluon_tiles("grouped", 6, large, gpu_name=h100, config=other)
            == moe_decode.gluon_tiles("grouped", 6, large))
    assert moe_decode.gpu_name(torch.device("cpu")) is None


def test_unknown_gluon_mode_is_one_line_error():
    modes = r"\('measured', 'always', 'never'\)"
    with pytest.raises(ValueError, match=rf"DecodeConfig.gluon_fp8_gemms must be one of {modes}, got True"):
        _config(gluon_fp8_gemms=True)
    with pytest.raises(ValueError, match=rf"DecodeConfig.gluon_bf16_gemms must be one of {modes}, got 'yes'"):
        _config(gluon_bf16_gemms="yes")


# ---- bf16 / fp16 on the Gluon GEMMs (gluon_bf16_gemms) ------------------------------------------------

def _bf16_plan(M, E, k, H, I, path="pairs", ws=None, dtype=torch.bfloat16, config=GLUON_BOTH):
    """A bf16 (or ``dtype``) layer of zero CPU weights planned with ``config``: (plan, x)."""
    w13, w2 = (w.to(dtype) for w in _zero_weights(E, H, I, "bf16")[:2])
    x = torch.randn(M, H).to(dtype)
    return plan_fused_moe_decode(x, torch.randn(M, E), w13, w2, k, path=path, workspace=ws, config=config), x


@needs_gluon
def test_bf16_takes_gluon_only_where_listed_or_asked():
    """gluon_bf16_gemms "measured": the token counts GLUON_BF16_TOKENS lists by the size class of the expert's
    weight count and path (and "auto" takes the grouped path where it lists that path's); "always": the pairs
    and grouped paths with H, I multiples of 128; "never": nowhere. FP8's switch does not decide bf16, nor
    bf16's FP8."""
    assert DEFAULT_DECODE_CONFIG.gluon_bf16_gemms == "measured"
    listed = _config(gluon_bf16_tokens={"small": {"pairs": (1,), "grouped": (5,)}})
    taken = {(path, M) for path in ("pairs", "grouped", "chain") for M in range(1, 65)
             if moe_decode.takes_gluon_gemms(M, path, False, 2048, 768, unquantized=True, config=listed)}
    assert taken == {("pairs", 1), ("grouped", 5)}
    # Mixtral-sized experts (4096 x 14336) are of the large class: none listed.
    assert not moe_decode.takes_gluon_gemms(1, "pairs", False, 4096, 14336, unquantized=True, config=listed)
    assert moe_decode.choose_decode_path(5, 128, 8, False, False, None, 2048, 768, config=listed) == "grouped"
    assert moe_decode.choose_decode_path(5, 128, 8, False, False, config=listed) == "chain"  # H and I unknown
    assert moe_decode.choose_decode_path(6, 128, 8, False, False, None, 2048, 768, config=listed) == "chain"
    bf16_only = _config(gluon_bf16_gemms="always", gluon_fp8_gemms="never")
    assert moe_decode.takes_gluon_gemms(7, "grouped", False, 2048, 768, unquantized=True, config=bf16_only)
    assert not moe_decode.takes_gluon_gemms(7, "chain", False, 2048, 768, unquantized=True, config=bf16_only)
    assert not moe_decode.takes_gluon_gemms(1, "pairs", False, 2048, 320, unquantized=True, config=bf16_only)
    assert not moe_decode.takes_gluon_gemms(1, "pairs", True, 2048, 768, config=bf16_only)  # FP8 "never"
    plan, _ = _bf16_plan(1, 16, 4, 256, 384, config=bf16_only)
    assert plan.gemms == "gluon"
    fp8_only = _config(gluon_bf16_gemms="never", gluon_fp8_gemms="always")
    assert _bf16_plan(1, 16, 4, 256, 384, config=fp8_only)[0].gemms == "tl"


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
def test_bf16_gluon_tiles_by_path_and_token_count():
    """gluon_tiles for bf16 / fp16: GLUON_BF16_TILES_AT's by path and token count, else GLUON_TILES' (never the
    FP8 table's, whatever the expert size)."""
    other = _config(gluon_bf16_tiles_at={"pairs": {1: ((64, 4), (128, 5))}})
    assert moe_decode.gluon_tiles("pairs", 1, None, unquantized=True, config=other) == (GluonTile(64, 4),
                                                                                        GluonTile(128, 5))
    assert moe_decode.gluon_tiles("pairs", 2, None, unquantized=True, config=other) == moe_decode.GLUON_TILES["pairs"]
    assert (moe_decode.gluon_tiles("grouped", 8, None, unquantized=True, config=other)
            == moe_decode.GLUON_TILES["grouped"])
    assert moe_decode.gluon_tiles("pairs", 1, None, config=other) != (GluonTile(64, 4), GluonTile(128, 5))


@needs_gluon
@pytest.mark.parametrize("path", ["pairs", "grouped"])
def test_bf16_gluon_plan_routes_first_and_reads_x_and_the_intermediate_unquantized(path):
    """bf16 on the Gluon GEMMs: on the pairs path an x launch that only routes ("route_tokens": no row
    quantized, each token's routing in its own program), on the grouped path the route launch; then gate_up
    reading x itself and writing the bf16 intermediate that down reads, both with BLOCK_SCALED off, down's
    pair rows summed by the reduce launched after it."""
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
def test_real_sm90_compile_of_the_bf16_gemms_leaves_each_wgmma_in_flight(path, dtype):
    """bf16 (and fp16) on the Gluon kernel compiles for sm_90 to wgmma of that type (k16) with no e4m3 anywhere
    and no arrival counter (gate_up quantizes nothing, down's sum is launched apart), each step's wgmma waited
    only after the next step's cp.async tiles; one variant per GEMM."""
    _compile_side()
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
def test_real_sm90_compile_of_the_bf16_gemms_folds_each_step_before_the_next(path):
    """The bf16 GEMMs take the FP8 path's products: in both K loops every wgmma wait is a full one (each step's
    product folded in before the next is issued), none serialized by ptxas."""
    _compile_side()
    kernel = moe_decode.moe_decode_gemm_gluon_kernel
    triton_compat.forget_compiled_variants(triton_compat.unwrap_jit_function(kernel))
    with jitguard.offline(compile=True):
        plan, _ = _bf16_plan(3, 16, 4, 256, 384, path=path)
        for _, launch in plan.launches:
            launch()
    ptx = _compiled_ptx(kernel)
    assert len(ptx) == 2
    for p in ptx:
        assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n8k16\.f32\.bf16\.bf16", p)
        assert ptxas_serialization_notes(p) == []
    assert [sorted(re.findall(r"wgmma\.wait_group\.sync\.aligned (\d+)", p)) for p in ptx] == [["0", "0"], ["0", "0"]]


@needs_gluon
@pytest.mark.parametrize("scheme", ["block", "bf16"], ids=["fp8", "bf16"])
@pytest.mark.parametrize("tiles", [(32, 4, 64, 4), (64, 6, 128, 8), (128, 3, 128, 3)],
                         ids=["32-columns", "64-columns", "128-columns"])
@pytest.mark.parametrize("path", ["pairs", "grouped"])
def test_real_sm90_compile_leaves_no_wgmma_serialized_by_ptxas(path, tiles, scheme):
    """Both Gluon GEMMs as this Triton's ptxas assembles them for sm_90a: no wgmma serialized (C7514 / C7515, which
    ptxas does where registers of a wgmma in flight are read or written: the form with two
    FP8 products in flight was, at every tile), FP8 and bf16, at every tile width."""
    _compile_side()
    config = _tiles(GLUON_BOTH, *tiles)
    kernel = moe_decode.moe_decode_gemm_gluon_kernel
    triton_compat.forget_compiled_variants(triton_compat.unwrap_jit_function(kernel))
    with jitguard.offline(compile=True):
        if scheme == "bf16":
            plan, _ = _bf16_plan(3, 16, 4, 256, 384, path=path, config=config)
        else:
            plan = _plan(3, 16, 4, 256, 384, path=path, config=config)
        for _, launch in plan.launches:
            launch()
    ptx = _compiled_ptx(kernel)
    assert plan.gemms == "gluon" and len(ptx) == 2
    for p in ptx:
        assert ptxas_serialization_notes(p) == []


@needs_gluon
@pytest.mark.parametrize("path,scheme,from_counts", [
    ("grouped", "block", False), ("pairs", "block", False), ("grouped", "bf16", False), ("pairs", "bf16", False),
    ("grouped", "block", True), ("grouped", "bf16", True)],
    ids=["grouped", "pairs", "grouped-bf16", "pairs-bf16", "grouped-tiles-from-counts",
         "grouped-bf16-tiles-from-counts"])
def test_one_gluon_variant_per_gemm_for_m_1_to_64(path, scheme, from_counts):
    """Keys only: over M = 1..64 on either path the Gluon kernel compiles once for gate_up and once for
    down (every token-count integer is in do_not_specialize), tl's decode GEMM never, and the first
    launch once on the pairs path (its routing in programs of their own; with bf16 it only routes); twice on the
    grouped path: its few-token router up to FEW_TOKENS tokens, routers apart past it, or once with the GEMMs'
    token tiles from the route launch's counts from one token (routers apart at every M, nothing aligned). FP8
    block scales and bf16. One tile at every M (no other down stages by token count: the shipped table's are the
    next test's)."""
    _compile_side()
    counts_from = 1 if from_counts else MAX_DECODE_TOKENS + 1
    config = _config(GLUON_BOTH, gluon_tiles_from_counts_min_tokens={"small": counts_from, "large": counts_from},
                     gluon_tiles_at={}, gluon_bf16_tiles_at={})
    for kernel in (moe_decode.moe_decode_gemm_gluon_kernel, moe_decode.moe_decode_route_kernel):
        triton_compat.forget_compiled_variants(triton_compat.unwrap_jit_function(kernel))  # earlier tests' keys
    E, k, H, I = 16, 4, 256, 384
    w13, w2, kw, x, logits, ws = _offline_layer(E, k, H, I, scheme, MAX_DECODE_TOKENS)
    with jitguard.offline(compile=False), jitguard.watch() as rec:
        for M in range(1, MAX_DECODE_TOKENS + 1):
            fused_moe_decode(x[:M], logits[:M], w13, w2, k, workspace=ws, path=path, config=config, **kw)
    # Both paths take 8-row token tiles (GLUON_BLOCK_M), whatever the tile table's block_m.
    assert rec.variants("moe_decode_gemm_gluon_kernel") == 2
    assert rec.variants("moe_decode_gemm_kernel") == 0
    assert rec.variants("moe_decode_route_kernel") == (1 if path == "pairs" or from_counts else 2)


def _keywords(launch) -> dict:
    """The keyword arguments a plan's launch (a functools.partial) will pass."""
    return launch.keywords


@needs_gluon
@pytest.mark.parametrize("scheme", ["block", "bf16"])
def test_tiles_from_counts_route_launch_aligns_nothing_and_the_sum_launch_zeroes_the_counts(scheme):
    """Tiles from counts on the grouped path's Gluon GEMMs: the route launch's routers apart (2 M programs)
    store each expert's pairs in rank order (EXPERT_PAIRS into the workspace's expert_pairs), both GEMMs read the
    workspace's per-expert counts (TILES_FROM_COUNTS, E_POW2 the expert count's power of two) and the top-k sum
    launch zeroes those counts, from gluon_tiles_from_counts_min_tokens tokens for the experts' size class; below
    it, or on the pairs path, none of it."""
    E, k, H, I = 20, 4, 256, 384
    w13, w2, kw, x, logits, ws = _offline_layer(E, k, H, I, scheme, MAX_DECODE_TOKENS)
    config = GLUON_BOTH

    def plan(M, path="grouped"):
        p = plan_fused_moe_decode(x[:M], logits[:M], w13, w2, k, workspace=ws, path=path, config=config, **kw)
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

    # These experts are small (expert_size_class): from counts from the small class's threshold (shipped: 4).
    assert expert_size_class(expert_weight_bytes(H, I, 1)) == "small"
    assert [takes_counts(plan(M)) for M in (1, 3, 4, 5, 8, 16, 64)] == [False, False, True, True, True, True, True]
    config = _config(GLUON_BOTH, gluon_tiles_from_counts_min_tokens={"small": 1, "large": 4})
    assert all(takes_counts(plan(M)) for M in (1, 3, 8, 16, 64))
    assert not takes_counts(plan(3, "pairs"))
    config = _config(GLUON_BOTH, gluon_tiles_from_counts_min_tokens={"small": 65, "large": 1})
    assert not any(takes_counts(plan(M)) for M in (3, 16, 64))


@needs_gluon
@pytest.mark.parametrize("gpu", [None, *moe_decode.GLUON_TILES_ON_GPU])
def test_shipped_choice_compiles_one_gluon_variant_per_gemm_and_path_over_m_1_to_64(gpu, monkeypatch):
    """Keys only, the shipped gluon_fp8_gemms ("measured"), small experts, the H200's tiles (``gpu`` None) or those
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


def _compile_layer(H: int, I: int, path: str = "grouped", config: DecodeConfig = GLUON_ON):
    """One 3-token FP8 block-scaled layer (16 experts, top 4) planned with ``config`` and compiled for sm_90
    offline, the Gluon kernel's earlier variants forgotten first: (plan, the PTX of each Gluon GEMM it compiled)."""
    kernel = moe_decode.moe_decode_gemm_gluon_kernel
    triton_compat.forget_compiled_variants(triton_compat.unwrap_jit_function(kernel))
    with jitguard.offline(compile=True):
        plan = _plan(3, 16, 4, H, I, path=path, config=config)
        for _, launch in plan.launches:
            launch()
    return plan, _compiled_ptx(kernel)


def _is_gate_up(ptx: str) -> bool:
    """Whether a Gluon GEMM's PTX is gate_up's: its silu's exponential."""
    return "ex2.approx" in ptx


@needs_gluon
@pytest.mark.parametrize("scheme", ["block", "bf16"])
def test_real_sm90_compile_of_tiles_from_counts_scans_within_warps_and_keeps_each_wgmma_in_flight(scheme):
    """Tiles from counts: both GEMMs still compile for sm_90 to wgmma left in flight while the next tiles
    land; each program's search of the counts for its tile (a scan and three sums over E) runs in warp shuffles
    with no CTA barrier or shared memory beyond the aligned layout's kernel; the route launch takes the pairs'
    ranks with relaxed atomics and has no arrival (no acq_rel atomic, no last router)."""
    _compile_side()
    E, k, H, I = 20, 4, 256, 384
    w13, w2, kw, x, logits, ws = _offline_layer(E, k, H, I, scheme, MAX_DECODE_TOKENS)
    kernels = (moe_decode.moe_decode_gemm_gluon_kernel, moe_decode.moe_decode_route_kernel)
    ptx = {}
    for from_counts in (False, True):
        counts_from = 1 if from_counts else MAX_DECODE_TOKENS + 1
        config = _config(_tiles(GLUON_BOTH, 32, 4, 64, 4),
                         gluon_tiles_from_counts_min_tokens={"small": counts_from, "large": counts_from})
        for kernel in kernels:
            triton_compat.forget_compiled_variants(triton_compat.unwrap_jit_function(kernel))
        with jitguard.offline(compile=True):
            plan = plan_fused_moe_decode(x[:9], logits[:9], w13, w2, k, workspace=ws, path="grouped", config=config,
                                         **kw)
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
@pytest.mark.parametrize("tiles", [(32, 4, 64, 4), (64, 4, 64, 4), (128, 3, 128, 3)],
                         ids=["32-columns", "64-columns", "128-columns"])
def test_real_sm90_compile_leaves_each_wgmma_in_flight_until_the_next_tiles_land(tiles):
    """Both GEMMs compile for sm_90 to e4m3 wgmma (never converted to f16); in the K loop each step
    waits for its cp.async tiles before it waits for the previous step's wgmma (the MMA runs while
    weights stream); PDL-linked (gate_up lets down start, down the top-k reduce launched after it); no arrival
    counter in either (down quantizes the intermediate, the reduce sums the pair rows)."""
    _compile_side()
    plan, ptx = _compile_layer(256, 384, config=_tiles(GLUON_ON, *tiles))
    assert plan.gemms == "gluon"
    assert len(ptx) == 2, "expected gate_up and down to compile"
    for p in ptx:
        assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k32\.f32\.e4m3\.e4m3", p)
        assert not re.search(r"cvt\.rn\.f16x2\.e4m3x2", p), "FP8 operands converted to f16"
        # The first wait for a wgmma (the K loop's) comes after the wait for the next step's cp.async
        # tiles, issued after that wgmma: the MMA ran while they landed (tl.dot's scaled step waits at once).
        issued_to_wait = p.split("wgmma.wait_group.sync.aligned", 1)[0].rsplit("wgmma.mma_async", 1)[-1]
        assert "cp.async.wait_group" in issued_to_wait
    assert not [p for p in ptx if re.search(r"atom\.global\.(gpu\.acq_rel|acq_rel\.gpu)\.add\.u32", p)]
    if moe_decode.pdl_supported():
        # Both wait for the launch before; gate_up lets down start, down the reduce.
        assert all("griddepcontrol.wait" in p for p in ptx)
        assert {_is_gate_up(p): p.count("griddepcontrol.launch_dependents") for p in ptx} == {True: 1, False: 1}


@needs_gluon
@pytest.mark.skipif(not moe_decode.pdl_supported(), reason="this Triton's launcher has no launch_pdl")
@pytest.mark.parametrize("path", ["pairs", "grouped"])
def test_real_sm90_compile_with_down_weights_before_the_wait(path):
    """With PDL, gate_up waits for the launch before it before it lets down start, and down issues its first weight
    copies before its own wait (down's weights stream while gate_up finishes)."""
    _compile_side()
    _, ptx = _compile_layer(256, 384, path=path)
    gate_up = [p for p in ptx if _is_gate_up(p)]
    down = [p for p in ptx if not _is_gate_up(p)]
    assert len(gate_up) == len(down) == 1
    assert gate_up[0].index("griddepcontrol.wait") < gate_up[0].index("griddepcontrol.launch_dependents")
    assert re.search(r"cp\.async\.c[ag]", down[0][:down[0].index("griddepcontrol.wait")])


@needs_gluon
@pytest.mark.parametrize("path", ["grouped", "pairs"])
def test_real_sm90_compile_with_the_intermediate_quantized_by_down(path):
    """FP8 block scales on the Gluon GEMMs: gate_up's sm_90 code has no group counter (no atomics) and converts
    nothing to e4m3 (it writes bf16); down converts its A to e4m3 and multiplies e4m3 on wgmma, its product still
    in flight until the next tiles land."""
    _compile_side()
    _, compiled = _compile_layer(256, 384, path=path)
    by_role = {_is_gate_up(p): p for p in compiled}
    assert len(by_role) == 2
    to_e4m3 = re.compile(r"cvt\.rn\.satfinite\.e4m3x2")
    gate_up, down = by_role[True], by_role[False]
    assert not re.search(r"atom\.global", gate_up) and not to_e4m3.search(gate_up)
    assert to_e4m3.search(down)
    for p in (gate_up, down):
        assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k32\.f32\.e4m3\.e4m3", p)
        issued_to_wait = p.split("wgmma.wait_group.sync.aligned", 1)[0].rsplit("wgmma.mma_async", 1)[-1]
        assert "cp.async.wait_group" in issued_to_wait


@needs_gluon
@pytest.mark.parametrize("path", ["grouped", "pairs"])
def test_real_sm90_compile_with_stamps_reads_the_global_timer_five_times_and_without_none(path):
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
def test_real_sm90_compile_with_the_top_k_sum_in_a_launch_of_its_own(path):
    """The plan ends with down then the top-k reduce; down has no arrival counter (no atomics) and, PDL-linked,
    lets the reduce start as gate_up lets down start."""
    _compile_side()
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
    reduce, which reads down's pair rows in the activation dtype: the pairs path at 1 token, the grouped path at 8
    and 64."""
    E, k, H, I = 128, 8, 256, 128
    w13, w2, kw, x, logits, ws = _offline_layer(E, k, H, I, "block", MAX_DECODE_TOKENS)
    plan = plan_fused_moe_decode(x[:M], logits[:M], w13, w2, k, workspace=ws, **kw)
    assert (plan.path, plan.gemms) == (path, "gluon")
    names = [name for name, _ in plan.launches]
    assert names[-3:] == ["gate_up", "down", "reduce"]
    down, reduce = (launch for name, launch in plan.launches if name in ("down", "reduce"))
    rows = reduce.args[0]
    assert rows.dtype == x.dtype == torch.bfloat16 and rows.shape == (M * k, H)
    assert down.args[4].data_ptr() == rows.data_ptr()  # down's c is the reduce's input


# ---- on a GPU -------------------------------------------------------------------------------------------

def _replay_gluon_beside_tl(config: DecodeConfig, x, logits, w13, w2, k: int, path: str, gen: torch.Generator,
                            ref_tol: float, **fp8_kw) -> None:
    """The layer on the Gluon GEMMs (``config``, with both GEMM kinds "always") and on tl's (both "never") captured in
    one CUDA graph, then three replays with new tokens and logits: each time the Gluon output within ``ref_tol`` of
    the fp32 reference (activations quantized as the kernels do where ``fp8_kw`` asks for FP8), within 1e-2 of tl's
    on the same inputs, and the routing the call left in the workspace softmax_topk_reference's."""
    M = x.shape[0]
    ws_tl, ws_gl = MoeDecodeWorkspace.for_layer(w13, w2, k), MoeDecodeWorkspace.for_layer(w13, w2, k)
    out_tl, out_gl = torch.empty_like(x), torch.empty_like(x)
    configs = {True: _config(config, gluon_fp8_gemms="always", gluon_bf16_gemms="always"),
               False: _config(config, gluon_fp8_gemms="never", gluon_bf16_gemms="never")}

    def layer(gluon: bool):
        plan = plan_fused_moe_decode(x, logits, w13, w2, k, renormalize=True, workspace=ws_gl if gluon else ws_tl,
                                     out=out_gl if gluon else out_tl, path=path, config=configs[gluon], **fp8_kw)
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
@pytest.mark.parametrize("tiles", [(32, 4, 64, 4), (64, 4, 64, 4), (128, 3, 128, 3), (64, 2, 128, 6), (32, 8, 128, 3),
                                   None, (32, 6, 64, 3)],
                         ids=["32-columns", "64-columns", "128-columns", "mixed", "8-stages", "shipped-tiles",
                              "64-row-down"])
def test_gluon_layer_matches_reference_and_tl_kernel_across_graph_replays(path, M, tiles):
    """FP8 block scales on the grouped and pairs paths, GEMMs on Gluon: each of three graph replays with new
    tokens and logits within 4e-2 of the fp32 reference (activations quantized), and within 1e-2 of
    tl's kernel on the same inputs (H = 384, I = 640: a K loop of 3 and 5 steps, I's last group
    written by four 32-column tiles, two of 64 or one of 128); "shipped-tiles": the shipped tiles with down's stages
    by token count (GLUON_TILES_AT: gate_up 32 x 7 and down 128 x 6 at 1 token, down's 6 stages at 2 tokens and
    4 at 5 on the pairs path, gate_up's 64 columns at 4 and 5; on the grouped down's 128 x 4 at 3 and 4 stages
    at 10-12, gate_up's 4 stages at 7-9 and 8 at 11, both 4 at 17-20)."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    E, k, H, I = 16, 4, 384, 640
    config = GLUON_ON if tiles is None else _tiles(GLUON_ON, *tiles)
    gen = torch.Generator().manual_seed(M)
    x, logits, w13, w2, kw = _fp8_block_layer(M, E, k, H, I, gen, "cuda")
    _replay_gluon_beside_tl(config, x, logits, w13, w2, k, path, gen, 4e-2, **kw)


def test_shipped_fp8_tile_entries_cover_every_table_and_size_class():
    """The GPU test below runs every tile pair the FP8 tables ship, of the H200's tables and every other GPU's, on
    whatever Hopper GPU runs it (a tile's maths does not depend on the GPU that chose it)."""
    entries = {(size_class, path, tiles) for size_class, path, tiles, _M in SHIPPED_FP8_TILE_ENTRIES}
    # Every tile pair the planner picks from a table (not GLUON_TILES' default), on any GPU a table names or none,
    # at any token count, for experts of either size class, is one the GPU test runs.
    for gpu in (None, *moe_decode.GLUON_TILES_ON_GPU):
        for size_class, (H, I) in TILE_TEST_SHAPES.items():
            for path in ("pairs", "grouped"):
                for M in range(1, MAX_DECODE_TOKENS + 1):
                    picked = moe_decode.gluon_tiles(path, M, expert_weight_bytes(H, I, 1), gpu_name=gpu)
                    if picked != moe_decode.GLUON_TILES[path]:
                        pair = tuple((tile.out_n, tile.stages) for tile in picked)
                        assert (size_class, path, pair) in entries, (gpu, size_class, path, M, pair)
    assert {size_class for size_class, *_ in SHIPPED_FP8_TILE_ENTRIES} == set(TILE_TEST_SHAPES) == {"small", "large"}
    for size_class, (H, I) in TILE_TEST_SHAPES.items():
        assert expert_size_class(expert_weight_bytes(H, I, 1)) == size_class


@pytest.mark.gpu
@needs_gluon
@pytest.mark.parametrize("size_class,path,tiles,M", SHIPPED_FP8_TILE_ENTRIES,
                         ids=[f"{c}-{p}-{t[0][0]}x{t[0][1]}-{t[1][0]}x{t[1][1]}-M{M}"
                              for c, p, t, M in SHIPPED_FP8_TILE_ENTRIES])
def test_every_shipped_fp8_gluon_tile_matches_reference_across_graph_replays(size_class, path, tiles, M):
    """Each tile pair of every GPU's FP8 tables (``SHIPPED_FP8_TILE_ENTRIES``), forced on this GPU at the fewest and
    most tokens it is listed at, with experts of its size class (small: H = 384, I = 640; large: H = 2048, I = 1536,
    so the large class's switches apply, tiles from counts from one token among them): three graph replays with new
    inputs, each within 4e-2 of the fp32 reference and 1e-2 of tl's kernel. The
    shipped-tile tests ran the tables of the GPU at hand only, and the large class's never at its size."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    H, I = TILE_TEST_SHAPES[size_class]
    (up_n, up_s), (down_n, down_s) = tiles
    config = _tiles(GLUON_ON, up_n, up_s, down_n, down_s)
    gen = torch.Generator().manual_seed(500 + M)
    x, logits, w13, w2, kw = _fp8_block_layer(M, 16, 4, H, I, gen, "cuda")
    _replay_gluon_beside_tl(config, x, logits, w13, w2, 4, path, gen, 4e-2, **kw)


@pytest.mark.gpu
@needs_gluon
@pytest.mark.parametrize("path,M", [("pairs", 1), ("pairs", 2), ("pairs", 5), ("grouped", 3), ("grouped", 8),
                                    ("grouped", 17), ("grouped", 64)])
@pytest.mark.parametrize("tiles", [None, (32, 6, 64, 3), (64, 2, 128, 8), (128, 3, 128, 7), (32, 5, 64, 4)],
                         ids=["shipped-tiles", "6-and-3-stages", "2-and-8-stages", "128-columns-7-stages",
                              "5-and-4-stages"])
def test_gluon_inter_quantized_by_down_matches_reference_and_tl_across_graph_replays(path, M, tiles):
    """FP8 block scales on the Gluon GEMMs: gate_up writes the bf16 intermediate only and down quantizes each step's
    tile in registers, two steps ahead of its wgmma (2-8 weight stages, K loops of 3 and 5 steps): each of three
    graph replays within 4e-2 of the fp32 reference and 1e-2 of tl's kernel (whose gate_up quantizes the
    intermediate)."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    config = GLUON_ON if tiles is None else _tiles(GLUON_ON, *tiles)
    gen = torch.Generator().manual_seed(100 + M)
    E, k, H, I = 16, 4, 384, 640
    x, logits, w13, w2, kw = _fp8_block_layer(M, E, k, H, I, gen, "cuda")
    _replay_gluon_beside_tl(config, x, logits, w13, w2, k, path, gen, 4e-2, **kw)


@pytest.mark.gpu
@needs_gluon
@pytest.mark.parametrize("scheme", ["block", "bf16"], ids=["fp8-routers-apart", "bf16-routed-in-the-row-program"])
def test_gluon_pairs_routing_breaks_ties_to_the_lower_expert(scheme):
    """Logits on a coarse grid (ties at the k-th place, all-equal rows): the experts the x launch routes
    the Gluon pairs path to are softmax_topk_reference's, lower index first, and the layer matches the
    reference computed with them; FP8 with the routing in programs of its own, bf16 in each token's program."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    E, k, H, I, M = 16, 4, 256, 384, 6
    gen = torch.Generator().manual_seed(7)
    if scheme == "block":
        x, _, w13, w2, kw = _fp8_block_layer(M, E, k, H, I, gen, "cuda")
        ref_quant, tol = {"quantize_activations": True}, 4e-2
    else:
        x, _, w13, w2 = _bf16_layer_on_gpu(M, E, H, I, gen)
        kw, ref_quant, tol = {}, {}, 2e-2
    logits = _tied_logits(M, E, gen).cuda()
    ws = MoeDecodeWorkspace.for_layer(w13, w2, k)
    plan = plan_fused_moe_decode(x, logits, w13, w2, k, renormalize=True, workspace=ws, path="pairs", config=GLUON_BOTH,
                                 **kw)
    assert plan.gemms == "gluon"
    assert ("ROUTERS_APART" in plan.launches[0][1].keywords) == (scheme == "block")
    for _, launch in plan.launches:
        launch()
    torch.cuda.synchronize()
    ref_w, ref_ids = softmax_topk_reference(logits.cpu(), k, True)
    got_w, got_ids = ws.routing(M)
    assert torch.equal(got_ids.cpu(), ref_ids)
    torch.testing.assert_close(got_w.cpu(), ref_w, rtol=1e-5, atol=1e-6)
    ref_kw = {key: v.cpu() if torch.is_tensor(v) else v for key, v in kw.items()}
    ref = fused_moe_decode_reference(x.cpu(), logits.cpu(), w13.cpu(), w2.cpu(), k, renormalize=True, **ref_quant,
                                     **ref_kw)
    assert _rel_err(plan.out, ref) < tol


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
@pytest.mark.parametrize("tiles", [None, (32, 7, 128, 6), (64, 4, 64, 4), (128, 3, 128, 3), (32, 6, 128, 3)],
                         ids=["shipped-tiles", "32x7-128x6", "64-columns", "128-columns", "32x6-128x3"])
def test_bf16_gluon_layer_matches_reference_and_tl_kernel_across_graph_replays(path, M, tiles):
    """bf16 on the Gluon GEMMs (BLOCK_SCALED off): each of three graph replays with new tokens and logits within
    2e-2 of the fp32 reference and within 1e-2 of tl's kernel on the same inputs (H = 384, I = 640: K loops of 6
    and 10 steps of 64 columns, I's last 128 columns in tiles of 32, 64 or 128), and the routing left in the
    workspace softmax_topk_reference's."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    E, k, H, I = 16, 4, 384, 640
    config = GLUON_BOTH if tiles is None else _tiles(GLUON_BOTH, *tiles)
    gen = torch.Generator().manual_seed(100 + M)
    _replay_gluon_beside_tl(config, *_bf16_layer_on_gpu(M, E, H, I, gen), k, path, gen, 2e-2)


@pytest.mark.gpu
@needs_gluon
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
def test_shipped_bf16_choice_through_fused_moe_from_logits_matches_reference(dtype):
    """The shipped bf16 / fp16 choice end to end (gluon_bf16_gemms "measured", small-class experts: 128 experts,
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
def test_gluon_tiles_from_counts_equal_the_aligned_layer_bit_for_bit_across_graph_replays(scheme, M):
    """Tiles from counts from one token (the route launch aligning nothing, each Gluon GEMM program finding its
    token tile from the per-expert counts): the grouped layer with it and without it captured in one CUDA graph,
    then three replays with new tokens and logits: the outputs equal bit for bit (the same pairs in the same tiles,
    each row computed the same), within 4e-2 (FP8 block scales) or 2e-2 (bf16) of the fp32 reference, the routing
    the reference's, and the counters zero after every replay (the sum launch zeroes them for the next call). 16
    experts, top 4: at 64 tokens an expert holds about 16 pairs, two or three token tiles."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    configs = {on: _config(GLUON_BOTH, gluon_tiles_from_counts_min_tokens=dict.fromkeys(
        ("small", "large"), 1 if on else MAX_DECODE_TOKENS + 1)) for on in (False, True)}
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
        plan = plan_fused_moe_decode(x, logits, w13, w2, k, renormalize=True, workspace=workspaces[on], out=outs[on],
                                     path="grouped", config=configs[on], **kw)
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
