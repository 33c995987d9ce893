"""The MoE layer as a chain of launches (bf16 and FP8 W8A8) that compiles once per tile config.

``fused_moe(x, w13, w2, topk_weights, topk_ids, ...)`` follows the usual signature (vLLM's
``fused_experts``): ``x`` [M, H], ``w13`` [E, 2I, H] (gate rows then up rows), ``w2`` [E, H, I],
``topk_weights`` [M, k], ``topk_ids`` [M, k]. Steps, all on the device and CUDA-graph
capturable (no host sync, buffers sized for the worst case):

1. align: pairs sorted by expert, padded to the token tile (``moe_align``);
2. gate_up GEMM with ``silu(gate) * up`` in its epilogue (``moe_gemm``);
3. down GEMM, each row times its routing weight;
4. sum over the top-k pairs of each token.

FP8 W8A8: ``use_fp8_w8a8=True`` with weights in ``torch.float8_e4m3fn`` and fp32 scales laid out
as upstream does: per-tensor ``w1_scale`` [E], per-channel (``per_channel_quant=True``)
[E, 2I] / [E, H] (a trailing 1 is accepted), block (``block_shape=[128, 128]``)
[E, ceil(2I/128), ceil(H/128)] / [E, ceil(H/128), ceil(I/128)]. Activations are quantized on the
fly: per tensor (dynamic, or static ``a1_scale`` / ``a2_scale``), per token for per-channel
weights, per token and 128 columns for block weights.

Decode (M <= 64, from router logits): ``fused_moe_decode`` (``kernels/moe_decode.py``) runs
routing to output in two or three launches; ``fused_moe_from_logits`` (``kernels/moe_dispatch.py``)
picks between it and ``softmax_topk`` + this chain for any M.

>>> out = fused_moe(x, w13, w2, topk_weights, topk_ids)  # doctest: +SKIP
"""

from __future__ import annotations

import torch

from .moe_align import AlignedRouting, moe_align_block_size
from .moe_configs import MoeTileConfigs, TileConfig, select_tile_configs
from .moe_gemm import (
    QUANT_BLOCK,
    QUANT_CHANNEL,
    QUANT_NONE,
    QUANT_TENSOR,
    launch_moe_gemm,
    launch_topk_reduce,
)
from .moe_inputs import MoeLayerShape, check_moe_inputs, normalize_w_scale
from .moe_quant import quantize_fp8, quantize_fp8_reference

__all__ = [
    "fused_moe",
    "fused_moe_reference",
    "moe_align_block_size",
    "moe_down",
    "moe_gate_up",
    "select_tile_configs",
]

def _act_quant_mode(quant: int) -> str:
    return {QUANT_TENSOR: "tensor", QUANT_CHANNEL: "row", QUANT_BLOCK: "group"}[quant]


def moe_gate_up(
    x: torch.Tensor,
    w13: torch.Tensor,
    routing: AlignedRouting,
    cfg: TileConfig,
    shape: MoeLayerShape,
    *,
    w1_scale: torch.Tensor | None = None,
    a1_scale: torch.Tensor | None = None,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """gate_up GEMM with ``silu(gate) * up``: returns [M * top_k, I] in x's dtype, one row per pair.

    Rows of pairs whose expert is out of range are left unwritten.
    """
    if out is None:
        out = torch.empty((shape.num_tokens * shape.top_k, shape.intermediate), dtype=x.dtype, device=x.device)
    a, a_scale = x, None
    if shape.fp8:
        a, a_scale = quantize_fp8(
            x, _act_quant_mode(shape.quant), group_size=shape.scale_block[1], static_scale=a1_scale
        )
    launch_moe_gemm(
        a, w13, out, routing, cfg, gated=True, a_rows_per_pair_div=shape.top_k,
        quant=shape.quant, a_scale=a_scale, w_scale=w1_scale, scale_block=shape.scale_block,
    )
    return out


def moe_down(
    inter: torch.Tensor,
    w2: torch.Tensor,
    routing: AlignedRouting,
    cfg: TileConfig,
    shape: MoeLayerShape,
    topk_weights: torch.Tensor,
    topk_ids: torch.Tensor,
    *,
    w2_scale: torch.Tensor | None = None,
    a2_scale: torch.Tensor | None = None,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """down GEMM times the routing weight: returns [M * top_k, H] in inter's dtype."""
    if out is None:
        out = torch.empty((shape.num_tokens * shape.top_k, shape.hidden), dtype=inter.dtype, device=inter.device)
    a, a_scale = inter, None
    if shape.fp8:
        a, a_scale = quantize_fp8(
            inter, _act_quant_mode(shape.quant), group_size=shape.scale_block[1], static_scale=a2_scale,
            row_expert_ids=topk_ids.reshape(-1), num_experts=shape.num_experts,
        )
    launch_moe_gemm(
        a, w2, out, routing, cfg, gated=False, a_rows_per_pair_div=1,
        topk_weights=topk_weights.reshape(-1).float(), quant=shape.quant, a_scale=a_scale,
        w_scale=w2_scale, scale_block=shape.scale_block,
    )
    return out


def fused_moe(
    x: torch.Tensor,
    w13: torch.Tensor,
    w2: torch.Tensor,
    topk_weights: torch.Tensor,
    topk_ids: torch.Tensor,
    *,
    use_fp8_w8a8: bool = False,
    per_channel_quant: bool = False,
    block_shape: list[int] | None = None,
    w1_scale: torch.Tensor | None = None,
    w2_scale: torch.Tensor | None = None,
    a1_scale: torch.Tensor | None = None,
    a2_scale: torch.Tensor | None = None,
    swap_ab: bool | None = None,
    tile_configs: MoeTileConfigs | None = None,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """Fused MoE layer: returns [M, H] in x's dtype.

    ``swap_ab`` forces the swap-AB path on or off (default: the table's choice);
    ``tile_configs`` overrides the table. Expert ids outside ``[0, E)`` are dropped (their pair
    contributes nothing), as with experts owned by another rank.
    """
    shape = check_moe_inputs(
        x, w13, w2, topk_weights, topk_ids,
        use_fp8_w8a8=use_fp8_w8a8, per_channel_quant=per_channel_quant, block_shape=block_shape,
    )
    w1s = w2s = None
    if shape.fp8:
        w1s = normalize_w_scale(w1_scale, "w1_scale", shape.num_experts, 2 * shape.intermediate, shape.hidden,
                                shape.quant, shape.scale_block)
        w2s = normalize_w_scale(w2_scale, "w2_scale", shape.num_experts, shape.hidden, shape.intermediate,
                                shape.quant, shape.scale_block)
        if shape.quant != QUANT_TENSOR and (a1_scale is not None or a2_scale is not None):
            raise ValueError("fused_moe: static a1_scale/a2_scale are only supported with per-tensor FP8")
    elif any(s is not None for s in (w1_scale, w2_scale, a1_scale, a2_scale)):
        raise ValueError("fused_moe: scales were given but use_fp8_w8a8=False")
    if x.stride(1) != 1:
        x = x.contiguous()
    if out is None:
        out = torch.empty_like(x)
    elif tuple(out.shape) != tuple(x.shape) or out.dtype != x.dtype or out.stride(1) != 1:
        raise ValueError(f"fused_moe: out must be {tuple(x.shape)} {x.dtype} with contiguous rows, "
                         f"got {tuple(out.shape)} {out.dtype} strides {out.stride()}")
    if shape.num_tokens == 0:
        return out
    cfgs = tile_configs or select_tile_configs(shape.num_tokens, shape.num_experts, shape.precision)
    if cfgs.gate_up.block_m != cfgs.down.block_m:
        raise ValueError("fused_moe: tile_configs gate_up and down must share block_m")
    gate_up_cfg, down_cfg = cfgs.gate_up, cfgs.down
    if swap_ab is not None:
        gate_up_cfg = TileConfig(**{**gate_up_cfg.__dict__, "swap_ab": swap_ab})
        down_cfg = TileConfig(**{**down_cfg.__dict__, "swap_ab": swap_ab})
    gate_up_cfg.check("fused_moe gate_up tile")
    down_cfg.check("fused_moe down tile")
    routing = moe_align_block_size(topk_ids, shape.num_experts, cfgs.block_m)
    inter = moe_gate_up(x, w13, routing, gate_up_cfg, shape, w1_scale=w1s, a1_scale=a1_scale)
    pair_out = moe_down(inter, w2, routing, down_cfg, shape, topk_weights, topk_ids, w2_scale=w2s, a2_scale=a2_scale)
    launch_topk_reduce(pair_out, topk_ids, out, shape.num_experts)
    return out


def _expert_scale(scale, e: int, quant: int):
    if quant == QUANT_NONE:
        return None
    return scale[e : e + 1]


def _dequant_weight(w: torch.Tensor, scale, quant: int, blk: tuple[int, int]) -> torch.Tensor:
    wf = w.float()
    if quant == QUANT_NONE:
        return wf
    E, R, K = w.shape
    if quant == QUANT_TENSOR:
        return wf * scale.reshape(E, 1, 1).float()
    if quant == QUANT_CHANNEL:
        return wf * scale.reshape(E, R, 1).float()
    s = scale.float().repeat_interleave(blk[0], dim=1)[:, :R].repeat_interleave(blk[1], dim=2)[:, :, :K]
    return wf * s


def _fp8_round_trip(x: torch.Tensor, mode: str, group: int) -> torch.Tensor:
    q, scale = quantize_fp8_reference(x, mode, group_size=group)
    qf = q.float()
    if mode == "tensor":
        return qf * scale
    if mode == "row":
        return qf * scale[:, None]
    return qf * scale.repeat_interleave(group, dim=1)[:, : x.shape[1]]


def fused_moe_reference(
    x: torch.Tensor,
    w13: torch.Tensor,
    w2: torch.Tensor,
    topk_weights: torch.Tensor,
    topk_ids: torch.Tensor,
    *,
    use_fp8_w8a8: bool = False,
    per_channel_quant: bool = False,
    block_shape: list[int] | None = None,
    w1_scale: torch.Tensor | None = None,
    w2_scale: torch.Tensor | None = None,
    quantize_activations: bool = False,
) -> torch.Tensor:
    """Plain-torch fp32 reference with dequantized weights: [M, H] fp32.

    With ``quantize_activations`` (FP8 only) the activations go through the same FP8 round trip
    as in :func:`fused_moe` (dynamic scales), and the intermediate is rounded to x's dtype first,
    so the comparison isolates kernel errors from quantization error.
    """
    shape = check_moe_inputs(
        x, w13, w2, topk_weights, topk_ids,
        use_fp8_w8a8=use_fp8_w8a8, per_channel_quant=per_channel_quant, block_shape=block_shape,
    )
    emulate = quantize_activations and shape.fp8
    mode = _act_quant_mode(shape.quant) if shape.fp8 else ""
    xf = _fp8_round_trip(x, mode, shape.scale_block[1]) if emulate else x.float()
    out = torch.zeros((shape.num_tokens, shape.hidden), dtype=torch.float32, device=x.device)
    I = shape.intermediate
    acts = {}
    for e in range(shape.num_experts):
        tok, slot = (topk_ids == e).nonzero(as_tuple=True)
        if tok.numel() == 0:
            continue
        # Dequantize one expert at a time: the whole layer in fp32 can be tens of GB.
        w13_e = _dequant_weight(w13[e : e + 1], _expert_scale(w1_scale, e, shape.quant), shape.quant, shape.scale_block)
        h = xf[tok] @ w13_e[0].T
        acts[e] = (tok, slot, torch.nn.functional.silu(h[:, :I]) * h[:, I:])
    if emulate:
        # The tensor scale of the intermediate spans every pair, so quantize all pairs at once.
        inter = torch.zeros((shape.num_tokens * shape.top_k, I), dtype=torch.float32, device=x.device)
        used = torch.zeros(shape.num_tokens * shape.top_k, dtype=torch.bool, device=x.device)
        for tok, slot, act in acts.values():
            inter[tok * shape.top_k + slot] = act.to(x.dtype).float()
            used[tok * shape.top_k + slot] = True
        inter[used] = _fp8_round_trip(inter[used], mode, shape.scale_block[1])
        acts = {e: (tok, slot, inter[tok * shape.top_k + slot]) for e, (tok, slot, _) in acts.items()}
    for e, (tok, slot, act) in acts.items():
        w2f = _dequant_weight(w2[e : e + 1], _expert_scale(w2_scale, e, shape.quant), shape.quant, shape.scale_block)[0]
        y = (act @ w2f.T) * topk_weights[tok, slot].float()[:, None]
        out.index_add_(0, tok, y)
    return out
