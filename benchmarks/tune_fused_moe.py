"""Tune the fused-MoE tile table on a GPU, side by side with vLLM's kernel, and write TILE_TABLE.

Two steps:

    # GPU: time every candidate tile of every tuned row, and vLLM's kernel at the same points
    python benchmarks/tune_fused_moe.py measure --vllm-file .vendor/vllm_fused_moe.py \
        --vllm-configs .vendor/configs --out tune.json
    # anywhere: pick each row's tiles from those timings and rewrite TILE_TABLE in kernels/moe_configs.py
    python benchmarks/tune_fused_moe.py write-table tune.json

Timing protocol: bench_fused_moe.py's (each GEMM alone, inputs prepared beforehand, CUDA graph over
layer copies whose weights total >= 4x L2, >= 30 ms warm-up, median of >= 100 replays). Every
candidate's output is compared with the current table tile's output before it is timed.

Picking a row (``TUNED_ROWS``): both GEMMs of a row share the token tile, so for each token tile
the best gate_up and the best down tile are found, then the token tile whose worse GEMM is better.
A tile's score at the row's points is first how far its worst point is behind vLLM (0 when never
behind), then its mean time relative to vLLM; exact ties go to the simpler tile. A swapped tile is only kept when its
no-swap twin was timed at the same points and was slower.
"""

from __future__ import annotations

import argparse
import itertools
import json
import multiprocessing
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIGS_FILE = ROOT / "kernels" / "moe_configs.py"

# Shapes of bench_fused_moe.CASES: (E, top_k, H, I, FP8 scheme or None).
SHAPES = {
    "qwen3-30b-bf16": (128, 8, 2048, 768, None),
    "mixtral-bf16": (8, 2, 4096, 14336, None),
    "deepseek-v3-tp2-fp8-block": (256, 8, 7168, 1024, "block"),
    "qwen3-30b-fp8-block": (128, 8, 2048, 768, "block"),
    "mixtral-fp8-tensor": (8, 2, 4096, 14336, "tensor"),
}
SMEM_LIMIT = 224 * 1024
# Where Point and the precompile workers allocate (a CPU dry run under jitguard.offline sets "cpu").
DEVICE = os.environ.get("TUNE_FUSED_MOE_DEVICE", "cuda")


def _load_moe_configs(path: Path, name: str):
    """kernels/moe_configs.py by path: it needs neither torch nor an installed jitguard."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


_TABLE_MODULE = _load_moe_configs(CONFIGS_FILE, "jitguard_tune_moe_configs")


@dataclass(frozen=True)
class Tile(_TABLE_MODULE.TileConfig):
    """A candidate tile: moe_configs.TileConfig's fields, with a label and its swap twin."""

    def label(self) -> str:
        return (f"BM{self.block_m} BN{self.block_n} BK{self.block_k} G{self.group_m} w{self.num_warps} "
                f"s{self.num_stages} {'swap' if self.swap_ab else 'noswap'}")

    def twin(self) -> Tile:
        return Tile(**{**asdict(self), "swap_ab": not self.swap_ab})


def _fits(t: Tile, elem_bytes: int) -> bool:
    return t.num_stages * (t.block_m + t.block_n) * t.block_k * elem_bytes <= SMEM_LIMIT


def family(name: str, bm: int, scheme: str | None) -> list[Tile]:
    """Candidate tiles of one family for token tile ``bm``."""
    nbytes = 1 if scheme else 2
    ks = [128] if scheme == "block" else [128, 256] if scheme else [64, 128, 256]
    out: list[Tile] = []
    if name == "decode":
        for bn, bk, st in itertools.product([32, 64, 128], ks, [3, 4, 5]):
            for swap in ([True, False] if bn >= 64 else [False]):
                out.append(Tile(bm, bn, bk, 1, 4, st, swap))
        if bm == 8 and scheme is None:  # narrower tiles: more programs for few, short experts
            out += [Tile(8, 16, 128, 1, 4, 4, False), Tile(8, 16, 256, 1, 4, 3, False)]
        if scheme == "tensor":  # long K steps for big experts
            out += [Tile(bm, 64, 512, 1, 4, 3, True), Tile(bm, 64, 512, 1, 4, 4, True)]
    elif name == "decode-small":
        for bn, st, swap in itertools.product([64, 128], [4, 5], [True, False]):
            out.append(Tile(bm, bn, 128, 1, 4, st, swap))
    elif name == "mid":
        for bn, bk, st, swap in [(64, 128, 4, True), (64, 128, 5, True), (128, 128, 3, True), (128, 128, 4, True),
                                 (64, 256, 3, True), (64, 64, 4, True), (128, 64, 4, True)]:
            if scheme and bk == 64:
                continue
            out += [Tile(bm, bn, bk, 1, 4, st, swap), Tile(bm, bn, bk, 1, 4, st, not swap)]
    elif name == "mid-block":
        # FP8 block scales at 9-64 tokens: 128- or 256-deep steps (one or two scale groups), up to
        # six stages, 256-row tiles with 4 or 8 warps.
        for bn, bk, st, swap in itertools.product([64, 128, 256], [128, 256], [3, 4, 5, 6], [True, False]):
            out.append(Tile(bm, bn, bk, 1, 4, st, swap))
        for st, swap in itertools.product([3, 4], [True, False]):
            out.append(Tile(bm, 256, 128, 1, 8, st, swap))
    elif name == "large":
        for bn, st, warps in itertools.product([128, 256], [3, 4, 5], [4, 8]):
            out.append(Tile(bm, bn, 128 if scheme else 64, 16, warps, st, False))
    else:
        raise ValueError(f"tune_fused_moe: unknown candidate family {name!r}")
    return [t for t in dict.fromkeys(out) if _fits(t, nbytes)]


# Rows to tune, in priority order (a time budget may cut the tail): table class, the row's max M
# (None: "and above"), the (case, M) points that decide it, and the candidate family per token tile.
TUNED_ROWS = [
    {"cls": ("bf16", "many"), "max_m": 1, "points": [("qwen3-30b-bf16", 1)], "bms": {8: "decode"}},
    {"cls": ("bf16", "many"), "max_m": 2, "points": [("qwen3-30b-bf16", 2)], "bms": {8: "decode"}},
    {"cls": ("bf16", "many"), "max_m": 4, "points": [("qwen3-30b-bf16", 4)], "bms": {8: "decode"}},
    {"cls": ("bf16", "many"), "max_m": 8, "points": [("qwen3-30b-bf16", 8)], "bms": {8: "decode"}},
    # One row for M <= 2, decided by both points: on this shape a tile's time at one point can jump
    # by 10-15% between runs (seen for BN128 swap tiles: 85.6 us tuned, 99.3 us in the bench run).
    {"cls": ("bf16", "few"), "max_m": 2, "points": [("mixtral-bf16", 1), ("mixtral-bf16", 2)],
     "bms": {8: "decode", 16: "decode-small"}},
    {"cls": ("bf16", "few"), "max_m": 4, "points": [("mixtral-bf16", 4)], "bms": {8: "decode", 16: "decode-small"}},
    {"cls": ("bf16", "few"), "max_m": 8, "points": [("mixtral-bf16", 8)], "bms": {8: "decode", 16: "decode-small"}},
    {"cls": ("fp8", "few"), "max_m": 1, "points": [("mixtral-fp8-tensor", 1)],
     "bms": {8: "decode", 16: "decode-small"}},
    {"cls": ("fp8", "few"), "max_m": 2, "points": [("mixtral-fp8-tensor", 2)],
     "bms": {8: "decode", 16: "decode-small"}},
    {"cls": ("fp8", "few"), "max_m": 4, "points": [("mixtral-fp8-tensor", 4)],
     "bms": {8: "decode", 16: "decode-small"}},
    {"cls": ("fp8", "few"), "max_m": 8, "points": [("mixtral-fp8-tensor", 8)],
     "bms": {8: "decode", 16: "decode-small"}},
    {"cls": ("fp8-block", "many"), "max_m": 1,
     "points": [("qwen3-30b-fp8-block", 1), ("deepseek-v3-tp2-fp8-block", 1)],
     "bms": {8: "decode", 16: "decode-small"}},
    {"cls": ("bf16", "many"), "max_m": 128, "points": [("qwen3-30b-bf16", m) for m in (16, 32, 64)],
     "bms": {16: "mid"}},
    {"cls": ("bf16", "few"), "max_m": 64, "points": [("mixtral-bf16", m) for m in (32, 64)], "bms": {32: "mid"}},
    # FP8 block scales at 9-64 tokens: fused_moe and the decode layer's chain path (first hand-set,
    # then tuned).
    {"cls": ("fp8-block", "many"), "max_m": 64,
     "points": [(case, m) for case in ("qwen3-30b-fp8-block", "deepseek-v3-tp2-fp8-block") for m in (16, 32, 64)],
     "bms": {16: "mid-block"}},
    {"cls": ("fp8-block", "many"), "max_m": None,
     "points": [("qwen3-30b-fp8-block", 4096), ("deepseek-v3-tp2-fp8-block", 4096)], "bms": {64: "large"}},
]


def row_candidates(row: dict, moe_configs) -> list[Tile]:
    scheme = SHAPES[row["points"][0][0]][4]
    tiles: list[Tile] = []
    for bm, name in row["bms"].items():
        tiles += family(name, bm, scheme)
    # The current table tiles of every point are always candidates (the baseline).
    for case, M in row["points"]:
        cur = current_tiles(case, M, moe_configs)
        tiles += [cur[0], cur[1]]
    return list(dict.fromkeys(tiles))


def precision_of(scheme: str | None) -> str:
    return "bf16" if scheme is None else "fp8-block" if scheme == "block" else "fp8"


def current_tiles(case: str, M: int, moe_configs) -> tuple[Tile, Tile]:
    E, _, _, _, scheme = SHAPES[case]
    cfgs = moe_configs.select_tile_configs(M, E, precision_of(scheme))
    return Tile(**asdict(cfgs.gate_up)), Tile(**asdict(cfgs.down))


# ---- GPU side ------------------------------------------------------------------------------------

def _bench():
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import bench_fused_moe

    return bench_fused_moe


class Point:
    """Prepared inputs of both GEMMs at one (case, M): activations (quantized as the layer would),
    outputs, routing per token tile, and vLLM's routing and config."""

    def __init__(self, bench, case: str, M: int, layers: list, vllm, configs_dir: str | None):
        import torch

        E, k, H, I, scheme = SHAPES[case]
        self.bench, self.case, self.M, self.layers, self.vllm = bench, case, M, layers, vllm
        self.E, self.k, self.scheme = E, k, scheme
        g = torch.Generator(device=DEVICE).manual_seed(M)
        x = torch.randn(M, H, device=DEVICE, dtype=torch.bfloat16, generator=g)
        logits = torch.randn(M, E, device=DEVICE, generator=g)
        tw, ti = torch.topk(torch.softmax(logits, -1), k)
        self.ti = ti.to(torch.int32)
        self.flat_w = tw.reshape(-1).float().contiguous()
        inter = torch.randn(M * k, I, device=DEVICE, dtype=torch.bfloat16, generator=g)
        mode = {"tensor": "tensor", "channel": "row", "block": "group"}.get(scheme)
        q = bench.moe_quant.quantize_fp8
        self.a1, self.a1s = q(x, mode) if scheme else (x, None)
        self.a2, self.a2s = q(inter, mode) if scheme else (inter, None)
        self.c1 = torch.empty(M * k, I, device=DEVICE, dtype=torch.bfloat16)
        self.c2 = torch.empty(M * k, H, device=DEVICE, dtype=torch.bfloat16)
        self.quant = {None: 0, "tensor": 1, "channel": 2, "block": 3}[scheme]
        self.routings: dict[int, object] = {}
        if vllm is not None:
            self.vcfg, self.vsource = bench.vllm_config(configs_dir, E, I, scheme, M, vllm)
            self.vrouting = bench.moe_align.moe_align_block_size(self.ti, E, self.vcfg["BLOCK_SIZE_M"])
            self.v1 = torch.empty(M * k, 2 * I, device=DEVICE, dtype=torch.bfloat16)
            self.v2 = torch.empty(M * k, H, device=DEVICE, dtype=torch.bfloat16)

    def routing(self, bm: int):
        if bm not in self.routings:
            self.routings[bm] = self.bench.moe_align.moe_align_block_size(self.ti, self.E, bm)
        return self.routings[bm]

    def ours_step(self, tile: Tile, which: int):
        cfg = self.bench.moe_configs.TileConfig(**asdict(tile))
        routing = self.routing(tile.block_m)
        gemm = self.bench.moe_gemm

        def step(layer: int) -> None:
            w13, w2, s13, s2 = self.layers[layer]
            if which == 1:
                gemm.launch_moe_gemm(self.a1, w13, self.c1, routing, cfg, gated=True, a_rows_per_pair_div=self.k,
                                     quant=self.quant, a_scale=self.a1s, w_scale=s13)
            else:
                gemm.launch_moe_gemm(self.a2, w2, self.c2, routing, cfg, gated=False, a_rows_per_pair_div=1,
                                     topk_weights=self.flat_w, quant=self.quant, a_scale=self.a2s, w_scale=s2)
        return step

    def vllm_step(self, which: int):
        b = self.bench

        def step(layer: int) -> None:
            w13, w2, s13, s2 = self.layers[layer]
            if which == 1:
                b.launch_vllm_gemm(self.vllm, self.a1, w13, self.v1, self.a1s, s13, None, self.vrouting, self.k,
                                   self.vcfg, self.scheme, False)
            else:
                b.launch_vllm_gemm(self.vllm, self.a2, w2, self.v2, self.a2s, s2, self.flat_w, self.vrouting, 1,
                                   self.vcfg, self.scheme, True)
        return step

    def output(self, which: int):
        return self.c1 if which == 1 else self.c2


class _WarmupOnly:
    """Stands in for a JITFunction: ``kernel[grid](...)`` compiles (into the disk cache) and launches nothing."""

    def __init__(self, fn):
        self.fn = fn

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.fn.warmup(*args, grid=grid, **kwargs)


def _fake_layers(case: str):
    """One-expert weights of the real per-expert shape: compile keys match the real layer's."""
    import torch

    _, _, H, I, scheme = SHAPES[case]
    wd = torch.float8_e4m3fn if scheme else torch.bfloat16
    w13 = torch.empty(1, 2 * I, H, device=DEVICE, dtype=wd)
    w2 = torch.empty(1, H, I, device=DEVICE, dtype=wd)
    if scheme == "tensor":
        s13, s2 = torch.ones(1, device=DEVICE), torch.ones(1, device=DEVICE)
    elif scheme == "block":
        s13 = torch.ones(1, 2 * I // 128, H // 128, device=DEVICE)
        s2 = torch.ones(1, H // 128, I // 128, device=DEVICE)
    else:
        s13 = s2 = None
    return [(w13, w2, s13, s2)]


def _precompile_worker(args) -> list[str]:
    """Compile (no launch) the given (case, M, tile or None for vLLM, which) launches into the disk cache."""
    vllm_file, configs_dir, jobs = args
    bench = _bench()
    bench.moe_gemm.moe_grouped_gemm_kernel = _WarmupOnly(bench.moe_gemm.moe_grouped_gemm_kernel)
    vllm = bench.load_vllm_kernel(vllm_file) if vllm_file else None
    if vllm is not None:
        vllm.fused_moe_kernel = _WarmupOnly(vllm.fused_moe_kernel)
    errors = []
    points: dict[tuple, Point] = {}
    for case, M, tile, which in jobs:
        try:
            key = (case, M)
            if key not in points:
                points[key] = Point(bench, case, M, _fake_layers(case), vllm, configs_dir)
            p = points[key]
            (p.vllm_step(which) if tile is None else p.ours_step(Tile(**tile), which))(0)
        except Exception as exc:  # reported; the main process skips what does not compile
            errors.append(f"{case} M={M} {tile} G{which}: {type(exc).__name__}: {str(exc)[:120]}")
    return errors


def point_summary(rec: dict) -> str:
    """One line: vLLM, the current tiles (twice) and the fastest candidate per GEMM at one point."""
    def f(x) -> str:
        return "-" if x is None else f"{x:.1f}"

    vllm = rec.get("vllm", [None, None])
    current = (f"current {f(rec['ours'][rec['current'][0]].get('g1'))}/{f(rec['ours'][rec['current'][1]].get('g2'))}"
               f" (again {f(rec['current_again'][0])}/{f(rec['current_again'][1])})")
    parts = [f"vllm {f(vllm[0])}/{f(vllm[1])}", current]
    for w in (1, 2):
        timed = [(e[f"g{w}"], lbl) for lbl, e in rec["ours"].items() if f"g{w}" in e]
        if timed:
            t, lbl = min(timed)
            parts.append(f"best G{w} {t:.1f} {lbl}")
    return "  ".join(parts)


def read_only_floor(bench, replays: int, l2: int) -> dict:
    """Time of one streaming-read launch of the M=1 weight bytes of the Qwen3-like shape (rotated copies)."""
    import torch
    import triton

    out = {}
    for label, nbytes in [("qwen3 fp8 G2 (12.6 MB)", 8 * 2048 * 768),
                          ("qwen3 bf16 G2 / fp8 G1 (25.2 MB)", 16 * 2048 * 768),
                          ("qwen3 bf16 G1 (50.3 MB)", 32 * 2048 * 768)]:
        n = nbytes // 2
        copies = max(1, -(-4 * l2 // nbytes))
        bufs = [torch.randn(n, device=DEVICE, dtype=torch.bfloat16) for _ in range(copies)]
        best = None
        for iters in (1, 2, 4):
            grid = triton.cdiv(n, 4096 * iters)
            partial = torch.empty(grid, device=DEVICE, dtype=torch.float32)
            def step(i, grid=grid, partial=partial, iters=iters, bufs=bufs, n=n):
                bench._read_only_kernel[(grid,)](bufs[i], partial, n, BLOCK=4096, ITERS=iters)

            us = bench.time_graph(step, copies, replays)
            best = us if best is None else min(best, us)
        out[label] = {"us": best, "GBs": nbytes / best / 1e3}
    return out


def measure(args) -> None:
    import torch
    import triton

    bench = _bench()
    torch.backends.cuda.matmul.allow_tf32 = False
    t0 = time.time()
    moe_configs = bench.moe_configs
    rows = TUNED_ROWS if not args.rows else [TUNED_ROWS[int(i)] for i in args.rows.split(",")]
    # Precompile every launch in parallel processes (Triton's disk cache is shared); the timing
    # loop below then only loads binaries.
    # Our kernel's compile key does not depend on the token count: one job per (shape, tile, GEMM).
    # vLLM's kernel specializes on its token-derived integers: one job per point.
    jobs, seen = [], set()
    for row in rows:
        cands = row_candidates(row, moe_configs)
        for case, M in row["points"]:
            for which in (1, 2):
                jobs.append((case, M, None, which))
                for t in cands:
                    if (case, t, which) not in seen:
                        seen.add((case, t, which))
                        jobs.append((case, M, asdict(t), which))
    n_workers = max(1, min(args.workers, os.cpu_count() or 1))
    chunks = [jobs[i::n_workers] for i in range(n_workers)]
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(n_workers) as pool:
        worker_args = [(args.vllm_file, args.vllm_configs, c) for c in chunks]
        errors = [e for errs in pool.map(_precompile_worker, worker_args) for e in errs]
    print(f"# precompiled {len(jobs)} launches with {n_workers} processes in {time.time() - t0:.0f}s; "
          f"{len(errors)} failed", flush=True)
    for e in errors[:20]:
        print("#   " + e, flush=True)

    vllm = bench.load_vllm_kernel(args.vllm_file) if args.vllm_file else None
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 60 << 20)
    result = {"gpu": props.name, "torch": torch.__version__, "triton": triton.__version__, "replays": args.replays,
              "precompile_errors": errors, "rows": [], "points": {}}
    layer_sets: dict[str, list] = {}
    t_timing = time.time()
    for ri, row in enumerate(rows):
        if time.time() - t_timing > args.time_budget:
            print(f"# row {ri} {row['cls']} M<={row['max_m']} skipped: time budget spent", flush=True)
            continue
        cands = row_candidates(row, moe_configs)
        result["rows"].append({"index": TUNED_ROWS.index(row), "cls": list(row["cls"]), "max_m": row["max_m"],
                               "points": [list(p) for p in row["points"]]})
        for case, M in row["points"]:
            E, k, H, I, scheme = SHAPES[case]
            if case not in layer_sets:  # kept for later rows (about 25 GB for all five shapes)
                wbytes = 1 if scheme else 2
                n_layers = max(1, -(-4 * l2 // (k * 3 * H * I * wbytes)))
                layer_sets[case] = [bench.make_layer(E, H, I, scheme, 1234 + i) for i in range(n_layers)]
            layers = layer_sets[case]
            p = Point(bench, case, M, layers, vllm, args.vllm_configs)
            key = f"{case}|{M}"
            rec = result["points"].setdefault(key, {"case": case, "M": M, "n_layers": len(layers), "ours": {}})
            cur1, cur2 = current_tiles(case, M, moe_configs)
            rec["current"] = [cur1.label(), cur2.label()]
            if vllm is not None:
                rec["vllm_cfg"] = f"{p.vsource} " + " ".join(f"{a}={b}" for a, b in p.vcfg.items())
                rec["vllm"] = [bench.time_graph(p.vllm_step(w), len(layers), args.replays) for w in (1, 2)]
            refs = {}
            for w, cur in ((1, cur1), (2, cur2)):
                p.ours_step(cur, w)(0)
                refs[w] = p.output(w).float().clone()
            for tile in cands:
                entry = rec["ours"].setdefault(tile.label(), {"tile": asdict(tile)})
                for w in (1, 2):
                    try:
                        p.output(w).fill_(float("nan"))
                        p.ours_step(tile, w)(0)
                        diff = float((p.output(w).float() - refs[w]).norm() / refs[w].norm())
                        entry[f"diff{w}"] = diff
                        if not diff < 2e-2:
                            entry[f"bad{w}"] = True
                            continue
                        entry[f"g{w}"] = bench.time_graph(p.ours_step(tile, w), len(layers), args.replays)
                    except Exception as exc:
                        entry[f"err{w}"] = f"{type(exc).__name__}: {str(exc)[:100]}"
            # The current tiles once more, last: the run-to-run spread at this point.
            rec["current_again"] = [bench.time_graph(p.ours_step(cur, w), len(layers), args.replays)
                                    for w, cur in ((1, cur1), (2, cur2))]
            print(f"{case} M={M}: " + point_summary(rec) + f"  [{time.time() - t0:.0f}s]", flush=True)
            Path(args.out).write_text(json.dumps(result, indent=1))
    layer_sets.clear()
    torch.cuda.empty_cache()
    result["read_only_floor"] = read_only_floor(bench, args.replays, l2)
    for label, r in result["read_only_floor"].items():
        print(f"# one read-only launch of {label}: {r['us']:.1f} us = {r['GBs']:.0f} GB/s", flush=True)
    Path(args.out).write_text(json.dumps(result, indent=1))
    print(f"# done in {time.time() - t0:.0f}s", flush=True)


# ---- choosing rows and writing the table (no GPU) --------------------------------------------------

def _score(times: list[float], refs: list[float]) -> tuple[float, float]:
    ratios = [t / r for t, r in zip(times, refs)]
    return (round(max(0.0, max(ratios) - 1.0), 3), sum(ratios) / len(ratios))


def choose_row(row: dict, result: dict) -> tuple[Tile, Tile, str] | None:
    """The (gate_up, down) tiles for one tuned row, and a comment with the times that decided it."""
    recs = [result["points"].get(f"{case}|{M}") for case, M in row["points"]]
    if any(r is None for r in recs):
        return None
    labels = set.intersection(*(set(r["ours"]) for r in recs))
    choice = {}
    for w in (1, 2):
        # Reference per point: vLLM's time, or the current tile's where vLLM was not run.
        refs = [r["vllm"][w - 1] if "vllm" in r else r["ours"][r["current"][w - 1]][f"g{w}"] for r in recs]
        scored = {}
        for lbl in labels:
            es = [r["ours"][lbl] for r in recs]
            if all(f"g{w}" in e for e in es):
                scored[lbl] = (_score([e[f"g{w}"] for e in es], refs), [e[f"g{w}"] for e in es], Tile(**es[0]["tile"]))
        choice[w] = scored
    best_pair, best_key = None, None
    for bm in sorted({t.block_m for s in choice.values() for _, _, t in s.values()}):
        picks = []
        for w in (1, 2):
            options = {lbl: sc for lbl, sc in choice[w].items() if sc[2].block_m == bm}

            def swap_earned(sc, options=options) -> bool:
                # Swap only where it measured faster than the same tile without it.
                twin = options.get(sc[2].twin().label())
                return not sc[2].swap_ab or (twin is not None and sum(sc[1]) < sum(twin[1]))

            allowed = [sc for sc in options.values() if swap_earned(sc)]
            if allowed:
                # Medians of event timings tie exactly at times; ties go to no swap, then fewer stages,
                # shorter K and narrower N steps (less shared memory), so the pick never depends on
                # set order.
                picks.append(min(allowed, key=lambda sc: (sc[0], sc[2].swap_ab, sc[2].num_stages, sc[2].block_k,
                                                          sc[2].block_n, sc[2].label())))
        if len(picks) < 2:
            continue
        key = (max(picks[0][0][0], picks[1][0][0]), picks[0][0][1] + picks[1][0][1])
        if best_key is None or key < best_key:
            best_key, best_pair = key, picks
    if best_pair is None:
        return None
    (_, t1, g1), (_, t2, g2) = best_pair
    note = "; ".join(
        f"{case} M={M}: {a:.1f}/{b:.1f} us" + (f" (vLLM {r['vllm'][0]:.1f}/{r['vllm'][1]:.1f})" if "vllm" in r else "")
        for (case, M), a, b, r in zip(row["points"], t1, t2, recs))
    return g1, g2, note


def _tile_src(t) -> str:
    return f"_t({t.block_m}, {t.block_n}, {t.block_k}, {t.group_m}, {t.num_warps}, {t.num_stages}, {t.swap_ab})"


def _row_src(g1, g2) -> str:
    if g1 == g2:
        return f"_same({_tile_src(g1)})"
    return f"MoeTileConfigs({_tile_src(g1)}, {_tile_src(g2)})"


def _table_source_rows(src: str) -> dict[tuple[str, str], list[tuple[list[str], str]]]:
    """Each TILE_TABLE row's source as written: per class, (comment lines above it, its line)."""
    start = src.index("TILE_TABLE: dict[")
    end = src.index("\n}\n", start)
    rows: dict[tuple[str, str], list[tuple[list[str], str]]] = {}
    cls, comments = None, []
    for line in src[start:end].splitlines()[1:]:
        stripped = line.strip()
        if stripped.startswith("(") and stripped.endswith("): ["):
            cls, comments = tuple(part.strip(" '\"") for part in stripped[1:-4].split(",")), []
            rows[cls] = []
        elif stripped.startswith("#"):
            comments.append(line)
        elif stripped.startswith("(") and cls is not None:
            rows[cls].append((comments, line))
            comments = []
    return rows


def write_table(result: dict, path: Path = CONFIGS_FILE) -> str:
    """Rewrite TILE_TABLE in moe_configs.py with the tuned rows; returns a summary of what changed.

    Rows no timing decided keep their source lines and comments as written."""
    mc = _load_moe_configs(path, "moe_configs_for_tuning")
    src = path.read_text()
    written = _table_source_rows(src)
    # Per row: (max M, tiles, comment lines, source line or None to render it).
    table = {}
    for cls, rows in mc.TILE_TABLE.items():
        as_written = written.get(cls, [])
        if len(as_written) != len(rows):
            raise SystemExit(f"tune_fused_moe: {path}: TILE_TABLE {cls} has {len(rows)} rows but {len(as_written)} "
                             "row lines were read from its source (one row per line expected)")
        table[cls] = [(m, cfg, comments, line) for (m, cfg), (comments, line) in zip(rows, as_written)]
    summary = []
    for row in TUNED_ROWS:
        picked = choose_row(row, result)
        if picked is None:
            summary.append(f"{row['cls']} M<={row['max_m']}: not measured, unchanged")
            continue
        g1, g2, note = picked
        cfg = mc.MoeTileConfigs(mc.TileConfig(**asdict(g1)), mc.TileConfig(**asdict(g2)))
        rows = table[tuple(row["cls"])]
        max_m = row["max_m"]
        comments = [f"        # {part}" for part in f"tuned, gate_up/down: {note}".split("; ")]
        rows = [r for r in rows if r[0] != max_m] + [(max_m, cfg, comments, None)]
        rows.sort(key=lambda r: float("inf") if r[0] is None else r[0])
        table[tuple(row["cls"])] = rows
        summary.append(f"{row['cls']} M<={max_m}: {g1.label()} | {g2.label()}  ({note})")
    # Adjacent rows with the same tiles collapse into the higher one (fewer variants).
    for cls, rows in table.items():
        merged = []
        for r in rows:
            if merged and merged[-1][1] == r[1]:
                prev = merged.pop()
                r = (r[0], r[1], prev[2] + r[2], None)
            merged.append(r)
        table[cls] = merged
    lines = ["TILE_TABLE: dict[tuple[str, str], list[tuple[int | None, MoeTileConfigs]]] = {"]
    for cls, rows in table.items():
        lines.append(f"    {cls!r}: [")
        for max_m, cfg, comments, line in rows:
            lines += comments
            lines.append(line if line is not None else f"        ({max_m}, {_row_src(cfg.gate_up, cfg.down)}),")
        lines.append("    ],")
    lines.append("}")
    start = src.index("TILE_TABLE: dict[")
    end = src.index("\n}\n", start) + 3
    src = src[:start] + "\n".join(lines) + "\n" + src[end:]
    path.write_text(src)
    return "\n".join(summary)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    m = sub.add_parser("measure", help="time the candidates on the GPU")
    m.add_argument("--vllm-file", help="vLLM's model_executor/layers/fused_moe/fused_moe.py (not in this repo)")
    m.add_argument("--vllm-configs", help="folder with vLLM's H200 fused-MoE config JSON files")
    m.add_argument("--rows", default="", help="indices into TUNED_ROWS (default: all)")
    m.add_argument("--replays", type=int, default=100)
    m.add_argument("--workers", type=int, default=15)
    m.add_argument("--time-budget", type=float, default=1e9, help="start no new row after this many seconds of timing")
    m.add_argument("--out", default="tune_fused_moe.json")
    w = sub.add_parser("write-table", help="rewrite TILE_TABLE from a measure run's JSON")
    w.add_argument("json")
    w.add_argument("--configs-file", default=str(CONFIGS_FILE))
    args = p.parse_args()
    if args.command == "measure":
        if args.replays < 100:
            p.error("--replays: the median of >= 100 replays")
        measure(args)
    else:
        print(write_table(json.loads(Path(args.json).read_text()), Path(args.configs_file)))


if __name__ == "__main__":
    main()
