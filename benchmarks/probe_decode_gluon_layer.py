"""H200 probe (issue #16, seventeenth session): the FP8 block-scaled decode layer with its two GEMMs in Gluon.

``moe_decode_gluon``'s kernel runs the decode layer's gate_up and down with each K step's wgmma left in
flight while the next step's weights land (the sixteenth session's bare stream measured it 2-12% faster
than ``tl.dot``'s per-step wait); ``moe_decode.GLUON_FP8_GEMMS`` says where ("measured": at the token
counts of ``GLUON_FP8_TOKENS``). This probe times, side by side in one run on bench_moe_layer's inputs
and timer: the shipped layer (``path="auto"``), the same with tl's GEMMs everywhere
(``GLUON_FP8_GEMMS="never"`` and, bf16 being on Gluon too since the twenty-sixth session,
``GLUON_BF16_GEMMS="never"``), the pairs or grouped path on Gluon at every M with the tiles of
``--gluon-tiles``, and with ``--vllm-file`` vLLM's two GEMMs alone (the issue's bar). Every output is
checked against the fp32 reference (activations quantized as the kernels do); then each launch alone.

Calls 1-3 of the seventeenth session ran earlier versions (the variants then: ``grouped, tl`` instead of
``auto, tl GEMMs``, tiles with ``+ahead`` for what is now the default and ``+route`` for a removed
switch); benchmarks/results/moe_layer.md has their tables.

    PYTHONPATH=$PWD python3 benchmarks/probe_decode_gluon_layer.py --vllm-file .vendor/vllm_fused_moe.py \\
        --vllm-configs .vendor/configs --out $OUT
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_fused_moe as bfm
import tune_moe_decode as tmd
from tune_decode_gluon_tiles import parse_tiles

from jitguard.kernels import moe_decode
from jitguard.kernels.moe_decode_gluon import GluonTile

ROUNDS = 2


def _split_outside_brackets(text: str, separator: str) -> list[str]:
    """``text`` split at each ``separator`` outside (), [] and {}, so that a switch's value may be a
    table (``+GLUON_TILES_AT={'small': {...}, ...}``)."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        depth += (char in "([{") - (char in ")]}")
        if char == separator and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    parts.append(text[start:])
    return parts


def gluon_variants(spec: str) -> list[tuple[str, str, dict]]:
    """``--gluon-tiles``: comma-separated ``path:tiles[+wait][+SWITCH=value]``, path ``pairs`` or ``grouped``
    (or ``auto:default+SWITCH=value``: the shipped choice with that switch; a value may be a table: commas
    and pluses inside brackets do not split; ``[label]`` before an item names its column), tiles
    ``default`` (GLUON_TILES') or ``gate_up_out_n x stages / down_out_n x stages`` (e.g. 32x6/128x3),
    ``+wait``: GLUON_DOWN_WEIGHTS_BEFORE_WAIT off, ``+SWITCH=value``: that ``moe_decode`` switch (a Python
    literal); each the Gluon GEMMs at every M ("always") as (label, path, switches). An empty spec adds none."""
    variants = []
    for item in _split_outside_brackets(spec, ","):
        if not item:  # "" (or a stray comma): no variant, the shipped columns alone
            continue
        label = None
        if item.startswith("[") and "]" in item:  # "[label]" names the column in place of its switches
            label, item = item[1:].split("]", 1)
        item, *suffixes = _split_outside_brackets(item, "+")
        settings = dict(x.split("=", 1) for x in suffixes if "=" in x)
        suffixes = [x for x in suffixes if "=" not in x]
        unknown = [x for x in suffixes if x != "wait"]
        unknown += [name for name in settings if not hasattr(moe_decode, name)]
        if unknown:
            raise SystemExit(f"probe_decode_gluon_layer: --gluon-tiles: unknown suffix {unknown} in {item!r}")
        wait = "wait" in suffixes
        set_values = {name: ast.literal_eval(value) for name, value in settings.items()}
        set_label = (f", {label}" if label is not None
                     else "".join(f", {name}={value}" for name, value in settings.items()))
        path, _, tiles_spec = item.partition(":")
        if path == "auto":
            # The shipped choice ("measured") with only the given switches changed.
            variants.append(("shipped" + set_label, "auto", set_values))
            continue
        switches: dict = {"GLUON_FP8_GEMMS": "always", "GLUON_DOWN_WEIGHTS_BEFORE_WAIT": not wait}
        if tiles_spec != "default":
            halves = tiles_spec.split("/")
            if len(halves) != 2:
                raise SystemExit(f"probe_decode_gluon_layer: --gluon-tiles: {tiles_spec!r} is not "
                                 "GATE_UPxSTAGES/DOWNxSTAGES (e.g. 32x6/128x3)")
            up, down = (GluonTile(*parse_tiles(half, "--gluon-tiles")[0]) for half in halves)
            # The given tiles at every token count on every GPU (before the thirty-fifth session, call 8, a GPU's own
            # GLUON_TILES_ON_GPU entries still took the points they list here).
            switches.update(tmd.fp8_gluon_tiles_everywhere({"pairs": (up, down), "grouped": (up, down)}))
        switches.update(set_values)
        variants.append((f"{path}, gluon {tiles_spec}" + (", down waits first" if wait else "") + set_label, path,
                         switches))
    return variants


def probe(layer: tmd.Layer, M: int, log, variants, vllm, configs_dir) -> str:
    x, logits = tmd.inputs(layer, M)
    ref = tmd.reference(layer, x, logits)
    out = torch.empty_like(x)
    plans, errs, failed = {}, {}, {}
    for label, path, switches in variants:
        try:
            with tmd.switched(switches):
                plans[label] = layer.plans(x, logits, out, path, None)
            errs[label] = tmd.run_error(layer, plans[label], out, ref)
        except Exception as exc:  # a variant that does not compile (a ptxas crash) is reported, the rest timed
            plans.pop(label, None)
            failed[label] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:120]}"
            print(f"probe_decode_gluon_layer: {layer.name} M = {M}: {label}: {failed[label]}", flush=True)
    times, stages, (vg, vg1, vg2) = tmd.time_beside_vllm(layer, M, x, logits, plans, vllm, configs_dir, ROUNDS)
    log({"case": layer.name, "M": M, "us": times, "err": errs, "stages": stages, "vllm_gemms_us": [vg, vg1, vg2],
         "paths": {label: plans[label][0].path for label in plans}, "failed": failed})
    cells = tmd.variant_cells([label for label, *_ in variants], times, stages, vg if vllm else None, "failed")
    return (f"| {layer.name} | {M} | " + " | ".join(cells) + f" | {vg:.1f} ({vg1:.1f} + {vg2:.1f}) | "
            + " ".join(f"{errs[label]:.1e}" if label in plans else "-" for label, *_ in variants) + " |")


def main() -> None:
    p = tmd.probe_parser(__doc__, "deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block", "1,2,4,8", vllm=True)
    p.add_argument("--gluon-tiles", default="pairs:default,grouped:default",
                   help="comma-separated path:tiles[+wait][+SWITCH=value] (see gluon_variants)")
    args = p.parse_args()
    variants = [("shipped", "auto", {}),
                ("auto, tl GEMMs", "auto", {"GLUON_FP8_GEMMS": "never", "GLUON_BF16_GEMMS": "never"})]
    variants += gluon_variants(args.gluon_tiles)
    vllm = bfm.load_vllm_kernel(args.vllm_file) if args.vllm_file else None
    labels = [label for label, *_ in variants]
    header = tmd.probe_header("us per layer, round 1 / round 2 (round 2 in reverse order; in brackets: the mean over "
                              "vLLM's two GEMMs alone); then each launch alone in order; err against the fp32 "
                              "reference", [*labels, *(f"{label}, launches alone" for label in labels),
                                            "vLLM GEMMs (gate_up + down)", "err"])
    tmd.probe_each_case_and_m(args, "probe_decode_gluon_layer", header,
                              lambda layer, M, log: probe(layer, M, log, variants, vllm, args.vllm_configs))


if __name__ == "__main__":
    main()
