"""What jitguard adds to a Ray job's runtime_env, and the worker set-up hook on a node without jitguard.

The cluster itself is exercised in test_ray_cluster.py; these cases need no Ray node.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from jitguard.integrations import ray as ray_integration
from jitguard.integrations.ray import (
    PREVIOUS_HOOK_VARIABLE,
    RUNTIME_ENV_HOOK,
    WORKER_SETUP_HOOK,
    add_to_runtime_env,
    role_of_function,
    runtime_env_for_workers,
    set_runtime_env_hook,
)


def appended_marker(runtime_env: dict | None) -> dict:
    """A runtime_env hook of the job's own, which jitguard's must keep calling."""
    env = dict(runtime_env or {})
    env["env_vars"] = {**env.get("env_vars", {}), "THEIR_HOOK_RAN": "1"}
    return env


@pytest.fixture
def jitguard_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {"JITGUARD": "1", "JITGUARD_DIR": "/logs/run-1", "JITGUARD_MODE": "warn",
                        "JITGUARD_OFFLINE": "sm90"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv(PREVIOUS_HOOK_VARIABLE, raising=False)


def test_the_job_gets_jitguards_variables_and_setup_hook_and_keeps_its_own(jitguard_env: None) -> None:
    env = add_to_runtime_env({"env_vars": {"JITGUARD_MODE": "error", "HF_HOME": "/models"}, "pip": ["numpy"]})
    assert env["env_vars"] == {"JITGUARD_MODE": "error", "HF_HOME": "/models", "JITGUARD": "1",
                               "JITGUARD_DIR": "/logs/run-1", "JITGUARD_OFFLINE": "sm90"}
    assert env["pip"] == ["numpy"]
    assert callable(env["worker_process_setup_hook"])


def test_a_runtime_env_hook_set_before_jitguards_runs_first(jitguard_env: None,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    environ = {"RAY_RUNTIME_ENV_HOOK": f"{__name__}.appended_marker"}
    set_runtime_env_hook(environ)
    assert environ == {"RAY_RUNTIME_ENV_HOOK": RUNTIME_ENV_HOOK, PREVIOUS_HOOK_VARIABLE: f"{__name__}.appended_marker"}
    set_runtime_env_hook(environ)  # twice (jitguard run inside jitguard run) changes nothing
    assert environ[PREVIOUS_HOOK_VARIABLE] == f"{__name__}.appended_marker"
    monkeypatch.setenv(PREVIOUS_HOOK_VARIABLE, environ[PREVIOUS_HOOK_VARIABLE])
    env = add_to_runtime_env(None)
    assert env["env_vars"]["THEIR_HOOK_RAN"] == "1" and env["env_vars"]["JITGUARD"] == "1"


def test_without_jitguard_on_the_job_is_left_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JITGUARD", raising=False)
    monkeypatch.delenv(PREVIOUS_HOOK_VARIABLE, raising=False)
    assert add_to_runtime_env({"env_vars": {"A": "1"}}) == {"env_vars": {"A": "1"}}


def test_by_name_the_runtime_env_is_json_for_ray_job_submit(jitguard_env: None) -> None:
    env = runtime_env_for_workers({"working_dir": "."}, by_name=True)
    assert json.loads(json.dumps(env))["worker_process_setup_hook"] == WORKER_SETUP_HOOK
    with pytest.raises(ValueError, match=re.escape("already has a worker_process_setup_hook ('app.setup')")):
        runtime_env_for_workers({"worker_process_setup_hook": "app.setup"}, by_name=True)


NODE_WITHOUT_JITGUARD = """
import importlib.abc, sys
from ray import cloudpickle

class NoJitguard(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "jitguard" or name.startswith("jitguard."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

for name in [n for n in sys.modules if n == "jitguard" or n.startswith("jitguard.")]:
    del sys.modules[name]
sys.meta_path.insert(0, NoJitguard())
setup = cloudpickle.loads(sys.stdin.buffer.read())
setup()
print("worker started; their hook ran:", open(sys.argv[1]).read())
"""


def test_a_node_without_jitguard_starts_its_workers_and_says_they_are_not_watched(tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="ray is not installed (pip install ray: tests/run.sh does)")
    from ray import cloudpickle

    marker = tmp_path / "their-hook"

    def their_setup() -> None:
        marker.write_text("yes")

    # As Ray ships it: pickled by value in the driver, loaded in a worker whose Python lacks jitguard.
    hook = ray_integration.worker_setup_calling(their_setup)
    done = subprocess.run([sys.executable, "-c", NODE_WITHOUT_JITGUARD, str(marker)], input=cloudpickle.dumps(hook),
                          capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert done.stdout.decode().strip() == "worker started; their hook ran: yes"
    (line,) = done.stderr.decode().strip().splitlines()
    assert line.startswith("[jitguard] Ray worker pid ") and "is not watched: jitguard is not importable" in line
    assert line.endswith("install jitguard[monitor] there")


@pytest.mark.parametrize("function_name, task_name, is_actor, actor_name, role", [
    ("app.models.Trainer.step", "Trainer.step", True, None, "actor Trainer"),
    ("app.models.Trainer.step", "Trainer.step", True, "trainer-0", "actor Trainer trainer-0"),
    ("app.embed", "embed", False, None, "task embed"),
    ("app.embed", "embed-batch-3", False, None, "task embed-batch-3"),  # a task named by .options(name=...)
    ("vllm.v1.executor.ray_utils.RayWorkerWrapper.execute_method", "RayWorkerWrapper.execute_method", True, None,
     "worker"),
    ("vllm.v1.engine.core.DPEngineCoreActor.run", "DPEngineCoreActor.run", True, None, "engine core"),
    ("myapp.RayWorkerWrapper.run", "RayWorkerWrapper.run", True, None, "actor RayWorkerWrapper"),
])
def test_roles_name_the_actor_class_or_the_task(function_name: str, task_name: str, is_actor: bool,
                                                actor_name: str | None, role: str) -> None:
    assert role_of_function(function_name, task_name, is_actor, actor_name) == role
