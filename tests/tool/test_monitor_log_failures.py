"""A log directory that cannot be written never silences a guard.

Each case breaks the per-process NDJSON log a different way: a read-only or unwritable
directory, a parent that is a file, a full filesystem, a symlink or a FIFO planted at
`<host>-<pid>.ndjson`. In every case `no_recompiles` and `--mode error` still raise, budgets still
bite, the recompile line is still printed, and one warning names the directory and the error.
Where `mount` works (root, as in CI containers) the read-only and full cases are real tmpfs
mounts; elsewhere they are an unwritable directory and a failing `os.write`.
"""

from __future__ import annotations

import errno
import io
import json
import os
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

import jitguard
from jitguard import triton_compat
from jitguard.runtime import monitor, ndjson_sink
from tests import kernels_for_tests as k


@pytest.fixture(autouse=True)
def clean_state():
    monitor.uninstall()
    for cache in triton_compat.all_kernel_caches(k.add_one_kernel):
        cache.clear()
    with jitguard.offline(compile=False):
        yield
    monitor.uninstall()


def _compile(n: int) -> None:
    k.add_one_kernel[(1,)](torch.zeros(64), torch.zeros(64), n, BLOCK=32)


def _log_name() -> str:
    return f"{socket.gethostname()}-{os.getpid()}.ndjson"


def _mount_tmpfs(where: Path, options: str, request: pytest.FixtureRequest) -> bool:
    where.mkdir(exist_ok=True)
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], capture_output=True)
    except OSError:
        return False
    if done.returncode != 0:
        return False
    request.addfinalizer(lambda: subprocess.run(["umount", "-l", str(where)], capture_output=True))
    return True


def _fail_log_writes(monkeypatch: pytest.MonkeyPatch, error: int) -> None:
    """Make every write to an .ndjson file fail with `error` (os.write on a descriptor of ours)."""
    real_write = os.write

    def write(fd: int, data: bytes) -> int:
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            target = ""
        if target.endswith(".ndjson"):
            raise OSError(error, os.strerror(error))
        return real_write(fd, data)

    monkeypatch.setattr(ndjson_sink.os, "write", write)


# Each case: (tmp_path, monkeypatch, request) -> (log dir, a fragment the warning must contain).
def _read_only_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> tuple[str, str]:
    where = tmp_path / "ro"
    if _mount_tmpfs(where, "ro,size=16k", request):
        return str(where), "Read-only file system"
    where.mkdir(exist_ok=True)
    if os.geteuid() != 0:
        where.chmod(0o555)
        request.addfinalizer(lambda: where.chmod(0o755))
        return str(where), "Permission denied"
    real_open = os.open

    def refuse(path: str, *args: object, **kwargs: object) -> int:
        if str(path).endswith(".ndjson"):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ndjson_sink.os, "open", refuse)
    return str(where), "Permission denied"


def _parent_is_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> tuple[str, str]:
    (tmp_path / "not-a-dir").write_text("")
    return str(tmp_path / "not-a-dir" / "logs"), "Not a directory"


def _full_filesystem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> tuple[str, str]:
    where = tmp_path / "full"
    if _mount_tmpfs(where, "size=16k", request):
        try:
            with open(where / "filler", "wb") as handle:
                while True:
                    handle.write(b"x" * 4096)
                    handle.flush()
        except OSError:
            pass  # full
        return str(where), "No space left on device"
    _fail_log_writes(monkeypatch, errno.ENOSPC)
    return str(where), "No space left on device"


def _planted_symlink(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> tuple[str, str]:
    where = tmp_path / "shared"
    where.mkdir()
    (tmp_path / "attacker.txt").write_text("")
    (where / _log_name()).symlink_to(tmp_path / "attacker.txt")
    return str(where), "is a symbolic link"


def _planted_fifo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> tuple[str, str]:
    where = tmp_path / "shared"
    where.mkdir()
    os.mkfifo(where / _log_name())
    return str(where), "not a regular file"


CASES: dict[str, Callable[..., tuple[str, str]]] = {
    "read-only dir": _read_only_dir,
    "parent is a file": _parent_is_a_file,
    "full filesystem": _full_filesystem,
    "symlink planted at the log path": _planted_symlink,
    "fifo planted at the log path": _planted_fifo,
}


@pytest.fixture(params=list(CASES))
def broken_log_dir(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    return CASES[request.param](tmp_path, monkeypatch, request)


def _assert_one_warning(text: str, directory: str, fragment: str) -> None:
    warnings = [line for line in text.splitlines() if "cannot write the compile log" in line]
    assert len(warnings) == 1, text
    assert directory in warnings[0] and fragment in warnings[0], warnings[0]


def test_mode_error_budget_and_log_lines_survive_a_broken_log(broken_log_dir: tuple[str, str]) -> None:
    directory, fragment = broken_log_dir
    out = io.StringIO()
    monitor.install(mode="error", dir=directory, budget={"add_one_kernel": 3}, summary=False, stream=out)
    _compile(3)
    _compile(16)  # a recompile: its line is printed although the log cannot hold it
    assert "recompile add_one_kernel#2" in out.getvalue()
    jitguard.mark_serving()
    with pytest.raises(jitguard.RecompileError, match="add_one_kernel compiled during serving"):
        _compile(1)
    jitguard.mark_warmup()
    with pytest.raises(jitguard.RecompileError, match="over its budget of 3"):
        _compile(2 ** 31)  # i64: a 4th variant
    _assert_one_warning(out.getvalue(), directory, fragment)
    mon = monitor.current()
    assert mon is not None and len(mon.events) == 4  # every event kept in memory
    assert mon.sink is not None and mon.sink.events_not_written == 4
    line = mon.unwritten_events_line()
    assert line is not None and "4 compile event(s)" in line and directory in line


def test_no_recompiles_still_fails_with_a_broken_log(broken_log_dir: tuple[str, str]) -> None:
    directory, fragment = broken_log_dir
    out = io.StringIO()
    monitor.install(dir=directory, summary=False, stream=out)
    with pytest.raises(jitguard.RecompileError, match="but 1 was compiled"):
        with jitguard.no_recompiles(warmup=1):
            _compile(3)
            _compile(16)
    _assert_one_warning(out.getvalue(), directory, fragment)


def test_a_planted_symlink_receives_nothing(tmp_path: Path) -> None:
    directory, _ = _planted_symlink(tmp_path, None, None)  # type: ignore[arg-type]
    monitor.install(dir=directory, summary=False, stream=io.StringIO())
    _compile(3)
    jitguard.set_process_info(role="worker")
    assert (tmp_path / "attacker.txt").read_text() == ""


def test_the_count_reaches_the_log_once_writes_work_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    directory = tmp_path / "logs"
    out = io.StringIO()
    monitor.install(dir=str(directory), summary=False, stream=out)
    _compile(3)  # written
    with monkeypatch.context() as patch:
        _fail_log_writes(patch, errno.ENOSPC)
        _compile(16)
        _compile(1)
    _compile(2 ** 31)  # the disk has room again
    records = [json.loads(line) for line in (directory / _log_name()).read_text().splitlines()]
    assert [r["type"] for r in records] == ["process", "compile", "compile", "process"]
    assert "events_not_written" not in records[0]
    assert records[-1]["events_not_written"] == 2
    assert [r["params"]["n"]["observed"] for r in records if r["type"] == "compile"] == [3, 2 ** 31]


def test_the_count_is_recorded_and_said_at_exit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    directory = tmp_path / "logs"
    out = io.StringIO()
    monitor.install(dir=str(directory), summary=False, stream=out)
    _compile(3)
    with monkeypatch.context() as patch:
        _fail_log_writes(patch, errno.ENOSPC)
        _compile(16)
    monitor._at_exit()
    records = [json.loads(line) for line in (directory / _log_name()).read_text().splitlines()]
    assert records[-1]["type"] == "process" and records[-1]["events_not_written"] == 1
    assert f"1 compile event(s) of pid {os.getpid()} could not be written to {directory}" in out.getvalue()


@pytest.mark.parametrize("budget", ["2", {"add_one_kernel": "2"}, -1, 0, True, {"add_one_kernel": False}, {3: 2}, 2.0])
def test_a_bad_budget_is_refused_at_install(budget: object) -> None:
    with pytest.raises(ValueError, match=r"a variant budget is an int >= 1") as raised:
        monitor.install(budget=budget, summary=False)  # type: ignore[arg-type]
    assert repr(budget if not isinstance(budget, dict) else next(iter(budget.values()))) in str(raised.value)
    assert monitor.current() is None


@pytest.mark.parametrize("budget", [1, 4, {"add_one_kernel": 1, "other": 9}])
def test_a_good_budget_is_kept(budget: object) -> None:
    assert monitor.install(budget=budget, summary=False).budget == budget  # type: ignore[arg-type]
