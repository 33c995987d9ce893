"""`jitguard demo`: a recompile storm on an embedded kernel, then the same traffic after `jitguard fix`.

The kernel is a per-token quantization shaped like vLLM's inverse-RoPE + FP8 kernel (FACTS.md 4):
a token count and a scale stride padded to 4 tokens, both plain ints, so Triton specializes each
on ==1 / %16. A seeded trace of prefill lengths and decode batch sizes drives it. On a machine
with no GPU the offline backend compiles for sm_90 on the CPU (compiles are real, launches are not).
"""

from __future__ import annotations

import contextlib
import difflib
import importlib.util
import io
import os
import random
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import click

KERNEL_MODULE = "jitguard_demo_kernels"
KERNEL_SOURCE = '''\
"""Per-token absmax quantization with scales padded to 4 tokens (the demo's kernel)."""

import triton
import triton.language as tl


@triton.jit
def per_token_quant_kernel(x_ptr, out_ptr, scale_ptr, num_tokens, hidden, scale_stride,
                           BLOCK: tl.constexpr):
    token = tl.program_id(0)
    column = tl.program_id(1)
    offsets = tl.arange(0, BLOCK)
    mask = (offsets < hidden) & (token < num_tokens)
    x = tl.load(x_ptr + token * hidden + offsets, mask=mask, other=0.0).to(tl.float32)
    scale = tl.max(tl.abs(x), axis=0) / 448.0
    scale = tl.where(token < num_tokens, tl.maximum(scale, 1e-12), 0.0)
    tl.store(out_ptr + token * hidden + offsets, x / scale, mask=mask)
    tl.store(scale_ptr + column * scale_stride + token, scale)
'''


@dataclass
class TraceStep:
    """One engine step: a prefill of `num_tokens` tokens, or a decode batch of that many sequences."""

    kind: str
    num_tokens: int


def demo_trace(steps: int = 64, seed: int = 0) -> list[TraceStep]:
    """A seeded serving trace: prompt lengths log-uniform in 1..2048, decode batches 1..64 that grow and shrink."""
    rng = random.Random(seed)
    trace: list[TraceStep] = [TraceStep("prefill", int(round(2 ** rng.uniform(4, 11)))), TraceStep("decode", 1)]
    batch = 1
    for _ in range(steps - 2):
        if rng.random() < 0.3:
            trace.append(TraceStep("prefill", int(round(2 ** rng.uniform(0, 11)))))
            batch = min(64, batch + 1)
        else:
            batch = max(1, min(64, batch + rng.choice((-1, 0, 1, 1))))
            trace.append(TraceStep("decode", batch))
    return trace


def _load_module(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _launch(kernel: Any, num_tokens: int, device: str, hidden: int = 128) -> None:
    import torch
    padded = (num_tokens + 3) // 4 * 4
    x = torch.randn(num_tokens, hidden, device=device, dtype=torch.bfloat16)
    out = torch.empty(num_tokens, hidden, device=device, dtype=torch.float32)
    scales = torch.empty(padded, device=device, dtype=torch.float32)
    kernel[(padded, 1)](x, out, scales, num_tokens, hidden, padded, BLOCK=triton_next_pow2(hidden))


def triton_next_pow2(n: int) -> int:
    return 1 << (n - 1).bit_length()


@contextlib.contextmanager
def _backend(use_gpu: bool) -> Iterator[None]:
    if use_gpu:
        yield
        return
    import jitguard
    with jitguard.offline():
        yield


@dataclass
class PassResult:
    compiles: int
    compile_seconds: float
    events: list


def _serve(module_path: Path, trace: list[TraceStep], use_gpu: bool, label: str, echo: Any) -> PassResult:
    """Run the trace through the kernel in `module_path` with the monitor printing every compile."""
    from jitguard import monitor
    module = _load_module(module_path, f"{KERNEL_MODULE}_{label}")
    device = "cuda" if use_gpu else "cpu"
    monitor.uninstall()
    installed = monitor.install(mode="log", summary=False, log_first_compiles=True, stream=_EchoStream(echo))
    try:
        with _backend(use_gpu):
            monitor.mark_serving()
            for step in trace:
                _launch(module.per_token_quant_kernel, step.num_tokens, device)
        events = list(installed.events)
    finally:
        monitor.uninstall()
    for line in monitor.format_summary(events):
        echo("   " + line)
    seconds = sum((e.compile_ms or 0.0) for e in events) / 1000.0
    return PassResult(len(events), seconds, events)


class _EchoStream:
    """A file-like object that hands each line to `echo`, indented."""

    def __init__(self, echo: Any) -> None:
        self.echo = echo

    def write(self, text: str) -> None:
        for line in text.splitlines():
            self.echo("   " + line)

    def flush(self) -> None:
        return None


def _fix_arguments(events: list) -> list[str]:
    """--param KERNEL:PARAM[:align] for every demotable cause, as `jitguard fix` takes them."""
    from jitguard.explain import fix_hint  # noqa: F401 - same advice rules as the log line
    chosen: dict[str, str] = {}
    for event in events:
        for cause in event.causes:
            if cause.advice in ("do_not_specialize", "int64"):
                chosen[cause.param] = ""
            elif cause.advice in ("do_not_specialize_on_alignment", "caller_alignment"):
                chosen.setdefault(cause.param, ":align")
    args: list[str] = []
    for param, suffix in chosen.items():
        args += ["--param", f"per_token_quant_kernel:{param}{suffix}"]
    return args


def run_demo(steps: int, seed: int, echo: Any = click.echo) -> tuple[PassResult, PassResult]:
    """The whole demo; returns the before and after passes."""
    import torch
    use_gpu = torch.cuda.is_available()
    trace = demo_trace(steps, seed)
    work = Path(tempfile.mkdtemp(prefix="jitguard-demo-"))
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # Triton 3.9's default, without its notice
    os.environ["TRITON_CACHE_DIR"] = str(work / "triton-cache-before")
    stock = work / "stock" / "kernels.py"
    stock.parent.mkdir()
    stock.write_text(KERNEL_SOURCE)
    where = "GPU: " + torch.cuda.get_device_name() if use_gpu else "no GPU: offline backend, real sm_90 compiles"
    echo(f"jitguard demo ({where})")
    counts = sorted({s.num_tokens for s in trace})
    echo(f"trace: {len(trace)} engine steps (seed {seed}), {len(counts)} distinct token counts: "
         f"{', '.join(map(str, counts[:12]))}{', ...' if len(counts) > 12 else ''}")
    echo("\n1) serving with the kernel as written (every compile is on the request path):")
    before = _serve(stock, trace, use_gpu, "before", echo)
    echo(f"   -> {before.compiles} compiles, {before.compile_seconds:.2f} s of compile on the request path")

    fixed = work / "fixed" / "kernels.py"
    fixed.parent.mkdir()
    fixed.write_text(KERNEL_SOURCE)
    fix_args = _fix_arguments(before.events)
    echo(f"\n2) jitguard fix {' '.join(fix_args)} kernels.py")
    from jitguard.codemod.commands import fix_command
    captured = io.StringIO()
    with contextlib.redirect_stdout(captured):
        code = fix_command.main([*fix_args, str(fixed)], standalone_mode=False)
    if code not in (0, 1, None):
        raise click.ClickException(f"jitguard fix failed on the demo kernel (exit {code}): {captured.getvalue()}")
    diff = difflib.unified_diff(KERNEL_SOURCE.splitlines(), fixed.read_text().splitlines(),
                                "kernels.py", "kernels.py (fixed)", lineterm="", n=0)
    for line in diff:
        echo("   " + line)

    os.environ["TRITON_CACHE_DIR"] = str(work / "triton-cache-after")
    echo("\n3) the same traffic with the fixed kernel (cold cache again):")
    after = _serve(fixed, trace, use_gpu, "after", echo)
    echo(f"   -> {after.compiles} compile(s), {after.compile_seconds:.2f} s")
    echo("\n            compiles   compile s on request path")
    echo(f"  before    {before.compiles:>8d}   {before.compile_seconds:>10.2f}")
    echo(f"  after     {after.compiles:>8d}   {after.compile_seconds:>10.2f}")
    return before, after


@click.command("demo")
@click.option("--steps", default=64, show_default=True, help="Engine steps in the seeded trace.")
@click.option("--seed", default=0, show_default=True, help="Seed of the trace generator.")
def demo_command(steps: int, seed: int) -> None:
    """Show a recompile storm and its fix on an embedded kernel (CPU-only; uses the GPU if there is one)."""
    started = time.perf_counter()
    before, after = run_demo(steps, seed)
    click.echo(f"\n(demo took {time.perf_counter() - started:.1f} s)")
    if after.compiles >= before.compiles:
        click.echo("the fix did not reduce compiles: please report this", err=True)
        sys.exit(1)
