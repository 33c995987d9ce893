"""Compile events for `triton.compile` calls that no JIT launch made: Inductor's generated kernels (in its
compile workers and in the server), Gluon or Triton kernels compiled by hand, IR files.

Triton 3.4+ tells every `triton.compile` call to `knobs.compilation.listener` (cold compiles and
disk-cache loads alike); the monitor passes the calls its JIT hooks did not bracket here. Before 3.4
the monitor wraps `triton.compile` instead (`triton_compat.patch_compile_entry`) and passes what the
call returned. One kernel's variants are the distinct compiled hashes of its (name, file, line) in
this process, explained against each other as JIT variants are, with advice that fits the origin
(`compile_origin.advise_for_origin`).

Importing this module imports neither Triton nor torch; `record` is called with Triton loaded.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import Any

from jitguard.events import COST_PROBE_ATTRIBUTE, Cause, CompileEvent, ParamSpec
from jitguard.explain import explain_recompile
from jitguard.internal_frames import callers
from jitguard.runtime.compile_origin import InductorFacts, advise_for_origin, inductor_facts, origin_of_direct_compile

_STACK_DEPTH = 48


@dataclass
class DirectCompile:
    """One `triton.compile` call as the listener (or the compile wrapper) saw it."""

    src: Any
    metadata: Any  # the compiled kernel's metadata: a dict, or a named tuple before 3.4
    cache_hit: bool | None
    compile_ms: float | None
    started_wall: float | None = None  # time.time() when the call started, where known


class DirectCompileHistory:
    """The variants each directly compiled kernel had in this process: {(name, file, line): {hash: variant}}."""

    def __init__(self) -> None:
        self._variants: dict[tuple[str, str, int], dict[str, tuple[dict[str, ParamSpec], dict[str, Any]]]] = {}
        self._digests: set[str] = set()  # every compiled hash recorded in this process
        self._lock = threading.Lock()

    def recorded(self, digest: str) -> bool:
        """Whether a kernel of this compiled hash already has an event in this process."""
        with self._lock:
            return digest in self._digests

    def add(self, where: tuple[str, str, int], digest: str, params: dict[str, ParamSpec],
            options: dict[str, Any]) -> tuple[int, list[Cause]]:
        """(variant number, causes) of a compiled hash: a hash seen before keeps its number, with no causes."""
        with self._lock:
            known = self._variants.setdefault(where, {})
            if digest:
                self._digests.add(digest)
            if digest and digest in known:
                return list(known).index(digest) + 1, []
            causes = explain_recompile(params, options, list(known.values())) if known else []
            known[digest or f"#{len(known)}"] = (params, options)
            return len(known), causes


def _metadata_dict(metadata: Any) -> dict[str, Any]:
    if isinstance(metadata, dict):
        return metadata
    as_dict = getattr(metadata, "_asdict", None)
    return dict(as_dict()) if callable(as_dict) else {}


def _config_names_on_stack(frame: Any) -> set[str]:
    """The names an autotune config being compiled sets (Inductor's `_precompile_config(cfg)`, or any
    caller holding a Triton `Config` as `cfg`/`config`): its kwargs and its launch options."""
    from jitguard.triton_compat import config_names  # called on the compile path, Triton loaded

    for caller in callers(frame, _STACK_DEPTH):
        for name in ("cfg", "config"):
            config = caller.f_locals.get(name)
            if isinstance(getattr(config, "kwargs", None), dict):
                return config_names(config)
    return set()


def _arrival(digest: str, call: DirectCompile) -> str | None:
    from jitguard import triton_cache
    from jitguard.runtime.arrival import kernel_arrival

    entry_dir = os.path.join(triton_cache.triton_cache_dir(), triton_cache.cache_entry_name(digest)) if digest else None
    return kernel_arrival(call.cache_hit, entry_dir, call.started_wall, triton_cache.remote_cache_active())


def record_direct_compile(monitor: Any, call: DirectCompile, frame: Any,
                          history: DirectCompileHistory) -> CompileEvent | None:
    """The event of one direct `triton.compile` call, or None for a jitguard price check's copy."""
    tc = monitor._tc
    jit_fn = tc.source_kernel(call.src)
    if jit_fn is not None and getattr(jit_fn, COST_PROBE_ATTRIBUTE, False):
        return None
    metadata = _metadata_dict(call.metadata)
    compile_info = tc.source_compile_info(call.src, metadata)
    params = tc.param_specs(jit_fn, compile_info, None) if jit_fn is not None else {}
    options = tc.launch_options(compile_info)
    file, line = tc.kernel_location(jit_fn) if jit_fn is not None else (str(getattr(call.src, "path", "") or ""), 0)
    name = tc.source_name(call.src, metadata)
    origin = origin_of_direct_compile(jit_fn is not None and tc.is_gluon_kernel(jit_fn), frame)
    digest = tc.source_key(call.src, metadata)
    variant, causes = history.add((name, file, line), digest, params, options)
    config_names = _config_names_on_stack(frame)
    for cause in causes:
        if cause.param in config_names and cause.advice != "expected":
            cause.advice, cause.message = "expected", f"{cause.param} is set by the autotune configs (expected)"
    facts: InductorFacts | None = inductor_facts(file, line) if origin == "inductor" else None
    arrived = _arrival(digest, call)
    return CompileEvent(
        kernel=name, module=(getattr(jit_fn, "module", "") or "") if jit_fn is not None else "", file=file,
        line=line, call_site=tc.user_call_site(frame, monitor._skip_dirs), pid=os.getpid(), ppid=os.getppid(),
        rank=monitor.rank, role=monitor.role, device=0, phase=monitor.phase, variant=variant, key=digest,
        params=params, options=options, compile_ms=call.compile_ms,
        disk_cache_hit=None if arrived is None else arrived != "cold", arrived=arrived,
        causes=advise_for_origin(causes, origin, facts), triton_version=monitor.triton_version, time=time.time(),
        autotuning=bool(config_names), origin=origin, inductor=facts.to_dict() if facts is not None else None)
