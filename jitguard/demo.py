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
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
    trace: list[TraceStep] = [TraceStep("prefill", round(2 ** rng.uniform(4, 11))), TraceStep("decode", 1)]
    batch = 1
    for _ in range(steps - 2):
        if rng.random() < 0.3:
            trace.append(TraceStep("prefill", round(2 ** rng.uniform(0, 11))))
            batch = min(64, batch + 1)
        else:
            batch = max(1, min(64, batch + rng.choice((-1, 0, 1, 1))))
            trace.append(TraceStep("decode", batch))
    return trace


def _load_module(path: Path, name: str) -> Any:
    """Import `path` as module `name` (registered, so a warm-up plan can import it by name)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
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
    """Compiles made while serving (and, for a warm-up run, at start-up in `startup`)."""

    compiles: int
    compile_seconds: float
    events: list
    startup: PassResult | None = None


def _serve(module_path: Path, trace: list[TraceStep], use_gpu: bool, module_name: str, echo: Any,
           plan: dict | None = None) -> PassResult:
    """Start a "server" on the kernel in `module_path` (replaying `plan` first, if given), then run
    the trace with the monitor printing every compile. Returns the compiles made while serving."""
    import jitguard
    from jitguard.runtime import monitor
    module = _load_module(module_path, module_name)
    device = "cuda" if use_gpu else "cpu"
    monitor.uninstall()
    installed = monitor.install(mode="log", summary=False, log_first_compiles=True, stream=_EchoStream(echo))
    try:
        with _backend(use_gpu):
            startup = PassResult(0, 0.0, [])
            if plan is not None:
                echo("   start-up: jitguard.warmup(plan)")
                result = jitguard.warmup(plan, stream=_EchoStream(echo, "     "))
                if not result.ok:
                    raise click.ClickException("the demo's warm-up plan failed: " + result.summary())
                startup = PassResult(len(result.compiled), result.seconds, [])
            monitor.mark_serving()
            serving_from = len(installed.events)
            for step in trace:
                _launch(module.per_token_quant_kernel, step.num_tokens, device)
        events = list(installed.events[serving_from:])
    finally:
        monitor.uninstall()
    for line in monitor.format_summary(events):
        echo("   " + line)
    seconds = sum((e.compile_ms or 0.0) for e in events) / 1000.0
    served = PassResult(len(events), seconds, events)
    served.startup = startup
    return served


class _EchoStream:
    """A file-like object that hands each line to `echo`, indented."""

    def __init__(self, echo: Any, indent: str = "   ") -> None:
        self.echo = echo
        self.indent = indent

    def write(self, text: str) -> None:
        for line in text.splitlines():
            self.echo(self.indent + line)

    def flush(self) -> None:
        return None


def _fix_arguments(events: list) -> list[str]:
    """--param KERNEL:PARAM[:align] for every demotable cause, as `jitguard fix` takes them."""
    from jitguard.events import OPTION_FOR_ADVICE
    from jitguard.explain import without_weaker_advice
    args: list[str] = []
    for cause in without_weaker_advice(c for event in events for c in event.causes):
        option = OPTION_FOR_ADVICE.get(cause.advice or "")
        align = ":align" if option == "do_not_specialize_on_alignment" else ""
        spec = f"per_token_quant_kernel:{cause.param}" + align
        if option and spec not in args:
            args += ["--param", spec]
    return args


def _price_lines(kernel: Any, events: list) -> list[str]:
    """What each demotion of step 2 costs: the kernel compiled for the recorded variants with and
    without it (jitguard.price.demotion_cost), one `price:` line per parameter."""
    from jitguard.events import OPTION_FOR_ADVICE
    from jitguard.explain import without_weaker_advice
    from jitguard.price.demotion_cost import DemotionCostChecker
    checker = DemotionCostChecker()
    lines: list[str] = []
    priced: set[str] = set()
    for cause in without_weaker_advice(c for event in events for c in event.causes):
        option = OPTION_FOR_ADVICE.get(cause.advice or "")
        if option and cause.param not in priced:
            priced.add(cause.param)
            cost = checker.cost(kernel, cause.param, option, signature=events)
            lines.append(f"price: {cause.param}: {cost.verdict} ({cost.detail})")
    return lines


def run_demo(steps: int, seed: int, echo: Any = click.echo) -> list[tuple[str, PassResult]]:
    """The whole demo; returns (label, serving pass) for each of the three servers."""
    import torch
    use_gpu = torch.cuda.is_available()
    trace = demo_trace(steps, seed)
    work = Path(tempfile.mkdtemp(prefix="jitguard-demo-"))
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # Triton 3.9's default, without its notice
    stock = work / "stock" / "kernels.py"
    stock.parent.mkdir()
    stock.write_text(KERNEL_SOURCE)
    where = "GPU: " + torch.cuda.get_device_name() if use_gpu else "no GPU: offline backend, real sm_90 compiles"
    echo(f"jitguard demo ({where})")
    counts = sorted({s.num_tokens for s in trace})
    echo(f"trace: {len(trace)} engine steps (seed {seed}), {len(counts)} distinct token counts: "
         f"{', '.join(map(str, counts[:12]))}{', ...' if len(counts) > 12 else ''}")
    echo("\n1) a cold server with the kernel as written (every compile is on the request path):")
    os.environ["TRITON_CACHE_DIR"] = str(work / "triton-cache-1")
    before = _serve(stock, trace, use_gpu, f"{KERNEL_MODULE}_stock", echo)
    echo(f"   -> {before.compiles} compiles, {before.compile_seconds:.2f} s of compile on the request path")

    fixed = work / "fixed" / "kernels.py"
    fixed.parent.mkdir()
    fixed.write_text(KERNEL_SOURCE)
    fix_args = _fix_arguments(before.events)
    echo(f"\n2) jitguard fix {' '.join(fix_args)} kernels.py")
    from jitguard.codemod.commands import fix_command
    captured = io.StringIO()
    with contextlib.redirect_stdout(captured), contextlib.redirect_stderr(captured):  # the diff below says it
        code = fix_command.main([*fix_args, str(fixed)], standalone_mode=False)
    if code not in (0, 1, None):
        raise click.ClickException(f"jitguard fix failed on the demo kernel (exit {code}): {captured.getvalue()}")
    diff = difflib.unified_diff(KERNEL_SOURCE.splitlines(), fixed.read_text().splitlines(),
                                "kernels.py", "kernels.py (fixed)", lineterm="", n=0)
    for line in diff:
        echo("   " + line)
    for line in _price_lines(sys.modules[f"{KERNEL_MODULE}_stock"].per_token_quant_kernel, before.events):
        echo("   " + line)

    echo("\n3) a cold server with the fixed kernel:")
    os.environ["TRITON_CACHE_DIR"] = str(work / "triton-cache-2")
    after = _serve(fixed, trace, use_gpu, f"{KERNEL_MODULE}_fixed", echo)
    echo(f"   -> {after.compiles} compile(s), {after.compile_seconds:.2f} s on the request path")

    from jitguard.startup.plan import build_plan
    plan = build_plan(after.events)
    echo(f"\n4) jitguard warmup-plan: {plan['variants']} variant(s) recorded; a cold server replays it at start-up:")
    os.environ["TRITON_CACHE_DIR"] = str(work / "triton-cache-3")
    sys.modules.pop(f"{KERNEL_MODULE}_fixed", None)  # a new server process: a fresh module and kernel
    warmed = _serve(fixed, trace, use_gpu, f"{KERNEL_MODULE}_fixed", echo, plan=plan)
    echo(f"   -> {warmed.compiles} compile(s) on the request path")

    rows = [("kernel as written", before), ("after jitguard fix", after), ("fix + warm-up plan", warmed)]
    echo("\n                      start-up compiles   compiles on request path   compile s on request path")
    for label, result in rows:
        startup = result.startup.compiles if result.startup else 0
        echo(f"  {label:<20}{startup:>18d}{result.compiles:>27d}{result.compile_seconds:>28.2f}")
    return rows


@click.command("demo")
@click.option("--steps", default=64, show_default=True, help="Engine steps in the seeded trace.")
@click.option("--seed", default=0, show_default=True, help="Seed of the trace generator.")
def demo_command(steps: int, seed: int) -> None:
    """Show a recompile storm, its fix and a warm-up plan on an embedded kernel.

    CPU-only; uses a GPU if there is one.
    """
    started = time.perf_counter()
    rows = run_demo(steps, seed)
    click.echo(f"\n(demo took {time.perf_counter() - started:.1f} s)")
    before, after, warmed = (result for _, result in rows)
    if after.compiles >= before.compiles or warmed.compiles != 0:
        click.echo("the fix or the warm-up plan did not remove the compiles: please report this", err=True)
        sys.exit(1)
