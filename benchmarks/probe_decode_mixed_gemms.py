"""GPU probe (issue #16, thirty-fourth session): tl's gate_up GEMM before the Gluon down GEMM on the pairs path.

On an H100 (thirty-fourth session, call 2, benchmarks/results/moe_layer.md) DeepSeek-V3-TP2 FP8-block's pairs path
has the faster gate_up on tl (``moe_decode_gemm_kernel``: M = 1 45.5 us alone against Gluon's 47.4, M = 2 84.6
against 92.1) and the faster down on Gluon (21.3 against 26.0, 41.5 against 46.0); the shipped layer (both on
Gluon) is behind vLLM's GEMMs alone at M = 2. This probe times, side by side on bench_moe_layer's inputs and timer,
the pairs path four ways: both GEMMs on Gluon (shipped form, the intermediate quantized by down), both on Gluon
with the intermediate quantized by gate_up's writers ("previous"), both on tl, and "mixed": the Gluon plan's x
launch (routing every token, x as e4m3), tl's gate_up, the Gluon down and its top-k sum launch. tl's gate_up on
block scales writes the intermediate in the layout the Gluon down reads in the previous form (e4m3 with one
scale a 128-column group, ``inter_q`` / ``a2_amax``), and its bf16 rows unless it quantizes whole groups from
registers; the mixed variants take whichever the tl plan writes. In the mixed layer tl's gate_up waits for the x
launch before it lets down start (down reads the routing before its own wait), and routes its pairs again as it
always does (the same softmax top-k: the same values). Every output is checked against the fp32 reference.

    PYTHONPATH=$PWD python3 benchmarks/probe_decode_mixed_gemms.py --vllm-file .vendor/vllm_fused_moe.py \\
        --vllm-configs .vendor/configs --cases deepseek-v3-tp2-fp8-block --ms 1,2,4 --out $OUT
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_fused_moe as bfm
import tune_moe_decode as tmd

from jitguard.kernels import moe_decode

ROUNDS = 2
# The table's columns; "mixed, by down" only where tl's gate_up stores the bf16 rows.
LABELS = ["shipped", "gluon", "gluon, previous", "tl", "mixed, previous", "mixed, by down"]


def _mixed(tl_plan, gluon_plan):
    """The Gluon plan's launches with tl's gate_up in place of Gluon's: x launch, tl gate_up (waiting for the x
    launch before it lets down start), Gluon down, top-k sum."""
    names = [name for name, _ in gluon_plan.launches]
    tl_names = [name for name, _ in tl_plan.launches]
    if len(names) != 4 or names[1:] != ["gate_up", "down", "reduce"]:
        raise ValueError(f"unexpected Gluon launches {names}")
    gate_up = dict(tl_plan.launches)["gate_up"] if "gate_up" in tl_names else None
    if gate_up is None:
        raise ValueError(f"unexpected tl launches {tl_names}")
    waited = functools.partial(gate_up.func, *gate_up.args, **{**gate_up.keywords,
                                                               "WAIT_PRIOR": moe_decode._WAIT_BEFORE_DEPENDENTS})
    launches = tuple((name, waited if name == "gate_up" else launch) for name, launch in gluon_plan.launches)
    return dataclasses.replace(gluon_plan, launches=launches, gemms="mixed")


def _tl_writes_bf16_rows(tl_plan) -> bool:
    """Whether tl's gate_up stores the intermediate's bf16 rows (not when it quantizes whole groups from
    registers: QUANT_OUT with 128 output columns)."""
    keywords = dict(tl_plan.launches)["gate_up"].keywords
    return not (keywords.get("QUANT_OUT") and keywords["BLOCK_N"] // 2 == 128)


def probe(layer, M, log, vllm, configs_dir) -> str:
    x, logits = tmd.inputs(layer, M)
    ref = tmd.reference(layer, x, logits)
    out = torch.empty_like(x)
    gluon = {"GLUON_FP8_GEMMS": "always"}
    built = {}
    for label, switches in (("gluon", gluon),
                            ("gluon, previous", {**gluon, "GLUON_INTER_QUANTIZED_BY_DOWN": False}),
                            ("tl", {"GLUON_FP8_GEMMS": "never"})):
        with tmd.switched(switches):
            built[label] = layer.plans(x, logits, out, "pairs", None)
    shipped = layer.plans(x, logits, out, "auto", None)
    plans = {"shipped": shipped, "gluon": built["gluon"], "gluon, previous": built["gluon, previous"],
             "tl": built["tl"]}
    plans["mixed, previous"] = [_mixed(t, g) for t, g in zip(built["tl"], built["gluon, previous"])]
    if _tl_writes_bf16_rows(built["tl"][0]):
        plans["mixed, by down"] = [_mixed(t, g) for t, g in zip(built["tl"], built["gluon"])]
    errs = {label: tmd.run_error(layer, plans[label], out, ref) for label in plans}
    times, stages, (vg, vg1, vg2) = tmd.time_beside_vllm(layer, M, x, logits, plans, vllm, configs_dir, ROUNDS)
    log({"case": layer.name, "M": M, "us": times, "err": errs, "stages": stages, "vllm_gemms_us": [vg, vg1, vg2],
         "shipped_path": shipped[0].path, "shipped_gemms": shipped[0].gemms})
    cells = tmd.variant_cells(LABELS, times, stages, vg if vllm else None, "-")
    return (f"| {layer.name} | {M} | {shipped[0].path}, {shipped[0].gemms} | " + " | ".join(cells)
            + f" | {vg:.1f} ({vg1:.1f} + {vg2:.1f}) | "
            + " ".join(f"{errs[label]:.1e}" if label in plans else "-" for label in LABELS) + " |")


def main() -> None:
    p = tmd.probe_parser(__doc__, "deepseek-v3-tp2-fp8-block", "1,2,4", vllm=True)
    args = p.parse_args()
    vllm = bfm.load_vllm_kernel(args.vllm_file) if args.vllm_file else None
    header = tmd.probe_header("us per layer, round 1 / round 2 (round 2 in reverse order; in brackets: the mean over "
                              "vLLM's two GEMMs alone); then each launch alone in order; err against the fp32 "
                              "reference; every variant but shipped on the pairs path",
                              ["shipped path, GEMMs", *LABELS, *(f"{label}, launches alone" for label in LABELS),
                               "vLLM GEMMs (gate_up + down)", "err"])
    tmd.probe_each_case_and_m(args, "probe_decode_mixed_gemms", header,
                              lambda layer, M, log: probe(layer, M, log, vllm, args.vllm_configs))


if __name__ == "__main__":
    main()
