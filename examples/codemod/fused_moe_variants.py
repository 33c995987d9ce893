"""Count compiled variants of vLLM's `fused_moe_kernel` over M = 1..8192, before and after `jitguard fix`.

The kernel source is read at run time from a vLLM checkout or wheel you point to (nothing of vLLM
is copied here). The script:

1. copies that `fused_moe.py` to a temporary directory;
2. extracts `fused_moe_kernel` (and the jit helpers it calls) into an importable module;
3. replays vLLM 0.33's launch logic for a Qwen3-30B-A3B-FP8-like layer (E=128, top_k=8,
   hidden 2048, intermediate 384 per rank, FP8 W8A8 with 128x128 blocks, the H200-tuned
   tile configs) for both GEMMs, M = 1..MAX_M, under `jitguard.offline(compile=False)` and
   `jitguard.watch()`, and counts the variants;
4. runs `jitguard scan --json` and `jitguard fix --from scan.json` on the copy and counts again;
5. with `--compile`, compiles two variants of the fixed kernel for real (sm_90, offline).

    python examples/codemod/fused_moe_variants.py \\
        /tmp/vllm/tree/vllm/model_executor/layers/fused_moe/fused_moe.py
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch
import triton
import triton.language as tl

import jitguard
from jitguard.codemod.kernels import find_kernels, parse_source
from jitguard.codemod.scan import called_names

# Qwen3-30B-A3B-FP8-like MoE layer at TP=2 (FACTS.md 4).
EXPERTS, TOP_K, HIDDEN, INTERMEDIATE = 128, 8, 2048, 384
BLOCK_SHAPE = (128, 128)
# vLLM's H200 config for E=128,N=384,fp8_w8a8,block_shape=[128,128] (tile sizes, warps, stages).
H200_CONFIGS: dict[int, tuple[int, int, int, int, int, int]] = {
    1: (16, 64, 128, 1, 4, 5), 2: (16, 128, 128, 1, 4, 4), 4: (16, 128, 128, 1, 4, 3),
    8: (16, 128, 128, 16, 4, 5), 16: (16, 128, 128, 32, 4, 3), 24: (16, 128, 128, 1, 4, 5),
    32: (16, 128, 128, 64, 4, 5), 48: (16, 128, 128, 64, 4, 5), 64: (16, 128, 128, 64, 4, 5),
    96: (16, 128, 128, 16, 4, 5), 128: (16, 128, 128, 16, 4, 5), 256: (64, 128, 128, 32, 4, 4),
    512: (64, 128, 128, 32, 4, 4), 1024: (64, 128, 128, 16, 4, 4), 1536: (64, 128, 128, 16, 4, 4),
    2048: (64, 128, 128, 16, 4, 4), 3072: (64, 128, 128, 16, 4, 4), 4096: (64, 128, 128, 16, 4, 3),
}


def tuned_config(m: int) -> dict[str, int]:
    """The tuned config vLLM picks for M tokens: the entry whose key is nearest to M."""
    key = min(H200_CONFIGS, key=lambda k: abs(k - m))
    bm, bn, bk, group, warps, stages = H200_CONFIGS[key]
    return {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": group,
            "num_warps": warps, "num_stages": stages}


def load_kernel(source_file: Path, name: str, workdir: Path) -> Callable:
    """Import `name` (and the jit functions it calls) from `source_file`, without importing vLLM."""
    source = source_file.read_bytes()
    tree = parse_source(source)
    kernels = {kernel.name: kernel for kernel in find_kernels(source, tree)}
    if name not in kernels:
        raise SystemExit(f"{source_file}: no Triton kernel named {name!r}")
    wanted = [kernels[n] for n in sorted(called_names([kernels[name]]) & set(kernels))] + [kernels[name]]
    lines = source.decode().splitlines(keepends=True)
    body = "".join("".join(lines[k.first_line - 1 : k.end_line]) + "\n\n" for k in wanted)
    module_file = workdir / f"extracted_{name}_{abs(hash(body))}.py"
    module_file.write_text("import triton\nimport triton.language as tl\n\n\n" + body)
    spec = importlib.util.spec_from_file_location(module_file.stem, module_file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


class Layer:
    """Weights and scales of one MoE layer; activations are allocated per M like vLLM does."""

    def __init__(self) -> None:
        fp8 = torch.float8_e4m3fn
        bn, bk = BLOCK_SHAPE
        self.w1 = torch.empty(EXPERTS, 2 * INTERMEDIATE, HIDDEN, dtype=fp8)
        self.w2 = torch.empty(EXPERTS, HIDDEN, INTERMEDIATE, dtype=fp8)
        self.w1_scale = torch.empty(EXPERTS, 2 * INTERMEDIATE // bn, HIDDEN // bk)
        self.w2_scale = torch.empty(EXPERTS, HIDDEN // bn, INTERMEDIATE // bk)
        self.expert_ids = torch.zeros(16384, dtype=torch.int32)
        self.num_post_padded = torch.zeros(1, dtype=torch.int32)


def launch(kernel: Callable, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, a_scale: torch.Tensor,
           b_scale: torch.Tensor, topk_weights: torch.Tensor, sorted_ids: torch.Tensor | None,
           layer: Layer, mul_routed_weight: bool, top_k: int, config: dict[str, int]) -> None:
    """vLLM 0.33's `invoke_fused_moe_triton_kernel` for FP8 W8A8 block quantization on sm_90."""
    config = dict(config)
    swap_ab = config["BLOCK_SIZE_M"] < 64 and config["BLOCK_SIZE_N"] >= 64  # sm_90 + fp8 only
    m = a.size(0)
    num_tokens = m * top_k
    if sorted_ids is not None:
        em = sorted_ids.size(0)
        if m < config["BLOCK_SIZE_M"]:
            em = min(sorted_ids.size(0), m * top_k * config["BLOCK_SIZE_M"])
    else:
        em = num_tokens * config["BLOCK_SIZE_M"]
    grid = (triton.cdiv(em, config["BLOCK_SIZE_M"]) * triton.cdiv(b.size(1), config["BLOCK_SIZE_N"]),)
    config["SPLIT_K"] = 1
    block_k = min(config.pop("BLOCK_SIZE_K"), *BLOCK_SHAPE)
    kernel[grid](
        a, b, c, None, a_scale, b_scale, topk_weights, sorted_ids, layer.expert_ids, layer.num_post_padded,
        b.size(1), b.size(2), em, num_tokens,
        a.stride(0), a.stride(1), b.stride(0), b.stride(2), b.stride(1), c.stride(1), c.stride(2),
        a_scale.stride(0), a_scale.stride(1), b_scale.stride(0), b_scale.stride(2),
        b_scale.stride(1) if b_scale.size(1) > 1 else 0, 0, 0, BLOCK_SHAPE[0], BLOCK_SHAPE[1],
        MUL_ROUTED_WEIGHT=mul_routed_weight, top_k=top_k, compute_type=tl.bfloat16, use_fp8_w8a8=True,
        use_int8_w8a8=False, use_int8_w8a16=False, per_channel_quant=False,
        naive_block_assignment=sorted_ids is None, HAS_BIAS=False, BLOCK_SIZE_K=block_k, SWAP_AB=swap_ab,
        USE_TD=False, **config,
    )


def forward(kernel: Callable, layer: Layer, m: int, gemm: int) -> None:
    """One MoE forward for M tokens, launching only GEMM `gemm` (1: gate_up, 2: down)."""
    config = tuned_config(m)
    block_m = config["BLOCK_SIZE_M"]
    numel = m * TOP_K
    naive = numel * 4 <= EXPERTS  # vLLM's naive block assignment for tiny batches
    sorted_ids = None
    if not naive:
        padded = numel + EXPERTS * (block_m - 1)
        if numel < EXPERTS:
            padded = min(numel * block_m, padded)
        sorted_ids = torch.empty(padded, dtype=torch.int32)
    topk_weights = torch.empty(m, TOP_K)
    bk = BLOCK_SHAPE[1]
    if gemm == 1:
        a = torch.empty(m, HIDDEN, dtype=torch.float8_e4m3fn)
        a_scale = torch.empty(m, HIDDEN // bk)
        cache13 = torch.empty(m * TOP_K * max(2 * INTERMEDIATE, HIDDEN), dtype=torch.bfloat16)
        c = cache13[: m * TOP_K * 2 * INTERMEDIATE].view(m, TOP_K, 2 * INTERMEDIATE)
        launch(kernel, a, layer.w1, c, a_scale, layer.w1_scale, topk_weights, sorted_ids, layer, False, TOP_K, config)
    else:
        a = torch.empty(m * TOP_K, INTERMEDIATE, dtype=torch.float8_e4m3fn)
        a_scale = torch.empty(m * TOP_K, INTERMEDIATE // bk)
        cache13 = torch.empty(m * TOP_K * max(2 * INTERMEDIATE, HIDDEN), dtype=torch.bfloat16)
        c = cache13[: m * TOP_K * HIDDEN].view(m, TOP_K, HIDDEN)
        launch(kernel, a, layer.w2, c, a_scale, layer.w2_scale, topk_weights, sorted_ids, layer, True, 1, config)


def launch_configs(max_m: int) -> int:
    """Distinct (tile config, naive block assignment) pairs vLLM launches with over M = 1..max_m."""
    return len({(tuple(tuned_config(m).items()), m * TOP_K * 4 <= EXPERTS) for m in range(1, max_m + 1)})


def count_variants(kernel: Callable, max_m: int) -> dict[int, int]:
    """{gemm: new variants over M = 1..max_m} (keys only, no compile)."""
    layer = Layer()
    counts = {}
    log = io.StringIO()  # jitguard's one line per recompile; only tallied here
    with jitguard.offline(compile=False), contextlib.redirect_stderr(log):
        for gemm in (1, 2):
            with jitguard.watch() as recorder:
                for m in range(1, max_m + 1):
                    forward(kernel, layer, m, gemm)
            counts[gemm] = recorder.variants("fused_moe_kernel")
    return counts


def jitguard_cli(*args: str) -> subprocess.CompletedProcess:
    """Run `python -m jitguard ARGS`, echoing the command and its stderr summary."""
    command = [sys.executable, "-m", "jitguard", *args]
    print("$ jitguard " + " ".join(args))
    done = subprocess.run(command, capture_output=True, text=True)
    return done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("fused_moe_py", type=Path, help="vllm/model_executor/layers/fused_moe/fused_moe.py")
    parser.add_argument("--max-m", type=int, default=8192)
    parser.add_argument("--compile", action="store_true", help="also compile two fixed variants for real")
    args = parser.parse_args()
    if not args.fused_moe_py.is_file():
        raise SystemExit(f"{args.fused_moe_py}: no such file")
    with tempfile.TemporaryDirectory(prefix="jitguard-moe-") as tmp:
        work = Path(tmp)
        copy = work / "fused_moe.py"
        shutil.copy(args.fused_moe_py, copy)

        started = time.perf_counter()
        before = count_variants(load_kernel(copy, "fused_moe_kernel", work), args.max_m)
        print(f"launch configurations (tile config x naive assignment) over M = 1..{args.max_m}: "
              f"{launch_configs(args.max_m)}")
        print(f"stock:  GEMM1 {before[1]} variants, GEMM2 {before[2]} variants over M = 1..{args.max_m} "
              f"({time.perf_counter() - started:.1f} s)")

        scan = jitguard_cli("scan", "--json", str(copy))
        (work / "scan.json").write_text(scan.stdout)
        findings = [f for f in json.loads(scan.stdout)["findings"] if f["kernel"] == "fused_moe_kernel"]
        for finding in findings:
            if finding["severity"] == "warning":
                print(f"  {finding['rule']} fused_moe_kernel.{finding['param']} (line {finding['line']})")
        fix = jitguard_cli("fix", "--from", str(work / "scan.json"), str(copy))
        print("  " + fix.stderr.strip().splitlines()[-1].replace(str(work) + "/", ""))
        fixed_source = copy.read_bytes()
        decorator = next(k for k in find_kernels(fixed_source) if k.name == "fused_moe_kernel")
        print("  " + fixed_source.decode().splitlines()[decorator.decorator_span[0] - 1].strip())

        started = time.perf_counter()
        fixed_kernel = load_kernel(copy, "fused_moe_kernel", work)
        after = count_variants(fixed_kernel, args.max_m)
        print(f"fixed:  GEMM1 {after[1]} variants, GEMM2 {after[2]} variants over M = 1..{args.max_m} "
              f"({time.perf_counter() - started:.1f} s)")

        if args.compile:
            # A fresh cache directory, so these are real compiles and not disk-cache hits.
            os.environ["TRITON_CACHE_DIR"] = str(work / "triton-cache")
            layer = Layer()
            with jitguard.offline(compile=True), jitguard.watch() as recorder, \
                    contextlib.redirect_stderr(io.StringIO()):
                for m in (1, 64):
                    started = time.perf_counter()
                    forward(fixed_kernel, layer, m, 1)
                    print(f"compiled fixed GEMM1 at M={m} for sm_90: {time.perf_counter() - started:.1f} s",
                          file=sys.__stdout__)
            print(f"  {recorder.variants('fused_moe_kernel')} real compiles, no error")


if __name__ == "__main__":
    main()
