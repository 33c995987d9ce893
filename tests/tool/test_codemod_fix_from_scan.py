"""`jitguard fix` from a scan: `--from` read once (stdin, pipes), priced static fixes, exit codes."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

from jitguard.codemod.demotions import read_report

SCAN = {"findings": [{"rule": "JG101", "file": "k.py", "line": 3, "kernel": "k", "param": "num_tokens",
                      "message": "", "advice": "do_not_specialize"},
                     {"rule": "JG103", "file": "k.py", "line": 3, "kernel": "k", "param": "n_rows",
                      "message": "", "advice": "constexpr_values"},
                     {"rule": "JG102", "file": "k.py", "line": 3, "kernel": "k", "param": "hidden",
                      "message": "", "advice": None}],
        "files": 1, "kernels": 1, "errors": []}


def test_from_stdin_is_read_once() -> None:
    stream = io.BytesIO(json.dumps(SCAN).encode())
    report = read_report("-", stdin=stream)
    assert report.origin == "stdin" and report.is_scan
    demotions, notes = report.requests()
    assert [(d.kernel, d.param, d.option) for d in demotions] == [("k", "num_tokens", "do_not_specialize")]
    assert [(n.param, n.advice) for n in notes] == [("n_rows", "constexpr_values")]
    assert report.adviceless_findings() == 1 and report.kernel_entries() == {}


def test_from_a_pipe_that_can_be_read_only_once(tmp_path: Path) -> None:
    fifo = tmp_path / "scan.fifo"
    os.mkfifo(fifo)
    pid = os.fork()
    if pid == 0:  # the writer: like `<(cat scan.json)`, the data is there once
        with open(fifo, "w") as handle:
            handle.write(json.dumps(SCAN))
        os._exit(0)
    report = read_report(fifo)
    os.waitpid(pid, 0)
    assert report.requests()[0][0].param == "num_tokens" and report.adviceless_findings() == 1
