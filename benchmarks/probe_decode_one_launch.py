"""H200 probe (issue #16): one token's FP8 MoE GEMMs in one launch, down's weights read while gate_up runs.

The bare streams of the two decode GEMMs at one token (``probe_decode_tma.py``) already take more than
the issue's 1.3x-of-floor goal allows at Qwen3-30B-FP8 M = 1: each launch pays its start, its first loads'
latency and its last wave. This probe asks how much one launch saves when its down programs load their
weight rows into registers first, then wait (an acquire spin on a counter gate_up's programs release) for
the intermediate, so down's stream overlaps gate_up's. Routing is given and x comes quantized (e4m3 with
per-128 scales), as in the TMA probe: the GEMM chain alone.

- gate_up programs (the first ``G1``): the decode GEMM's swap-AB tile (e4m3 weights in the MMA's M slot, a
  16-token tile of which one row is real), FP8 block scales per K step, ``silu(gate) * up`` of the token's
  row stored as bf16, then a release increment of the counter.
- down programs (the next ``G2``): ``ROWS`` output rows each for all ``TOP_K`` experts of the token
  (``[TOP_K, ROWS, I]`` e4m3 in registers), their block scales and routing weights; after the wait the bf16
  intermediate (L2), a multiply-add on the CUDA cores, the top-k sum in registers, the output row stored
  (no atomics, no reduce launch). The last down program resets the counters for the next launch.

Variants, alternating in two rounds (CUDA graphs over rotated expert sets, L2 defeated): ``two`` (the same
gate_up and down code as two stream-ordered launches, no counters), ``one`` (one launch, down's weights
loaded before the wait), ``one_late`` (one launch, loaded after it: what the overlap, not the launch,
saves), and each half alone. Outputs: ``two`` against ``one`` bit for bit, and against an fp32 torch
reference. Numerics differ from the shipped path: the intermediate stays bf16 (no e4m3 quantization).

    PYTHONPATH=$PWD python3 benchmarks/probe_decode_one_launch.py --out $OUT
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

from jitguard.kernels.moe_gemm import moe_silu_mul, moe_weight_rows

REPLAYS = 50
ROUNDS = 2
TOKENS = 16
TOP_K = 8
# (name, experts, hidden H, intermediate I)
SHAPES = {"qwen3-30b-fp8-block": (128, 2048, 768), "deepseek-v3-tp2-fp8-block": (256, 7168, 1024)}
GATE_UP, DOWN, BOTH, BOTH_LATE, PERSISTENT = 1, 2, 0, 3, 4


@triton.jit
def _gate_up_part(pid, xq_ptr, xs_ptr, w13_ptr, w13s_ptr, experts_ptr, h_ptr, counters_ptr, H, I,
                  stride_w13e, stride_w13n, stride_w13se, stride_w13sn,
                  BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, STAGES: tl.constexpr, TOKENS_C: tl.constexpr,
                  SIGNAL: tl.constexpr):
    half: tl.constexpr = BLOCK_N // 2
    n_tiles = tl.cdiv(I, half)
    slot = pid // n_tiles
    tile = pid % n_tiles
    expert = tl.load(experts_ptr + slot).to(tl.int64)
    b_rows = moe_weight_rows(tile, I, BLOCK_N, True)
    toks = tl.arange(0, TOKENS_C)
    offs_k = tl.arange(0, BLOCK_K)
    w_ptrs = w13_ptr + expert * stride_w13e + b_rows[:, None].to(tl.int64) * stride_w13n + offs_k[None, :]
    ws_rows = w13s_ptr + expert * stride_w13se + (b_rows // 128) * stride_w13sn
    a_ptrs = xq_ptr + toks[None, :] * H + offs_k[:, None]
    as_rows = xs_ptr + toks * tl.cdiv(H, 128)
    real = toks < 1
    acc = tl.zeros((BLOCK_N, TOKENS_C), dtype=tl.float32)
    for kb in tl.range(0, tl.cdiv(H, BLOCK_K), num_stages=STAGES):
        b = tl.load(w_ptrs + kb * BLOCK_K)
        a = tl.load(a_ptrs + kb * BLOCK_K, mask=real[None, :], other=0.0)
        b_s = tl.load(ws_rows + kb)
        a_s = tl.load(as_rows + kb, mask=real, other=0.0)
        acc += tl.dot(b, a) * b_s[:, None] * a_s[None, :]
    gated = moe_silu_mul(tl.trans(acc), TOKENS_C, half)
    cols = tile * half + tl.arange(0, half)
    tl.store(h_ptr + slot * I + cols[None, :] + toks[:, None] * 0, gated.to(tl.bfloat16),
             mask=real[:, None] & (cols < I)[None, :])
    if SIGNAL:
        tl.debug_barrier()
        tl.atomic_add(counters_ptr, 1, sem="release", scope="gpu")


@triton.jit
def _down_loads(q, w2_ptr, w2s_ptr, experts_ptr, rw_ptr, H, I, stride_w2e, stride_w2n, stride_w2se, stride_w2sn,
                TOP_K_C: tl.constexpr, ROWS: tl.constexpr, I_POW2: tl.constexpr):
    """Down row-group ``q``'s weights ([TOP_K, ROWS, I_POW2] e4m3), block scales and routing weights."""
    rows = q * ROWS + tl.arange(0, ROWS)
    slots = tl.arange(0, TOP_K_C)
    kk = tl.arange(0, I_POW2)
    k_ok = kk < I
    experts = tl.load(experts_ptr + slots).to(tl.int64)
    # Weight loads 8 bytes wide (contiguity broken at 8 for the compiler), the bf16 intermediate's
    # 8 values a thread: both in one layout, so no layout conversion (through shared memory) of the
    # e4m3 weights after the wait.
    kk8 = (kk // 8) * 8 + kk % 8
    w_ptrs = (w2_ptr + experts[:, None, None] * stride_w2e + rows[None, :, None].to(tl.int64) * stride_w2n
              + kk8[None, None, :])
    w = tl.load(w_ptrs, mask=k_ok[None, None, :] & (rows < H)[None, :, None], other=0.0)
    # One scale per (expert, 128-deep group): ROWS output rows lie in one 128-row block.
    GROUPS: tl.constexpr = I_POW2 // 128
    groups = tl.arange(0, GROUPS)
    scales = tl.load(w2s_ptr + experts[:, None, None] * stride_w2se + ((q * ROWS) // 128) * stride_w2sn
                     + groups[None, None, :], mask=(groups * 128 < I)[None, None, :], other=0.0)
    route_w = tl.load(rw_ptr + slots[:, None, None])
    return w, scales, route_w


@triton.jit
def _down_finish(q, w, scales, route_w, h_ptr, out_ptr, H, I, TOP_K_C: tl.constexpr, ROWS: tl.constexpr,
                 I_POW2: tl.constexpr):
    """Row-group ``q`` of the output from its loads and the intermediate (read through L2)."""
    rows = q * ROWS + tl.arange(0, ROWS)
    slots = tl.arange(0, TOP_K_C)
    kk = tl.arange(0, I_POW2)
    # The intermediate is loaded as [TOP_K, 1, I_POW2] (the weights' layout); the block scales apply
    # to each 128-deep group's sum.
    inter = tl.load(h_ptr + slots[:, None, None] * I + kk[None, None, :], mask=(kk < I)[None, None, :], other=0.0,
                    cache_modifier=".cg")
    prod = w.to(tl.float32) * (inter.to(tl.float32) * route_w)
    by_group = tl.sum(tl.reshape(prod, (TOP_K_C, ROWS, I_POW2 // 128, 128)), axis=3)
    part = tl.sum(by_group * scales, axis=2)
    total = tl.sum(part, axis=0)
    tl.store(out_ptr + rows, total.to(tl.bfloat16), mask=rows < H)


@triton.jit
def _wait_for(counters_ptr, G1):
    """Until gate_up's G1 programs have released: volatile polls (one L2 line), then one acquire."""
    done = tl.load(counters_ptr, volatile=True)
    while done < G1:
        done = tl.load(counters_ptr, volatile=True)
    tl.atomic_add(counters_ptr, 0, sem="acquire", scope="gpu")


@triton.jit
def _arrive_and_reset(counters_ptr, programs):
    """The last of ``programs`` to arrive resets both counters for the next launch."""
    tl.debug_barrier()
    arrived = tl.atomic_add(counters_ptr + 1, 1, sem="acq_rel", scope="gpu")
    if arrived == programs - 1:
        tl.store(counters_ptr, 0)
        tl.store(counters_ptr + 1, 0)


@triton.jit
def _down_part(q, w2_ptr, w2s_ptr, experts_ptr, rw_ptr, h_ptr, out_ptr, counters_ptr, H, I, G1, G2,
               stride_w2e, stride_w2n, stride_w2se, stride_w2sn,
               TOP_K_C: tl.constexpr, ROWS: tl.constexpr, I_POW2: tl.constexpr, WAIT: tl.constexpr,
               LOAD_FIRST: tl.constexpr):
    if LOAD_FIRST:
        w, scales, route_w = _down_loads(q, w2_ptr, w2s_ptr, experts_ptr, rw_ptr, H, I, stride_w2e, stride_w2n,
                                         stride_w2se, stride_w2sn, TOP_K_C, ROWS, I_POW2)
    if WAIT:
        _wait_for(counters_ptr, G1)
    if not LOAD_FIRST:
        w, scales, route_w = _down_loads(q, w2_ptr, w2s_ptr, experts_ptr, rw_ptr, H, I, stride_w2e, stride_w2n,
                                         stride_w2se, stride_w2sn, TOP_K_C, ROWS, I_POW2)
    _down_finish(q, w, scales, route_w, h_ptr, out_ptr, H, I, TOP_K_C, ROWS, I_POW2)
    if WAIT:
        _arrive_and_reset(counters_ptr, G2)


@triton.jit
def _one_token_moe_kernel(xq_ptr, xs_ptr, w13_ptr, w13s_ptr, w2_ptr, w2s_ptr, experts_ptr, rw_ptr, h_ptr, out_ptr,
                          counters_ptr, H, I, G1, G2,
                          stride_w13e, stride_w13n, stride_w13se, stride_w13sn,
                          stride_w2e, stride_w2n, stride_w2se, stride_w2sn,
                          TOP_K_C: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                          STAGES: tl.constexpr, TOKENS_C: tl.constexpr, ROWS: tl.constexpr,
                          I_POW2: tl.constexpr, MODE: tl.constexpr):
    pid = tl.program_id(0)
    one_launch: tl.constexpr = MODE == 0 or MODE == 3
    # The two-launch modes compile one part each (so down's launch reserves no gate_up shared memory);
    # in one launch the programs below G1 are gate_up's.
    if MODE == 1:
        _gate_up_part(pid, xq_ptr, xs_ptr, w13_ptr, w13s_ptr, experts_ptr, h_ptr, counters_ptr, H, I,
                      stride_w13e, stride_w13n, stride_w13se, stride_w13sn, BLOCK_N, BLOCK_K, STAGES, TOKENS_C,
                      False)
    elif MODE == 2:
        _down_part(pid, w2_ptr, w2s_ptr, experts_ptr, rw_ptr, h_ptr, out_ptr, counters_ptr, H, I, G1, G2,
                   stride_w2e, stride_w2n, stride_w2se, stride_w2sn, TOP_K_C, ROWS, I_POW2, False, True)
    elif MODE == 4:
        # Persistent: each of the G1 programs runs its gate_up tile, loads its first down row-group,
        # waits for every gate_up tile, then takes down row-groups pid, pid + G1, ... (needs G1 <= G2).
        _gate_up_part(pid, xq_ptr, xs_ptr, w13_ptr, w13s_ptr, experts_ptr, h_ptr, counters_ptr, H, I,
                      stride_w13e, stride_w13n, stride_w13se, stride_w13sn, BLOCK_N, BLOCK_K, STAGES, TOKENS_C,
                      True)
        w, scales, route_w = _down_loads(pid, w2_ptr, w2s_ptr, experts_ptr, rw_ptr, H, I, stride_w2e, stride_w2n,
                                         stride_w2se, stride_w2sn, TOP_K_C, ROWS, I_POW2)
        _wait_for(counters_ptr, G1)
        _down_finish(pid, w, scales, route_w, h_ptr, out_ptr, H, I, TOP_K_C, ROWS, I_POW2)
        for q in range(pid + G1, G2, G1):
            w, scales, route_w = _down_loads(q, w2_ptr, w2s_ptr, experts_ptr, rw_ptr, H, I, stride_w2e, stride_w2n,
                                             stride_w2se, stride_w2sn, TOP_K_C, ROWS, I_POW2)
            _down_finish(q, w, scales, route_w, h_ptr, out_ptr, H, I, TOP_K_C, ROWS, I_POW2)
        _arrive_and_reset(counters_ptr, G1)
    elif pid < G1:
        _gate_up_part(pid, xq_ptr, xs_ptr, w13_ptr, w13s_ptr, experts_ptr, h_ptr, counters_ptr, H, I,
                      stride_w13e, stride_w13n, stride_w13se, stride_w13sn, BLOCK_N, BLOCK_K, STAGES, TOKENS_C,
                      one_launch)
    else:
        _down_part(pid - G1, w2_ptr, w2s_ptr, experts_ptr, rw_ptr, h_ptr, out_ptr, counters_ptr, H, I, G1, G2,
                   stride_w2e, stride_w2n, stride_w2se, stride_w2sn, TOP_K_C, ROWS, I_POW2, one_launch, MODE != 3)


def make_inputs(E: int, H: int, I: int):
    g = torch.Generator(device="cuda").manual_seed(H + I)

    def fp8(*shape):
        return (torch.randn(*shape, device="cuda", generator=g) * 0.1).to(torch.float8_e4m3fn)

    w13, w2 = fp8(E, 2 * I, H), fp8(E, H, I)
    w13s = torch.rand(E, 2 * I // 128, H // 128, device="cuda", generator=g) + 0.5
    w2s = torch.rand(E, H // 128, I // 128, device="cuda", generator=g) + 0.5
    xq = torch.zeros(TOKENS, H, device="cuda", dtype=torch.float8_e4m3fn)
    xq[0] = (torch.randn(H, device="cuda", generator=g)).to(torch.float8_e4m3fn)
    xs = torch.zeros(TOKENS, H // 128, device="cuda")
    xs[0] = torch.rand(H // 128, device="cuda", generator=g) + 0.5
    rw = torch.rand(TOP_K, device="cuda", generator=g)
    return w13, w13s, w2, w2s, xq, xs, rw / rw.sum()


def reference(w13, w13s, w2, w2s, xq, xs, rw, experts) -> torch.Tensor:
    """fp32 torch: dequantized weights and x, silu(gate) * up rounded to bf16 (as the kernel stores it)."""
    x = xq[0].float() * xs[0].repeat_interleave(128)
    out = torch.zeros(w2.shape[1], device="cuda")
    I = w2.shape[2]
    for s, e in enumerate(experts.tolist()):
        w1 = w13[e].float() * w13s[e].repeat_interleave(128, 0).repeat_interleave(128, 1)
        gu = w1 @ x
        h = (torch.nn.functional.silu(gu[:I]) * gu[I:]).to(torch.bfloat16).float()
        wd = w2[e].float() * w2s[e].repeat_interleave(128, 0).repeat_interleave(128, 1)
        out += rw[s] * (wd @ h)
    return out


def launch(mode: int, inputs, experts, h, out, counters, block_n: int, block_k: int, stages: int, rows: int,
           warps: int) -> None:
    w13, w13s, w2, w2s, xq, xs, rw = inputs
    _, H, I = w2.shape
    g1 = TOP_K * triton.cdiv(I, block_n // 2)
    g2 = triton.cdiv(H, rows)
    assert g1 <= g2, "the persistent variant takes a down row-group per gate_up program first"
    grid = {GATE_UP: g1, DOWN: g2, BOTH: g1 + g2, BOTH_LATE: g1 + g2, PERSISTENT: g1}[mode]
    _one_token_moe_kernel[(grid,)](
        xq, xs, w13, w13s, w2, w2s, experts, rw, h, out, counters, H, I, g1, g2,
        w13.stride(0), w13.stride(1), w13s.stride(0), w13s.stride(1),
        w2.stride(0), w2.stride(1), w2s.stride(0), w2s.stride(1),
        TOP_K_C=TOP_K, BLOCK_N=block_n, BLOCK_K=block_k, STAGES=stages, TOKENS_C=TOKENS, ROWS=rows,
        I_POW2=triton.next_power_of_2(I), MODE=mode, num_warps=warps)


VARIANTS = {"two": (GATE_UP, DOWN), "one": (BOTH,), "one_late": (BOTH_LATE,), "persistent": (PERSISTENT,),
            "gate_up": (GATE_UP,), "down": (DOWN,)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", default=",".join(SHAPES))
    p.add_argument("--configs", default="64x128x4x4x4,64x128x4x2x4,64x128x4x8x8,32x128x6x4x4,32x128x6x2x4",
                   help="gate_up BLOCK_N x BLOCK_K x stages, down rows, warps; comma-separated")
    p.add_argument("--out", default=".")
    args = p.parse_args()
    log = bfm.jsonl_log(args.out, "probe_decode_one_launch.jsonl")
    l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 60 << 20)
    names = list(VARIANTS)
    lines = ["us per layer call, round 1 / round 2; config: gate_up BLOCK_N x BLOCK_K x stages, down rows, warps; "
             "'same': one launch's output equal to two launches' bit for bit; err: max relative to the fp32 reference",
             "| shape | config | " + " | ".join(names) + " | one / two | persistent / two | same | err |",
             "|---|---|" + "---|" * (len(names) + 4)]
    print("\n".join(lines), flush=True)
    for shape in args.shapes.split(","):
        E, H, I = SHAPES[shape]
        inputs = make_inputs(E, H, I)
        nbytes = TOP_K * 3 * H * I
        calls = max(2, -(-4 * l2 // nbytes))
        sets = [torch.tensor([(i * TOP_K + j) % E for j in range(TOP_K)], device="cuda", dtype=torch.int32)
                for i in range(calls)]
        h = torch.empty(TOP_K, I, device="cuda", dtype=torch.bfloat16)
        outs = {v: torch.empty(H, device="cuda", dtype=torch.bfloat16) for v in names}
        counters = torch.zeros(2, device="cuda", dtype=torch.int32)
        ref = reference(*inputs, sets[0])
        for config in args.configs.split(","):
            bn, bk, st, rows, warps = (int(x) for x in config.split("x"))

            def run(name: str, i: int) -> None:
                for mode in VARIANTS[name]:
                    launch(mode, inputs, sets[i], h, outs[name], counters, bn, bk, st, rows, warps)

            for name in ("two", "one", "one_late", "persistent"):
                run(name, 0)
            torch.cuda.synchronize()
            same = all(torch.equal(outs["two"], outs[v]) for v in ("one", "one_late", "persistent"))
            err = max(((outs[v].float() - ref).abs().max() / ref.abs().max()).item() for v in ("two", "persistent"))
            rounds: dict[str, list[float]] = {v: [] for v in names}
            for _ in range(ROUNDS):
                for name in names:
                    rounds[name].append(bfm.time_graph(lambda i, name=name: run(name, i), calls, REPLAYS))
            mean = {v: statistics.mean(u) for v, u in rounds.items()}
            line = (f"| {shape} | {config} | " + " | ".join(" / ".join(f"{u:.1f}" for u in rounds[v]) for v in names)
                    + f" | {mean['one'] / mean['two']:.3f} | {mean['persistent'] / mean['two']:.3f} | "
                    f"{'yes' if same else 'NO'} | {err:.1e} |")
            log({"shape": shape, "config": config, "us": rounds, "same": same, "err": err, "bytes": nbytes})
            print(line, flush=True)
            lines.append(line)
    (Path(args.out) / "probe_decode_one_launch.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
