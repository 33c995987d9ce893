"""Probe (issue #16, inverse RoPE at T = 4096): is the kernel's ~3.5 us a launch beyond a copy the cost of
starting 4224 one-warp programs? Streaming kernels that move the inverse-RoPE kernel's row bytes (bf16 rows in,
fp8 rows out, no rope, no scales) with one-warp programs 32 an SM (the shipped shape) and with multi-warp
programs (fewer to start, as many warps an SM), an empty grid of each shape, and torch's copy of the same bytes,
side by side in CUDA graphs over input sets that defeat L2, two rounds.

Then the inverse-RoPE kernel itself with a warp a row (``rows_per_warp_kernel``: vLLM's layout only, DeepSeek-V4's
16 heads of 512, GPT-J rope on dims 448-511, 128-column groups, power-of-two fp32 scales MN-major, four output
groups): its row tile is [2, ROWS, 256] (the row's two halves outermost), so Triton's layouts put the warps on
rows and every reduction stays in a warp, where the shipped kernel's [ROWS, 512] tile spreads a row over the warps
(two-warp two-row tiles were 33-43% slower, ninth session). One warp (its control) and 2, 4, 8 warps a program
beside the shipped kernel, whose outputs each must equal bit for bit.

    python3 benchmarks/probe_inv_rope_ctas.py --out DIR
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_inv_rope_fp8 import graph_time_us, import_kernels, l2_defeat_sets, upstream_layout_inputs

HEADS, HEAD_DIM = 16, 512
TOKENS = (1024, 4096, 8192, 16384)


@triton.jit(do_not_specialize=["n_rows"])
def stream_rows_kernel(x_ptr, y_ptr, n_rows, ROWS: tl.constexpr, WIDTH: tl.constexpr, PREFETCH: tl.constexpr):
    """Each tile ROWS rows of WIDTH bf16 in, the same as e4m3 out; programs stride over tiles."""
    pid = tl.program_id(0)
    n_programs = tl.num_programs(0)
    n_tiles = tl.cdiv(n_rows, ROWS)
    cols = tl.arange(0, WIDTH)
    rows0 = tl.arange(0, ROWS).to(tl.int64)
    if PREFETCH:
        rows = rows0 + pid * ROWS
        nxt = tl.load(x_ptr + rows[:, None] * WIDTH + cols[None, :], mask=(rows < n_rows)[:, None], other=0.0)
    for tile in range(pid, n_tiles, n_programs):
        rows = rows0 + tile * ROWS
        ok = (rows < n_rows)[:, None]
        if PREFETCH:
            x = nxt
            nrows = rows0 + (tile + n_programs) * ROWS
            nxt = tl.load(x_ptr + nrows[:, None] * WIDTH + cols[None, :], mask=(nrows < n_rows)[:, None], other=0.0)
        else:
            x = tl.load(x_ptr + rows[:, None] * WIDTH + cols[None, :], mask=ok, other=0.0)
        y = (x.to(tl.float32) * 0.5).to(y_ptr.dtype.element_ty)
        tl.store(y_ptr + rows[:, None] * WIDTH + cols[None, :], y, mask=ok, cache_modifier=".cs")


@triton.jit
def empty_kernel(p):
    pass


@triton.jit
def _load_rows(o_ptr, positions_ptr, tile, n_rows, o_stride_token, o_stride_head, ROWS: tl.constexpr):
    """One tile's raw loads: x as [2, ROWS, 256] without its rope columns, the rope pairs, positions."""
    rows = tl.arange(0, ROWS).to(tl.int64) + tile * ROWS
    ok = rows < n_rows
    token = rows // 16
    row_ptr = o_ptr + token * o_stride_token + (rows % 16) * o_stride_head
    col = tl.arange(0, 2)[:, None, None] * 256 + tl.arange(0, 256)[None, None, :]
    x = tl.load(row_ptr[None, :, None] + col, mask=ok[None, :, None] & (col < 448), other=0.0)
    # The rope pairs as one [ROWS, 32, 2] tile (4 bytes a pair), so their layout keeps a warp a row.
    pair_cols = 448 + 2 * tl.arange(0, 32)[None, :, None] + tl.arange(0, 2)[None, None, :]
    pairs = tl.load(row_ptr[:, None, None] + pair_cols, mask=ok[:, None, None], other=0.0)
    pos = tl.load(positions_ptr + token, mask=ok, other=0).to(tl.int64)
    return x, pairs, pos


@triton.jit(do_not_specialize=["num_tokens"], do_not_specialize_on_alignment=["positions_ptr"])
def rows_per_warp_kernel(
    o_ptr,
    positions_ptr,
    cos_sin_ptr,
    out_ptr,
    scale_ptr,
    num_tokens,
    o_stride_token,
    o_stride_head,
    cache_stride_pos,
    ROWS: tl.constexpr,
):
    """inv_rope_fp8_kernel's maths for vLLM's layout (see the module docstring), a warp a row."""
    pid = tl.program_id(0)
    num_programs = tl.num_programs(0)
    n_tokens = tl.cast(num_tokens, tl.int64)
    n_rows = n_tokens * 16
    n_tiles = (n_rows + ROWS - 1) // ROWS
    padded_tokens = (n_tokens + 3) // 4 * 4
    group_stride = n_tokens * 2048
    if pid == 0:
        pad_cols = tl.arange(0, 64)
        for pad_t in range(n_tokens, padded_tokens):
            tl.store(scale_ptr + pad_cols.to(tl.int64) * padded_tokens + pad_t, tl.zeros((64,), dtype=tl.float32))
    half = tl.arange(0, 2)[:, None, None]
    group = tl.arange(0, 2)[None, None, :]
    col = half * 256 + tl.arange(0, 256)[None, None, :]
    keep = col < 448
    pair = tl.arange(0, 32)[None, :]
    pair_cols = 448 + 2 * pair[:, :, None] + tl.arange(0, 2)[None, None, :]
    last_chunk = (half == 1) & (group == 1)
    x_next, pairs_next, pos_next = _load_rows(o_ptr, positions_ptr, pid, n_rows, o_stride_token, o_stride_head, ROWS)
    for tile in range(pid, n_tiles, num_programs):
        rows = tl.arange(0, ROWS).to(tl.int64) + tile * ROWS
        ok = rows < n_rows
        token = rows // 16
        head = rows % 16
        x_raw, pairs_raw, pos = x_next, pairs_next, pos_next
        x_next, pairs_next, pos_next = _load_rows(
            o_ptr, positions_ptr, tile + num_programs, n_rows, o_stride_token, o_stride_head, ROWS
        )
        x = x_raw.to(tl.float32)
        a, b = tl.split(pairs_raw.to(tl.float32))
        cache_row = cos_sin_ptr + pos[:, None] * cache_stride_pos
        cos = tl.load(cache_row + pair, mask=ok[:, None], other=1.0)
        sin = tl.load(cache_row + 32 + pair, mask=ok[:, None], other=0.0)
        new_a = a * cos + b * sin
        new_b = b * cos - a * sin
        amax = tl.max(tl.reshape(tl.abs(x), (2, ROWS, 2, 128)), axis=3)
        rope_amax = tl.maximum(tl.max(tl.abs(new_a), axis=1), tl.max(tl.abs(new_b), axis=1))
        amax = tl.where(last_chunk, tl.maximum(amax, rope_amax[None, :, None]), amax)
        scale = tl.maximum(amax, 1e-10) * (1.0 / 448.0)
        bits = scale.to(tl.int32, bitcast=True)
        exponent = ((bits >> 23) & 0xFF) + ((bits & 0x7FFFFF) != 0).to(tl.int32)
        scale = (exponent << 23).to(tl.float32, bitcast=True)
        inverse = ((254 - tl.minimum(exponent, 254)) << 23).to(tl.float32, bitcast=True)
        inverse_cols = tl.reshape(tl.broadcast_to(inverse[:, :, :, None], (2, ROWS, 2, 128)), (2, ROWS, 256))
        out_row = out_ptr + (head // 4) * group_stride + token * 2048 + (head % 4) * 512
        tl.store(
            out_row[None, :, None] + col,
            (x * inverse_cols).to(out_ptr.dtype.element_ty),
            mask=ok[None, :, None] & keep,
            cache_modifier=".cs",
        )
        inverse_rope = tl.sum(tl.sum(tl.where(last_chunk, inverse, 0.0), axis=2), axis=0)[:, None]
        q_pairs = tl.join(new_a * inverse_rope, new_b * inverse_rope).to(out_ptr.dtype.element_ty)
        tl.store(out_row[:, None, None] + pair_cols, q_pairs, mask=ok[:, None, None], cache_modifier=".cs")
        chunk = half * 2 + group
        tl.store(
            scale_ptr + (head[None, :, None] * 4 + chunk) * padded_tokens + token[None, :, None],
            scale,
            mask=ok[None, :, None],
        )


# (label, rows a tile, warps, programs an SM)
SHAPES = [
    ("1w_32sm", 1, 1, 32),
    ("2w_16sm", 2, 2, 16),
    ("4w_8sm", 4, 4, 8),
    ("4w_16sm", 4, 4, 16),
    ("8w_8sm", 8, 8, 8),
]


def time_rounds(calls: dict, sets: int, inner: int) -> dict[str, list[float]]:
    """Each call timed in two rounds (us a call), the rounds one after the other in the same order."""
    us: dict[str, list[float]] = {}
    for _ in range(2):
        for name, make in calls.items():
            us.setdefault(name, []).append(graph_time_us(make, sets, inner))
    return us


def measure(tokens: int, sms: int) -> dict:
    """One T: every call's two rounds (us) and the stream kernels' output checks."""
    n_rows = tokens * HEADS
    nbytes = n_rows * HEAD_DIM * 3
    sets = l2_defeat_sets(nbytes)
    xs = [torch.randn(n_rows, HEAD_DIM, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]
    ys = [torch.empty(n_rows, HEAD_DIM, device="cuda", dtype=torch.float8_e4m3fn) for _ in range(sets)]
    same_src = [torch.empty(nbytes // 2, device="cuda", dtype=torch.uint8) for _ in range(sets)]
    same_dst = [torch.empty(nbytes // 2, device="cuda", dtype=torch.uint8) for _ in range(sets)]
    calls = {}
    for label, rows, warps, per_sm in SHAPES:
        grid = min(triton.cdiv(n_rows, rows), sms * per_sm)
        for prefetch in (True, False):
            name = f"stream_{label}{'' if prefetch else '_noprefetch'}"
            calls[name] = lambda k, rows=rows, warps=warps, grid=grid, prefetch=prefetch: (
                lambda: stream_rows_kernel[(grid,)](
                    xs[k], ys[k], n_rows, ROWS=rows, WIDTH=HEAD_DIM, PREFETCH=prefetch, num_warps=warps
                )
            )
        calls[f"empty_{label}"] = lambda k, warps=warps, grid=grid: (
            lambda: empty_kernel[(grid,)](xs[k], num_warps=warps)
        )
    calls["copy_same_bytes"] = lambda k: lambda: same_dst[k].copy_(same_src[k])
    ref = (xs[0].float() * 0.5).to(torch.float8_e4m3fn).view(torch.uint8)
    checks = {}
    for name, make in calls.items():
        if name.startswith("stream"):
            ys[0].view(torch.uint8).fill_(0xFF)
            make(0)()
            checks[name] = bool(torch.equal(ys[0].view(torch.uint8), ref))
    return dict(tokens=tokens, bytes=nbytes, checks=checks, us=time_rounds(calls, sets, max(sets, 4)))


# Warps a program of rows_per_warp_kernel (a row each); programs an SM: 32 warps an SM as shipped, and 48.
ROW_WARPS = ((1, 32), (2, 16), (4, 8), (8, 4), (4, 12), (8, 6))


def measure_rows_per_warp(irf, tokens: int, sms: int) -> dict:
    """The shipped kernel and rows_per_warp_kernel at each ROW_WARPS shape: two rounds (us), bytes checked."""
    nbytes, sets, inputs, layout, expected, buffers = upstream_layout_inputs(irf, tokens)
    calls = {
        "shipped": lambda k: (
            lambda: irf.launch_inv_rope_fp8(layout, **inputs[k], out=buffers[k][0], scales=buffers[k][1])
        )
    }
    for warps, per_sm in ROW_WARPS:
        n_tiles = triton.cdiv(tokens * HEADS, warps)
        grid = irf.inv_rope_grid(n_tiles, sms, per_sm)

        def launch(k: int, warps=warps, grid=grid) -> None:
            i, (out, scales) = inputs[k], buffers[k]
            rows_per_warp_kernel[(grid,)](
                i["o"],
                i["positions"],
                i["cos_sin_cache"],
                out,
                scales,
                tokens,
                i["o"].stride(0),
                i["o"].stride(1),
                i["cos_sin_cache"].stride(0),
                ROWS=warps,
                num_warps=warps,
                enable_fp_fusion=False,
            )

        calls[f"warp_a_row_{warps}w_{per_sm}sm"] = lambda k, launch=launch: lambda: launch(k)
    checks = {}
    for name, make in calls.items():
        for out in buffers[0]:
            out.view(torch.uint8).fill_(0xFF)
        make(0)()
        checks[name] = all(torch.equal(x.view(torch.uint8), y.view(torch.uint8)) for x, y in zip(buffers[0], expected))
    return dict(
        tokens=tokens, bytes=nbytes, checks=checks, us=time_rounds(calls, sets, max(sets, 16 if tokens < 4096 else 4))
    )


def print_progress(row: dict) -> None:
    print(f"T={row['tokens']}: " + ", ".join(f"{n} {sum(v) / 2:.2f}" for n, v in row["us"].items()), flush=True)


def print_table(title: str, rows: list[dict]) -> None:
    names = list(rows[0]["us"])
    print(f"\n{title}: us [rounds] (bytes right)")
    print("| variant | " + " | ".join(f"T={r['tokens']}" for r in rows) + " |")
    print("|---|" + "---|" * len(rows))
    for name in names:
        cells = []
        for r in rows:
            a, b = r["us"][name]
            ok = r["checks"].get(name)
            cells.append(f"{(a + b) / 2:.2f} [{a:.2f}/{b:.2f}]" + ("" if ok is None else (" ok" if ok else " WRONG")))
        print(f"| {name} | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=".")
    args = parser.parse_args()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    results = dict(gpu=torch.cuda.get_device_name(), torch=torch.__version__, triton=triton.__version__, rows=[])
    for tokens in TOKENS:
        results["rows"].append(measure(tokens, sms))
        print_progress(results["rows"][-1])
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "probe_inv_rope_ctas.json").write_text(json.dumps(results, indent=1))
    irf = import_kernels()
    results["inv_rope"] = []
    for tokens in (1, 16, 256, *TOKENS):
        results["inv_rope"].append(measure_rows_per_warp(irf, tokens, sms))
        print_progress(results["inv_rope"][-1])
        (Path(args.out) / "probe_inv_rope_ctas.json").write_text(json.dumps(results, indent=1))
    head = f"{results['gpu']} torch {results['torch']} triton {results['triton']}"
    print_table(f"{head}: streams of the same row bytes", results["rows"])
    print_table(f"{head}: inverse RoPE, vLLM's layout", results["inv_rope"])


if __name__ == "__main__":
    main()
