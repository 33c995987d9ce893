"""H200 benchmark of jitguard's fused-MoE GEMMs against vLLM's Triton kernel and plain torch.

For each shape and token count M: correctness of the whole layer against an fp32 reference, then
each GEMM's time (CUDA graph, L2 defeated by rotating layer copies whose active weights total
>= 4x L2, median of >= 100 replays), weight GB/s and its ratio to the copy and read-only
bandwidths measured in the same run. Side by side: ours with the table's tiles, ours with swap-AB
off (same tiles), vLLM's ``fused_moe_kernel`` (loaded at run time from a file the user supplies,
with its H200-tuned configs, fed the same routing and the same quantized activations), and plain
torch (bf16 only). ``JITGUARD_BENCH_VLLM_CONFIG_GPU=this`` (for every benchmark that times vLLM's kernel) reads
instead the config file vLLM itself would read on this GPU (its name as torch gives it, spaces as underscores),
else vLLM's default config, as vLLM does: on an H100 vLLM 0.33.0 ships no file for some shapes that have an
H200 one.

    python benchmarks/bench_fused_moe.py --vllm-file .vendor/vllm_fused_moe.py \
        --vllm-configs .vendor/configs --out results.json

GEMM1 differs in what it writes: ours writes silu(gate)*up ([pairs, I]), vLLM's writes
gate|up ([pairs, 2I]) and needs a separate activation kernel that is not timed here.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import time
import types
from pathlib import Path

import torch
import triton
import triton.language as tl

ROOT = Path(__file__).resolve().parents[1]


def import_kernels():
    """jitguard.kernels from an install, or straight from this checkout (the GPU host has no install)."""
    try:
        import jitguard.kernels.moe_chain
    except ImportError:
        sys.path.insert(0, str(ROOT))
        import jitguard  # noqa: F401

        spec = importlib.util.spec_from_file_location(
            "jitguard.kernels", ROOT / "kernels" / "__init__.py", submodule_search_locations=[str(ROOT / "kernels")]
        )
        module = importlib.util.module_from_spec(spec)
        sys.modules["jitguard.kernels"] = module
        spec.loader.exec_module(module)
    from jitguard.kernels import moe_align, moe_chain, moe_configs, moe_gemm, moe_quant

    return moe_chain, moe_align, moe_configs, moe_gemm, moe_quant


fm, moe_align, moe_configs, moe_gemm, moe_quant = import_kernels()


# ---- vLLM's kernel, loaded from a user-supplied file with its vllm imports stubbed ---------------

class _Stub:
    """Stands in for any vllm name the file imports; falsy, callable, attribute-transparent."""

    def __getattr__(self, name):
        return _Stub()

    def __call__(self, *args, **kwargs):
        return _Stub()

    def __bool__(self):
        return False

    def __or__(self, other):  # annotations such as `Stub | None` are evaluated at import
        return self

    __ror__ = __or__

    def __getitem__(self, item):
        return self


def load_vllm_kernel(path: str):
    stub_names = [
        "vllm", "vllm.envs", "vllm._custom_ops", "vllm.logger", "vllm.platforms", "vllm.triton_utils",
        "vllm.triton_utils.allocation", "vllm.utils", "vllm.utils.math_utils", "vllm.utils.platform_utils",
        "vllm.utils.torch_utils", "vllm.model_executor", "vllm.model_executor.layers",
        "vllm.model_executor.layers.fused_moe", "vllm.model_executor.layers.fused_moe.modular_kernel",
        "vllm.model_executor.layers.fused_moe.activation", "vllm.model_executor.layers.fused_moe.config",
        "vllm.model_executor.layers.fused_moe.moe_align_block_size", "vllm.model_executor.layers.fused_moe.utils",
    ]
    saved = {n: sys.modules.get(n) for n in stub_names}
    for name in stub_names:
        mod = types.ModuleType(name)
        mod.__getattr__ = lambda attr: _Stub()  # type: ignore[attr-defined]
        sys.modules[name] = mod
    sys.modules["vllm.triton_utils"].tl = tl
    sys.modules["vllm.triton_utils"].triton = triton
    try:
        spec = importlib.util.spec_from_file_location("vllm_fused_moe_under_test", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        for name, old in saved.items():
            if old is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = old
    return module


def vllm_config_gpu() -> str:
    """The GPU whose vLLM config files the benchmarks read: NVIDIA_H200 unless JITGUARD_BENCH_VLLM_CONFIG_GPU says
    another name, or ``this`` (this GPU's name with spaces as underscores, as vLLM names its files)."""
    chosen = os.environ.get("JITGUARD_BENCH_VLLM_CONFIG_GPU", "NVIDIA_H200")
    return torch.cuda.get_device_name().replace(" ", "_") if chosen == "this" else chosen


def vllm_config(configs_dir: str | None, E: int, I: int, scheme: str | None, M: int, vllm) -> tuple[dict, str]:
    dtype = None if scheme is None else "fp8_w8a8"
    block = [128, 128] if scheme == "block" else None
    name = f"E={E},N={I},device_name={vllm_config_gpu()}"
    if dtype:
        name += f",dtype={dtype}"
    if block:
        name += ",block_shape=[128,128]"
    path = Path(configs_dir or "") / f"{name}.json"
    if configs_dir and path.exists():
        table = {int(k): v for k, v in json.loads(path.read_text()).items()}
        cfg = table[min(table, key=lambda m: abs(m - M))]
        return dict(cfg), "tuned"
    return vllm.get_default_config(M, E, I, 0, 8, dtype, block), "default"


def launch_vllm_gemm(vllm, a, w, c, a_scale, w_scale, topk_weights, routing, top_k, cfg, scheme, mul_weight):
    cfg = dict(cfg)
    bm = cfg["BLOCK_SIZE_M"]
    EM = routing.sorted_ids.numel()
    if a.shape[0] < bm:
        EM = min(EM, a.shape[0] * top_k * bm)
    grid = (triton.cdiv(EM, bm) * triton.cdiv(w.shape[1], cfg["BLOCK_SIZE_N"]),)
    block_k = cfg.pop("BLOCK_SIZE_K")
    if scheme == "block":
        block_k = min(block_k, 128)
    cfg.pop("SPLIT_K", None)
    fp8 = scheme is not None
    swap = fp8 and bm < 64 and cfg["BLOCK_SIZE_N"] >= 64  # upstream's enable_swap_ab on sm_90
    if a_scale is not None and a_scale.dim() == 1 and scheme == "channel":
        a_scale = a_scale[:, None]
    vllm.fused_moe_kernel[grid](
        a, w, c, None, a_scale, w_scale, topk_weights, routing.sorted_ids, routing.expert_ids,
        routing.num_padded, w.shape[1], w.shape[2], EM, routing.num_pairs,
        a.stride(0), a.stride(1), w.stride(0), w.stride(2), w.stride(1), c.stride(0), c.stride(1),
        a_scale.stride(0) if a_scale is not None and a_scale.dim() == 2 else 0,
        a_scale.stride(1) if a_scale is not None and a_scale.dim() == 2 else 0,
        w_scale.stride(0) if w_scale is not None else 0,
        w_scale.stride(2) if w_scale is not None and w_scale.dim() == 3 else 0,
        w_scale.stride(1) if w_scale is not None and w_scale.dim() >= 2 and w_scale.size(1) > 1 else 0,
        0, 0,
        128 if scheme == "block" else 0, 128 if scheme == "block" else 0,
        naive_block_assignment=False, MUL_ROUTED_WEIGHT=mul_weight, top_k=top_k,
        compute_type=tl.bfloat16, use_fp8_w8a8=fp8, use_int8_w8a8=False, use_int8_w8a16=False,
        per_channel_quant=scheme == "channel", HAS_BIAS=False, BLOCK_SIZE_K=block_k, SWAP_AB=swap,
        SPLIT_K=1, USE_TD=False, **cfg,
    )


# ---- measurement ---------------------------------------------------------------------------------

def jsonl_log(out_dir: str | Path, name: str):
    """A `log(record)` that appends each dict as one flushed JSON line to OUT_DIR/NAME (made if missing)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stream = (out / name).open("w")

    def log(record: dict) -> None:
        stream.write(json.dumps(record) + "\n")
        stream.flush()

    return log


_last_timing_end = 0.0


# A graph of short launches is bound by its replay, not by the GPU: launches timed alone are captured
# this many times at least (2026-12-02: DeepSeek's route launch, two per graph, read 3-34 us alone
# where it takes about 3 in the layer).
MIN_LAUNCHES_ALONE = 32


def alone_passes(n_layers: int) -> int:
    """Passes over the layer copies that give a graph of one launch per step MIN_LAUNCHES_ALONE launches."""
    return max(1, -(-MIN_LAUNCHES_ALONE // n_layers))


def time_launches_alone(plans, n_layers: int, replays: int, stages=None) -> list[float]:
    """Each launch of a decode layer's plan alone (``plans[layer]``: a ``DecodePlan`` per layer copy), us per layer-
    call, in launch order (only the launch indices in ``stages`` where given, in its order). Every launch but the
    last runs once first, once per workspace (layer copies sharing one share their inputs), so each finds what a
    call's earlier launches leave (with ``moe_decode.takes_tiles_from_counts`` the GEMMs read the route launch's
    per-expert counts, which the last launch zeroes; a second route launch would add to them); the first launch is
    timed last (replayed alone it leaves its counters off zero) and the whole layer runs once more after it, leaving
    the workspace as a call does."""
    launches = [plan.launches for plan in plans[:n_layers]]
    prepared = set()
    for plan in plans[:n_layers]:
        if id(plan.workspace) in prepared:
            continue
        prepared.add(id(plan.workspace))
        for _, launch in plan.launches[:-1]:
            launch()
    count = len(launches[0])
    wanted = list(range(count)) if stages is None else list(stages)
    times = {}
    for stage in [s for s in [*range(1, count), 0] if s in wanted]:
        times[stage] = time_graph(lambda layer, stage=stage: launches[layer][stage][1](), n_layers, replays,
                                  alone_passes(n_layers))
    for layer_launches in launches:
        for _, launch in layer_launches:
            launch()
    return [times[stage] for stage in wanted]


def time_graph(step, n_layers: int, replays: int, passes: int = 1) -> float:
    """Median microseconds per layer-call of ``step(layer)`` captured ``passes`` x n_layers times in one graph."""
    for layer in range(n_layers):
        step(layer)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        with torch.cuda.graph(graph, stream=stream):
            for _ in range(passes):
                for layer in range(n_layers):
                    step(layer)
    torch.cuda.current_stream().wait_stream(stream)
    # Warm up for >= 30 ms of replays so clocks have ramped before timing (the first timed
    # graph of a case otherwise read up to 10% slow), and for 500 ms when the GPU sat idle for
    # over a second before (compiles, a new case's weights): on 2026-12-01, in five of six calls,
    # the first DeepSeek layer timed after compiling read 5-10% slow with 30 ms (normal again after).
    global _last_timing_end
    warmup_ms = 500 if time.monotonic() - _last_timing_end > 1.0 else 30
    probe_start, probe_end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    probe_start.record()
    for _ in range(3):
        graph.replay()
    probe_end.record()
    torch.cuda.synchronize()
    per_replay_ms = max(probe_start.elapsed_time(probe_end) / 3, 1e-3)
    for _ in range(min(20000, int(warmup_ms / per_replay_ms) + 1)):
        graph.replay()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(replays)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(replays)]
    for s, e in zip(starts, ends):
        s.record()
        graph.replay()
        e.record()
    torch.cuda.synchronize()
    ms = statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))
    del graph
    _last_timing_end = time.monotonic()
    return ms * 1000.0 / (n_layers * passes)


@triton.jit
def _read_only_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, ITERS: tl.constexpr):
    pid = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    base = pid.to(tl.int64) * BLOCK * ITERS
    for i in range(ITERS):
        offs = base + i * BLOCK + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
    tl.store(out_ptr + pid, tl.sum(acc, 0))


@triton.jit
def _copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=offs < n), mask=offs < n)


def measure_bandwidths(replays: int) -> tuple[float, float, float]:
    """(copy GB/s counting read + write: best of torch and Triton, read-only GB/s, torch copy GB/s), 2 GiB buffers."""
    n = 1 << 30
    src = torch.randn(n, dtype=torch.bfloat16, device="cuda")
    dst = torch.empty_like(src)
    torch_copy_us = time_graph(lambda _: dst.copy_(src), 1, replays)
    triton_copy_us = time_graph(lambda _: _copy_kernel[(triton.cdiv(n, 8192),)](src, dst, n, BLOCK=8192), 1, replays)
    assert torch.equal(dst, src)
    copy_us = min(torch_copy_us, triton_copy_us)
    block, iters = 4096, 16
    grid = triton.cdiv(n, block * iters)
    partial = torch.empty(grid, dtype=torch.float32, device="cuda")
    read_us = time_graph(lambda _: _read_only_kernel[(grid,)](src, partial, n, BLOCK=block, ITERS=iters), 1, replays)
    assert abs(float(partial.sum()) - float(src.float().sum())) < 1e-2 * n ** 0.5 * 10
    # None rather than del: the timed lambdas above keep their names bound (ruff F821)
    src = dst = None
    return 2 * n * 2 / copy_us / 1e3, n * 2 / read_us / 1e3, 2 * n * 2 / torch_copy_us / 1e3


# ---- one shape ---------------------------------------------------------------------------------

def quantize_weight(w: torch.Tensor, scheme: str):
    if scheme == "tensor":
        s = w.abs().amax(dim=(1, 2)).float() / 448.0
        return (w / s[:, None, None]).to(torch.float8_e4m3fn), s
    if scheme == "channel":
        s = w.abs().amax(dim=2).float() / 448.0
        return (w / s[:, :, None]).to(torch.float8_e4m3fn), s
    E, R, K = w.shape
    b = w.view(E, R // 128, 128, K // 128, 128)
    s = b.abs().amax(dim=(2, 4)).float() / 448.0
    return (b / s[:, :, None, :, None]).view(E, R, K).to(torch.float8_e4m3fn), s


def make_layer(E, H, I, scheme, gen_seed):
    g = torch.Generator(device="cuda").manual_seed(gen_seed)
    w13 = torch.randn(E, 2 * I, H, device="cuda", dtype=torch.bfloat16, generator=g) / H**0.5
    w2 = torch.randn(E, H, I, device="cuda", dtype=torch.bfloat16, generator=g) / I**0.5
    if scheme is None:
        return w13, w2, None, None
    q13, s13 = quantize_weight(w13, scheme)
    del w13
    q2, s2 = quantize_weight(w2, scheme)
    return q13, q2, s13, s2


# Alternative decode tiles timed with --explore (M=1 only): input for the next table revision.
EXPLORE_TILES = [(8, 32, 128, 4, False), (8, 32, 128, 4, True), (16, 64, 128, 4, True), (8, 64, 128, 3, True),
                 (8, 64, 256, 3, True), (8, 128, 128, 4, True)]


def run_case(case, ms, vllm, configs_dir, bw, replays, l2_bytes, log, explore=False, explore_ms=(1,)):
    name, E, k, H, I, scheme = case
    fp8 = scheme is not None
    wbytes = 1 if fp8 else 2
    expert_bytes13 = 2 * I * H * wbytes
    expert_bytes2 = H * I * wbytes
    # Rotate enough layer copies that the experts one M=1 call reads total >= 4x L2.
    active_min = k * (expert_bytes13 + expert_bytes2)
    n_layers = max(1, -(-4 * l2_bytes // active_min))
    layers = [make_layer(E, H, I, scheme, 1234 + i) for i in range(n_layers)]
    qkw = {}
    if scheme == "channel":
        qkw = {"per_channel_quant": True}
    elif scheme == "block":
        qkw = {"block_shape": [128, 128]}
    quant = {None: moe_gemm.QUANT_NONE, "tensor": moe_gemm.QUANT_TENSOR, "channel": moe_gemm.QUANT_CHANNEL,
             "block": moe_gemm.QUANT_BLOCK}[scheme]
    act_mode = {"tensor": "tensor", "channel": "row", "block": "group"}.get(scheme)
    shape_precision = "bf16" if scheme is None else "fp8-block" if scheme == "block" else "fp8"
    rows = []
    for M in ms:
        g = torch.Generator(device="cuda").manual_seed(M)
        x = torch.randn(M, H, device="cuda", dtype=torch.bfloat16, generator=g)
        logits = torch.randn(M, E, device="cuda", generator=g)
        tw, ti = torch.topk(torch.softmax(logits, -1), k)
        ti = ti.to(torch.int32)
        e_act = int(torch.unique(ti).numel())
        w13, w2, s13, s2 = layers[0]
        fkw = dict(qkw, use_fp8_w8a8=fp8, w1_scale=s13, w2_scale=s2) if fp8 else {}
        row = {"case": name, "M": M, "E_act": e_act, "n_layers": n_layers}
        # Correctness of the whole layer, every path, against fp32 references.
        ref = fm.fused_moe_reference(x, w13, w2, tw, ti, **fkw)
        ref_q = fm.fused_moe_reference(x, w13, w2, tw, ti, quantize_activations=True, **fkw) if fp8 else ref

        def rel(o, r):
            return float((o.float() - r).norm() / r.norm())

        cfgs = moe_configs.select_tile_configs(M, E, shape_precision)
        row["tile"] = f"BM{cfgs.block_m} BN{cfgs.gate_up.block_n} BK{cfgs.gate_up.block_k} swap={cfgs.gate_up.swap_ab}"
        out = fm.fused_moe(x, w13, w2, tw, ti, **fkw)
        row["err_ours"] = rel(out, ref)
        row["err_ours_vs_qref"] = rel(out, ref_q)
        out_ns = fm.fused_moe(x, w13, w2, tw, ti, swap_ab=False, **fkw)
        row["err_ours_noswap"] = rel(out_ns, ref)

        # Inputs of each GEMM, prepared once (quantization is not part of the GEMM timing).
        shape = fm.check_moe_inputs(x, w13, w2, tw, ti, **({"use_fp8_w8a8": True, **qkw} if fp8 else {}))
        routing = moe_align.moe_align_block_size(ti, E, cfgs.block_m)
        inter = fm.moe_gate_up(x, w13, routing, cfgs.gate_up, shape, w1_scale=s13)
        if fp8:
            a1, a1s = moe_quant.quantize_fp8(x, act_mode)
            a2, a2s = moe_quant.quantize_fp8(inter, act_mode)
        else:
            a1, a1s, a2, a2s = x, None, inter, None
        c1 = torch.empty(M * k, I, device="cuda", dtype=torch.bfloat16)
        c2 = torch.empty(M * k, H, device="cuda", dtype=torch.bfloat16)
        flat_w = tw.reshape(-1).float().contiguous()

        def ours(cfg, which):
            # Each token tile needs its own alignment (blocks of cfg.block_m pairs).
            tile_routing = routing if cfg.block_m == routing.block_size else \
                moe_align.moe_align_block_size(ti, E, cfg.block_m)

            def step(layer):
                lw13, lw2, ls13, ls2 = layers[layer]
                if which == 1:
                    moe_gemm.launch_moe_gemm(a1, lw13, c1, tile_routing, cfg, gated=True, a_rows_per_pair_div=k,
                                             quant=quant, a_scale=a1s, w_scale=ls13)
                else:
                    moe_gemm.launch_moe_gemm(a2, lw2, c2, tile_routing, cfg, gated=False, a_rows_per_pair_div=1,
                                             topk_weights=flat_w, quant=quant, a_scale=a2s, w_scale=ls2)
            return step

        res = {}
        res["ours1"] = time_graph(ours(cfgs.gate_up, 1), n_layers, replays)
        res["ours2"] = time_graph(ours(cfgs.down, 2), n_layers, replays)
        # Each swapped GEMM against the same tile without swap (a row may swap only one of them).
        if cfgs.gate_up.swap_ab:
            ns1 = moe_configs.TileConfig(**{**cfgs.gate_up.__dict__, "swap_ab": False})
            res["noswap1"] = time_graph(ours(ns1, 1), n_layers, replays)
        if cfgs.down.swap_ab:
            ns2 = moe_configs.TileConfig(**{**cfgs.down.__dict__, "swap_ab": False})
            res["noswap2"] = time_graph(ours(ns2, 2), n_layers, replays)
        # Full layer (align + quant + both GEMMs + reduce), ours.
        full_out = torch.empty_like(x)
        res["ours_layer"] = time_graph(
            lambda l: fm.fused_moe(x, layers[l][0], layers[l][1], tw, ti, out=full_out,
                                   **(dict(qkw, use_fp8_w8a8=True, w1_scale=layers[l][2], w2_scale=layers[l][3])
                                      if fp8 else {})),
            n_layers, replays)

        if vllm is not None:
            vcfg, source = vllm_config(configs_dir, E, I, scheme, M, vllm)
            row["vllm_cfg"] = f"{source} BM{vcfg['BLOCK_SIZE_M']} BN{vcfg['BLOCK_SIZE_N']} BK{vcfg['BLOCK_SIZE_K']}"
            vrouting = moe_align.moe_align_block_size(ti, E, vcfg["BLOCK_SIZE_M"])
            v1 = torch.empty(M * k, 2 * I, device="cuda", dtype=torch.bfloat16)
            v2 = torch.empty(M * k, H, device="cuda", dtype=torch.bfloat16)
            launch_vllm_gemm(vllm, a1, w13, v1, a1s, s13, None, vrouting, k, vcfg, scheme, False)
            vact = torch.nn.functional.silu(v1[:, :I].float()) * v1[:, I:].float()
            va2, va2s = (moe_quant.quantize_fp8(vact.to(torch.bfloat16), act_mode) if fp8
                         else (vact.to(torch.bfloat16), None))
            launch_vllm_gemm(vllm, va2, w2, v2, va2s, s2, flat_w, vrouting, 1, vcfg, scheme, True)
            row["err_vllm"] = rel(v2.float().view(M, k, H).sum(1), ref)

            def vstep(which):
                def step(layer):
                    lw13, lw2, ls13, ls2 = layers[layer]
                    if which == 1:
                        launch_vllm_gemm(vllm, a1, lw13, v1, a1s, ls13, None, vrouting, k, vcfg, scheme, False)
                    else:
                        launch_vllm_gemm(vllm, a2, lw2, v2, a2s, ls2, flat_w, vrouting, 1, vcfg, scheme, True)
                return step

            res["vllm1"] = time_graph(vstep(1), n_layers, replays)
            res["vllm2"] = time_graph(vstep(2), n_layers, replays)

        # The same tiles timed again, last: the spread between the two runs is the noise floor.
        res["again1"] = time_graph(ours(cfgs.gate_up, 1), n_layers, replays)
        res["again2"] = time_graph(ours(cfgs.down, 2), n_layers, replays)
        if explore and M in explore_ms:
            row["explore"] = {}
            for bm, bn, bk, st, sw in EXPLORE_TILES:
                if scheme == "block" and bk > 128:
                    continue
                tile = moe_configs.TileConfig(bm, bn, bk, 1, 4, st, sw)
                row["explore"][f"BM{bm} BN{bn} BK{bk} s{st} swap={sw}"] = (
                    time_graph(ours(tile, 1), n_layers, replays), time_graph(ours(tile, 2), n_layers, replays))

        if not fp8:
            # Plain torch with the routing known on the host: one matmul per active expert.
            ids_cpu = ti.cpu()
            groups = []
            for e in torch.unique(ids_cpu).tolist():
                tok, slot = (ids_cpu == e).nonzero(as_tuple=True)
                groups.append((e, tok.cuda(), (tok * k + slot).cuda()))
            t1 = torch.empty(M * k, 2 * I, device="cuda", dtype=torch.bfloat16)
            t2 = torch.empty(M * k, H, device="cuda", dtype=torch.bfloat16)

            def tstep(which):
                def step(layer):
                    lw13, lw2 = layers[layer][0], layers[layer][1]
                    for e, tok, pair in groups:
                        if which == 1:
                            t1[pair] = x[tok] @ lw13[e].T
                        else:
                            t2[pair] = (inter[pair] @ lw2[e].T) * flat_w[pair].unsqueeze(1).to(torch.bfloat16)
                return step

            res["torch1"] = time_graph(tstep(1), n_layers, replays)
            res["torch2"] = time_graph(tstep(2), n_layers, replays)

        bytes1 = e_act * expert_bytes13
        bytes2 = e_act * expert_bytes2
        for key, us in res.items():
            row[f"{key}_us"] = us
            b = bytes1 if key.endswith("1") else bytes2 if key.endswith("2") else bytes1 + bytes2
            row[f"{key}_GBs"] = b / us / 1e3
            row[f"{key}_pct_copy"] = 100 * b / us / 1e3 / bw[0]
            row[f"{key}_pct_read"] = 100 * b / us / 1e3 / bw[1]
        rows.append(row)
        log(json.dumps(row))
        print(f"{name} M={M} err={row['err_ours']:.1e} " + " ".join(f"{k}={v:.1f}" for k, v in res.items()), flush=True)
        # Free this shape's buffers; None rather than del keeps the timed closures' names bound (ruff F821)
        x = ref = ref_q = out = out_ns = inter = c1 = c2 = None
    layers = None
    torch.cuda.empty_cache()
    return rows


# (name, E, top_k, H, I, FP8 scheme or None), in the order they run.
CASES = {
    "qwen3-30b-bf16": ("qwen3-30b-bf16", 128, 8, 2048, 768, None),
    "mixtral-bf16": ("mixtral-bf16", 8, 2, 4096, 14336, None),
    "deepseek-v3-tp2-fp8-block": ("deepseek-v3-tp2-fp8-block", 256, 8, 7168, 1024, "block"),
    "qwen3-30b-fp8-block": ("qwen3-30b-fp8-block", 128, 8, 2048, 768, "block"),
    "mixtral-fp8-tensor": ("mixtral-fp8-tensor", 8, 2, 4096, 14336, "tensor"),
}


def format_table(rows, bw) -> str:
    lines = [f"copy {bw[0]:.0f} GB/s, read-only {bw[1]:.0f} GB/s; "
             "us per GEMM (weight bytes/time as % of copy / % of read-only);"
             " 'again' = ours timed a second time, last",
             "| case | M | tile | err ours/vllm | G1 ours | G1 again | G1 noswap | G1 vllm | G1 torch"
             " | G2 ours | G2 again | G2 noswap | G2 vllm | G2 torch | layer ours |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]

    def cell(r, key):
        if f"{key}_us" not in r:
            return "-"
        return f"{r[key + '_us']:.1f} ({r[key + '_pct_copy']:.0f}/{r[key + '_pct_read']:.0f})"

    for r in rows:
        err = f"{r['err_ours']:.1e}"
        if "err_vllm" in r:
            err += f"/{r['err_vllm']:.1e}"
        lines.append("| " + " | ".join([r["case"], str(r["M"]), r["tile"], err] + [
            cell(r, k) for k in ("ours1", "again1", "noswap1", "vllm1", "torch1", "ours2", "again2", "noswap2", "vllm2",
                                 "torch2", "ours_layer")
        ]) + " |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--vllm-file", help="vLLM's model_executor/layers/fused_moe/fused_moe.py (not in this repo)")
    p.add_argument("--vllm-configs", help="folder with vLLM's H200 fused-MoE config JSON files")
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--ms", default="1,2,4,8,16,32,64,4096")
    p.add_argument("--replays", type=int, default=100)
    p.add_argument("--out", default="fused_moe_bench.json")
    p.add_argument("--explore", default="", help="cases whose M=1 point also times EXPLORE_TILES")
    p.add_argument("--time-budget", type=float, default=1e9, help="start no new case after this many seconds")
    args = p.parse_args()
    assert args.replays >= 100, "median of >= 100 replays"
    torch.backends.cuda.matmul.allow_tf32 = False
    vllm = load_vllm_kernel(args.vllm_file) if args.vllm_file else None
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 60 << 20)
    bw = measure_bandwidths(args.replays)
    print(f"# {props.name}, torch {torch.__version__}, triton {triton.__version__}, L2 {l2 >> 20} MiB, "
          f"copy {bw[0]:.0f} GB/s (torch copy_ {bw[2]:.0f}), read {bw[1]:.0f} GB/s", flush=True)
    ms = [int(m) for m in args.ms.split(",")]
    all_rows = []
    t0 = time.time()
    with open(args.out + ".log", "w") as log_file:
        def log(line):
            log_file.write(line + "\n")
            log_file.flush()
        for name in args.cases.split(","):
            if time.time() - t0 > args.time_budget:
                print(f"# {name} skipped: time budget spent", flush=True)
                continue
            all_rows += run_case(CASES[name], ms, vllm, args.vllm_configs, bw, args.replays, l2, log,
                                 explore=name in args.explore.split(","))
            print(f"# {name} done at {time.time() - t0:.0f}s", flush=True)
            # Keep partial results if a later case fails.
            Path(args.out).write_text(json.dumps({"gpu": props.name, "torch": torch.__version__,
                                                  "triton": triton.__version__, "copy_GBs": bw[0],
                                                  "read_GBs": bw[1], "torch_copy_GBs": bw[2],
                                                  "rows": all_rows}, indent=1))
    print(format_table(all_rows, bw))
    for r in all_rows:
        for tile, (g1, g2) in r.get("explore", {}).items():
            print(f"explore {r['case']} M={r['M']} {tile}: G1 {g1:.1f} us, G2 {g2:.1f} us")


if __name__ == "__main__":
    main()
