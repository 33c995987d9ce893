"""benchmarks/tune_decode_gluon_tiles.py's parts that need no GPU: its arguments and the table it proposes."""

from __future__ import annotations

import dataclasses

import pytest

from jitguard.kernels.moe_decode_gluon import GluonTile
from tests.kernels.benchmark_scripts import load_benchmark_script

tuner = load_benchmark_script("tune_decode_gluon_tiles.py")
BASE = {"pairs": ((32, 6), (128, 3)), "grouped": ((32, 6), (64, 3))}


def _row(M, shipped, best_us, best=((32, 8), (128, 3)), path="pairs", gemms="gluon", size="large", bf16=False):
    return tuner.TunedRow("case", size, path, M, gemms, tuple(shipped), best, tuple(best_us), bf16)


def test_arguments_parse_or_fail_in_one_line_naming_the_option():
    assert tuner.parse_tiles("32x6, 64x4", "--gate-up") == [(32, 6), (64, 4)]
    assert tuner.parse_ms("1-4,8,16") == [1, 2, 3, 4, 8, 16]
    with pytest.raises(SystemExit, match=r"^tune_decode_gluon_tiles: --down: '128' is not OUT_NxSTAGES"):
        tuner.parse_tiles("64x3,128", "--down")
    with pytest.raises(SystemExit, match=r"^tune_decode_gluon_tiles: --ms: 'a-3' is not a token count"):
        tuner.parse_ms("1,a-3")


def test_passes_below_one_is_a_one_line_error(monkeypatch):
    monkeypatch.setattr("sys.argv", ["tune_decode_gluon_tiles.py", "--passes", "0"])
    with pytest.raises(SystemExit, match=r"^tune_decode_gluon_tiles: --passes must be at least 1, got 0$"):
        tuner.main()


def test_gain_is_the_worst_round():
    row = _row(1, (100.0, 100.0, 100.0), (98.0, 99.0, 97.0))
    assert row.gain_percent() == pytest.approx(1.0)
    assert _row(1, (100.0, 100.0), (98.0, 101.0)).gain_percent() == pytest.approx(-1.0)


def test_proposal_enters_only_rows_faster_in_every_round_and_leaves_the_inputs_alone():
    tiles_at = {"large": {"pairs": {2: ((64, 4), (128, 3))}}}
    tokens = {"large": {"pairs": (1, 2), "grouped": (6,)}}
    rows = [
        _row(1, (51.0, 51.2, 51.1), (49.2, 49.4, 49.3)),                      # 3.3% in every round: entered
        _row(2, (90.0, 90.1, 90.0), (89.0, 90.5, 89.0), best=((64, 6), (128, 3))),  # slower in one round: not
        _row(3, (130.0, 130.0, 130.0), (126.0, 126.5, 126.2), best=((32, 8), (64, 3)), path="grouped", gemms="tl"),
    ]
    new_at, new_tokens, changed = tuner.proposal(rows, tiles_at, tokens, BASE, 0.5)
    assert [r.M for r in changed] == [1, 3]
    assert new_at == {"large": {"pairs": {1: ((32, 8), (128, 3)), 2: ((64, 4), (128, 3))},
                                "grouped": {3: ((32, 8), (64, 3))}}}
    # tl's GEMMs shipped at M = 3: the token count joins the Gluon list of its path.
    assert new_tokens == {"large": {"pairs": (1, 2), "grouped": (3, 6)}}
    assert tiles_at == {"large": {"pairs": {2: ((64, 4), (128, 3))}}} and tokens["large"]["grouped"] == (6,)


def test_a_winner_equal_to_the_base_tiles_drops_its_entry():
    tiles_at = {"small": {"grouped": {8: ((32, 4), (64, 3))}}}
    rows = [_row(8, (70.0, 70.0), (68.0, 68.1), best=BASE["grouped"], path="grouped", size="small")]
    new_at, _, changed = tuner.proposal(rows, tiles_at, {}, BASE, 0.5)
    assert len(changed) == 1 and new_at == {"small": {}}


def test_a_gpu_entry_keeps_a_winner_equal_to_the_base_tiles():
    """base_tiles None (one GPU's GLUON_TILES_ON_GPU entry, which falls back to GLUON_TILES_AT's tile, not
    GLUON_TILES'): every winner is entered, the base pair too."""
    rows = [_row(8, (70.0, 70.0), (68.0, 68.1), best=BASE["grouped"], path="grouped", size="small")]
    new_at, _, changed = tuner.proposal(rows, {}, {}, None, 0.5)
    assert len(changed) == 1 and new_at == {"small": {"grouped": {8: BASE["grouped"]}}}


def test_the_shipped_tables_are_what_the_proposal_starts_from():
    """The tuner reads moe_decode's own tables: their shape is the one proposal() copies."""
    from jitguard.kernels import moe_decode

    new_at, new_tokens, changed = tuner.proposal([], moe_decode.GLUON_TILES_AT, moe_decode.GLUON_FP8_TOKENS, BASE, 0.5)
    assert changed == [] and new_at == moe_decode.GLUON_TILES_AT
    assert new_tokens == {size: {path: tuple(ms) for path, ms in paths.items()}
                          for size, paths in moe_decode.GLUON_FP8_TOKENS.items()}


def test_a_bf16_proposal_keys_its_tiles_by_path_alone():
    """bf16 rows (tiles_by_size off): GLUON_BF16_TILES_AT takes the winner by path and M, GLUON_BF16_TOKENS the
    token count by size class and path where tl's GEMMs (the chain) were shipped; the inputs are left alone."""
    tiles_at = {"pairs": {2: ((32, 7), (128, 6))}}
    tokens = {"small": {"pairs": (2,), "grouped": (3,)}}
    rows = [_row(8, (117.0, 117.1), (114.0, 114.2), best=((32, 4), (64, 4)), path="grouped", gemms="tl",
                 size="small", bf16=True),
            _row(2, (40.5, 40.5), (40.4, 40.5), path="pairs", size="small", bf16=True)]  # under 0.5%: not
    new_at, new_tokens, changed = tuner.proposal(rows, tiles_at, tokens, BASE, 0.5, tiles_by_size=False)
    assert [r.M for r in changed] == [8]
    assert new_at == {"pairs": {2: ((32, 7), (128, 6))}, "grouped": {8: ((32, 4), (64, 4))}}
    assert new_tokens == {"small": {"pairs": (2,), "grouped": (3, 8)}}
    assert tiles_at == {"pairs": {2: ((32, 7), (128, 6))}} and tokens["small"]["grouped"] == (3,)


def test_the_shipped_bf16_tables_are_what_its_proposal_starts_from():
    from jitguard.kernels import moe_decode

    new_at, new_tokens, changed = tuner.proposal([], moe_decode.GLUON_BF16_TILES_AT, moe_decode.GLUON_BF16_TOKENS,
                                                 BASE, 0.5, tiles_by_size=False)
    assert changed == [] and new_at == moe_decode.GLUON_BF16_TILES_AT
    assert new_tokens == moe_decode.GLUON_BF16_TOKENS


needs_gluon = pytest.mark.skipif(
    not __import__("jitguard.kernels.moe_decode_gluon", fromlist=["x"]).gluon_gemms_supported(),
    reason="this Triton has no Gluon Hopper wgmma (Triton >= 3.5), or is interpreted")
E, K, H, I = 128, 8, 256, 128  # small experts: the grouped path on Gluon at 8 tokens, tiles from GLUON_TILES_AT
# The stand-in clock: gate_up 64x4 and down 128x4 fastest; 32x8 "fails to compile".
COST = {(32, 4): 3.0, (32, 6): 2.0, (32, 8): None, (64, 4): 1.0, (64, 3): 2.0, (128, 4): 0.5, (128, 3): 1.5}


def _tiles_of(plan):
    return tuple((launch.keywords["OUT_N"], launch.keywords["NUM_STAGES"]) for name, launch in plan.launches
                 if name in ("gate_up", "down") and "OUT_N" in launch.keywords)  # tl's chain GEMMs: none


def _offline_tuning(monkeypatch, max_tokens: int, scheme: str = "block"):
    """A layer the tuner drives through the real planner (CPU tensors, for jitguard.offline keys only), timed
    by a stand-in clock that reads each plan's Gluon tiles (COST; a plan without them, the chain, costs 65):
    (the layer, the tile pairs timed in order). ``scheme`` "block" (FP8 block scales) or "bf16"."""
    from jitguard.kernels import moe_decode
    from tests.kernels.test_moe_decode import _offline_layer

    bfm, tmd = tuner.bfm, tuner.tmd
    w13, w2, kw, x, logits, ws = _offline_layer(E, K, H, I, scheme, max_tokens)

    class Step:
        def __init__(self, plans):
            self.plans = plans

        def __call__(self, i):
            for _, launch in self.plans[i].launches:
                launch()

    class OfflineLayer:
        name, n_layers = "offline", 1

        def __init__(self):
            self.H, self.I = H, I
            self.scheme = None if scheme == "bf16" else scheme  # as bench_fused_moe.CASES name them

        def plans(self, x, logits, out, path, tiles, config=None):
            return [moe_decode.plan_fused_moe_decode(x, logits, w13, w2, K, renormalize=True, workspace=ws, out=out,
                                                     path=path, tile_configs=tiles, config=config or self.config,
                                                     **kw)]

        plans_step = staticmethod(Step)

    timed = []

    def fake_time_graph(step, n_layers, replays, passes=1):
        tiles = _tiles_of(step.plans[0])
        if not tiles:
            return 65.0
        if tiles[0] == (32, 8):
            raise RuntimeError("PTXAS error: stand-in\nmore")
        timed.append(tiles)
        return 60.0 + COST[tiles[0]] + COST[tiles[1]]

    monkeypatch.setattr(bfm, "time_graph", fake_time_graph)
    # The tests' shipped tile at 8 tokens stays 32x4/64x3, whatever later tuning ships: the layer's configuration,
    # which the tuner plans the shipped choice with and starts its candidates from.
    grouped = {**moe_decode.GLUON_TILES_AT["small"]["grouped"], 8: ((32, 4), (64, 3))}
    OfflineLayer.config = dataclasses.replace(
        moe_decode.DEFAULT_DECODE_CONFIG,
        gluon_tiles_at={**moe_decode.GLUON_TILES_AT,
                        "small": {**moe_decode.GLUON_TILES_AT["small"], "grouped": grouped}})
    monkeypatch.setattr(tmd, "inputs", lambda layer, M: (x[:M], logits[:M]))
    monkeypatch.setattr(tmd, "reference", lambda layer, x, logits: None)
    monkeypatch.setattr(tmd, "run_error", lambda layer, plans, out, ref: 0.0)
    return OfflineLayer(), timed


@needs_gluon
def test_tune_m_plans_each_candidate_on_the_shipped_path_and_keeps_the_fastest(monkeypatch):
    """tune_m's three steps through the real planner, timed by the stand-in clock: the fastest gate_up beside
    the shipped down tile, then the fastest down beside it (a second pass beside the new down tile timing only
    pairs not timed yet), then the side-by-side rounds; a tile the stand-in refuses is skipped by name."""
    import jitguard
    from jitguard.kernels import moe_decode

    layer, timed = _offline_tuning(monkeypatch, 8)
    records = []
    with jitguard.offline(compile=False):
        row, line = tuner.tune_m(layer, 8, [(32, 4), (32, 6), (32, 8), (64, 4)], [(64, 3), (128, 3), (128, 4)],
                                 2, records.append)
    assert row.path == "grouped" and row.shipped_gemms == "gluon"
    assert row.best == ((64, 4), (128, 4))
    shipped_down = moe_decode.gluon_tiles("grouped", 8, 3 * H * I, config=layer.config)[1]
    assert timed[:3] == [((32, 4), (shipped_down.out_n, shipped_down.stages)),
                         ((32, 6), (shipped_down.out_n, shipped_down.stages)),
                         ((64, 4), (shipped_down.out_n, shipped_down.stages))]
    # Down beside 64x4: 64x3 (the shipped down) was timed in the gate_up sweep and is not timed again.
    assert shipped_down == GluonTile(64, 3)
    assert timed[3:5] == [((64, 4), (128, 3)), ((64, 4), (128, 4))]
    # The second pass: gate_up beside 128x4 (64x4/128x4 known), then nothing new: the tiles hold.
    assert timed[5:7] == [((32, 4), (128, 4)), ((32, 6), (128, 4))]
    assert len(row.shipped_us) == len(row.best_us) == 2 and row.gain_percent() > 0
    assert records[-1]["step"] == "final" and records[-1]["best"] == ((64, 4), (128, 4))
    assert "| offline | grouped | 8 |" in line and "64x4/128x4" in line


@needs_gluon
def test_a_chain_token_count_is_skipped_or_tuned_on_the_grouped_path_against_the_chain(monkeypatch, capsys):
    """Past the Gluon token counts the shipped choice is the chain (no Gluon GEMMs): skipped by name, or with
    against_chain the grouped path's Gluon tiles tuned and timed against the chain, the row proposing the
    token count for GLUON_FP8_TOKENS."""
    import jitguard
    from jitguard.kernels import moe_decode

    layer, timed = _offline_tuning(monkeypatch, 24)
    # A table whose small experts leave the grouped path on Gluon after 20 tokens (as the shipped one was before
    # the top-k sum launched apart), so that 24 tokens take the chain.
    before = {"pairs": (1, 2, 4, 5), "grouped": (3, *range(7, 21))}
    layer.config = dataclasses.replace(layer.config,
                                       gluon_fp8_tokens={**moe_decode.GLUON_FP8_TOKENS, "small": before})
    with jitguard.offline(compile=False):
        assert moe_decode.choose_decode_path(24, E, K, True, True, 3 * H * I, H, I, config=layer.config) == "chain"
        assert tuner.tune_m(layer, 24, [(64, 4)], [(128, 4)], 2, lambda record: None) is None
        assert "M = 24: the shipped choice takes the chain path (no Gluon GEMMs): skipped" in capsys.readouterr().out
        assert timed == []
        row, line = tuner.tune_m(layer, 24, [(32, 6), (64, 4)], [(128, 4)], 2, lambda record: None,
                                 against_chain=True)
    assert row.path == "grouped" and row.shipped_gemms == "tl" and row.shipped_us == (65.0, 65.0)
    assert row.best == ((64, 4), (128, 4)) and row.gain_percent() == pytest.approx(100 * (65.0 - 61.5) / 65.0)
    assert "| offline | grouped | 24 | chain 65.0 / 65.0 | 64x4/128x4 61.5 / 61.5 |" in line
    _, tokens, changed = tuner.proposal([row], {}, {"small": {"grouped": (3, 16)}}, BASE, 0.5)
    assert changed == [row] and tokens == {"small": {"grouped": (3, 16, 24)}}


@needs_gluon
def test_a_second_pass_finds_tiles_that_only_pay_together(monkeypatch):
    """Coordinate descent (passes): where gate_up 32x6 pays only beside down 128x4 (the stand-in clock's
    interaction), the first pass settles on 64x4/128x4 and the second, gate_up beside 128x4 again, finds
    32x6/128x4; a third pass changes nothing and stops; no pair is timed twice. One pass keeps 64x4/128x4."""
    import jitguard

    layer, timed = _offline_tuning(monkeypatch, 8)
    bonus = {((32, 6), (128, 4)): -5.0}
    fake_time_graph = tuner.bfm.time_graph

    def with_interaction(step, n_layers, replays, passes=1):
        us = fake_time_graph(step, n_layers, replays, passes)
        return us + bonus.get(_tiles_of(step.plans[0]), 0.0)

    monkeypatch.setattr(tuner.bfm, "time_graph", with_interaction)
    ups, downs = [(32, 6), (64, 4)], [(64, 3), (128, 4)]
    with jitguard.offline(compile=False):
        one, _ = tuner.tune_m(layer, 8, ups, downs, 1, lambda record: None, passes=1)
        timed.clear()
        row, _ = tuner.tune_m(layer, 8, ups, downs, 1, lambda record: None, passes=3)
    assert one.best == ((64, 4), (128, 4))
    assert row.best == ((32, 6), (128, 4))
    sweeps = timed[:-3]  # then one round of the three contenders
    assert len(set(sweeps)) == len(sweeps) == 4  # 2 gate_up + 1 down in pass 1, 1 gate_up in pass 2


@needs_gluon
def test_a_bf16_chain_token_count_is_tuned_on_the_grouped_path_against_the_chain(monkeypatch):
    """bf16 (the scheme None of bench_fused_moe.CASES): at 8 tokens the shipped choice is the chain; with
    against_chain the candidates run on the grouped path's Gluon GEMMs (gluon_bf16_gemms "always" while timed: the
    stand-in clock sees their tiles, where the measured table would give the chain's 65) and the row is a bf16 one,
    its proposal for GLUON_BF16_TILES_AT and GLUON_BF16_TOKENS."""
    import jitguard
    from jitguard.kernels import moe_decode

    layer, timed = _offline_tuning(monkeypatch, 8, "bf16")
    with jitguard.offline(compile=False):
        assert moe_decode.choose_decode_path(8, E, K, False, False, None, H, I) == "chain"
        row, _ = tuner.tune_m(layer, 8, [(32, 6), (64, 4)], [(128, 4)], 2, lambda record: None,
                              against_chain=True)
    assert row.bf16 and row.path == "grouped" and row.shipped_gemms == "tl"
    assert row.best == ((64, 4), (128, 4)) and row.best_us == (61.5, 61.5) and row.shipped_us == (65.0, 65.0)
    assert timed[:2] == [((32, 6), (64, 3)), ((64, 4), (64, 3))]  # GLUON_TILES' down first
    new_at, tokens, _ = tuner.proposal([row], moe_decode.GLUON_BF16_TILES_AT, moe_decode.GLUON_BF16_TOKENS, BASE,
                                       0.5, tiles_by_size=False)
    assert new_at["grouped"][8] == ((64, 4), (128, 4)) and 8 in tokens["small"]["grouped"]


def test_vllm_config_reads_the_h200_file_or_this_gpus_as_vllm_does(tmp_path, monkeypatch):
    """bench_fused_moe.vllm_config: the H200's file by default; with JITGUARD_BENCH_VLLM_CONFIG_GPU=this, the file
    named for this GPU, and where there is none vLLM's default config (as vLLM itself would run), the nearest M's row
    of a file."""
    import json
    import types

    bench = load_benchmark_script("bench_fused_moe.py")
    name = "E=128,N=768,device_name={},dtype=fp8_w8a8,block_shape=[128,128].json"
    h200_rows = {"1": {"BLOCK_SIZE_N": 64}, "16": {"BLOCK_SIZE_N": 128}}
    (tmp_path / name.format("NVIDIA_H200")).write_text(json.dumps(h200_rows))
    vllm = types.SimpleNamespace(get_default_config=lambda *args: {"BLOCK_SIZE_N": 32})
    monkeypatch.setattr(bench.torch.cuda, "get_device_name", lambda *args: "NVIDIA H100 80GB HBM3")
    monkeypatch.delenv("JITGUARD_BENCH_VLLM_CONFIG_GPU", raising=False)
    assert bench.vllm_config(str(tmp_path), 128, 768, "block", 12, vllm) == ({"BLOCK_SIZE_N": 128}, "tuned")
    monkeypatch.setenv("JITGUARD_BENCH_VLLM_CONFIG_GPU", "this")
    assert bench.vllm_config(str(tmp_path), 128, 768, "block", 12, vllm) == ({"BLOCK_SIZE_N": 32}, "default")
    (tmp_path / name.format("NVIDIA_H100_80GB_HBM3")).write_text(json.dumps({"8": {"BLOCK_SIZE_N": 256}}))
    assert bench.vllm_config(str(tmp_path), 128, 768, "block", 12, vllm) == ({"BLOCK_SIZE_N": 256}, "tuned")
