"""The vLLM plugin: entry point `jitguard = jitguard.integrations.vllm:register` (`vllm.general_plugins`).

vLLM calls `register()` in every process it starts (API server, engine core, workers). With
JITGUARD=1 it:

- starts the jitguard monitor now if Triton is imported, else on the process's first `import triton`;
- names the process (role "api server", "engine core", "worker" with its rank) and writes its
  record at once, so a process that never compiles is still in the report;
- does the same in workers that vLLM forks (their `register()` call is skipped: vLLM loads plugins
  once per process, and a fork inherits "already loaded");
- marks the serving phase when a worker's `compile_or_warm_up_model()` returns;
- counts compiles in the Prometheus counter `jitguard_triton_compiles_total{kernel,phase,arrived,role,rank}`
  (jitguard.integrations.prometheus) when prometheus_client is importable; vLLM's /metrics shows it
  for the processes it aggregates;
- makes `ray.init()` in this process (vLLM's Ray executor) watch every Ray worker of the job
  (jitguard.integrations.ray), and names vLLM's Ray actors by their vLLM roles.

Without JITGUARD=1 it does nothing at all. Calling it again is harmless. vLLM's own
`--jit-monitor-mode` hook chains whatever hook was installed before it, so both keep working.
"""

from __future__ import annotations

import functools
import importlib
import os
import re
import sys
from collections.abc import Callable
from typing import Any, cast

_WORKER_MODULE_PREFIXES = ("vllm.v1.worker.", "vllm.worker.")
_PATCHED_MARK = "_jitguard_marks_serving"
_state: dict[str, Any] = {"registered_pid": None}
# vLLM's Ray actor classes (by the module they are defined under) and the role their process plays.


def process_role(process_name: str, argv: list[str]) -> tuple[str | None, int | None]:
    """(role, rank) of a vLLM process from its multiprocessing name and argv.

    >>> process_role("VllmWorker-3", [])
    ('worker', 3)
    >>> process_role("EngineCore_DP1", [])
    ('engine core DP1', None)
    """
    match = re.fullmatch(r"VllmWorker-(\d+)", process_name) or re.fullmatch(r"Worker_(?:TP)?(\d+)", process_name)
    if match:
        return "worker", int(match.group(1))
    match = re.fullmatch(r"EngineCore(?:_DP(\d+))?", process_name)
    if match:
        return ("engine core" + (f" DP{match.group(1)}" if match.group(1) else "")), None
    match = re.fullmatch(r"ApiServer_(\d+)", process_name)
    if match:
        return f"api server {match.group(1)}", None
    if process_name == "MainProcess":
        text = " ".join(argv)
        if "api_server" in text or re.search(r"(^|[\s/])vllm\s+serve\b", text):
            return "api server", None
        return "main", None
    return process_name or None, None


def _current_process_name() -> str:
    import multiprocessing

    return multiprocessing.current_process().name


def _triton_hook() -> Any:
    # By name: jitguard run's sitecustomize may have loaded it already (without its parent packages).
    return importlib.import_module("jitguard.runtime.bootstrap.triton_hook")


def _name_this_process(process_name: str) -> None:
    from jitguard.integrations.ray import current_role

    # In a Ray worker, the actor or task names the process (and renames it at each compile).
    role, rank = current_role() or process_role(process_name, list(sys.argv))
    _triton_hook().set_pending_process_info(role=role, rank=rank)
    from jitguard.runtime import monitor

    monitor.record_process_role(role, rank)


def mark_serving_now() -> None:
    """Enter the serving phase in this process (deferred until the monitor starts, if it has not)."""
    if "triton" in sys.modules:
        from jitguard.runtime import monitor

        if monitor.current() is not None or _triton_hook().activate_monitor():
            monitor.mark_serving()
            return
    _triton_hook().set_pending_phase("serving")


def _wrap_warm_up(method: Callable) -> Callable:
    @functools.wraps(method)
    def compile_or_warm_up_model(*args: Any, **kwargs: Any) -> Any:
        result = method(*args, **kwargs)
        try:
            mark_serving_now()
        except Exception as exc:
            sys.stderr.write(f"[jitguard] could not mark the serving phase: {type(exc).__name__}: {exc}\n")
        return result

    setattr(compile_or_warm_up_model, _PATCHED_MARK, True)
    return compile_or_warm_up_model


def patch_worker_module(module: Any) -> int:
    """Wrap `compile_or_warm_up_model` of every class defined in `module`; returns how many."""
    patched = 0
    for value in list(vars(module).values()):
        if not isinstance(value, type) or value.__module__ != module.__name__:
            continue
        method = value.__dict__.get("compile_or_warm_up_model")
        if callable(method) and not getattr(method, _PATCHED_MARK, False):
            cast(Any, value).compile_or_warm_up_model = _wrap_warm_up(method)  # a class of vLLM's, found at run time
            patched += 1
    return patched


class _WorkerModuleLoader:
    def __init__(self, loader: Any, spec: Any) -> None:
        self._loader = loader
        self._spec = spec

    def create_module(self, spec: Any) -> Any:
        create = getattr(self._loader, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module: Any) -> None:
        self._spec.loader = self._loader
        module.__loader__ = self._loader
        self._loader.exec_module(module)
        patch_worker_module(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


class WorkerModuleWatcher:
    """Patches vLLM worker modules as they are imported (they load after the plugin runs)."""

    jitguard_vllm_worker_watcher = True

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if not fullname.startswith(_WORKER_MODULE_PREFIXES):
            return None
        spec = _triton_hook().find_spec_with_other_finders(self, fullname, path, target)
        if spec is None:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _WorkerModuleLoader(spec.loader, spec)
        return spec


def _watch_worker_modules() -> None:
    for name, module in list(sys.modules.items()):
        if name.startswith(_WORKER_MODULE_PREFIXES) and module is not None:
            patch_worker_module(module)
    if not any(getattr(f, "jitguard_vllm_worker_watcher", False) for f in sys.meta_path):
        sys.meta_path.insert(0, WorkerModuleWatcher())


def _count_compiles_in_prometheus() -> None:
    from jitguard.integrations.prometheus import count_compiles

    count_compiles()


def _reach_ray_workers() -> None:
    # vLLM's Ray executor calls ray.init() in this process: Ray then asks jitguard's hook for the job's runtime_env.
    from jitguard.integrations.ray import set_runtime_env_hook

    environ = dict(os.environ)
    set_runtime_env_hook(environ)
    for name in ("RAY_RUNTIME_ENV_HOOK", "JITGUARD_RAY_PREVIOUS_RUNTIME_ENV_HOOK"):
        if name in environ:
            os.environ[name] = environ[name]


def register() -> None:
    """vLLM's plugin entry point: inert unless JITGUARD=1 (see the module docstring)."""
    if os.environ.get("JITGUARD") != "1":
        return
    if _state["registered_pid"] == os.getpid():
        return
    _state["registered_pid"] = os.getpid()
    try:
        hook = _triton_hook()
        _name_this_process(_current_process_name())
        _count_compiles_in_prometheus()
        _reach_ray_workers()
        hook.install_import_hook()
        _watch_worker_modules()
        # A forked worker never calls register(): name it when multiprocessing starts it.
        hook.name_multiprocessing_children(_name_this_process)
    except Exception as exc:
        sys.stderr.write(f"[jitguard] vLLM plugin failed in pid {os.getpid()}: {type(exc).__name__}: {exc}\n")
