"""Ray: every worker of a Ray job watched, on every node, through Ray's own runtime_env.

`jitguard run` puts `RAY_RUNTIME_ENV_HOOK=jitguard.integrations.ray.add_to_runtime_env` in the
command's environment. Ray calls that hook in the driver's `ray.init()` with the job's runtime_env;
it returns the runtime_env with jitguard's variables (JITGUARD, JITGUARD_DIR, JITGUARD_MODE,
JITGUARD_OFFLINE, JITGUARD_BUNDLE) added to `env_vars` and a `worker_process_setup_hook` that starts jitguard in each
worker Ray starts for the job, on any node, whether the program started the node or `ray start` did.
A hook that was already set (RAY_RUNTIME_ENV_HOOK, the job's own setup hook) runs as before.

In a worker, each compile is recorded under the actor class (`actor Trainer`) or the task
(`task embed`) that compiled it, and the process record carries its node (JITGUARD_NODE: host and
Ray node id): several Ray nodes on one host stay apart in `jitguard report`. vLLM's Ray actors take
their vLLM roles (ray_actor_role); the rank is torch.distributed's once
the worker has joined its process group.

Each node writes its logs under the same JITGUARD_DIR path on that node: `jitguard report DIR...`
merges the directories collected from every node. A job that `jitguard run` does not start (`ray job
submit`, say) is watched by passing `runtime_env_for_workers(by_name=True)` as its runtime_env; so is a
driver started by `uv run`, where Ray calls its own uv hook instead of RAY_RUNTIME_ENV_HOOK.

This module never imports Ray: the hooks run where Ray has already imported itself.
"""

from __future__ import annotations

import importlib
import os
import socket
import sys
from collections.abc import Callable
from typing import Any

RUNTIME_ENV_HOOK = "jitguard.integrations.ray.add_to_runtime_env"
# RAY_RUNTIME_ENV_HOOK as the command had it before `jitguard run` put ours there: ours calls it first.
PREVIOUS_HOOK_VARIABLE = "JITGUARD_RAY_PREVIOUS_RUNTIME_ENV_HOOK"
WORKER_SETUP_HOOK = "jitguard.integrations.ray.watch_worker"
PASSED_VARIABLES = ("JITGUARD", "JITGUARD_DIR", "JITGUARD_MODE", "JITGUARD_OFFLINE", "JITGUARD_SUMMARY",
                    "JITGUARD_BUNDLE")


# vLLM runs its workers and data-parallel engine cores as Ray actors of these classes.
_RAY_ACTOR_ROLES = {"RayWorkerWrapper": "worker", "DPEngineCoreActor": "engine core"}


def ray_actor_role(function_name: str) -> str | None:
    """The vLLM role of a Ray actor method ("vllm.v1.executor.ray_utils.RayWorkerWrapper.execute_method"), or None.

    >>> ray_actor_role("vllm.v1.executor.ray_utils.RayWorkerWrapper.execute_method")
    'worker'
    >>> ray_actor_role("myapp.RayWorkerWrapper.run") is None
    True
    """
    parts = function_name.split(".")
    if len(parts) < 3 or parts[0] != "vllm":
        return None
    return _RAY_ACTOR_ROLES.get(parts[-2])


def set_runtime_env_hook(env: dict[str, str]) -> None:
    """Make `ray.init()` in a process started with `env` call `add_to_runtime_env` (chaining a hook set there)."""
    previous = env.get("RAY_RUNTIME_ENV_HOOK")
    if previous and previous != RUNTIME_ENV_HOOK:
        env[PREVIOUS_HOOK_VARIABLE] = previous
    env["RAY_RUNTIME_ENV_HOOK"] = RUNTIME_ENV_HOOK


def _load_callable(dotted: str) -> Callable[..., Any]:
    module_name, _, attribute = dotted.rpartition(".")
    if not module_name:
        raise ValueError(f"{dotted!r} is not a module.attribute path")
    return getattr(importlib.import_module(module_name), attribute)


def add_to_runtime_env(runtime_env: dict | None) -> dict:
    """Ray's RAY_RUNTIME_ENV_HOOK: the job's runtime_env with jitguard's worker set-up added (see module doc)."""
    previous = os.environ.get(PREVIOUS_HOOK_VARIABLE)
    if previous:
        runtime_env = _load_callable(previous)(runtime_env)
    if os.environ.get("JITGUARD") != "1":
        return dict(runtime_env or {})
    return runtime_env_for_workers(runtime_env)


def runtime_env_for_workers(base: dict | None = None, by_name: bool = False) -> dict:
    """`base` (a runtime_env) plus jitguard: its variables in `env_vars` (the job's own win), its setup hook.

    `by_name=True` names the hook by its import path, a runtime_env that JSON can hold (`ray job submit
    --runtime-env-json`); a worker that cannot import jitguard then fails to start. Otherwise the hook is a
    function Ray ships by value, which starts jitguard where it is installed and says where it is not.
    """
    env = dict(base or {})
    env_vars = dict(env.get("env_vars") or {})
    for name in PASSED_VARIABLES:
        if name in os.environ:
            env_vars.setdefault(name, os.environ[name])
    env_vars.setdefault("JITGUARD", "1")
    env["env_vars"] = env_vars
    theirs = env.get("worker_process_setup_hook")
    if by_name:
        if theirs is not None and theirs != WORKER_SETUP_HOOK:
            raise ValueError(f"the runtime_env already has a worker_process_setup_hook ({theirs!r}): with "
                             f"by_name=True call {WORKER_SETUP_HOOK}() from it instead")
        env["worker_process_setup_hook"] = WORKER_SETUP_HOOK
    else:
        env["worker_process_setup_hook"] = worker_setup_calling(theirs)
    return env


def worker_setup_calling(theirs: Any) -> Callable[[], None]:
    """A setup hook that starts jitguard in the worker, then runs `theirs` (a callable, an import path, or None).

    Built as a closure that refers to nothing of this module, so Ray pickles it by value: a node
    whose Python lacks jitguard still starts its workers, each saying once on stderr that it is not watched.
    """
    def jitguard_ray_worker_setup() -> None:
        import importlib
        import os
        import sys

        try:
            integration = importlib.import_module("jitguard.integrations.ray")
        except ImportError as exc:
            sys.stderr.write(f"[jitguard] Ray worker pid {os.getpid()} is not watched: jitguard is not importable "
                             f"in this node's Python ({exc}); install jitguard[monitor] there\n")
        else:
            integration.watch_worker()
        if isinstance(theirs, str):
            module_name, _, attribute = theirs.rpartition(".")
            getattr(importlib.import_module(module_name), attribute)()
        elif theirs is not None:
            theirs()

    return jitguard_ray_worker_setup


def _ray_context() -> Any:
    ray = sys.modules.get("ray")
    if ray is None or not ray.is_initialized():
        return None
    return ray.get_runtime_context()


def _distributed_rank() -> int | None:
    distributed = sys.modules.get("torch.distributed")
    try:
        if distributed is not None and distributed.is_available() and distributed.is_initialized():
            return int(distributed.get_rank())
    except Exception:  # a process group being torn down: no rank to give
        return None
    return None


def role_of_function(function_name: str, task_name: str | None, is_actor: bool,
                     actor_name: str | None = None) -> str:
    """The role words for the Ray task or actor method `function_name` ("module.Class.method" or "module.fn").

    >>> role_of_function("app.models.Trainer.step", "Trainer.step", True)
    'actor Trainer'
    >>> role_of_function("app.embed", "embed", False)
    'task embed'
    """
    if is_actor:

        parts = function_name.split(".")
        class_name = parts[-2] if len(parts) >= 2 else function_name
        known = ray_actor_role(function_name)
        if known:
            return known
        return f"actor {class_name}" + (f" {actor_name}" if actor_name else "")
    return f"task {task_name or function_name.rpartition('.')[2]}"


def current_role() -> tuple[str | None, int | None] | None:
    """(role, rank) of the Ray task or actor this worker runs now; None outside a Ray worker's task."""
    context = _ray_context()
    if context is None:
        return None
    function_name = context.get_task_function_name()
    if not function_name:
        return None  # the driver, or a worker between tasks
    actor_id = context.get_actor_id()
    actor_name = context.get_actor_name() if actor_id else None
    role = role_of_function(function_name, context.get_task_name(), bool(actor_id), actor_name or None)
    return role, _distributed_rank()


def node_label() -> str | None:
    """This worker's node as the report shows it: host and the first 8 hex digits of the Ray node id."""
    context = _ray_context()
    if context is None:
        return None
    return f"{socket.gethostname()}/{context.get_node_id()[:8]}"


def watch_worker() -> None:
    """Ray's worker_process_setup_hook: start jitguard in this worker (on its first `import triton`), name it
    by node and by the task or actor it runs, and write its process record now. Inert unless JITGUARD=1.
    """
    if os.environ.get("JITGUARD") != "1":
        return
    try:
        node = node_label()
        if node:
            os.environ["JITGUARD_NODE"] = node
        hook = importlib.import_module("jitguard.runtime.bootstrap.triton_hook")
        hook.set_pending_process_info(role="ray worker")
        hook.set_pending_name_source(current_role)
        hook.install_import_hook()
        from jitguard.runtime import monitor

        monitor.record_process_role("ray worker")
    except Exception as exc:
        sys.stderr.write(f"[jitguard] Ray worker pid {os.getpid()} is not watched: {type(exc).__name__}: {exc}\n")
