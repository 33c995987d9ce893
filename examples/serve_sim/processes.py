"""The simulation's processes, laid out like vLLM's: a front process (the API server: sends the
trace's requests on time, measures time to first token), an engine process (the engine core:
schedules continuous batches), and worker processes (one per tensor-parallel rank: run the model
for each step). The engine and the workers are started with the spawn method.

Messages: front -> engine ("request", Request) / ("stop",); engine -> workers ("step", T,
segments) / ("stop",); workers -> engine ("ready", rank, info) / ("done", rank, compiles,
compile_ms, step_s) / ("stats", rank, info); engine -> front ("ready", info) / ("first_token", rid,
step_compile_ms) / ("stats", info).
"""

from __future__ import annotations

import io
import os
import queue
import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class EngineConfig:
    """What the engine and its workers need (picklable: sent to spawned processes)."""

    kernel_set: str
    shape: Any  # ModelShape
    backend: str  # "offline" (CPU, compile-only sm_90) or "cuda"
    workers: int = 2
    max_num_seqs: int = 32
    plan_path: str | None = None  # warm-up plan applied by every worker at start-up
    bundle_path: str | None = None  # compile bundle installed by every worker before its warm-up
    log_dir: str | None = None  # jitguard NDJSON logs, one file per worker
    seed: int = 0


@dataclass
class WorkerStats:
    """One worker's compile counts, by phase."""

    rank: int
    warmup_compiles: int = 0
    warmup_s: float = 0.0
    warmup_failures: list[str] = field(default_factory=list)
    profile_compiles: int = 0  # compiled by the start-up profile step
    profile_s: float = 0.0
    serving_compiles: int = 0
    serving_compile_s: float = 0.0
    serving_by_kernel: dict[str, int] = field(default_factory=dict)
    serving_loads: int = 0  # of serving_compiles, loaded from a cache or bundle
    load_s: float = 0.0
    # start-up (warm-up and profile step) Triton time, cold compiles apart from loads (CompileEvent.arrived)
    startup_cold: int = 0
    startup_cold_s: float = 0.0
    startup_loads: int = 0
    startup_load_s: float = 0.0
    bundle_skipped: list[str] = field(default_factory=list)  # the bundle install's lines, one per skip


# --- worker --------------------------------------------------------------------------------------

def worker_main(rank: int, config: EngineConfig, commands: Any, results: Any) -> None:
    """A tensor-parallel rank: build the model, warm up from the plan, then run steps."""
    import contextlib

    import jitguard

    started = time.perf_counter()
    stack = contextlib.ExitStack()
    if config.backend == "offline":
        stack.enter_context(jitguard.offline(arch=90, compile=True))
        device = "cpu"
    else:
        import torch
        device = torch.device("cuda", rank % torch.cuda.device_count())
        torch.cuda.set_device(device)
    jitguard.install(dir=config.log_dir, summary=False, stream=io.StringIO())
    jitguard.set_process_info(role="worker", rank=rank)
    from .model import SimModel

    model = SimModel(config.shape, config.kernel_set, device, seed=config.seed)
    stats = WorkerStats(rank=rank, load_s=time.perf_counter() - started)
    if config.plan_path:
        with jitguard.watch() as warm_rec:
            result = jitguard.warmup(config.plan_path, stream=io.StringIO(), bundle=config.bundle_path)
        stats.warmup_compiles = len(warm_rec.events)
        stats.warmup_s = result.seconds
        stats.warmup_failures = [f"{o.label}: {o.reason}" for o in result.failures]
        stats.bundle_skipped = list(result.bundle.skipped) if result.bundle is not None else []
    # A start-up profile step at the full token budget, as vLLM's profile run: it initialises the
    # libraries (cuBLAS, lazily loaded modules) and compiles whatever variants that size needs.
    with jitguard.watch() as profile_rec:
        profile_started = time.perf_counter()
        model.forward(config.shape.max_tokens, [(0, config.shape.max_tokens)])
        if config.backend == "cuda":
            import torch
            torch.cuda.synchronize()
        stats.profile_s = time.perf_counter() - profile_started
    stats.profile_compiles = len(profile_rec.events)
    for event in (warm_rec.events if config.plan_path else []) + profile_rec.events:
        if event.loaded:
            stats.startup_loads += 1
            stats.startup_load_s += (event.compile_ms or 0.0) / 1000.0
        else:
            stats.startup_cold += 1
            stats.startup_cold_s += (event.compile_ms or 0.0) / 1000.0
    jitguard.mark_serving()
    results.put(("ready", rank, None))
    with jitguard.watch() as recorder:
        seen = 0
        while True:
            message = commands.get()
            if message[0] == "stop":
                break
            _, num_tokens, segments = message
            step_started = time.perf_counter()
            model.forward(num_tokens, segments)
            if config.backend == "cuda":
                import torch
                torch.cuda.synchronize()
            step_s = time.perf_counter() - step_started
            new = recorder.events[seen:]
            seen = len(recorder.events)
            results.put(("done", rank, len(new), sum(e.compile_ms or 0.0 for e in new), step_s))
        for event in recorder.events:
            stats.serving_compiles += 1
            stats.serving_compile_s += (event.compile_ms or 0.0) / 1000.0
            stats.serving_by_kernel[event.kernel] = stats.serving_by_kernel.get(event.kernel, 0) + 1
            stats.serving_loads += event.loaded
    results.put(("stats", rank, stats))
    jitguard.uninstall()
    stack.close()


# --- engine --------------------------------------------------------------------------------------

@dataclass
class _Running:
    rid: int
    prompt_len: int
    output_len: int
    decoded: int = 0


def engine_main(config: EngineConfig, inbox: Any, outbox: Any) -> None:
    """The engine core: start the workers (spawn), then schedule steps until told to stop.

    Each step batches one decode token per running request with prompt chunks of waiting requests
    (first come, first served, chunked prefill) up to `max_tokens` tokens and `max_num_seqs`
    requests; a request's first token is out when the step that ran its last prompt chunk finishes.
    """
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    commands = [ctx.Queue() for _ in range(config.workers)]
    workers = [ctx.Process(target=worker_main, args=(rank, config, commands[rank], results), daemon=True,
                           name=f"serve-sim-worker-{rank}") for rank in range(config.workers)]
    for worker in workers:
        worker.start()
    for _ in workers:
        kind, _rank, _info = _get(results, workers)
        assert kind == "ready", kind
    outbox.put(("ready", {"workers": config.workers}))

    # A receiver thread takes requests off the front's queue as they come, also during a step
    # (as vLLM's engine core does with its input thread), so a request that arrives while a step
    # compiles is known to have waited on that compile.
    import threading

    arrivals: queue.Queue[Any] = queue.Queue()

    def receive() -> None:
        while True:
            message = inbox.get()
            arrivals.put((message, time.monotonic()))
            if message[0] == "stop":
                return

    threading.Thread(target=receive, daemon=True, name="serve-sim-engine-input").start()
    # [request, compile ms it waited through, prompt tokens done, arrival (monotonic clock)]
    waiting: list[list[Any]] = []
    running: list[_Running] = []
    stopping = False
    step_tokens: list[int] = []
    decode_batches: list[int] = []
    step_seconds: list[float] = []
    step_compile_ms: list[float] = []
    budget = config.shape.max_tokens

    def take_arrivals(block: bool) -> None:
        nonlocal stopping
        try:
            while True:
                message, arrived_at = arrivals.get(timeout=0.5) if block else arrivals.get_nowait()
                block = False
                if message[0] == "stop":
                    stopping = True
                else:
                    waiting.append([message[1], 0.0, 0, arrived_at])
        except queue.Empty:
            pass

    while True:
        take_arrivals(block=not waiting and not running and not stopping)
        if stopping and not waiting and not running:
            break
        if not waiting and not running:
            continue
        decoding = list(running)
        segments = [(r.prompt_len + r.decoded, 1) for r in decoding]
        tokens = len(segments)
        # Chunked prefill, first come first served: the head request takes what budget is left;
        # its first token is out when the step with its last chunk finishes.
        admitted = []
        in_prefill = 0
        while waiting and tokens < budget and len(running) + in_prefill < config.max_num_seqs:
            entry = waiting[0]
            request, prefilled = entry[0], entry[2]
            chunk = min(request.prompt_len - prefilled, budget - tokens)
            segments.append((prefilled, chunk))
            tokens += chunk
            entry[2] += chunk
            in_prefill += 1
            if entry[2] < request.prompt_len:
                break  # budget used up; the rest of this prompt goes in the next step
            admitted.append(waiting.pop(0))
        if tokens == 0:
            continue
        step_tokens.append(tokens)
        decode_batches.append(len(decoding))
        step_started = time.monotonic()
        for command in commands:
            command.put(("step", tokens, segments))
        compile_ms = step_s = 0.0
        for _ in workers:
            kind, _rank, _count, ms, worker_step_s = _get(results, workers)
            compile_ms = max(compile_ms, ms)  # the ranks compile in parallel: the step waits for the slowest
            step_s = max(step_s, worker_step_s)
        step_seconds.append(step_s)
        step_compile_ms.append(compile_ms)
        step_ended = time.monotonic()
        take_arrivals(block=False)  # requests that came during the step waited on part of it
        for entry in waiting + admitted:
            # The share of this step's compile time that fell after the request arrived.
            overlap = step_ended - max(step_started, entry[3])
            if overlap > 0 and compile_ms:
                entry[1] += compile_ms * min(1.0, overlap / max(step_ended - step_started, 1e-9))
        for item in decoding:
            item.decoded += 1
        for request, waited_ms, _, _ in admitted:
            outbox.put(("first_token", request.rid, waited_ms))
            running.append(_Running(request.rid, request.prompt_len, request.output_len, decoded=1))
        running = [r for r in running if r.decoded < r.output_len]
    for command in commands:
        command.put(("stop",))
    stats = []
    for _ in workers:
        kind, _rank, info = _get(results, workers)
        stats.append(info)
    for worker in workers:
        worker.join(timeout=30)
    outbox.put(("stats", {"workers": sorted(stats, key=lambda s: s.rank), "step_tokens": step_tokens,
                          "decode_batches": decode_batches, "step_seconds": step_seconds,
                          "step_compile_ms": step_compile_ms}))


def _get(results: Any, workers: list) -> tuple:
    """The next worker message; fails with the worker's exit code if one died."""
    while True:
        try:
            return results.get(timeout=1.0)
        except queue.Empty:
            dead = [w for w in workers if w.exitcode not in (None, 0)]
            if dead:
                raise RuntimeError(f"serve_sim: {dead[0].name} exited with code {dead[0].exitcode}") from None


# --- front ---------------------------------------------------------------------------------------

def front_run(config: EngineConfig, requests: list, env: dict[str, str], timeout_s: float = 1800.0) -> dict[str, Any]:
    """Start the engine (spawn), send `requests` at their arrival times, return TTFTs and stats."""
    import multiprocessing as mp
    import threading

    ctx = mp.get_context("spawn")
    inbox, outbox = ctx.Queue(), ctx.Queue()
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # spawned children copy the environment at start
    try:
        t0 = time.perf_counter()
        engine = ctx.Process(target=engine_main, args=(config, inbox, outbox), daemon=False, name="serve-sim-engine")
        engine.start()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    try:
        _kind, _info = _get_from_engine(outbox, engine, timeout_s)
        startup_s = time.perf_counter() - t0
        sent: dict[int, float] = {}

        def send() -> None:
            start = time.perf_counter()
            for request in requests:
                delay = start + request.arrival_s - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                sent[request.rid] = time.perf_counter()
                inbox.put(("request", request))
            inbox.put(("stop",))

        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        ttft: dict[int, float] = {}
        compile_wait: dict[int, float] = {}
        deadline = time.perf_counter() + timeout_s
        stats = None
        while stats is None:
            message = _get_from_engine(outbox, engine, max(1.0, deadline - time.perf_counter()))
            if message[0] == "first_token":
                _, rid, step_compile_ms = message
                ttft[rid] = time.perf_counter() - sent[rid]
                compile_wait[rid] = step_compile_ms / 1000.0
            elif message[0] == "stats":
                stats = message[1]
        sender.join()
        engine.join(timeout=60)
        return {"startup_s": startup_s, "ttft": ttft, "step_compile_s": compile_wait, **stats}
    finally:
        if engine.is_alive():
            engine.terminate()
            engine.join(timeout=10)


def _get_from_engine(outbox: Any, engine: Any, timeout_s: float) -> tuple:
    deadline = time.perf_counter() + timeout_s
    while True:
        try:
            return outbox.get(timeout=1.0)
        except queue.Empty:
            if engine.exitcode not in (None, 0):
                raise RuntimeError(f"serve_sim: the engine process exited with code {engine.exitcode}") from None
            if time.perf_counter() > deadline:
                raise TimeoutError(f"serve_sim: no answer from the engine in {timeout_s:.0f} s") from None
