"""Reading sources for `fix` and `scan`, and running over files in parallel (choosing: `file_selection`)."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import click

from jitguard.codemod.source_text import UTF8_ENCODINGS, declared_encoding

# Below this many files the pool costs more than it saves.
PARALLEL_THRESHOLD = 16
# A progress bar is drawn only for trees at least this large (and only on a terminal).
PROGRESS_THRESHOLD = 200


class SourceError(Exception):
    """A file that cannot be used as Python source; str() is the one-line reason."""


def read_source(path: Path) -> bytes:
    """The bytes of `path`, checked to be text in the encoding Python would read it with (PEP 263).

    Raises SourceError with a short reason; a FIFO, socket or device is refused, never read (reading
    a FIFO named `x.py` would wait for a writer forever).
    """
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise SourceError("not a regular file (a FIFO, socket or device), not read")
        data = path.read_bytes()
    except OSError as exc:
        raise SourceError(f"cannot read ({exc.strerror or exc})") from None
    if b"\x00" in data:
        raise SourceError("binary file (contains NUL bytes), not Python source")
    try:
        encoding = declared_encoding(data)
        data.decode(encoding)
    except SyntaxError as exc:  # an unknown codec in the cookie, or a BOM that contradicts it
        raise SourceError(f"bad encoding declaration ({exc})") from None
    except UnicodeDecodeError as exc:
        name = "UTF-8" if encoding in UTF8_ENCODINGS else f"valid {encoding} (its coding cookie)"
        raise SourceError(f"not {name} (byte {exc.start})") from None
    return data


@dataclass(frozen=True)
class Progress:
    """Where and whether to draw a progress bar."""

    label: str
    enabled: bool


def progress_for(label: str, total: int, stream: object = None) -> Progress:
    """A progress bar on stderr when stderr is a terminal and the tree is large."""
    stream = sys.stderr if stream is None else stream
    interactive = bool(getattr(stream, "isatty", lambda: False)())
    return Progress(label, interactive and total >= PROGRESS_THRESHOLD)


_Item = TypeVar("_Item")
_Result = TypeVar("_Result")


def map_files(
    function: Callable[[_Item], _Result], items: Sequence[_Item], jobs: int, progress: Progress | None = None
) -> Iterator[_Result]:
    """`map(function, items)` in input order, on `jobs` processes when there are enough items.

    `function` must be a module-level function (it is pickled to the workers).
    """
    results: Iterable[_Result]
    pool: ProcessPoolExecutor | None = None
    if jobs > 1 and len(items) >= PARALLEL_THRESHOLD:
        pool = ProcessPoolExecutor(max_workers=jobs)
        chunk = max(1, min(64, len(items) // (jobs * 8)))
        results = pool.map(function, items, chunksize=chunk)
    else:
        results = map(function, items)
    try:
        if progress is not None and progress.enabled:
            with click.progressbar(results, length=len(items), label=progress.label, file=sys.stderr) as bar:
                yield from bar
        else:
            yield from results
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)


def default_jobs() -> int:
    """One worker per CPU this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)
