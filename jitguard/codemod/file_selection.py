"""Which Python files a command works on, with ruff's conventions.

No PATH means `.`; directories are walked, skipping `DEFAULT_EXCLUDE` (or `exclude`, which
replaces it) plus `extend_exclude`, and what `.gitignore` files ignore. Patterns are
gitignore-style globs (`generated/`, `*_pb2.py`, `tests/fixtures/**`) matched against paths
relative to the project root. A file named on the command line is always used unless
`force_exclude` is set (what a pre-commit hook wants: it names every staged file).

    >>> selection = FileSelection(extend_exclude=("generated/",))
    >>> files = select_python_files(["."], selection)  # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import pathspec

#: Directories and files a walk never enters unless `exclude` replaces this list (ruff's defaults, less what
#: does not hold Python).
DEFAULT_EXCLUDE = (
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".mypy_cache", ".nox", ".pants.d", ".pytype",
    ".ruff_cache", ".svn", ".tox", ".venv", "__pypackages__", "__pycache__", "_build", "buck-out", "build", "dist",
    "node_modules", "site-packages", "venv", ".pytest_cache", "*.egg-info",
)


class PathInputError(ValueError):
    """A PATH argument that cannot be used (does not exist)."""


@dataclass(frozen=True)
class FileSelection:
    """File-selection settings, from the command line and `[tool.jitguard]`."""

    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    respect_gitignore: bool = True
    force_exclude: bool = False
    root: Path | None = None  # patterns are relative to this directory (the pyproject's); default: cwd


def _spec(patterns: Sequence[str]) -> pathspec.GitIgnoreSpec:
    return pathspec.GitIgnoreSpec.from_lines(patterns)


def _relative(resolved: Path, root: Path) -> str | None:
    try:
        return resolved.relative_to(root).as_posix()
    except ValueError:
        return None


class _Matcher:
    """Excludes and `.gitignore` rules, asked about one path at a time."""

    def __init__(self, selection: FileSelection, contained: bool = False) -> None:
        self.root = (selection.root or Path.cwd()).resolve()
        self.contained = contained  # only patterns and .gitignore files at or below `root` count
        self.excluded = _spec([*selection.exclude, *selection.extend_exclude])
        self.respect_gitignore = selection.respect_gitignore
        self._gitignores: dict[Path, pathspec.GitIgnoreSpec | None] = {}
        self._ancestors: dict[Path, list[Path]] = {}

    def _gitignore(self, directory: Path) -> pathspec.GitIgnoreSpec | None:
        if directory not in self._gitignores:
            file = directory / ".gitignore"
            try:
                lines = file.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                lines = []
            self._gitignores[directory] = _spec(lines) if lines else None
        return self._gitignores[directory]

    def _by_exclude(self, resolved: Path, name: str, is_dir: bool) -> bool:
        suffix = "/" if is_dir else ""
        relative = _relative(resolved, self.root)
        if relative is not None and relative != "." and self.excluded.match_file(relative + suffix):
            return True
        return self.excluded.match_file(name + suffix)  # a bare name matches anywhere, as in ruff

    def _by_gitignore(self, resolved: Path, is_dir: bool) -> bool:
        suffix = "/" if is_dir else ""
        parent = resolved.parent
        if parent not in self._ancestors:
            self._ancestors[parent] = self._gitignore_dirs(parent)
        for directory in self._ancestors[parent]:
            spec = self._gitignore(directory)
            if spec is not None and spec.match_file(resolved.relative_to(directory).as_posix() + suffix):
                return True
        return False

    def _gitignore_dirs(self, start: Path) -> list[Path]:
        """`start` and its parents up to the repository root (the directory holding `.git`); outside a
        repository, up to the project root."""
        found = []
        for directory in (start, *start.parents):
            found.append(directory)
            if (directory / ".git").exists() or (self.contained and directory == self.root):
                return found
        if start == self.root or self.root in start.parents:
            return found[: found.index(self.root) + 1]
        return [start]

    def excluded_path(self, path: Path, is_dir: bool, resolved: Path | None = None) -> bool:
        """True when `path` is excluded by a pattern or (if respected) ignored by git."""
        resolved = resolved or path.resolve()
        return self._by_exclude(resolved, path.name, is_dir) or (
            self.respect_gitignore and self._by_gitignore(resolved, is_dir)
        )


def select_python_files(paths: Sequence[str | Path], selection: FileSelection = FileSelection()) -> list[Path]:
    """Every `*.py`/`*.pyi` file under `paths` (default `.`) that the selection keeps, sorted, each once.

    Raises PathInputError for a path that does not exist. A file named directly is kept whatever its
    suffix, and whatever the excludes say unless `selection.force_exclude`. A link met in a walked
    directory whose file lies outside that directory is skipped (as black skips it): `fix` never
    rewrites a file outside the paths it was given unless that file (or its link) is named.
    """
    matcher = _Matcher(selection)
    found: set[Path] = set()
    for raw in paths or (".",):
        path = Path(raw)
        if not path.exists():
            if path.is_symlink():
                continue  # a dangling link (an editor's `.#name.py` lock) is no source: skip it
            raise PathInputError(f"{raw}: no such file or directory")
        if not path.is_dir():
            if not (selection.force_exclude and is_excluded(path, selection, matcher)):
                found.add(path)
            continue
        walker = matcher
        if is_excluded(path, selection, matcher):
            if selection.force_exclude:
                continue
            # Named on purpose (`jitguard scan .venv/.../site-packages/pkg`): what excludes the directory
            # itself does not exclude its contents; patterns and .gitignore files inside it still apply.
            walker = _Matcher(replace(selection, root=path.resolve()), contained=True)
        tree = path.resolve()
        for root, directories, files in os.walk(path):
            base = Path(root)
            real = base.resolve()  # once per directory: the walk does not follow links, so children are real / name
            directories[:] = sorted(d for d in directories if not walker.excluded_path(base / d, True, real / d))
            for name in files:
                if name.endswith((".py", ".pyi")) and not walker.excluded_path(base / name, False, real / name):
                    if _inside(base / name, tree):  # no dangling link, no link out of the tree, no FIFO
                        found.add(base / name)
    unique: dict[str, Path] = {}
    for path in sorted(found):
        unique.setdefault(os.path.realpath(path), path)
    return sorted(unique.values())


def _inside(path: Path, tree: Path) -> bool:
    """True for a source file of the walked `tree`: a regular file (a FIFO, socket or device named
    `*.py` is none), or a link to one inside `tree`."""
    if not os.path.islink(path):
        return os.path.isfile(path)
    target = Path(os.path.realpath(path))
    return target.is_file() and (target == tree or tree in target.parents)


def is_excluded(path: Path, selection: FileSelection, matcher: _Matcher | None = None) -> bool:
    """True when `path` or one of its parent directories is excluded or git-ignored."""
    matcher = matcher or _Matcher(selection)
    resolved = path.resolve()
    if matcher.excluded_path(resolved, resolved.is_dir(), resolved):
        return True
    return any(matcher.excluded_path(parent, True, parent) for parent in resolved.parents
               if _relative(parent, matcher.root) not in (None, "."))
