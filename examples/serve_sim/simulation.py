"""Run the serving simulation for each kernel set and compare: compiles on the request path,
compile seconds, TTFT p50/p99.

    from serve_sim import SimConfig, run_simulation
    result = run_simulation(SimConfig.cpu_small())
    print(result.format_table())

A run is a kernel set plus whether the workers apply a warm-up plan at start-up:
"upstream" (the kernels with their do_not_specialize lists removed, no warm-up) and
"fixed+warmup" (jitguard.kernels, warmed up from a plan) by default; "fixed" and
"upstream+warmup" are available to separate the two effects.

The warm-up plan comes from `jitguard.startup.plan.build_plan` over the NDJSON logs of a calibration
pass: the workers' model code run once for every step size the scheduler can produce
(1..max_tokens tokens), under the offline backend in keys-only mode (no compiles: seconds), with
`jitguard.watch(dir=...)` writing the logs - what `jitguard run` would record on a load test.
Every run starts from an empty Triton disk cache (its own TRITON_CACHE_DIR), like a fresh
server: compile times are cold-cache times.
"""

from __future__ import annotations

import io
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any, TextIO

from .model import GPU_SHAPE, ModelShape
from .processes import EngineConfig, WorkerStats, front_run
from .trace import TraceSpec, describe_trace, make_trace

WORKER_KNOBS = {"TRITON_DEFAULT_FP_FUSION": "1"}  # the workers' Triton knobs (a bundle is built with the same)
RUNS = ("upstream", "fixed+warmup", "fixed", "upstream+warmup", "fixed+warmup+bundle")
DEFAULT_RUNS = ("upstream", "fixed+warmup")


@dataclass(frozen=True)
class SimConfig:
    """Everything a simulation run depends on (printed with its results)."""

    trace: TraceSpec = TraceSpec()  # noqa: RUF009 - frozen dataclass: one shared default is safe
    shape: ModelShape = ModelShape()  # noqa: RUF009 - frozen dataclass: one shared default is safe
    backend: str = "offline"  # "offline" (CPU, compile-only sm_90) or "cuda"
    workers: int = 2
    max_num_seqs: int = 32

    @classmethod
    def cpu_small(cls) -> SimConfig:
        """Small enough for a CPU test (< 90 s on 2 cores): steps of at most 8 tokens (one MoE tile config)."""
        return cls(trace=TraceSpec(num_requests=10, rate=20.0, prompt_median=3, prompt_max=8,
                                   output_median=3, output_max=6, seed=0),
                   shape=ModelShape(layers=1, max_tokens=8), max_num_seqs=8)

    @classmethod
    def cpu_default(cls) -> SimConfig:
        """The recorded CPU run: steps up to 256 tokens, 48 requests."""
        return cls()

    @classmethod
    def gpu_default(cls) -> SimConfig:
        """The H200 run: Qwen3-30B-A3B-like MoE + DeepSeek-V4-like inverse RoPE, TP2 on one GPU."""
        return cls(trace=TraceSpec(num_requests=64, rate=8.0, prompt_median=256, prompt_sigma=1.0,
                                   prompt_max=1024, output_median=24, output_max=64, seed=0),
                   shape=GPU_SHAPE, backend="cuda", max_num_seqs=64)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class RunResult:
    """One run: a kernel set, with or without a warm-up plan."""

    name: str
    kernel_set: str
    warmup: bool
    ttft_s: dict[int, float]
    compile_wait_s: dict[int, float]
    workers: list[WorkerStats]
    startup_s: float
    step_tokens: list[int] = field(default_factory=list)
    decode_batches: list[int] = field(default_factory=list)
    step_seconds: list[float] = field(default_factory=list)
    step_compile_ms: list[float] = field(default_factory=list)
    log_dir: str = ""

    @property
    def compiles_on_path(self) -> int:
        """Compiles while serving, summed over workers."""
        return sum(w.serving_compiles for w in self.workers)

    @property
    def compile_s_on_path(self) -> float:
        """Compile seconds while serving, summed over workers."""
        return sum(w.serving_compile_s for w in self.workers)

    @property
    def warmup_compiles(self) -> int:
        return sum(w.warmup_compiles for w in self.workers)

    @property
    def warmup_s(self) -> float:
        """Start-up warm-up seconds of the slowest worker (they warm up in parallel)."""
        return max((w.warmup_s for w in self.workers), default=0.0)

    @property
    def startup_compiles(self) -> int:
        """Compiles before serving: the warm-up plan plus the profile step, summed over workers."""
        return sum(w.warmup_compiles + w.profile_compiles for w in self.workers)

    @property
    def startup_compile_s(self) -> float:
        """Seconds of warm-up plus profile step of the slowest worker."""
        return max((w.warmup_s + w.profile_s for w in self.workers), default=0.0)

    @property
    def startup_cold(self) -> int:
        """Start-up variants compiled cold (or where Triton cannot tell), summed over workers."""
        return sum(w.startup_cold for w in self.workers)

    @property
    def startup_cold_s(self) -> float:
        """Start-up cold compile seconds of the slowest worker."""
        return max((w.startup_cold_s for w in self.workers), default=0.0)

    @property
    def startup_loads(self) -> int:
        """Start-up variants loaded (disk, bundle, remote cache), summed over workers."""
        return sum(w.startup_loads for w in self.workers)

    @property
    def startup_load_s(self) -> float:
        """Start-up load seconds of the slowest worker."""
        return max((w.startup_load_s for w in self.workers), default=0.0)

    @property
    def cold_on_path(self) -> int:
        """Request-path variants compiled cold, summed over workers."""
        return sum(w.serving_compiles - w.serving_loads for w in self.workers)

    @property
    def warmup_failures(self) -> list[str]:
        return [f for w in self.workers for f in w.warmup_failures]

    def ttft_quantile(self, q: float) -> float:
        values = sorted(self.ttft_s.values())
        if not values:
            return float("nan")
        position = q * (len(values) - 1)
        low = int(position)
        high = min(low + 1, len(values) - 1)
        return values[low] + (values[high] - values[low]) * (position - low)

    def requests_delayed_by_compiles(self) -> int:
        return sum(1 for v in self.compile_wait_s.values() if v > 0)


@dataclass
class SimResult:
    """Every run of one simulation, with its configuration and environment."""

    config: SimConfig
    runs: list[RunResult]
    trace_line: str
    environment: dict[str, str]
    plan_variants: int = 0
    plan_path: str = ""
    requests: list = field(default_factory=list)  # the trace (list of Request)

    def run(self, name: str) -> RunResult:
        for run in self.runs:
            if run.name == name:
                return run
        raise KeyError(name)

    def format_table(self) -> str:
        """The comparison table (what the command prints)."""
        header = ["run", "start-up (warm-up + profile step)", "start-up cold compiles", "start-up loads",
                  "compiles on request path", "compile s on path", "requests delayed by a compile", "TTFT p50",
                  "TTFT p99", "TTFT max"]
        rows = []
        for run in self.runs:
            warm = f"{run.startup_compiles} variants, {run.startup_compile_s:.1f} s"
            rows.append([run.name, warm, f"{run.startup_cold}, {run.startup_cold_s:.2f} s",
                         f"{run.startup_loads}, {run.startup_load_s:.2f} s", str(run.compiles_on_path),
                         f"{run.compile_s_on_path:.1f}",
                         f"{run.requests_delayed_by_compiles()}/{len(run.ttft_s)}",
                         f"{run.ttft_quantile(0.5) * 1000:.0f} ms", f"{run.ttft_quantile(0.99) * 1000:.0f} ms",
                         f"{max(run.ttft_s.values()) * 1000:.0f} ms"])
        widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(header, widths)).rstrip()]
        lines.append("  ".join("-" * w for w in widths))
        lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
        base = self.runs[0]
        for run in self.runs[1:]:
            p50, p99 = base.ttft_quantile(0.5), base.ttft_quantile(0.99)
            lines.append(f"{run.name} vs {base.name}: compiles on the request path {base.compiles_on_path} -> "
                         f"{run.compiles_on_path}, compile seconds {base.compile_s_on_path:.1f} -> "
                         f"{run.compile_s_on_path:.1f}, TTFT p50 {_change(p50, run.ttft_quantile(0.5))}, "
                         f"p99 {_change(p99, run.ttft_quantile(0.99))}")
        for run in self.runs:
            quiet = [t for t, ms in zip(run.step_seconds, run.step_compile_ms, strict=True) if ms == 0]
            quiet_words = f"{statistics.median(quiet) * 1000:.1f} ms" if quiet else "-"
            lines.append(f"{run.name}: {len(run.step_tokens)} steps, tokens per step {_spread(run.step_tokens)}, "
                         f"decode batch {_spread(run.decode_batches)}, step time without compiles median {quiet_words}")
            if run.warmup_failures:
                lines.append(f"{run.name}: warm-up failures: " + "; ".join(run.warmup_failures))
            skipped = sorted({line for w in run.workers for line in w.bundle_skipped})
            if skipped:
                lines.append(f"{run.name}: bundle entries skipped: " + "; ".join(skipped))
            kernels: dict[str, int] = {}
            for worker in run.workers:
                for name, count in worker.serving_by_kernel.items():
                    kernels[name] = kernels.get(name, 0) + count
            if kernels:
                lines.append(f"{run.name}: request-path compiles by kernel: " +
                             ", ".join(f"{k} {v}" for k, v in sorted(kernels.items(), key=lambda kv: -kv[1])))
        return "\n".join(lines)

    def format_requests(self) -> str:
        """One row per request: arrival, sizes, and per run its TTFT and the compile time it waited through."""
        header = ["request", "arrival s", "prompt", "output"]
        for run in self.runs:
            header += [f"{run.name} TTFT ms", "compile wait ms"]
        rows = []
        for request in self.requests:
            row = [str(request.rid), f"{request.arrival_s:.2f}", str(request.prompt_len), str(request.output_len)]
            for run in self.runs:
                ttft = run.ttft_s.get(request.rid)
                row += ["-" if ttft is None else f"{ttft * 1000:.0f}",
                        f"{run.compile_wait_s.get(request.rid, 0.0) * 1000:.0f}"]
            rows.append(row)
        widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
        lines = ["  ".join(c.rjust(w) for c, w in zip(header, widths, strict=True))]
        lines += ["  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
        return "\n".join(lines)

    def format_header(self) -> str:
        c = self.config
        return "\n".join([
            f"serve_sim: front + engine + {c.workers} worker(s) (spawn), backend {c.backend}, "
            f"{self.environment.get('triton', '?')} / torch {self.environment.get('torch', '?')}, "
            f"{self.environment.get('gpu') or self.environment.get('machine', '?')}, "
            f"load {self.environment.get('load_avg_1m', '?')}",
            f"trace (seed {c.trace.seed}): {self.trace_line}",
            f"model per rank: {c.shape.layers} layers of MoE (E{c.shape.experts} top-{c.shape.top_k} "
            f"H{c.shape.hidden} I{c.shape.intermediate}) + inverse RoPE FP8 ({c.shape.heads}x{c.shape.head_dim}); "
            f"max {c.shape.max_tokens} tokens / {c.max_num_seqs} requests per step",
            (f"warm-up plan: {self.plan_variants} variants ({self.plan_path})" if self.plan_path
             else "warm-up plan: none"),
        ])

    def to_json(self) -> dict[str, Any]:
        return {
            "config": self.config.to_dict(), "environment": self.environment, "trace": self.trace_line,
            "plan_variants": self.plan_variants,
            "runs": [{"name": r.name, "kernel_set": r.kernel_set, "warmup": r.warmup,
                      "compiles_on_path": r.compiles_on_path, "compile_s_on_path": r.compile_s_on_path,
                      "warmup_compiles": r.warmup_compiles, "warmup_s": r.warmup_s,
                      "startup_compiles": r.startup_compiles, "startup_compile_s": r.startup_compile_s,
                      "startup_cold": r.startup_cold, "startup_cold_s": r.startup_cold_s,
                      "startup_loads": r.startup_loads, "startup_load_s": r.startup_load_s,
                      "cold_on_path": r.cold_on_path,
                      "warmup_failures": r.warmup_failures, "startup_s": r.startup_s,
                      "ttft_p50_s": r.ttft_quantile(0.5), "ttft_p99_s": r.ttft_quantile(0.99),
                      "ttft_s": {str(k): v for k, v in sorted(r.ttft_s.items())},
                      "compile_wait_s": {str(k): v for k, v in sorted(r.compile_wait_s.items())},
                      "workers": [asdict(w) for w in r.workers], "step_tokens": r.step_tokens,
                      "decode_batches": r.decode_batches, "step_seconds": r.step_seconds,
                      "step_compile_ms": r.step_compile_ms,
                      "log_dir": r.log_dir} for r in self.runs],
        }


def _change(before: float, after: float) -> str:
    if before <= 0:
        return f"{before * 1000:.0f} -> {after * 1000:.0f} ms"
    return f"{before * 1000:.0f} -> {after * 1000:.0f} ms ({(after - before) / before * 100:+.0f}%)"


def _spread(values: list[int]) -> str:
    if not values:
        return "-"
    ordered = sorted(values)
    return f"min {ordered[0]}, median {int(statistics.median(ordered))}, max {ordered[-1]}"


def environment() -> dict[str, str]:
    """Versions and machine, for the record."""
    import torch
    import triton
    env = {"python": platform.python_version(), "torch": torch.__version__, "triton": f"triton {triton.__version__}",
           "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    if torch.cuda.is_available():
        env["gpu"] = torch.cuda.get_device_name(0)
    if hasattr(os, "getloadavg"):  # CPU compile times depend on what else the machine runs
        env["load_avg_1m"] = f"{os.getloadavg()[0]:.2f}"
    return env


def _calibrate_in_this_process(config: SimConfig, kernel_set: str, directory: str) -> None:
    import jitguard
    from jitguard.events import to_json_line

    from .model import SimModel

    # One layer is enough: every layer launches the same kernels with the same shapes.
    shape = replace(config.shape, layers=1)
    # Quiet: the calibration's "recompile" lines are expected, not news.
    jitguard.install(summary=False, stream=io.StringIO())
    with jitguard.offline(arch=90, compile=False), jitguard.watch() as recorder:
        model = SimModel(shape, kernel_set, "cpu", seed=config.trace.seed, values=False)
        for tokens in range(1, shape.max_tokens + 1):
            model.forward(tokens, [(0, tokens)])
    logs = os.path.join(directory, f"calibration-{kernel_set}")
    os.makedirs(logs, exist_ok=True)
    with open(os.path.join(logs, "calibration.ndjson"), "w", encoding="utf-8") as handle:
        handle.writelines(to_json_line(event) + "\n" for event in recorder.events)


def calibrate_plan(config: SimConfig, kernel_set: str, directory: str) -> tuple[str, int]:
    """Build the warm-up plan (see module docstring); returns (plan path, variants).

    The calibration runs in a fresh (spawned) process: in a process that already ran these
    kernels, Triton's in-memory cache would hide variants from the monitor. Its events are
    written as NDJSON to DIR/calibration-<set>/, so `jitguard warmup-plan DIR/calibration-<set>
    -o plan.json` makes the same plan.
    """
    import multiprocessing as mp

    from jitguard.startup.plan import build_plan

    process = mp.get_context("spawn").Process(target=_calibrate_in_this_process, args=(config, kernel_set, directory),
                                              name=f"serve-sim-calibration-{kernel_set}")
    process.start()
    process.join()
    if process.exitcode != 0:
        raise RuntimeError(f"serve_sim: the calibration process for {kernel_set} exited with code {process.exitcode}")
    plan = build_plan(os.path.join(directory, f"calibration-{kernel_set}"))
    path = os.path.join(directory, f"warmup-plan-{kernel_set}.json")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(plan, handle, indent=1)
    return path, plan["variants"]


def _build_bundle(plan_path: str, out_dir: str, kernel_set: str, out: TextIO) -> str:
    """Build the plan's compile bundle offline for sm_90 (what CI would do once for every server)."""
    from jitguard.startup.bundle_build import build_bundle

    t0 = time.perf_counter()
    path = os.path.join(out_dir, f"bundle-{kernel_set}.tgz")
    built = build_bundle(plan_path, path, arch=90, offline=True, env=dict(WORKER_KNOBS))
    out.write(f"[serve_sim] bundle for {kernel_set}: {built.kernel_entries} kernel entries, "
              f"{built.host_module_entries} host module(s), built offline in {time.perf_counter() - t0:.1f} s "
              f"-> {path}\n")
    return path


def run_simulation(config: SimConfig | None = None, runs: tuple[str, ...] = DEFAULT_RUNS,
                   out_dir: str | None = None, stream: TextIO | None = None, bundle: str | None = None) -> SimResult:
    """Run each of `runs` over the same seeded trace; returns a `SimResult` (see `format_table`).

    `out_dir` keeps the warm-up plans, the per-run jitguard logs (`jitguard report OUT/<run>/logs`)
    and `result.json`; default: a new temporary directory. Progress goes to `stream` (default stderr).
    A `+bundle` run installs a compile bundle before its warm-up: `bundle` (built elsewhere, e.g. in CI
    for the GPU machine), else one built here from the plan, offline for sm_90.
    """
    config = config or SimConfig()
    out = stream or sys.stderr
    unknown = [r for r in runs if r not in RUNS]
    if unknown:
        raise ValueError(f"serve_sim: unknown run {unknown[0]!r} (choose from {', '.join(RUNS)})")
    if config.backend not in ("offline", "cuda"):
        raise ValueError(f"serve_sim: backend must be 'offline' or 'cuda', not {config.backend!r}")
    out_dir = out_dir or tempfile.mkdtemp(prefix="serve-sim-")
    os.makedirs(out_dir, exist_ok=True)
    requests = make_trace(config.trace)
    plans: dict[str, tuple[str, int]] = {}
    for kernel_set in sorted({name.partition("+")[0] for name in runs if "+" in name}):
        t0 = time.perf_counter()
        plans[kernel_set] = calibrate_plan(config, kernel_set, out_dir)
        out.write(f"[serve_sim] warm-up plan for {kernel_set}: {plans[kernel_set][1]} variants "
                  f"(calibration {time.perf_counter() - t0:.1f} s) -> {plans[kernel_set][0]}\n")
    bundles = {kernel_set: bundle or _build_bundle(plans[kernel_set][0], out_dir, kernel_set, out)
               for kernel_set in sorted({name.partition("+")[0] for name in runs if name.endswith("+bundle")})}
    results = []
    for name in runs:
        kernel_set, _, warm = name.partition("+")
        plan_path = plans[kernel_set][0] if warm else None
        run_dir = os.path.join(out_dir, name.replace("+", "-"))
        engine_config = EngineConfig(kernel_set=kernel_set, shape=config.shape, backend=config.backend,
                                     workers=config.workers, max_num_seqs=config.max_num_seqs,
                                     plan_path=plan_path, log_dir=os.path.join(run_dir, "logs"),
                                     bundle_path=bundles.get(kernel_set) if name.endswith("+bundle") else None,
                                     seed=config.trace.seed)
        env = {"TRITON_CACHE_DIR": os.path.join(run_dir, "triton-cache"), **WORKER_KNOBS,
               "PYTHONPATH": os.pathsep.join(p for p in [os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                         os.environ.get("PYTHONPATH", "")] if p)}
        out.write(f"[serve_sim] run {name}: {len(requests)} requests ...\n")
        out.flush()
        t0 = time.perf_counter()
        raw = front_run(engine_config, requests, env)
        run = RunResult(name=name, kernel_set=kernel_set, warmup=bool(warm), ttft_s=raw["ttft"],
                        compile_wait_s=raw["step_compile_s"], workers=raw["workers"], startup_s=raw["startup_s"],
                        step_tokens=raw["step_tokens"], decode_batches=raw["decode_batches"],
                        step_seconds=raw["step_seconds"], step_compile_ms=raw["step_compile_ms"],
                        log_dir=engine_config.log_dir or "")
        out.write(f"[serve_sim] run {name}: done in {time.perf_counter() - t0:.1f} s, "
                  f"{run.compiles_on_path} compiles on the request path\n")
        results.append(run)
    first_plan = next(iter(plans.values()), ("", 0))
    result = SimResult(config=config, runs=results, trace_line=describe_trace(requests), environment=environment(),
                       plan_variants=first_plan[1], plan_path=first_plan[0], requests=requests)
    with open(os.path.join(out_dir, "result.json"), "w", encoding="utf-8") as handle:
        json.dump(result.to_json(), handle, indent=1, default=repr)
    return result
