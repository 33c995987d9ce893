"""H200 benchmark of the whole decode MoE layer (router logits -> output) against its byte floor.

For each shape and M in {1, 2, 4, 8, 16, 32, 64}, these implementations of the same layer
(softmax top-k routing with renormalisation, both GEMMs, SiLU*mul, weighted top-k sum), each
captured in a CUDA graph over rotated layer copies (L2 defeated: the experts an M=1 call reads
total >= 4x L2), median of >= 100 replays:

- ``decode``: ``jitguard.kernels.moe_decode.fused_moe_decode`` on its automatic path, and each of
  its paths forced: ``pairs`` (two launches; bf16, FP8 block) and ``grouped`` (three), the latter also
  with programmatic dependent launch off;
- ``unfused``: our own chain, ``softmax_topk`` + ``fused_moe`` (alignment, quantization, two
  GEMMs and the reduce as separate launches);
- ``vllm``: vLLM's ``fused_moe_kernel`` (loaded at run time from the file ``--vllm-file``, with its
  H200-tuned configs) for both GEMMs, glue in torch (softmax, topk, renormalise, silu*mul, sum),
  alignment by our Triton ``moe_align_block_size`` and FP8 activations by our ``quantize_fp8``
  (upstream uses CUDA ops there, with fewer launches than this glue);
- ``vllm GEMMs``: the two vLLM GEMM launches alone on prepared inputs: a lower bound for any chain
  built around upstream's kernel.

Also timed: each launch of each path alone (where its time goes).

Byte floor: the active experts' weights (and scales) of both GEMMs plus x, the logits and the
output, over the read-only bandwidth measured in the same run. Correctness in the same run: each
output against an fp32 torch reference, the decode routing against the stable-sort reference
(and how often CUDA ``torch.topk`` agrees with it on tied logits), and the decode graph replayed
three times into a NaN-filled output.

    python benchmarks/bench_moe_layer.py --vllm-file .vendor/vllm_fused_moe.py \\
        --vllm-configs .vendor/configs --out moe_layer.md

``--workspace-ratio`` times instead ``fused_moe_from_logits`` and ``fused_moe_decode`` as the README calls them
(no ``workspace=``) beside the same calls with a workspace made for the layer, in CUDA graphs and eagerly, on
Qwen3-30B bf16 and FP8 and DeepSeek-V3-TP2 FP8 at 1 and 2 tokens, and prints the ratios:

    python benchmarks/bench_moe_layer.py --workspace-ratio --out moe_workspace.md

Reuses bench_fused_moe.py's vLLM loader, graph timer, bandwidth probes and weight generator.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import sys
import time
import traceback
from pathlib import Path

import torch
import triton

sys.path.insert(0, str(Path(__file__).resolve().parent))
# Importing it also makes jitguard.kernels importable from a checkout (the GPU host has no install).
import bench_fused_moe as bfm

from jitguard.kernels import moe_align, moe_configs, moe_decode, moe_quant, moe_routing
from jitguard.kernels import moe_chain as fm

# (name, E, top_k, H, I, FP8 scheme or None): the fused-MoE issue's three shapes first.
CASES = {name: bfm.CASES[name] for name in
         ("qwen3-30b-bf16", "mixtral-bf16", "deepseek-v3-tp2-fp8-block", "qwen3-30b-fp8-block", "mixtral-fp8-tensor")}
DEFAULT_CASES = "qwen3-30b-bf16,mixtral-bf16,deepseek-v3-tp2-fp8-block"
DEFAULT_MS = "1,2,4,8,16,32,64"
RENORMALIZE = True


def fp8_kwargs(scheme: str | None, s13, s2) -> dict:
    if scheme is None:
        return {}
    kw = {"use_fp8_w8a8": True, "w1_scale": s13, "w2_scale": s2}
    if scheme == "channel":
        kw["per_channel_quant"] = True
    elif scheme == "block":
        kw["block_shape"] = [128, 128]
    return kw


def count_launches(fn) -> int | None:
    """Kernels and memsets one eager call puts on the GPU (torch profiler); None if unavailable."""
    try:
        from torch.profiler import ProfilerActivity, profile

        fn()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn()
            torch.cuda.synchronize()
        # Device-side events only: kernels, memsets and copies (runtime API calls are host events).
        return sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
    except Exception as exc:  # the count is informative only
        print(f"# launch count unavailable: {exc!r}", flush=True)
        return None


def rel(out: torch.Tensor, ref: torch.Tensor) -> float:
    if not torch.isfinite(out).all():
        return math.inf
    return float((out.float() - ref).norm() / ref.norm())


def vllm_chain(vllm, vcfg, x, logits, w13, w2, s13, s2, k, E, I, scheme, bufs):
    """Upstream's GEMM kernel with torch glue; writes the layer output into bufs['out']."""
    act_mode = {"tensor": "tensor", "channel": "row", "block": "group"}.get(scheme)
    probs = torch.softmax(logits.float(), dim=-1)
    tw, ti = torch.topk(probs, k, dim=-1)
    tw = tw / tw.sum(dim=-1, keepdim=True) if RENORMALIZE else tw
    routing = moe_align.moe_align_block_size(ti.to(torch.int32), E, vcfg["BLOCK_SIZE_M"])
    a1, a1s = moe_quant.quantize_fp8(x, act_mode) if scheme else (x, None)
    bfm.launch_vllm_gemm(vllm, a1, w13, bufs["v1"], a1s, s13, None, routing, k, vcfg, scheme, False)
    act = (torch.nn.functional.silu(bufs["v1"][:, :I]) * bufs["v1"][:, I:]).to(x.dtype)
    a2, a2s = moe_quant.quantize_fp8(act, act_mode) if scheme else (act, None)
    bfm.launch_vllm_gemm(vllm, a2, w2, bufs["v2"], a2s, s2, tw.reshape(-1).contiguous(), routing, 1, vcfg, scheme, True)
    torch.sum(bufs["v2"].view(x.shape[0], k, -1), dim=1, out=bufs["out"])
    return bufs["out"]


def vllm_gemms_step(vllm, vcfg, layers, x, ref_w, ref_ids, k, E, I, scheme, inter, v1, v2,
                    gemms=("gate_up", "down")):
    """vLLM's two GEMM launches alone on inputs prepared here once ("vLLM GEMMs only", as in
    bench_fused_moe): a ``step(layer)`` for ``time_graph``. ``inter`` is the activation GEMM2 reads
    (quantized here for FP8); ``v1`` / ``v2`` receive the two GEMMs' outputs; ``gemms`` picks
    which of the two launches the step runs (one alone, to compare stage by stage)."""
    act_mode = {"tensor": "tensor", "channel": "row", "block": "group"}.get(scheme)
    routing = moe_align.moe_align_block_size(ref_ids, E, vcfg["BLOCK_SIZE_M"])
    a1, a1s = moe_quant.quantize_fp8(x, act_mode) if scheme else (x, None)
    a2, a2s = moe_quant.quantize_fp8(inter, act_mode) if scheme else (inter, None)
    flat_w = ref_w.reshape(-1).contiguous()

    def step(layer):
        lw13, lw2, ls13, ls2 = layers[layer]
        if "gate_up" in gemms:
            bfm.launch_vllm_gemm(vllm, a1, lw13, v1, a1s, ls13, None, routing, k, vcfg, scheme, False)
        if "down" in gemms:
            bfm.launch_vllm_gemm(vllm, a2, lw2, v2, a2s, ls2, flat_w, routing, 1, vcfg, scheme, True)

    return step


def gemm_bytes(H: int, I: int, scheme: str | None) -> tuple[int, int]:
    """One expert's bytes read by gate_up and by down: weights (fp8 with a scheme, else bf16) and their scales."""
    wbytes = 1 if scheme is not None else 2
    scale_bytes13 = scale_bytes2 = 0
    if scheme == "block":
        scale_bytes13 = 4 * triton.cdiv(2 * I, 128) * triton.cdiv(H, 128)
        scale_bytes2 = 4 * triton.cdiv(H, 128) * triton.cdiv(I, 128)
    elif scheme == "channel":
        scale_bytes13, scale_bytes2 = 4 * 2 * I, 4 * H
    return 2 * I * H * wbytes + scale_bytes13, H * I * wbytes + scale_bytes2


def floor_bytes(e_act: int, expert_bytes: int, M: int, H: int, E: int) -> int:
    """The layer's byte floor: the active experts' weights and scales, x in and the output (bf16), the logits."""
    return e_act * expert_bytes + 2 * M * H * 2 + M * E * 4


def layer_inputs(M: int, H: int, E: int) -> tuple[torch.Tensor, torch.Tensor, torch.Generator]:
    """The bench's x and router logits at M (seeded by M), and the generator for the case's further draws."""
    g = torch.Generator(device="cuda").manual_seed(M)
    x = torch.randn(M, H, device="cuda", dtype=torch.bfloat16, generator=g)
    logits = torch.randn(M, E, device="cuda", dtype=torch.float32, generator=g)
    return x, logits, g


def run_case(case, ms, vllm, configs_dir, bw, replays, l2_bytes, log):
    name, E, k, H, I, scheme = case
    fp8 = scheme is not None
    wbytes = 1 if fp8 else 2
    expert_bytes = sum(gemm_bytes(H, I, scheme))
    n_layers = max(1, -(-4 * l2_bytes // (k * expert_bytes)))
    layers = [bfm.make_layer(E, H, I, scheme, 1234 + i) for i in range(n_layers)]
    ws = moe_decode.MoeDecodeWorkspace.for_layer(layers[0][0], layers[0][1], k, torch.bfloat16)
    rows = []
    for M in ms:
        x, logits, g = layer_inputs(M, H, E)
        w13, w2, s13, s2 = layers[0]
        fkw = fp8_kwargs(scheme, s13, s2)
        row = {"case": name, "M": M, "n_layers": n_layers}

        # ---- correctness, every implementation, same inputs ----
        ref_w, ref_ids = moe_routing.softmax_topk_reference(logits, k, RENORMALIZE)
        e_act = int(torch.unique(ref_ids).numel())
        row["E_act"] = e_act
        ref = moe_decode.fused_moe_decode_reference(
            x, logits, w13, w2, k, renormalize=RENORMALIZE, **({**fkw, "quantize_activations": True} if fp8 else {}))
        out = moe_decode.fused_moe_decode(x, logits, w13, w2, k, renormalize=RENORMALIZE, workspace=ws, **fkw)
        row["err_decode"] = rel(out, ref)
        row["auto_path"] = moe_decode.choose_decode_path(M, E, k, fp8, scheme == "block",
                                                         moe_configs.expert_weight_bytes(H, I, wbytes), H, I,
                                                         moe_decode.gpu_name(x.device))
        paths = ["pairs", "grouped"] if scheme in (None, "block") else ["grouped"]
        row["routing_equal"] = True
        for path in paths:
            ws.topk_ids.fill_(-1)
            out = moe_decode.fused_moe_decode(x, logits, w13, w2, k, renormalize=RENORMALIZE, workspace=ws,
                                              path=path, **fkw)
            row[f"err_{path}"] = rel(out, ref)
            row["routing_equal"] &= bool(torch.equal(ws.routing(M)[1], ref_ids))
        tied = (torch.randint(0, 3, (M, E), device="cuda", generator=g).float())
        _, tied_ids = moe_routing.softmax_topk(tied, k, RENORMALIZE)
        row["tied_routing_equal_ref"] = bool(torch.equal(tied_ids, moe_routing.softmax_topk_reference(tied, k)[1]))
        row["tied_rows_torch_topk_agrees"] = float(
            (torch.topk(torch.softmax(tied, -1), k).indices.to(torch.int32) == tied_ids).all(dim=1).float().mean())
        un_out = torch.empty_like(x)

        def unfused(layer, out_buf=un_out):
            lw13, lw2, ls13, ls2 = layers[layer]
            tw, ti = moe_routing.softmax_topk(logits, k, RENORMALIZE)
            return fm.fused_moe(x, lw13, lw2, tw, ti, out=out_buf, **fp8_kwargs(scheme, ls13, ls2))

        row["err_unfused"] = rel(unfused(0), ref)

        # The decode graph replayed into a NaN-filled output: the counters reset themselves.
        dec_out = torch.empty_like(x)

        def decode(layer):
            lw13, lw2, ls13, ls2 = layers[layer]
            return moe_decode.fused_moe_decode(x, logits, lw13, lw2, k, renormalize=RENORMALIZE, workspace=ws,
                                               out=dec_out, **fp8_kwargs(scheme, ls13, ls2))

        decode(0)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream), torch.cuda.graph(graph, stream=stream):
            decode(0)
        torch.cuda.current_stream().wait_stream(stream)
        replay_errs = []
        for _ in range(3):
            dec_out.fill_(float("nan"))
            graph.replay()
            torch.cuda.synchronize()
            replay_errs.append(rel(dec_out, ref))
        row["err_decode_graph_replays"] = max(replay_errs)
        del graph

        res = {}
        vcfg = None
        if vllm is not None:
            vcfg, source = bfm.vllm_config(configs_dir, E, I, scheme, M, vllm)
            row["vllm_cfg"] = f"{source} BM{vcfg['BLOCK_SIZE_M']} BN{vcfg['BLOCK_SIZE_N']} BK{vcfg['BLOCK_SIZE_K']}"
            vbufs = {"v1": torch.empty(M * k, 2 * I, device="cuda", dtype=torch.bfloat16),
                     "v2": torch.empty(M * k, H, device="cuda", dtype=torch.bfloat16),
                     "out": torch.empty_like(x)}
            row["err_vllm"] = rel(vllm_chain(vllm, vcfg, x, logits, w13, w2, s13, s2, k, E, I, scheme, vbufs), ref)

            def vstep(layer):
                lw13, lw2, ls13, ls2 = layers[layer]
                vllm_chain(vllm, vcfg, x, logits, lw13, lw2, ls13, ls2, k, E, I, scheme, vbufs)

            inter = (torch.nn.functional.silu(vbufs["v1"][:, :I]) * vbufs["v1"][:, I:]).to(x.dtype)
            vgemms = vllm_gemms_step(vllm, vcfg, layers, x, ref_w, ref_ids, k, E, I, scheme, inter, vbufs["v1"],
                                     vbufs["v2"])

        # ---- timing: every implementation in a CUDA graph over the rotated layers ----
        res["decode"] = bfm.time_graph(decode, n_layers, replays)
        forced = {}
        for path in paths:
            def on_path(layer, path=path):
                lw13, lw2, ls13, ls2 = layers[layer]
                moe_decode.fused_moe_decode(x, logits, lw13, lw2, k, renormalize=RENORMALIZE, workspace=ws,
                                            out=dec_out, path=path, **fp8_kwargs(scheme, ls13, ls2))
            forced[path] = on_path
            res[path] = bfm.time_graph(on_path, n_layers, replays)
        # The grouped path again with programmatic dependent launch off: what PDL is worth.
        real_pdl_supported = moe_decode.pdl_supported
        moe_decode.pdl_supported = lambda: False
        try:
            res["grouped_no_pdl"] = bfm.time_graph(forced["grouped"], n_layers, replays)
        finally:
            moe_decode.pdl_supported = real_pdl_supported
        res["unfused"] = bfm.time_graph(unfused, n_layers, replays)
        if vllm is not None:
            res["vllm"] = bfm.time_graph(vstep, n_layers, replays)
            res["vllm_gemms"] = bfm.time_graph(vgemms, n_layers, replays)
        res["decode_again"] = bfm.time_graph(decode, n_layers, replays)
        # Where the decode time goes: each of its launches alone.
        for path in paths:
            plans = [moe_decode.plan_fused_moe_decode(
                x, logits, layers[i][0], layers[i][1], k, renormalize=RENORMALIZE, workspace=ws, out=dec_out,
                path=path, **fp8_kwargs(scheme, layers[i][2], layers[i][3])) for i in range(n_layers)]
            alone = bfm.time_launches_alone(plans, n_layers, replays)
            for (stage_name, _), us in zip(plans[0].launches, alone, strict=True):
                res[f"stage_{path}_{stage_name}"] = us
        row["launches"] = {"decode": count_launches(lambda: decode(0)), "unfused": count_launches(lambda: unfused(0)),
                           **{path: count_launches(lambda fn=fn: fn(0)) for path, fn in forced.items()}}
        if vllm is not None:
            row["launches"]["vllm"] = count_launches(lambda: vstep(0))

        layer_floor_bytes = floor_bytes(e_act, expert_bytes, M, H, E)
        row["floor_MB"] = layer_floor_bytes / 1e6
        row["floor_us"] = layer_floor_bytes / bw[1] / 1e3
        for key, us in res.items():
            row[f"{key}_us"] = us
            row[f"{key}_x_floor"] = us / row["floor_us"]
        rows.append(row)
        log(json.dumps(row))
        print(f"{name} M={M} floor={row['floor_us']:.1f}us " + " ".join(f"{key}={v:.1f}" for key, v in res.items())
              + f" err={row['err_decode']:.1e} routing_equal={row['routing_equal']}", flush=True)
    return rows


WORKSPACE_CASES = "qwen3-30b-bf16,qwen3-30b-fp8-block,deepseek-v3-tp2-fp8-block"
WORKSPACE_MS = "1,2"
EAGER_CALLS = 200


def time_eager(step, n_layers: int, calls: int = EAGER_CALLS) -> float:
    """Median microseconds per layer-call of ``step(layer)`` run eagerly (host launch costs included), over
    ``calls`` calls timed one by one between CUDA events after a warm-up pass."""
    for layer in range(n_layers):
        step(layer)
    torch.cuda.synchronize()
    times = []
    for i in range(calls):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step(i % n_layers)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000.0)
    return sorted(times)[len(times) // 2]


def workspace_case(case, ms, replays, l2_bytes) -> list[dict]:
    """``fused_moe_from_logits`` and ``fused_moe_decode`` called as the README calls them (no ``workspace=``, no
    ``out=``) against the same calls with a workspace made for the layer, side by side on the same inputs and
    rotated layer copies: CUDA graph replays and eager calls, and the two outputs compared bit for bit."""
    from jitguard.kernels import moe_dispatch

    name, E, k, H, I, scheme = case
    expert_bytes = sum(gemm_bytes(H, I, scheme))
    n_layers = max(1, -(-4 * l2_bytes // (k * expert_bytes)))
    layers = [bfm.make_layer(E, H, I, scheme, 1234 + i) for i in range(n_layers)]
    ws = moe_decode.MoeDecodeWorkspace.for_layer(layers[0][0], layers[0][1], k, torch.bfloat16)
    entries = {"fused_moe_from_logits": moe_dispatch.fused_moe_from_logits,
               "fused_moe_decode": moe_decode.fused_moe_decode}
    rows = []
    for M in ms:
        x, logits, _ = layer_inputs(M, H, E)
        for entry, fn in entries.items():
            def call(layer, workspace=None, fn=fn):
                lw13, lw2, ls13, ls2 = layers[layer]
                extra = {} if workspace is None else {"workspace": workspace}
                return fn(x, logits, lw13, lw2, k, renormalize=RENORMALIZE, **extra, **fp8_kwargs(scheme, ls13, ls2))

            moe_decode.clear_cached_workspaces()
            same = bool(torch.equal(call(0, ws), call(0)))
            with_ws, without = (lambda layer: call(layer, ws)), call
            # Side by side, in alternating order, twice: the mean of each kind's two timings.
            graph = {"with": [], "without": []}
            eager = {"with": [], "without": []}
            for order in (("with", "without"), ("without", "with")):
                for kind in order:
                    step = with_ws if kind == "with" else without
                    graph[kind].append(bfm.time_graph(step, n_layers, replays))
                    eager[kind].append(time_eager(step, n_layers))
            row = {"case": name, "M": M, "entry": entry, "outputs_equal": same,
                   **{f"graph_{kind}_us": sum(v) / len(v) for kind, v in graph.items()},
                   **{f"eager_{kind}_us": sum(v) / len(v) for kind, v in eager.items()}}
            row["graph_ratio"] = row["graph_without_us"] / row["graph_with_us"]
            row["eager_ratio"] = row["eager_without_us"] / row["eager_with_us"]
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def format_workspace_table(rows) -> str:
    lines = [
        "us per layer call; without = as the README calls it (no workspace=, no out=), with = workspace= made for "
        "the layer; ratio = without / with (1.00: as fast)",
        "| case | M | entry point | graph: with | graph: without | ratio | eager: with | eager: without | ratio "
        "| outputs equal |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['case']} | {r['M']} | {r['entry']} | {r['graph_with_us']:.1f} "
                     f"| {r['graph_without_us']:.1f} | {r['graph_ratio']:.3f} | {r['eager_with_us']:.1f} "
                     f"| {r['eager_without_us']:.1f} | {r['eager_ratio']:.3f} | {r['outputs_equal']} |")
    return "\n".join(lines)


def workspace_main(args, header: str, l2: int) -> None:
    """--workspace-ratio: the workspace-free entry points against the same calls with a workspace."""
    rows = []
    for name in args.cases.split(","):
        rows += workspace_case(CASES[name], [int(m) for m in args.ms.split(",")], args.replays, l2)
        gc.collect()
        torch.cuda.empty_cache()
    table = format_workspace_table(rows)
    print(table)
    Path(args.out).write_text(f"{header}\n\nCommand: python {' '.join(sys.argv)}\n\n{table}\n")
    if not all(r["outputs_equal"] for r in rows):
        raise SystemExit("outputs differ between the calls with and without workspace=")


def format_table(rows, bw) -> str:
    lines = [
        f"read-only {bw[1]:.0f} GB/s (floor), copy {bw[0]:.0f} GB/s; us per layer (time / byte floor); "
        "launches per layer in brackets",
        "| case | M | E_act | floor us | decode (path) | decode again | pairs path | grouped path | grouped, no PDL "
        "| unfused ours | vLLM chain | vLLM GEMMs only | stages alone, pairs: gate_up / down "
        "| grouped: route / gate_up / down "
        "| err decode/replay/pairs/grouped/unfused/vllm | routing = ref | tied: ref / torch.topk |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]

    def cell(r, key, launches=None):
        if f"{key}_us" not in r:
            return "-"
        n = r.get("launches", {}).get(launches) if launches else None
        return f"{r[key + '_us']:.1f} ({r[key + '_x_floor']:.2f}x)" + (f" [{n}]" if n is not None else "")

    for r in rows:
        errs = "/".join(f"{r[k]:.1e}" if k in r else "-" for k in (
            "err_decode", "err_decode_graph_replays", "err_pairs", "err_grouped", "err_unfused", "err_vllm"))

        def stages(path, names):
            return " / ".join(f"{r[f'stage_{path}_{st}_us']:.1f}" if f"stage_{path}_{st}_us" in r else "-"
                              for st in names)

        lines.append("| " + " | ".join([
            r["case"], str(r["M"]), str(r["E_act"]), f"{r['floor_us']:.1f}",
            cell(r, "decode", "decode") + f" {r['auto_path']}", cell(r, "decode_again"),
            cell(r, "pairs", "pairs"), cell(r, "grouped", "grouped"), cell(r, "grouped_no_pdl"),
            cell(r, "unfused", "unfused"), cell(r, "vllm", "vllm"), cell(r, "vllm_gemms"),
            stages("pairs", ("gate_up", "down")),
            stages("grouped", ("route", "gate_up", "down")),
            errs, str(r["routing_equal"]),
            f"{r['tied_routing_equal_ref']} / {100 * r['tied_rows_torch_topk_agrees']:.0f}% rows",
        ]) + " |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--vllm-file", help="vLLM's model_executor/layers/fused_moe/fused_moe.py (not in this repo)")
    p.add_argument("--vllm-configs", help="folder with vLLM's H200 fused-MoE config JSON files")
    p.add_argument("--cases", default=DEFAULT_CASES, help=f"comma-separated, from {', '.join(CASES)}")
    p.add_argument("--ms", default=DEFAULT_MS)
    p.add_argument("--replays", type=int, default=100)
    p.add_argument("--out", default="moe_layer.md", help="markdown result file (raw rows go to OUT.json)")
    p.add_argument("--time-budget", type=float, default=1e9, help="start no new case after this many seconds")
    p.add_argument("--workspace-ratio", action="store_true",
                   help="time fused_moe_from_logits / fused_moe_decode without workspace= against with one "
                        f"(default cases {WORKSPACE_CASES}, M {WORKSPACE_MS})")
    args = p.parse_args()
    if args.workspace_ratio:
        args.cases = args.cases if args.cases != DEFAULT_CASES else WORKSPACE_CASES
        args.ms = args.ms if args.ms != DEFAULT_MS else WORKSPACE_MS
    if args.replays < 100:
        p.error("--replays must be >= 100 (median of >= 100 replays)")
    unknown = [c for c in args.cases.split(",") if c not in CASES]
    if unknown:
        p.error(f"unknown case(s) {unknown}; choose from {list(CASES)}")
    ms = [int(m) for m in args.ms.split(",")]
    if any(not 1 <= m <= moe_decode.MAX_DECODE_TOKENS for m in ms):
        p.error(f"--ms values must be in 1..{moe_decode.MAX_DECODE_TOKENS} (the decode path)")
    torch.backends.cuda.matmul.allow_tf32 = False
    vllm = bfm.load_vllm_kernel(args.vllm_file) if args.vllm_file else None
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 60 << 20)
    bw = bfm.measure_bandwidths(args.replays)
    header = (f"# {props.name}, torch {torch.__version__}, triton {triton.__version__}, L2 {l2 >> 20} MiB, "
              f"copy {bw[0]:.0f} GB/s (torch copy_ {bw[2]:.0f}), read {bw[1]:.0f} GB/s")
    print(header, flush=True)
    if args.workspace_ratio:
        workspace_main(args, header, l2)
        return
    all_rows = []
    t0 = time.time()
    out_json = Path(args.out + ".json")
    with open(args.out + ".log", "w") as log_file:
        def log(line):
            log_file.write(line + "\n")
            log_file.flush()
        for name in args.cases.split(","):
            if time.time() - t0 > args.time_budget:
                print(f"# {name} skipped: time budget spent", flush=True)
                continue
            all_rows += bfm_safe_case(CASES[name], ms, vllm, args.vllm_configs, bw, args.replays, l2, log)
            print(f"# {name} done at {time.time() - t0:.0f}s", flush=True)
            out_json.write_text(json.dumps({"gpu": props.name, "torch": torch.__version__, "triton": triton.__version__,
                                            "copy_GBs": bw[0], "read_GBs": bw[1], "rows": all_rows}, indent=1))
    table = format_table(all_rows, bw)
    print(table)
    Path(args.out).write_text(
        f"{header}\n\nCommand: python {' '.join(sys.argv)}\n\n{table}\n")


def bfm_safe_case(case, ms, vllm, configs_dir, bw, replays, l2, log):
    """run_case, keeping the other cases' results if one case fails."""
    try:
        return run_case(case, ms, vllm, configs_dir, bw, replays, l2, log)
    except Exception:
        print(f"# {case[0]} FAILED:", flush=True)
        traceback.print_exc()
        return []
    finally:
        gc.collect()  # the case's layer copies (GBs) go before the next case allocates its own
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
