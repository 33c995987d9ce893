"""`jitguard fix` from a scan: `--from` read once (stdin, pipes), priced static fixes, exit codes."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

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


KERNELS = '''import triton
import triton.language as tl


@triton.jit
def row_flags(x_ptr, num_tokens, hidden, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = (offs < hidden) & (row < num_tokens)
    tl.store(x_ptr + row * hidden + offs, tl.load(x_ptr + row * hidden + offs, mask=mask) * 2, mask=mask)


@triton.jit
def copy_flat(x_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


def launch(x, out):
    row_flags[(x.shape[0],)](x, x.shape[0], x.shape[1], BLOCK=128)
    copy_flat[(1,)](x, out, x.numel(), BLOCK=1024)
'''


def _invoke(args: list[object], stdin: str | None = None) -> Any:
    from click.testing import CliRunner

    from jitguard.codemod.commands import fix_command

    return CliRunner().invoke(fix_command, [str(arg) for arg in args], input=stdin)


def _tree(tmp_path: Path) -> Path:
    package = tmp_path / f"fixscan_{tmp_path.name}"  # one package name per test: each is imported to be priced
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "ops.py").write_text(KERNELS)
    return package / "ops.py"


def test_fix_path_alone_scans_and_applies_only_the_free_fixes(tmp_path: Path) -> None:
    target = _tree(tmp_path)
    check = _invoke(["--check", target])
    assert check.exit_code == 1 and target.read_text() == KERNELS, check.output
    result = _invoke([target])
    text = target.read_text()
    # num_tokens bounds only a program id (free); n_elements bounds the contiguous offsets (costly: wider accesses)
    assert '@triton.jit(do_not_specialize=["num_tokens"])\ndef row_flags(' in text, result.output
    assert "@triton.jit\ndef copy_flat(" in text
    assert "skipped: copy_flat:n_elements: costly:" in result.stderr and "--accept-cost applies it" in result.stderr
    # the costly finding is left, as `ruff check --fix` leaves what it cannot fix: 1, never 2
    assert result.exit_code == 1 and "1 warning left" in result.stderr, result.output
    again = _invoke(["--check", target])
    assert again.exit_code == 1 and target.read_text() == text


def test_fix_from_stdin(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from jitguard.codemod.commands import scan_command

    target = _tree(tmp_path)
    scan = CliRunner().invoke(scan_command, ["--json", str(target)])
    result = _invoke(["--from", "-", "--diff", target], stdin=scan.stdout)
    assert result.exit_code == 1, result.output  # a change pending under --diff
    assert '+@triton.jit(do_not_specialize=["num_tokens"])' in result.stdout
    assert target.read_text() == KERNELS


def test_a_hand_edit_left_exits_1_not_2(tmp_path: Path) -> None:
    target = tmp_path / "computed.py"
    target.write_text("import triton\nDNS = make_list()\n\n\n@triton.jit(do_not_specialize=DNS)\n"
                      "def k(x_ptr, num_tokens):\n    pass\n")
    result = _invoke(["--param", "k:num_tokens", target])
    assert result.exit_code == 1, result.output
    assert "hand edit: " in result.stderr and "error:" not in result.stderr
    assert "1 hand edit left" in result.stderr
    missing = _invoke(["--param", "nokernel:n", target])
    assert missing.exit_code == 2 and "error:" in missing.stderr


def test_kernels_priced_on_worker_processes_get_the_prices_one_process_gives(tmp_path: Path) -> None:
    (tmp_path / "serial").mkdir()
    (tmp_path / "parallel").mkdir()
    serial, parallel = _tree(tmp_path / "serial"), _tree(tmp_path / "parallel")
    one = _invoke(["--jobs", "1", serial])
    two = _invoke(["--jobs", "2", parallel])
    assert serial.read_text() == parallel.read_text() != KERNELS
    for result in (one, two):
        assert result.exit_code == 1, result.output
        assert "[jitguard] priced 2/2 kernels: " in result.stderr  # one line per kernel as its prices arrive
    skipped = [[line for line in r.stderr.splitlines() if line.startswith("skipped: ")] for r in (one, two)]
    assert skipped[0] == skipped[1] and "copy_flat:n_elements: costly:" in skipped[0][0]
