"""H200 tuner for the decode MoE layer: structural variants, then tiles per stage.

Two parts, each on the inputs and timer of bench_moe_layer.py (CUDA graphs over rotated layer
copies, L2 defeated, median of the replays):

1. ``variants``: the whole layer and each launch alone on each of ``VARIANTS``' decode configurations
   (``moe_decode.DecodeConfig``), side by side: the shipped one, and one without the FP8 pairs path
   (``fp8_pairs_tokens`` empty: the token counts, by expert size, at which FP8 block scales take the pairs
   path where it has few pairs per expert); our unfused chain and vLLM's two GEMMs alone as references.
2. ``tiles``: for each M, every candidate tile of each GEMM timed alone (the other GEMM on the
   table's tile with the same token tile), then the whole layer on the best pair against the
   table's row; the whole layer decides among the fastest stage tiles. Prints the rows for
   ``moe_configs.DECODE_TILE_TABLE``. bf16 is swept on the pairs path (``--bf16-pairs-ms``), FP8
   on the path ``--fp8-path`` names (grouped by default; ``pairs`` for the token counts where
   ``FP8_PAIRS_TOKENS`` sends FP8 block scales there).

    PYTHONPATH=$PWD python3 benchmarks/tune_moe_decode.py --vllm-file .vendor/vllm_fused_moe.py \\
        --vllm-configs .vendor/configs --out $OUT
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import sys
import time
from pathlib import Path

import torch
import triton

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_fused_moe as bfm
import bench_moe_layer as bml

from jitguard.kernels import moe_chain as fm
from jitguard.kernels import moe_configs, moe_decode, moe_routing
from jitguard.kernels.moe_configs import MoeTileConfigs, TileConfig

REPLAYS = 60
# (Tried and removed, benchmarks/results/moe_layer.md: one-token gate_up programs routing
# themselves and starting 1-2 KB of each weight row into L2 before waiting for the route launch;
# gate_up split over K for up to 2 tokens; the down GEMM by token, branch downbytoken; L2
# prefetch of the down GEMM's weights while gate_up runs, and of gate_up's weights K steps ahead
# of its pipeline; the pairs path's activation loaded 2-3 K steps ahead; FP8 block scales loaded
# one K step ahead.)
# (name, decode configuration) timed side by side.
VARIANTS = [("no pairs path", dataclasses.replace(moe_decode.DEFAULT_DECODE_CONFIG, fp8_pairs_tokens={})),
            ("shipped", moe_decode.DEFAULT_DECODE_CONFIG)]


def token_tiles(M: int) -> tuple[int, ...]:
    return (8, 16) if M <= 8 else (16, 32)


# Per GEMM: (block_n, num_stages, num_warps) choices; every one with and without swap-AB.
# The H200 runs of 2026-11-30 chose 5-8 stages for gate_up and 2-4 for down, 4 warps (8 warps
# never won, 2 only for down); gate_up also tries 16-row weight tiles (twice the programs), 4
# stages (vLLM's choice at M = 2) and 256-row tiles, which quantize whole 128-column groups of the
# FP8 intermediate from registers (no counter, no re-read; not timed yet).
CANDIDATES = {
    "gate_up": ((16, 32, 64, 128, 256), (4, 5, 6, 8), (2, 4)),
    "down": ((32, 64, 128), (2, 3, 4), (4,)),
}
# Whole-layer timings per token tile: the fastest gate_up tiles alone x the fastest down tiles alone.
TOP_PAIRS = (3, 2)


def parse_candidates(spec: str, stage: str) -> tuple[tuple[int, ...], ...]:
    """``"64,128:4,6:4"`` -> ((64, 128), (4, 6), (4,)): block_n, num_stages and num_warps choices."""
    parts = spec.split(":")
    if len(parts) != 3:
        raise SystemExit(f"tune_moe_decode: --{stage.replace('_', '-')}-candidates wants block_ns:stages:warps, "
                         f"got {spec!r}")
    return tuple(tuple(int(v) for v in part.split(",")) for part in parts)


def candidate_tiles(block_m: int, stage: str) -> list[TileConfig]:
    block_ns, stage_counts, warp_counts = CANDIDATES[stage]
    return [TileConfig(block_m, bn, 128, 1, warps, stages, swap)
            for bn, stages, warps, swap in itertools.product(block_ns, stage_counts, warp_counts, (False, True))]


def case_precision(scheme: str | None) -> str:
    """The tile table's precision of a bench_fused_moe case's scheme."""
    return {"block": "fp8-block", None: "bf16"}.get(scheme, "fp8")


def case_weight_bytes(case) -> int:
    """One expert's weight bytes for a bench_fused_moe case (what picks the decode rows)."""
    _, _, _, H, I, scheme = case
    return moe_configs.expert_weight_bytes(H, I, 1 if scheme else 2)


def table_tiles(case, M: int, path: str = "grouped") -> MoeTileConfigs:
    """The decode tables' row for a case at M tokens on ``path``."""
    return moe_configs.select_decode_tile_configs(M, case[1], case_precision(case[5]), case_weight_bytes(case), path)


class Layer:
    """Rotated copies of one case's weights and a workspace."""

    def __init__(self, case, l2_bytes: int):
        self.case = case
        self.name, self.E, self.k, self.H, self.I, self.scheme = case
        scale = 4 * (triton.cdiv(2 * self.I, 128) * triton.cdiv(self.H, 128)
                     + triton.cdiv(self.H, 128) * triton.cdiv(self.I, 128)) if self.scheme == "block" else 0
        self.expert_bytes = case_weight_bytes(case) + scale
        self.n_layers = max(1, -(-4 * l2_bytes // (self.k * self.expert_bytes)))
        self.layers = [bfm.make_layer(self.E, self.H, self.I, self.scheme, 1234 + i) for i in range(self.n_layers)]
        self.ws = moe_decode.MoeDecodeWorkspace.for_layer(self.layers[0][0], self.layers[0][1], self.k,
                                                          torch.bfloat16)
        # The decode tables the shipped plans take (the tuners' candidates start from it).
        self.config = moe_decode.DEFAULT_DECODE_CONFIG

    def kwargs(self, i: int) -> dict:
        return bml.fp8_kwargs(self.scheme, self.layers[i][2], self.layers[i][3])

    def plans(self, x, logits, out, path, tiles, config=None):
        """One plan per layer copy, with ``config`` (None: ``self.config``)."""
        return [moe_decode.plan_fused_moe_decode(
            x, logits, self.layers[i][0], self.layers[i][1], self.k, renormalize=True, workspace=self.ws, out=out,
            path=path, tile_configs=tiles, config=config or self.config, **self.kwargs(i))
            for i in range(self.n_layers)]

    def unfused_step(self, x, logits, out):
        """step(i): softmax_topk + fused_moe (the unfused chain) on layer copy i into ``out``."""
        def step(i):
            tw, ti = moe_routing.softmax_topk(logits, self.k, True)
            fm.fused_moe(x, self.layers[i][0], self.layers[i][1], tw, ti, out=out, **self.kwargs(i))
        return step

    @staticmethod
    def plans_step(plans):
        """step(i): every launch of ``plans[i]`` in order (the whole layer on copy i)."""
        def step(i):
            for _, launch in plans[i].launches:
                launch()
        return step

    def time_plans(self, plans) -> tuple[float, list[float]]:
        """(whole layer, each launch alone: ``bfm.time_launches_alone``) in us."""
        t = bfm.time_graph(self.plans_step(plans), self.n_layers, REPLAYS)
        return t, bfm.time_launches_alone(plans, self.n_layers, REPLAYS)


def fp8_gluon_tiles_everywhere(tiles: dict, base: moe_decode.DecodeConfig) -> moe_decode.DecodeConfig:
    """``base`` with the FP8 GEMMs in Gluon on ``tiles`` (gluon_tiles' form, by path) at every token count on every
    GPU: neither the per-count table (gluon_tiles_at) nor a GPU's own (gluon_tiles_on_gpu) takes a point back. The
    tuner forces tiles through it alone."""
    return dataclasses.replace(base, gluon_fp8_gemms="always", gluon_tiles=tiles, gluon_tiles_at={},
                               gluon_tiles_on_gpu={})


def run_error(layer: Layer, plans, out, ref) -> float:
    """``plans``' first layer copy run once into a NaN-filled ``out``: its relative error to ``ref``."""
    out.fill_(float("nan"))
    layer.plans_step(plans)(0)
    torch.cuda.synchronize()
    return bml.rel(out, ref)


def time_alternating(layer: Layer, plans: dict, rounds: int = 2) -> dict[str, list[float]]:
    """Each variant's whole layer (``plans``: label -> one plan per layer copy), us, once a round;
    every other round runs the variants in reverse order, so none is always the first timed."""
    times: dict[str, list[float]] = {label: [] for label in plans}
    for r in range(rounds):
        for label in (list(plans) if r % 2 == 0 else list(reversed(plans))):
            times[label].append(bfm.time_graph(layer.plans_step(plans[label]), layer.n_layers, REPLAYS))
    return times


def layer_for(layers: dict, name: str, l2_bytes: int) -> Layer:
    """The case's Layer from ``layers``, built on first use (its rotated weight copies are large)."""
    if name not in layers:
        layers[name] = Layer(bfm.CASES[name], l2_bytes)
    return layers[name]


def inputs(layer: Layer, M: int):
    g = torch.Generator(device="cuda").manual_seed(M)
    x = torch.randn(M, layer.H, device="cuda", dtype=torch.bfloat16, generator=g)
    logits = torch.randn(M, layer.E, device="cuda", dtype=torch.float32, generator=g)
    return x, logits


def reference(layer: Layer, x, logits):
    fp8 = {"quantize_activations": True} if layer.scheme else {}
    return moe_decode.fused_moe_decode_reference(x, logits, layer.layers[0][0], layer.layers[0][1], layer.k,
                                                 renormalize=True, **layer.kwargs(0), **fp8)


def floor_us(layer: Layer, M: int, logits, bw_read: float) -> float:
    _, ids = moe_routing.softmax_topk_reference(logits, layer.k, True)
    e_act = int(torch.unique(ids).numel())
    return (e_act * layer.expert_bytes + 2 * M * layer.H * 2 + M * layer.E * 4) / bw_read / 1e3


def variants_part(layer: Layer, ms, vllm, configs_dir, bw_read, log) -> list[str]:
    lines = []
    for M in ms:
        x, logits = inputs(layer, M)
        ref = reference(layer, x, logits)
        fl = floor_us(layer, M, logits, bw_read)
        out = torch.empty_like(x)
        cells = []
        for name, config in VARIANTS:
            out.fill_(float("nan"))
            moe_decode.fused_moe_decode(x, logits, layer.layers[0][0], layer.layers[0][1], layer.k, renormalize=True,
                                        workspace=layer.ws, out=out, config=config, **layer.kwargs(0))
            err = bml.rel(out, ref)
            t, stages = layer.time_plans(layer.plans(x, logits, out, "auto", None, config))
            cells.append(f"{t:.1f} ({t / fl:.2f}x) {'/'.join(f'{s:.1f}' for s in stages)} err {err:.1e}")
            log({"part": "variants", "case": layer.name, "M": M, "variant": name, "us": t, "stages": stages,
                 "err": err, "floor_us": fl})

        un = bfm.time_graph(layer.unfused_step(x, logits, out), layer.n_layers, REPLAYS)
        vg = vg1 = vg2 = float("nan")
        if vllm is not None:
            vg, vg1, vg2 = vllm_gemms_us(layer, M, x, logits, vllm, configs_dir)
        log({"part": "variants", "case": layer.name, "M": M, "unfused_us": un, "vllm_gemms_us": vg,
             "vllm_gate_up_us": vg1, "vllm_down_us": vg2})
        line = (f"| {layer.name} | {M} | {fl:.1f} | " + " | ".join(cells)
                + f" | {un:.1f} ({un / fl:.2f}x) | {vg:.1f} ({vg / fl:.2f}x) {vg1:.1f}/{vg2:.1f} |")
        print(line, flush=True)
        lines.append(line)
    return lines


def vllm_gemms_us(layer: Layer, M: int, x, logits, vllm, configs_dir) -> tuple[float, float, float]:
    """vLLM's two GEMM launches alone on prepared inputs (bench_moe_layer's 'vLLM GEMMs only'):
    both, then gate_up alone and down alone (us)."""
    ref_w, ref_ids = moe_routing.softmax_topk_reference(logits, layer.k, True)
    vcfg, _ = bfm.vllm_config(configs_dir, layer.E, layer.I, layer.scheme, M, vllm)
    buffers = dict(inter=torch.randn(M * layer.k, layer.I, device="cuda", dtype=torch.bfloat16),
                   v1=torch.empty(M * layer.k, 2 * layer.I, device="cuda", dtype=torch.bfloat16),
                   v2=torch.empty(M * layer.k, layer.H, device="cuda", dtype=torch.bfloat16))
    times = []
    for gemms in (("gate_up", "down"), ("gate_up",), ("down",)):
        step = bml.vllm_gemms_step(vllm, vcfg, layer.layers, x, ref_w, ref_ids, layer.k, layer.E, layer.I,
                                   layer.scheme, gemms=gemms, **buffers)
        times.append(bfm.time_graph(step, layer.n_layers, REPLAYS))
    print(f"vLLM config {layer.name} M={M}: {vcfg}", flush=True)
    return times[0], times[1], times[2]


def tiles_part(layer: Layer, ms, path: str, bw_read, log, deadline: float) -> list[str]:
    """Per M: each GEMM's candidates timed alone, then the whole layer on the TOP_PAIRS fastest
    combinations of each token tile (the two GEMMs share it), and on the table's row: the whole
    layer decides, since a stage that is faster alone can overlap worse with its neighbours."""
    lines = []
    for M in ms:
        if time.time() > deadline:
            print(f"# time budget spent: {layer.name} M >= {M} not tuned", flush=True)
            break
        x, logits = inputs(layer, M)
        ref = reference(layer, x, logits)
        fl = floor_us(layer, M, logits, bw_read)
        out = torch.empty_like(x)
        table = table_tiles(layer.case, M, path)
        t_table, st_table = layer.time_plans(layer.plans(x, logits, out, path, table))
        combos = []
        for bm in token_tiles(M):
            fastest = {}
            for stage in ("gate_up", "down"):
                timed = []
                for tile in candidate_tiles(bm, stage):
                    other = TileConfig(bm, *_rest(table.down if stage == "gate_up" else table.gate_up))
                    tiles = MoeTileConfigs(tile, other) if stage == "gate_up" else MoeTileConfigs(other, tile)
                    try:
                        plans = layer.plans(x, logits, out, path, tiles)
                        names = [n for n, _ in plans[0].launches]
                        (us,) = bfm.time_launches_alone(plans, layer.n_layers, REPLAYS, [names.index(stage)])
                    except Exception as exc:  # a tile this Triton cannot compile: skipped, named
                        print(f"# {layer.name} M={M} {stage} {tile}: {type(exc).__name__}: {exc}"[:300], flush=True)
                        continue
                    log({"part": "tiles", "case": layer.name, "M": M, "path": path, "stage": stage,
                         "tile": tile.__dict__, "us": us})
                    timed.append((us, tile))
                fastest[stage] = [tile for _, tile in sorted(timed, key=lambda t: t[0])]
            combos += [MoeTileConfigs(gu, dn) for gu in fastest["gate_up"][:TOP_PAIRS[0]]
                       for dn in fastest["down"][:TOP_PAIRS[1]]]
        whole = []
        for tiles in combos:
            t, st = layer.time_plans(layer.plans(x, logits, out, path, tiles))
            log({"part": "tiles", "case": layer.name, "M": M, "path": path, "whole_us": t, "stages": st,
                 "gate_up": tiles.gate_up.__dict__, "down": tiles.down.__dict__})
            whole.append((t, st, tiles))
        if not whole:
            continue
        t_best, st_best, chosen = min(whole, key=lambda w: w[0])
        out.fill_(float("nan"))
        for _, launch in layer.plans(x, logits, out, path, chosen)[0].launches:
            launch()
        err = bml.rel(out, ref)
        # The winner and the table's row once more, back to back: the difference is worth a change
        # only where it exceeds what timing the same row twice moves.
        t_table2, _ = layer.time_plans(layer.plans(x, logits, out, path, table))
        t_best2, _ = layer.time_plans(layer.plans(x, logits, out, path, chosen))
        log({"part": "tiles", "case": layer.name, "M": M, "path": path, "table_us": [t_table, t_table2],
             "table_stages": st_table, "best_us": [t_best, t_best2], "best_stages": st_best,
             "gate_up": chosen.gate_up.__dict__, "down": chosen.down.__dict__, "err": err})
        line = (f"| {layer.name} | {path} | {M} | {fl:.1f} | {t_table:.1f}, {t_table2:.1f} "
                f"{'/'.join(f'{s:.1f}' for s in st_table)} | {t_best:.1f}, {t_best2:.1f} "
                f"{'/'.join(f'{s:.1f}' for s in st_best)} | {_fmt(chosen.gate_up)} | {_fmt(chosen.down)} | {err:.1e} |")
        print(line, flush=True)
        lines.append(line)
    return lines


def _rest(tile: TileConfig) -> tuple:
    return (tile.block_n, tile.block_k, tile.group_m, tile.num_warps, tile.num_stages, tile.swap_ab)


def _fmt(t: TileConfig) -> str:
    return f"_t({t.block_m}, {t.block_n}, {t.block_k}, {t.group_m}, {t.num_warps}, {t.num_stages}, {t.swap_ab})"


def sweep_jobs(tile_cases, tile_ms, bf16_ms, fp8_path: str = "grouped") -> list[tuple[str, str, int, MoeTileConfigs]]:
    """Every (case, path, M, tiles) the tile part launches, for compiling ahead in parallel."""
    jobs = []
    for name in tile_cases:
        case = bfm.CASES[name]
        path, ms = ("pairs", bf16_ms) if case[5] is None else (fp8_path, tile_ms)
        for M in ms:
            table = table_tiles(case, M, path)
            jobs.append((name, path, M, table))
            for bm in token_tiles(M):
                for tile in candidate_tiles(bm, "gate_up"):
                    jobs.append((name, path, M, MoeTileConfigs(tile, TileConfig(bm, *_rest(table.down)))))
                for tile in candidate_tiles(bm, "down"):
                    jobs.append((name, path, M, MoeTileConfigs(TileConfig(bm, *_rest(table.gate_up)), tile)))
    return jobs


def compile_slice(jobs) -> None:
    """Compile the given launches for sm_90 with jitguard's offline backend (no GPU, CPU tensors):
    the binaries land in Triton's on-disk cache, where the GPU run finds them."""
    import jitguard

    seen = set()
    for name, path, M, tiles in jobs:
        key = (name, path, tiles)
        if key in seen:
            continue
        seen.add(key)
        _, E, k, H, I, scheme = bfm.CASES[name]
        wdtype = torch.float8_e4m3fn if scheme else torch.bfloat16
        w13, w2 = torch.empty(E, 2 * I, H, dtype=wdtype), torch.empty(E, H, I, dtype=wdtype)
        kw = {}
        if scheme == "block":
            kw = {"use_fp8_w8a8": True, "block_shape": [128, 128],
                  "w1_scale": torch.ones(E, triton.cdiv(2 * I, 128), triton.cdiv(H, 128)),
                  "w2_scale": torch.ones(E, triton.cdiv(H, 128), triton.cdiv(I, 128))}
        try:
            with jitguard.offline(compile=True):
                moe_decode.fused_moe_decode(torch.randn(M, H).to(torch.bfloat16), torch.randn(M, E), w13, w2, k,
                                            renormalize=True, path=path, tile_configs=tiles, **kw)
        except Exception as exc:
            print(f"# precompile {name} {tiles}: {type(exc).__name__}: {exc}"[:300], flush=True)


def precompile(jobs, workers: int) -> None:
    import subprocess

    started = time.time()
    procs = [subprocess.Popen([sys.executable, __file__, "--compile-slice", f"{i}/{workers}"] + sys.argv[1:])
             for i in range(workers)]
    for proc in procs:
        proc.wait()
    print(f"# precompiled {len(jobs)} launches in {workers} processes: {time.time() - started:.0f} s", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--vllm-file")
    p.add_argument("--vllm-configs")
    p.add_argument("--cases", default="deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block")
    p.add_argument("--ms", default="1,2,4,8,16,32,64")
    p.add_argument("--tile-cases", default="deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block,qwen3-30b-bf16")
    p.add_argument("--tile-ms", default="1,2,4,8,16,32,64")
    p.add_argument("--bf16-pairs-ms", default="1,2", help="M for the bf16 pairs path's tile sweep")
    p.add_argument("--fp8-path", default="grouped", choices=("grouped", "pairs"),
                   help="the decode path FP8 cases sweep their tiles on")
    p.add_argument("--gate-up-candidates", help="block_ns:stages:warps, e.g. 64,128,256:4,6:4 (default: CANDIDATES)")
    p.add_argument("--down-candidates", help="block_ns:stages:warps for the down GEMM (default: CANDIDATES)")
    p.add_argument("--skip-variants", action="store_true")
    p.add_argument("--skip-tiles", action="store_true")
    p.add_argument("--time-budget", type=float, default=420.0, help="seconds; the tile part stops when spent")
    p.add_argument("--precompile", type=int, default=8, help="processes compiling the tile sweep ahead (0: none)")
    p.add_argument("--compile-slice", help=argparse.SUPPRESS)
    p.add_argument("--out", default=".")
    args = p.parse_args()
    for stage, spec in (("gate_up", args.gate_up_candidates), ("down", args.down_candidates)):
        if spec:
            CANDIDATES[stage] = parse_candidates(spec, stage)
    jobs = sweep_jobs(args.tile_cases.split(","), [int(m) for m in args.tile_ms.split(",")],
                      [int(m) for m in args.bf16_pairs_ms.split(",")], args.fp8_path)
    if args.compile_slice:
        i, n = (int(v) for v in args.compile_slice.split("/"))
        distinct = list({(name, path, tiles): (name, path, M, tiles) for name, path, M, tiles in jobs}.values())
        compile_slice(distinct[i::n])
        return
    if args.precompile and not args.skip_tiles:
        precompile(jobs, args.precompile)
    start = time.time()
    out_dir = Path(args.out)
    log = bfm.jsonl_log(out_dir, "tune_moe_decode.jsonl")
    vllm = bfm.load_vllm_kernel(args.vllm_file) if args.vllm_file else None
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 60 << 20)
    bw = bfm.measure_bandwidths(REPLAYS)
    head = [f"# {props.name}, torch {torch.__version__}, triton {triton.__version__}, read-only {bw[1]:.0f} GB/s, "
            f"copy {bw[0]:.0f} GB/s"]
    lines = list(head)
    layers = {}
    if not args.skip_variants:
        names = " | ".join(n for n, _ in VARIANTS)
        lines += ["", "variants: us per layer (x floor) route/gate_up/down alone, error vs fp32 reference",
                  f"| case | M | floor us | {names} | unfused ours | vLLM GEMMs only, gate_up/down alone |",
                  "|" + "---|" * (5 + len(VARIANTS))]
        print("\n".join(lines), flush=True)
        for name in args.cases.split(","):
            lines += variants_part(layer_for(layers, name, l2), [int(m) for m in args.ms.split(",")], vllm,
                                   args.vllm_configs, bw[1], log)
    tile_head = ["", "tiles: whole layer us and stages (table row, then best tiles found), best tiles, error",
                 "| case | path | M | floor us | table row | best tiles | gate_up tile | down tile | err |",
                 "|---|---|---|---|---|---|---|---|---|"]
    print("\n".join(tile_head), flush=True)
    lines += tile_head
    deadline = start + args.time_budget
    for name in [] if args.skip_tiles else args.tile_cases.split(","):
        layer = layer_for(layers, name, l2)
        if layer.scheme is None:
            lines += tiles_part(layer, [int(m) for m in args.bf16_pairs_ms.split(",")], "pairs", bw[1], log, deadline)
        else:
            lines += tiles_part(layer, [int(m) for m in args.tile_ms.split(",")], args.fp8_path, bw[1], log,
                                deadline)
    text = "\n".join(lines) + "\n"
    (out_dir / "tune_moe_decode.md").write_text(text)
    print("\n".join(lines[len(head):]), flush=True)
    print(f"# {time.time() - start:.0f} s", flush=True)


if __name__ == "__main__":
    main()
