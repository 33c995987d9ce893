"""The vLLM plugin on a CPU: a stand-in server with vLLM's process layout and plugin loading.

vLLM itself runs no Triton kernel on a CPU (examples/vllm_cpu/ checks the real server's process
coverage). Here a small program plays vLLM's part: an API server process that spawns an
"EngineCore" process, which imports Triton and forks "VllmWorker-N" processes; plugins load
through the `vllm.general_plugins` entry point, once per process (a fork inherits "loaded", as in
vLLM). Each worker module lives at vLLM's path (vllm/v1/worker/gpu_worker.py) and compiles real
kernels with the offline backend during `compile_or_warm_up_model()` and after it. The API server imports Triton before
plugins load (as vLLM does); the engine core loads plugins first. A chaining post-compile hook plays vLLM's own
`--jit-monitor-mode` hook, installed at the end of warm-up.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from jitguard.integrations.vllm import process_role
from jitguard.report.build import build_report

pytest.importorskip("prometheus_client")

FAKE_WORKER = '''
import json, os
import triton, triton.language as tl


class DevicePointer:
    dtype = "float32"

    def data_ptr(self):
        return 1 << 20


@triton.jit
def rms_kernel(x_ptr, num_tokens, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < num_tokens), mask=offs < num_tokens)


class Worker:
    def compile_or_warm_up_model(self):
        for n in (16, 17, 48):
            rms_kernel[(1,)](DevicePointer(), n, BLOCK=32)
        from vllm.utils import jit_monitor
        jit_monitor.activate()

    def execute_model(self, num_tokens):
        rms_kernel[(1,)](DevicePointer(), num_tokens, BLOCK=32)
'''

# Plays vLLM's monitor: its own post-compile hook, chaining the one installed before it.
FAKE_JIT_MONITOR = '''
import triton.knobs

seen = []


def activate():
    previous = triton.knobs.runtime.jit_post_compile_hook

    def on_compile(**kwargs):
        seen.append(kwargs["fn"].name)
        return previous(**kwargs) if previous is not None else None

    triton.knobs.runtime.jit_post_compile_hook = on_compile
'''

FAKE_PLUGINS = '''
from importlib.metadata import entry_points

loaded = False


def load_general_plugins():
    global loaded
    if loaded:
        return
    loaded = True
    for entry in entry_points(group="vllm.general_plugins"):
        entry.load()()
'''

SERVER = '''
import json, multiprocessing, os, sys


def worker_main(out_dir, rank):
    from vllm.plugins import load_general_plugins
    load_general_plugins()  # a no-op here: the fork inherited "loaded"
    from vllm.v1.worker.gpu_worker import Worker
    from vllm.utils import jit_monitor
    worker = Worker()
    worker.compile_or_warm_up_model()
    worker.execute_model(1)
    import prometheus_client
    serving = [(s.labels, s.value) for metric in prometheus_client.REGISTRY.collect() for s in metric.samples
               if s.name == "jitguard_triton_compiles_total" and s.labels["phase"] == "serving"]
    with open(os.path.join(out_dir, f"worker{rank}.json"), "w") as handle:
        json.dump({"pid": os.getpid(), "vllm_monitor_seen": jit_monitor.seen, "prometheus_serving": serving}, handle)


def engine_core_main(out_dir):
    from vllm.plugins import load_general_plugins
    load_general_plugins()
    import triton  # the engine core imports Triton before it forks its workers
    fork = multiprocessing.get_context("fork")
    workers = [fork.Process(target=worker_main, args=(out_dir, rank), name=f"VllmWorker-{rank}") for rank in (0, 1)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    with open(os.path.join(out_dir, "engine_core.json"), "w") as handle:
        json.dump({"pid": os.getpid(), "workers_ok": [w.exitcode == 0 for w in workers]}, handle)


if __name__ == "__main__":
    out_dir = sys.argv[1]
    import triton  # like vLLM's API server: Triton is imported before the plugins load
    from vllm.plugins import load_general_plugins
    load_general_plugins()
    engine = multiprocessing.get_context("spawn").Process(target=engine_core_main, args=(out_dir,), name="EngineCore")
    engine.start()
    engine.join()
    with open(os.path.join(out_dir, "api_server.json"), "w") as handle:
        json.dump({"pid": os.getpid()}, handle)
    sys.exit(engine.exitcode)
'''


def make_fake_vllm(root: Path) -> Path:
    files = {
        "vllm/__init__.py": "",
        "vllm/plugins/__init__.py": FAKE_PLUGINS,
        "vllm/utils/__init__.py": "",
        "vllm/utils/jit_monitor.py": FAKE_JIT_MONITOR,
        "vllm/v1/__init__.py": "",
        "vllm/v1/worker/__init__.py": "",
        "vllm/v1/worker/gpu_worker.py": FAKE_WORKER,
        "vllm/entrypoints/openai/api_server.py": SERVER,
    }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


@pytest.fixture(scope="module")
def triton_cache(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("triton-cache"))


def serve(tmp_path: Path, triton_cache: str, wrapper: bool) -> dict:
    site = make_fake_vllm(tmp_path / "site")
    out, logs = tmp_path / "out", tmp_path / "logs"
    out.mkdir()
    env = dict(os.environ, PYTHONPATH=str(site), TRITON_CACHE_DIR=triton_cache)
    server = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", str(out)]
    if wrapper:
        for name in ("JITGUARD", "JITGUARD_DIR", "JITGUARD_OFFLINE"):
            env.pop(name, None)
        command = [sys.executable, "-m", "jitguard", "run", "--offline", "--dir", str(logs), "--", *server]
    else:
        env.update(JITGUARD="1", JITGUARD_DIR=str(logs), JITGUARD_OFFLINE="sm90", JITGUARD_SUMMARY="0")
        command = server
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=180, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-4000:]
    results = {p.stem: json.loads(p.read_text()) for p in out.glob("*.json")}
    return {"proc": proc, "results": results, "report": build_report(logs)}


@pytest.mark.parametrize("wrapper", [False, True], ids=["JITGUARD=1 only", "jitguard run"])
def test_plugin_names_every_vllm_process(tmp_path: Path, triton_cache: str, wrapper: bool) -> None:
    run = serve(tmp_path, triton_cache, wrapper)
    results, report = run["results"], run["report"]
    assert results["engine_core"]["workers_ok"] == [True, True]
    roles = {p["pid"]: (p["role"], p["rank"]) for p in report["processes"]}
    assert roles == {
        results["api_server"]["pid"]: ("api server", None),
        results["engine_core"]["pid"]: ("engine core", None),
        results["worker0"]["pid"]: ("worker", 0),
        results["worker1"]["pid"]: ("worker", 1),
    }
    # The API server imports Triton before the plugin names it; the engine core names itself first.
    assert len(report["processes"]) == 4


@pytest.mark.parametrize("wrapper", [False], ids=["JITGUARD=1 only"])
def test_warm_up_then_serving_phase_and_vllm_monitor_coexist(tmp_path: Path, triton_cache: str,
                                                             wrapper: bool) -> None:
    run = serve(tmp_path, triton_cache, wrapper)
    results, report = run["results"], run["report"]
    (kernel,) = report["kernels"]
    assert kernel["name"] == "rms_kernel"
    records = [json.loads(line) for log in (tmp_path / "logs").glob("*.ndjson")
               for line in log.read_text().splitlines()]
    serving_arrived = {r["pid"]: r.get("arrived") or "unknown" for r in records
                       if r["type"] == "compile" and r["phase"] == "serving"}
    # Warm-up compiles 16 / 17 (48 reuses 16's variant); execute_model(1) compiles during serving.
    assert kernel["by_phase"]["warmup"]["compiles"] == 2 * 2
    assert kernel["by_phase"]["serving"]["compiles"] == 1 * 2
    assert [(p["rank"], p["variants"]) for p in kernel["by_process"]] == [(0, 3), (1, 3)]
    for rank in (0, 1):
        worker = results[f"worker{rank}"]
        # vLLM's hook, installed after ours, still sees the serving compile...
        assert worker["vllm_monitor_seen"] == ["rms_kernel"]
        # ...and jitguard's Prometheus counter counted it in that process, labelled with the process's
        # role and rank and how the kernel arrived (cold, or from the disk cache the other worker filled).
        assert worker["prometheus_serving"] == [[{"kernel": "rms_kernel", "phase": "serving",
                                                  "arrived": serving_arrived[worker["pid"]],
                                                  "role": "worker", "rank": str(rank)}, 1.0]]
    assert "compiled during serving" not in run["proc"].stderr  # mode "log": a line, no error
    assert "[serving]" in run["proc"].stderr


def test_plugin_is_inert_without_jitguard(tmp_path: Path) -> None:
    code = textwrap.dedent("""
        import json, os, sys
        before = list(sys.meta_path)
        from jitguard.integrations.vllm import register
        register()
        register()
        print(json.dumps({"meta_path_same": sys.meta_path == before,
                          "imported": sorted(m for m in sys.modules
                                             if m.startswith(("triton", "jitguard.runtime.monitor")))}))
    """)
    env = dict(os.environ, JITGUARD_DIR=str(tmp_path / "logs"))
    env.pop("JITGUARD", None)
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert json.loads(proc.stdout) == {"meta_path_same": True, "imported": []}
    assert not (tmp_path / "logs").exists()


def test_register_twice_installs_one_watcher(tmp_path: Path) -> None:
    code = textwrap.dedent("""
        import json, sys
        from jitguard.integrations.vllm import register
        register()
        register()
        print(json.dumps([type(f).__name__ for f in sys.meta_path if type(f).__module__.startswith("jitguard")]))
    """)
    env = dict(os.environ, JITGUARD="1", JITGUARD_DIR=str(tmp_path / "logs"))
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert sorted(json.loads(proc.stdout)) == ["TritonImportWatcher", "WorkerModuleWatcher"]
    assert len(list((tmp_path / "logs").glob("*.ndjson"))) == 1


@pytest.mark.parametrize("name, argv, expected", [
    ("VllmWorker-3", [], ("worker", 3)),
    ("EngineCore", [], ("engine core", None)),
    ("EngineCore_DP2", [], ("engine core DP2", None)),
    ("ApiServer_1", [], ("api server 1", None)),
    ("MainProcess", ["/venv/bin/vllm", "serve", "model"], ("api server", None)),
    ("MainProcess", ["-m", "vllm.entrypoints.openai.api_server", "--model", "m"], ("api server", None)),
    ("MainProcess", ["bench.py"], ("main", None)),
])
def test_process_role_from_vllm_process_names(name: str, argv: list[str], expected: tuple) -> None:
    assert process_role(name, argv) == expected
