"""The per-process compile log: one JSON line per record in `<dir>/<host>-<pid>.ndjson`.

One `write()` per line, as the event happens: a process killed later loses nothing written before.
After a fork the child opens its own file.

A log that cannot be written never silences anything else. When the directory is missing or
unwritable, the disk is full, or the path holds a symbolic link or a file that is not ours, the
sink warns once (naming the directory and the error), keeps going, and counts the events it could
not write. The count (`events_not_written`) goes into a fresh process record as soon as a write
succeeds again, or at exit; readers take a process's last record.
"""

from __future__ import annotations

import errno
import os
import socket
import stat
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from jitguard.events import ProcessRecord, to_json_line
from jitguard.runtime.argv_redaction import redact_argv

# O_NOFOLLOW: a symlink planted at our path in a shared directory must not redirect the records.
# O_NONBLOCK: a FIFO planted there must not hang the host at open().
_OPEN_FLAGS = (os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
               | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))


# Names the cluster node a process runs on where the host name alone does not (several Ray nodes on
# one machine); set by jitguard.integrations.ray in each Ray worker, or by hand.
NODE_VARIABLE = "JITGUARD_NODE"


class LogWriteError(OSError):
    """The log file could not be opened or written (the reason is in the message)."""


def _stderr_line(line: str) -> None:
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except Exception:  # a closed stderr must not break the host
        pass


def process_argv() -> list[str]:
    """sys.argv, or the interpreter's own argv while `python -m pkg` has not yet filled sys.argv[0]."""
    argv = list(sys.argv)
    if argv and argv[0] == "-m" and getattr(sys, "orig_argv", None):
        return list(sys.orig_argv[1:])
    return argv


def _not_a_plain_file(path: str) -> str | None:
    """Why `path` is refused when something other than a regular file sits there, else None."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None
    if stat.S_ISLNK(mode):
        return f"{path} is a symbolic link (refused: it could redirect the log)"
    if not stat.S_ISREG(mode):
        return f"{path} is not a regular file"
    return None


class NdjsonSink:
    """Appends records to this process's NDJSON file; never raises (see the module docstring).

    `warn` receives the one warning line (default: stderr).
    """

    def __init__(self, directory: str, warn: Callable[[str], None] | None = None) -> None:
        self.directory = directory
        self.process_info: dict[str, Any] = {}
        self._warn = warn or _stderr_line
        self._lock = threading.Lock()
        self._reset(os.getpid())

    def _reset(self, pid: int) -> None:
        self._owner_pid = pid
        self._fd: int | None = None
        self._header_pending = True  # a freshly opened file starts with the process record
        self.events_not_written = 0
        self._count_pending = False  # the file's last process record predates the current count
        self.last_error: str | None = None
        self._warned = False

    @property
    def path(self) -> str:
        return os.path.join(self.directory, f"{socket.gethostname()}-{os.getpid()}.ndjson")

    # --- writing ---------------------------------------------------------------------------------

    def write(self, record: Any, counted: bool = True) -> bool:
        """Append one record (a compile event); False, counted and warned once, if it could not be. A record
        that is not an event (a phase mark) passes `counted=False`: its loss is warned, not counted."""
        with self._lock:
            self._adopt_after_fork()
            try:
                self._ensure_header()
                self._append((to_json_line(record) + "\n").encode())
            except Exception as exc:  # any failure: count it, the host goes on
                if counted:
                    self.events_not_written += 1
                    self._count_pending = True
                self._failed(exc)
                return False
            if self._count_pending:
                self._try_append_process_record()
            return True

    def write_process_record(self, force: bool = False) -> bool:
        """Write this process's record now (it is otherwise written with the first event).

        `force` appends a fresh record even if one was written (a role or rank named later);
        readers take a process's last record. False if it could not be written.
        """
        with self._lock:
            self._adopt_after_fork()
            try:
                if not self._ensure_header() and (force or self._count_pending):
                    self._append(self._process_line())
                    self._count_pending = False
            except Exception as exc:
                self._failed(exc)
                return False
            return True

    def record_unwritten_count(self) -> bool:
        """Put the count of unwritten events in the file if it is not there yet (at exit); True if it is."""
        if self.events_not_written == 0 or not self._count_pending:
            return True
        return self.write_process_record(force=True)

    def close(self) -> None:
        with self._lock:
            if self._fd is not None and self._owner_pid == os.getpid():
                os.close(self._fd)
            self._fd = None
            self._header_pending = True

    # --- internals -------------------------------------------------------------------------------

    def _adopt_after_fork(self) -> None:
        if self._owner_pid != os.getpid():
            self._reset(os.getpid())  # the parent's descriptor and counts are the parent's

    def _ensure_header(self) -> bool:
        """Open the file and write the process record if not done yet; True if it wrote one."""
        if self._fd is None:
            self._fd = self._open()
            self._header_pending = True
        if not self._header_pending:
            return False
        self._append(self._process_line())
        self._header_pending = False
        self._count_pending = False
        return True

    def _open(self) -> int:
        path = self.path
        os.makedirs(self.directory, exist_ok=True)
        try:
            fd = os.open(path, _OPEN_FLAGS, 0o644)
        except OSError as exc:
            planted = _not_a_plain_file(path)
            if planted:
                raise LogWriteError(exc.errno, planted) from exc
            raise
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise LogWriteError(errno.EINVAL, _not_a_plain_file(path) or f"{path} is not a regular file")
            if hasattr(os, "geteuid") and info.st_uid != os.geteuid():
                raise LogWriteError(errno.EPERM, f"{path} belongs to another user (uid {info.st_uid})")
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _append(self, data: bytes) -> None:
        assert self._fd is not None
        written = os.write(self._fd, data)
        if written < len(data):
            # A torn line (disk full mid-write): cut it off so the next line starts clean.
            try:
                os.ftruncate(self._fd, os.fstat(self._fd).st_size - written)
            except OSError:
                pass
            raise LogWriteError(errno.ENOSPC, f"short write to {self.path} ({written} of {len(data)} bytes)")

    def _try_append_process_record(self) -> None:
        try:
            self._append(self._process_line())
            self._count_pending = False
        except Exception as exc:
            self._failed(exc)

    def _process_line(self) -> bytes:
        record = ProcessRecord(pid=os.getpid(), ppid=os.getppid(), argv=redact_argv(process_argv()),
                               role=self.process_info.get("role"), rank=self.process_info.get("rank"),
                               triton_version=self.process_info.get("triton_version", ""),
                               host=socket.gethostname(), time=time.time()).to_dict()
        record.pop("events_not_written", None)  # only a process that lost events says so
        node = os.environ.get(NODE_VARIABLE)
        if node:  # a cluster's node (a Ray node on a shared host), beside the host name
            record["node"] = node
        if self.events_not_written:
            record["events_not_written"] = self.events_not_written
        return (to_json_line(record) + "\n").encode()

    def _failed(self, exc: BaseException) -> None:
        self.last_error = f"{type(exc).__name__}: {exc}"
        if self._warned:
            return
        self._warned = True
        self._warn(f"[jitguard] warning: cannot write the compile log in {self.directory} ({self.last_error}); "
                   "jitguard goes on in memory (checks, budgets, modes and log lines still work) and counts "
                   "the events it could not write")
