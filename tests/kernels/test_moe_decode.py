"""The decode MoE layer (kernels/moe_decode.py) and softmax top-k routing (kernels/moe_routing.py).

Maths (``test_math_*``, marker ``interpreter``): one parametrised body per check, two backends: on
the CPU under TRITON_INTERPRET=1 (``TRITON_INTERPRET=1 pytest -m interpreter tests/kernels``, a
step of tests/run.sh), or on a GPU; without either they skip. The interpreter's fp32 -> e4m3
cast is wrong (triton#8322, about 9% relative error against torch's 2.6% on random data), and
the decode path quantizes inside its GEMMs, so under the interpreter the FP8 cases check plumbing
(scale layouts, indexing) with a loose bound; on a GPU they check numerics.

Compile-side checks (variant counts, real sm_90 compiles, PTX) and input errors run without the
interpreter, through jitguard's offline backend.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from typing import ClassVar

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from triton.runtime.jit import JITFunction

import jitguard
from jitguard import triton_compat
from jitguard.kernels import moe_configs, moe_decode, moe_dispatch, moe_gemm, moe_quant
from jitguard.kernels.moe_align import moe_align_reference
from jitguard.kernels.moe_chain import fused_moe
from jitguard.kernels.moe_configs import (
    MIN_TOKEN_TILE,
    MoeTileConfigs,
    TileConfig,
    expert_weight_bytes,
    select_decode_tile_configs,
)
from jitguard.kernels.moe_decode import (
    DEFAULT_DECODE_CONFIG,
    MAX_DECODE_TOKENS,
    MoeDecodeWorkspace,
    choose_decode_path,
    fused_moe_decode_reference,
)
from jitguard.kernels.moe_dispatch import from_logits_takes_decode
from jitguard.kernels.moe_routing import softmax_topk, softmax_topk_reference
from tests.kernel_maths_device import INTERPRETED, maths_device
from tests.kernels.mma_checks import (
    FP8_N8_CONVERTED,
    assert_tokens_in_mma_n_slot,
    ptxas_serialization_notes,
)

FP8 = torch.float8_e4m3fn


# These tests are about tl's decode GEMM (moe_decode_gemm_kernel) and the paths around it: every layer call here
# takes TL_GEMMS. The GEMMs in Gluon, which the shipped configuration takes at some token counts, have tests of
# their own (test_moe_decode_gluon.py, the shipped choice included).
TL_GEMMS = dataclasses.replace(DEFAULT_DECODE_CONFIG, gluon_fp8_gemms="never", gluon_bf16_gemms="never")
# ... and with the route launch's routers apart from the rows' programs at every token count (no few-token router).
ROUTERS_APART = dataclasses.replace(TL_GEMMS, few_elements=0)
fused_moe_decode = functools.partial(moe_decode.fused_moe_decode, config=TL_GEMMS)
plan_fused_moe_decode = functools.partial(moe_decode.plan_fused_moe_decode, config=TL_GEMMS)
fused_moe_from_logits = functools.partial(moe_dispatch.fused_moe_from_logits, config=TL_GEMMS)


def _device() -> str:
    return maths_device()


def _compile_side() -> None:
    if INTERPRETED:
        pytest.skip("compile-side test: needs Triton's compiler, not the interpreter")


def _rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    assert torch.isfinite(out).all(), "non-finite output"
    return float((out.float().cpu() - ref.cpu()).norm() / ref.norm())


def _tied_logits(M: int, E: int, gen: torch.Generator) -> torch.Tensor:
    """Logits on a coarse grid (many exact ties, at the k-th place too), plus all-equal rows."""
    logits = torch.randint(0, 4, (M, E), generator=gen).float() * 0.5
    logits[0] = 1.0
    if M > 2:
        logits[2, : E // 2] = float("-inf")  # masked experts: still ranked, never chosen first
    return logits


# ---- maths ----------------------------------------------------------------------------------------

@pytest.mark.interpreter
@pytest.mark.parametrize("E,k", [(8, 2), (60, 6), (128, 8), (160, 8)])
@pytest.mark.parametrize("renormalize", [False, True])
@pytest.mark.parametrize("logit_dtype", [torch.float32, torch.bfloat16])
def test_math_routing_matches_reference_with_ties(E, k, renormalize, logit_dtype):
    """Every routing kernel picks the reference's experts, in its order, ties to the lower index."""
    device = _device()
    gen = torch.Generator().manual_seed(E * 10 + k)
    M = 7
    logits = torch.cat([_tied_logits(M, E, gen), torch.randn(M, E, generator=gen)]).to(logit_dtype)
    ref_w, ref_ids = softmax_topk_reference(logits, k, renormalize)
    w, ids = softmax_topk(logits.to(device), k, renormalize)
    assert torch.equal(ids.cpu(), ref_ids)
    torch.testing.assert_close(w.cpu(), ref_w, rtol=2e-6, atol=1e-7)
    H, I = 32, 16
    x = torch.randn(2 * M, H, generator=gen).to(torch.bfloat16).to(device)
    w13 = torch.zeros(E, 2 * I, H, dtype=torch.bfloat16, device=device)
    w2 = torch.zeros(E, H, I, dtype=torch.bfloat16, device=device)
    if logit_dtype != torch.float32 or not renormalize or E == 128:
        # The decode kernels route through the same softmax_topk_row: one variant covers them, and
        # the expert counts below and above 128 cover its masking (128 is a whole power of two).
        return
    # The decode paths route inside their first launch; they make the same choice. The tied rows
    # and two more (nine tokens: past the route launch's one-program path, so both paths route
    # through softmax_topk_row; the pairs path's own slot lookup is checked up to 60 experts).
    rows = M + 2
    ws = MoeDecodeWorkspace.for_layer(w13, w2, k)
    for path in ("grouped", "pairs") if E <= 60 else ("grouped",):
        ws.topk_ids.fill_(-1)
        fused_moe_decode(x[:rows], logits[:rows].to(device), w13, w2, k, renormalize=renormalize, workspace=ws,
                         path=path)
        dw, dids = ws.routing(rows)
        assert torch.equal(dids.cpu(), ref_ids[:rows]), path
        torch.testing.assert_close(dw.cpu(), ref_w[:rows], rtol=2e-6, atol=1e-7)


@pytest.mark.interpreter
def test_math_argmax_fallback_picks_the_same_experts(monkeypatch):
    """The selection used on Triton without tl.topk (successive argmaxes) agrees with the reference."""
    if not INTERPRETED:
        pytest.skip("switches a kernel global, which only the interpreter reads at run time")
    from jitguard.kernels import moe_routing

    monkeypatch.setattr(moe_routing, "_HAS_TOPK", False)
    gen = torch.Generator().manual_seed(3)
    for E, k in [(8, 2), (128, 8), (160, 8)]:
        logits = torch.cat([_tied_logits(5, E, gen), torch.randn(5, E, generator=gen)])
        ref_w, ref_ids = softmax_topk_reference(logits, k, True)
        w, ids = softmax_topk(logits, k, True)
        assert torch.equal(ids, ref_ids), E
        torch.testing.assert_close(w, ref_w, rtol=2e-6, atol=1e-7)


@pytest.mark.interpreter
def test_math_tie_rule_is_lower_index_first():
    """The documented rule on the example where torch.topk on the CPU picks [1, 6, 4]."""
    device = _device()
    logits = torch.tensor([[1.0, 3.0, 3.0, 2.0, 3.0, 0.0, 3.0]])
    _, ids = softmax_topk(logits.to(device), 3)
    assert ids.cpu().tolist() == [[1, 2, 4]]
    assert softmax_topk_reference(logits, 3)[1].tolist() == [[1, 2, 4]]


def _layer(M, E, k, H, I, gen, device):
    x = torch.randn(M, H, generator=gen).to(torch.bfloat16).to(device)
    logits = torch.randn(M, E, generator=gen).to(device)
    w13 = (torch.randn(E, 2 * I, H, generator=gen) / H**0.5).to(torch.bfloat16).to(device)
    w2 = (torch.randn(E, H, I, generator=gen) / I**0.5).to(torch.bfloat16).to(device)
    return x, logits, w13, w2


# (M, E, top_k, H, I): one token, a few, more pairs than one tile, the largest decode M.
SHAPES = [(1, 8, 2, 128, 64), (5, 8, 2, 192, 96), (19, 16, 4, 128, 48), (64, 8, 2, 64, 32)]
TILES = {
    "bm8-noswap": TileConfig(8, 32, 64, 1, 4, 2, False),
    "bm16-swap": TileConfig(16, 64, 64, 1, 4, 2, True),
}


@pytest.mark.interpreter
# The pairs path (one program per pair, each routing itself, the slowest under the interpreter) on
# the shapes up to 5 tokens, where choose_decode_path takes it.
@pytest.mark.parametrize("shape,tile,path", [(shape, tile, "grouped") for shape in SHAPES for tile in sorted(TILES)]
                         + [(shape, "bm16-swap", "pairs") for shape in SHAPES if shape[0] <= 5],
                         ids=lambda v: "M{}_E{}_k{}_H{}_I{}".format(*v) if isinstance(v, tuple) else str(v))
def test_math_bf16_layer_matches_reference(shape, tile, path):
    """Whole layer against fp32 torch; a second call on the same workspace (as a graph replay
    would) with new inputs is right too, so the self-resetting counters were reset."""
    device = _device()
    M, E, k, H, I = shape
    gen = torch.Generator().manual_seed(sum(shape))
    cfg = MoeTileConfigs(TILES[tile], TILES[tile])
    x, logits, w13, w2 = _layer(M, E, k, H, I, gen, device)
    ws = MoeDecodeWorkspace.for_layer(w13, w2, k)
    for renormalize in (True, False):
        out = torch.full_like(x, float("nan"))
        fused_moe_decode(x, logits, w13, w2, k, renormalize=renormalize, tile_configs=cfg, workspace=ws, out=out,
                         path=path)
        ref = fused_moe_decode_reference(x.cpu(), logits.cpu(), w13.cpu(), w2.cpu(), k, renormalize=renormalize)
        assert _rel_err(out, ref) < 1.5e-2, renormalize
        assert torch.equal(ws.routing(M)[1].cpu(), softmax_topk_reference(logits.cpu(), k, renormalize)[1])
        assert ws.flags.cpu().count_nonzero() == 0, "counters must be left at zero for the next call"
        x = torch.randn(M, H, generator=gen).to(torch.bfloat16).to(device)
        logits = torch.randn(M, E, generator=gen).to(device)


@pytest.mark.interpreter
# M = 1, 2, 3 (a 4-row tile), 7 and 8 (8 rows) of at most 1024 logits take the route launch's
# one-program path; 8 x 256 logits and 64 tokens its counters.
# Past it, routers of their own (taking their pairs' ranks) and the last of them aligning; with ROUTERS_APART
# ("apart") so at every M.
# "ties": logits on a few levels, so most rows hold equal logits (the lower expert first, as the reference's
# stable sort), on the one-program path.
@pytest.mark.parametrize("M,E,k,block,mode", [
    (1, 8, 2, 8, "shipped"), (2, 128, 8, 16, "shipped"), (3, 64, 8, 8, "shipped"), (7, 8, 2, 16, "shipped"),
    (8, 128, 8, 16, "shipped"), (8, 256, 8, 16, "shipped"), (64, 16, 4, 32, "shipped"), (13, 128, 8, 16, "shipped"),
    (1, 8, 2, 8, "apart"), (3, 64, 8, 8, "apart"), (8, 128, 8, 16, "apart"), (8, 256, 8, 16, "apart"),
    (64, 16, 4, 32, "apart"), (8, 128, 8, 16, "ties")])
def test_math_alignment_groups_every_pair_by_expert(M, E, k, block, mode):
    """The route launch's routing is the reference's, and its layout groups every pair by expert;
    the per-expert counters are left at zero (a second call on the workspace is right too)."""
    device = _device()
    config = ROUTERS_APART if mode == "apart" else TL_GEMMS
    gen = torch.Generator().manual_seed(M * 100 + block)
    H, I = 32, 16
    x, logits, w13, w2 = _layer(M, E, k, H, I, gen, device)
    if mode == "ties":
        logits = (logits * 2).round() / 2
    ws = MoeDecodeWorkspace.for_layer(w13, w2, k)
    tile = TileConfig(block, 32, 32, 1, 4, 2, False)
    for _ in range(2):
        fused_moe_decode(x, logits, w13, w2, k, tile_configs=MoeTileConfigs(tile, tile), workspace=ws,
                         path="grouped", config=config)
        assert ws.counts.cpu().count_nonzero() == 0, "per-expert counters must be left at zero"
    weights, ids = ws.routing(M)
    ref_weights, ref_ids = softmax_topk_reference(logits.cpu().float(), k)
    assert torch.equal(ids.cpu(), ref_ids)
    torch.testing.assert_close(weights.cpu(), ref_weights, rtol=1e-5, atol=1e-6)
    used = int(ws.num_padded.item())
    sorted_ids, expert_ids = ws.sorted_ids.tolist(), ws.expert_ids.tolist()
    got: dict[int, list[int]] = {}
    for pos in range(used):
        if sorted_ids[pos] < M * k:
            got.setdefault(expert_ids[pos // block], []).append(sorted_ids[pos])
    assert {e: sorted(v) for e, v in got.items()} == moe_align_reference(ids.cpu(), E, block)
    assert used % block == 0
    padded_len = moe_decode.max_padded_len(M * k, E, block)
    assert all(s == M * k for s in sorted_ids[used:padded_len]), "padding must hold the sentinel"
    assert all(e == -1 for e in expert_ids[used // block : padded_len // block]), "unused tiles must be labelled -1"


def _quantize_weight(w: torch.Tensor, scheme: str):
    if scheme == "tensor":
        s = w.abs().amax(dim=(1, 2)) / 448.0
        return (w / s[:, None, None]).to(FP8), s
    if scheme == "channel":
        s = w.abs().amax(dim=2) / 448.0
        return (w / s[:, :, None]).to(FP8), s
    # Block scales per 128 x 128 block; partial blocks at the edges (R or K not a multiple of 128).
    E, R, K = w.shape
    Rp, Kp = -(-R // 128) * 128, -(-K // 128) * 128
    padded = torch.zeros(E, Rp, Kp, dtype=w.dtype)
    padded[:, :R, :K] = w
    blocks = padded.view(E, Rp // 128, 128, Kp // 128, 128)
    s = blocks.abs().amax(dim=(2, 4)) / 448.0
    return (blocks / s[:, :, None, :, None]).view(E, Rp, Kp)[:, :R, :K].contiguous().to(FP8), s


def _fp8_block_layer(M: int, E: int, k: int, H: int, I: int, gen: torch.Generator, device):
    """x, logits, e4m3 weights with 128 x 128 block scales, and fused_moe_decode's FP8 keywords."""
    x = torch.randn(M, H, generator=gen).to(torch.bfloat16).to(device)
    logits = torch.randn(M, E, generator=gen).to(device)
    w13, s1 = _quantize_weight(torch.randn(E, 2 * I, H, generator=gen) / H**0.5, "block")
    w2, s2 = _quantize_weight(torch.randn(E, H, I, generator=gen) / I**0.5, "block")
    kw = {"use_fp8_w8a8": True, "block_shape": [128, 128], "w1_scale": s1.to(device), "w2_scale": s2.to(device)}
    return x, logits, w13.to(device), w2.to(device), kw


def _offline_layer(E: int, k: int, H: int, I: int, scheme: str, tokens: int):
    """Zero CPU weights of ``scheme`` (``_zero_weights``), random x [tokens, H] and logits [tokens, E], and a
    workspace: one layer's inputs for keys-only sweeps over M (``x[:M]``, ``logits[:M]``)."""
    w13, w2, kw = _zero_weights(E, H, I, scheme)
    x = torch.randn(tokens, H).to(torch.bfloat16)
    return w13, w2, kw, x, torch.randn(tokens, E), MoeDecodeWorkspace.for_layer(w13, w2, k)


def _zero_weights(E: int, H: int, I: int, scheme: str):
    """Zero CPU weights of one scheme ("bf16", FP8 "tensor", "channel", "block") with unit scales of
    the right shapes, and fused_moe_decode's FP8 keywords: inputs for compiles, not for maths."""
    if scheme == "bf16":
        return torch.zeros(E, 2 * I, H, dtype=torch.bfloat16), torch.zeros(E, H, I, dtype=torch.bfloat16), {}
    kw = {"use_fp8_w8a8": True, "w1_scale": torch.ones(E), "w2_scale": torch.ones(E)}
    if scheme == "channel":
        kw.update(per_channel_quant=True, w1_scale=torch.ones(E, 2 * I), w2_scale=torch.ones(E, H))
    if scheme == "block":
        kw.update(block_shape=[128, 128], w1_scale=torch.ones(E, -(-2 * I // 128), -(-H // 128)),
                  w2_scale=torch.ones(E, -(-H // 128), -(-I // 128)))
    return torch.zeros(E, 2 * I, H, dtype=FP8), torch.zeros(E, H, I, dtype=FP8), kw


@pytest.mark.interpreter
@pytest.mark.parametrize("scheme,M", [("block", 5), ("block", 8), ("tensor", 5), ("channel", 3)])
def test_math_route_align_apart_gives_the_same_layer(scheme, M):
    """ROUTERS_APART (routers apart from the rows' programs, the last router aligning): the grouped path's output
    equal bit for bit to the shipped route launch's few-token router (each pair's row is computed the same in
    whatever tile it lands); a tensor scale keeps its counter path either way (its scale needs every row)."""
    device = _device()
    E, k, H, I = 8, 2, 256, 256
    gen = torch.Generator().manual_seed(17 + M)
    logits = torch.randn(M, E, generator=gen).to(device)
    x = torch.randn(M, H, generator=gen).to(torch.bfloat16).to(device)
    w13, s1 = _quantize_weight(torch.randn(E, 2 * I, H, generator=gen) / H**0.5, scheme)
    w2, s2 = _quantize_weight(torch.randn(E, H, I, generator=gen) / I**0.5, scheme)
    kw = {"use_fp8_w8a8": True, "w1_scale": s1.to(device), "w2_scale": s2.to(device),
          "per_channel_quant": scheme == "channel", "block_shape": [128, 128] if scheme == "block" else None}
    outs = []
    for config in (TL_GEMMS, ROUTERS_APART):
        plan = plan_fused_moe_decode(x, logits, w13.to(device), w2.to(device), k, path="grouped", config=config,
                                     **kw)
        assert ("ROUTERS_APART" in plan.launches[0][1].keywords) == (config is ROUTERS_APART and scheme != "tensor")
        for _, launch in plan.launches:
            launch()
        outs.append(plan.out.cpu())
    assert torch.equal(outs[0], outs[1])


def test_route_launch_routers_apart_take_the_place_of_the_counter_path(monkeypatch):
    """Routers apart exactly where the route launch's router would take the counter path (past few_tokens tokens
    or few_elements logits), never with a tensor scale; with few_elements 0 at every M."""
    monkeypatch.setattr(moe_decode, "HAS_BATCHED_TOPK", True)
    block, tensor = moe_gemm.QUANT_BLOCK, moe_gemm.QUANT_TENSOR
    shipped = DEFAULT_DECODE_CONFIG
    # 256 experts: the few-token tile holds up to 4 tokens (1024 logits); 128 experts up to 8 tokens.
    assert [moe_decode._route_routers_apart(M, 256, block, shipped) for M in range(1, 11)] == [False] * 4 + [True] * 6
    assert [moe_decode._route_routers_apart(M, 128, block, shipped) for M in range(1, 11)] == [False] * 8 + [True] * 2
    assert moe_decode._route_routers_apart(16, 8, moe_gemm.QUANT_NONE, shipped)
    assert not moe_decode._route_routers_apart(64, 128, tensor, shipped)
    # Apart, the launch has no few-token router: its base warps.
    assert moe_decode._route_warps(6, 256, block, False, shipped, True) == shipped.route_num_warps
    assert all(moe_decode._route_routers_apart(M, 128, block, ROUTERS_APART) for M in (1, 8, 64))
    assert not moe_decode._route_routers_apart(3, 128, tensor, ROUTERS_APART)


def test_real_sm90_compile_of_the_route_launch_with_routers_apart_and_one_variant_over_m():
    """ROUTERS_APART on the grouped path (FP8 block scales, 128 experts): over M = 1..64 (keys only) the
    route launch compiles once (no few-token router, so no wide-tile warps); its sm_90 compile arrives with a
    gpu-scope acq_rel atomic and takes the pairs' ranks with relaxed ones."""
    _compile_side()
    E, k, H, I = 128, 8, 256, 128
    w13, w2, kw, x, logits, ws = _offline_layer(E, k, H, I, "block", MAX_DECODE_TOKENS)
    route = triton_compat.unwrap_jit_function(moe_decode.moe_decode_route_kernel)
    triton_compat.forget_compiled_variants(route)
    with jitguard.offline(compile=False), jitguard.watch() as rec:
        for M in range(1, MAX_DECODE_TOKENS + 1):
            fused_moe_decode(x[:M], logits[:M], w13, w2, k, workspace=ws, path="grouped", config=ROUTERS_APART, **kw)
    assert rec.variants("moe_decode_route_kernel") == 1
    triton_compat.forget_compiled_variants(route)
    with jitguard.offline(compile=True):
        plan = plan_fused_moe_decode(x[:5], logits[:5], w13, w2, k, workspace=ws, path="grouped",
                                     config=ROUTERS_APART, **kw)
        plan.launches[0][1]()
    ptx = [kernel.asm["ptx"] for cache in triton_compat.all_kernel_caches(route) for kernel in cache.values()]
    assert len(ptx) == 1
    assert re.search(r"atom\.global\.(gpu\.acq_rel|acq_rel\.gpu)\.add", ptx[0])
    assert re.search(r"atom\.global\.(gpu\.relaxed|relaxed\.gpu)\.add", ptx[0])


@pytest.mark.interpreter
@pytest.mark.parametrize("scheme,tile,path,M", [
    ("tensor", "bm8-noswap", "grouped", 5), ("channel", "bm16-swap", "grouped", 5),
    ("block", "bm16-swap", "grouped", 5), ("block", "bm16-swap", "pairs", 5), ("block", "bm8-noswap", "pairs", 1),
    ("block", "bm16-swap", "pairs", 2), ("block", "bm8-noswap", "chain", 11)])
def test_math_fp8_layer_matches_reference(scheme, tile, path, M):
    """FP8 against the fp32 reference with quantized activations; block scales on both paths (the
    pairs path takes each token group's scale from the bf16 tile its gate_up loads)."""
    device = _device()
    E, k, H, I = 8, 2, 256, 256
    gen = torch.Generator().manual_seed(11)
    x, logits, _, _ = _layer(M, E, k, 16, 16, gen, device)
    x = torch.randn(M, H, generator=gen).to(torch.bfloat16).to(device)
    w13, s1 = _quantize_weight(torch.randn(E, 2 * I, H, generator=gen) / H**0.5, scheme)
    w2, s2 = _quantize_weight(torch.randn(E, H, I, generator=gen) / I**0.5, scheme)
    kw = {"use_fp8_w8a8": True, "w1_scale": s1, "w2_scale": s2, "per_channel_quant": scheme == "channel",
          "block_shape": [128, 128] if scheme == "block" else None}
    cfg = MoeTileConfigs(TILES[tile], TILES[tile])
    out = fused_moe_decode(x, logits, w13.to(device), w2.to(device), k, tile_configs=cfg, path=path,
                           **{key: v.to(device) if torch.is_tensor(v) else v for key, v in kw.items()})
    emulated = fused_moe_decode_reference(x.cpu(), logits.cpu(), w13, w2, k, quantize_activations=True, **kw)
    # GPU: only accumulation order and an occasional neighbouring e4m3 code differ. Interpreter:
    # its e4m3 cast alone costs ~0.1; a misplaced scale or row costs ~1.
    assert _rel_err(out, emulated) < (0.2 if INTERPRETED else 4e-2)


@pytest.mark.interpreter
# Three tokens on the swapped tile only (the unswapped one took 22 s there under the interpreter).
@pytest.mark.parametrize("tile,M", [
    (TileConfig(8, 32, 128, 1, 4, 2, False), 1),
    (TileConfig(16, 64, 128, 1, 4, 2, True), 1),
    (TileConfig(16, 64, 128, 1, 4, 2, True), 3),
    (TileConfig(16, 64, 128, 1, 4, 2, True), 16)],
    ids=["bm8-noswap-M1", "bm16-swap-M1", "bm16-swap-M3", "bm16-swap-M16-handoff"])
def test_math_fp8_block_pairs_path_equals_grouped_path(tile, M):
    """FP8 block scales: the pairs path (x quantized by a launch of its own, no routing launch) gives
    the grouped path's layer (x quantized by the route launch): the same e4m3 values and scales reach
    the same MMAs (128-deep K steps on both), so even one intermediate value a code apart (~4e-3
    here) fails, as does a scale from the wrong group or K step; a call after one with 8x larger
    activations is right too. At 16 tokens (32 pairs) the pairs path hands each pair's gate_up
    columns to its down programs."""
    device = _device()
    E, k, H, I = 8, 2, 384, 256
    gen = torch.Generator().manual_seed(M)
    x, logits, w13, w2, kw = _fp8_block_layer(M, E, k, H, I, gen, device)
    x = (x.float().cpu() * torch.linspace(0.1, 4.0, H)).to(torch.bfloat16).to(device)  # groups of unlike scale
    ws = MoeDecodeWorkspace.for_layer(w13, w2, k)
    cfg = MoeTileConfigs(tile, tile)

    def layer(path, x):
        return fused_moe_decode(x, logits, w13, w2, k, tile_configs=cfg, workspace=ws, path=path, **kw).float()

    assert moe_decode.takes_pair_handoff(M * k) == (M == 16)
    if INTERPRETED and M == 16:
        pytest.skip("65 s under the interpreter: GPU only (the handoff's interpreter maths take 6 pairs)")
    grouped = layer("grouped", x)
    layer("pairs", x * 8)  # leaves absmaxes 8x too large wherever the next call does not reset them
    assert _rel_err(layer("pairs", x), grouped) < 1e-3
    assert ws.group_arrivals.cpu().count_nonzero() == 0, "group counters must be left at zero"


@pytest.mark.interpreter
def test_math_pairs_path_with_per_pair_handoff_equals_the_whole_launch_wait():
    """FP8 block scales on the pairs path with the per-pair handoff: the down GEMM starting on its
    pair's gate_up columns gives the layer bit for bit, every pair's counter receives exactly one
    arrival per gate_up column tile, and the next call's x launch zeroes the counters again."""
    device = _device()
    M, E, k, H, I = 3, 8, 2, 256, 320
    gen = torch.Generator().manual_seed(7)
    x, logits, w13, w2, kw = _fp8_block_layer(M, E, k, H, I, gen, device)
    tile = TileConfig(16, 64, 128, 1, 4, 2, True)
    cfg = MoeTileConfigs(tile, tile)
    ws = MoeDecodeWorkspace.for_layer(w13, w2, k)
    outs = {}
    for handoff in (False, True):
        config = dataclasses.replace(TL_GEMMS, pair_handoff_min_pairs=1 if handoff else 1 << 30)
        outs[handoff] = [fused_moe_decode(xi, logits, w13, w2, k, tile_configs=cfg, workspace=ws, path="pairs",
                                          config=config, **kw).clone()
                         for xi in (x, (x.float() * 2 - 0.5).to(x.dtype))]
    assert all(torch.equal(a, b) for a, b in zip(outs[True], outs[False]))
    # 320 columns over gate_up tiles of 32 output columns: 10 arrivals per pair.
    assert ws.pair_ready[:M * k].cpu().tolist() == [10] * (M * k)
    plan = plan_fused_moe_decode(x, logits, w13, w2, k, tile_configs=cfg, workspace=ws, path="pairs",
                                 config=dataclasses.replace(TL_GEMMS, pair_handoff_min_pairs=1), **kw)
    assert plan.launches[0][0] == "quantize_x" and plan.launches[0][1].keywords.get("ZERO_PAIR_READY")
    plan.launches[0][1]()
    assert ws.pair_ready[:M * k].cpu().count_nonzero() == 0, "the x launch must zero the pair counters"


@pytest.mark.interpreter
def test_math_down_k_loop_rotated_equals_the_straight_loop():
    """The pairs path's down GEMM with its K loop started at each program's own offset (ROTATE_K, where
    fp8_pairs_down_rotated_tokens lists the token count) sums the same block-scaled steps in another order: the
    layer equals the straight loop's to rounding, with a last K step shorter than the tile (I = 320)."""
    device = _device()
    M, E, k, H, I = 2, 8, 2, 256, 320
    gen = torch.Generator().manual_seed(11)
    x, logits, w13, w2, kw = _fp8_block_layer(M, E, k, H, I, gen, device)
    tile = TileConfig(16, 64, 128, 1, 4, 2, True)
    cfg = MoeTileConfigs(tile, tile)
    outs = {}
    for rotated in (False, True):
        tokens = (M,) if rotated else ()
        config = dataclasses.replace(TL_GEMMS, fp8_pairs_down_rotated_tokens={"small": tokens, "large": tokens})
        plan = plan_fused_moe_decode(x, logits, w13, w2, k, tile_configs=cfg, path="pairs", config=config, **kw)
        assert dict(plan.launches)["down"].keywords.get("ROTATE_K", False) == rotated
        for _, launch in plan.launches:
            launch()
        outs[rotated] = plan.out.float()
    assert _rel_err(outs[True], outs[False]) < 1e-3


def test_down_k_loop_rotated_where_it_measured_faster():
    """FP8_PAIRS_DOWN_ROTATED_TOKENS: large experts (DeepSeek-V3-TP2's shape) take the pairs path at one
    token with the down GEMM's K loop rotated, and not at two; small experts never; gate_up never."""
    E, k, H, I = 8, 2, 7168, 1024
    w13, w2, kw = _zero_weights(E, H, I, "block")
    for M, rotated in ((1, True), (2, False)):
        x, logits = torch.zeros(M, H, dtype=torch.bfloat16), torch.randn(M, E)
        plan = plan_fused_moe_decode(x, logits, w13, w2, k, path="pairs", **kw)
        launches = dict(plan.launches)
        assert launches["down"].keywords.get("ROTATE_K", False) == rotated
        assert "ROTATE_K" not in launches["gate_up"].keywords
    assert plan_fused_moe_decode(torch.zeros(1, H, dtype=torch.bfloat16), torch.randn(1, E), w13, w2, k,
                                            **kw).path == "pairs"
    w13, w2, kw = _zero_weights(E, 2048, 768, "block")
    plan = plan_fused_moe_decode(torch.zeros(1, 2048, dtype=torch.bfloat16), torch.randn(1, E), w13, w2,
                                            k, **kw)
    assert plan.path == "pairs" and "ROTATE_K" not in dict(plan.launches)["down"].keywords


def test_real_sm90_compile_of_the_per_pair_handoff():
    """With the per-pair handoff the down GEMM does not wait for the whole gate_up launch: it polls
    its pair's counter with gpu-scope acquire atomics; gate_up releases its arrival after a CTA
    barrier; with PDL both stay PDL-launched."""
    _compile_side()
    E, k, H, I, M = 8, 2, 256, 256, 1
    w13, w2, kw = _zero_weights(E, H, I, "block")
    gemm = triton_compat.unwrap_jit_function(moe_decode.moe_decode_gemm_kernel)
    triton_compat.forget_compiled_variants(gemm)
    with jitguard.offline(compile=True):
        fused_moe_decode(torch.randn(M, H).to(torch.bfloat16), torch.randn(M, E), w13, w2, k, path="pairs",
                         config=dataclasses.replace(TL_GEMMS, pair_handoff_min_pairs=1), **kw)
    ptx = [c.asm["ptx"] for c in _compiled(moe_decode.moe_decode_gemm_kernel).values()]
    assert len(ptx) == 2
    # The poll (an atomic add of 0) compiles to an acquire load; the arrival to a release reduction.
    release = r"(red|atom)\.global\.(gpu\.release|release\.gpu)\.add"
    acquire = r"(ld|atom)\.global\.(gpu\.acquire|acquire\.gpu)"
    gate_up = [p for p in ptx if re.search(release, p)]
    down = [p for p in ptx if re.search(acquire, p)]
    assert len(gate_up) == len(down) == 1 and gate_up != down, "expected gate_up releasing, down polling"
    assert "griddepcontrol.wait" not in down[0], "down still waits for the whole gate_up launch"
    if moe_decode.pdl_supported():
        assert "griddepcontrol.wait" in gate_up[0], "gate_up must still wait for x's quantization"


@pytest.mark.interpreter
@pytest.mark.parametrize("scheme,M", [("block", 3), ("block", 12), ("bf16", 9)])
def test_math_chain_path_equals_softmax_topk_and_fused_moe(scheme, M):
    """The chain path (route launch, fused_moe's GEMMs, quantization and reduce on the workspace)
    gives softmax_topk + fused_moe's output bit for bit on the same tiles, twice on one workspace
    (as graph replays would): a pair in the wrong slot, a scale from the wrong row or a stale
    buffer fails it."""
    device = _device()
    E, k, H, I = 8, 2, 256, 128
    gen = torch.Generator().manual_seed(M)
    if scheme == "block":
        x, logits, w13, w2, kw = _fp8_block_layer(M, E, k, H, I, gen, device)
    else:
        x, logits, w13, w2 = _layer(M, E, k, H, I, gen, device)
        kw = {}
    tile = TileConfig(16, 64, 128, 1, 4, 2, True)
    cfg = MoeTileConfigs(tile, tile)
    ws = MoeDecodeWorkspace.for_layer(w13, w2, k)
    for _ in range(2):
        out = fused_moe_decode(x, logits, w13, w2, k, renormalize=True, tile_configs=cfg, workspace=ws, path="chain",
                               **kw)
        weights, ids = softmax_topk(logits, k, True)
        assert torch.equal(out, fused_moe(x, w13, w2, weights, ids, tile_configs=cfg, **kw))
        assert ws.flags.cpu().count_nonzero() == 0, "counters must be left at zero for the next call"
        x = (x.float() * 1.5 + 0.25).to(x.dtype)
        logits = logits.flip(1)


@pytest.mark.interpreter
# (path, M, H, I, block_k): K = 384 and I = 320 leave the last iteration's second step past K (its
# tiles read 0, its scales the last group's); 512-deep tiles over H = 640 leave three.
@pytest.mark.parametrize("path,M,H,I,block_k", [("grouped", 3, 384, 320, 256), ("grouped", 1, 640, 256, 512),
                                                ("pairs", 2, 384, 320, 256)])
def test_math_fp8_block_tiles_deeper_than_a_group_equal_128_deep_tiles(path, M, H, I, block_k):
    """FP8 block scales with a tile block_k of 256 or 512: each iteration runs block_k / 128 steps of
    one scale group each, in the same order as 128-deep tiles, so the layer is the same bit for bit;
    a step with another group's scale or a lost tail step would move it by far more than that."""
    device = _device()
    E, k = 8, 2
    gen = torch.Generator().manual_seed(H + I + M)
    x, logits, w13, w2, kw = _fp8_block_layer(M, E, k, H, I, gen, device)
    x = (x.float().cpu() * torch.linspace(0.1, 4.0, H)).to(torch.bfloat16).to(device)  # groups of unlike scale
    ws = MoeDecodeWorkspace.for_layer(w13, w2, k)
    outs = []
    for depth in (128, block_k):
        tile = TileConfig(16, 64, depth, 1, 4, 2, True)
        outs.append(fused_moe_decode(x, logits, w13, w2, k, tile_configs=MoeTileConfigs(tile, tile), workspace=ws,
                                     path=path, **kw).float())
    assert torch.equal(outs[1], outs[0]), _rel_err(outs[1], outs[0])
    emulated = fused_moe_decode_reference(x.cpu(), logits.cpu(), w13.cpu(), w2.cpu(), k, quantize_activations=True,
                                          **{key: v.cpu() if torch.is_tensor(v) else v for key, v in kw.items()})
    assert _rel_err(outs[1], emulated) < (0.2 if INTERPRETED else 4e-2)


@pytest.mark.interpreter
@pytest.mark.parametrize("gate_up_block_n", [32, 256], ids=["last-writer", "whole-groups"])
@pytest.mark.parametrize("I", [256, 192, 320])
def test_math_intermediate_quantized_by_gate_up_equals_quantized_by_a_launch_of_its_own(I, gate_up_block_n):
    """FP8 block scales: gate_up writing the e4m3 intermediate (its last writer per 128-column group, or with
    128 output columns per program each program from its registers) writes the e4m3 values and scales that the
    group quantization launch (the chain path's) makes of gate_up's bf16 intermediate, bit for bit, also where I
    ends in a partial group (192, 320) whose writers are fewer; every group counter is left at zero."""
    device = _device()
    M, E, k, H = 3, 8, 2, 256
    P, groups = M * k, -(-I // 128)
    gen = torch.Generator().manual_seed(I)
    x, logits, w13, w2, kw = _fp8_block_layer(M, E, k, H, I, gen, device)
    down_tile = TileConfig(16, 32, 128, 1, 4, 2, True)
    ws = MoeDecodeWorkspace.for_layer(w13, w2, k)

    def grouped_layer(block_n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(bf16 intermediate, its e4m3 values, their scales) as the grouped path's gate_up left them."""
        tiles = MoeTileConfigs(TileConfig(16, block_n, 128, 1, 4, 2, True), down_tile)
        fused_moe_decode(x, logits, w13, w2, k, tile_configs=tiles, workspace=ws, path="grouped", **kw)
        assert ws.group_arrivals.cpu().count_nonzero() == 0
        return ws.inter[:P].clone(), ws.inter_q[:P].clone(), ws.a2_amax[:P * groups].view(P, groups).clone()

    # A 32-column gate_up stores the bf16 intermediate too (a 256-column one quantizes from registers only).
    inter, _, _ = grouped_layer(32)
    want_q, want_scale = torch.empty_like(ws.inter_q[:P]), torch.empty(P, groups, device=device)
    moe_quant.launch_quantize_groups(inter, want_q, want_scale, 128)
    _, got_q, got_scale = grouped_layer(gate_up_block_n)
    assert torch.equal(got_scale.cpu(), want_scale.cpu())
    assert torch.equal(got_q.view(torch.uint8).cpu(), want_q.view(torch.uint8).cpu())


# ---- clear errors ----------------------------------------------------------------------------------

def _bad_calls():
    E, k, H, I, M = 8, 2, 64, 32, 4
    x = torch.randn(M, H).to(torch.bfloat16)
    logits = torch.randn(M, E)
    w13 = torch.zeros(E, 2 * I, H, dtype=torch.bfloat16)
    w2 = torch.zeros(E, H, I, dtype=torch.bfloat16)
    other_ws = MoeDecodeWorkspace.for_layer(torch.zeros(E, 2 * I, 2 * H, dtype=torch.bfloat16),
                                            torch.zeros(E, 2 * H, I, dtype=torch.bfloat16), k)
    return {
        "too many tokens": ((torch.randn(65, H).bfloat16(), torch.randn(65, E), w13, w2, k), {},
                            r"fused_moe_decode: serves 1\.\.64 tokens, got 65 \(use fused_moe_from_logits"),
        "logit rows": ((x, logits[:3], w13, w2, k), {}, r"router_logits has 3 rows but x \(4, 64\) has 4 tokens"),
        "logit experts": ((x, torch.randn(M, 16), w13, w2, k), {}, r"router_logits scores 16 experts but w13 has 8"),
        "top_k too big": ((x, logits, w13, w2, 9), {}, r"top_k must be an int in \[1, 8\]"),
        "top_k zero": ((x, logits, w13, w2, 0), {}, r"top_k must be an int in \[1, 8\]"),
        "logits int": ((x, logits.long(), w13, w2, k), {}, r"router_logits must be float32, bfloat16 or float16"),
        "logits 1-D": ((x, logits[0], w13, w2, k), {}, r"router_logits must be \[tokens, experts\]"),
        "workspace shape": ((x, logits, w13, w2, k), {"workspace": other_ws}, r"workspace is for .* this call needs"),
        "fp8 block shape": ((x, logits, w13.to(FP8), w2.to(FP8), k),
                            {"use_fp8_w8a8": True, "block_shape": [64, 64], "w1_scale": torch.ones(E, 1, 1),
                             "w2_scale": torch.ones(E, 1, 1)},
                            r"block w1_scale must be|block_shape must be \[128, 128\]"),
        "x fp32": ((x.float(), logits, w13, w2, k), {}, r"x must be bfloat16 or float16"),
        "unknown path": ((x, logits, w13, w2, k), {"path": "fast"},
                         r"path must be one of \('auto', 'pairs', 'grouped', 'chain'\), got 'fast'"),
        "pairs fp8": ((x, logits, w13.to(FP8), w2.to(FP8), k),
                      {"use_fp8_w8a8": True, "w1_scale": torch.ones(E), "w2_scale": torch.ones(E), "path": "pairs"},
                      r"path='pairs' takes bf16/fp16 or FP8 with block scales"),
        "chain fp8 channel": ((x, logits, w13.to(FP8), w2.to(FP8), k),
                              {"use_fp8_w8a8": True, "per_channel_quant": True, "w1_scale": torch.ones(E, 2 * I),
                               "w2_scale": torch.ones(E, H), "path": "chain"},
                              r"path='chain' takes bf16/fp16 or FP8 with block scales"),
    }


@pytest.mark.parametrize("case", sorted(_bad_calls()))
def test_bad_input_gets_one_line_error(case):
    _compile_side()
    args, kwargs, pattern = _bad_calls()[case]
    with pytest.raises((ValueError, TypeError), match=pattern) as info:
        fused_moe_decode(*args, **kwargs)
    message = str(info.value)
    assert message.startswith("fused_moe"), message
    assert "\n" not in message


def test_softmax_topk_errors_name_the_function():
    _compile_side()
    with pytest.raises(ValueError,
                       match=r"^softmax_topk: top_k must be an int in \[1, 4\] \(the number of experts\), got 5$"):
        softmax_topk(torch.randn(3, 4), 5)
    with pytest.raises(ValueError, match=r"^softmax_topk: router_logits needs a contiguous expert dimension"):
        softmax_topk(torch.randn(4, 3).t(), 2)


# ---- decode tile rows --------------------------------------------------------------------------------

def test_decode_rows_follow_expert_size_and_defer_to_the_fused_moe_table():
    """FP8 block scales: experts up to SMALL_EXPERT_BYTES take the small experts' rows, larger (or of
    unknown size) the large ones'; a None row and M past the last row take fused_moe's table."""
    large = moe_configs.expert_weight_bytes(7168, 1024, 1)  # DeepSeek-V3-TP2, 22 MB
    small = moe_configs.expert_weight_bytes(2048, 768, 1)  # Qwen3-30B-A3B, 4.7 MB
    assert moe_configs.expert_size_class(moe_configs.SMALL_EXPERT_BYTES) == "small"
    assert moe_configs.expert_size_class(moe_configs.SMALL_EXPERT_BYTES + 1) == "large"
    assert moe_configs.expert_size_class(None) == "large"
    # Each row as this Triton compiles it (before 3.3 token tiles start at 16).
    as_compiled = moe_configs._for_this_triton
    decode = {M: row and as_compiled(row) for M, row in moe_configs.DECODE_TILE_TABLE[("fp8-block", "many", "large")]}
    assert select_decode_tile_configs(1, 256, "fp8-block", large) == decode[1]
    assert select_decode_tile_configs(1, 256, "fp8-block", None) == decode[1]
    assert select_decode_tile_configs(1, 128, "fp8-block", small) != decode[1]
    assert decode[3] is None
    for M in range(2, 4):
        assert select_decode_tile_configs(M, 256, "fp8-block", large) == moe_configs.select_tile_configs(M, 256,
                                                                                                         "fp8-block")
    assert select_decode_tile_configs(4, 256, "fp8-block", large) == decode[4]
    for M in range(5, 9):
        assert select_decode_tile_configs(M, 256, "fp8-block", large) == decode[8]
        assert select_decode_tile_configs(M, 128, "fp8-block", small) == moe_configs.select_tile_configs(M, 128,
                                                                                                         "fp8-block")
    bf16_large = moe_configs.expert_weight_bytes(2048, 768, 2)  # Qwen3-30B-A3B in bf16, 9.4 MB
    assert select_decode_tile_configs(2, 128, "bf16", bf16_large) == as_compiled(dict(
        moe_configs.DECODE_TILE_TABLE[("bf16", "many", "large")])[2])
    for M in (1, 3):
        assert select_decode_tile_configs(M, 128, "bf16", bf16_large) == moe_configs.select_tile_configs(M, 128)
    # M = 9..64: the 128-deep row the decode GEMMs were timed with, not fused_moe's 256-deep gate_up there.
    kept = moe_configs.select_tile_configs(100, 256, "fp8-block")
    for M in (9, 16, 64):
        for size in (large, small):
            assert select_decode_tile_configs(M, 256, "fp8-block", size) == kept
        assert moe_configs.select_tile_configs(M, 256, "fp8-block").gate_up.block_k == 256
    for size in (large, small):
        assert select_decode_tile_configs(100, 256, "fp8-block", size) == kept  # past the last row


def test_pairs_path_rows_differ_only_where_timed_on_it():
    """FP8 block scales on the pairs path take DECODE_PAIRS_TILE_TABLE's rows (DeepSeek-sized experts at
    M = 2 and 4, Qwen3-sized at 4, 5, 6); elsewhere, and on the grouped path always, the decode table's."""
    large = moe_configs.expert_weight_bytes(7168, 1024, 1)
    small = moe_configs.expert_weight_bytes(2048, 768, 1)
    pairs_rows = {size: dict(moe_configs.DECODE_PAIRS_TILE_TABLE[("fp8-block", "many", size)])
                  for size in ("large", "small")}
    own = {("large", 2): pairs_rows["large"][2], ("large", 4): pairs_rows["large"][4],
           ("small", 4): pairs_rows["small"][4], ("small", 5): pairs_rows["small"][5],
           ("small", 6): pairs_rows["small"][6]}
    assert all(row is not None for row in own.values())
    for size, (E, expert_bytes) in {"large": (256, large), "small": (128, small)}.items():
        for M in range(1, 17):
            grouped = select_decode_tile_configs(M, E, "fp8-block", expert_bytes)
            assert select_decode_tile_configs(M, E, "fp8-block", expert_bytes, "grouped") == grouped
            pairs = select_decode_tile_configs(M, E, "fp8-block", expert_bytes, "pairs")
            assert pairs == own.get((size, M), grouped), (size, M)
            if (size, M) in own:
                assert pairs != grouped, (size, M)
    # bf16 has no pairs rows of its own: its decode rows were timed on the pairs path already.
    bf16 = moe_configs.expert_weight_bytes(2048, 768, 2)
    for M in (1, 2, 3):
        assert select_decode_tile_configs(M, 128, "bf16", bf16, "pairs") == select_decode_tile_configs(M, 128, "bf16",
                                                                                                       bf16)


# ---- one compiled variant per tile config, M = 1..64 and beyond ------------------------------------

DECODE_KERNELS = ("moe_decode_route_kernel", "moe_decode_gemm_kernel")
# The chain path's kernels besides the route launch (moe_gemm's, moe_quant's).
CHAIN_KERNELS = ("moe_grouped_gemm_kernel", "_quant_groups_kernel", "moe_topk_reduce_kernel")


@pytest.mark.parametrize("scheme,E,k", [("bf16", 8, 2), ("bf16", 128, 8), ("block", 128, 8)])
def test_one_variant_per_tile_config_for_m_1_to_64_and_beyond(scheme, E, k):
    """Keys only: over M = 1..64 the route kernel compiles once, the decode GEMM once per distinct
    (tile, path, handoff) of each GEMM (pairs for bf16, grouped for FP8 block scales, and pairs at
    FP8_PAIRS_TOKENS tokens, with the per-pair handoff from 32 pairs), the chain path's grouped GEMM
    once per distinct tile and its quantization and reduce once; M = 65..200
    (fused_moe_from_logits: softmax_topk + fused_moe) adds one routing variant and no decode variant."""
    _compile_side()
    H, I, beyond = 256, 128, 200
    fp8 = scheme != "bf16"
    w13, w2, kw, x, logits, ws = _offline_layer(E, k, H, I, scheme, beyond)
    with jitguard.offline(compile=False), jitguard.watch() as rec:
        for M in range(1, MAX_DECODE_TOKENS + 1):
            fused_moe_decode(x[:M], logits[:M], w13, w2, k, renormalize=True, workspace=ws, **kw)
        decode_variants = {name: rec.variants(name) for name in DECODE_KERNELS + CHAIN_KERNELS}
        for M in range(MAX_DECODE_TOKENS + 1, beyond + 1):
            fused_moe_from_logits(x[:M], logits[:M], w13, w2, k, renormalize=True, workspace=ws, **kw)
    precision = "fp8-block" if fp8 else "bf16"
    expert_bytes = expert_weight_bytes(H, I, w13.element_size())
    paths = {M: choose_decode_path(M, E, k, fp8, fp8, expert_bytes) for M in range(1, MAX_DECODE_TOKENS + 1)}
    # FP8 block scales on the pairs path: the per-pair handoff from PAIR_HANDOFF_MIN_PAIRS pairs is a
    # variant of its own of the same tiles.
    handoff = {M: fp8 and path == "pairs" and moe_decode.takes_pair_handoff(M * k) for M, path in paths.items()}
    rows = {(select_decode_tile_configs(M, E, precision, expert_bytes, path), (path, handoff[M]))
            for M, path in paths.items() if path != "chain"}
    # The chain path runs fused_moe's grouped GEMM on fused_moe's tiles (bf16 past the pairs path,
    # FP8 block scales above 8 tokens).
    chain_rows = {moe_configs.select_tile_configs(M, E, precision) for M, path in paths.items() if path == "chain"}
    assert len(rows) + len(chain_rows) >= 2, "the sweep should cross several table rows"
    # bf16 takes the pairs path, then the chain; FP8 block scales grouped (and pairs at
    # FP8_PAIRS_TOKENS), then the chain.
    small = moe_configs.expert_size_class(expert_bytes) == "small"
    want_paths = ({"pairs"} if not fp8 else {"grouped", "pairs"} if moe_decode.FP8_PAIRS_TOKENS["small" if small
                                                                                                  else "large"]
                  else {"grouped"})
    assert {path for _, (path, _) in rows} == want_paths
    assert any(h for _, (_, h) in rows) == (fp8 and E == 128), "Qwen3-like FP8 M = 4..6 takes the handoff"
    assert chain_rows
    # With the handoff the down GEMM counts gate_up's arrivals per pair: gate_up's output tile width is
    # one of its constexprs (GATE_UP_OUT_N), so a down tile after two gate_up widths is two variants.
    tiles = (len({(r.gate_up, path) for r, path in rows})
             + len({(r.down, path, r.gate_up.block_n // 2 if path[1] else 0) for r, path in rows}))
    gemm_events = [e.causes for e in rec.events if e.kernel == "moe_decode_gemm_kernel"]
    assert decode_variants["moe_decode_gemm_kernel"] == tiles, gemm_events
    # FP8 block scales on the pairs path: the route kernel once more, with routing off (x only).
    # ... and with the handoff, once more: that x launch also zeroes the pair counters.
    pairs_x_launches = {h for M, h in handoff.items() if paths[M] == "pairs"} if fp8 else set()
    # The route launch on more warps where its router's few-token tile holds 1024 logits or more (5..8
    # tokens with 128 experts, off the pairs path): once more; with its routers apart (past the few-token
    # router): once more.
    quant = moe_gemm.QUANT_BLOCK if fp8 else moe_gemm.QUANT_NONE
    route_launches = set()
    for M, path in paths.items():
        if path != "pairs":
            apart = moe_decode._route_routers_apart(M, E, quant, TL_GEMMS)
            route_launches.add((apart, moe_decode._route_warps(M, E, quant, False, TL_GEMMS, apart)))
    # (Only where this Triton has the few-token router's batched top-k: Triton 3.2 has none.)
    assert (TL_GEMMS.route_wide_tile_warps in {w for _, w in route_launches}) == bool(
        moe_decode.HAS_BATCHED_TOPK and E == 128 and any(5 <= M <= 8 and path != "pairs" for M, path in paths.items()))
    assert len(route_launches) <= 3, route_launches
    assert decode_variants["moe_decode_route_kernel"] == len(route_launches) + len(pairs_x_launches)
    assert decode_variants["moe_grouped_gemm_kernel"] == (len({r.gate_up for r in chain_rows})
                                                          + len({r.down for r in chain_rows}))
    assert decode_variants["_quant_groups_kernel"] == int(fp8)
    assert decode_variants["moe_topk_reduce_kernel"] == 1
    for name in DECODE_KERNELS:
        assert rec.variants(name) == decode_variants[name], f"{name} compiled again for M > 64"
    assert rec.variants("moe_softmax_topk_kernel") == 1


# ---- real offline sm_90 compiles and what they compile to ---------------------------------------------

def _compiled(kernel) -> dict[int, object]:
    jit_fn = triton_compat.unwrap_jit_function(kernel)
    return {id(k): k for cache in triton_compat.all_kernel_caches(jit_fn) for k in cache.values()}


PATHS = {
    "bf16-swap8": ("bf16", TileConfig(MIN_TOKEN_TILE, 64, 128, 1, 4, 3, True)),
    "bf16-noswap": ("bf16", TileConfig(16, 32, 64, 1, 4, 3, False)),
    "fp8-block-swap16": ("block", TileConfig(16, 64, 128, 1, 4, 3, True)),
    # Two 128-deep scale groups per iteration (K_UNROLL 2), as the DeepSeek-sized M = 4 row.
    "fp8-block-swap16-256deep": ("block", TileConfig(16, 64, 256, 1, 4, 3, True)),
    "fp8-tensor-swap8": ("tensor", TileConfig(MIN_TOKEN_TILE, 64, 128, 1, 4, 3, True)),
    "fp8-channel-noswap": ("channel", TileConfig(16, 64, 128, 1, 4, 3, False)),
}


@pytest.mark.parametrize("path", [pytest.param(p, marks=FP8_N8_CONVERTED) if p == "fp8-tensor-swap8" else p
                                  for p in sorted(PATHS)])
def test_real_sm90_compile_of_each_path(path):
    """Every decode kernel compiles for sm_90; the arrival counters are gpu-scope acq_rel atomics
    behind a CTA barrier; swapped tiles run on wgmma (FP8 on e4m3, never converted to f16)."""
    _compile_side()
    scheme, tile = PATHS[path]
    E, k, H, I, M = 8, 2, 256, 256, 3
    fp8 = scheme != "bf16"
    w13, w2, kw = _zero_weights(E, H, I, scheme)
    # The route kernel does not depend on the tile, and other tests compile it with routing off (the
    # pairs path's x quantization): forgotten here, its in-memory variants are this call's alone.
    triton_compat.forget_compiled_variants(triton_compat.unwrap_jit_function(moe_decode.moe_decode_route_kernel))
    before = {name: _compiled(getattr(moe_decode, name)) for name in DECODE_KERNELS}
    with jitguard.offline(compile=True):
        fused_moe_decode(torch.randn(M, H).to(torch.bfloat16), torch.randn(M, E), w13, w2, k,
                         tile_configs=MoeTileConfigs(tile, tile), path="grouped", **kw)
    new = {name: [c for key, c in _compiled(getattr(moe_decode, name)).items() if key not in before[name]]
           for name in DECODE_KERNELS}
    gemm_ptx = [c.asm["ptx"] for c in new["moe_decode_gemm_kernel"]]
    assert len(gemm_ptx) == 2, "expected the gate_up and down GEMMs to compile to PTX"
    route_ptx = [c.asm["ptx"] for c in new["moe_decode_route_kernel"]]
    assert len(route_ptx) == 1
    # Arrival counters: the route kernel, the down GEMM, and with block scales gate_up (the last
    # writer of a 128-column group quantizes it for the down GEMM).
    counted_ptx = [p for p in gemm_ptx if "ld.volatile" in p]
    assert route_ptx and len(counted_ptx) == (2 if scheme == "block" else 1), "kernels with arrival counters"
    for ptx in route_ptx + counted_ptx:
        assert re.search(r"atom\.global\.(gpu\.acq_rel|acq_rel\.gpu)\.add\.u32", ptx), \
            "arrival atomic is not gpu-scope acq_rel"
        assert re.search(r"\bbar(rier)?\.sync", ptx)
    # ptxas keeps each wgmma pipelined (none serialized: C7514 / C7515 and the like).
    assert [ptxas_serialization_notes(ptx) for ptx in gemm_ptx] == [[], []]
    if moe_decode.pdl_supported():
        # Programmatic dependent launch: both GEMMs PDL-launched and waiting; the route kernel lets gate_up start.
        assert all(c.metadata.launch_pdl for c in new["moe_decode_gemm_kernel"])
        assert all("griddepcontrol.wait" in ptx for ptx in gemm_ptx)
        assert any("griddepcontrol.launch_dependents" in ptx for ptx in route_ptx)
    # Last, so that the one failure FP8_N8_CONVERTED expects comes after every other check: swapped tiles put the
    # tokens in the MMA's N slot, FP8 on e4m3 (a 16-row tile not swapped, under wgmma's 64, converts: not checked).
    if tile.swap_ab:
        for ptx in gemm_ptx:
            assert_tokens_in_mma_n_slot(ptx, tile.block_m, "e4m3" if fp8 else "bf16")


@pytest.mark.parametrize("path", ["pairs", "chain"])
def test_real_sm90_compile_with_stamps_reads_the_global_timer_five_times_and_without_none(path):
    """The probes' stamps (device_clock): each program of a GEMM (the decode GEMM's STAMPS on the
    pairs path, moe_gemm's ``stamps`` on the chain path) stores %globaltimer at its five points; the
    shipped launch reads no timer."""
    _compile_side()
    E, k, H, I, M = 8, 2, 256, 256, 1
    w13, w2, kw = _zero_weights(E, H, I, "block")
    kernel = moe_decode.moe_decode_gemm_kernel if path == "pairs" else moe_gemm.moe_grouped_gemm_kernel
    buf = torch.zeros(1 << 12, dtype=torch.int64)
    extra = {"STAMPS": True, "stamps_ptr": buf} if path == "pairs" else {"stamps": buf}
    ptx = {}
    with jitguard.offline(compile=True):
        plan = plan_fused_moe_decode(torch.randn(M, H).to(torch.bfloat16), torch.randn(M, E), w13, w2, k,
                                                path=path, **kw)
        for stamps in (False, True):
            triton_compat.forget_compiled_variants(triton_compat.unwrap_jit_function(kernel))
            for name, launch in plan.launches:
                if name == "gate_up":
                    launch.func(*launch.args, **{**launch.keywords, **(extra if stamps else {})})
            ptx[stamps] = [c.asm["ptx"] for c in _compiled(kernel).values()]
    assert len(ptx[False]) == len(ptx[True]) == 1
    assert "%globaltimer" not in ptx[False][0]
    assert ptx[True][0].count("%globaltimer") == 5


def test_real_sm90_gate_up_writing_whole_groups_quantizes_them_without_a_counter():
    """FP8 block scales, gate_up 128 output columns wide: each program quantizes its groups from
    registers, so its sm_90 code has no arrival atomic and no CTA barrier of the last-writer path
    (the down GEMM keeps its top-k counter), and multiplies e4m3 on wgmma."""
    _compile_side()
    E, k, H, I, M = 8, 2, 256, 256, 3
    w13, w2, kw = _zero_weights(E, H, I, "block")
    tiles = MoeTileConfigs(TileConfig(16, 256, 128, 1, 4, 3, True), TileConfig(16, 64, 128, 1, 4, 3, True))
    # Both GEMMs compile here, whatever earlier tests compiled (the down tile is a common one).
    triton_compat.forget_compiled_variants(triton_compat.unwrap_jit_function(moe_decode.moe_decode_gemm_kernel))
    with jitguard.offline(compile=True):
        fused_moe_decode(torch.randn(M, H).to(torch.bfloat16), torch.randn(M, E), w13, w2, k, tile_configs=tiles,
                         path="grouped", **kw)
    new = list(_compiled(moe_decode.moe_decode_gemm_kernel).values())
    gate_up = [c.asm["ptx"] for c in new if "atom.global" not in c.asm["ptx"]]
    assert len(new) == 2 and len(gate_up) == 1, "exactly one GEMM (down, with its reduce counter) has atomics"
    assert_tokens_in_mma_n_slot(gate_up[0], 16, "e4m3")
    assert not re.search(r"cvt\.rn\.f16x2\.e4m3x2", gate_up[0]), "FP8 operands converted to f16"


def assert_waits_before_memory_and_dependents(ptx: str) -> None:
    """In the kernel body, griddepcontrol.wait comes before launch_dependents and every global load,
    store or atomic."""
    body = ptx[ptx.index("{", ptx.index(".entry")):]
    wait = body.index("griddepcontrol.wait")
    first_memory = re.search(r"\b(ld|st|atom|red)\.global", body)
    assert first_memory is not None and wait < first_memory.start(), "a global access before the wait"
    dependents = body.find("griddepcontrol.launch_dependents")
    assert dependents == -1 or wait < dependents, "the next launch may start before the wait"


@pytest.mark.parametrize("scheme", ["bf16", "block"])
def test_real_sm90_compile_of_the_pairs_path(scheme):
    """The pair-tiled GEMMs compile for sm_90 on wgmma (FP8 block scales on e4m3, never converted
    to f16); gate_up lets the down launch start early (programmatic dependent launch) and down
    waits for it before its K loop. With FP8 block scales x is quantized first by the route kernel
    (routing off), which lets gate_up start early; gate_up waits for it. The first launch is
    PDL-launched too and waits for the caller's last kernel before anything else."""
    _compile_side()
    E, k, H, I, M = 128, 8, 512, 256, 2
    fp8 = scheme == "block"
    w13, w2, kw = _zero_weights(E, H, I, scheme)
    tile = TileConfig(16 if fp8 else MIN_TOKEN_TILE, 64, 128, 1, 4, 3, True)
    before = _compiled(moe_decode.moe_decode_gemm_kernel)
    routes_before = _compiled(moe_decode.moe_decode_route_kernel)
    with jitguard.offline(compile=True):
        fused_moe_decode(torch.randn(M, H).to(torch.bfloat16), torch.randn(M, E), w13, w2, k, path="pairs",
                         tile_configs=MoeTileConfigs(tile, tile), **kw)
    new = [c for key, c in _compiled(moe_decode.moe_decode_gemm_kernel).items() if key not in before]
    new_routes = [c for key, c in _compiled(moe_decode.moe_decode_route_kernel).items() if key not in routes_before]
    assert len(new_routes) == int(fp8), "FP8 block scales quantize x in a launch of its own; bf16 has none"
    assert len(new) == 2
    for kernel in new:
        assert_tokens_in_mma_n_slot(kernel.asm["ptx"], tile.block_m, "e4m3" if fp8 else "bf16")
        assert not re.search(r"cvt\.rn\.f16x2\.e4m3x2", kernel.asm["ptx"]), "FP8 operands converted to f16"
    if not moe_decode.pdl_supported():
        pytest.skip("this Triton's launcher has no launch_pdl")
    up, down = sorted(new, key=lambda c: "griddepcontrol.launch_dependents" not in c.asm["ptx"])
    assert "griddepcontrol.launch_dependents" in up.asm["ptx"]
    assert down.metadata.launch_pdl and "griddepcontrol.wait" in down.asm["ptx"]
    assert up.metadata.launch_pdl and "griddepcontrol.wait" in up.asm["ptx"]
    # The layer's first launch (FIRST_LAUNCH_PDL) overlaps the caller's last kernel, which writes the
    # logits and x: it waits for it before any load or store, and lets the next launch start only after.
    first = new_routes[0] if fp8 else up
    assert first.metadata.launch_pdl
    assert_waits_before_memory_and_dependents(first.asm["ptx"])


def test_real_sm90_compile_of_the_chain_path():
    """The chain path's launches compile for sm_90: fused_moe's grouped GEMM on wgmma e4m3 (never
    converted to f16), and with programmatic dependent launch every launch after the route kernel
    is PDL-launched and waits for the one before."""
    _compile_side()
    E, k, H, I, M = 16, 4, 256, 256, 9
    w13, w2, kw = _zero_weights(E, H, I, "block")
    tile = TileConfig(16, 64, 128, 1, 4, 3, True)
    kernels = {name: getattr(mod, name) for mod, name in ((moe_gemm, "moe_grouped_gemm_kernel"),
                                                          (moe_quant, "_quant_groups_kernel"),
                                                          (moe_gemm, "moe_topk_reduce_kernel"))}
    for kernel in kernels.values():  # each compiles here, whatever earlier tests in this process compiled
        triton_compat.forget_compiled_variants(triton_compat.unwrap_jit_function(kernel))
    before = {name: _compiled(kernel) for name, kernel in kernels.items()}
    with jitguard.offline(compile=True):
        fused_moe_decode(torch.randn(M, H).to(torch.bfloat16), torch.randn(M, E), w13, w2, k, path="chain",
                         tile_configs=MoeTileConfigs(tile, tile), **kw)
    new = {name: [c for key, c in _compiled(kernel).items() if key not in before[name]]
           for name, kernel in kernels.items()}
    assert [len(new[name]) for name in kernels] == [2, 1, 1], "gate_up and down, the quantization, the reduce"
    for gemm in new["moe_grouped_gemm_kernel"]:
        assert_tokens_in_mma_n_slot(gemm.asm["ptx"], tile.block_m, "e4m3")
        assert not re.search(r"cvt\.rn\.f16x2\.e4m3x2", gemm.asm["ptx"]), "FP8 operands converted to f16"
    if not moe_decode.pdl_supported():
        pytest.skip("this Triton's launcher has no launch_pdl")
    for compiled in (c for cs in new.values() for c in cs):
        assert compiled.metadata.launch_pdl
        assert "griddepcontrol.wait" in compiled.asm["ptx"]


# ---- launch count: three Triton launches, no torch kernels in between ---------------------------------

_NO_KERNEL_OPS = {"empty", "empty_like", "empty_strided", "view", "_unsafe_view", "slice", "select", "alias",
                  "as_strided", "_reshape_alias", "reshape", "unsqueeze", "expand", "t", "detach", "lift_fresh"}


class _AtenOps(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(func.overloadpacket.__name__)
        return func(*args, **(kwargs or {}))


LAUNCHES = {
    ("bf16", "grouped"): ["moe_decode_route_kernel", "moe_decode_gemm_kernel", "moe_decode_gemm_kernel"],
    ("block", "grouped"): ["moe_decode_route_kernel", "moe_decode_gemm_kernel", "moe_decode_gemm_kernel"],
    ("bf16", "pairs"): ["moe_decode_gemm_kernel", "moe_decode_gemm_kernel"],
    ("block", "pairs"): ["moe_decode_route_kernel", "moe_decode_gemm_kernel", "moe_decode_gemm_kernel"],
    ("bf16", "chain"): ["moe_decode_route_kernel", "moe_grouped_gemm_kernel", "moe_grouped_gemm_kernel",
                        "moe_topk_reduce_kernel"],
    ("block", "chain"): ["moe_decode_route_kernel", "moe_grouped_gemm_kernel", "_quant_groups_kernel",
                         "moe_grouped_gemm_kernel", "moe_topk_reduce_kernel"],
}
EXPECTED_LAUNCHES = {"grouped": moe_decode.DECODE_LAUNCHES, "pairs": moe_decode.PAIRS_LAUNCHES,
                     "chain": moe_decode.CHAIN_LAUNCHES}


def _record_triton_launches(monkeypatch) -> list[str]:
    """A list that receives the kernel name of every Triton launch (JITFunction.run) from now on."""
    launches: list[str] = []
    real_run = JITFunction.run

    def counting_run(self, *args, **kwargs):
        launches.append(self.fn.__name__)
        return real_run(self, *args, **kwargs)

    monkeypatch.setattr(JITFunction, "run", counting_run)
    return launches


def test_from_logits_takes_the_unfused_chain_for_fp8_without_block_scales(monkeypatch):
    """fused_moe_from_logits: the decode kernels for a bf16 token, softmax_topk + fused_moe for per-tensor FP8."""
    _compile_side()
    E, k, H, I = 8, 2, 256, 256
    launches = _record_triton_launches(monkeypatch)
    x, logits = torch.randn(1, H).to(torch.bfloat16), torch.randn(1, E)
    with jitguard.offline(compile=False):
        fused_moe_from_logits(x, logits, torch.zeros(E, 2 * I, H, dtype=torch.bfloat16),
                              torch.zeros(E, H, I, dtype=torch.bfloat16), k)
        bf16_launches, launches[:] = list(launches), []
        fused_moe_from_logits(x, logits, torch.zeros(E, 2 * I, H, dtype=FP8), torch.zeros(E, H, I, dtype=FP8), k,
                              use_fp8_w8a8=True, w1_scale=torch.ones(E), w2_scale=torch.ones(E))
    assert set(bf16_launches) == {"moe_decode_gemm_kernel"}
    assert "moe_softmax_topk_kernel" in launches
    assert not any(name.startswith("moe_decode") for name in launches), launches


# (tokens, hidden, intermediate, decode layer?): the H200 measurement of results/moe_layer.md
# (Qwen3-30B-like and DeepSeek-V3-TP2 experts: the decode layer, grouped up to 8 tokens and chain
# above, faster than softmax_topk + fused_moe at every M <= 64 measured).
FP8_BLOCK_CHOICES = [(1, 2048, 768, True), (16, 2048, 768, True), (64, 2048, 768, True), (65, 2048, 768, False),
                     (1, 7168, 1024, True), (9, 7168, 1024, True), (64, 7168, 1024, True), (65, 7168, 1024, False)]


@pytest.mark.parametrize("M,H,I,decode", FP8_BLOCK_CHOICES)
def test_from_logits_takes_fp8_block_decode_where_it_measured_faster(M, H, I, decode):
    E = 4
    x = torch.randn(M, H).to(torch.bfloat16)
    w13 = torch.zeros(E, 2 * I, H, dtype=FP8)
    kwargs = {"use_fp8_w8a8": True, "block_shape": [128, 128]}
    assert from_logits_takes_decode(x, w13, kwargs) is decode
    assert from_logits_takes_decode(x, w13.to(torch.bfloat16), {}) is (M <= MAX_DECODE_TOKENS)
    if decode:
        assert choose_decode_path(M, E, 8, True, True) == ("grouped" if M <= 8 else "chain")


@pytest.mark.parametrize("scheme,path", sorted(LAUNCHES))
def test_decode_launches_with_a_workspace(scheme, path, monkeypatch):
    """What a CUDA graph of the layer would hold: grouped = the route kernel, gate_up, down;
    pairs = gate_up, down (FP8 block scales: x's quantization first); nothing else.

    Counts every Triton launch (JITFunction.run) and every torch op that would run a kernel."""
    _compile_side()
    E, k, H, I, M = 8, 2, 256, 256, 5
    w13, w2, kw = _zero_weights(E, H, I, scheme)
    x, logits = torch.randn(M, H).to(torch.bfloat16), torch.randn(M, E)
    ws = MoeDecodeWorkspace.for_layer(w13, w2, k)
    out = torch.empty_like(x)
    launches = _record_triton_launches(monkeypatch)
    with jitguard.offline(compile=False), _AtenOps() as aten:
        fused_moe_decode(x, logits, w13, w2, k, renormalize=True, workspace=ws, out=out, path=path, **kw)
    assert launches == LAUNCHES[scheme, path]
    # bf16 has no quantization launch on the chain path; FP8 block scales quantize x first on the pairs path
    assert len(launches) == (EXPECTED_LAUNCHES[path] - (path == "chain" and scheme == "bf16")
                             + (path == "pairs" and scheme == "block"))
    kernel_ops = [op for op in aten.ops if op not in _NO_KERNEL_OPS]
    assert kernel_ops == [], f"torch ops that launch kernels: {kernel_ops}"


class _Allocations(TorchDispatchMode):
    """Records the name and shape of every tensor an op creates in memory (not on the meta device)."""

    _CREATING: ClassVar[set[str]] = {"empty", "empty_like", "empty_strided", "zeros", "zeros_like", "new_empty",
                                     "new_zeros", "full"}

    def __init__(self):
        super().__init__()
        self.made: list[tuple[str, tuple[int, ...]]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        name = func.overloadpacket.__name__
        if name in self._CREATING and isinstance(result, torch.Tensor) and result.device.type != "meta":
            self.made.append((name, tuple(result.shape)))
        return result


@pytest.mark.parametrize("scheme", ["bf16", "block"])
def test_decode_without_a_workspace_allocates_nothing_after_its_first_call(scheme):
    """fused_moe_decode called as the README calls it (no ``workspace=``) keeps one workspace per layer shape:
    the first call allocates it, later calls allocate nothing (as fast as with ``workspace=``), another
    activation dtype gets its own, and clear_cached_workspaces lets the next call allocate again."""
    _compile_side()
    E, k, H, I, M = 8, 2, 256, 256, 2
    w13, w2, kw = _zero_weights(E, H, I, scheme)
    x, logits = torch.randn(M, H).to(torch.bfloat16), torch.randn(M, E)
    out = torch.empty_like(x)
    moe_decode.clear_cached_workspaces()
    with jitguard.offline(compile=False):
        with _Allocations() as first:
            fused_moe_decode(x, logits, w13, w2, k, out=out, **kw)
        with _Allocations() as second:
            fused_moe_decode(x, logits, w13, w2, k, out=out, **kw)
        plans = [plan_fused_moe_decode(x, logits, w13, w2, k, out=out, **kw) for _ in range(2)]
        fp16_w13, fp16_w2 = (w13.half(), w2.half()) if scheme == "bf16" else (w13, w2)
        fp16_plan = plan_fused_moe_decode(x.half(), logits, fp16_w13, fp16_w2, k, **kw)
        moe_decode.clear_cached_workspaces()
        with _Allocations() as after_clear:
            fused_moe_decode(x, logits, w13, w2, k, out=out, **kw)
    assert len(first.made) >= 10, first.made  # the workspace's buffers
    assert second.made == [], f"a second call without workspace= allocated {second.made}"
    assert plans[0].workspace is plans[1].workspace
    assert fp16_plan.workspace is not plans[0].workspace and fp16_plan.workspace.act_dtype == torch.float16
    assert after_clear.made == first.made


# ---- CUDA graphs (GPU only) ---------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("M,path", [(1, "pairs"), (1, "grouped"), (3, "pairs"), (7, "grouped"), (64, "grouped"),
                                    (64, "pairs"), (9, "chain"), (64, "chain")])
def test_cuda_graph_replays_follow_new_inputs(M, path):
    """One capture, several replays with new tokens copied into the captured inputs: every replay
    is right, so nothing in the graph depends on the routing seen at capture time."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    E, k, H, I = 16, 4, 256, 128
    gen = torch.Generator().manual_seed(M)
    x, logits, w13, w2 = _layer(M, E, k, H, I, gen, "cuda")
    _assert_graph_replays_follow_new_inputs(x, logits, w13, w2, k, path, gen, {}, 1.5e-2)


def _assert_graph_replays_follow_new_inputs(x, logits, w13, w2, k, path, gen, fp8_kw, tol, config=TL_GEMMS):
    """Capture one layer call (taking ``config``), then replay it three times with new tokens and logits copied into
    the captured inputs: each output within ``tol`` of the fp32 reference (activations quantized for FP8)."""
    ws = MoeDecodeWorkspace.for_layer(w13, w2, k)
    out = torch.empty_like(x)
    graph = _captured_graph(lambda: fused_moe_decode(x, logits, w13, w2, k, renormalize=True, workspace=ws, out=out,
                                                     path=path, config=config, **fp8_kw))
    for ref in _replays_with_new_inputs(graph, x, logits, (out,), w13, w2, k, gen, fp8_kw):
        assert _rel_err(out, ref) < tol


@pytest.mark.gpu
@pytest.mark.parametrize("path", ["pairs", "grouped"])
def test_cuda_graph_of_a_call_without_workspace_takes_the_eager_calls_and_follows_new_inputs(path):
    """The README's call (no ``workspace=``) run once, then captured (on torch's capture stream): the capture takes
    the workspace the eager call made on the current stream (zeroed outside the graph, so no memset is captured) and
    every replay with new tokens and logits is right; a call on another stream gets a workspace of its own."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    E, k, H, I, M = 16, 4, 256, 128, 3
    gen = torch.Generator().manual_seed(40 + M)
    x, logits, w13, w2 = _layer(M, E, k, H, I, gen, "cuda")
    moe_decode.clear_cached_workspaces()
    out = torch.empty_like(x)
    plans = []

    def step():
        plans.append(plan_fused_moe_decode(x, logits, w13, w2, k, renormalize=True, out=out, path=path))
        for _, launch in plans[-1].launches:
            launch()

    graph = _captured_graph(step)
    assert len(plans) == 2 and plans[1].workspace is plans[0].workspace
    for ref in _replays_with_new_inputs(graph, x, logits, (out,), w13, w2, k, gen, {}):
        assert _rel_err(out, ref) < 1.5e-2
    with torch.cuda.stream(torch.cuda.Stream()):
        other = plan_fused_moe_decode(x, logits, w13, w2, k, renormalize=True, path=path)
    assert other.workspace is not plans[0].workspace


def _captured_graph(step) -> torch.cuda.CUDAGraph:
    """``step()`` run once (its kernels compiled outside the capture), then captured in a CUDA graph."""
    step()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    return graph


def _replays_with_new_inputs(graph, x, logits, outs, w13, w2, k, gen, fp8_kw):
    """Three replays of ``graph``, each after new tokens and logits are copied into its captured inputs and its
    outputs ``outs`` are NaN-filled: yields each replay's fp32 reference (renormalized routing; activations
    quantized as the kernels do for FP8)."""
    ref_kw = {key: v.cpu() if torch.is_tensor(v) else v for key, v in fp8_kw.items()}
    if fp8_kw:
        ref_kw["quantize_activations"] = True
    for _ in range(3):
        x.copy_(torch.randn(x.shape, generator=gen).to(torch.bfloat16))
        logits.copy_(torch.randn(logits.shape, generator=gen))
        for out in outs:
            out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        yield fused_moe_decode_reference(x.cpu(), logits.cpu(), w13.cpu(), w2.cpu(), k, renormalize=True, **ref_kw)


@pytest.mark.gpu
@pytest.mark.parametrize("M,path", [(1, "pairs"), (2, "pairs"), (3, "pairs"), (8, "pairs"), (5, "grouped"),
                                    (11, "chain")])
def test_cuda_graph_replays_of_the_fp8_block_layer_follow_new_inputs(M, path):
    """FP8 block scales, captured once, on every path at odd and even token counts: the pairs path's
    4-12 pairs wait for the whole gate_up launch, its 32 take the per-pair handoff (counters zeroed by
    each replay's x launch); every replay with new tokens matches the fp32 reference with quantized
    activations (I = 320: a last 128-column group of 64, written by two gate_up tiles of 32 columns)."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    E, k, H, I = 16, 4, 256, 320
    if path == "pairs":  # takes_pair_handoff counts pairs; only the pairs path hands off per pair
        assert moe_decode.takes_pair_handoff(M * k) == (M == 8)
    gen = torch.Generator().manual_seed(M)
    x, logits, w13, w2, kw = _fp8_block_layer(M, E, k, H, I, gen, "cuda")
    _assert_graph_replays_follow_new_inputs(x, logits, w13, w2, k, path, gen, kw, 4e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("M,path", [(1, "grouped"), (5, "grouped"), (8, "grouped"), (17, "grouped"), (11, "chain")])
def test_cuda_graph_replays_with_the_route_launch_routers_apart_follow_new_inputs(M, path):
    """ROUTERS_APART: the grouped and chain paths with routers apart from the rows' programs at every M,
    the last router aligning, captured once: every replay with new tokens and logits matches the reference."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    E, k, H, I = 16, 4, 256, 320
    gen = torch.Generator().manual_seed(50 + M)
    x, logits, w13, w2, kw = _fp8_block_layer(M, E, k, H, I, gen, "cuda")
    _assert_graph_replays_follow_new_inputs(x, logits, w13, w2, k, path, gen, kw, 4e-2, config=ROUTERS_APART)


def test_fp8_block_scales_take_the_pairs_path_where_it_measured_faster_by_expert_size():
    """FP8_PAIRS_TOKENS by expert size: Qwen3-30B-like experts (4.7 MB) on the pairs path at 1-6
    tokens, DeepSeek-V3-TP2-like (22 MB) at 1, 2, 4 and 6; an unknown size counts as large; more pairs
    than a quarter of the experts never take it below PAIR_HANDOFF_MIN_PAIRS pairs, nor more than
    3/8 with the handoff."""
    small = expert_weight_bytes(2048, 768, 1)
    large = expert_weight_bytes(7168, 1024, 1)
    assert [choose_decode_path(M, 128, 8, True, True, small) for M in range(1, 10)] == \
        ["pairs"] * 6 + ["grouped"] * 2 + ["chain"]
    assert [choose_decode_path(M, 256, 8, True, True, large) for M in range(1, 9)] == \
        ["pairs", "pairs", "grouped", "pairs", "grouped", "pairs", "grouped", "grouped"]
    assert choose_decode_path(2, 256, 8, True, True) == "pairs"  # unknown size: large
    assert choose_decode_path(3, 128, 8, True, True) == "grouped"
    assert choose_decode_path(2, 32, 8, True, True, small) == "grouped"  # 16 pairs on 32 experts
    # 48 pairs: with the handoff on 128 experts (3/8), not on 96 (1/2).
    assert moe_decode.takes_pair_handoff(48) and not moe_decode.takes_pair_handoff(31)
    assert choose_decode_path(6, 128, 8, True, True, small) == "pairs"
    assert choose_decode_path(6, 96, 8, True, True, small) == "grouped"
    assert choose_decode_path(1, 128, 8, True, False, small) == "grouped"  # per-tensor / channel FP8
