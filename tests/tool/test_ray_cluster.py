"""A real Ray cluster of two nodes on this machine (started outside the watched command, as `ray start`
starts nodes), the multi-node example's job run against it under `jitguard run --offline`: every worker's
compiles are in the report, under the actor class or task that compiled them and the node it ran on, and
each worker's count equals the variants Triton itself holds in that worker.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="ray is not installed (pip install ray: tests/run.sh does)")

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "multinode"
WORKER_LINE = re.compile(r"^(?P<role>(?:actor|task) \w+): pid (?P<pid>\d+) on node (?P<node>[0-9a-f]{8}): "
                         r"Triton holds (?P<variants>\d+) variant\(s\) of (?P<kernel>\w+)$")

pytestmark = pytest.mark.slow


def run_job_on_cluster(logs: Path, nodes: int = 2) -> subprocess.CompletedProcess:
    jitguard_run = [sys.executable, "-m", "jitguard", "run", "--offline", "--dir", str(logs), "--",
                    sys.executable, str(EXAMPLE / "cluster_job.py"), "--address", "{address}"]
    command = [sys.executable, str(EXAMPLE / "local_cluster.py"), "--nodes", str(nodes), "--", *jitguard_run]
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", TRITON_DEFAULT_FP_FUSION="1")
    for name in ("JITGUARD", "JITGUARD_DIR", "JITGUARD_OFFLINE", "RAY_RUNTIME_ENV_HOOK"):
        env.pop(name, None)  # the cluster's nodes start without jitguard
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=420)


def report_json(logs: Path) -> dict:
    done = subprocess.run([sys.executable, "-m", "jitguard", "report", str(logs), "--json", "--no-cost"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def test_every_ray_worker_on_every_node_is_in_the_report(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    done = run_job_on_cluster(logs)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    workers = [match.groupdict() for match in map(WORKER_LINE.match, done.stdout.splitlines()) if match]
    assert sorted(w["role"] for w in workers) == ["actor Embedder", "actor Sampler", "task build_table"], done.stdout
    # One actor per node: the two actors ran on different nodes.
    actors = {w["role"]: w for w in workers if w["role"].startswith("actor")}
    assert actors["actor Embedder"]["node"] != actors["actor Sampler"]["node"]

    report = report_json(logs)
    processes = {p["pid"]: p for p in report["processes"]}
    for worker in workers:
        process = processes[int(worker["pid"])]
        # Named by the actor class or task, and by its node (host/Ray node id).
        assert process["role"] == worker["role"]
        assert process["node"].endswith("/" + worker["node"])
        # Every variant Triton holds in that worker was compiled there, once, and jitguard saw each compile.
        (kernel,) = [k for k in report["kernels"] if k["name"] == worker["kernel"]]
        (in_worker,) = [p for p in kernel["by_process"] if p["pid"] == process["pid"]]
        assert in_worker["compiles"] == in_worker["variants"] == int(worker["variants"])
    for role in actors:
        actor = next(p for p in report["processes"] if p["role"] == role)
        # Warm-up on 16 and 17 tokens, then one token while serving: the one compile during serving.
        assert (actor["compiles"], actor["serving_compiles"]) == (3, 1)
    assert report["totals"]["nodes"] == 2
