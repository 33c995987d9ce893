"""Fused mixture-of-experts layer (bf16 and FP8 W8A8) that compiles once per tile config.

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

Decode (M <= 64, from router logits): ``fused_moe_decode(x, router_logits, w13, w2, top_k, ...)``
runs routing to output in 3 launches (``kernels/moe_decode.py``); ``fused_moe_from_logits`` picks
it for M <= 64 and this layer above.

>>> out = fused_moe(x, w13, w2, topk_weights, topk_ids)  # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass

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
from .moe_quant import FP8_DTYPE, quantize_fp8, quantize_fp8_reference

__all__ = [
    "MoeLayerShape",
    "fused_moe",
    "fused_moe_reference",
    "moe_align_block_size",
    "moe_gate_up",
    "moe_down",
    "check_moe_inputs",
    "select_tile_configs",
]

_ACT_DTYPES = (torch.bfloat16, torch.float16)


@dataclass(frozen=True)
class MoeLayerShape:
    """Validated sizes and quantization scheme of one fused-MoE call."""

    num_tokens: int
    hidden: int
    intermediate: int
    num_experts: int
    top_k: int
    quant: int
    scale_block: tuple[int, int]

    @property
    def fp8(self) -> bool:
        return self.quant != QUANT_NONE

    @property
    def precision(self) -> str:
        """The tile table's precision class: "bf16", "fp8" or "fp8-block"."""
        return {QUANT_NONE: "bf16", QUANT_BLOCK: "fp8-block"}.get(self.quant, "fp8")


def _shape(t: torch.Tensor) -> tuple[int, ...]:
    return tuple(t.shape)


def _quant_scheme(use_fp8_w8a8: bool, per_channel_quant: bool, block_shape) -> tuple[int, tuple[int, int]]:
    if not use_fp8_w8a8:
        if per_channel_quant or block_shape is not None:
            raise ValueError("fused_moe: per_channel_quant/block_shape need use_fp8_w8a8=True")
        return QUANT_NONE, (128, 128)
    if block_shape is not None:
        if per_channel_quant:
            raise ValueError("fused_moe: choose one of per_channel_quant and block_shape, not both")
        if len(block_shape) != 2:
            raise ValueError(f"fused_moe: block_shape must be [block_n, block_k], got {block_shape!r}")
        bn, bk = int(block_shape[0]), int(block_shape[1])
        for name, v in (("block_n", bn), ("block_k", bk)):
            if v < 16 or v & (v - 1):
                raise ValueError(f"fused_moe: block_shape {name} must be a power of two >= 16, got {v}")
        return QUANT_BLOCK, (bn, bk)
    if per_channel_quant:
        return QUANT_CHANNEL, (128, 128)
    return QUANT_TENSOR, (128, 128)


def _normalize_w_scale(scale, name: str, E: int, rows: int, K: int, quant: int, blk: tuple[int, int]):
    if scale is None:
        raise ValueError(f"fused_moe: {name} is required with use_fp8_w8a8=True")
    if scale.dtype != torch.float32:
        raise TypeError(f"fused_moe: {name} must be float32, got {scale.dtype}")
    if quant == QUANT_TENSOR:
        if scale.numel() != E:
            raise ValueError(f"fused_moe: per-tensor {name} must have one scale per expert ({E}), got shape {_shape(scale)}")
        return scale.reshape(E).contiguous()
    if quant == QUANT_CHANNEL:
        if scale.numel() != E * rows or scale.shape[0] != E or scale.shape[1] != rows:
            raise ValueError(f"fused_moe: per-channel {name} must be [{E}, {rows}] (or [{E}, {rows}, 1]), got shape {_shape(scale)}")
        return scale.reshape(E, rows).contiguous()
    want = (E, -(-rows // blk[0]), -(-K // blk[1]))
    if _shape(scale) != want:
        raise ValueError(f"fused_moe: block {name} must be {list(want)} for block_shape {list(blk)}, got shape {_shape(scale)}")
    return scale.contiguous()


def check_moe_inputs(
    x: torch.Tensor,
    w13: torch.Tensor,
    w2: torch.Tensor,
    topk_weights: torch.Tensor,
    topk_ids: torch.Tensor,
    *,
    use_fp8_w8a8: bool = False,
    per_channel_quant: bool = False,
    block_shape=None,
) -> MoeLayerShape:
    """Validate shapes and dtypes; raise a one-line error naming the argument at fault."""
    if x.dim() != 2:
        raise ValueError(f"fused_moe: x must be [tokens, hidden], got shape {_shape(x)}")
    if x.dtype not in _ACT_DTYPES:
        raise TypeError(f"fused_moe: x must be bfloat16 or float16, got {x.dtype}")
    if w13.dim() != 3 or w2.dim() != 3:
        raise ValueError(f"fused_moe: w13 must be [E, 2I, H] and w2 [E, H, I], got {_shape(w13)} and {_shape(w2)}")
    M, H = x.shape
    E, two_i, h13 = w13.shape
    if h13 != H:
        raise ValueError(f"fused_moe: w13 {_shape(w13)} does not match hidden size {H} of x {_shape(x)}")
    if two_i % 2:
        raise ValueError(f"fused_moe: w13 rows (2I) must be even (gate then up), got {two_i}")
    I = two_i // 2
    if w2.shape[0] != E:
        raise ValueError(f"fused_moe: w13 has {E} experts but w2 has {w2.shape[0]}")
    if _shape(w2)[1:] != (H, I):
        raise ValueError(f"fused_moe: w2 must be [E, {H}, {I}] to match w13 {_shape(w13)}, got {_shape(w2)}")
    quant, blk = _quant_scheme(use_fp8_w8a8, per_channel_quant, block_shape)
    want_w = FP8_DTYPE if quant != QUANT_NONE else x.dtype
    for name, w in (("w13", w13), ("w2", w2)):
        if w.dtype != want_w:
            hint = " (set use_fp8_w8a8=True for FP8 weights)" if w.dtype == FP8_DTYPE else ""
            raise TypeError(f"fused_moe: {name} must be {want_w} to match x {x.dtype}, got {w.dtype}{hint}")
        if w.stride(2) != 1:
            raise ValueError(f"fused_moe: {name} needs a contiguous last dimension, got strides {w.stride()}")
    if topk_ids.dim() != 2 or topk_ids.shape[0] != M:
        raise ValueError(f"fused_moe: topk_ids must be [{M}, top_k], got shape {_shape(topk_ids)}")
    if _shape(topk_weights) != _shape(topk_ids):
        raise ValueError(f"fused_moe: topk_weights {_shape(topk_weights)} and topk_ids {_shape(topk_ids)} differ in shape")
    if topk_ids.dtype not in (torch.int32, torch.int64):
        raise TypeError(f"fused_moe: topk_ids must be int32 or int64, got {topk_ids.dtype}")
    if not topk_weights.is_floating_point():
        raise TypeError(f"fused_moe: topk_weights must be floating point, got {topk_weights.dtype}")
    top_k = topk_ids.shape[1]
    if not 1 <= top_k <= E:
        raise ValueError(f"fused_moe: top_k must be in [1, {E}] experts, got {top_k}")
    return MoeLayerShape(M, H, I, E, top_k, quant, blk)


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
        w1s = _normalize_w_scale(w1_scale, "w1_scale", shape.num_experts, 2 * shape.intermediate, shape.hidden, shape.quant, shape.scale_block)
        w2s = _normalize_w_scale(w2_scale, "w2_scale", shape.num_experts, shape.hidden, shape.intermediate, shape.quant, shape.scale_block)
        if shape.quant != QUANT_TENSOR and (a1_scale is not None or a2_scale is not None):
            raise ValueError("fused_moe: static a1_scale/a2_scale are only supported with per-tensor FP8")
    elif any(s is not None for s in (w1_scale, w2_scale, a1_scale, a2_scale)):
        raise ValueError("fused_moe: scales were given but use_fp8_w8a8=False")
    if x.stride(1) != 1:
        x = x.contiguous()
    if out is None:
        out = torch.empty_like(x)
    elif _shape(out) != _shape(x) or out.dtype != x.dtype:
        raise ValueError(f"fused_moe: out must be {_shape(x)} {x.dtype}, got {_shape(out)} {out.dtype}")
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
        h = xf[tok] @ _dequant_weight(w13[e : e + 1], _expert_scale(w1_scale, e, shape.quant), shape.quant, shape.scale_block)[0].T
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


_DECODE_NAMES = ("fused_moe_decode", "fused_moe_from_logits")


def __getattr__(name: str):  # noqa: ANN202 - PEP 562 module attribute
    # The decode path (kernels/moe_decode.py) builds on this module, so it loads on first use.
    if name in _DECODE_NAMES:
        from . import moe_decode
        return getattr(moe_decode, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
