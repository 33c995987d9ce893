"""`jitguard run` against hostile surroundings: whatever a shared --dir holds, the command's exit code is
the run's and the report's text is inert; a python that keeps jitguard's bootstrap out (-I, -E, -S) is
named at once, with what to do, and no message points at warnings that were never printed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from jitguard.events import to_json_line
from jitguard.launcher import unwatched_python_flag
from tests.tool.test_report import compiles_for, write_log


def jitguard_run(args: list[str], tmp_path: Path, log_dir: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JITGUARD")}
    return subprocess.run([sys.executable, "-m", "jitguard", "run", "--dir", str(log_dir), "--", *args],
                          env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)


HOSTILE_LINES = ["[" * 1000 + "]" * 1000, '{"type": "compile", "kernel": "k", "line": ' + "9" * 5000 + "}",
                 '{"type": "process", "pid": ' + "1" * 5000 + "}", "\x1b]52;c;cm0gLXJm\x07"]


def test_the_exit_code_survives_a_shared_dir_of_hostile_logs(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    planted = compiles_for(99, [16, 17], kernel="k\x1b]8;;http://x/\x1b\\", role="r\x1b[2J")
    log = write_log(logs, 99, planted, role="r\x1b[2J", argv=("python", "\x1b]52;c;eA==\x07"))
    with open(log, "a", encoding="utf-8") as stream:
        stream.write("\n".join(HOSTILE_LINES) + "\n" + to_json_line(compiles_for(99, [1])[0]) + "\n")
    (logs / "node1-1.ndjson").write_text("root:x:0:0:root:/root:/bin/bash\n")
    proc = jitguard_run([sys.executable, "-c", "raise SystemExit(7)"], tmp_path, logs)
    assert proc.returncode == 7, proc.stderr
    assert "\x1b" not in proc.stderr and "\x07" not in proc.stderr
    assert "\\x1b" in proc.stderr and "skipped" in proc.stderr


@pytest.mark.parametrize("flags", [["-I"], ["-E"], ["-S"], ["-W", "ignore", "-IE"]])
def test_a_python_that_keeps_the_bootstrap_out_is_named_with_what_to_do(tmp_path: Path, flags: list[str]) -> None:
    proc = jitguard_run([sys.executable, *flags, "-c", "raise SystemExit(3)"], tmp_path, tmp_path / "logs")
    assert proc.returncode == 3
    assert "its compiles run unwatched" in proc.stderr and "jitguard.install(" in proc.stderr
    assert "warnings above" not in proc.stderr


def test_a_plain_python_gets_no_such_warning_and_no_pointer_to_absent_warnings(tmp_path: Path) -> None:
    proc = jitguard_run([sys.executable, "-c", "raise SystemExit(0)"], tmp_path, tmp_path / "logs")
    assert proc.returncode == 0
    assert "unwatched" not in proc.stderr and "warnings above" not in proc.stderr
    assert "PYTHONPATH the program replaced" in proc.stderr


@pytest.mark.parametrize(("command", "expected"), [
    (["python", "-I", "serve.py"], "-I"),
    (["python3.12", "-sE", "serve.py"], "-E"),
    (["/usr/bin/python3", "-X", "dev", "-S", "serve.py"], "-S"),
    (["python", "serve.py", "-I"], None),  # the program's own argument
    (["python", "-c", "pass", "-E"], None),
    (["python", "-m", "vllm", "-I"], None),
    (["python", "-s", "-u", "serve.py"], None),
    (["vllm", "serve", "-I"], None),
])
def test_unwatched_flags_are_read_as_the_interpreter_reads_them(command: list[str], expected: str | None) -> None:
    found = unwatched_python_flag(command)
    assert (found.split()[0] if found else None) == expected
