"""H200 probe (issue #16, sixteenth session): can an FP8 block-scaled decode GEMM stream its weights at the
unscaled rate if the block scales are folded into the activations instead of the accumulator?

The fifteenth session's ``probe_decode_stream_parts.py`` found the per-K-step block scaling
(``acc += dot(w, a) * w_s * a_s``) costs 2-17% of the bare FP8 weight stream (DeepSeek-V3-TP2 down at 8
slots 20.7-21.9 against 17.9 us unscaled). Offline sm_90 compiles (Triton 3.6) say why: a dot whose
product is scaled before it is added cannot be left in flight, so every K step waits for its wgmma
(``wgmma.wait_group 0``), where ``acc = dot(w, a, acc)`` keeps one in flight (``wait_group 1``).

Folding: a token's K steps share one scale ``S`` (the largest ``w_s[k] * amax_k`` of the token and the
weight rows' 128-row block), and each step's activations are quantized to e4m3 as ``x * w_s[k] / S``
in registers, so the MMA accumulates across steps unscaled and the epilogue multiplies by ``S``. With
swap-AB (tokens in the MMA's N slot) those activations would be the wgmma's shared-memory operand,
written each step: offline compiles wait for every step again. Without swap-AB the tokens are the
wgmma's M (64 rows, most of them padding at decode) and the activations its register operand: offline
compiles keep three of a step's four k32 wgmmas in flight. Variants, on the bare stream of
``probe_decode_stream_parts.py`` (16 tokens, S expert slots per call rotated so L2 holds none):

- ``scaled``: as the decode GEMMs run today (swap-AB, e4m3 activations quantized per 128-group
  before the call, both scales applied per step);
- ``unscaled``: the same with no scales (the ceiling: what the stream costs with the MMA in flight);
- ``folded, swap``: folding with swap-AB (activations through shared memory each step);
- ``folded``: folding without swap-AB, the activations the wgmma's register operand;
- ``folded, x ahead``: ``folded`` with each step's activations loaded a step ahead into registers
  instead of through the compiler's shared-memory pipeline (where the 48 padding rows take room);
- ``scaled, one w_s``: ``scaled`` with the tile's weight block scale loaded as one value a step (a
  tile of at most 128 rows, not gated, lies in one 128-row scale block) instead of one per row;
- ``folded, halves``: ``folded`` as a gated gate_up tile needs it: the tile's gate and up rows are two
  128-row scale blocks N / 2 apart, so two dots, each with its own folded activations.

The activations are bf16 values that e4m3 with per-group scales represents exactly, so ``scaled`` and
the folded variants see the same numbers; every output is compared with an fp32 reference.
Prediction (before the call): ``folded`` within 5% of ``unscaled`` and 5-15% faster than ``scaled``
on the down shapes; ``folded, swap`` no faster than ``scaled``.

Answered in ``benchmarks/results/moe_layer.md``, sixteenth session (2026-12-03), sections 1-3: folding
was 1.3-2x slower; one weight scale a tile and 8-warp tiles gained on this stream, not in the layer.

    PYTHONPATH=$PWD python3 benchmarks/probe_decode_folded_scales.py --out $OUT
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_fused_moe as bfm
from probe_decode_tma import SHAPES, TOKENS

REPLAYS = 50
ROUNDS = 2
VARIANTS = ("scaled", "unscaled", "folded, swap", "folded", "folded, halves", "folded, x ahead", "scaled, one w_s")
FP8_MAX = 448.0
MMA_ROWS = 64  # a warpgroup's wgmma M: the padded token rows of the unswapped variants
FP8_MAX_C = tl.constexpr(FP8_MAX)
MMA_ROWS_C = tl.constexpr(MMA_ROWS)


@triton.jit
def _folded_step(x, w_s, inv_s):
    """One K step's activations with the weight block scale folded in, as e4m3."""
    return (x.to(tl.float32) * (w_s * inv_s)).to(tl.float8e4nv)


@triton.jit
def _stream_kernel(w_ptr, w_scale_ptr, a_ptr, a_scale_ptr, x_ptr, x_amax_ptr, experts_ptr, out_ptr, N, K,
                   stride_we, stride_wn, stride_wse, stride_wsn, stride_am, stride_asm,
                   BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, TOKENS_C: tl.constexpr, MODE: tl.constexpr,
                   K_GROUPS_POW2: tl.constexpr, NUM_STAGES: tl.constexpr):
    # MODE 0 scaled, 1 unscaled, 2 folded swap, 3 folded, 4 folded halves, 5 folded with x loaded a step ahead,
    # 6 scaled with the tile's one weight block scale a scalar
    pid = tl.program_id(0)
    n_tiles = tl.cdiv(N, BLOCK_N)
    slot = pid // n_tiles
    pid_n = pid % n_tiles
    expert = tl.load(experts_ptr + slot).to(tl.int64)
    n_k = tl.cdiv(K, BLOCK_K)
    offs_k = tl.arange(0, BLOCK_K)
    groups = tl.arange(0, K_GROUPS_POW2)
    ws_base = w_scale_ptr + expert * stride_wse
    if MODE == 4:
        HALF: tl.constexpr = BLOCK_N // 2
        half_rows = pid_n * HALF + tl.arange(0, HALF)
        rows = tl.join(half_rows, N // 2 + half_rows).reshape(BLOCK_N)  # only for the store below
    else:
        rows = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    toks = tl.arange(0, TOKENS_C)
    if (MODE <= 1) | (MODE == 6):
        a_ptrs = a_ptr + toks[None, :] * stride_am + offs_k[:, None]
        as_rows = a_scale_ptr + toks * stride_asm
        ws_rows = ws_base + (rows // 128) * stride_wsn
        w_ptrs = w_ptr + expert * stride_we + rows[:, None].to(tl.int64) * stride_wn + offs_k[None, :]
        acc = tl.zeros((BLOCK_N, TOKENS_C), dtype=tl.float32)
        for kb in tl.range(0, n_k, num_stages=NUM_STAGES):
            b = tl.load(w_ptrs + kb * BLOCK_K)
            a = tl.load(a_ptrs + kb * BLOCK_K)
            if MODE == 0:
                acc += tl.dot(b, a) * tl.load(ws_rows + kb)[:, None] * tl.load(as_rows + kb)[None, :]
            elif MODE == 6:
                w_s = tl.load(ws_base + ((pid_n * BLOCK_N) // 128) * stride_wsn + kb)
                acc += tl.dot(b, a) * (w_s * tl.load(as_rows + kb))[None, :]
            else:
                acc = tl.dot(b, a, acc)
        tl.store(out_ptr + slot * N * TOKENS_C + rows[:, None] * TOKENS_C + toks[None, :], acc)
    elif MODE == 2:
        # Folded, swap-AB: [BLOCK_N, TOKENS] accumulator, activations [BLOCK_K, TOKENS] via shared memory.
        blk = (pid_n * BLOCK_N) // 128
        ws_row = ws_base + blk * stride_wsn
        s_w = tl.max(tl.load(ws_row + groups * 1, mask=groups < n_k, other=0.0), 0)
        inv_s = FP8_MAX_C / (tl.load(x_amax_ptr + toks) * s_w)
        x_ptrs = x_ptr + toks[None, :] * stride_am + offs_k[:, None]
        w_ptrs = w_ptr + expert * stride_we + rows[:, None].to(tl.int64) * stride_wn + offs_k[None, :]
        acc = tl.zeros((BLOCK_N, TOKENS_C), dtype=tl.float32)
        for kb in tl.range(0, n_k, num_stages=NUM_STAGES):
            b = tl.load(w_ptrs + kb * BLOCK_K)
            xq = _folded_step(tl.load(x_ptrs + kb * BLOCK_K), tl.load(ws_row + kb), inv_s[None, :])
            acc = tl.dot(b, xq, acc)
        acc = acc / inv_s[None, :]
        tl.store(out_ptr + slot * N * TOKENS_C + rows[:, None] * TOKENS_C + toks[None, :], acc)
    else:
        # Folded, tokens as the MMA's M (padded to MMA_ROWS), activations the register operand.
        m = tl.arange(0, MMA_ROWS_C)
        m_mask = m < TOKENS_C
        amax = tl.load(x_amax_ptr + m, mask=m_mask, other=1.0)
        x_ptrs = x_ptr + m[:, None] * stride_am + offs_k[None, :]
        if (MODE == 3) | (MODE == 5):
            blk = (pid_n * BLOCK_N) // 128
            ws_row = ws_base + blk * stride_wsn
            inv_s = FP8_MAX_C / (amax * tl.max(tl.load(ws_row + groups, mask=groups < n_k, other=0.0), 0))
            w_ptrs = w_ptr + expert * stride_we + rows[None, :].to(tl.int64) * stride_wn + offs_k[:, None]
            acc = tl.zeros((MMA_ROWS_C, BLOCK_N), dtype=tl.float32)
            if MODE == 5:
                x_next = tl.load(x_ptrs, mask=m_mask[:, None], other=0.0)
            for kb in tl.range(0, n_k, num_stages=NUM_STAGES):
                b = tl.load(w_ptrs + kb * BLOCK_K)  # [BLOCK_K, BLOCK_N], K-major
                if MODE == 5:
                    # Through registers, a step ahead: the padded rows take no shared memory.
                    x = x_next
                    x_next = tl.load(x_ptrs + (kb + 1) * BLOCK_K, mask=m_mask[:, None] & (kb + 1 < n_k), other=0.0)
                else:
                    x = tl.load(x_ptrs + kb * BLOCK_K, mask=m_mask[:, None], other=0.0)
                acc = tl.dot(_folded_step(x, tl.load(ws_row + kb), inv_s[:, None]), b, acc)
            acc = acc / inv_s[:, None]
        else:
            g_row = ws_base + ((pid_n * HALF) // 128) * stride_wsn
            u_row = ws_base + ((N // 2 + pid_n * HALF) // 128) * stride_wsn
            inv_g = FP8_MAX_C / (amax * tl.max(tl.load(g_row + groups, mask=groups < n_k, other=0.0), 0))
            inv_u = FP8_MAX_C / (amax * tl.max(tl.load(u_row + groups, mask=groups < n_k, other=0.0), 0))
            wg_ptrs = w_ptr + expert * stride_we + half_rows[None, :].to(tl.int64) * stride_wn + offs_k[:, None]
            wu_ptrs = wg_ptrs + (N // 2) * stride_wn
            acc_g = tl.zeros((MMA_ROWS_C, HALF), dtype=tl.float32)
            acc_u = tl.zeros((MMA_ROWS_C, HALF), dtype=tl.float32)
            for kb in tl.range(0, n_k, num_stages=NUM_STAGES):
                b_g = tl.load(wg_ptrs + kb * BLOCK_K)
                b_u = tl.load(wu_ptrs + kb * BLOCK_K)
                x = tl.load(x_ptrs + kb * BLOCK_K, mask=m_mask[:, None], other=0.0)
                acc_g = tl.dot(_folded_step(x, tl.load(g_row + kb), inv_g[:, None]), b_g, acc_g)
                acc_u = tl.dot(_folded_step(x, tl.load(u_row + kb), inv_u[:, None]), b_u, acc_u)
            acc = tl.join(acc_g / inv_g[:, None], acc_u / inv_u[:, None]).reshape(MMA_ROWS_C, BLOCK_N)
        o_ptrs = out_ptr + slot * N * TOKENS_C + rows[None, :] * TOKENS_C + m[:, None]
        tl.store(o_ptrs, acc, mask=m_mask[:, None])


def make_inputs(E: int, N: int, K: int):
    """e4m3 weights with block scales; activations as bf16 values that per-group e4m3 holds exactly."""
    g = torch.Generator(device="cuda").manual_seed(N + K)
    w = (torch.randn(E, N, K, device="cuda", generator=g) * 0.1).to(torch.float8_e4m3fn)
    w_scale = torch.rand(E, triton.cdiv(N, 128), triton.cdiv(K, 128), device="cuda", generator=g) + 0.5
    a = (torch.randn(TOKENS, K, device="cuda", generator=g)).to(torch.float8_e4m3fn)
    a_scale = (torch.rand(TOKENS, triton.cdiv(K, 128), device="cuda", generator=g) + 0.5).to(torch.bfloat16).float()
    x = (a.float().view(TOKENS, -1, 128) * a_scale[:, :, None]).view(TOKENS, K).to(torch.bfloat16)
    x_amax = x.float().abs().amax(1)
    return w, w_scale, a, a_scale, x, x_amax


def reference(w, w_scale, x, experts) -> torch.Tensor:
    """fp32 [S, N, TOKENS]: each slot's expert's dequantized weights times the activations."""
    outs = []
    for e in experts.tolist():
        wd = w[e].float().view(w.shape[1] // 128, 128, -1, 128) * w_scale[e][:, None, :, None]
        outs.append(wd.view(w.shape[1], -1) @ x.float().t())
    return torch.stack(outs)


def run(variant: str, w, w_scale, a, a_scale, x, x_amax, experts, out, bn: int, bk: int, stages: int, warps: int = 4):
    N, K = w.shape[1:]
    mode = VARIANTS.index(variant)
    grid = (experts.numel() * triton.cdiv(N // 2 if mode == 4 else N, bn // 2 if mode == 4 else bn),)
    _stream_kernel[grid](w, w_scale, a, a_scale, x, x_amax, experts, out, N, K, w.stride(0), w.stride(1),
                         w_scale.stride(0), w_scale.stride(1), a.stride(0), a_scale.stride(0), BLOCK_N=bn,
                         BLOCK_K=bk, TOKENS_C=TOKENS, MODE=mode, K_GROUPS_POW2=triton.next_power_of_2(K // 128),
                         NUM_STAGES=stages, num_warps=warps)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", default=",".join(SHAPES))
    p.add_argument("--slots", default="8,16")
    p.add_argument("--tiles", default="64x128x4,128x128x4",
                   help="BLOCK_N x BLOCK_K x stages, optionally x warps (4 if not given)")
    p.add_argument("--variants", default=";".join(VARIANTS), help="names separated by ';' (the first is the baseline)")
    p.add_argument("--out", default=".")
    args = p.parse_args()
    chosen = tuple(args.variants.split(";"))
    unknown = [v for v in chosen if v not in VARIANTS]
    if unknown:
        p.error(f"unknown variants {unknown}; known: {'; '.join(VARIANTS)}")
    base = chosen[0]
    log = bfm.jsonl_log(args.out, "probe_decode_folded_scales.jsonl")
    l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 60 << 20)
    lines = [f"us per call, round 1 / round 2 (weight TB/s of the mean); x {base}: each variant's mean over "
             f"{base}'s; err: against the fp32 reference (norm of the difference / norm)",
             "| shape | slots | tile | MB | " + " | ".join(chosen) + " | "
             + " | ".join(f"{v} x {base}" for v in chosen[1:]) + " | err " + " / ".join(chosen) + " |",
             "|---|---|---|---|" + "---|" * (2 * len(chosen))]
    print("\n".join(lines), flush=True)
    for shape in args.shapes.split(","):
        E, N, K = SHAPES[shape]
        w, w_scale, a, a_scale, x, x_amax = make_inputs(E, N, K)
        for S in (int(s) for s in args.slots.split(",")):
            nbytes = S * N * K
            calls = max(2, -(-4 * l2 // nbytes))
            sets = [torch.tensor([(i * S + j) % E for j in range(S)], device="cuda", dtype=torch.int32)
                    for i in range(calls)]
            ref = reference(w, w_scale, x, sets[0])
            out = {v: torch.empty(S, N, TOKENS, device="cuda", dtype=torch.float32) for v in chosen}
            for tile in args.tiles.split(","):
                bn, bk, st, wp = ([int(v) for v in tile.split("x")] + [4])[:4]
                for v in chosen:
                    out[v].fill_(float("nan"))
                    run(v, w, w_scale, a, a_scale, x, x_amax, sets[0], out[v], bn, bk, st, wp)
                torch.cuda.synchronize()
                errs = {v: ((out[v] - ref).norm() / ref.norm()).item() for v in chosen if v != "unscaled"}
                rounds: dict[str, list[float]] = {v: [] for v in chosen}
                for r in range(ROUNDS):
                    for v in (chosen if r % 2 == 0 else tuple(reversed(chosen))):
                        def step(i, v=v, bn=bn, bk=bk, st=st, wp=wp):
                            run(v, w, w_scale, a, a_scale, x, x_amax, sets[i], out[v], bn, bk, st, wp)
                        rounds[v].append(bfm.time_graph(step, calls, REPLAYS))
                mean = {v: statistics.mean(us) for v, us in rounds.items()}
                cells = [f"{' / '.join(f'{u:.1f}' for u in rounds[v])} ({nbytes / mean[v] / 1e6:.2f})"
                         for v in chosen]
                line = (f"| {shape} | {S} | {tile} | {nbytes / 1e6:.1f} | " + " | ".join(cells) + " | "
                        + " | ".join(f"{mean[v] / mean[base]:.3f}" for v in chosen[1:]) + " | "
                        + " / ".join(f"{errs[v]:.1e}" if v in errs else "-" for v in chosen) + " |")
                log({"shape": shape, "slots": S, "tile": tile, "bytes": nbytes, "us": rounds, "err": errs})
                print(line, flush=True)
                lines.append(line)
    (Path(args.out) / "probe_decode_folded_scales.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
