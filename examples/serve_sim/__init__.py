"""serve_sim: Triton recompiles on a serving request path, before and after jitguard.

A front process, an engine process and worker processes (spawn), as vLLM lays them out, serve a
seeded request trace through an MoE layer stack and the inverse-RoPE FP8 kernel of
`jitguard.kernels`, once with the kernels "as upstream ships" (no do_not_specialize, no
warm-up) and once with jitguard's kernels and a warm-up plan. See README.md.

    import sys; sys.path.insert(0, "examples")
    from serve_sim import SimConfig, run_simulation
    result = run_simulation(SimConfig.cpu_small())
    print(result.format_header()); print(result.format_table())
"""

from .model import GPU_SHAPE, ModelShape
from .simulation import DEFAULT_RUNS, RUNS, RunResult, SimConfig, SimResult, run_simulation
from .trace import Request, TraceSpec, make_trace

__all__ = [
           "DEFAULT_RUNS",
           "GPU_SHAPE",
           "RUNS",
           "ModelShape",
           "Request",
           "RunResult",
           "SimConfig",
           "SimResult",
           "TraceSpec",
           "make_trace",
           "run_simulation",
]
