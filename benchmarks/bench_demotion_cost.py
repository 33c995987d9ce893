"""Does jitguard's demotion verdict predict the slowdown? Real PyPI kernels, specialized vs demoted.

For each case: a kernel of a PyPI kernel library (imported at run time, never copied), the
parameter a `do_not_specialize` fix would demote, and the library's own Python entry point at a
realistic size. The script

1. records the signature the entry point compiles (jitguard's offline backend, keys only, CPU
   tensors) and asks `jitguard.price.demotion_cost` for the verdict (sm_90 offline compiles);
2. on a GPU: captures the entry point in a CUDA graph twice, once as shipped and once with the
   module's kernel replaced by a copy with the parameter demoted, and replays the two graphs
   alternately (ROUNDS rounds of REPLAYS replays, median per side).

Prints and writes (`--out`, default $OUT/demotion_cost.md or ./demotion_cost.md) one markdown
table. Without a GPU only the verdict columns are filled.

    python benchmarks/bench_demotion_cost.py --out $OUT/demotion_cost.md

Needs liger-kernel==0.8.5 and fla-core==0.6.0 (+ einops) beside torch and Triton. A case whose library or entry point
fails is a row saying why, never a crash.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
import triton
import triton.language as tl

import jitguard
from jitguard import triton_compat
from jitguard.price.demotion_cost import DemotionCostChecker, _copy_with

ROUNDS = 7
REPLAYS = 50
CALLS_PER_GRAPH = 20
# A costly verdict is borne out when the demoted side is this much slower; free when within NOISE.
SLOWER = 1.05
NOISE = 0.03
# A costly price graded "likely large" is borne out at this slowdown or more, "likely small" below it
# (nothing measurable included: "small" promises at most this much, not some).
LARGE = 1.5


@dataclass
class Case:
    library: str
    module: str  # where the entry point looks the kernel up (a module global, swapped for timing)
    kernel: str
    param: str
    shape: str
    make: Callable[[str], Callable[[], Any]]  # device -> a no-argument call of the entry point


def _bf16(*shape: int, device: str) -> torch.Tensor:
    return torch.randn(*shape, device=device).to(torch.bfloat16)


def _layer_norm(rows: int, cols: int) -> Callable[[str], Callable[[], Any]]:
    def make(device: str) -> Callable[[], Any]:
        from liger_kernel.ops.layer_norm import layer_norm_forward
        x, w, b = _bf16(rows, cols, device=device), _bf16(cols, device=device), _bf16(cols, device=device)
        return lambda: layer_norm_forward(x, w, b, 1e-6)
    return make


def _rms_norm(rows: int, cols: int) -> Callable[[str], Callable[[], Any]]:
    def make(device: str) -> Callable[[], Any]:
        from liger_kernel.ops.rms_norm import rms_norm_forward
        x, w = _bf16(rows, cols, device=device), _bf16(cols, device=device)
        return lambda: rms_norm_forward(x, w, 1e-6, 0.0, "llama", True)
    return make


def _gated(entry: str, rows: int, cols: int) -> Callable[[str], Callable[[], Any]]:
    def make(device: str) -> Callable[[], Any]:
        module, _, name = entry.rpartition(".")
        forward = getattr(importlib.import_module(module), name)
        a, b = _bf16(rows, cols, device=device), _bf16(rows, cols, device=device)
        return lambda: forward(a, b)
    return make


def _softmax(rows: int, cols: int) -> Callable[[str], Callable[[], Any]]:
    def make(device: str) -> Callable[[], Any]:
        from liger_kernel.ops.softmax import _softmax_forward
        x = _bf16(rows, cols, device=device)
        return lambda: _softmax_forward(x)
    return make


def _rope(seq: int, q_heads: int, kv_heads: int, head_dim: int) -> Callable[[str], Callable[[], Any]]:
    def make(device: str) -> Callable[[], Any]:
        from liger_kernel.ops.rope import rope_forward
        q, k = _bf16(1, q_heads, seq, head_dim, device=device), _bf16(1, kv_heads, seq, head_dim, device=device)
        cos, sin = _bf16(1, seq, head_dim, device=device), _bf16(1, seq, head_dim, device=device)
        return lambda: rope_forward(q, k, cos, sin)
    return make


def _l2norm(tokens: int, dim: int) -> Callable[[str], Callable[[], Any]]:
    def make(device: str) -> Callable[[], Any]:
        from fla.modules.norm.l2norm import l2norm_fwd
        x = _bf16(tokens, dim, device=device)
        return lambda: l2norm_fwd(x)
    return make


@triton.jit
def kv_weighted_sum(q_ptr, k_ptr, out_ptr, kv_len, D: tl.constexpr, BLOCK_N: tl.constexpr):
    """A decode step's shape: one query row against `kv_len` key rows. At kv_len == 1 the specialized
    code knows the loop runs once; demoted, the general loop runs (more registers and instructions,
    the same loads): the degenerate-value and registers-up cases."""
    seq = tl.program_id(0)
    d = tl.arange(0, D)
    q = tl.load(q_ptr + seq * D + d).to(tl.float32)
    acc = tl.zeros([D], dtype=tl.float32)
    base = k_ptr + seq * kv_len * D
    for start in range(0, kv_len, BLOCK_N):
        n = start + tl.arange(0, BLOCK_N)
        k = tl.load(base + n[:, None] * D + d[None, :], mask=n[:, None] < kv_len, other=0.0).to(tl.float32)
        s = tl.sum(k * q[None, :], axis=1)
        p = tl.exp(s - tl.max(s, axis=0))
        acc += tl.sum(p[:, None] * k, axis=0)
    tl.store(out_ptr + seq * D + d, acc.to(tl.bfloat16))


def _kv_decode(batch: int, kv_len: int, dim: int, block_n: int) -> Callable[[str], Callable[[], Any]]:
    def make(device: str) -> Callable[[], Any]:
        q, out = _bf16(batch, dim, device=device), _bf16(batch, dim, device=device)
        k = _bf16(batch * kv_len, dim, device=device)
        # looked up at each call: the timing swaps this module's global for the demoted copy
        return lambda: globals()["kv_weighted_sum"][(batch,)](q, k, out, kv_len, D=dim, BLOCK_N=block_n)
    return make


CASES = [
    Case("liger-kernel", "liger_kernel.ops.layer_norm", "_layer_norm_forward_kernel", "n_cols", "4096x4096 bf16",
         _layer_norm(4096, 4096)),
    Case("liger-kernel", "liger_kernel.ops.layer_norm", "_layer_norm_forward_kernel", "X_row_stride",
         "4096x4096 bf16", _layer_norm(4096, 4096)),
    Case("liger-kernel", "liger_kernel.ops.rms_norm", "_rms_norm_forward_kernel", "n_cols", "4096x4096 bf16",
         _rms_norm(4096, 4096)),
    Case("liger-kernel", "liger_kernel.ops.layer_norm", "_layer_norm_forward_kernel", "Mean_row_stride",
         "4096x4096 bf16", _layer_norm(4096, 4096)),
    Case("liger-kernel", "liger_kernel.ops.rms_norm", "_rms_norm_forward_kernel", "X_row_stride",
         "4096x4096 bf16", _rms_norm(4096, 4096)),
    Case("liger-kernel", "liger_kernel.ops.rms_norm", "_rms_norm_forward_kernel", "RSTD_row_stride",
         "4096x4096 bf16", _rms_norm(4096, 4096)),
    Case("liger-kernel", "liger_kernel.ops.swiglu", "_swiglu_forward_kernel", "stride", "4096x14336 bf16",
         _gated("liger_kernel.ops.swiglu.swiglu_forward", 4096, 14336)),
    Case("liger-kernel", "liger_kernel.ops.geglu", "_geglu_tanh_forward_kernel", "stride", "4096x14336 bf16",
         _gated("liger_kernel.ops.geglu.geglu_forward", 4096, 14336)),
    Case("liger-kernel", "liger_kernel.ops.softmax", "_softmax_single_block_forward_kernel", "n_cols",
         "8192x4096 bf16", _softmax(8192, 4096)),
    Case("liger-kernel", "liger_kernel.ops.softmax", "_softmax_single_block_forward_kernel", "X_row_stride",
         "8192x4096 bf16", _softmax(8192, 4096)),
    Case("liger-kernel", "liger_kernel.ops.rope", "_triton_rope", "sl", "q 32x4096x128, k 8 heads, bf16",
         _rope(4096, 32, 8, 128)),
    Case("liger-kernel", "liger_kernel.ops.rope", "_triton_rope", "q_row_stride", "q 32x4096x128, k 8 heads, bf16",
         _rope(4096, 32, 8, 128)),
    # fla ships l2norm_fwd_kernel with do_not_specialize=["T"]: the shipped demotion, judged and timed.
    Case("fla-core", "fla.modules.norm.l2norm", "l2norm_fwd_kernel", "T", "131072x128 bf16", _l2norm(131072, 128)),
    Case("fla-core", "fla.modules.norm.l2norm", "l2norm_fwd_kernel_row", "D", "16384x4096 bf16",
         _l2norm(16384, 4096)),
    # Loads unchanged at the degenerate value kv_len == 1 while instructions (+16%) and registers grow:
    # 30 -> 56 keeps more than half the warps an SM holds (free), 30 -> 128 with BLOCK_N 64 quarters them
    # (costly, likely small: occupancy). Timed at kv_len == 1, both sides.
    Case("this script", __name__, "kv_weighted_sum", "kv_len", "kv_len=1, 65536 rows of 128, BLOCK_N 16",
         _kv_decode(65536, 1, 128, 16)),
    Case("this script", __name__, "kv_weighted_sum", "kv_len", "kv_len=1, 65536 rows of 128, BLOCK_N 64",
         _kv_decode(65536, 1, 128, 64)),
]


def _recorded_signature(case: Case) -> list:
    """The compile events of `case.kernel` when the entry point runs on CPU tensors, keys only."""
    call = case.make("cpu")
    # The monitor logs each autotune config it sees: not this table's business.
    with contextlib.redirect_stderr(io.StringIO()), jitguard.offline(compile=False), jitguard.watch() as rec:
        call()
    return [e for e in rec.events if e.kernel == case.kernel]


def _graph_of(call: Callable[[], Any]) -> Any:
    call()  # compile outside the capture
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        call()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(CALLS_PER_GRAPH):
            call()
    torch.cuda.synchronize()
    return graph


def _replay_us(graph: Any) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    graph.replay()
    start.record()
    for _ in range(REPLAYS):
        graph.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1000.0 / (REPLAYS * CALLS_PER_GRAPH)


@contextlib.contextmanager
def _kernel_swapped(module: Any, name: str, jit_fn: Any) -> Iterator[None]:
    """Run the module's entry point with `jit_fn` in place of its kernel (under any autotune wrapper)."""
    holder, attr = module, name
    wrapper = getattr(module, name)
    while not isinstance(getattr(holder, attr), type(jit_fn)):
        holder, attr = getattr(holder, attr), "fn"
    shipped = getattr(holder, attr)
    setattr(holder, attr, jit_fn)
    try:
        yield
    finally:
        setattr(holder, attr, shipped)
    assert getattr(module, name) is wrapper


def _time_case(case: Case) -> tuple[float, float]:
    """(specialized us, demoted us) per call: two graphs, replayed alternately, median of ROUNDS.

    Both sides are copies of the shipped kernel: `param` specialized, and `param` demoted (so a
    kernel that ships the demotion is timed against its specialized self).
    """
    module = importlib.import_module(case.module)
    jit_fn = triton_compat.unwrap_jit_function(getattr(module, case.kernel))
    call = case.make("cuda")
    graphs = {}
    for side, demotion in (("spec", None), ("demoted", "do_not_specialize")):
        with _kernel_swapped(module, case.kernel, _copy_with(jit_fn, case.param, demotion)):
            graphs[side] = _graph_of(call)
    times: dict[str, list[float]] = {"spec": [], "demoted": []}
    for _ in range(ROUNDS):
        for side in ("spec", "demoted"):
            times[side].append(_replay_us(graphs[side]))
    return statistics.median(times["spec"]), statistics.median(times["demoted"])


def _agreement(verdict: str, ratio: float | None, likely: str | None = None) -> str:
    if ratio is None:
        return "-"
    if verdict == "costly" and likely == "large":
        return "yes" if ratio >= LARGE else f"NO (only {ratio:.2f}x)"
    if verdict == "costly" and likely == "small":
        return "yes" if ratio < LARGE else f"NO ({ratio:.2f}x)"
    if verdict == "costly":
        return "yes" if ratio >= SLOWER else "NO (not measurably slower)"
    if verdict == "free":
        return "yes" if abs(ratio - 1) <= NOISE else f"NO ({ratio:.2f}x)"
    return "-"


def run(out: str) -> int:
    gpu = torch.cuda.is_available()
    checker = DemotionCostChecker(arch=90)
    header = ["library", "kernel", "demoted", "shape", "jitguard verdict", "likely", "price / reason",
              "specialized us", "demoted us", "demoted/specialized", "verdict borne out"]
    rows = []
    for case in CASES:
        started = time.perf_counter()
        try:
            events = _recorded_signature(case)
            kernel = getattr(importlib.import_module(case.module), case.kernel)
            cost = checker.cost(kernel, case.param, "do_not_specialize", events)
        except Exception as exc:
            cost = None
            reason = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:160]
        verdict = cost.verdict if cost else "error"
        detail = cost.detail if cost else reason
        spec_us = demoted_us = ratio = None
        if gpu and cost is not None:
            try:
                spec_us, demoted_us = _time_case(case)
                ratio = demoted_us / spec_us
            except Exception as exc:
                detail += f"; timing failed: {type(exc).__name__}: {exc}"[:160]
        likely = cost.likely if cost else None
        rows.append([case.library, case.kernel, case.param, case.shape, verdict, likely or "-",
                     detail.replace("|", "/"),
                     f"{spec_us:.1f}" if spec_us else "-", f"{demoted_us:.1f}" if demoted_us else "-",
                     f"{ratio:.2f}x" if ratio else "-", _agreement(verdict, ratio, likely)])
        print(f"{case.kernel}.{case.param}: {verdict} ({time.perf_counter() - started:.1f} s): {detail}"
              + (f" | {spec_us:.1f} -> {demoted_us:.1f} us ({ratio:.2f}x)" if ratio else ""), flush=True)
    device = torch.cuda.get_device_name() if gpu else "no GPU (verdicts only)"
    lines = [f"# Demotion cost: jitguard's verdict vs measured time ({device})", "",
             f"torch {torch.__version__}, Triton {triton.__version__}; verdicts from offline sm_90 compiles; "
             f"timings: CUDA graphs of {CALLS_PER_GRAPH} calls, {ROUNDS} alternating rounds of {REPLAYS} replays, "
             "median per side. Borne out: costly likely large >= "
             f"{LARGE:.2f}x slower, costly likely small under {LARGE:.2f}x (none included), free within "
             f"{NOISE:.0%}.", "",
             "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w", encoding="utf-8") as handle:
        handle.write(text)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "demotion_cost.md"))
    return run(parser.parse_args(argv).out)


if __name__ == "__main__":
    sys.exit(main())
