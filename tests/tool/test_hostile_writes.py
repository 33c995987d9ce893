"""Hostile output targets: a device node, a FIFO or an fd link is written in place, never replaced by a
regular file; a socket or a directory is refused with one line and nothing is lost."""

from __future__ import annotations

import os
import socket
import stat
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

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
