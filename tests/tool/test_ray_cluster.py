"""A real Ray cluster of two nodes on this machine (started outside the watched command, as `ray start`
starts nodes), the multi-node example's job run against it under `jitguard run --offline` as its README
says: every worker's compiles are in the report, under the actor class or task that compiled them and
the node it ran on, each worker's count equals the variants Triton itself holds in that worker, and the
README's lines are real.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
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


def readme_block() -> tuple[list[str], list[str]]:
    """The README's command (after `$ `, the cache export left out) and the output lines it shows."""
    readme = (EXAMPLE / "README.md").read_text()
    start = readme.index("```console\n$ export TRITON_CACHE_DIR")
    lines = readme[start:readme.index("```\n", start + 10)].splitlines()[1:]
    (command,) = [line[2:] for line in lines if line.startswith("$ python ")]
    return shlex.split(command), [line for line in lines if not line.startswith("$ ")]


def run_readme_command(logs: Path) -> subprocess.CompletedProcess:
    """The README's command with this interpreter, jitguard from this checkout, and `logs` as the log directory."""
    words, _ = readme_block()
    command = []
    for word in words:
        if word == "python":
            command.append(sys.executable)
        elif word == "jitguard":
            command.extend([sys.executable, "-m", "jitguard"])
        else:
            command.append(str(logs) if word == "multinode-logs" else word)
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", TRITON_DEFAULT_FP_FUSION="1",
               TRITON_CACHE_DIR=str(logs.parent / "triton-cache"))
    for name in ("JITGUARD", "JITGUARD_DIR", "JITGUARD_OFFLINE", "RAY_RUNTIME_ENV_HOOK"):
        env.pop(name, None)  # the cluster's nodes start without jitguard
    # A session of its own: if it runs out of time, the cluster's processes go with it, not only the starter.
    child = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
    try:
        stdout, stderr = child.communicate(timeout=420)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        stdout, stderr = child.communicate()
        pytest.fail(f"the cluster job ran out of time:\n{stdout[-2000:]}\n{stderr[-4000:]}")
    return subprocess.CompletedProcess(command, child.returncode, stdout, stderr)


def normalized(line: str) -> str:
    """A line with what changes between runs (pids, Ray node ids, the host, times, the log path) as placeholders."""
    line = line.replace(socket.gethostname() + "/", "HOST/")
    line = re.sub(r"report of \S+:", "report of LOGS:", line)
    line = re.sub(r"\b[0-9a-f]{8}\b", "NODE", line)
    line = re.sub(r"\d+\.\d+ s\b", "N s", line)
    line = re.sub(r"\b\d+ ms\b", "N ms", line)
    line = re.sub(r"^(\s+)\d+(\s+)\d+(\s+HOST)", r"\1PID\2PPID\3", line)  # a process row's pid and ppid
    line = re.sub(r"\bpid \d+", "pid PID", line)
    line = re.sub(r"\d+(\s+default_worker\.py)", r"N\1", line)  # a process row's compile ms
    if re.match(r"^\s+\w+\s+examples/", line):  # a kernel row: its warm-up and serving ms
        line = re.sub(r"\d+(\s+)\d+(\s+)(\S+)$", r"N\1N\2\3", line)
    return re.sub(r"\s{2,}", "  ", line.rstrip())


def report_json(logs: Path) -> dict:
    done = subprocess.run([sys.executable, "-m", "jitguard", "report", str(logs), "--json", "--no-cost"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def test_every_ray_worker_on_every_node_is_in_the_report(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    done = run_readme_command(logs)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    # The README shows real lines of this run.
    real = {normalized(line) for line in (done.stdout + done.stderr).splitlines()}
    shown = [line for line in readme_block()[1] if line.strip() and line != "..."]
    assert len(shown) > 10
    for line in shown:
        assert normalized(line) in real, f"README line not in the real output:\n{line}"
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
