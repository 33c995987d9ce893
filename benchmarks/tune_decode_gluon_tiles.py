"""H200 tuner for the decode MoE layer's Gluon tiles: which (gate_up, down) tile each token count takes.

The Gluon GEMMs' best tile changes changing with the token count (DeepSeek-V3-TP2 M = 1 with
gate_up 32x8 1.7 us faster, Qwen3-30B-FP8 M = 2 with down 6 stages 1.3 us; benchmarks/results/moe_layer.md) and
wrote them into ``moe_decode.GLUON_TILES_AT`` by hand. This sweeps them. For each case and M, on the path the
shipped choice takes (FP8 block scales, or bf16 on the same kernel; the chain path
has no Gluon GEMMs and is skipped, or with ``--against-chain`` stands as the shipped choice of the grouped path on
Gluon), the whole layer
(CUDA graphs over rotated layer copies, L2 defeated; never a launch alone, which misleads here: gate_up 32x8
alone was 9 us slower at DeepSeek M = 1 where the layer was 1.7 us faster):

1. each gate_up candidate beside the shipped down tile, one timing each;
2. each down candidate beside the fastest gate_up, one timing each; steps 1-2 again beside the new tiles
   until a pass changes neither (``--passes``, default 2; a pair is timed once per token count): the two
   tiles interact (Qwen3-30B-FP8 M = 1: 32x7/128x6 18.45 us where 32x7/128x3 took 18.59
   and 32x6/128x6 18.99);
3. the fastest pair, the shipped choice (its tiles, or tl's GEMMs where Gluon is not taken at this M) and
   GLUON_TILES' tiles alone, side by side over ``--rounds`` rounds (every other one in reverse order).

It prints a row per M as it goes (and appends every timing to ``OUT/tune_decode_gluon_tiles.jsonl``, so a run
cut short keeps what it measured), then the GLUON_TILES_AT and GLUON_FP8_TOKENS entries this run supports (for
bf16 cases GLUON_BF16_TILES_AT, keyed by path alone, and GLUON_BF16_TOKENS):
those M where the fastest pair beat the shipped choice in every round by more than ``--min-gain`` percent. A
proposal to confirm with ``bench_moe_layer.py`` and copy by hand, never written into the code.

    PYTHONPATH=$PWD python3 benchmarks/tune_decode_gluon_tiles.py --cases qwen3-30b-fp8-block --ms 1-16 --out $OUT
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_fused_moe as bfm
import tune_moe_decode as tmd

from jitguard.kernels import moe_decode
from jitguard.kernels.moe_configs import expert_size_class, expert_weight_bytes
from jitguard.kernels.moe_decode_gluon import GluonTile

# 64 x 8 (DeepSeek-V3-TP2 pairs at 2 tokens on an H100: 128.25 against 64 x 6's 129.05).
GATE_UP_CANDIDATES = "32x4,32x6,32x8,64x3,64x4,64x6,64x8"
DOWN_CANDIDATES = "64x3,64x4,64x6,128x3,128x4,128x6"
GLUON_PATHS = ("pairs", "grouped")


def parse_tiles(spec: str, what: str) -> list[tuple[int, int]]:
    """``"32x6,64x4"`` -> [(32, 6), (64, 4)]: (out_n, stages) pairs; a one-line ``SystemExit`` naming ``what``
    on anything else (GluonTile checks the values when the plan is made)."""
    tiles = []
    for item in spec.split(","):
        out_n, sep, stages = item.strip().partition("x")
        if not (sep and out_n.isdigit() and stages.isdigit()):
            raise SystemExit(f"tune_decode_gluon_tiles: {what}: {item!r} is not OUT_NxSTAGES (e.g. 32x6)")
        tiles.append((int(out_n), int(stages)))
    return tiles


def parse_ms(spec: str) -> list[int]:
    """``"1-4,8,16"`` -> [1, 2, 3, 4, 8, 16]; a one-line ``SystemExit`` on anything else."""
    ms: list[int] = []
    for item in spec.split(","):
        lo, sep, hi = item.strip().partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise SystemExit(f"tune_decode_gluon_tiles: --ms: {item!r} is not a token count or a range like 1-16")
        ms += range(int(lo), int(hi if sep else lo) + 1)
    return ms


def fmt(tile: tuple[int, int]) -> str:
    return f"{tile[0]}x{tile[1]}"


@dataclass(frozen=True)
class TunedRow:
    """One case and M after step 3: times in us, one per round, in the same rounds."""

    case: str
    size_class: str
    path: str
    M: int
    shipped_gemms: str  # "gluon" or "tl": what the shipped choice runs at this M
    shipped_us: tuple[float, ...]
    best: tuple[tuple[int, int], tuple[int, int]]
    best_us: tuple[float, ...]
    bf16: bool = False  # a bf16 case: its proposal goes to GLUON_BF16_TILES_AT / GLUON_BF16_TOKENS

    def gain_percent(self) -> float:
        """The smallest gain of the fastest pair over the shipped choice in any round (negative: slower)."""
        return min(100.0 * (s - b) / s for s, b in zip(self.shipped_us, self.best_us))


def proposal(rows: list[TunedRow], tiles_at: dict, tokens: dict, base_tiles: dict | None, min_gain: float,
             tiles_by_size: bool = True) -> tuple[dict, dict, list[TunedRow]]:
    """(GLUON_TILES_AT, GLUON_FP8_TOKENS, the rows that changed them): copies of ``tiles_at`` / ``tokens`` with
    the fastest pair entered for every row that beat its shipped choice by more than ``min_gain`` percent in
    every round (a pair equal to ``base_tiles[path]``, GLUON_TILES', needs no GLUON_TILES_AT entry and drops
    one; ``base_tiles`` None, for one GPU's GLUON_TILES_ON_GPU entry, which falls back to GLUON_TILES_AT's tile
    rather than GLUON_TILES': every such pair entered), and the row's M added to GLUON_FP8_TOKENS where the
    shipped choice ran tl's GEMMs. With ``tiles_by_size`` off, ``tiles_at`` is keyed by path alone (bf16's
    GLUON_BF16_TILES_AT; its tokens, as FP8's, by size class and path)."""
    sized_at = tiles_at if tiles_by_size else {None: tiles_at}
    new_at = {size: {path: dict(by_m) for path, by_m in paths.items()} for size, paths in sized_at.items()}
    new_tokens = {size: {path: tuple(ms) for path, ms in paths.items()} for size, paths in tokens.items()}
    changed = []
    for row in rows:
        if row.gain_percent() <= min_gain:
            continue
        changed.append(row)
        by_m = new_at.setdefault(row.size_class if tiles_by_size else None, {}).setdefault(row.path, {})
        if base_tiles is not None and row.best == tuple(base_tiles[row.path]):
            by_m.pop(row.M, None)
        else:
            by_m[row.M] = row.best
        if row.shipped_gemms == "tl":
            listed = new_tokens.setdefault(row.size_class, {}).get(row.path, ())
            new_tokens[row.size_class][row.path] = tuple(sorted({*listed, row.M}))
    for paths in new_at.values():
        for path in [p for p, by_m in paths.items() if not by_m]:
            del paths[path]
        for path in paths:
            paths[path] = dict(sorted(paths[path].items()))
    return (new_at if tiles_by_size else new_at[None]), new_tokens, changed


def _tile_pair(tiles) -> tuple[tuple[int, int], tuple[int, int]]:
    return tuple((t.out_n, t.stages) for t in tiles)


def tune_m(layer, M: int, gate_ups, downs, rounds: int, log, against_chain: bool = False, passes: int = 2
           ) -> tuple[TunedRow, str] | None:
    """Steps 1-3 for one case and token count (see the module docstring): the row and its markdown line, or
    None where the shipped choice takes a path without Gluon GEMMs (unless ``against_chain``: the chain path
    then stands as the shipped choice of the grouped path on Gluon) or no candidate compiled."""
    case = layer.name
    # The size class of the expert's weight count (its bytes in e4m3), as both tables take it.
    expert_bytes = expert_weight_bytes(layer.H, layer.I, 1)
    bf16 = getattr(layer, "scheme", "block") is None
    x, logits = tmd.inputs(layer, M)
    ref = tmd.reference(layer, x, logits)
    out = torch.empty_like(x)
    shipped = layer.plans(x, logits, out, "auto", None)
    path = shipped[0].path
    if path == "chain" and against_chain:
        path = "grouped"
    if path not in GLUON_PATHS:
        print(f"# {case} M = {M}: the shipped choice takes the {path} path (no Gluon GEMMs): skipped", flush=True)
        return None
    shipped_pair = _tile_pair(moe_decode.gluon_tiles(path, M, expert_bytes, unquantized=bf16,
                                                     gpu_name=moe_decode.gpu_name(x.device), config=layer.config))

    def plans_for(pair):
        tiles = {**layer.config.gluon_tiles, path: tuple(GluonTile(*t) for t in pair)}
        on_gluon = (dataclasses.replace(layer.config, gluon_bf16_gemms="always", gluon_bf16_tiles_at={},
                                        gluon_tiles=tiles) if bf16
                    else tmd.fp8_gluon_tiles_everywhere(tiles, layer.config))
        return layer.plans(x, logits, out, path, None, on_gluon)

    measured: dict = {}  # each pair timed once in a tune_m call: a later sweep reuses its time

    def timed(pair, step):
        if pair in measured:
            return measured[pair]
        measured[pair] = None  # a pair that fails is not tried again
        try:
            plans = plans_for(pair)
            us = bfm.time_graph(layer.plans_step(plans), layer.n_layers, tmd.REPLAYS)
        except Exception as exc:  # a tile this Triton cannot compile (a ptxas crash): named, skipped
            print(f"# {case} M = {M} {fmt(pair[0])}/{fmt(pair[1])}: {type(exc).__name__}: "
                  f"{str(exc).strip().splitlines()[0][:160]}", flush=True)
            return None
        log({"case": case, "M": M, "path": path, "step": step, "gate_up": pair[0], "down": pair[1], "us": us})
        measured[pair] = us
        return us

    # Coordinate descent: gate_up candidates beside the current down tile, then down candidates beside the best
    # gate_up, until a pass changes neither (or ``passes`` passes): the two GEMMs' tiles interact (with down's
    # weights before its wait, down's programs share the SMs with gate_up's tail).
    best_up, best_down = None, shipped_pair[1]
    for pass_index in range(1, passes + 1):
        ups = {up: us for up in gate_ups if (us := timed((up, best_down), f"gate_up, pass {pass_index}")) is not None}
        if not ups:
            return None
        new_up = min(ups, key=ups.get)
        dns = {dn: us for dn in downs if (us := timed((new_up, dn), f"down, pass {pass_index}")) is not None}
        new_down = min(dns, key=dns.get) if dns else best_down
        if (new_up, new_down) == (best_up, best_down):
            break
        best_up, best_down = new_up, new_down
    best = (best_up, best_down)
    base = _tile_pair(moe_decode.GLUON_TILES[path])
    contenders = {"shipped": shipped, "best": plans_for(best), "base": plans_for(base)}
    times = tmd.time_alternating(layer, contenders, rounds)
    err = tmd.run_error(layer, contenders["best"], out, ref)
    row = TunedRow(case, expert_size_class(expert_bytes), path, M, shipped[0].gemms, tuple(times["shipped"]),
                   best, tuple(times["best"]), bf16)
    log({"case": case, "M": M, "path": path, "step": "final", "shipped_gemms": row.shipped_gemms,
         "shipped_tiles": shipped_pair, "best": best, "base": base, "us": times, "err": err})
    shipped_label = (f"{fmt(shipped_pair[0])}/{fmt(shipped_pair[1])}" if row.shipped_gemms == "gluon"
                     else "chain" if shipped[0].path == "chain" else "tl")
    line = (f"| {case} | {path} | {M} | {shipped_label} {' / '.join(f'{t:.1f}' for t in times['shipped'])} | "
            f"{fmt(best[0])}/{fmt(best[1])} {' / '.join(f'{t:.1f}' for t in times['best'])} | "
            f"{' / '.join(f'{t:.1f}' for t in times['base'])} | {row.gain_percent():.1f} | {err:.1e} |")
    return row, line


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", default="qwen3-30b-fp8-block,deepseek-v3-tp2-fp8-block")
    p.add_argument("--ms", default="1-16", help="token counts: 1-16 or 1,2,8")
    p.add_argument("--gate-up", default=GATE_UP_CANDIDATES, help="gate_up candidates, OUT_NxSTAGES,...")
    p.add_argument("--down", default=DOWN_CANDIDATES, help="down candidates (out_n 64 or 128)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--passes", type=int, default=2,
                   help="gate_up then down sweeps, repeated until a pass changes neither tile (at most this many)")
    p.add_argument("--min-gain", type=float, default=0.5, help="percent, in every round, to propose a change")
    p.add_argument("--minutes", type=float, default=8.0, help="stop starting new token counts after this")
    p.add_argument("--against-chain", action="store_true",
                   help="where the shipped choice takes the chain path, tune the grouped path on Gluon against it")
    p.add_argument("--out", default=".")
    args = p.parse_args()
    gate_ups, downs = parse_tiles(args.gate_up, "--gate-up"), parse_tiles(args.down, "--down")
    if args.passes < 1:
        raise SystemExit(f"tune_decode_gluon_tiles: --passes must be at least 1, got {args.passes}")
    ms = parse_ms(args.ms)
    gluon_cases = [name for name, case in bfm.CASES.items() if case[5] in ("block", None)]
    for case in args.cases.split(","):
        if case not in gluon_cases:
            raise SystemExit(f"tune_decode_gluon_tiles: --cases: {case!r} is not an FP8 block-scaled or bf16 case of "
                             f"bench_fused_moe.CASES ({', '.join(gluon_cases)})")
    deadline = time.time() + 60 * args.minutes
    log = bfm.jsonl_log(args.out, "tune_decode_gluon_tiles.jsonl")
    l2_bytes = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 60 << 20)
    lines = ["| case | path | M | shipped | fastest pair | GLUON_TILES' | gain % (worst round) | err |",
             "|---|---|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    rows: list[TunedRow] = []
    for case in args.cases.split(","):
        layer = tmd.Layer(bfm.CASES[case], l2_bytes)
        for M in ms:
            if time.time() > deadline:
                print(f"# --minutes spent: {case} M >= {M} not tuned", flush=True)
                break
            tuned = tune_m(layer, M, gate_ups, downs, args.rounds, log, args.against_chain, args.passes)
            if tuned is not None:
                rows.append(tuned[0])
                lines.append(tuned[1])
                print(tuned[1], flush=True)
        del layer
        torch.cuda.empty_cache()
    base = {path: _tile_pair(moe_decode.GLUON_TILES[path]) for path in GLUON_PATHS}
    fp8_rows, bf16_rows = [r for r in rows if not r.bf16], [r for r in rows if r.bf16]
    tables, changed = [], []
    if fp8_rows or not bf16_rows:
        gpu = moe_decode.gpu_name(torch.device("cuda", torch.cuda.current_device()))
        if gpu == moe_decode.GLUON_TABLES_GPU:
            tiles_at, tokens, fp8_changed = proposal(fp8_rows, moe_decode.GLUON_TILES_AT,
                                                     moe_decode.GLUON_FP8_TOKENS, base, args.min_gain)
            tables += [f"GLUON_TILES_AT = {tiles_at!r}"]
        else:
            # Another GPU: its own entry of GLUON_TILES_ON_GPU (GLUON_FP8_TOKENS stays the H200's: shown, not kept).
            tiles_at, tokens, fp8_changed = proposal(fp8_rows, moe_decode.GLUON_TILES_ON_GPU.get(gpu, {}),
                                                     moe_decode.GLUON_FP8_TOKENS, None, args.min_gain)
            tables += [f"GLUON_TILES_ON_GPU[{gpu!r}] = {tiles_at!r}"]
        tables += [f"GLUON_FP8_TOKENS = {tokens!r}"]
        changed += fp8_changed
    if bf16_rows:
        tiles_at, tokens, bf16_changed = proposal(bf16_rows, moe_decode.GLUON_BF16_TILES_AT,
                                                  moe_decode.GLUON_BF16_TOKENS, base, args.min_gain,
                                                  tiles_by_size=False)
        tables += [f"GLUON_BF16_TILES_AT = {tiles_at!r}", f"GLUON_BF16_TOKENS = {tokens!r}"]
        changed += bf16_changed
    summary = [f"# {len(changed)} of {len(rows)} token counts beat the shipped choice by more than {args.min_gain}% "
               f"in every round: {', '.join(f'{r.case} M = {r.M}' for r in changed) or 'none'}", *tables]
    print("\n".join(summary), flush=True)
    (Path(args.out) / "tune_decode_gluon_tiles.md").write_text("\n".join(lines + [""] + summary) + "\n")


if __name__ == "__main__":
    main()
