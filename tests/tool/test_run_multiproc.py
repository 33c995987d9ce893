"""`jitguard run --offline` over a real multi-process program: every process, exactly its compiles.

The program (tests/multiproc_program.py) writes a manifest per process: its pid and the
(kernel, token count) calls it makes. The expected compiles come from Triton's rule for a plain
int argument (FACTS.md 1): one variant per class among == 1, % 16 == 0, other; a fork child
inherits the variants its parent compiled before the fork.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from jitguard.report.build import build_report

PROGRAM = Path(__file__).parents[1] / "multiproc_program.py"


def int_class(value: int) -> str:
    """Triton's specialization class of a plain int argument."""
    if value == 1:
        return "one"
    return "div16" if value % 16 == 0 else "plain"


def expected_compiles(manifest: dict) -> dict[str, int]:
    """{kernel: new variants this process compiles}, given what it inherited."""
    known = {(kernel, int_class(n)) for kernel, n in manifest["inherited"]}
    new: dict[str, int] = {}
    for kernel, n in manifest["calls"]:
        variant = (kernel, int_class(n))
        if variant not in known:
            known.add(variant)
            new[kernel] = new.get(kernel, 0) + 1
    return new


@pytest.fixture(scope="module")
def multiproc_run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    base = tmp_path_factory.mktemp("multiproc")
    manifests, logs = base / "manifests", base / "logs"
    manifests.mkdir()
    env = dict(os.environ, TRITON_CACHE_DIR=str(base / "triton-cache"))
    env.pop("JITGUARD", None)
    proc = subprocess.run([sys.executable, "-m", "jitguard", "run", "--dir", str(logs), "--offline", "--",
                           sys.executable, str(PROGRAM), str(manifests)],
                          env=env, capture_output=True, text=True, timeout=240)
    loaded = {p.stem: json.loads(p.read_text()) for p in manifests.glob("*.json")}
    return {"proc": proc, "manifests": loaded, "logs": logs, "manifest_dir": manifests,
            "report": build_report(logs) if logs.is_dir() and any(logs.glob("*.ndjson")) else None}


def test_run_exits_with_the_program_exit_code_and_prints_the_report(multiproc_run: dict) -> None:
    proc = multiproc_run["proc"]
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Processes" in proc.stderr and "Kernels" in proc.stderr
    assert f"{len(multiproc_run['manifests'])} process(es)" in proc.stderr


def test_every_process_appears_with_exactly_its_compiles(multiproc_run: dict) -> None:
    report = multiproc_run["report"]
    manifests = multiproc_run["manifests"]
    expected_roles = {"parent", "spawn-a", "spawn-b", "fork", "forkserver", "subprocess", "killed"}
    if importlib.util.find_spec("torch") is not None:
        expected_roles.add("torch-spawn-0")
    assert set(manifests) == expected_roles
    by_pid = {p["pid"]: p for p in report["processes"]}
    assert set(by_pid) == {m["pid"] for m in manifests.values()}
    for role, manifest in manifests.items():
        expected = expected_compiles(manifest)
        process = by_pid[manifest["pid"]]
        assert process["compiles"] == sum(expected.values()), (role, process, expected)
        assert process["kernels"] == sorted(expected), role
        for kernel in report["kernels"]:
            seen = {p["pid"]: p["variants"] for p in kernel["by_process"]}
            assert seen.get(manifest["pid"], 0) == expected.get(kernel["name"], 0), (role, kernel["name"])


def test_fork_child_compiles_only_what_its_parent_had_not(multiproc_run: dict) -> None:
    fork = multiproc_run["manifests"]["fork"]
    process = next(p for p in multiproc_run["report"]["processes"] if p["pid"] == fork["pid"])
    assert process["ppid"] == multiproc_run["manifests"]["parent"]["pid"]
    # scale_tokens(32) and (5) reuse the parent's variants; only shift_tokens compiles.
    assert process["kernels"] == ["shift_tokens"] and process["compiles"] == 1


def test_sigkilled_child_keeps_the_events_written_before_the_kill(multiproc_run: dict) -> None:
    killed = multiproc_run["manifests"]["killed"]
    assert (multiproc_run["manifest_dir"] / "killed.ready").exists()
    process = next(p for p in multiproc_run["report"]["processes"] if p["pid"] == killed["pid"])
    assert process["compiles"] == len({int_class(n) for _, n in killed["calls"]}) == 2
    assert multiproc_run["report"]["skipped_lines"] == 0


def test_process_that_never_imports_triton_leaves_no_log(multiproc_run: dict) -> None:
    helper_pid = int((multiproc_run["manifest_dir"] / "helper.pid").read_text())
    assert list(multiproc_run["logs"].glob("*.ndjson"))  # the other processes did write logs there
    assert not list(multiproc_run["logs"].glob(f"*-{helper_pid}.ndjson"))
    assert helper_pid not in {p["pid"] for p in multiproc_run["report"]["processes"]}


def test_merged_advice_covers_every_process(multiproc_run: dict) -> None:
    kernels = {k["name"]: k for k in multiproc_run["report"]["kernels"]}
    # scale_tokens took the value 1 in some process: do_not_specialize, for the whole report.
    assert kernels["scale_tokens"]["params"]["num_tokens"]["advice"] == "do_not_specialize"
    assert kernels["scale_tokens"]["fix"] == 'do_not_specialize=["num_tokens"]'
    assert kernels["scale_tokens"]["variants"] == 3
    assert set(kernels["scale_tokens"]["params"]["num_tokens"]["specs_seen"]) == {"i32 one", "i32 div16", "i32 plain"}
    # shift_tokens recompiled only on alignment flips (forkserver, killed child), but the fork child
    # passed 1: do_not_specialize_on_alignment would still compile that one apart, so the merged advice is
    # do_not_specialize.
    shift = kernels["shift_tokens"]["params"]["num_tokens"]
    assert {c["advice"] for c in kernels["shift_tokens"]["causes"]} == {"do_not_specialize_on_alignment"}
    assert "i32 one" in shift["specs_seen"] and shift["advice"] == "do_not_specialize"


def test_spawned_children_are_named_by_their_process_name(multiproc_run: dict) -> None:
    manifests = multiproc_run["manifests"]
    roles = {p["pid"]: p["role"] for p in multiproc_run["report"]["processes"]}
    assert roles[manifests["spawn-a"]["pid"]].startswith("SpawnProcess")
    assert roles[manifests["forkserver"]["pid"]].startswith("ForkServerProcess")
    # A fork child inherits the parent's monitor; it is named when multiprocessing starts it.
    assert roles[manifests["fork"]["pid"]].startswith("ForkProcess")
    assert roles[manifests["parent"]["pid"]] is None


def test_report_cli_json_matches_and_truncated_line_is_counted(multiproc_run: dict, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    for file in multiproc_run["logs"].glob("*.ndjson"):
        (logs / file.name).write_bytes(file.read_bytes())
    victim = sorted(logs.glob("*.ndjson"))[0]
    with open(victim, "ab") as handle:
        handle.write(b'{"type":"compile","kernel":"scale_tok')  # a process killed mid-write
    proc = subprocess.run([sys.executable, "-m", "jitguard", "report", str(logs), "--json"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["skipped_lines"] == 1
    assert "skipped 1 unreadable line" in proc.stderr
    assert data["totals"]["compiles"] == multiproc_run["report"]["totals"]["compiles"]
