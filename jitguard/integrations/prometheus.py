"""A Prometheus counter of Triton compiles: `jitguard_triton_compiles_total{kernel,phase,arrived,role,rank}`.

`count_compiles()` registers it (in prometheus_client's default registry, or the one given) and counts
every compile event of this process from when the jitguard monitor starts. The vLLM plugin calls it in
every vLLM process; any other server can call it next to its own /metrics.

Labels, each with a bounded set of values:
- `kernel`: the kernel's name; at most `max_kernels` distinct names per process (default 64, or
  JITGUARD_PROMETHEUS_KERNELS), later ones count under kernel="other", so a program that generates
  kernels cannot grow the series without bound;
- `phase`: "warmup" or "serving" (after `jitguard.mark_serving()`, or vLLM's warm-up);
- `arrived`: "cold" (compiled), "disk", "bundle" or "remote" (loaded from a cache), "unknown" where
  this Triton cannot tell;
- `role`, `rank`: the process's role and rank ("" when unnamed): bounded by the processes.

An alerting rule on `phase="serving"` says when a server compiled after its warm-up:
examples/multinode/alerts.yml.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

COUNTER_NAME = "jitguard_triton_compiles"
COUNTER_LABELS = ("kernel", "phase", "arrived", "role", "rank")
OTHER_KERNELS = "other"
DEFAULT_MAX_KERNELS = 64
MAX_KERNELS_VARIABLE = "JITGUARD_PROMETHEUS_KERNELS"
_counters: dict[int, CompileCounter] = {}  # id(registry) -> its counter, so a second call adds nothing


class CompileCounter:
    """Counts compile events in a Prometheus counter, one series per (kernel, phase, arrived, role, rank);
    kernel names beyond the first `max_kernels` count under kernel="other"."""

    def __init__(self, counter: Any, max_kernels: int) -> None:
        self.counter = counter
        self.max_kernels = max_kernels
        self.kernels: set[str] = set()

    def kernel_label(self, name: str) -> str:
        """`name` while fewer than `max_kernels` names are labelled (or it is one of them), else "other"."""
        if name in self.kernels:
            return name
        if len(self.kernels) >= self.max_kernels:
            return OTHER_KERNELS
        self.kernels.add(name)
        return name

    def __call__(self, event: Any) -> None:
        self.counter.labels(kernel=self.kernel_label(event.label), phase=event.phase,
                            arrived=getattr(event, "arrived", None) or "unknown", role=event.role or "",
                            rank="" if event.rank is None else str(event.rank)).inc()


def max_kernels_from_env() -> int:
    """JITGUARD_PROMETHEUS_KERNELS as a positive int (default 64); a bad value is said once and the default used."""
    text = os.environ.get(MAX_KERNELS_VARIABLE, "")
    try:
        return max(1, int(text)) if text else DEFAULT_MAX_KERNELS
    except ValueError:
        sys.stderr.write(f"[jitguard] {MAX_KERNELS_VARIABLE}={text!r} is not a number; "
                         f"labelling at most {DEFAULT_MAX_KERNELS} kernels\n")
        return DEFAULT_MAX_KERNELS


def _new_counter(prometheus_client: Any, registry: Any) -> Any:
    try:
        return prometheus_client.Counter(COUNTER_NAME, "Triton kernel compiles (and cache loads) seen by jitguard",
                                         list(COUNTER_LABELS), registry=registry)
    except ValueError:  # registered already in this registry, e.g. by another copy of this module
        existing = getattr(registry, "_names_to_collectors", {}).get(COUNTER_NAME)
        if existing is None or tuple(getattr(existing, "_labelnames", ())) != COUNTER_LABELS:
            sys.stderr.write(f"[jitguard] a metric named {COUNTER_NAME} with other labels is registered already; "
                             "compiles are not counted in Prometheus\n")
            return None
        return existing


def count_compiles(registry: Any = None, max_kernels: int | None = None) -> CompileCounter | None:
    """Count this process's compiles in `registry` (prometheus_client's default one if None).

    Returns the counter, or None when prometheus_client is not installed or the name is taken by a
    metric with other labels (said on stderr). Calling it again with the same registry changes nothing.
    """
    try:
        import prometheus_client
    except ImportError:
        return None
    registry = registry if registry is not None else prometheus_client.REGISTRY
    counting = _counters.get(id(registry))
    if counting is None:
        counter = _new_counter(prometheus_client, registry)
        if counter is None:
            return None
        counting = _counters[id(registry)] = CompileCounter(counter, max_kernels or max_kernels_from_env())
    # By name: jitguard run's sitecustomize may have loaded the bootstrap already (without its parent packages).
    hook = importlib.import_module("jitguard.runtime.bootstrap.triton_hook")
    hook.add_listener(counting, key=f"prometheus-{id(registry)}")
    return counting
