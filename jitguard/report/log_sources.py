"""Which log files several inputs name: directories, single logs, globs and list files, for the logs of many nodes.

A cluster leaves one directory of `<host>-<pid>.ndjson` logs per node (or one shared store);
`jitguard report node-a/ node-b/`, `jitguard report 'logs/*/'` and `jitguard report @nodes.txt`
(a file listing one path or glob per line; `#` starts a comment; relative paths are read from the
list file's directory) all name the same set. A file reached twice is read once.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence

LIST_FILE_PREFIX = "@"


class LogSourceError(ValueError):
    """An input names nothing usable: no such path, a glob that matches nothing, an unreadable list file."""


def _is_glob(text: str) -> bool:
    return any(char in text for char in "*?[")


def names_several(source: str) -> bool:
    """Whether `source` is a glob or an @list file rather than one path."""
    return source.startswith(LIST_FILE_PREFIX) or _is_glob(source)


def _logs_in_directory(directory: str) -> list[str]:
    files = sorted(glob.glob(os.path.join(glob.escape(directory), "*.ndjson")))
    if not files:
        raise LogSourceError(f"{directory}: no *.ndjson logs here (write them with `jitguard run` or JITGUARD_DIR)")
    return files


def _list_file_entries(list_file: str) -> list[str]:
    try:
        with open(list_file, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise LogSourceError(f"{list_file}: cannot read this list of log paths ({reason})") from None
    base = os.path.dirname(os.path.abspath(list_file))
    entries = []
    for line in lines:
        text = line.split("#", 1)[0].strip()
        if text:
            entries.append(text if os.path.isabs(text) else os.path.join(base, text))
    if not entries:
        raise LogSourceError(f"{list_file}: lists no log paths")
    return entries


def _files_of(source: str, from_list: str | None) -> list[str]:
    where = f" (listed in {from_list})" if from_list else ""
    if os.path.isfile(source):
        return [source]
    if os.path.isdir(source):
        return _logs_in_directory(source)
    if _is_glob(source):
        matches = sorted(glob.glob(source))
        if not matches:
            raise LogSourceError(f"{source}{where}: the pattern matches nothing")
        files: list[str] = []
        for match in matches:
            if os.path.isdir(match):
                files.extend(sorted(glob.glob(os.path.join(glob.escape(match), "*.ndjson"))))
            elif match.endswith(".ndjson"):
                files.append(match)
        if not files:
            raise LogSourceError(f"{source}{where}: the pattern matches no *.ndjson log or directory of them")
        return files
    raise LogSourceError(f"{source}{where}: no such file or directory")


def expand_log_sources(sources: Sequence[str | os.PathLike]) -> list[str]:
    """The log files named by `sources` (directories, logs, globs, `@list` files), in order, each once.

    Raises LogSourceError naming the first input that names nothing.
    """
    files: list[str] = []
    seen: set[str] = set()
    for raw in sources:
        source = os.fspath(raw)
        if source.startswith(LIST_FILE_PREFIX) and not os.path.exists(source):
            list_file = source[len(LIST_FILE_PREFIX):]
            found = [path for entry in _list_file_entries(list_file) for path in _files_of(entry, list_file)]
        else:
            found = _files_of(source, None)
        for path in found:
            real = os.path.realpath(path)
            if real not in seen:
                seen.add(real)
                files.append(path)
    return files


def common_directory(files: Sequence[str]) -> str:
    """The deepest directory that holds every one of `files` (what a merged report names as its source)."""
    directories = [os.path.dirname(os.path.abspath(path)) for path in files]
    return os.path.commonpath(directories) if directories else os.getcwd()
