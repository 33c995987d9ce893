"""Hostile output targets: a device node, a FIFO or an fd link is written in place, never replaced by a
regular file; a socket or a directory is refused with one line and nothing is lost."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from jitguard.codemod.fix_tree import FixRun
from jitguard.report.command import report_command
from jitguard.startup.plan_command import warmup_plan_command
from tests.tool.test_report import compiles_for, write_log


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    directory = tmp_path / "logs"
    directory.mkdir()
    write_log(directory, 20, compiles_for(20, [16, 17, 1]), role="worker", rank=0)
    return directory


def _read_fifo(path: Path, into: list[bytes]) -> threading.Thread:
    def read() -> None:
        with open(path, "rb") as stream:
            into.append(stream.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return reader


@pytest.mark.parametrize("flag", [["-o"], ["--json", "-o"], ["--html"]])
def test_a_fifo_target_stays_a_fifo_and_its_reader_gets_the_whole_report(logs: Path, tmp_path: Path,
                                                                          flag: list[str]) -> None:
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = _read_fifo(fifo, got)
    result = CliRunner().invoke(report_command, [str(logs), "--no-cost", *flag, str(fifo)])
    reader.join(timeout=30)
    assert result.exit_code == 0, result.output
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert got and b"fused_moe_kernel" in got[0]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.fifo")]  # no temporary file left


def test_a_character_device_copy_of_dev_null_is_written_not_replaced(logs: Path, tmp_path: Path) -> None:
    null = tmp_path / "null"
    try:
        os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("mknod needs root")
    result = CliRunner().invoke(report_command, [str(logs), "--no-cost", "-o", str(null)])
    assert result.exit_code == 0, result.output
    assert stat.S_ISCHR(os.lstat(null).st_mode) and os.major(os.lstat(null).st_rdev) == 1


def test_an_fd_link_receives_the_report_in_place(logs: Path) -> None:
    read_end, write_end = os.pipe()
    try:
        result = CliRunner().invoke(report_command, [str(logs), "--no-cost", "-o", f"/proc/self/fd/{write_end}"])
        os.close(write_end)
        with os.fdopen(read_end, "rb") as stream:
            text = stream.read()
    finally:
        for fd in (read_end, write_end):
            try:
                os.close(fd)
            except OSError:
                pass
    assert result.exit_code == 0, result.output
    assert b"fused_moe_kernel" in text


def test_a_link_to_a_regular_file_stays_a_link_and_its_file_gets_the_report(logs: Path, tmp_path: Path) -> None:
    target = tmp_path / "real.txt"
    target.write_text("old")
    os.chmod(target, 0o640)
    link = tmp_path / "report.txt"
    link.symlink_to(target)
    result = CliRunner().invoke(report_command, [str(logs), "--no-cost", "-o", str(link)])
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and "fused_moe_kernel" in target.read_text()
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_a_socket_target_is_refused_with_one_line(logs: Path, tmp_path: Path) -> None:
    path = tmp_path / "s.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    try:
        result = CliRunner().invoke(report_command, [str(logs), "--no-cost", "-o", str(path)])
    finally:
        server.close()
    assert result.exit_code == 2
    assert "socket" in result.output and len(result.output.strip().splitlines()) == 1
    assert stat.S_ISSOCK(os.lstat(path).st_mode)


def test_a_warmup_plan_written_to_a_fifo_leaves_the_fifo(logs: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "plan.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = _read_fifo(fifo, got)
    result = CliRunner().invoke(warmup_plan_command, [str(logs), "-o", str(fifo)])
    reader.join(timeout=30)
    assert result.exit_code == 0, result.output
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and b'"kernels"' in got[0]


KERNEL_FILE = """import triton
import triton.language as tl


@triton.jit
def scale_rows(x_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), tl.load(x_ptr + tl.arange(0, BLOCK)) * n_rows * n_cols)
"""


def _fix(paths: list[Path], param: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "jitguard", "fix", "--param", f"scale_rows:{param}",
                             *map(str, paths)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_two_fix_runs_at_once_on_the_same_files_lose_no_edit(tmp_path: Path) -> None:
    paths = []
    for index in range(12):
        path = tmp_path / f"ops_{index}.py"
        path.write_text(KERNEL_FILE)
        paths.append(path)
    for _ in range(2):
        for path in paths:
            path.write_text(KERNEL_FILE)
        runs = [_fix(paths, "n_rows"), _fix(list(reversed(paths)), "n_cols")]
        outputs = [run.communicate(timeout=300)[0] for run in runs]
        assert [run.returncode for run in runs] == [0, 0], outputs
        for path in paths:
            text = path.read_text()
            assert '"n_rows"' in text and '"n_cols"' in text, (path.name, text, outputs)
            assert text.count("@triton.jit(") == 1


def test_an_edit_computed_from_old_content_is_redone_on_the_new(tmp_path: Path) -> None:
    from jitguard.codemod.file_writes import PendingWrite, write_files

    path = tmp_path / "f.py"
    path.write_bytes(b"new text\n")
    calls: list[bytes] = []

    def redo(current: bytes) -> bytes:
        calls.append(current)
        return current + b"# edit\n"

    report = write_files([PendingWrite(path, b"old text\n# edit\n", b"old text\n", redo)])
    assert calls == [b"new text\n"] and report.redone == [path]
    assert path.read_bytes() == b"new text\n# edit\n"
    report = write_files([PendingWrite(path, b"x", b"something else")])
    assert report.failed and "changed since jitguard read it" in report.failed[0][1]
    assert path.read_bytes() == b"new text\n# edit\n"


def _fix_paths_with_a_writer_between_read_and_edit(path: Path, param: str, new_text: str) -> FixRun:
    """`fix_paths` on `path`, with `new_text` written after its survey read the file and before the edit."""
    from jitguard.codemod import fix_tree
    from jitguard.codemod.demotions import Demotion

    surveyed = fix_tree.map_files

    def survey_then_write(*args: Any, **kwargs: Any) -> list[Any]:
        surveys = list(surveyed(*args, **kwargs))
        path.write_text(new_text)
        return surveys

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fix_tree, "map_files", survey_then_write)
        return fix_tree.fix_paths([path], [Demotion("scale_rows", param, "do_not_specialize", "--param")])


def test_a_file_another_fix_edited_after_the_survey_gets_both_edits(tmp_path: Path) -> None:
    from jitguard.codemod.fix_tree import write_changes

    path = tmp_path / "ops.py"
    path.write_text(KERNEL_FILE)
    edited = KERNEL_FILE.replace("@triton.jit\n", '@triton.jit(do_not_specialize=["n_rows"])\n')
    run = _fix_paths_with_a_writer_between_read_and_edit(path, "n_cols", edited)
    assert run.errors == []
    report = write_changes(run)
    assert report.written == [path]
    text = path.read_text()
    assert '"n_rows"' in text and '"n_cols"' in text and text.count("@triton.jit(") == 1, text


def test_a_file_changed_after_the_survey_so_the_edit_no_longer_applies_is_an_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "ops.py"
    path.write_text(KERNEL_FILE)
    moved = "\n\n" + KERNEL_FILE  # the kernel is now two lines further down: the planned edit does not apply
    run = _fix_paths_with_a_writer_between_read_and_edit(path, "n_cols", moved)
    assert len(run.errors) == 1 and run.errors[0].startswith(f"{path}: changed while jitguard was running"), run.errors
    assert "scale_rows" in run.errors[0] and not run.changes
    assert path.read_text() == moved


def test_a_file_another_fix_edited_before_the_write_gets_its_edit_redone_on_the_new_content(tmp_path: Path) -> None:
    from jitguard.codemod.demotions import Demotion
    from jitguard.codemod.fix_tree import fix_paths, write_changes

    path = tmp_path / "ops.py"
    path.write_text(KERNEL_FILE)
    run = fix_paths([path], [Demotion("scale_rows", "n_cols", "do_not_specialize", "--param")])
    path.write_text(KERNEL_FILE.replace("@triton.jit\n", '@triton.jit(do_not_specialize=["n_rows"])\n'))
    report = write_changes(run)
    assert report.redone == [path] and report.written == [path] and not report.failed
    text = path.read_text()
    assert '"n_rows"' in text and '"n_cols"' in text and text.count("@triton.jit(") == 1, text
