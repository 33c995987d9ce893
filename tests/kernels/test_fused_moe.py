"""fused_moe on a CPU-only machine: clear errors, one variant per tile config, real sm_90 compiles.

Variant counts and compiles go through jitguard's offline backend (a fake sm_90 driver): the
kernels are called with CPU tensors through Triton's real binder; launches do nothing.
"""

from __future__ import annotations

import pytest
import torch

import jitguard
from jitguard import triton_compat
from jitguard.kernels import moe_gemm
from jitguard.kernels.moe_chain import fused_moe
from jitguard.kernels.moe_configs import MIN_TOKEN_TILE, MoeTileConfigs, TileConfig, select_tile_configs
from tests.kernels.mma_checks import (
    FP8_N8_CONVERTED,
    assert_fp8_not_converted,
    assert_tokens_in_mma_n_slot,
    ptxas_serialization_notes,
)

FP8 = torch.float8_e4m3fn


def _layer(M=4, E=8, k=2, H=256, I=128, wdtype=torch.bfloat16):
    x = torch.randn(M, H).to(torch.bfloat16)
    w13 = torch.randn(E, 2 * I, H).to(wdtype)
    w2 = torch.randn(E, H, I).to(wdtype)
    tw, ti = torch.topk(torch.randn(M, E).softmax(-1), k)
    return x, w13, w2, tw, ti


# ---- clear errors -------------------------------------------------------------------------------

def _bad_calls():
    x, w13, w2, tw, ti = _layer()
    f13, f2 = w13.to(FP8), w2.to(FP8)
    blk1, blk2 = torch.ones(8, 2, 2), torch.ones(8, 2, 1)
    return {
        "x 3-D": ((x[None], w13, w2, tw, ti), {}, r"x must be \[tokens, hidden\]"),
        "x fp32": ((x.float(), w13, w2, tw, ti), {}, r"x must be bfloat16 or float16"),
        "hidden mismatch": ((x[:, :128], w13, w2, tw, ti), {}, r"w13 \(8, 256, 256\) does not match hidden size 128"),
        "expert count": ((x, w13, w2[:4], tw, ti), {}, r"w13 has 8 experts but w2 has 4"),
        "w2 shape": ((x, w13, w2[:, :, :64], tw, ti), {}, r"w2 must be \[E, 256, 128\]"),
        "fp8 without flag": ((x, f13, f2, tw, ti), {},
                             r"w13 must be torch.bfloat16 to match x .* \(set use_fp8_w8a8=True for FP8 weights\)"),
        "ids rows": ((x, w13, w2, tw, ti[:2]), {}, r"topk_ids must be \[4, top_k\]"),
        "weights shape": ((x, w13, w2, tw[:, :1], ti), {}, r"topk_weights \(4, 1\) and topk_ids \(4, 2\) differ"),
        "ids dtype": ((x, w13, w2, tw, ti.float()), {}, r"topk_ids must be int32 or int64"),
        "missing scale": ((x, f13, f2, tw, ti), {"use_fp8_w8a8": True}, r"w1_scale is required"),
        "tensor scale count": (
            (x, f13, f2, tw, ti), {"use_fp8_w8a8": True, "w1_scale": torch.ones(4), "w2_scale": torch.ones(8)},
            r"per-tensor w1_scale must have one scale per expert \(8\)",
        ),
        "channel scale shape": (
            (x, f13, f2, tw, ti),
            {"use_fp8_w8a8": True, "per_channel_quant": True, "w1_scale": torch.ones(8, 128),
             "w2_scale": torch.ones(8, 256)},
            r"per-channel w1_scale must be \[8, 256\]",
        ),
        "block scale layout": (
            (x, f13, f2, tw, ti),
            {"use_fp8_w8a8": True, "block_shape": [128, 128], "w1_scale": blk1, "w2_scale": blk2.transpose(1, 2)},
            r"block w2_scale must be \[8, 2, 1\] for block_shape \[128, 128\], got shape \(8, 1, 2\)",
        ),
        "scale dtype": (
            (x, f13, f2, tw, ti),
            {"use_fp8_w8a8": True, "w1_scale": torch.ones(8, dtype=torch.float16), "w2_scale": torch.ones(8)},
            r"w1_scale must be float32",
        ),
        "scales without fp8": ((x, w13, w2, tw, ti), {"w1_scale": torch.ones(8)},
                               r"scales were given but use_fp8_w8a8=False"),
        "odd block shape": ((x, f13, f2, tw, ti), {"use_fp8_w8a8": True, "block_shape": [96, 128]},
                            r"block_shape block_n must be a power of two"),
        "bad tile": (
            (x, w13, w2, tw, ti), {"tile_configs": MoeTileConfigs(*(2 * [TileConfig(8, 48, 64, 1, 4, 2, True)]))},
            r"gate_up tile: block_n must be a power of two",
        ),
        "out columns strided": ((x, w13, w2, tw, ti), {"out": torch.empty(x.shape[1], x.shape[0], dtype=x.dtype).t()},
                                r"out must be \(4, 256\) torch.bfloat16 with contiguous rows, got .* strides \(1, 4\)"),
    }


@pytest.mark.parametrize("case", sorted(_bad_calls()))
def test_bad_input_gets_one_line_error(case):
    args, kwargs, pattern = _bad_calls()[case]
    with pytest.raises((ValueError, TypeError), match=pattern) as info:
        fused_moe(*args, **kwargs)
    message = str(info.value)
    assert message.startswith("fused_moe")
    assert "\n" not in message


# ---- one compiled variant per tile config for every M --------------------------------------------

GEMM_KERNEL = "moe_grouped_gemm_kernel"
ONE_VARIANT_KERNELS = [
    "_moe_count_kernel",
    "_moe_block_experts_kernel",
    "_moe_scatter_kernel",
    "moe_topk_reduce_kernel",
]
QUANT_KERNELS = {"tensor": ["_absmax_kernel", "_quant_rows_kernel", "_write_tensor_scale_kernel"],
                 "channel": ["_quant_rows_kernel"], "block": ["_quant_groups_kernel"]}


def _fp8_kwargs(scheme: str, E: int, H: int, I: int) -> dict:
    if scheme == "tensor":
        return {"w1_scale": torch.ones(E), "w2_scale": torch.ones(E)}
    if scheme == "channel":
        return {"per_channel_quant": True, "w1_scale": torch.ones(E, 2 * I), "w2_scale": torch.ones(E, H)}
    return {"block_shape": [128, 128], "w1_scale": torch.ones(E, 2 * I // 128, H // 128),
            "w2_scale": torch.ones(E, H // 128, I // 128)}


@pytest.mark.parametrize(
    "scheme,E,k", [("bf16", 8, 2), ("bf16", 128, 8), ("tensor", 8, 2), ("channel", 128, 8), ("block", 128, 8)]
)
def test_one_variant_per_tile_config_for_m_1_to_8192(scheme, E, k):
    """Keys only: M = 1..8192 must compile exactly one GEMM variant per table row (per GEMM)."""
    H, I, max_m = 256, 128, 8192
    fp8 = scheme != "bf16"
    x = torch.randn(max_m, H).to(torch.bfloat16)
    wdtype = FP8 if fp8 else torch.bfloat16
    w13 = torch.zeros(E, 2 * I, H, dtype=wdtype)
    w2 = torch.zeros(E, H, I, dtype=wdtype)
    tw, ti = torch.topk(torch.randn(max_m, E), k)
    kwargs = dict(_fp8_kwargs(scheme, E, H, I), use_fp8_w8a8=True) if fp8 else {}
    helpers = ONE_VARIANT_KERNELS + (QUANT_KERNELS[scheme] if fp8 else [])
    with jitguard.offline(compile=False), jitguard.watch() as rec:
        fused_moe(x[:1], w13, w2, tw[:1], ti[:1], **kwargs)
        # A helper kernel may have one variant per call site (quantizing x and the intermediate);
        # no token count may add another.
        after_first_call = {name: rec.variants(name) for name in helpers}
        for M in range(2, max_m + 1):
            fused_moe(x[:M], w13, w2, tw[:M], ti[:M], **kwargs)
    precision = "bf16" if not fp8 else "fp8-block" if scheme == "block" else "fp8"
    rows = {select_tile_configs(M, E, precision) for M in range(1, max_m + 1)}
    assert len(rows) >= 3, "the sweep should cross several table rows"
    # gate_up and down are one kernel with different constexprs: one variant per distinct tile of
    # each GEMM (two rows may share a down tile).
    tiles = len({r.gate_up for r in rows}) + len({r.down for r in rows})
    assert rec.variants(GEMM_KERNEL) == tiles, [e.causes for e in rec.events if e.kernel == GEMM_KERNEL]
    for name in helpers:
        assert 1 <= after_first_call[name] <= 2, name
        assert rec.variants(name) == after_first_call[name], (name, [e.causes for e in rec.events if e.kernel == name])
    for name in ONE_VARIANT_KERNELS:
        assert rec.variants(name) == 1, name


# ---- real offline compiles, and what the swap path compiles to ----------------------------------

def _gemm_compiled_kernels() -> dict[int, object]:
    jit_fn = triton_compat.unwrap_jit_function(moe_gemm.moe_grouped_gemm_kernel)
    return {id(k): k for cache in triton_compat.all_kernel_caches(jit_fn) for k in cache.values()}


PATHS = {
    # name: (weight scheme, tile); every quantization scheme, both swap settings between them.
    "bf16-swap8": ("bf16", TileConfig(MIN_TOKEN_TILE, 64, 128, 1, 4, 3, True)),
    "bf16-noswap": ("bf16", TileConfig(64, 64, 64, 4, 4, 3, False)),
    "fp8-block-swap16": ("block", TileConfig(16, 64, 128, 1, 4, 3, True)),
    # 256 deep: two 128-deep scale groups per iteration (K_UNROLL), still wgmma on e4m3
    "fp8-block-swap16-256deep": ("block", TileConfig(16, 64, 256, 1, 4, 2, True)),
    "fp8-channel-swap8": ("channel", TileConfig(MIN_TOKEN_TILE, 64, 128, 1, 4, 3, True)),
    "fp8-tensor-noswap": ("tensor", TileConfig(64, 64, 128, 4, 4, 3, False)),
}


@pytest.mark.parametrize("path", [pytest.param(p, marks=FP8_N8_CONVERTED) if p == "fp8-channel-swap8" else p
                                  for p in sorted(PATHS)])
def test_real_sm90_compile_of_each_path(path):
    scheme, tile = PATHS[path]
    E, H, I = 8, 256, 128
    fp8 = scheme != "bf16"
    x, w13, w2, tw, ti = _layer(M=3, E=E, H=H, I=I, wdtype=FP8 if fp8 else torch.bfloat16)
    kwargs = dict(_fp8_kwargs(scheme, E, H, I), use_fp8_w8a8=True) if fp8 else {}
    before = _gemm_compiled_kernels()
    with jitguard.offline(compile=True), jitguard.watch() as rec:
        fused_moe(x, w13, w2, tw, ti, tile_configs=MoeTileConfigs(tile, tile), **kwargs)
    assert rec.variants(GEMM_KERNEL) == 2
    new = [k for key, k in _gemm_compiled_kernels().items() if key not in before]
    ptxs = [k.asm["ptx"] for k in new]
    assert len(ptxs) == 2, "expected the gate_up and down GEMMs to compile to PTX"
    # ptxas keeps each wgmma pipelined (none serialized: C7514 / C7515 and the like).
    assert [ptxas_serialization_notes(ptx) for ptx in ptxs] == [[], []]
    # Last, so that the one failure FP8_N8_CONVERTED expects comes after every other check: FP8 runs on e4m3
    # tensor cores, no f16 detour; tokens sit in the MMA's N slot (n8 / n16).
    for ptx in ptxs:
        if fp8:
            assert_fp8_not_converted(ptx)
        if tile.swap_ab:
            assert_tokens_in_mma_n_slot(ptx, tile.block_m, "e4m3" if fp8 else "bf16")


# ---- the tuning script's table writer -------------------------------------------------------------

def _tune_module():
    from tests.kernels.benchmark_scripts import load_benchmark_script

    return load_benchmark_script("tune_fused_moe.py")


def _load_configs(path):
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("moe_configs_written", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def test_token_tiles_fit_a_triton_whose_dot_takes_16_at_least(monkeypatch):
    """Where tl.dot takes no operand under 16 (Triton < 3.3), every table row runs with 16-token tiles
    (the rest of the tile as the table has it) and an explicit 8-token tile is refused in one line."""
    from jitguard.kernels import moe_configs

    assert moe_configs.MIN_TOKEN_TILE in (8, 16)
    eight = select_tile_configs(1, 128, "bf16")
    assert eight.block_m == moe_configs.MIN_TOKEN_TILE
    monkeypatch.setattr(moe_configs, "MIN_TOKEN_TILE", 16)
    for precision in moe_configs.PRECISIONS:
        for E in (8, 128):
            for M in range(1, 65):
                for cfgs in (select_tile_configs(M, E, precision),
                             moe_configs.select_decode_tile_configs(M, E, precision, 4 << 20)):
                    assert cfgs.gate_up.block_m == cfgs.down.block_m >= 16, (precision, E, M, cfgs)
    widened = select_tile_configs(1, 128, "bf16")
    assert (widened.gate_up.block_n, widened.down.swap_ab) == (eight.gate_up.block_n, eight.down.swap_ab)
    with pytest.raises(ValueError, match=r"^here: block_m must be >= 16 on Triton .*got 8$"):
        TileConfig(8, 64, 128, 1, 4, 3, True).check("here")


def test_tune_write_table_swaps_only_where_swap_beat_its_twin(tmp_path):
    """write-table turns timings into table rows: fastest tile per GEMM, swap only when it beat its twin."""
    from pathlib import Path

    from jitguard.kernels import moe_configs

    tune = _tune_module()
    T = tune.Tile
    timings = {  # (tile, gate_up us, down us) at Qwen3-like M=1; vLLM: 16 / 10 us
        T(8, 64, 128, 1, 4, 3, True): (14.0, 9.0),   # swap fastest for both GEMMs ...
        T(8, 64, 128, 1, 4, 3, False): (None, 9.5),  # ... but its twin was only timed for down
        T(8, 32, 128, 1, 4, 4, False): (15.0, 9.8),
        T(8, 32, 128, 1, 4, 3, False): (15.0, 9.9),  # exact tie with the s4 tile: fewer stages wins
    }
    ours = {}
    for tile, (g1, g2) in timings.items():
        entry = {"tile": tile.__dict__}
        entry.update({k: v for k, v in (("g1", g1), ("g2", g2)) if v is not None})
        ours[tile.label()] = entry
    cur = tune.current_tiles("qwen3-30b-bf16", 1, moe_configs)
    result = {"points": {"qwen3-30b-bf16|1": {"case": "qwen3-30b-bf16", "M": 1, "ours": ours, "vllm": [16.0, 10.0],
                                              "current": [cur[0].label(), cur[1].label()]}}}
    configs = tmp_path / "moe_configs.py"
    configs.write_text(Path(moe_configs.__file__).read_text())
    summary = tune.write_table(result, configs)
    written = _load_configs(configs)

    row = written.select_tile_configs(1, 128, "bf16")
    assert row.gate_up == written.TileConfig(8, 32, 128, 1, 4, 3, False), summary
    assert row.down == written.TileConfig(8, 64, 128, 1, 4, 3, True), summary
    # Rows no point decided keep their tiles; other classes are untouched.
    # (two modules, two classes: compare as text)
    assert repr(written.select_tile_configs(2, 128, "bf16")) == repr(moe_configs.select_tile_configs(2, 128, "bf16"))
    assert repr(written.TILE_TABLE[("fp8", "many")]) == repr(moe_configs.TILE_TABLE[("fp8", "many")])
    assert "qwen3-30b-bf16 M=1: 15.0/9.0 us (vLLM 16.0/10.0)" in configs.read_text()
    # Every other row keeps its source line and its comments as written (hand-set notes included).
    before = Path(moe_configs.__file__).read_text().splitlines()
    after = configs.read_text().splitlines()
    gone = [line for line in before if line not in after]
    assert len(gone) == 2 and all("qwen3-30b-bf16 M=1" in line or line.strip().startswith("(1,") for line in gone), gone
