"""Writing rewritten sources back, the way ruff and black do: atomically, keeping ownership and
mode, refusing read-only files, and stopping only between files when a run is interrupted."""

from __future__ import annotations

import fcntl
import os
import signal
import stat
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

TEMPORARY_SUFFIX = ".jitguard-tmp"
# Signals that stop a run between two files (the file being written is finished first).
STOPPING_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class WriteRefused(Exception):
    """A file jitguard must not replace (read-only, or an owner it cannot keep); str() is the reason."""


def _read_only(path: Path, before: os.stat_result) -> str | None:
    """'read-only file (mode 0444)' when `path` has no write bit or this user may not write it."""
    mode = stat.S_IMODE(before.st_mode)
    if not mode & 0o222 or not os.access(path, os.W_OK):
        return f"read-only file (mode {mode:04o})"
    return None


def _owner_not_kept(before: os.stat_result) -> str:
    return f"owned by uid {before.st_uid} gid {before.st_gid}, which this user cannot keep on a rewritten file"


def write_refusal(path: Path) -> str | None:
    """Why `write_atomically(path, ...)` would not replace `path`, judged without writing; None if it would.

    For the modes that write nothing (`fix --check`, `--diff`), so a pending change to a file that
    `fix` cannot write says so. Same reasons, same words as the refusals of `write_atomically`:
    read-only, an owner or group this user cannot keep, a directory where no temporary file can go.
    """
    try:
        path = path.resolve()
        before = path.stat()
    except OSError as exc:
        return f"cannot write ({exc.strerror or exc})"
    read_only = _read_only(path, before)
    if read_only:
        return read_only
    if not os.access(path.parent, os.W_OK | os.X_OK):
        return f"cannot write (directory {path.parent} is not writable: no temporary file can be made there)"
    if hasattr(os, "geteuid") and os.geteuid() != 0:  # root may chown to anyone; others keep their uid
        directory = path.parent.stat()
        # The temporary file takes a set-group-id directory's group, else ours; chown may pick our groups only.
        created_gid = directory.st_gid if directory.st_mode & stat.S_ISGID else os.getegid()
        group_kept = before.st_gid in (created_gid, *os.getgroups())
        if before.st_uid != os.geteuid() or not group_kept:
            return _owner_not_kept(before)
    return None


def other_hard_links(path: Path) -> int:
    """How many other names (hard links) share `path`'s file: they keep the old text after a
    rewrite, which replaces the name and not the file (0 when it cannot be told)."""
    try:
        return max(path.resolve().stat().st_nlink - 1, 0)
    except OSError:
        return 0


def write_atomically(path: Path, data: bytes) -> int:
    """Replace `path` with `data` via a temporary file and a rename in the same directory.

    An interrupted run leaves either the old file or the new one, never a mix and never the
    temporary file; owner, group and permission bits are kept, and a symlink keeps pointing at
    the file it named. Other hard links of the old file keep the old text (as with black and
    ruff; a package manager's shared cache stays as it was): returns how many there were.
    Raises WriteRefused for a read-only file (no write bit, or not writable by this user) and
    for an owner or group this user cannot give the new file; OSError otherwise.
    """
    path = path.resolve()
    before = path.stat()
    mode = stat.S_IMODE(before.st_mode)
    read_only = _read_only(path, before)
    if read_only:
        raise WriteRefused(f"{read_only}; not written")
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMPORARY_SUFFIX, dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        created = os.stat(temporary)
        if hasattr(os, "chown") and (created.st_uid, created.st_gid) != (before.st_uid, before.st_gid):
            try:
                os.chown(temporary, before.st_uid, before.st_gid)
            except PermissionError:
                raise WriteRefused(f"{_owner_not_kept(before)}; not written") from None
        os.chmod(temporary, mode)  # after chown, which clears set-id bits
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        raise
    return max(before.st_nlink - 1, 0)


@dataclass
class PendingWrite:
    """A rewrite computed from `original`: written only while the file still holds `original`.

    When another writer (a second `jitguard fix`, an editor) changed the file since it was read,
    `redo` computes the edit again on the new content (None from it: nothing left to change); with
    no `redo`, the file is reported as failed. An edit is never written over content it was not
    computed from, and never dropped without a word.
    """

    path: Path
    data: bytes
    original: bytes
    redo: Callable[[bytes], bytes | None] | None = None


@contextmanager
def _locked(path: Path) -> Iterator[int]:
    """An fd of the file now at `path`, under an exclusive lock (fcntl.flock) no other compare-and-write
    holds. A rename by the previous holder replaced the file: the lock is then taken again on the new one."""
    while True:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if os.path.samestat(os.fstat(fd), os.stat(path)):
                break
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # the file was replaced while we waited: lock the one there now
    try:
        yield fd
    finally:
        os.close(fd)  # closing releases the lock


def _read_fd(fd: int) -> bytes:
    chunks: list[bytes] = []
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def write_if_unchanged(pending: PendingWrite) -> tuple[int, bool]:
    """Write `pending.data` atomically if the file still holds `pending.original`, else redo the edit on
    what it holds now (see PendingWrite). Returns (other hard links, whether the edit was redone).

    Raises WriteRefused when the file changed and the edit cannot be redone; OSError otherwise.
    """
    path = pending.path.resolve()
    with _locked(path) as fd:
        current = _read_fd(fd)
        data, redone = pending.data, False
        if current != pending.original:
            if pending.redo is None:
                raise WriteRefused("changed since jitguard read it; not written (run fix again)")
            new = pending.redo(current)
            if new is None or new == current:
                return 0, True  # the other writer made this very edit: nothing left to write
            data, redone = new, True
        return write_atomically(path, data), redone


@dataclass
class WriteReport:
    """What a batch of writes did: each file is written, failed (with a reason), or not reached."""

    written: list[Path] = field(default_factory=list)
    failed: list[tuple[Path, str]] = field(default_factory=list)
    not_written: list[Path] = field(default_factory=list)  # not reached: the run was stopped first
    links_left: list[tuple[Path, int]] = field(default_factory=list)  # written; its other hard links were not
    redone: list[Path] = field(default_factory=list)  # changed by another writer meanwhile: edit computed again
    stopped_by: int | None = None  # the signal number that stopped the run

    def stop_lines(self) -> list[str]:
        """For a stopped run: `not written: FILE` for each file not reached, then the counts."""
        if self.stopped_by is None:
            return []
        name = signal.Signals(self.stopped_by).name
        lines = [f"not written: {path}" for path in self.not_written]
        lines.append(f"Stopped by {name}: {len(self.written)} file{'' if len(self.written) == 1 else 's'} written, "
                     f"{len(self.not_written)} not written (run fix again to finish).")
        return lines


@contextmanager
def _signals_deferred(report: WriteReport) -> Iterator[None]:
    """SIGINT/SIGTERM only set `report.stopped_by` (a second one stops at once, temp file removed)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers; the caller's own handling stands
        return

    def stop(signum: int, frame: object) -> None:
        if report.stopped_by is None:
            report.stopped_by = signum
            return
        raise KeyboardInterrupt if signum == signal.SIGINT else SystemExit(128 + signum)

    previous = {signum: signal.signal(signum, stop) for signum in STOPPING_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def write_files(files: Sequence[tuple[Path, bytes] | PendingWrite]) -> WriteReport:
    """Write each `(path, data)` atomically, in order; a SIGINT/SIGTERM stops the run between files.
    A PendingWrite is a compare-and-write (`write_if_unchanged`): two runs on one file never lose an edit.

    The caller decides what a stop means (the `fix` command lists both sides and exits 128+signal).
    """
    report = WriteReport()
    with _signals_deferred(report):
        for index, item in enumerate(files):
            if report.stopped_by is not None:
                report.not_written = [item.path if isinstance(item, PendingWrite) else item[0]
                                      for item in files[index:]]
                break
            path = item.path if isinstance(item, PendingWrite) else item[0]
            try:
                if isinstance(item, PendingWrite):
                    links, redone = write_if_unchanged(item)
                    if redone:
                        report.redone.append(path)
                else:
                    links = write_atomically(path, item[1])
            except WriteRefused as exc:
                report.failed.append((path, str(exc)))
            except OSError as exc:
                report.failed.append((path, f"cannot write ({exc.strerror or exc})"))
            else:
                report.written.append(path)
                if links:
                    report.links_left.append((path, links))
    return report
