"""Several nodes' logs in one report, and one warm-up plan covering every node's variants.

Two runs under `jitguard run --offline` stand for two nodes (the second names itself with
JITGUARD_NODE, as a Ray worker does); each leaves its own directory of logs, as each machine of a
cluster does. The report is asked for by directories, by a glob and by an @list file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PROGRAM = """
import sys
sys.path.insert(0, {kernels!r})
import node_kernels
for tokens in {tokens!r}:
    node_kernels.embed_rows[(1,)](node_kernels.DevicePointer(), tokens, BLOCK=64)
"""


def jitguard(*args: str, env: dict | None = None, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jitguard", *args], capture_output=True, text=True, timeout=300,
                          cwd=cwd, env=dict(os.environ, TRITON_DEFAULT_FP_FUSION="1", **(env or {})))


@pytest.fixture(scope="module")
def node_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """base/node-a (16 tokens, node named by its host) and base/node-b (17 and 1 tokens, JITGUARD_NODE=gpu-node-2)."""
    base = tmp_path_factory.mktemp("cluster-logs")
    runs = []
    for name, tokens, node in (("node-a", (16,), None), ("node-b", (17, 1), "gpu-node-2")):
        program = PROGRAM.format(kernels=str(REPO / "examples" / "multinode"), tokens=tokens)
        env = dict(os.environ, TRITON_DEFAULT_FP_FUSION="1", **({"JITGUARD_NODE": node} if node else {}))
        runs.append(subprocess.Popen([sys.executable, "-m", "jitguard", "run", "--offline", "--dir", str(base / name),
                                      "--", sys.executable, "-c", program], cwd=REPO, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for run in runs:  # the two nodes run side by side, as a cluster's do
        _, errors = run.communicate(timeout=300)
        assert run.returncode == 0, errors[-3000:]
    return base


def merged(*sources: str, cwd: Path = REPO) -> dict:
    done = jitguard("report", *sources, "--json", "--no-cost", cwd=cwd)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def test_two_nodes_directories_merge_into_one_report_with_their_nodes(node_logs: Path) -> None:
    report = merged(str(node_logs / "node-a"), str(node_logs / "node-b"))
    nodes = {p["node"]: p for p in report["processes"]}
    host = next(p["host"] for p in report["processes"] if p["node"] != "gpu-node-2")
    assert set(nodes) == {host, "gpu-node-2"}
    assert (report["totals"]["nodes"], report["totals"]["processes"]) == (2, 2)
    assert (nodes[host]["compiles"], nodes["gpu-node-2"]["compiles"]) == (1, 2)
    (kernel,) = report["kernels"]
    # 16 (divisible by 16) on one node, 17 and 1 on the other: three variants in all, each node's counted apart.
    assert (kernel["variants"], kernel["compiles"]) == (3, 3)
    assert sorted((p["node"], p["variants"]) for p in kernel["by_process"]) == [("gpu-node-2", 2), (host, 1)]

    text = jitguard("report", str(node_logs / "node-a"), str(node_logs / "node-b"), "--no-cost").stdout
    assert "2 process(es) on 2 nodes" in text
    header = next(line for line in text.splitlines() if line.strip().startswith("pid"))
    assert header.split()[:3] == ["pid", "ppid", "node"]
    assert "on gpu-node-2: 2" in text  # the kernel's variants per process name the node


def test_a_glob_and_a_list_file_name_the_same_logs(node_logs: Path, tmp_path: Path) -> None:
    by_dirs = merged(str(node_logs / "node-a"), str(node_logs / "node-b"))
    by_glob = merged(str(node_logs / "node-*"))
    listing = tmp_path / "nodes.txt"
    listing.write_text(f"# one directory per node\n{node_logs / 'node-a'}\n{node_logs / 'node-b'}  # the second\n")
    by_list = merged(f"@{listing}")
    # The same directory twice (and through a glob) is read once.
    twice = merged(str(node_logs / "node-a"), str(node_logs / "node-*"))
    for report in (by_glob, by_list, twice):
        assert report["totals"] == by_dirs["totals"]
        assert report["kernels"][0]["by_process"] == by_dirs["kernels"][0]["by_process"]


@pytest.mark.parametrize("sources, named", [
    (["{base}/node-a", "{base}/node-c"], "node-c: no such file or directory"),
    (["{base}/node-x*"], "node-x*: the pattern matches nothing"),
    (["@{base}/missing.txt"], "missing.txt: cannot read this list of log paths"),
])
def test_a_source_that_names_nothing_is_one_line_naming_it(node_logs: Path, sources: list[str], named: str) -> None:
    done = jitguard("report", *[s.format(base=node_logs) for s in sources], "--no-cost")
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("jitguard report: ") and named in line, line


def test_one_warm_up_plan_covers_every_nodes_variants(node_logs: Path, tmp_path: Path) -> None:
    plan_file = tmp_path / "plan.json"
    done = jitguard("warmup-plan", str(node_logs / "node-a"), str(node_logs / "node-b"), "-o", str(plan_file))
    assert done.returncode == 0, done.stderr
    plan = json.loads(plan_file.read_text())
    (kernel,) = plan["kernels"]
    assert kernel["name"] == "embed_rows"
    # One variant per specialization class seen on any node: 16 (node a), 17 and 1 (node b).
    specs = sorted(str(v["params"]["num_tokens"].get("spec")) for v in kernel["variants"])
    assert len(kernel["variants"]) == 3 and len(set(specs)) == 3, specs
