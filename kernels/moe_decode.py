"""Decode MoE layer (M <= 64 tokens): router logits to layer output in two to five launches.

``fused_moe_decode(x, router_logits, w13, w2, top_k, ..., path="auto")`` runs the whole layer,
routing included, on one of three paths (``path="auto"`` picks by :func:`choose_decode_path`):

- ``"grouped"``, **three launches** (``DECODE_LAUNCHES``; four on the Gluon GEMMs, below), described below
  (``"auto"``: FP8 up to ``FP8_CHAIN_ABOVE_TOKENS`` tokens with block scales, and wherever its GEMMs run in
  Gluon, at every M with per-tensor / channel scales);
- ``"pairs"``, **two launches** (``PAIRS_LAUNCHES``) for bf16/fp16, three for FP8 block scales: the
  two GEMMs of the grouped path with one token tile per (token, expert) pair and no routing
  launch: every GEMM program routes its own token (``softmax_topk_row``, the logits row is 0.5
  KB) and takes the expert of its slot. With FP8 block scales a first launch quantizes x alone
  (the route kernel with routing off); gate_up's programs route while it
  runs and wait for it before their K loop. From ``PAIR_HANDOFF_MIN_PAIRS`` pairs the down
  GEMM's programs start on their own pair's gate_up columns (a counter per pair) instead of
  waiting for the whole gate_up launch. No alignment, but pairs that share an expert read it
  once each, so ``"auto"`` takes it for bf16/fp16 at one token, and up to
  ``BF16_PAIRS_MAX_TOKENS`` while the pairs are at most a quarter of the experts; for FP8 block
  scales at ``FP8_PAIRS_TOKENS`` tokens (by expert size) with as few pairs (3/8 of the experts
  with the handoff);
- ``"chain"``, **five launches** with FP8 block scales, four for bf16/fp16 (``CHAIN_LAUNCHES``):
  the grouped path's route launch, then ``moe_gemm``'s grouped GEMM as gate_up (fused_moe's
  tiles), the intermediate quantized per 128-column group by a launch of its own (FP8), the
  grouped GEMM as down into activation-dtype pair rows, and ``moe_gemm``'s top-k reduce: the
  unfused chain's GEMMs, epilogues and reduce without its routing, alignment and activation
  quantization launches. ``"auto"`` takes it for bf16/fp16 wherever it does not take the pairs
  path, and for FP8 block scales above ``FP8_CHAIN_ABOVE_TOKENS`` tokens (except where the grouped
  path's GEMMs run in Gluon: ``GLUON_FP8_TOKENS``): there its GEMMs' plain epilogues beat the grouped
  path's fused ones. Its output equals ``softmax_topk`` +
  ``fused_moe``'s bit for bit.

Where Triton offers programmatic dependent launch (``launch_pdl``, Triton >= 3.4 on sm_90),
each launch is PDL-linked to the one before: it starts while the previous one runs and waits
(``griddepcontrol.wait``) before reading its results; the pairs path's GEMMs route before they
wait; the chain path's launches wait at their start. The layer's first launch waits for the
caller's last kernel (which wrote x and the logits) before it reads or writes anything and only
then lets its next launch start. Without PDL the launches are ordinary
stream-ordered launches.

The grouped path (its buffers in a :class:`MoeDecodeWorkspace`: the one passed, or with none the one kept for
the layer's shape, device and stream, :func:`cached_workspace`, allocated by the first call only):

1. ``moe_decode_route_kernel`` (``moe_decode_route``), one program per token and one more:
   softmax top-k (``moe_routing``; ties to the lower expert index), the activation scales of ``x`` for FP8
   (per token, per 128-column group, or a tensor absmax; with block scales also x as e4m3), and
   zeroing of the intermediate's absmax slots; then the expert-sorted, tile-padded pair layout
   of ``moe_align`` for all tokens at once. Up to ``FEW_TOKENS`` tokens (and ``FEW_ELEMENTS``
   logits), the extra program routes them all in one top-k and builds the layout in registers
   while the others quantize their rows; beyond, 2 * M programs: M route one token each and take
   their pairs' ranks through per-expert counters while M quantize the rows, and the router that
   arrives last (an atomic counter) builds the layout (routers apart; with a tensor scale
   each of M programs routes and quantizes its token, the last to arrive aligns). No host
   sync, no extra launch. Where the extra program's top-k tile holds 1024 logits or more the
   launch runs on ``ROUTE_WIDE_TILE_WARPS`` warps (``_route_warps``).
2. ``moe_decode_gemm_kernel`` as gate_up: grouped GEMM over the sorted tiles with ``silu(gate) *
   up`` in its epilogue. FP8 activations come quantized from launch 1 (block scales) or are
   quantized as they are loaded (per tensor / channel); the epilogue records the absmax the down
   GEMM's activation scales need, and with block scales the last writer of each 128-column group
   writes that group again as e4m3 with its scale.
3. ``moe_decode_gemm_kernel`` as down: loads the e4m3 intermediate (block scales; per tensor /
   channel: quantizes the intermediate as it loads it), multiplies each row by its routing weight
   and writes fp32 rows per (token, expert) pair; per column tile, the program that arrives last
   sums each token's top-k rows in a fixed order (deterministic, no float atomics) and writes the
   output. No separate reduce launch.

Upstream runs the same layer as 6-8 launches (top-k, alignment, quantization, GEMM1,
activation, quantization, GEMM2, reduce). Everything here is CUDA-graph capturable: grids and
buffers depend only on M and the layer shape, never on the routing; the counters reset
themselves, so graph replays need no memset. One compiled variant per (tile config, path, handoff) for
every M (each token-count-derived integer is in ``do_not_specialize``); the tiles come from
``moe_configs.select_decode_tile_configs`` (the fused-MoE table, with decode rows where they differ,
and rows of their own for FP8 block scales on the pairs path).

With FP8 block scales the pairs and grouped paths run their two GEMMs as ``moe_decode_gluon``'s kernel
(Gluon, Triton >= 3.5: each K step's wgmma stays in flight across the block scaling) at the token counts
where that measured faster (``DecodeConfig.gluon_fp8_gemms``, ``GLUON_FP8_TOKENS``; ``DecodePlan.gemms`` says
which ran), on tiles chosen by token count where other tiles measured faster (``gluon_tiles``: ``GLUON_TILES``,
``GLUON_TILES_AT``, tuned on an H200, and ``GLUON_TILES_ON_GPU``, tuned on other GPUs and taken on them first,
as ``GLUON_FP8_TOKENS_ON_GPU`` is for the token counts;
each tile one more compiled variant of the Gluon kernel, never one per M;
``benchmarks/tune_decode_gluon_tiles.py`` sweeps them); ``moe_decode_gemm_kernel`` everywhere else and on
older Tritons. There down writes its pair rows in the activation dtype and
``moe_gemm``'s top-k reduce, launched after it, sums them in fp32 (one launch more,
measured faster than down's own last-arrival sum). On the pairs path the Gluon GEMMs do not route: the x launch
routes each token, in a program of its own beside the one that quantizes the token's row
(FP8), and the GEMMs read each pair's expert from ``topk_ids``. bf16/fp16 take the
same kernel with no scales (``DecodeConfig.gluon_bf16_gemms``, ``GLUON_BF16_TOKENS``, ``GLUON_BF16_TILES_AT``;
x and the intermediate read as they are, the pairs path's x launch only routing) where that measured faster: for
Qwen3-30B-sized experts the pairs path at 2 tokens and the grouped path at 3-7, which ``"auto"`` then takes
in place of the chain.

Every table above is the default of a :class:`DecodeConfig` field of the same name in lower case
(``DEFAULT_DECODE_CONFIG``); ``fused_moe_decode(config=dataclasses.replace(DEFAULT_DECODE_CONFIG, ...))`` takes
other choices for one call, the tests' and tuners' way of forcing a path or a tile.

FP8 W8A8 takes the scale layouts of :func:`jitguard.kernels.fused_moe.fused_moe` (per tensor,
per channel, block 128x128), with dynamic activation scales only, on the grouped path. Which of
it and ``softmax_topk`` + ``fused_moe`` is faster depends on the shape
(benchmarks/results/moe_layer.md): ``moe_dispatch.fused_moe_from_logits`` picks by
``from_logits_takes_decode``.

>>> ws = MoeDecodeWorkspace.for_layer(w13, w2, top_k=8, act_dtype=torch.bfloat16)  # doctest: +SKIP
>>> out = fused_moe_decode(x, router_logits, w13, w2, 8, renormalize=True, workspace=ws)  # doctest: +SKIP
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import torch
import triton
import triton.language as tl

from .device_clock import stamp
from .moe_align import AlignedRouting, max_padded_len
from .moe_chain import fused_moe_reference
from .moe_configs import (
    MoeTileConfigs,
    expert_size_class,
    expert_weight_bytes,
    select_decode_tile_configs,
    select_tile_configs,
)
from .moe_decode_gluon import GluonTile, gluon_gemms_supported, moe_decode_gemm_gluon_kernel
from .moe_decode_route import moe_decode_route_kernel
from .moe_gemm import (
    QUANT_BLOCK,
    QUANT_CHANNEL,
    QUANT_NONE,
    QUANT_TENSOR,
    launch_moe_gemm,
    launch_topk_reduce,
    moe_acc_zeros,
    moe_block_scales,
    moe_dot,
    moe_load_a,
    moe_load_b,
    moe_scale_epilogue,
    moe_scale_step,
    moe_silu_mul,
    moe_tile_of_program,
    moe_tile_pointers,
    moe_weight_rows,
    weight_scale_strides,
)
from .moe_inputs import check_moe_inputs, normalize_w_scale
from .moe_quant import FP8_MAX, launch_quantize_groups
from .moe_routing import HAS_BATCHED_TOPK, check_router_logits, softmax_topk_reference, softmax_topk_row
from .pdl import pdl_enter, pdl_supported, wait_for_prior_launch

__all__ = [
    "CHAIN_LAUNCHES",
    "DECODE_LAUNCHES",
    "DECODE_PATHS",
    "DEFAULT_DECODE_CONFIG",
    "MAX_DECODE_TOKENS",
    "PAIRS_LAUNCHES",
    "DecodeConfig",
    "DecodePlan",
    "MoeDecodeWorkspace",
    "cached_workspace",
    "choose_decode_path",
    "clear_cached_workspaces",
    "fused_moe_decode",
    "fused_moe_decode_reference",
    "plan_fused_moe_decode",
    "takes_pair_handoff",
]

MAX_DECODE_TOKENS = 64
DECODE_LAUNCHES = 3
PAIRS_LAUNCHES = 2
CHAIN_LAUNCHES = 5  # with FP8 block scales; bf16/fp16 have no quantization launch (4)
DECODE_PATHS = ("auto", "pairs", "grouped", "chain")
_MAX_BLOCK_M = 64
_MIN_BLOCK_N = 16
_MIN_BLOCK_M = 8  # TileConfig.check's smallest tile
_MIN_AMAX = 1e-10

# Triton 3.9's interpreter returns garbage for tl.dot on bf16 operands (moe_gemm notes the same).
_INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
# A (gate_up, down) pair of Gluon tiles in the tables, each as (out_n, stages).
TilePair = tuple[tuple[int, int], tuple[int, int]]


def choose_decode_path(num_tokens: int, num_experts: int, top_k: int, fp8: bool, block_scales: bool = False,
                       expert_bytes: int | None = None, hidden: int | None = None,
                       intermediate: int | None = None, gpu_name: str | None = None,
                       config: DecodeConfig | None = None) -> str:
    """The path ``fused_moe_decode(path="auto")`` takes, by H200 measurement
    (benchmarks/results/moe_layer.md):

    - bf16/fp16: ``"pairs"`` (two launches) at one token, and up to ``BF16_PAIRS_MAX_TOKENS``
      while the pairs are at most a quarter of the experts (it reads an expert once per pair
      routed to it: Qwen3-30B-like, 128 experts, top 8, M <= 2); else ``"chain"`` (four launches):
      Qwen3-30B-like M = 3..64 2-5% faster than the grouped path, Mixtral-like (8 experts, top 2)
      level with it within 0.3% at M = 2..64.
    - FP8 block scales (``block_scales``): ``"grouped"`` (three launches) up to
      ``FP8_CHAIN_ABOVE_TOKENS`` tokens, ``"chain"`` (five) above; the pairs path (three) at
      ``FP8_PAIRS_TOKENS[expert_size_class(expert_bytes)]`` tokens with few pairs per expert
      (``expert_bytes``: one expert's w13 and w2 weight bytes; unknown counts as large).
    - FP8 per tensor / per channel: ``"grouped"``.
    - With ``hidden`` and ``intermediate`` given, FP8 block scales take ``"grouped"`` wherever its GEMMs
      run in Gluon and the pairs path's would not (``takes_gluon_gemms``; GLUON_FP8_TOKENS), above
      ``FP8_CHAIN_ABOVE_TOKENS`` too where GLUON_FP8_TOKENS lists the token count; bf16/fp16 take it
      where GLUON_BF16_TOKENS lists the token count for it. ``gpu_name`` (as ``torch.cuda.get_device_name``
      gives it) takes GLUON_FP8_TOKENS_ON_GPU's token counts for that GPU where it lists the expert size class.

    Each table is ``config``'s (:class:`DecodeConfig`; None: the shipped ``DEFAULT_DECODE_CONFIG``).
    """
    cfg = config or DEFAULT_DECODE_CONFIG
    num_pairs = num_tokens * top_k
    few_pairs = 4 * num_pairs <= num_experts
    if not fp8:
        if (hidden is not None and intermediate is not None
                and _bf16_gluon_listed(num_tokens, "grouped", hidden, intermediate, cfg)
                and takes_gluon_gemms(num_tokens, "grouped", False, hidden, intermediate, expert_bytes,
                                      unquantized=True, config=cfg)):
            return "grouped"
        return "pairs" if num_tokens == 1 or (few_pairs and num_tokens <= cfg.bf16_pairs_max_tokens) else "chain"
    if block_scales and num_tokens > cfg.fp8_chain_above_tokens:
        # ... unless the grouped path's GEMMs run in Gluon at this token count (GLUON_FP8_TOKENS lists it).
        gluon_grouped = (hidden is not None and intermediate is not None
                         and _gluon_measured_at(num_tokens, "grouped", expert_bytes, cfg, gpu_name=gpu_name)
                         and takes_gluon_gemms(num_tokens, "grouped", block_scales, hidden, intermediate,
                                               expert_bytes, gpu_name=gpu_name, config=cfg))
        return "grouped" if gluon_grouped else "chain"
    pairs_tokens = cfg.fp8_pairs_tokens.get(expert_size_class(expert_bytes), ())
    # With the per-pair handoff the pairs path was measured faster up to 3/8 pairs per expert.
    if takes_pair_handoff(num_pairs, cfg):
        few_pairs = 8 * num_pairs <= 3 * num_experts
    pairs = block_scales and num_tokens in pairs_tokens and few_pairs
    if pairs and hidden is not None and intermediate is not None:
        pairs = (takes_gluon_gemms(num_tokens, "pairs", block_scales, hidden, intermediate, expert_bytes,
                                   gpu_name=gpu_name, config=cfg)
                 or not takes_gluon_gemms(num_tokens, "grouped", block_scales, hidden, intermediate, expert_bytes,
                                          gpu_name=gpu_name, config=cfg))
    return "pairs" if pairs else "grouped"


def takes_pair_handoff(num_pairs: int, config: DecodeConfig | None = None) -> bool:
    """Whether the FP8 pairs path (on tl's GEMMs) hands each pair's gate_up columns to its down programs from
    ``config.pair_handoff_min_pairs`` pairs instead of down waiting for the whole gate_up launch (its x launch
    zeroes the pair counters)."""
    return num_pairs >= (config or DEFAULT_DECODE_CONFIG).pair_handoff_min_pairs


# bf16/fp16 take the pairs path up to this many tokens (with few pairs per expert), the chain path
# beyond. H200, Qwen3-30B-like (2026-12-01), us, pairs / chain / grouped: M = 2
# 43.5 / 45.7 / 45.3, M = 3 63.3 / 59.7 / 62.7, M = 4 77.4 / 75.4 / 77.9.
BF16_PAIRS_MAX_TOKENS = 2


# Token counts at which FP8 block scales take the pairs path (with few pairs per expert), by expert
# size class (moe_configs.expert_size_class). H200, 2026-12-02, pairs with x quantized
# first against grouped side by side in three calls (benchmarks/results/moe_layer.md): Qwen3-30B-like
# M = 1-4 0.8-1.2 us faster (2-5%; M = 3 in one call), slower at M = 5; DeepSeek-V3-TP2 M = 2 1.0-2.3
# us faster, M = 1, 3, 4, 5 2.4-8.7 us slower (its down GEMM on one-pair tiles). Before x was quantized
# first (gate_up took each group's scale from its bf16 tile) the pairs path was slower.
# With the per-pair handoff from 32 pairs (us, pairs with handoff / grouped):
# Qwen3-30B-like M = 5 55.4 / 64.5, M = 6 62.3 / 67.5 (M = 8 76.5 / 71.4); DeepSeek-V3-TP2 M = 4
# 169.1 / 171.4, M = 6 245.4 / 254.0 (M = 3 134.3 / 127.8 without, M = 5 206.9 / 205.4, M = 8 326.3 / 318.7).
# ``path="pairs"`` serves FP8 block scales at any M.
# DeepSeek-V3-TP2 M = 1 with the down GEMM's K loops rotated (FP8_PAIRS_DOWN_ROTATED_TOKENS)
# 54.4 / 55.1 and 54.6 / 56.2 against grouped.
FP8_PAIRS_TOKENS: dict[str, tuple[int, ...]] = {"small": (1, 2, 3, 4, 5, 6), "large": (1, 2, 4, 6)}

# FP8 block scales take the chain path above this many tokens. H200, 2026-12-01
# (benchmarks/results/moe_layer.md), chain against grouped, us: DeepSeek-V3-TP2 M = 16 / 32 / 64
# 495.4 / 828.8 / 1121.9 against 507.5 / 858.7 / 1159.5, Qwen3-30B-like 110.4 / 142.0 / 159.4 against
# 112.7 / 147.9 / 171.0; at M = 12 level (432.8 / 432.1, 91.3 / 91.7); below, mixed: M = 8 grouped
# faster (DeepSeek 325.3 against 333.8, Qwen3 72.3 / 72.4), M = 6 chain faster at DeepSeek (249.8
# against 253.3), level at Qwen3 and at M = 4.
FP8_CHAIN_ABOVE_TOKENS = 8


# When a GEMM waits for the launch before it (WAIT_PRIOR); a no-op unless launched with PDL.
_WAIT_NONE, _WAIT_AT_START, _WAIT_BEFORE_K_LOOP, _WAIT_BEFORE_DEPENDENTS = 0, 1, 2, 3


# ---- launches 2 and 3: the grouped GEMMs ----------------------------------------------------------

@triton.jit
def _quantize_on_load(a, scale_or_amax, SCALE_IS_AMAX: tl.constexpr, FP8_MAX_C: tl.constexpr, MIN_AMAX: tl.constexpr):
    """(fp8 tile, fp32 scale) from an activation tile and its scale (or absmax) broadcast to it."""
    if SCALE_IS_AMAX:
        scale = tl.maximum(scale_or_amax, MIN_AMAX) / FP8_MAX_C
    else:
        scale = scale_or_amax
    q = tl.clamp(a.to(tl.float32) / scale, -FP8_MAX_C, FP8_MAX_C)
    return q.to(tl.float8e4nv), scale


@triton.jit
def _quantize_group_when_written(c_ptr, cq_ptr, amax_ptr, arrivals_ptr, pairs, pair_mask, pid_m, group, N,
                                 stride_cm, stride_amax_m, OUT_N: tl.constexpr, GROUP: tl.constexpr,
                                 FP8_MAX_C: tl.constexpr, MIN_AMAX: tl.constexpr):
    """After this program's columns of ``group`` are stored: the last of the group's writers
    (one arrival counter per token tile and group, reset by it) re-reads the group's rows, writes
    them as e4m3 to ``cq`` and their scale (from the absmax of the values as stored) to ``amax``."""
    n_groups = tl.cdiv(N, GROUP)
    writers = tl.minimum(GROUP // OUT_N, tl.cdiv(N - group * GROUP, OUT_N))
    # Every thread's stores precede the release of this program's arrival.
    tl.debug_barrier()
    counter = arrivals_ptr + pid_m * n_groups + group
    arrived = tl.atomic_add(counter, 1, sem="acq_rel", scope="gpu")
    if arrived == writers - 1:
        tl.store(counter, 0)
        cols = group * GROUP + tl.arange(0, GROUP)
        mask = pair_mask[:, None] & (cols < N)[None, :]
        offs = pairs[:, None].to(tl.int64) * stride_cm + cols[None, :]
        v = tl.load(c_ptr + offs, mask=mask, other=0.0, volatile=True).to(tl.float32)
        scale = tl.maximum(tl.max(tl.abs(v), 1), MIN_AMAX) / FP8_MAX_C
        q = tl.clamp(v / scale[:, None], -FP8_MAX_C, FP8_MAX_C).to(tl.float8e4nv)
        tl.store(cq_ptr + offs, q, mask=mask)
        tl.store(amax_ptr + pairs * stride_amax_m + group, scale, mask=pair_mask)


@triton.jit
def _wait_for_pair(counter_ptr, count):
    """Poll ``counter`` (acquire, gpu scope) until it reaches ``count``; what its writers stored
    before their release is visible after."""
    while tl.atomic_add(counter_ptr, 0, sem="acquire", scope="gpu") < count:
        pass
    # Every thread's later loads follow the acquire.
    tl.debug_barrier()


@triton.jit(do_not_specialize=["num_pairs", "num_tokens"])
def moe_decode_gemm_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    a_scale_ptr,
    b_scale_ptr,
    topk_weights_ptr,
    sorted_ids_ptr,
    expert_ids_ptr,
    num_padded_ptr,
    amax_out_ptr,
    arrivals_ptr,
    out_ptr,
    logits_ptr,
    topk_ids_ptr,
    num_pairs,
    num_tokens,
    num_experts,
    N,
    K,
    stride_am,
    stride_be,
    stride_bn,
    stride_cm,
    stride_asm,
    stride_bse,
    stride_bsn,
    stride_bsk,
    stride_amax_m,
    stride_om,
    stride_lm,
    A_ROWS_PER_PAIR_DIV: tl.constexpr,
    GATED: tl.constexpr,
    REDUCE: tl.constexpr,
    QUANT: tl.constexpr,
    A_SCALE_IS_AMAX: tl.constexpr,
    AMAX_OUT: tl.constexpr,
    SCALE_BLOCK_N: tl.constexpr,
    SCALE_BLOCK_K: tl.constexpr,
    SWAP_AB: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    TOP_K: tl.constexpr,
    K_POW2: tl.constexpr,
    TOKEN_CHUNK: tl.constexpr,
    FP8_MAX_C: tl.constexpr,
    MIN_AMAX: tl.constexpr,
    DOT_IN_FP32: tl.constexpr,
    PAIR_TILES: tl.constexpr,
    E_POW2: tl.constexpr,
    RENORMALIZE: tl.constexpr,
    LAUNCH_DEPENDENTS: tl.constexpr,
    WAIT_PRIOR: tl.constexpr,
    A_PREQUANT: tl.constexpr = False,
    aq_out_ptr=None,
    group_arrivals_ptr=None,
    QUANT_OUT: tl.constexpr = False,
    K_UNROLL: tl.constexpr = 1,
    STAMPS: tl.constexpr = False,
    stamps_ptr=None,
    PAIR_READY: tl.constexpr = False,
    ready_ptr=None,
    GATE_UP_OUT_N: tl.constexpr = 0,
    ROTATE_K: tl.constexpr = False,
):
    """C[pair, n] = sum_k A[pair // DIV, k] * B[expert(pair), n, k] over expert-sorted tiles.

    GATED (gate_up): writes silu(gate) * up, B's gate and up rows read interleaved, and with
    AMAX_OUT folds the written values' absmax into ``amax_out`` (per tensor, pair or group).
    REDUCE (down): multiplies by the routing weight, writes fp32 pair rows to ``c``, and the last
    program of each column tile writes ``out[t] = sum_j c[t * TOP_K + j]`` for that tile.
    A is bf16/fp16; with QUANT it is quantized to e4m3 on load with scales (or absmaxes, with
    A_SCALE_IS_AMAX) from ``a_scale``: QUANT 1 one, 2 one per row, 3 one per row and K group.

    QUANT_OUT (gate_up, block scales): the program that completes a token tile's 128-column group
    writes it again as e4m3 to ``aq_out`` and its scale to ``amax_out`` (AMAX_OUT is then off), so
    the down GEMM loads FP8 A (A_PREQUANT) like the weights, pipelined, instead of quantizing it.
    A tile 128 output columns wide (BLOCK_N = 256) writes whole groups: it quantizes them from its
    registers and writes only the e4m3 intermediate, with no counter and no re-read.
    QUANT 3 (block scales) takes A quantized already (A_PREQUANT: x by the layer's first launch, the
    intermediate by gate_up's QUANT_OUT) with its group scales at ``a_scale``.
    K_UNROLL: K steps per loop iteration (FP8 block scales with a tile block_k of 128 * K_UNROLL;
    each step is one scale group).

    PAIR_TILES (the two-launch path, no route launch, QUANT 0 or 3): token tile ``pid_m`` is the one
    pair ``pid_m``, whose expert the program routes itself from ``logits`` (gate_up also records
    the routing in ``topk_ids`` / ``topk_weights``). LAUNCH_DEPENDENTS lets a PDL-linked next
    launch start; WAIT_PRIOR waits for the previous launch at the start or before the K loop.
    STAMPS (probes): each program stores ``device_clock`` stamps at ``stamps_ptr`` (start, set-up
    done, wait done, K loop done, end); off, the kernel is the same code.
    PAIR_READY (PAIR_TILES): gate_up's programs, once their pair's columns (and quantized groups)
    are written, release-increment ``ready[pair]``; the down GEMM's programs, instead of waiting for
    the whole gate_up launch, acquire-poll their pair's counter until every gate_up column tile of
    the pair (``cdiv(K, GATE_UP_OUT_N)``: down's K is gate_up's output width) has arrived. PDL
    starts down only after every gate_up program has started, so the poll cannot hold back a
    gate_up program; without PDL it finds the count complete.
    ROTATE_K: each program starts its K loop at iteration ``pid_n % iterations`` and wraps around, so
    the programs streaming at one moment read different column offsets of their weight rows.
    """
    pid = tl.program_id(0)
    stamp(stamps_ptr, pid, 0, STAMPS)
    OUT_N: tl.constexpr = BLOCK_N // 2 if GATED else BLOCK_N
    pid_m, pid_n, num_pid_m = moe_tile_of_program(N, OUT_N)
    # WAIT_PRIOR 3: the layer's first launch, PDL-launched: the launch before wrote the logits and x,
    # which this launch and the next one (started here) read.
    pdl_enter(LAUNCH_DEPENDENTS, WAIT_PRIOR)

    if PAIR_TILES:
        token = (pid_m // TOP_K).to(tl.int64)
        slot = pid_m % TOP_K
        ids, route_weights = softmax_topk_row(logits_ptr + token * stride_lm, num_experts, TOP_K, K_POW2, E_POW2,
                                              RENORMALIZE)
        slots = tl.arange(0, K_POW2)
        expert = tl.sum(tl.where(slots == slot, ids, 0), 0).to(tl.int64)
        pair_weight = tl.sum(tl.where(slots == slot, route_weights, 0.0), 0)
        if GATED & (pid_n == 0):
            tl.store(topk_ids_ptr + pid_m, expert.to(tl.int32))
            tl.store(topk_weights_ptr + pid_m, pair_weight)
        tile_in_use = True
    else:
        num_padded = tl.load(num_padded_ptr)
        expert = tl.load(expert_ids_ptr + pid_m).to(tl.int64)
        tile_in_use = (pid_m * BLOCK_M < num_padded) & (expert >= 0)
    if tile_in_use:
        if PAIR_TILES:
            rows = tl.arange(0, BLOCK_M)
            pairs = tl.where(rows == 0, pid_m, num_pairs)
        else:
            pairs = tl.load(sorted_ids_ptr + pid_m * BLOCK_M + tl.arange(0, BLOCK_M))
        pair_mask = pairs < num_pairs
        a_rows = tl.where(pair_mask, pairs // A_ROWS_PER_PAIR_DIV, 0).to(tl.int64)
        b_rows = moe_weight_rows(pid_n, N, BLOCK_N, GATED)
        offs_k = tl.arange(0, BLOCK_K)
        a_ptrs, b_ptrs = moe_tile_pointers(a_ptr, a_rows, b_ptr + expert * stride_be, b_rows, stride_am, stride_bn,
                                           BLOCK_K, SWAP_AB)
        acc = moe_acc_zeros(BLOCK_M, BLOCK_N, SWAP_AB)

        stamp(stamps_ptr, pid, 1, STAMPS)
        if WAIT_PRIOR == 2:
            # Everything above depends on the layer's inputs only; A and its scales on the prior launch.
            wait_for_prior_launch()
        if PAIR_READY and not GATED:
            _wait_for_pair(ready_ptr + pid_m, tl.cdiv(K, GATE_UP_OUT_N))
        stamp(stamps_ptr, pid, 2, STAMPS)
        if QUANT == 1:
            a_s = tl.load(a_scale_ptr)
        elif QUANT == 2:
            a_s = tl.load(a_scale_ptr + a_rows * stride_asm, mask=pair_mask, other=1.0)
        if QUANT == 3:
            tl.static_assert(A_PREQUANT, "block-scaled A comes quantized, its group scales at a_scale")
            b_scale_rows = b_scale_ptr + expert * stride_bse + (b_rows // SCALE_BLOCK_N) * stride_bsn
            a_scale_rows = a_scale_ptr + a_rows * stride_asm

        # A quantized between its load and the dot is outside the compiler's pipelining: it is
        # loaded one K step ahead here (pre-quantized A is pipelined like B).
        A_AHEAD: tl.constexpr = (QUANT != 0) and not A_PREQUANT
        if A_AHEAD:
            a_next = moe_load_a(a_ptrs, pair_mask, offs_k < K, SWAP_AB)
        # K_UNROLL K steps per iteration (block scales: 128-deep steps, each with its own scales):
        # their weight loads are issued together, K_UNROLL * 128 contiguous bytes of each row.
        k_last = tl.cdiv(K, BLOCK_K) - 1
        n_iters = tl.cdiv(K, BLOCK_K * K_UNROLL)
        if ROTATE_K:
            tl.static_assert(not A_AHEAD, "a rotated K loop loads A as is")
            rotation = pid_n % n_iters
            a_first = a_ptrs
            b_first = b_ptrs
        for ku in range(n_iters):
            k_iter = ku
            if ROTATE_K:
                k_iter = (ku + rotation) % n_iters
                a_ptrs = a_first + k_iter * (BLOCK_K * K_UNROLL)
                b_ptrs = b_first + k_iter * (BLOCK_K * K_UNROLL)
            for u in tl.static_range(K_UNROLL):
                kb = k_iter * K_UNROLL + u
                k_mask = offs_k < K - kb * BLOCK_K
                if A_AHEAD:
                    a = a_next
                    a_next = moe_load_a(a_ptrs + (u + 1) * BLOCK_K, pair_mask, offs_k < K - (kb + 1) * BLOCK_K,
                                        SWAP_AB)
                else:
                    a = moe_load_a(a_ptrs + u * BLOCK_K, pair_mask, k_mask, SWAP_AB)
                b = moe_load_b(b_ptrs + u * BLOCK_K, k_mask, SWAP_AB)
                if QUANT == 1:
                    a, _ = _quantize_on_load(a, a_s, A_SCALE_IS_AMAX, FP8_MAX_C, MIN_AMAX)
                elif QUANT == 2:
                    if SWAP_AB:
                        a, _ = _quantize_on_load(a, a_s[None, :], A_SCALE_IS_AMAX, FP8_MAX_C, MIN_AMAX)
                    else:
                        a, _ = _quantize_on_load(a, a_s[:, None], A_SCALE_IS_AMAX, FP8_MAX_C, MIN_AMAX)
                elif QUANT == 3:
                    # A is e4m3 already; g_s are its scales.
                    g_s, b_s = moe_block_scales(a_scale_rows, b_scale_rows, pair_mask,
                                                moe_scale_step(kb, k_last, K_UNROLL), stride_bsk, 1.0, BLOCK_K,
                                                SCALE_BLOCK_K)
                if DOT_IN_FP32:
                    a = a.to(tl.float32)
                    b = b.to(tl.float32)
                if QUANT == 3:
                    acc = moe_dot(acc, a, b, g_s, b_s, True, SWAP_AB)
                else:
                    acc = moe_dot(acc, a, b, 0.0, 0.0, False, SWAP_AB)
            if not ROTATE_K:
                a_ptrs += BLOCK_K * K_UNROLL
                b_ptrs += BLOCK_K * K_UNROLL

        stamp(stamps_ptr, pid, 3, STAMPS)
        if SWAP_AB:
            acc = tl.trans(acc)  # back to [BLOCK_M, BLOCK_N]
        if (QUANT == 1) | (QUANT == 2):
            if A_SCALE_IS_AMAX:
                a_s = tl.maximum(a_s, MIN_AMAX) / FP8_MAX_C
            acc = moe_scale_epilogue(acc, a_s, b_scale_ptr, expert, b_rows, stride_bse, stride_bsn, QUANT)

        offs_cn = pid_n * OUT_N + tl.arange(0, OUT_N)
        c_mask = pair_mask[:, None] & (offs_cn[None, :] < N)
        c_ptrs = c_ptr + pairs[:, None].to(tl.int64) * stride_cm + offs_cn[None, :]
        if GATED:
            c = moe_silu_mul(acc, BLOCK_M, OUT_N).to(c_ptr.dtype.element_ty)
            # A program that writes whole quantization groups quantizes them from registers below.
            GROUP_IN_REGISTERS: tl.constexpr = QUANT_OUT and (OUT_N == SCALE_BLOCK_K)
            if not GROUP_IN_REGISTERS:
                tl.store(c_ptrs, c, mask=c_mask)
            if AMAX_OUT:
                # The absmax of the values as stored (rounded), which the down GEMM quantizes.
                mag = tl.where(c_mask, tl.abs(c.to(tl.float32)), 0.0)
                tl.static_assert((QUANT == 1) | (QUANT == 2), "block scales quantize the intermediate (QUANT_OUT)")
                if QUANT == 1:
                    tl.atomic_max(amax_out_ptr, tl.max(tl.max(mag, 1), 0))
                else:
                    tl.atomic_max(amax_out_ptr + pairs * stride_amax_m, tl.max(mag, 1), mask=pair_mask)
            if QUANT_OUT:
                tl.static_assert(OUT_N <= SCALE_BLOCK_K, "gate_up output tile wider than a quantization group")
                if GROUP_IN_REGISTERS:
                    # The group's values as a writer would store them (rounded): no counter, no re-read.
                    v = tl.where(c_mask, c.to(tl.float32), 0.0)
                    scale = tl.maximum(tl.max(tl.abs(v), 1), MIN_AMAX) / FP8_MAX_C
                    q = tl.clamp(v / scale[:, None], -FP8_MAX_C, FP8_MAX_C).to(tl.float8e4nv)
                    tl.store(aq_out_ptr + pairs[:, None].to(tl.int64) * stride_cm + offs_cn[None, :], q, mask=c_mask)
                    tl.store(amax_out_ptr + pairs * stride_amax_m + pid_n, scale, mask=pair_mask)
                else:
                    _quantize_group_when_written(c_ptr, aq_out_ptr, amax_out_ptr, group_arrivals_ptr, pairs,
                                                 pair_mask, pid_m, (pid_n * OUT_N) // SCALE_BLOCK_K, N, stride_cm,
                                                 stride_amax_m, OUT_N, SCALE_BLOCK_K, FP8_MAX_C, MIN_AMAX)
            if PAIR_READY:
                # Every thread's stores (and a last writer's quantized group) precede the release.
                tl.debug_barrier()
                tl.atomic_add(ready_ptr + pid_m, 1, sem="release", scope="gpu")
        else:
            if PAIR_TILES:
                w = tl.where(pair_mask, pair_weight, 0.0)
            else:
                w = tl.load(topk_weights_ptr + pairs, mask=pair_mask, other=0.0).to(tl.float32)
            tl.store(c_ptrs, (acc * w[:, None]).to(c_ptr.dtype.element_ty), mask=c_mask)

    if REDUCE:
        # Every thread's pair rows precede the release of this program's arrival.
        tl.debug_barrier()
        arrived = tl.atomic_add(arrivals_ptr + pid_n, 1, sem="acq_rel", scope="gpu")
        if arrived == num_pid_m - 1:
            tl.debug_barrier()
            cols = pid_n * OUT_N + tl.arange(0, OUT_N)
            slots = tl.arange(0, K_POW2)
            for t0 in range(0, num_tokens, TOKEN_CHUNK):
                toks = t0 + tl.arange(0, TOKEN_CHUNK)
                rows = (toks[:, None] * TOP_K + slots[None, :]).to(tl.int64)
                mask = ((toks < num_tokens)[:, None] & (slots < TOP_K)[None, :])[:, :, None] & (cols < N)[None, None, :]
                rows_v = tl.load(c_ptr + rows[:, :, None] * stride_cm + cols[None, None, :], mask=mask, other=0.0,
                                 volatile=True)
                total = tl.sum(rows_v, axis=1)
                tl.store(out_ptr + toks[:, None].to(tl.int64) * stride_om + cols[None, :],
                         total.to(out_ptr.dtype.element_ty), mask=(toks < num_tokens)[:, None] & (cols < N)[None, :])
            tl.store(arrivals_ptr + pid_n, 0)
    stamp(stamps_ptr, pid, 4, STAMPS)


# ---- host side -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class MoeDecodeWorkspace:
    """Device buffers of the decode path for one layer shape, reused by every call and graph replay.

    Sized for ``MAX_DECODE_TOKENS`` tokens; the counters in ``flags`` are zero between calls
    (each call leaves them zero), and ``pair_ready`` (the per-pair handoff) is zeroed by each
    call's first launch, so a captured graph needs no memset. Calls that share a
    workspace must be ordered (one stream): two in flight at once would mix their counters.
    """

    num_experts: int
    top_k: int
    hidden: int
    intermediate: int
    act_dtype: torch.dtype
    topk_ids: torch.Tensor
    topk_weights: torch.Tensor
    sorted_ids: torch.Tensor
    expert_ids: torch.Tensor
    num_padded: torch.Tensor
    counts: torch.Tensor
    starts: torch.Tensor
    flags: torch.Tensor
    x_scale: torch.Tensor
    a2_amax: torch.Tensor
    inter: torch.Tensor
    pair_out: torch.Tensor
    x_q: torch.Tensor
    inter_q: torch.Tensor
    group_arrivals: torch.Tensor
    pair_rows: torch.Tensor
    pair_ranks: torch.Tensor
    pair_ready: torch.Tensor
    expert_pairs: torch.Tensor

    @staticmethod
    def for_layer(w13: torch.Tensor, w2: torch.Tensor, top_k: int, act_dtype: torch.dtype = torch.bfloat16,
                  scale_group: int = 128) -> MoeDecodeWorkspace:
        """Allocate the buffers for the layer of ``w13`` [E, 2I, H] and ``w2`` [E, H, I]."""
        E, two_i, H = w13.shape
        I = two_i // 2
        P = MAX_DECODE_TOKENS * top_k
        dev = w13.device
        padded = max_padded_len(P, E, _MAX_BLOCK_M)
        n_tiles = triton.cdiv(H, _MIN_BLOCK_N)
        i32 = dict(dtype=torch.int32, device=dev)
        f32 = dict(dtype=torch.float32, device=dev)
        return MoeDecodeWorkspace(
            E, top_k, H, I, act_dtype,
            topk_ids=torch.empty(P, **i32),
            topk_weights=torch.empty(P, **f32),
            sorted_ids=torch.empty(padded, **i32),
            expert_ids=torch.empty(triton.cdiv(padded, 8), **i32),
            num_padded=torch.empty(1, **i32),
            # per-expert pair counters, zero between calls
            counts=torch.zeros(E, **i32),
            starts=torch.empty(E, **i32),
            # [route arrivals, x absmax (fp32 bits), column-tile arrivals...]
            flags=torch.zeros(2 + n_tiles, **i32),
            x_scale=torch.empty(MAX_DECODE_TOKENS * triton.cdiv(H, scale_group), **f32),
            a2_amax=torch.empty(P * triton.cdiv(I, scale_group), **f32),
            inter=torch.empty((P, I), dtype=act_dtype, device=dev),
            pair_out=torch.empty((P, H), **f32),
            # x as e4m3, written by the first launch for block scales
            x_q=torch.empty((MAX_DECODE_TOKENS, H), dtype=torch.float8_e4m3fn, device=dev),
            # the intermediate as e4m3, written by tl's gate_up for block scales, and
            # one arrival counter per (token tile, 128-column group), zero between calls
            inter_q=torch.empty((P, I), dtype=torch.float8_e4m3fn, device=dev),
            # One counter per (token tile, 128-column group); the pairs path's tiles are its P pairs.
            group_arrivals=torch.zeros(max(max_padded_len(P, E, _MIN_BLOCK_M) // _MIN_BLOCK_M, P)
                                       * triton.cdiv(I, scale_group), **i32),
            # the chain path's down GEMM output, one row per pair in the activation dtype
            pair_rows=torch.empty((P, H), dtype=act_dtype, device=dev),
            # each pair's rank among its expert's pairs, taken by the route launch's token programs
            pair_ranks=torch.empty(P, **i32),
            # the pairs path's per-pair handoff: gate_up programs done per pair (zeroed by the x launch)
            pair_ready=torch.zeros(P, **i32),
            # the Gluon GEMMs' tiles from counts: each expert's pairs in rank order, [E, M] for M tokens
            expert_pairs=torch.empty(E * MAX_DECODE_TOKENS, **i32),
        )

    def routing(self, num_tokens: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The last call's ``(topk_weights fp32 [M, k], topk_ids int32 [M, k])`` (views)."""
        n = num_tokens * self.top_k
        return self.topk_weights[:n].view(num_tokens, self.top_k), self.topk_ids[:n].view(num_tokens, self.top_k)

    def check(self, E: int, top_k: int, H: int, I: int, act_dtype: torch.dtype, device: torch.device) -> None:
        """Raise ValueError if this workspace was made for another layer shape or device."""
        have = (self.num_experts, self.top_k, self.hidden, self.intermediate, self.act_dtype, self.inter.device)
        want = (E, top_k, H, I, act_dtype, device)
        if have != want:
            raise ValueError(
                f"fused_moe_decode: workspace is for (E, top_k, H, I, dtype, device) = {have}, this call needs {want}"
            )


# Workspaces of calls made without one, by (E, top_k, H, I, activation dtype, device, stream handle).
_CACHED_WORKSPACES: dict[tuple, MoeDecodeWorkspace] = {}


def cached_workspace(w13: torch.Tensor, w2: torch.Tensor, top_k: int, act_dtype: torch.dtype) -> MoeDecodeWorkspace:
    """The workspace a call without ``workspace=`` uses: one per layer shape, activation dtype, device and stream,
    allocated (and its counters zeroed) by the first such call, reused by every later one.

    By stream, because calls that share a workspace must not run at once: calls on one stream are ordered, calls on
    two streams may overlap. While a CUDA graph is being captured, the capturing stream's workspace is used, else
    the one made last for this shape on another stream of that device (zeroed outside the graph, so its
    replays need no memset; replay the graph in order with that stream's calls, as with a ``workspace=`` shared
    between eager calls and a graph). With none made yet, a capture gets a workspace of its own, not kept: its
    zeroing is then part of the graph (one eager call before capturing avoids it).
    """
    E, two_i, H = w13.shape
    device = w13.device
    shape = (E, top_k, H, two_i // 2, act_dtype, device)
    on_cuda = device.type == "cuda"
    key = (*shape, torch.cuda.current_stream(device).cuda_stream if on_cuda else None)
    workspace = _CACHED_WORKSPACES.get(key)
    if workspace is not None:
        return workspace
    if on_cuda and torch.cuda.is_current_stream_capturing():
        for other_key in reversed(list(_CACHED_WORKSPACES)):
            if other_key[:-1] == shape:
                return _CACHED_WORKSPACES[other_key]
        return MoeDecodeWorkspace.for_layer(w13, w2, top_k, act_dtype)
    workspace = _CACHED_WORKSPACES[key] = MoeDecodeWorkspace.for_layer(w13, w2, top_k, act_dtype)
    return workspace


def clear_cached_workspaces() -> None:
    """Drop the workspaces kept for calls without ``workspace=`` (their memory returns to torch's allocator once no
    captured graph holds them)."""
    _CACHED_WORKSPACES.clear()


_FILL_BLOCK = 256
_ROUTE_BLOCK_H = 1024
_ROUTE_MAX_BLOCK_H = 8192
# ---- the layout of the launches: each choice below was measured against its alternative, which is gone ----
# FP8 block scales: the route launch writes x as e4m3 and gate_up loads it instead of quantizing
# on load (H200: benchmarks/results/moe_layer.md, "FP8: x quantized by the route launch").
#
# Up to FEW_TOKENS tokens and FEW_ELEMENTS logits (tokens x experts rounded up to a power of two),
# and not per-tensor scales, one program of the route launch routes them all and aligns their pairs
# in registers (no arrival counter, no per-expert counters in memory). H200 (moe_layer.md): faster
# at 1-2 tokens (DeepSeek route 6.8 -> 4.4-5.0 us), even at 4 x 256 and 8 x 128, slower at 8 x 256
# (DecodeConfig.few_tokens, few_elements).
FEW_TOKENS = 8
FEW_ELEMENTS = 1024
# FP8 block scales: gate_up also writes the intermediate as e4m3 with its scales, and the down GEMM
# loads that (pipelined like the weights) instead of quantizing the bf16 intermediate as it loads it.
#
# The route launch gets one more program, which routes and aligns (few-token path) while the
# others quantize their token rows. H200: DeepSeek-V3-TP2 FP8 M = 1 and 4 -1.1 us, Qwen3-30B FP8
# M = 4 and 8 -1.0 / -0.7 us, unchanged where the few-token path is not taken
# (benchmarks/results/moe_layer.md).
#
# Past the few-token path, each token program of the route launch takes its pairs' ranks from the
# per-expert counters before it arrives, and the last arrival aligns from ranks and counts read in
# one round trip (three fewer than through the counters alone).
#
# FP8 block scales on the pairs path: x quantized by a launch of its own (the route kernel, routing
# off) instead of each gate_up program taking a token group's scale from its bf16 tile every K step.
# H200, 2026-12-02 (moe_layer.md): faster at every point timed, DeepSeek-V3-TP2 M = 1
# / 2 / 4 59.1 / 98.3 / 179.6 us against 67.4 / 101.0 / 184.5, Qwen3-30B-like 20.2 / 29.3 / 45.5
# against 22.3 / 30.5 / 46.3.
#
# FP8 block scales on the pairs path (whose x launch zeroes the counters), from
# this many pairs (tokens x top_k): the down GEMM's programs start on their own pair's gate_up columns
# (a counter per pair) instead of waiting for the whole gate_up launch. Where gate_up runs in several
# waves, down's programs start under its last one. H200, 2026-12-02, three calls
# (moe_layer.md), us, pairs with the handoff / without: DeepSeek-V3-TP2 M = 4 172.2 / 179.5, 168.7 /
# 176.2, 169.1 / 176.0, M = 6 245.4 / 258.8; Qwen3-30B-like M = 5 55.4 / 66.8, M = 6 62.3 / 68.5, M = 4
# level (44.4 / 44.6); slower below 32 pairs (Qwen3 M = 1 23.2 / 19.6, DeepSeek M = 2 107.4 / 98.2).
# Tried beside it and removed: a 0.5 us nanosleep between polls (no better), and each pairs-path
# program asking the L2 for its whole weight tile once routed (slower everywhere: Qwen3 M = 1 21.1 /
# 19.6 with down's tiles prefetched; the lines cost gate_up's stream more than down's K loop gains).
PAIR_HANDOFF_MIN_PAIRS = 32
# FP8 block scales on the pairs path, by expert size class: the token counts at which the down GEMM's
# programs start their K loops at offsets of their own (the kernel's ROTATE_K). H200, 2026-12-02,
# Two calls (benchmarks/results/moe_layer.md), us per layer, pairs with down's
# loop rotated / pairs / grouped (the path shipped before): DeepSeek-V3-TP2 M = 1 54.4 / 57.2 / 55.1 and
# 54.6 / 58.4 / 56.2; slower at DeepSeek M = 2 and 4 (99.4 / 98.1, 173.4 / 172.1) and at Qwen3-30B-like
# M = 1-8 (0.1-1.1 us); rotating gate_up's loop too was slower (Qwen3 M = 1 gate_up alone 10.7 -> 10.9).
FP8_PAIRS_DOWN_ROTATED_TOKENS: dict[str, tuple[int, ...]] = {"small": (), "large": (1,)}
# The layer's first launch is PDL-launched too: it waits for the launch before it (the caller's, which
# wrote the logits and x) before it reads or writes anything, and only then lets the next launch start,
# so its own start overlaps the end of that launch. H200, 2026-12-02, us per
# layer, first launch PDL-launched / plain, pairs path: Qwen3-30B-like FP8 M = 1 19.4 / 19.6, M = 2 28.9 /
# 29.1, bf16 M = 1 24.7 / 24.8; DeepSeek-V3-TP2 M = 2 97.9 / 98.1; chain path M = 16 109.5 / 109.7 (the
# first launch alone 1.4 -> 1.0 us).
#
# Warps of the layer's first launch (route / x quantization): ROUTE_NUM_WARPS, or ROUTE_WIDE_TILE_WARPS where
# its router program takes the few-token path on a tile of 1024 logits or more (the next power of two of
# the tokens times that of the experts: 5-8 tokens x 128 experts, 3-4 x 256), whose top-k network is the
# launch's longest part. H200, 2026-12-03 (benchmarks/results/moe_layer.md),
# the route launch alone, 8 warps / 4: Qwen3-30B-like M = 6 3.6 / 4.1 us, M = 8 3.7 / 4.2 (the layer on
# the grouped Gluon path 70.4 / 71.1), DeepSeek-V3-TP2 M = 3 3.1 / 3.7; slower on smaller tiles (M = 1-3
# x 128 experts 2.3-2.5 / 2.0; DeepSeek M = 1 2.5 / 2.2) and on the counter path (DeepSeek M = 6, 8 4.6-4.7
# / 4.5); 2 warps slower everywhere (Qwen3 M = 8 7.0). The shipped choice with 8 / 4 there: Qwen3 M = 8
# 70.5 / 71.1 (grouped, Gluon), DeepSeek M = 3 129.4 / 130.4 (grouped, tl), Qwen3-30B bf16 M = 8 118.7 / 119.3
# (chain); level at Qwen3 M = 5 (pairs: no router program).
# Tried and removed (moe_layer.md), the route launch alone at Qwen3-30B-FP8 M = 8 / DeepSeek-V3-TP2
# M = 3, shipped 3.6-3.7 / 3.1 us: 16 warps 4.2 / 3.5; the few-token path to 16 tokens and 2048 logits 7.0 at 12-16
# tokens (routers apart 3.7); the few-token router's top-k as TOP_K successive row maxima in place of tl.topk's
# network 3.9 / 3.8 (the layer 0.2-0.7 us slower). Removed after the calls.
ROUTE_NUM_WARPS = 4
ROUTE_WIDE_TILE_WARPS = 8
# The grouped and chain paths' route launch (not with a tensor scale) with routers apart: each token's
# routing in a program of its own beside the one that quantizes its row (2 * M programs), the last router
# to arrive aligning every pair through the ranks the routers took (no few-token router program), wherever
# the launch would otherwise take the counter path (past the few-token router's FEW_TOKENS / FEW_ELEMENTS).
# Against it at the few-token router's counts (slower or level) and everywhere on the counter path:
# H200, 2026-12-03
# (benchmarks/results/moe_layer.md), the route launch alone, apart / counter path: 3.7-3.9 / 4.5-4.8 us
# at DeepSeek-V3-TP2 M = 5-8, 4.5-4.6 / 5.3-5.4 at 32-64; against the few-token router slower or level (another run:
# Qwen3-30B-like M = 3 3.5 / 2.1, DeepSeek M = 3 3.5 / 3.2, Qwen3 M = 7-8 3.6 / 3.6-3.7). Us per layer,
# apart / counter path: DeepSeek M = 5 206.3 / 208.2, M = 6 245.2 / 247.2, M = 8 323.0 / 325.2, M = 16 490.8 /
# 496.8, M = 32 824.2 / 826.7, M = 64 1116.2 / 1128.5; Qwen3-FP8 (chain) M = 16 106.6 / 109.3, M = 32 137.9 /
# 140.2, M = 64 154.5 / 156.7; bf16 chain level or faster (Qwen3-30B M = 16 187.6 / 188.3, Mixtral 643.7 / 644.1).
_REDUCE_ELEMENTS = 8192
# FP8 block scales on the pairs and grouped paths: both GEMMs as ``moe_decode_gluon``'s kernel (each K
# step's wgmma left in flight across the block scaling) where this Triton ships Gluon's Hopper wgmma
# (``gluon_gemms_supported``) and H and I are multiples of 128. DecodeConfig.gluon_fp8_gemms: "measured" (at the
# token counts of GLUON_FP8_TOKENS, by expert size class and path; the default), "always" or "never" (tl.dot's
# ``moe_decode_gemm_kernel``, as on every other path). On the pairs path the x launch then routes each
# token (the GEMMs read their pair's expert) and down waits for the whole gate_up launch (no per-pair
# handoff). H200, 2026-12-03 (benchmarks/results/moe_layer.md), us per layer, Gluon
# with down's first weights before its wait / shipped tl path: DeepSeek-V3-TP2 M = 1 52.4 / 53.3,
# M = 2 92.4 / 95.0; Qwen3-30B-like M = 1 19.5 / 19.9, M = 2 27.5 / 28.5, M = 8 70.2 / 71.6 (grouped);
# slower at M = 4 (the tl pairs path's per-pair handoff: DeepSeek 171.0 / 164.4, Qwen3 44.0 / 42.6) and
# level at DeepSeek M = 8 (318.7 / 318.0). Gluon without the weights before the wait: DeepSeek
# M = 2 96.4 / 97.3, Qwen3 M = 8 72.3 / 72.7, level at M = 1. Against the pairs path on tl's
# GEMMs that "auto" took there before (choose_decode_path now takes the grouped path where only its GEMMs
# run in Gluon): Qwen3 M = 3 grouped on Gluon 34.7 / 36.6 and 34.3 / 36.2 (vLLM's GEMMs alone 35.2);
# DeepSeek M = 6 246.4 / 256.0 (one call; slower at Qwen3 M = 5 57.0 / 55.6, M = 6 62.0 / 60.7).
# DeepSeek M = 1 53.3 / 53.9, M = 2 94.7 / 97.3; Qwen3 M = 1 19.6 / 20.0, M = 2 27.9 / 28.8,
# M = 8 71.2 / 72.8.
GLUON_MODES = ("measured", "always", "never")
# bf16 / fp16 (no quantization) on the pairs and grouped paths: both GEMMs as the same Gluon kernel with its block
# scaling off (``BLOCK_SCALED=False``: x and the intermediate as they are, 64 columns of K a stage); on the pairs
# path an x launch of its own routes each token first (the tl pairs path's gate_up routes in its programs).
# DecodeConfig.gluon_bf16_gemms: "measured" (at the token counts of GLUON_BF16_TOKENS, by the size class of the
# expert's weight count, moe_configs.expert_size_class of its bytes in e4m3, and path), "always" or "never".
# Tiles: GLUON_BF16_TILES_AT's where it lists the path and token count, else GLUON_TILES'.
# Tried and removed: the pairs path's Gluon GEMM programs routing their pair
# themselves (each thread ranking one expert against the whole logits row), so no x launch runs first: slower,
# us per layer, Qwen3-30B-bf16 M = 1 29.1 / 24.9 with the x launch (gate_up alone 16.4 against 14.2 + 1.4 for the
# x launch), M = 2 43.9 / 41.4, M = 3 64.7 (the grouped path on Gluon 56.1).
# H200, 2026-12-04 (benchmarks/results/moe_layer.md), us per layer, Qwen3-30B-bf16, Gluon /
# the tl path shipped before (vLLM's GEMMs alone): M = 2 pairs 32x7/128x6 40.4 / 43.15 (42.7; 41.6 / 43.9
# in another run); grouped against the chain, M = 3 32x6/128x4 54.45 / 59.65 (56.2), 4 32x4/128x4 73.1 / 75.2 (73.8),
# 5 32x6/128x4 90.05 / 91.2 (95.6), 6 100.85 / 104.75 (104.0), 7 107.0 / 110.3 (110.8); slower at M = 8 (best 118.2
# / 117.0) and at M = 1 level (32x7/128x6 25.05 / 25.05: the Gluon pairs path's four launches against
# tl's two, though its down took 7.5 us alone against 10.8). Mixtral-sized experts (8 x 4096 x 14336) ran 17-26%
# slower at M = 1 (64 or 128 down programs of 224 K steps each): the large class lists none.
GLUON_BF16_TOKENS: dict[str, dict[str, tuple[int, ...]]] = {"small": {"pairs": (2,), "grouped": (3, 4, 5, 6, 7)}}
GLUON_BF16_TILES_AT: dict[str, dict[int, tuple[tuple[int, int], tuple[int, int]]]] = {
    "pairs": {2: ((32, 7), (128, 6))},
    "grouped": {3: ((32, 6), (128, 4)), 4: ((32, 4), (128, 4)), **dict.fromkeys(range(5, 8), ((32, 6), (128, 4)))},
}
# The grouped path on Gluon against the chain (tl GEMMs, five launches) past
# 8 tokens, us per layer: Qwen3-30B-like M = 9 73.1 / 75.0, M = 12 89.2 / 89.25, M = 16 106.2 / 106.55, slower
# from M = 24 (125.55 / 125.0, M = 32 138.6 / 137.7, M = 64 162.15 / 154.3); DeepSeek-V3-TP2 slower at 9-64
# (M = 9 333.8 / 329.0, M = 16 500.15 / 490.7). Qwen3-30B-like, Gluon / the shipped tl path: M = 5
# pairs 54.7 / 55.5 (tl pairs with the per-pair handoff), M = 7 grouped 66.95 / 69.05 (tl grouped); slower at
# M = 4 (pairs 43.4 / 42.65, grouped 48.6) and M = 6 (pairs 62.8, grouped 61.3 / 60.75). DeepSeek-V3-TP2 grouped on
# Gluon with gate_up 32 x 8 (GLUON_TILES_AT) / tl's GEMMs: M = 3 126.35 /
# 129.8, M = 5 204.35 / 206.9 (on Gluon with GLUON_TILES' 32 x 6: 131.6 and 211.4, slower than tl's).
# The tuner (benchmarks/tune_decode_gluon_tiles.py, then the layer timed beside the previous tables),
# Gluon with its GLUON_TILES_AT tiles / the previous choice: Qwen3 pairs M = 4 41.6 / 42.95 (tl's pairs path;
# vLLM's GEMMs alone 43.0), DeepSeek grouped M = 8 322.05 / 322.95 (tl's grouped); in place of the chain
# (--against-chain): Qwen3 M = 17 119.35 / 119.85, 18 114.5 / 114.9, 20 120.0 / 120.3 (the chain ahead from
# 21: 121.4 / 121.35, and by 3.6-4.5% at 48-64), DeepSeek M = 10 354.15 / 360.65, 12 431.4 / 437.2, 13 450.9 /
# 452.55 (the chain ahead at 9, 11, 14-16, 24, 32).
# With the top-k sum launched apart (below), the grouped path on
# Gluon (GLUON_TILES' / down 128 x 4) against the chain, us per layer: Qwen3-30B-like M = 24 121.05 / 119.9
# against 123.3, 32 132.4 / 131.7 against 135.6, 48 147.45 / 147.25 against 149.4, 64 150.1 / 150.3 against
# 152.1; DeepSeek-V3-TP2 still slower (M = 16 482.8 / 481.9 against 479.95, 32 819.75 against 805.5, 64 1107.5
# against 1091.4). DeepSeek-V3-TP2 M = 7 on the grouped Gluon GEMMs 32x8/128x4 291.4
# against tl's 296.0 (GLUON_TILES_AT's comment).
GLUON_FP8_TOKENS: dict[str, dict[str, tuple[int, ...]]] = {
    "small": {"pairs": (1, 2, 4, 5), "grouped": (3, *range(7, MAX_DECODE_TOKENS + 1))},
    "large": {"pairs": (1, 2), "grouped": (3, 5, 6, 7, 8, 10, 12, 13)},
}
# The Gluon pairs path's x launch (which routes each token, ROUTE_TOKENS) gives the routing programs of their
# own where it quantizes rows (not for bf16), so a token's routing and its row's quantization run side by side
# (2 * M programs) instead of one after the other in its program. H200, 2026-12-03
# (benchmarks/results/moe_layer.md), us per layer, apart / after the row: the x launch alone 1.4 /
# 1.9 (Qwen3-30B-like), 1.6 / 2.3 (DeepSeek-V3-TP2); the layer Qwen3 M = 1 18.8 / 19.5, M = 2 27.0 / 27.8,
# DeepSeek M = 1 52.0 / 53.0, M = 2 93.4 / 93.8 (another run: 18.8 / 19.2, 27.1 / 27.9, 52.0 / 52.9, 93.5 / 93.8).
# Tried beside it and removed: the grouped path's token tiles computed in each Gluon GEMM program from the
# routing (its route launch routing without aligning, 4.1 -> 1.9 us at Qwen3 M = 6-8): each GEMM 1.3-5 us
# slower (Qwen3 M = 8 79.6 against 72.5); down streaming 2 or 4 column tiles a program: slower everywhere
# (DeepSeek M = 2 96.3 / 102.4 against 93.8); the Gluon down GEMM's K loops rotated (as tl's ROTATE_K) at
# 1-2 tokens: level (within 0.2 us at four points).
# Each path's (gate_up, down) Gluon tiles: the best of two runs (gate_up 32 output columns, 64 weight
# rows, 6 stages; down 128 or 64 rows, 3 stages). Us, DeepSeek-V3-TP2 M = 2 on the pairs path:
# 64x4 / 64x4 96.4, 32x6 / 64x3 96.5, 32x8 / 128x3 99.7; the grouped path's 64-column gate_up tiles ran
# 5-15% slower than tl's at 1-4 tokens.
GLUON_TILES: dict[str, tuple[GluonTile, GluonTile]] = {
    "pairs": (GluonTile(32, 6), GluonTile(128, 3)),
    "grouped": (GluonTile(32, 6), GluonTile(64, 3)),
}
# Other (gate_up, down) Gluon tiles where they measured faster than GLUON_TILES', by expert size class, path
# and token count, each tile as (out_n, stages). H200, 2026-12-03
# (benchmarks/results/moe_layer.md), us per layer. Down's stages: with its weights before the wait
# (see GLUON_BLOCK_M's comment) a down program copies NUM_STAGES - 1 of its K steps (6 at Qwen3-30B's
# intermediate) before gate_up has finished; shipped / GLUON_TILES': Qwen3-30B-FP8 pairs M = 2 25.35 /
# 26.6 (down 6 stages; vLLM's GEMMs alone 26.5), M = 5 52.9 / 54.9 (4 stages; 53.4), grouped M = 12 88.55 /
# 89.8, M = 10 81.15 / 82.25, M = 11 92.6 / 93.1 (4 stages); slower at grouped 9, 13, 14 (75.0 / 73.5, 99.4 /
# 98.3, 101.9 / 101.35) and at DeepSeek-V3-TP2 M = 2 (92.45 / 90.9). gate_up's tile: DeepSeek M = 1
# 32 x 8 stages 49.65 / 51.35, M = 2 64 x 4 90.8 / 91.6; Qwen3 grouped M = 8 32 x 4 68.1 / 69.15; level or
# slower elsewhere (Qwen3 M = 1, 16; 32 x 8 at DeepSeek M = 2 97.0). Shipped / GLUON_TILES' (vLLM's
# GEMMs alone): DeepSeek M = 1 49.3 / 51.1 (54.5), M = 2 90.1 / 90.8 (90.3); Qwen3 M = 2 25.3 / 26.6 (26.1),
# M = 5 52.2 / 54.0 (52.4), M = 8 68.4 / 69.7 (67.1), M = 12 87.45 / 88.95 (82.0); gate_up 32 x 4 at M = 7 64.4
# / 66.5 (65.8), M = 9 71.55 / 72.85 (68.8). DeepSeek grouped, gate_up 32 x 8 / 32 x 6 (both on
# Gluon): M = 6 243.85 / 245.15 (vLLM 236.7), M = 3 126.35 / 131.6, M = 5 204.35 / 211.4 (GLUON_FP8_TOKENS).
# The tuner's proposals (benchmarks/tune_decode_gluon_tiles.py) confirmed
# beside the previous tables in one run (us per layer, shipped / previous, vLLM's GEMMs alone):
# Qwen3 pairs M = 1 32x7/128x6 18.2 / 18.8 (18.0; down 128 x 7 or 8 level), M = 4 64x3/128x3 41.6 /
# 42.95 (43.0), M = 5 64x3/128x4 51.95 / 52.7 (53.5); grouped M = 3 down 128x4 33.5 / 34.85 (35.2), M = 11
# gate_up 32x8 91.3 / 92.45 (86.5), M = 17-20 32x4/64x4 (GLUON_FP8_TOKENS); DeepSeek grouped 8, 10, 12, 13.
# A joint sweep (every gate_up beside every down) found nothing 0.5% faster at Qwen3 M = 8, 16 or
# DeepSeek M = 2. With the sum launched apart: Qwen3 grouped 32x6/128x4 at M = 24 and 32
# (119.9 / 121.05, 131.7 / 132.4 against GLUON_TILES'), taken for 21-40; level at 48 and 64 (147.25 / 147.45,
# 150.3 / 150.1), which keep GLUON_TILES'. The tuner with the sum launched apart at Qwen3 8, 16, 32, 64:
# M = 8 down 128 x 3 (32x4/128x3 66.8 / 66.7 / 66.7 against 32x4/64x3 67.6 / 67.5 / 67.6); within 0.4% elsewhere.
# The other tiles up to 20 were tuned with the sum fused and not tuned again.
# 128-column gate_up tiles (which quantize the intermediate's groups from registers,
# with no last writer; the tuner's candidates stop at 64) at Qwen3-30B-FP8 16-64, us per layer against the shipped
# choice: 128x3/64x3 104.0 / 103.5 (16), 136.55 / 133.05 (32), 152.15 / 151.9 (64), gate_up alone the same as the
# 32-column tiles' (65.3 and 96.4 us, the chain's tl gate_up 63.9 and 94.0); 128x2 slower (111.85 at 16).
# The tuner on the tree of the day (down quantizing the intermediate, tiles from
# counts; three rounds side by side, us per layer, the new pair / the previous): Qwen3-30B-FP8 pairs M = 1 32x6/128x4
# 17.3 / 18.2 (the probe beside the shipped layer: 17.05 / 18.05, vLLM's GEMMs alone 18.0), M = 2 32x6/128x4 24.85
# / 25.3, M = 5 64x6/128x4 50.4 / 50.8; grouped M = 7 32x8/128x4 60.8 / 62.3, M = 12 32x6/64x3 81.6 / 83.15;
# DeepSeek-V3-TP2 grouped M = 3 32x8/128x3 125.55 / 126.9, M = 7 32x8/128x4 291.4 / 296.0 on tl's GEMMs (so 7 joins
# GLUON_FP8_TOKENS); within 0.5% at Qwen3 3, 4, 8, 16 and DeepSeek 2, 5, 8, 12. On an H100 (these tables
# are every GPU's where GLUON_TILES_ON_GPU lists nothing), new / previous: DeepSeek M = 7 418.75 / 420.5, M = 3
# 174.85 / 175.35, Qwen3 M = 2 32.05 / 32.2.
GLUON_TILES_AT: dict[str, dict[str, dict[int, tuple[tuple[int, int], tuple[int, int]]]]] = {
    "small": {
        "pairs": {1: ((32, 6), (128, 4)), 2: ((32, 6), (128, 4)), 4: ((64, 3), (128, 3)), 5: ((64, 6), (128, 4))},
        "grouped": {3: ((32, 6), (128, 4)), 7: ((32, 8), (128, 4)), 8: ((32, 4), (128, 3)), 9: ((32, 4), (64, 3)),
                    10: ((32, 6), (64, 4)), 11: ((32, 8), (64, 4)), 12: ((32, 6), (64, 3)),
                    **dict.fromkeys(range(17, 21), ((32, 4), (64, 4))),
                    **dict.fromkeys(range(21, 41), ((32, 6), (128, 4)))},
    },
    "large": {"pairs": {1: ((32, 8), (128, 3)), 2: ((64, 4), (128, 3))},
              "grouped": {3: ((32, 8), (128, 3)), 5: ((32, 8), (64, 3)), 6: ((32, 8), (64, 3)), 7: ((32, 8), (128, 4)),
                          8: ((32, 8), (64, 3)), 10: ((32, 6), (128, 4)), 12: ((32, 8), (64, 4)),
                          13: ((32, 8), (64, 4))}},
}
# The GPU every table above (and GLUON_FP8_TOKENS, GLUON_BF16_*) was tuned on, by its torch.cuda.get_device_name.
GLUON_TABLES_GPU = "NVIDIA H200"
# GLUON_TILES_ON_GPU holds FP8 tiles tuned on another GPU, by the name
# torch.cuda.get_device_name gives it, in GLUON_TILES_AT's form, taken before GLUON_TILES_AT where it lists the
# expert size class, path and token count. On an H100 80GB HBM3 (the tuner, whole
# layer, three rounds side by side, us per layer, fastest pair / the H200's tiles, every round faster by more than
# 0.5%): Qwen3-30B-FP8 pairs M = 1 32x8/128x6 20.9 / 21.7 (vLLM's GEMMs alone 21.0 in another run); grouped M = 7
# 82.4 / 85.2, 8 89.6 / 90.7, 9 94.95 / 96.3, 10 105.3 / 106.2, 11 118.6 / 120.3, 12 114.4 / 115.2, 13 129.7 /
# 131.9, 17 158.0 / 161.1, 18 150.0 / 153.8, 20 158.3 / 161.4, 48 205.2 / 207.0, 64 208.2 / 210.3. DeepSeek-V3-TP2
# (M = 1-13): within 0.4% everywhere, nothing listed. Confirmed side by side with the
# H200's tiles on an H100 (the probe, two rounds): faster at all 13 token counts by 0.7-3.1%, M = 1 21.1 / 21.6.
# The tuner on an H100, three rounds: grouped M = 19 32x8/128x4 158.3 / 161.6 (the
# H200's 32x4/64x4), M = 14 32x8/128x3 133.2 / 134.0; within 0.3% at 1, 6, 9-11, 13, 15, 17, 18, 20, 24 and
# DeepSeek-V3-TP2 1, 6, 10, 13; DeepSeek-V3-TP2 pairs M = 2 gate_up 64 x 6 128.95 / 129.65, again 129.05
# / 129.95 beside vLLM's GEMMs alone 129.4 (gate_up alone 82.7 against 92.1 us); 64 x 8 (beyond the tuner's
# candidates) faster again: 128.25 against 129.05 and 129.1 (vLLM's 129.4 and 129.3).
GLUON_TILES_ON_GPU: dict[str, dict[str, dict[str, dict[int, tuple[tuple[int, int], tuple[int, int]]]]]] = {
    "NVIDIA H100 80GB HBM3": {
        "small": {
            "pairs": {1: ((32, 8), (128, 6))},
            "grouped": {7: ((32, 6), (128, 4)), 8: ((32, 8), (64, 3)), 9: ((32, 6), (64, 3)),
                        **dict.fromkeys((5, 6, 10, 11, 12, 18), ((32, 6), (128, 4))),
                        **dict.fromkeys((13, 17, 19, 20, 48), ((32, 8), (128, 4))), 14: ((32, 8), (128, 3)),
                        64: ((32, 8), (64, 3))},
        },
        "large": {"pairs": {2: ((64, 8), (128, 3))}},
    },
}
# GLUON_FP8_TOKENS_ON_GPU holds FP8 token counts measured on another GPU, by the name torch.cuda.get_device_name
# gives it, in GLUON_FP8_TOKENS' form, taken in place of GLUON_FP8_TOKENS for an expert size class it lists.
# On an H100 80GB HBM3 (benchmarks/results/moe_layer.md), us per layer, the
# grouped path on Gluon 32x6/128x4 (from counts) / the H200's choice (vLLM's GEMMs alone): Qwen3-30B-FP8 M = 6
# 76.95 / 80.8 on tl's pairs path (79.6), again 77.0 / 81.05 (79.5); M = 5 67.5 / 68.7 on Gluon's pairs path
# (71.1), again 67.5 / 68.75; at 4 slower (57.75 / 56.3 on Gluon's pairs path); at 7 level with the shipped
# grouped choice (83.15 / 83.15). 32x8/128x4 and 32x6/64x3 were 0.65-3.7 us slower than 32x6/128x4 at 5 and 6.
# DeepSeek-V3-TP2 ("large") at 8 tokens on tl's grouped GEMMs in three runs, us per layer, tl / Gluon 32x8/64x3:
# 461.85 / 462.95, 461.75 / 463.0, 461.4 / 462.9; with this
# entry in: 461.6 / 463.25 (vLLM's GEMMs alone 458.0). The H200's "large" counts but 8.
GLUON_FP8_TOKENS_ON_GPU: dict[str, dict[str, dict[str, tuple[int, ...]]]] = {
    "NVIDIA H100 80GB HBM3": {"small": {"pairs": (1, 2, 4), "grouped": (3, *range(5, MAX_DECODE_TOKENS + 1))},
                              "large": {"pairs": GLUON_FP8_TOKENS["large"]["pairs"],
                                        "grouped": tuple(M for M in GLUON_FP8_TOKENS["large"]["grouped"] if M != 8)}},
}
# With PDL: the Gluon down GEMM's programs copy their first K steps of weights before they wait for
# With PDL, the Gluon down GEMM's programs copy their first K steps of weights before they wait for
# gate_up (which then waits for the launch before it before letting down start). Faster or level
# at every point timed on both paths (DeepSeek M = 1 pairs 52.4 against 53.6, M = 2 92.4 against 93.6;
# Qwen3 M = 2 27.5 against 28.4; level at Qwen3 M = 1 on the grouped path). Tried beside it and removed:
# each pairs-path Gluon GEMM program routing its own token (softmax top-k in Gluon) so that both GEMMs
# copy weights before they wait: level to 9% slower (DeepSeek M = 2 93.5, M = 8 337.5 against 325.1).
# Tried and removed: the first launch asking the L2 for gate_up's weights of
# each routed expert once a token is routed (HBM is idle while that launch aligns): line by line, the first
# K step of every row cost 6 us more a step at Qwen3-30B-FP8 M = 1 (the first launch alone 7.8 us against 1.4:
# one SM issuing 12K prefetches); as bulk prefetches of whole row ranges, 24 us more for a quarter of the rows
# (the first launch alone 26.4 us, DeepSeek-V3-TP2's 117.5: it lasts until they land, about 0.25 TB/s from
# the router programs' SMs).
# Also faster at 16-64 tokens, us per layer, weights before the wait / down waiting
# first: Qwen3-30B-FP8 M = 16 103.5 / 105.35, 32 133.2 / 135.5, 64 151.85 / 153.65; Qwen3-30B-bf16 M = 3 56.05 /
# 57.9, 6 103.5 / 105.8; DeepSeek-V3-TP2 M = 8 319.2 (its second round 323.8) / 320.05. (Down's programs started
# in gate_up's last wave were a suspect for the layer taking 1.1-1.3 us more than its launches timed alone there:
# not so.)
#
# The Gluon GEMMs' token tile (the wgmma's N): 8 rows on either path (the grouped path's 16-row
# tiles of the tile table ran 1.2-1.5x slower at DeepSeek-V3-TP2 M = 2 and 4). Tried and removed: the pairs path's
# tiles shared by the pairs of a block of 8 (or 16) tokens routed to one
# expert, the block's lowest such pair's program computing it (the grouped path's weight reads without its
# route launch's alignment): slower than the shipped choice at every point timed, us per layer, best
# shared-expert tiles / shipped: Qwen3-30B-FP8 M = 3 34.3 / 33.0, M = 6 61.5 / 60.8, M = 7 67.4 / 65.5, M = 8
# 71.1 / 69.5, M = 12 96.4 / 88.4, M = 16 115.1 / 106.2 (16-token tiles; 8-token ones 106.8 and 130.7);
# DeepSeek-V3-TP2 M = 3 127.5 / 126.5, M = 6 244.3 / 243.7, M = 8 323.2 / 322.2. Each GEMM program loads its
# block's routing before its first weights, and the leader programs carry the block while the others leave.
# Tried and removed (50e515d): gate_up on a grid of (expert, column tile), each
# program copying its expert's first NUM_STAGES - 1 weight steps into shared memory before it waits for the route
# launch (which wrote each expert's bounds), then the expert's token tiles one after another. Slower at every
# point, us per layer, expert-major / the grouped path on Gluon without it (the shipped chain): Qwen3-30B-FP8
# M = 8 77.7 / 67.95, 16 111.8 / 104.45, 32 138.0 / 136.35 (135.6), 64 163.55 / 159.7 (152.1). Every program
# copies before it knows whether its expert was chosen (waste at 8-16 tokens), an expert's second tile re-reads
# its weights from HBM, and no overlap with the route launch showed (at 64 the layer lost 3.8 us, gate_up alone 3.3).
# Only the first wave's programs copying before the wait (the others after it, for an expert with tiles):
# gate_up alone level with the grouped grid's, the layer still slower, us: Qwen3 M = 7 66.05 / 65.45, 8 71.15 /
# 69.6, 12 89.0 / 88.2, 16 107.0 / 106.05; DeepSeek-V3-TP2 M = 8 327.9 / 322.8. Copies issued before the wait
# for the route launch bought nothing.
# Tried and removed (bd9ff95, 83d47af): the Gluon down GEMM on a persistent grid
# (2-16 programs an SM, each running work items p, p + G, ... through one shared-memory ring that ran on across
# its items, so a 6-8-step item's ring no longer filled and drained by itself). Slower at every point, down alone,
# us, one program per item / best persistent (8 an SM, each item's pointers computed once, an item ahead):
# Qwen3-30B-FP8 M = 8 24.2 / 30.7, M = 16 37.5 / 45.4; DeepSeek-V3-TP2 M = 2 31.8 / 36.7 (4 an SM), M = 8 107.4 /
# 130.8. The hardware's scheduling of one-item programs keeps more copies in flight than a fixed set of programs.
# 16-row token tiles at Qwen3-30B-FP8 16-64 tokens (the top-k sum launched apart) slower at every point,
# us per layer, 16 / 8 rows: M = 16 105.75 / 102.75, 32 135.85 / 132.05, 48 152.05 / 147.6, 64 154.9 / 150.1.
GLUON_BLOCK_M = 8
# The Gluon down GEMM's top-k sum: in ``moe_gemm``'s top-k reduce launched after it (PDL-linked, as on the
# chain path: one launch more), not in down's last program of each column tile (an arrival counter per column
# tile). H200, 2026-12-04 (benchmarks/results/moe_layer.md), us per layer, launched
# apart / fused: Qwen3-30B-FP8 M = 4 40.55 / 40.45, 7 63.4 / 64.25, 8 67.5 / 68.3, 12 85.2 / 87.0, 16 102.15 /
# 104.6, 20 114.1 / 117.65; DeepSeek-V3-TP2 M = 2 89.4 / 90.2, 3 122.85 / 124.2, 8 313.6 / 314.5, 12 419.1 /
# 421.3. Down alone at Qwen3 M = 16: 31.7 + 1.3 for the reduce against 37.4: the fused sum's last programs, one
# per column tile summing every token's rows after the tile's last arrival, were the slow end of down's launch.
# With the sum launched apart: the Gluon down's pair rows in the activation dtype (as the chain's: half the bytes
# written and read again) instead of fp32. Us per layer, activation dtype / fp32: Qwen3-30B-FP8 M = 1 17.9 /
# 18.0, 8 67.65 / 68.15, 16 103.4 / 104.2, 32 133.2 / 133.95, 64 151.9 / 153.1; DeepSeek-V3-TP2 M = 2 91.65 /
# 91.75, 8 319.25 / 326.35, 13 446.35 / 456.1 (its fp32 rounds spread: 321.4 / 331.3, 449.0 / 463.2).
#
# FP8 block scales on the Gluon GEMMs: gate_up writes the bf16 intermediate only (no group counter, no last
# writer re-reading a group to quantize it) and down quantize each K step's bf16 A tile in registers into an e4m3
# shared-memory slot for its wgmma (the kernel's A_RAW; the same scales and e4m3 values). The Gluon
# timeline (benchmarks/results/moe_layer.md): gate_up's last program ended 1.6 us
# (Qwen3-30B-FP8 M = 1) and 3.0 us (M = 2) after the last K loop, and down waits for that last end. Down's bf16
# A through a shared-memory ring of 2-8 slots: faster at Qwen3-30B-FP8 M = 1 (17.5 against 17.9 us) and 32, slower at
# 2-8 and DeepSeek-V3-TP2 1-2 (Qwen3 M = 2 28.4 / 25.3: down's larger shared memory kept its programs from starting
# beside gate_up's). A loaded into registers two steps ahead (down's shared memory below the previous one's), us
# per layer, by down / the previous layer (vLLM's GEMMs alone): Qwen3-30B-FP8 M = 1 17.7 / 17.8 (17.8), 2 24.95 / 24.9
# (26.2), 4 39.9 / 40.15 (42.2), 8 65.35 / 66.3 (67.0), 16 99.9 / 101.55 (99.9), 32 129.4 / 130.7 (130.5), 64 146.3 /
# 148.95 (146.8); DeepSeek-V3-TP2 M = 1 49.1 / 49.2 (54.7), 2 89.5 / 89.4 (90.4), 8 309.55 / 311.4 (323.8). Outputs bit
# for bit the previous layer's (the same scales and e4m3 values). Tried and removed: every K step's block scales
# copied into shared-memory rings with its tiles (``SCALES_IN_RING``) in place of global loads two steps ahead: slower
# at every point but Qwen3 M = 4 (level), us per layer, rings / shipped: Qwen3 M = 1 18.2 / 17.9, 2 26.25 / 25.3, 16
# 106.6 / 103.45, 64 155.85 / 151.9; DeepSeek M = 2 93.1 / 91.75 (gate_up alone 68.5 against 65.3 at Qwen3 M = 16);
# down's K loop after its wait at Qwen3 M = 1 took as long (1.6-3.1 us), so the scale loads were not what held it.
#
# bf16 / fp16 on the Gluon GEMMs take the FP8 path's products, each waited for and added in before the next step's
# wgmma is issued. Accumulating in the MMA instead (each step's wgmma onto the accumulator in flight, the step
# before waited for once the next is issued) was level on an H100, us per layer, in the MMA / products,
# Qwen3-30B-bf16 Gluon pairs M = 1 33.7 / 33.8, 2 57.5 / 57.5, 3 85.8 / 85.95, 4 107.35 / 107.35, 5 133.05 / 133.25.
# The same with FP8 block scales (two products in flight, each folded with its scales) compiles to code whose every
# wgmma ptxas serializes (C7514 / C7515, Triton 3.6 and 3.9): tests/kernels/test_moe_decode_gluon.py checks that the
# shipped kernels are not serialized.
#
# The grouped path on the Gluon GEMMs (with the top-k sum launched apart), from
# GLUON_TILES_FROM_COUNTS_MIN_TOKENS tokens: the route launch aligns nothing.
# Its routers (a program a token) take their pairs' ranks from the per-expert counters and store each pair at its rank
# in ``expert_pairs`` ([E, M]), with no arrival and no last router writing the sorted layout; each Gluon GEMM program
# finds its token tile from the counts (a scan over E in registers, ``TILES_FROM_COUNTS``) and the top-k sum launch
# zeroes the counters once down has completed. The same pairs in the same tiles as the aligned layout, so the same
# output bit for bit. At 8-64 tokens the route launch took 3.5-4.0 us alone against 1.4-2.0 for the pairs path's x
# launch, which routes but does not align. On an H100 80GB HBM3
# (benchmarks/results/moe_layer.md), us per layer, from counts / aligned (vLLM's GEMMs alone): the route launch alone
# 1.8-2.0 against 3.0-4.0; Qwen3-30B-FP8 M = 8 87.65 / 89.05 (88.3), 12 113.05 / 114.35 (113.8), 16 139.1 / 140.1
# (140.4), 32 182.35 / 183.8 (184.7), 64 206.9 / 208.3 (208.4); DeepSeek-V3-TP2 M = 3 175.5 / 175.95, 8 462.75 / 463.25,
# 12 623.5 / 623.75. GPU tests: bit for bit the aligned layer over graph replays, FP8 and bf16, M = 1-64.
# The fewest tokens at which the grouped path's Gluon GEMMs take their tiles from counts, by the size class of the
# expert's weight count (moe_configs.expert_size_class of its bytes in e4m3, as GLUON_BF16_TOKENS); below it the route
# launch aligns (its one router program, aligning in registers, is cheapest at few tokens). On an H100 80GB HBM3
# (benchmarks/results/moe_layer.md), us per layer, from counts / aligned: at 3 tokens the aligned layer was faster
# for small experts in every run, Qwen3-30B-FP8 42.9 / 42.55, bf16 78.85 / 78.6,
# Qwen3-30B-FP8 42.8 / 42.4, bf16 78.8 / 78.6, again 41.45 / 41.15, 74.95 / 74.55 (its
# down alone 12.2 / 11.8 at FP8); from 4 tokens counts were level or faster (bf16 M = 4 105.1 /
# 105.25, Qwen3-30B-FP8 10 104.0 / 105.4, 11 117.3 / 118.8; bf16 5 126.7 / 128.25, 6 145.05 / 146.85, 7 154.45 /
# 156.3). DeepSeek-V3-TP2's experts (large) were faster from counts at 3 tokens too (175.5 /
# 175.95, again 167.9 / 168.7, 5 271.35 / 272.9, 6 328.7 / 330.1). Untimed on an H200.
GLUON_TILES_FROM_COUNTS_MIN_TOKENS: dict[str, int] = {"small": 4, "large": 1}


@dataclass(frozen=True)
class DecodeConfig:
    """The decode layer's choices by shape and token count: the path ``"auto"`` takes, the route launch's layout,
    where the GEMMs run in Gluon and on which tiles. Each default is the shipped table of the same name in capitals
    above (measured on an H200, and on the GPUs ``*_ON_GPU`` names); ``dataclasses.replace(DEFAULT_DECODE_CONFIG,
    ...)`` makes another, which ``fused_moe_decode(config=...)`` / ``plan_fused_moe_decode(config=...)`` take for
    that call. Tables map an expert size class (``moe_configs.expert_size_class``), a path and a token count to a
    choice; tiles are ``(out_n, stages)`` pairs for (gate_up, down)."""

    bf16_pairs_max_tokens: int = BF16_PAIRS_MAX_TOKENS
    fp8_pairs_tokens: Mapping[str, tuple[int, ...]] = field(default_factory=lambda: FP8_PAIRS_TOKENS)
    fp8_chain_above_tokens: int = FP8_CHAIN_ABOVE_TOKENS
    pair_handoff_min_pairs: int = PAIR_HANDOFF_MIN_PAIRS
    fp8_pairs_down_rotated_tokens: Mapping[str, tuple[int, ...]] = field(
        default_factory=lambda: FP8_PAIRS_DOWN_ROTATED_TOKENS)
    few_tokens: int = FEW_TOKENS
    few_elements: int = FEW_ELEMENTS
    route_num_warps: int = ROUTE_NUM_WARPS
    route_wide_tile_warps: int = ROUTE_WIDE_TILE_WARPS
    # "measured" (the token tables below), "always" or "never" (GLUON_MODES)
    gluon_fp8_gemms: str = "measured"
    gluon_bf16_gemms: str = "measured"
    gluon_fp8_tokens: Mapping[str, Mapping[str, tuple[int, ...]]] = field(default_factory=lambda: GLUON_FP8_TOKENS)
    gluon_fp8_tokens_on_gpu: Mapping[str, Mapping[str, Mapping[str, tuple[int, ...]]]] = field(
        default_factory=lambda: GLUON_FP8_TOKENS_ON_GPU)
    gluon_bf16_tokens: Mapping[str, Mapping[str, tuple[int, ...]]] = field(default_factory=lambda: GLUON_BF16_TOKENS)
    gluon_tiles: Mapping[str, tuple[GluonTile, GluonTile]] = field(default_factory=lambda: GLUON_TILES)
    gluon_tiles_at: Mapping[str, Mapping[str, Mapping[int, TilePair]]] = field(default_factory=lambda: GLUON_TILES_AT)
    gluon_tiles_on_gpu: Mapping[str, Mapping[str, Mapping[str, Mapping[int, TilePair]]]] = field(
        default_factory=lambda: GLUON_TILES_ON_GPU)
    gluon_bf16_tiles_at: Mapping[str, Mapping[int, TilePair]] = field(default_factory=lambda: GLUON_BF16_TILES_AT)
    gluon_tiles_from_counts_min_tokens: Mapping[str, int] = field(
        default_factory=lambda: GLUON_TILES_FROM_COUNTS_MIN_TOKENS)

    def __post_init__(self) -> None:
        for name in ("gluon_fp8_gemms", "gluon_bf16_gemms"):
            if getattr(self, name) not in GLUON_MODES:
                raise ValueError(f"DecodeConfig.{name} must be one of {GLUON_MODES}, got {getattr(self, name)!r}")


DEFAULT_DECODE_CONFIG = DecodeConfig()


def takes_gluon_gemms(num_tokens: int, path: str, block_scales: bool, hidden: int, intermediate: int,
                      expert_bytes: int | None = None, unquantized: bool = False, gpu_name: str | None = None,
                      config: DecodeConfig | None = None) -> bool:
    """Whether the decode layer's two GEMMs run as ``moe_decode_gluon``'s kernel, on the pairs or grouped
    path with H and I multiples of 128 and a Triton with Gluon's Hopper wgmma: FP8 block scales
    (``config.gluon_fp8_gemms``; with "measured" a token count of its gluon_fp8_tokens for the expert size class and
    path, or of gluon_fp8_tokens_on_gpu's for the GPU named ``gpu_name`` where it lists the size class), or with
    ``unquantized`` bf16 / fp16 (``config.gluon_bf16_gemms``; "measured": gluon_bf16_tokens by path)."""
    cfg = config or DEFAULT_DECODE_CONFIG
    if path not in ("pairs", "grouped") or hidden % 128 or intermediate % 128 or not gluon_gemms_supported():
        return False
    if unquantized:
        return cfg.gluon_bf16_gemms == "always" or (
            cfg.gluon_bf16_gemms == "measured" and _bf16_gluon_listed(num_tokens, path, hidden, intermediate, cfg))
    if cfg.gluon_fp8_gemms == "never" or not block_scales:
        return False
    return cfg.gluon_fp8_gemms == "always" or _gluon_measured_at(num_tokens, path, expert_bytes, cfg,
                                                                 gpu_name=gpu_name)


def gluon_tiles(path: str, num_tokens: int, expert_bytes: int | None, unquantized: bool = False,
                gpu_name: str | None = None, config: DecodeConfig | None = None) -> tuple[GluonTile, GluonTile]:
    """The (gate_up, down) Gluon tiles of a path at a token count on the GPU named ``gpu_name`` (as
    ``torch.cuda.get_device_name`` gives it; None: no GPU's own table): GLUON_TILES_ON_GPU's for that GPU where
    it lists the expert size class, path and token count, else GLUON_TILES_AT's where it lists them (with
    ``unquantized``, bf16 / fp16: GLUON_BF16_TILES_AT's by path and token count), else GLUON_TILES'; each table
    ``config``'s (None: the shipped ones)."""
    cfg = config or DEFAULT_DECODE_CONFIG
    listed: TilePair | None
    if unquantized:
        listed = cfg.gluon_bf16_tiles_at.get(path, {}).get(num_tokens)
    else:
        size_class = expert_size_class(expert_bytes)
        listed = cfg.gluon_tiles_on_gpu.get(gpu_name or "", {}).get(size_class, {}).get(path, {}).get(num_tokens)
        if listed is None:
            listed = cfg.gluon_tiles_at.get(size_class, {}).get(path, {}).get(num_tokens)
    if listed is None:
        return cfg.gluon_tiles[path]
    gate_up_tile, down_tile = (GluonTile(*tile) for tile in listed)
    return gate_up_tile, down_tile


def _bf16_gluon_listed(num_tokens: int, path: str, hidden: int, intermediate: int, cfg: DecodeConfig) -> bool:
    """Whether cfg.gluon_bf16_tokens lists this token count for the path and the size class of the expert's weight
    count (its bytes in e4m3: the FP8 tables' classes by shape)."""
    return _gluon_measured_at(num_tokens, path, expert_weight_bytes(hidden, intermediate, 1), cfg,
                              cfg.gluon_bf16_tokens)


def _gluon_measured_at(num_tokens: int, path: str, expert_bytes: int | None, cfg: DecodeConfig,
                       tokens: Mapping[str, Mapping[str, tuple[int, ...]]] | None = None,
                       gpu_name: str | None = None) -> bool:
    """Whether ``tokens`` lists this token count for the expert size class and path; unless given, cfg's FP8
    tables: gluon_fp8_tokens_on_gpu's for the GPU named ``gpu_name`` where it lists the size class, else
    gluon_fp8_tokens'."""
    size_class = expert_size_class(expert_bytes)
    if tokens is None:
        tokens = cfg.gluon_fp8_tokens_on_gpu.get(gpu_name or "", {})
        if size_class not in tokens:
            tokens = cfg.gluon_fp8_tokens
    return num_tokens in tokens.get(size_class, {}).get(path, ())


@functools.cache
def _cuda_device_name(index: int) -> str:
    return torch.cuda.get_device_name(index)


def gpu_name(device: torch.device) -> str | None:
    """The name ``torch.cuda.get_device_name`` gives a CUDA device (asked once per device), the key of
    GLUON_TILES_ON_GPU; None for any other device."""
    if device.type != "cuda":
        return None
    return _cuda_device_name(torch.cuda.current_device() if device.index is None else device.index)


def plan_fused_moe_decode(
    x: torch.Tensor,
    router_logits: torch.Tensor,
    w13: torch.Tensor,
    w2: torch.Tensor,
    top_k: int,
    *,
    renormalize: bool = False,
    use_fp8_w8a8: bool = False,
    per_channel_quant: bool = False,
    block_shape: list[int] | None = None,
    w1_scale: torch.Tensor | None = None,
    w2_scale: torch.Tensor | None = None,
    tile_configs: MoeTileConfigs | None = None,
    workspace: MoeDecodeWorkspace | None = None,
    out: torch.Tensor | None = None,
    path: str = "auto",
    config: DecodeConfig | None = None,
) -> DecodePlan:
    """Validate one decode-layer call and prepare its launches without running them.

    Same arguments as :func:`fused_moe_decode`; ``plan.path`` is the path taken (never ``"auto"``).
    ``config`` (:class:`DecodeConfig`; None: ``DEFAULT_DECODE_CONFIG``) holds every table the plan reads.
    Running ``plan.launches`` in order computes the
    layer into ``plan.out``; each launch can also be run (and timed) on its own once the earlier
    ones have run, since they only read the workspace.
    """
    check_router_logits(router_logits, top_k, "fused_moe_decode")
    dcfg = config or DEFAULT_DECODE_CONFIG
    M = x.shape[0] if x.dim() == 2 else -1
    if router_logits.shape[0] != M:
        raise ValueError(f"fused_moe_decode: router_logits has {router_logits.shape[0]} rows "
                         f"but x {tuple(x.shape)} has {M} tokens")
    if not 1 <= M <= MAX_DECODE_TOKENS:
        raise ValueError(
            f"fused_moe_decode: serves 1..{MAX_DECODE_TOKENS} tokens, got {M} (use fused_moe_from_logits for any M)"
        )
    E = router_logits.shape[1]
    if w13.dim() == 3 and w13.shape[0] != E:
        raise ValueError(f"fused_moe_decode: router_logits scores {E} experts but w13 has {w13.shape[0]}")
    # Shape stand-ins for the routing this call computes (meta tensors: no memory, no kernels).
    ids_like = torch.empty((M, top_k), dtype=torch.int32, device="meta")
    weights_like = torch.empty((M, top_k), dtype=torch.float32, device="meta")
    shape = check_moe_inputs(
        x, w13, w2, weights_like, ids_like,
        use_fp8_w8a8=use_fp8_w8a8, per_channel_quant=per_channel_quant, block_shape=block_shape,
    )
    quant = shape.quant
    H, I = shape.hidden, shape.intermediate
    w1s = w2s = None
    if shape.fp8:
        if shape.scale_block != (128, 128):
            raise ValueError(f"fused_moe_decode: block_shape must be [128, 128], got {list(shape.scale_block)}")
        w1s = normalize_w_scale(w1_scale, "w1_scale", E, 2 * I, H, shape.quant, shape.scale_block)
        w2s = normalize_w_scale(w2_scale, "w2_scale", E, H, I, shape.quant, shape.scale_block)
    elif w1_scale is not None or w2_scale is not None:
        raise ValueError("fused_moe_decode: scales were given but use_fp8_w8a8=False")
    if x.stride(1) != 1:
        x = x.contiguous()
    if out is None:
        out = torch.empty_like(x)
    elif tuple(out.shape) != tuple(x.shape) or out.dtype != x.dtype or out.stride(1) != 1:
        raise ValueError(f"fused_moe_decode: out must be {tuple(x.shape)} {x.dtype} with contiguous rows, "
                         f"got {tuple(out.shape)} {out.dtype}")
    if workspace is None:
        workspace = cached_workspace(w13, w2, top_k, x.dtype)
    workspace.check(E, top_k, H, I, x.dtype, x.device)
    if path not in DECODE_PATHS:
        raise ValueError(f"fused_moe_decode: path must be one of {DECODE_PATHS}, got {path!r}")
    expert_bytes = expert_weight_bytes(H, I, w13.element_size())
    gpu = gpu_name(x.device)
    if path == "auto":
        path = choose_decode_path(M, E, top_k, shape.fp8, quant == QUANT_BLOCK, expert_bytes, H, I, gpu, dcfg)
    # FP8 on the pairs and chain paths: block scales only.
    if path in ("pairs", "chain") and shape.fp8 and quant != QUANT_BLOCK:
        raise ValueError(f"fused_moe_decode: path={path!r} takes bf16/fp16 or FP8 with block scales; "
                         "per-tensor and per-channel FP8 run on path='grouped'")
    if tile_configs is not None:
        cfgs = tile_configs
    elif path == "chain":
        cfgs = select_tile_configs(M, E, shape.precision)  # fused_moe's tiles: the chain runs its GEMMs
    else:
        cfgs = select_decode_tile_configs(M, E, shape.precision, expert_bytes, path)
    if cfgs.gate_up.block_m != cfgs.down.block_m:
        raise ValueError("fused_moe_decode: tile_configs gate_up and down must share block_m")
    cfgs.gate_up.check("fused_moe_decode gate_up tile")
    cfgs.down.check("fused_moe_decode down tile")
    # Both GEMMs in Gluon (takes_gluon_gemms), on 8-row token tiles (GLUON_BLOCK_M); on the pairs path the
    # x launch also routes each token.
    gluon = takes_gluon_gemms(M, path, quant == QUANT_BLOCK, H, I, expert_bytes, unquantized=quant == QUANT_NONE,
                              gpu_name=gpu, config=dcfg)
    block_m = GLUON_BLOCK_M if gluon else cfgs.block_m
    if block_m > _MAX_BLOCK_M:
        raise ValueError(f"fused_moe_decode: block_m must be <= {_MAX_BLOCK_M}, got {block_m}")
    if quant == QUANT_BLOCK and path != "chain" and cfgs.gate_up.block_n // 2 > 128:
        raise ValueError(f"fused_moe_decode: FP8 block scales need gate_up block_n <= 256, got {cfgs.gate_up.block_n}")

    ws = workspace
    num_pairs = M * top_k
    padded_len = max_padded_len(num_pairs, E, block_m)
    num_blocks = padded_len // block_m
    k_pow2 = triton.next_power_of_2(top_k)
    flags = ws.flags
    route_arrivals, x_amax, tile_arrivals = flags[0:1], flags[1:2].view(torch.float32), flags[2:]
    xs_cols = triton.cdiv(H, 128)
    a2_cols = triton.cdiv(I, 128)
    stride_xsm = xs_cols if quant == QUANT_BLOCK else (1 if quant == QUANT_CHANNEL else 0)
    stride_a2m = a2_cols if quant == QUANT_BLOCK else (1 if quant == QUANT_CHANNEL else 0)

    pair_tiles = path == "pairs"
    pdl = pdl_supported()
    # FP8 block scales: x quantized to e4m3 by the first launch (on the pairs path a launch of its own, no routing,
    # no alignment; gate_up's programs route themselves while it runs, then wait for it before their K loop), and
    # the intermediate by gate_up (tl's GEMMs) or by down as it loads it (Gluon's).
    pairs_prequant = pair_tiles and quant == QUANT_BLOCK
    prequant = quant == QUANT_BLOCK
    quant_inter = quant == QUANT_BLOCK
    # down starts on its pair's gate_up columns (counters zeroed by the x launch) instead of the whole launch
    pair_ready = pairs_prequant and takes_pair_handoff(num_pairs, dcfg) and not gluon
    launches: list[tuple[str, Callable[[], object]]] = []
    # The Gluon pairs path's x launch routes too (no alignment); with bf16 / fp16 that is all it does.
    routes_tokens = gluon and pair_tiles
    # Routing in programs of their own beside the rows' (2 * M programs): that x launch's (not with no row to
    # quantize), or the grouped and chain paths' route launch's past the few-token router, the last router aligning
    # (a tensor scale needs every row before the alignment's arrival: never there).
    # The Gluon GEMMs' token tiles from the route launch's counts (takes_tiles_from_counts): routers apart, nothing
    # aligned.
    tiles_from_counts = gluon and not pair_tiles and takes_tiles_from_counts(quant, M, H, I, dcfg)
    if routes_tokens:
        routers_apart = quant != QUANT_NONE
    else:
        routers_apart = tiles_from_counts or (not pair_tiles and _route_routers_apart(M, E, quant, dcfg))
    if routers_apart:
        x_launch_programs = 2 * M
    else:
        # The route launch's router in a program of its own beside the M that quantize rows.
        x_launch_programs = M if pair_tiles else M + 1
    if not pair_tiles or pairs_prequant or routes_tokens:
        # The pairs path's x quantization is the route kernel with ROUTE off (one program a token).
        # The GEMM after it may start at once (PDL) and reads the router logits before it waits, so
        # this launch lets it start only once the logits are written: in plain stream order, or
        # PDL-launched and waiting for the launch before at its start.
        x_launch_name = ("quantize_x" if quant != QUANT_NONE else "route_tokens") if pair_tiles else "route"
        launches.append((x_launch_name, functools.partial(
            moe_decode_route_kernel[(x_launch_programs,)],
            router_logits, x, ws.topk_ids, ws.topk_weights, ws.sorted_ids, ws.expert_ids, ws.num_padded,
            ws.counts, ws.starts, ws.x_scale, x_amax, ws.a2_amax, route_arrivals, ws.x_q,
            M, E, H, router_logits.stride(0), x.stride(0), stride_xsm, a2_cols,
            num_pairs, padded_len, num_blocks, block_m,
            TOP_K=top_k, K_POW2=k_pow2, E_POW2=triton.next_power_of_2(E),
            P_POW2=triton.next_power_of_2(MAX_DECODE_TOKENS * top_k), RENORMALIZE=bool(renormalize),
            QUANT=quant, GROUP=128, FILL_BLOCK=_FILL_BLOCK,
            # Block scales: a row of up to _ROUTE_MAX_BLOCK_H columns in one pass (H200: one load
            # round trip instead of H / 1024 serial ones).
            BLOCK_H=min(max(_ROUTE_BLOCK_H, triton.next_power_of_2(H)), _ROUTE_MAX_BLOCK_H) if quant == QUANT_BLOCK
            else _ROUTE_BLOCK_H,
            HIDDEN_POW2=triton.next_power_of_2(H),
            FP8_MAX_C=FP8_MAX, MIN_AMAX=_MIN_AMAX, LAUNCH_DEPENDENTS=pdl, WRITE_XQ=prequant,
            FEW_TOKENS=dcfg.few_tokens, FEW_ELEMENTS=dcfg.few_elements, ranks_ptr=ws.pair_ranks,
            ROUTE=not pair_tiles,
            **({"ZERO_PAIR_READY": True, "pair_ready_ptr": ws.pair_ready} if pair_ready else {}),
            **({"ROUTE_TOKENS": True} if routes_tokens else {}),
            **({"ROUTERS_APART": True} if routers_apart else {}),
            **({"EXPERT_PAIRS": True, "expert_pairs_ptr": ws.expert_pairs} if tiles_from_counts else {}),
            **({"WAIT_PRIOR": True, "launch_pdl": True} if pdl else {}),
            num_warps=_route_warps(M, E, quant, pair_tiles, dcfg, routers_apart),
        )))
    if path == "chain":
        launches += _chain_launches(ws, ws.x_q[:M] if prequant else x, w13, w2, w1s, w2s, out, cfgs, quant, M, top_k,
                                    padded_len, pdl)
        return DecodePlan(out, tuple(launches), path, workspace=ws)
    inter = ws.inter[:num_pairs]
    if gluon:
        launches += _gluon_gemm_launches(ws, x, w13, w2, w1s, w2s, out, block_m, num_blocks, M, top_k, stride_xsm,
                                         stride_a2m, pdl, pair_tiles, expert_bytes, gpu,
                                         dcfg, tiles_from_counts)
        return DecodePlan(out, tuple(launches), path, gemms="gluon", workspace=ws)
    rotated_down_tokens = dcfg.fp8_pairs_down_rotated_tokens.get(expert_size_class(expert_bytes), ())
    for gemm in (1, 2):
        cfg = cfgs.gate_up if gemm == 1 else cfgs.down
        gated = gemm == 1
        # The pairs path's gate_up starts the layer, unless x's quantization launch comes first.
        first_launch = pair_tiles and gated and not pairs_prequant
        out_n = I if gated else H
        a = (ws.x_q[:M] if prequant else x) if gated else (ws.inter_q[:num_pairs] if quant_inter else inter)
        wt = w13 if gated else w2
        ws_ = w1s if gated else w2s
        out_per_tile = cfg.block_n // 2 if gated else cfg.block_n
        grid = ((num_pairs if pair_tiles else num_blocks) * triton.cdiv(out_n, out_per_tile),)
        bse, bsn, bsk = weight_scale_strides(quant, ws_)
        a_scale = ws.x_scale if gated else ws.a2_amax
        c = inter if gated else ws.pair_out
        block_k = (128 if pair_tiles else min(cfg.block_k, 128)) if quant == QUANT_BLOCK else cfg.block_k
        k_unroll = cfg.block_k // 128 if quant == QUANT_BLOCK and cfg.block_k > 128 else 1
        a_prequant = (prequant and gated) or (quant_inter and not gated)
        # A rotated K loop needs A loaded as is (the kernel quantizes it on load one step ahead otherwise).
        rotate_k = not gated and pair_tiles and quant == QUANT_BLOCK and M in rotated_down_tokens
        launches.append(("gate_up" if gated else "down", functools.partial(
            moe_decode_gemm_kernel[grid],
            a, wt, c, a_scale, ws_ if ws_ is not None else a, ws.topk_weights,
            ws.sorted_ids, ws.expert_ids, ws.num_padded, ws.a2_amax, tile_arrivals, out, router_logits, ws.topk_ids,
            num_pairs, M, E, out_n, a.shape[1],
            a.stride(0), wt.stride(0), wt.stride(1), c.stride(0),
            stride_xsm if gated else stride_a2m, bse, bsn, bsk, stride_a2m, out.stride(0), router_logits.stride(0),
            A_ROWS_PER_PAIR_DIV=top_k if gated else 1,
            GATED=gated,
            REDUCE=not gated,
            QUANT=quant,
            A_SCALE_IS_AMAX=not gated and not quant_inter,
            AMAX_OUT=gated and quant != QUANT_NONE and not quant_inter,
            SCALE_BLOCK_N=128,
            SCALE_BLOCK_K=128,
            SWAP_AB=cfg.swap_ab,
            BLOCK_M=block_m,
            BLOCK_N=cfg.block_n,
            # Block scales: at most one scale group per K step; the pairs path's gate_up exactly one.
            BLOCK_K=block_k,
            # Block scales and a tile deeper than a group: that many 128-deep steps per iteration.
            K_UNROLL=k_unroll,
            TOP_K=top_k,
            K_POW2=k_pow2,
            TOKEN_CHUNK=max(1, _REDUCE_ELEMENTS // (k_pow2 * cfg.block_n)),
            FP8_MAX_C=FP8_MAX,
            MIN_AMAX=_MIN_AMAX,
            DOT_IN_FP32=_INTERPRETED and x.dtype == torch.bfloat16,
            PAIR_TILES=pair_tiles,
            E_POW2=triton.next_power_of_2(E),
            RENORMALIZE=bool(renormalize),
            # Each GEMM lets the next launch start; each waits for the one before (the pairs path's
            # GEMMs route before waiting); the layer's first launch waits for the caller's last one
            # before anything.
            LAUNCH_DEPENDENTS=pdl and gated,
            WAIT_PRIOR=_wait_prior(pdl, first_launch, pair_tiles, waits_on_pair_counter=pair_ready and not gated),
            A_PREQUANT=a_prequant,
            aq_out_ptr=ws.inter_q,
            group_arrivals_ptr=ws.group_arrivals,
            QUANT_OUT=quant_inter and gated,
            num_warps=cfg.num_warps,
            num_stages=cfg.num_stages,
            **({"PAIR_READY": True, "ready_ptr": ws.pair_ready, "GATE_UP_OUT_N": cfgs.gate_up.block_n // 2}
               if pair_ready else {}),
            **({"ROTATE_K": True} if rotate_k else {}),
            **({"launch_pdl": True} if pdl else {}),
        )))
    return DecodePlan(out, tuple(launches), path, workspace=ws)


def _chain_launches(ws: MoeDecodeWorkspace, a: torch.Tensor, w13: torch.Tensor, w2: torch.Tensor, w1s, w2s,
                    out: torch.Tensor, cfgs: MoeTileConfigs, quant: int, M: int, top_k: int, padded_len: int,
                    pdl: bool) -> list[tuple[str, Callable[[], object]]]:
    """The chain path after its route launch: moe_gemm's gate_up, the intermediate's group
    quantization (FP8 block scales), down into pair rows, the top-k reduce; all on the workspace's
    buffers (no allocation: graph-capturable), PDL-linked where supported."""
    P, E, H, I = M * top_k, ws.num_experts, ws.hidden, ws.intermediate
    block_m = cfgs.block_m
    routing = AlignedRouting(ws.sorted_ids[:padded_len], ws.expert_ids[:padded_len // block_m], ws.num_padded,
                             block_m, P)
    fp8 = quant == QUANT_BLOCK
    x_scale = ws.x_scale[:M * triton.cdiv(H, 128)].view(M, -1) if fp8 else None
    inter, inter_q = ws.inter[:P], ws.inter_q[:P]
    inter_scale = ws.a2_amax[:P * triton.cdiv(I, 128)].view(P, -1) if fp8 else None
    pair_rows = ws.pair_rows[:P]
    launches: list[tuple[str, Callable[[], object]]] = [("gate_up", functools.partial(
        launch_moe_gemm, a, w13, inter, routing, cfgs.gate_up, gated=True, a_rows_per_pair_div=top_k, quant=quant,
        a_scale=x_scale, w_scale=w1s, pdl=pdl))]
    if fp8:
        launches.append(("quantize", functools.partial(launch_quantize_groups, inter, inter_q, inter_scale, 128,
                                                       pdl=pdl)))
    launches.append(("down", functools.partial(
        launch_moe_gemm, inter_q if fp8 else inter, w2, pair_rows, routing, cfgs.down, gated=False,
        a_rows_per_pair_div=1, topk_weights=ws.topk_weights[:P], quant=quant, a_scale=inter_scale, w_scale=w2s,
        pdl=pdl)))
    launches.append(("reduce", functools.partial(launch_topk_reduce, pair_rows, ws.topk_ids[:P].view(M, top_k), out,
                                                 E, pdl=pdl)))
    return launches


def _gluon_gemm_launches(ws: MoeDecodeWorkspace, x: torch.Tensor, w13: torch.Tensor, w2: torch.Tensor,
                         w1s: torch.Tensor | None, w2s: torch.Tensor | None, out: torch.Tensor, block_m: int,
                         num_blocks: int, M: int, top_k: int, stride_xsm: int, stride_a2m: int,
                         pdl: bool, pair_tiles: bool,
                         expert_bytes: int, gpu: str | None, dcfg: DecodeConfig,
                         tiles_from_counts: bool = False) -> list[tuple[str, Callable[[], object]]]:
    """The two GEMMs of the grouped path (or with ``pair_tiles`` the pairs path: one 8-row token tile
    per pair, its expert routed by the x launch) as ``moe_decode_gemm_gluon_kernel`` launches (FP8
    block scales: x and the intermediate as e4m3 with group scales; with no weight scales, ``w1s`` None,
    bf16 / fp16: ``x`` and the intermediate as they are), on the workspace's buffers, PDL-linked where
    supported, on the tiles ``gluon_tiles`` gives the path at M tokens of experts of ``expert_bytes`` on the GPU
    named ``gpu`` (``gpu_name`` of x's device, looked up once by the plan) by ``dcfg``'s tables; with
    ``tiles_from_counts`` each program finds its token tile from the route launch's counts and the top-k sum
    launch zeroes them. Down writes its pair rows in the activation dtype and the top-k reduce launched after it
    sums them; with block scales down quantizes the bf16 intermediate step by step as it loads it."""
    P, H, I = M * top_k, ws.hidden, ws.intermediate
    block_scaled = w1s is not None
    if pair_tiles:
        block_m, num_blocks = GLUON_BLOCK_M, P
    # WAIT_PRIOR by gated, with PDL: gate_up lets down start only after its own wait (down reads the x launch's
    # routing before its wait), and down waits once its first weights are on their way.
    if pdl:
        wait_prior = {True: _WAIT_BEFORE_DEPENDENTS, False: _WAIT_BEFORE_K_LOOP}
    else:
        wait_prior = dict.fromkeys((True, False), _WAIT_NONE)
    gate_up_tile, down_tile = gluon_tiles("pairs" if pair_tiles else "grouped", M, expert_bytes,
                                          unquantized=not block_scaled, gpu_name=gpu, config=dcfg)
    down_rows = ws.pair_rows
    launches: list[tuple[str, Callable[[], object]]] = []
    for gated in (True, False):
        tile = gate_up_tile if gated else down_tile
        if not gated and tile.out_n < 64:
            raise ValueError(f"fused_moe_decode: the Gluon down tile's out_n must be 64 or 128 (its weight rows), "
                             f"got {tile.out_n}")
        n, k = (I, H) if gated else (H, I)
        wt, w_scale = (w13, w1s) if gated else (w2, w2s)
        c = ws.inter[:P] if gated else down_rows
        if block_scaled:
            # down's A: the bf16 intermediate, quantized step by step in down (its scales unread)
            a, a_scale, stride_asm = (ws.x_q[:M], ws.x_scale, stride_xsm) if gated else (ws.inter[:P], ws.a2_amax,
                                                                                            stride_a2m)
            bse, bsn, bsk = weight_scale_strides(QUANT_BLOCK, w_scale)
        else:
            # No scales: the kernel reads none of the scale pointers or strides.
            a, a_scale, stride_asm, w_scale = (x if gated else ws.inter[:P]), ws.x_scale, 0, ws.x_scale
            bse = bsn = bsk = 0
        launches.append(("gate_up" if gated else "down", functools.partial(
            moe_decode_gemm_gluon_kernel[(num_blocks * triton.cdiv(n, tile.out_n),)],
            a, a_scale, wt, w_scale, c, ws.topk_weights, ws.sorted_ids, ws.expert_ids, ws.num_padded,
            P, M, n, k, a.stride(0), stride_asm, wt.stride(0), wt.stride(1), bse, bsn, bsk, c.stride(0),
            A_ROWS_PER_PAIR_DIV=top_k if gated else 1, GATED=gated, BLOCK_M=block_m, OUT_N=tile.out_n,
            NUM_STAGES=tile.stages, FP8_MAX_C=FP8_MAX, MIN_AMAX=_MIN_AMAX,
            LAUNCH_DEPENDENTS=pdl, WAIT_PRIOR=wait_prior[gated],
            PAIR_TILES=pair_tiles, topk_ids_ptr=ws.topk_ids, num_warps=4,
            **({} if block_scaled else {"BLOCK_SCALED": False}),
            **({"TILES_FROM_COUNTS": True, "counts_ptr": ws.counts, "expert_pairs_ptr": ws.expert_pairs,
                "num_experts": ws.num_experts, "E_POW2": triton.next_power_of_2(ws.num_experts)}
               if tiles_from_counts else {}),
            **({"launch_pdl": True} if pdl else {}),
        )))
    launches.append(("reduce", functools.partial(launch_topk_reduce, down_rows[:P], ws.topk_ids[:P].view(M, top_k),
                                                 out, ws.num_experts, pdl=pdl,
                                                 zero_counts=ws.counts if tiles_from_counts else None)))
    return launches


def takes_tiles_from_counts(quant: int, num_tokens: int, hidden: int, intermediate: int,
                            config: DecodeConfig | None = None) -> bool:
    """Whether the grouped path's Gluon GEMMs find their token tiles from the route launch's counts for
    ``num_tokens`` tokens and experts of [2 * intermediate, hidden] and [hidden, intermediate]: from
    ``config.gluon_tiles_from_counts_min_tokens`` for the experts' size class (the top-k sum launch after down zeroes
    the counts); never with a tensor scale (its routers are not apart)."""
    if quant == QUANT_TENSOR:
        return False
    size_class = expert_size_class(expert_weight_bytes(hidden, intermediate, 1))
    return num_tokens >= (config or DEFAULT_DECODE_CONFIG).gluon_tiles_from_counts_min_tokens[size_class]


def _router_takes_few_tokens(num_tokens: int, num_experts: int, quant: int, cfg: DecodeConfig) -> bool:
    """Whether the route launch's router program routes and aligns every token at once (the few-token
    path), as ``moe_decode_route_kernel`` decides when its routers are not apart; else the counter path."""
    return (quant != QUANT_TENSOR and HAS_BATCHED_TOPK and num_tokens <= cfg.few_tokens
            and num_tokens * triton.next_power_of_2(num_experts) <= cfg.few_elements)


def _route_routers_apart(num_tokens: int, num_experts: int, quant: int, cfg: DecodeConfig) -> bool:
    """Whether the grouped and chain paths' route launch routes each token in a program of its own, the last
    router aligning: wherever its router program would not take the few-token path; never with a tensor scale
    (its value needs every row first)."""
    return quant != QUANT_TENSOR and not _router_takes_few_tokens(num_tokens, num_experts, quant, cfg)


def _route_warps(num_tokens: int, num_experts: int, quant: int, pair_tiles: bool, cfg: DecodeConfig,
                 routers_apart: bool = False) -> int:
    """num_warps of the layer's first launch: cfg.route_wide_tile_warps where its router takes the few-token
    path (not on the pairs path, nor with routers apart) on a tile of 1024 logits or more, else
    cfg.route_num_warps."""
    few_tokens = (not pair_tiles and not routers_apart
                  and _router_takes_few_tokens(num_tokens, num_experts, quant, cfg))
    wide_tile = triton.next_power_of_2(num_tokens) * triton.next_power_of_2(num_experts) >= 1024
    return cfg.route_wide_tile_warps if few_tokens and wide_tile else cfg.route_num_warps


def _wait_prior(pdl: bool, first_launch: bool, pair_tiles: bool, waits_on_pair_counter: bool = False) -> int:
    """WAIT_PRIOR of a GEMM launch: none without PDL or where the GEMM waits on its pair's counter
    instead (PAIR_READY); for the layer's first launch, at its start before it lets the next launch
    start (with PDL) or none; else before the K loop on the pairs path (its GEMMs route
    first), at the start elsewhere."""
    if first_launch:
        return _WAIT_BEFORE_DEPENDENTS if pdl else _WAIT_NONE
    if not pdl or waits_on_pair_counter:
        return _WAIT_NONE
    return _WAIT_BEFORE_K_LOOP if pair_tiles else _WAIT_AT_START


@dataclass(frozen=True)
class DecodePlan:
    """The output buffer of one decode-layer call, its launches in order by stage name, its path,
    which kernel runs its GEMMs, and the workspace its launches use."""

    out: torch.Tensor
    launches: tuple[tuple[str, Callable[[], object]], ...]
    path: str
    # Which kernel runs the two GEMMs: "tl" (moe_decode_gemm_kernel, or moe_gemm's on the chain path) or
    # "gluon" (moe_decode_gluon's, DecodeConfig.gluon_fp8_gemms or gluon_bf16_gemms).
    gemms: str = "tl"
    workspace: MoeDecodeWorkspace | None = None


def fused_moe_decode(
    x: torch.Tensor,
    router_logits: torch.Tensor,
    w13: torch.Tensor,
    w2: torch.Tensor,
    top_k: int,
    *,
    renormalize: bool = False,
    use_fp8_w8a8: bool = False,
    per_channel_quant: bool = False,
    block_shape: list[int] | None = None,
    w1_scale: torch.Tensor | None = None,
    w2_scale: torch.Tensor | None = None,
    tile_configs: MoeTileConfigs | None = None,
    workspace: MoeDecodeWorkspace | None = None,
    out: torch.Tensor | None = None,
    path: str = "auto",
    config: DecodeConfig | None = None,
) -> torch.Tensor:
    """The whole MoE layer for M <= 64 tokens in two (``path="pairs"``) or three launches
    (``"grouped"``; see the module docstring): [M, H].

    ``router_logits`` [M, E] (fp32/bf16/fp16). The routing it chose is left in
    ``workspace.routing(M)``. ``path``: ``"auto"`` (:func:`choose_decode_path`),
    ``"pairs"`` or ``"grouped"``; ``tile_configs`` overrides the
    tile table for either. Weights and scales as in :func:`fused_moe`; activation scales are
    always dynamic. ``config``: the tables the plan reads (:class:`DecodeConfig`; None: the shipped ones).
    """
    plan = plan_fused_moe_decode(
        x, router_logits, w13, w2, top_k, renormalize=renormalize, use_fp8_w8a8=use_fp8_w8a8,
        per_channel_quant=per_channel_quant, block_shape=block_shape, w1_scale=w1_scale, w2_scale=w2_scale,
        tile_configs=tile_configs, workspace=workspace, out=out, path=path, config=config,
    )
    for _, launch in plan.launches:
        launch()
    return plan.out


def fused_moe_decode_reference(
    x: torch.Tensor,
    router_logits: torch.Tensor,
    w13: torch.Tensor,
    w2: torch.Tensor,
    top_k: int,
    *,
    renormalize: bool = False,
    **fp8_kwargs,
) -> torch.Tensor:
    """Plain torch, fp32: :func:`softmax_topk_reference` then :func:`fused_moe_reference` ([M, H] fp32).

    ``fp8_kwargs`` go to ``fused_moe_reference`` (``use_fp8_w8a8``, scales, ``quantize_activations``).
    """
    weights, ids = softmax_topk_reference(router_logits, top_k, renormalize)
    return fused_moe_reference(x, w13, w2, weights, ids, **fp8_kwargs)
