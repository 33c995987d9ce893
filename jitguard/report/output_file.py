"""Write a command's output file (`report -o`, `report --html`, `warmup-plan -o`) without ever
replacing something that is not a regular file.

A regular file (or a link to one) is replaced atomically: the text goes to a temporary file beside
it and is renamed over it, so a reader never sees half a report, and a link keeps pointing at its
file. A device node, a FIFO, a terminal, or an fd link (`/proc/self/fd/1`, `/dev/stdout`) is
written in place as a shell's `>` would: renaming a temporary file over `/dev/null` would replace
the system's `/dev/null` with a regular file, and a FIFO's reader would get nothing. A socket or
a directory is refused with an OSError whose strerror says why.

This module imports neither Triton nor torch.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile

# Paths under these folders name devices, descriptors and kernel files: never replaced by a rename.
_SPECIAL_FOLDERS = ("/dev/", "/proc/")


def _written_in_place(path: str, status: os.stat_result | None) -> bool:
    if status is not None and not stat.S_ISREG(status.st_mode):
        return True
    lexical = os.path.abspath(path)
    return any(where.startswith(_SPECIAL_FOLDERS) for where in (lexical + "/", os.path.realpath(path) + "/"))


def write_output_file(path: str, text: str) -> None:
    """Write `text` to `path`: atomically for a regular file, in place for a device, FIFO or fd link.

    Raises OSError (strerror says why) for a socket, a directory, or a failed write.
    """
    try:
        status: os.stat_result | None = os.stat(path)  # follows links: /proc/self/fd/1 is its pipe
    except FileNotFoundError:
        status = None
    if status is not None and stat.S_ISDIR(status.st_mode):
        raise OSError(errno.EISDIR, "a directory")
    if status is not None and stat.S_ISSOCK(status.st_mode):
        raise OSError(errno.EINVAL, "a socket, not a file: not written")
    if _written_in_place(path, status):
        with open(path, "w", encoding="utf-8") as stream:
            stream.write(text)
        return
    _replace_atomically(os.path.realpath(path), text, status)


def _replace_atomically(target: str, text: str, status: os.stat_result | None) -> None:
    handle, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp",
                                         dir=os.path.dirname(target))
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.chmod(temporary, _new_mode(status))  # mkstemp makes 0600; a report is as readable as any new file
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def _new_mode(status: os.stat_result | None) -> int:
    if status is not None:
        return status.st_mode & 0o7777  # overwriting keeps the file's mode
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask
