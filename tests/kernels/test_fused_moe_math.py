"""fused_moe maths against the plain-torch reference, on small shapes.

One parametrised body per check, two backends (marker ``interpreter``, every test here): on the
CPU under TRITON_INTERPRET=1 (``TRITON_INTERPRET=1 pytest -m interpreter tests/kernels``, a step
of tests/run.sh), or on a GPU; without either they skip.

Under the interpreter, FP8 activation quantization goes through the torch twin of the kernel:
the interpreter's fp32 -> e4m3 cast is wrong (triton#8322), so only the GPU run checks the
quantization kernels' numerics end to end; ``test_quant_kernels_layout`` checks their layout on
both backends with a tolerance the interpreter meets.
"""

from __future__ import annotations

import pytest
import torch

from jitguard.kernels import moe_chain as fm
from jitguard.kernels.moe_align import moe_align_block_size, moe_align_reference
from jitguard.kernels.moe_configs import MoeTileConfigs, TileConfig
from jitguard.kernels.moe_quant import quantize_fp8, quantize_fp8_reference
from tests.kernel_maths_device import INTERPRETED, maths_device

pytestmark = pytest.mark.interpreter

# (M, E, top_k, H, I): decode and a few tokens per expert, non-multiple-of-tile sizes included.
SHAPES = [(1, 8, 2, 128, 64), (5, 8, 2, 192, 96), (19, 16, 4, 128, 48)]
TILES = {
    "swap8": TileConfig(8, 64, 64, 1, 4, 2, True),
    "swap16": TileConfig(16, 64, 128, 2, 4, 2, True),
    "noswap": TileConfig(16, 32, 64, 2, 4, 2, False),
}


def _device() -> str:
    return maths_device()


def _routing(M: int, E: int, k: int, device: str, gen: torch.Generator):
    logits = torch.randn(M, E, generator=gen)
    weights, ids = torch.topk(torch.softmax(logits, dim=-1), k)
    return weights.to(device), ids.to(torch.int32).to(device)


def _bf16_layer(M: int, E: int, k: int, H: int, I: int, device: str, gen: torch.Generator):
    """x [M, H], w13 [E, 2I, H], w2 [E, H, I] (bf16) and (topk_weights, topk_ids), drawn from ``gen`` in that order."""
    x = torch.randn(M, H, generator=gen).to(torch.bfloat16).to(device)
    w13 = (torch.randn(E, 2 * I, H, generator=gen) / H**0.5).to(torch.bfloat16).to(device)
    w2 = (torch.randn(E, H, I, generator=gen) / I**0.5).to(torch.bfloat16).to(device)
    return (x, w13, w2, *_routing(M, E, k, device, gen))


def _quantize_weight(w: torch.Tensor, scheme: str):
    """Weights to e4m3 with upstream's scale layouts (torch's cast is exact)."""
    if scheme == "tensor":
        s = w.abs().amax(dim=(1, 2)) / 448.0
        return (w / s[:, None, None]).to(torch.float8_e4m3fn), s
    if scheme == "channel":
        s = w.abs().amax(dim=2) / 448.0
        return (w / s[:, :, None]).to(torch.float8_e4m3fn), s
    E, R, K = w.shape
    blocks = w.view(E, R // 128, 128, K // 128, 128)
    s = blocks.abs().amax(dim=(2, 4)) / 448.0
    return (blocks / s[:, :, None, :, None]).view(E, R, K).to(torch.float8_e4m3fn), s


def _rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    assert torch.isfinite(out).all(), "non-finite output"
    return float((out.float() - ref).norm() / ref.norm())


@pytest.mark.parametrize("M,E,k", [(1, 8, 2), (7, 8, 2), (40, 16, 4), (3, 64, 8)])
@pytest.mark.parametrize("block", [8, 16, 64])
def test_alignment_groups_every_pair_by_expert(M, E, k, block):
    device = _device()
    gen = torch.Generator().manual_seed(M * 100 + block)
    _, ids = _routing(M, E, k, device, gen)
    r = moe_align_block_size(ids, E, block)
    used = int(r.num_padded.item())
    sorted_ids = r.sorted_ids.tolist()
    expert_ids = r.expert_ids.tolist()
    got: dict[int, list[int]] = {}
    for pos in range(used):
        if sorted_ids[pos] < M * k:
            got.setdefault(expert_ids[pos // block], []).append(sorted_ids[pos])
    assert {e: sorted(v) for e, v in got.items()} == moe_align_reference(ids.cpu(), E, block)
    assert used % block == 0
    assert all(s == M * k for s in sorted_ids[used:]), "padding must hold the sentinel"
    assert all(e == -1 for e in expert_ids[used // block:]), "unused blocks must be labelled -1"


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "M{}_E{}_k{}_H{}_I{}".format(*s))
@pytest.mark.parametrize("tile", sorted(TILES))
def test_bf16_matches_reference(shape, tile):
    device = _device()
    M, E, k, H, I = shape
    gen = torch.Generator().manual_seed(sum(shape))
    x, w13, w2, tw, ti = _bf16_layer(M, E, k, H, I, device, gen)
    ref = fm.fused_moe_reference(x, w13, w2, tw, ti)
    cfg = TILES[tile]
    out = torch.full_like(x, float("nan"))
    fm.fused_moe(x, w13, w2, tw, ti, tile_configs=MoeTileConfigs(cfg, cfg), out=out)
    assert _rel_err(out, ref) < 1.5e-2


def test_bf16_dropped_experts_contribute_nothing():
    """Ids outside [0, E) (experts of another rank) are skipped, not read out of bounds."""
    device = _device()
    M, E, k, H, I = 6, 8, 2, 128, 64
    gen = torch.Generator().manual_seed(7)
    x, w13, w2, tw, ti = _bf16_layer(M, E, k, H, I, device, gen)
    ti[::2, 1] = -1
    ti[1, 0] = E + 3
    ref = fm.fused_moe_reference(x, w13, w2, tw, ti)
    out = fm.fused_moe(x, w13, w2, tw, ti)
    assert _rel_err(out, ref) < 1.5e-2


def test_bf16_strided_out_and_routing_give_the_contiguous_result():
    """``out`` a view with a row stride of its own and routing tensors stored transposed: the same
    output bit for bit (dropped experts included), and nothing written outside ``out``."""
    device = _device()
    M, E, k, H, I = 5, 8, 2, 128, 64
    gen = torch.Generator().manual_seed(8)
    x, w13, w2, tw, ti = _bf16_layer(M, E, k, H, I, device, gen)
    ti[1, 1] = -1
    want = fm.fused_moe(x, w13, w2, tw, ti)
    wide = torch.zeros(M, 2 * H, dtype=torch.bfloat16, device=device)
    fm.fused_moe(x, w13, w2, tw.t().contiguous().t(), ti.t().contiguous().t(), out=wide[:, :H])
    assert torch.equal(wide[:, :H], want)
    assert wide[:, H:].count_nonzero() == 0


def _use_reference_quantizer(monkeypatch) -> None:
    if not INTERPRETED:
        return

    def torch_quantizer(x, mode, *, group_size=128, static_scale=None, row_expert_ids=None, num_experts=0):
        return quantize_fp8_reference(x, mode, group_size=group_size, static_scale=static_scale)

    monkeypatch.setattr(fm, "quantize_fp8", torch_quantizer)


@pytest.mark.parametrize("scheme", ["tensor", "channel", "block"])
@pytest.mark.parametrize("tile", ["swap8", "noswap"])
def test_fp8_matches_reference(scheme, tile, monkeypatch):
    device = _device()
    _use_reference_quantizer(monkeypatch)
    M, E, k, H, I = 5, 8, 2, 256, 128
    gen = torch.Generator().manual_seed(11)
    x = torch.randn(M, H, generator=gen).to(torch.bfloat16).to(device)
    w13, s1 = _quantize_weight(torch.randn(E, 2 * I, H, generator=gen) / H**0.5, scheme)
    w2, s2 = _quantize_weight(torch.randn(E, H, I, generator=gen) / I**0.5, scheme)
    w13, s1, w2, s2 = (t.to(device) for t in (w13, s1, w2, s2))
    tw, ti = _routing(M, E, k, device, gen)
    kw = {"per_channel_quant": scheme == "channel", "block_shape": [128, 128] if scheme == "block" else None}
    cfg = TILES[tile]
    out = fm.fused_moe(
        x, w13, w2, tw, ti, use_fp8_w8a8=True, w1_scale=s1, w2_scale=s2,
        tile_configs=MoeTileConfigs(cfg, cfg), **kw,
    )
    emulated = fm.fused_moe_reference(
        x, w13, w2, tw, ti, use_fp8_w8a8=True, w1_scale=s1, w2_scale=s2, quantize_activations=True, **kw
    )
    exact = fm.fused_moe_reference(x, w13, w2, tw, ti, use_fp8_w8a8=True, w1_scale=s1, w2_scale=s2, **kw)
    # Against the same activation quantization: only accumulation order and an occasional
    # neighbouring e4m3 rounding differ. Against unquantized activations: e4m3's 3-bit mantissa.
    assert _rel_err(out, emulated) < 4e-2
    assert _rel_err(out, exact) < 8e-2


# (M, H, I, block_k): K = 384 and I = 320 leave the last iteration's second step past K (its tiles
# read 0, its scales the last group's); 512-deep tiles over H = 640 leave three.
@pytest.mark.parametrize("M,H,I,block_k", [(5, 384, 320, 256), (3, 640, 256, 512)])
def test_fp8_block_tiles_deeper_than_a_group_equal_128_deep_tiles(M, H, I, block_k, monkeypatch):
    """FP8 block scales with a tile block_k of 256 or 512: each iteration runs block_k / 128 steps
    of one scale group each, in the order of 128-deep tiles, so the layer is the same bit for bit;
    a step with another group's scale or a lost tail step would move it by far more."""
    device = _device()
    _use_reference_quantizer(monkeypatch)
    E, k = 8, 2
    gen = torch.Generator().manual_seed(H + I)
    x = (torch.randn(M, H, generator=gen) * torch.linspace(0.1, 4.0, H)).to(torch.bfloat16).to(device)

    def weights(rows: int, cols: int):
        padded = torch.zeros(E, -(-rows // 128) * 128, -(-cols // 128) * 128)
        padded[:, :rows, :cols] = torch.randn(E, rows, cols, generator=gen) / cols**0.5
        w, s = _quantize_weight(padded, "block")
        return w[:, :rows, :cols].contiguous().to(device), s.to(device)

    (w13, s1), (w2, s2) = weights(2 * I, H), weights(H, I)
    tw, ti = _routing(M, E, k, device, gen)
    outs = []
    for depth in (128, block_k):
        tile = TileConfig(16, 64, depth, 1, 4, 2, True)
        outs.append(fm.fused_moe(x, w13, w2, tw, ti, use_fp8_w8a8=True, block_shape=[128, 128], w1_scale=s1,
                                 w2_scale=s2, tile_configs=MoeTileConfigs(tile, tile)).float())
    assert torch.equal(outs[1], outs[0]), _rel_err(outs[1], outs[0])
    emulated = fm.fused_moe_reference(x, w13, w2, tw, ti, use_fp8_w8a8=True, block_shape=[128, 128], w1_scale=s1,
                                      w2_scale=s2, quantize_activations=True)
    assert _rel_err(outs[1], emulated) < 4e-2


@pytest.mark.parametrize("mode", ["tensor", "row", "group"])
def test_quant_kernels_layout(mode):
    device = _device()
    gen = torch.Generator().manual_seed(3)
    x = (torch.randn(6, 384, generator=gen) * torch.linspace(0.1, 4, 384)).to(torch.bfloat16).to(device)
    q, s = quantize_fp8(x, mode, group_size=128)
    q_ref, s_ref = quantize_fp8_reference(x, mode, group_size=128)
    assert s.shape == s_ref.shape
    torch.testing.assert_close(s, s_ref, rtol=1e-6, atol=0)
    # e4m3 codes of the same sign are consecutive integers: allow one code of rounding difference
    # (the kernel may divide with an approximate reciprocal). The interpreter's cast also loses
    # rounding carries and mishandles subnormals, so there only most codes must agree.
    code_diff = (q.view(torch.int8).int() - q_ref.view(torch.int8).int()).abs()
    within_one = float((code_diff <= 1).float().mean())
    assert within_one >= (0.9 if INTERPRETED else 1.0)

