"""`[tool.jitguard]` in pyproject.toml, and rule selection (`select`, `ignore`, `per-file-ignores`).

    [tool.jitguard]
    extend-exclude = ["generated/"]
    ignore = ["JG102"]
    per-file-ignores = { "tests/**" = ["JG101"] }

Codes are rule ids or their prefixes (`JG1` is every JG1xx rule, `ALL` is every rule), as in
ruff. An unknown key, a wrong type or an unknown code is a `ConfigError` naming the key and file.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from jitguard.codemod.file_selection import DEFAULT_EXCLUDE, FileSelection

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

#: Every key `[tool.jitguard]` accepts.
KNOWN_KEYS = frozenset(
    {"exclude", "extend-exclude", "select", "ignore", "per-file-ignores", "respect-gitignore", "force-exclude"}
)


class ConfigError(ValueError):
    """A settings problem; the message names the file and the key."""


@dataclass(frozen=True)
class ScanSettings:
    """Settings of one run: where they came from, file selection and rule selection."""

    source: Path | None = None  # the pyproject.toml read, if any
    selection: FileSelection = FileSelection()  # noqa: RUF009 - frozen dataclass: one shared default is safe
    select: tuple[str, ...] = ("ALL",)
    ignore: tuple[str, ...] = ()
    per_file_ignores: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above `start` that has a `[tool.jitguard]` table, else None."""
    start = start.resolve()
    for directory in (start, *start.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            try:
                data = tomllib.loads(candidate.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                continue
            if isinstance(data.get("tool"), dict) and "jitguard" in data["tool"]:
                return candidate
    return None


def _strings(value: object, key: str, where: Path) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{where}: [tool.jitguard] `{key}` must be a list of strings")
    return tuple(value)


def check_codes(codes: Iterable[str], rule_ids: Iterable[str], where: str) -> tuple[str, ...]:
    """`codes` upper-cased; a code that is neither `ALL` nor a prefix of some rule id is an error."""
    ids = list(rule_ids)
    checked = []
    for code in codes:
        code = code.strip().upper()
        if not code:
            continue
        if code != "ALL" and not any(rule.startswith(code) for rule in ids):
            raise ConfigError(f"{where}: unknown rule code `{code}` (rules: {', '.join(ids)})")
        checked.append(code)
    return tuple(checked)


def load_settings(pyproject: Path | None, rule_ids: Iterable[str]) -> ScanSettings:
    """Read `[tool.jitguard]` from `pyproject` (None: defaults, patterns relative to the cwd)."""
    if pyproject is None:
        return ScanSettings()
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{pyproject}: cannot read ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{pyproject}: not valid TOML ({exc})") from None
    table = data.get("tool", {}).get("jitguard", {}) if isinstance(data.get("tool"), dict) else {}
    if not isinstance(table, dict):
        raise ConfigError(f"{pyproject}: [tool.jitguard] must be a table")
    unknown = sorted(set(table) - KNOWN_KEYS)
    if unknown:
        raise ConfigError(f"{pyproject}: unknown key `{unknown[0]}` in [tool.jitguard] "
                          f"(known: {', '.join(sorted(KNOWN_KEYS))})")
    ids = list(rule_ids)
    flags = {}
    for key in ("respect-gitignore", "force-exclude"):
        if key in table and not isinstance(table[key], bool):
            raise ConfigError(f"{pyproject}: [tool.jitguard] `{key}` must be true or false")
        flags[key] = table.get(key)
    per_file: dict[str, tuple[str, ...]] = {}
    raw_per_file = table.get("per-file-ignores", {})
    if not isinstance(raw_per_file, dict):
        raise ConfigError(f"{pyproject}: [tool.jitguard] `per-file-ignores` must be a table of pattern = [codes]")
    for pattern, codes in raw_per_file.items():
        per_file[pattern] = check_codes(_strings(codes, f"per-file-ignores.{pattern}", pyproject), ids,
                                        f"{pyproject}: [tool.jitguard] per-file-ignores")
    selection = FileSelection(
        exclude=_strings(table["exclude"], "exclude", pyproject) if "exclude" in table else DEFAULT_EXCLUDE,
        extend_exclude=_strings(table.get("extend-exclude", []), "extend-exclude", pyproject),
        respect_gitignore=True if flags["respect-gitignore"] is None else flags["respect-gitignore"],
        force_exclude=bool(flags["force-exclude"]),
        root=pyproject.parent.resolve(),
    )
    where = f"{pyproject}: [tool.jitguard]"
    return ScanSettings(
        source=pyproject,
        selection=selection,
        select=(check_codes(_strings(table["select"], "select", pyproject), ids, where)
                if "select" in table else ("ALL",)),
        ignore=check_codes(_strings(table.get("ignore", []), "ignore", pyproject), ids, where),
        per_file_ignores=per_file,
    )


def enabled_rules(rule_ids: Iterable[str], select: Iterable[str], ignore: Iterable[str]) -> frozenset[str]:
    """Rule ids selected by `select` (codes or prefixes, `ALL`) and not removed by `ignore`."""
    def matches(rule: str, codes: Iterable[str]) -> bool:
        return any(code == "ALL" or rule.startswith(code) for code in codes)

    select, ignore = list(select), list(ignore)
    return frozenset(rule for rule in rule_ids if matches(rule, select) and not matches(rule, ignore))


@functools.lru_cache(maxsize=256)
def _pattern_spec(pattern: str) -> pathspec.GitIgnoreSpec:
    return pathspec.GitIgnoreSpec.from_lines([pattern])


def ignored_for_file(file: Path | str, settings: ScanSettings) -> tuple[str, ...]:
    """Codes `per-file-ignores` removes for `file` (a path relative to the project root, or absolute)."""
    if not settings.per_file_ignores:
        return ()
    root = (settings.selection.root or Path.cwd()).resolve()
    path = Path(file)
    try:
        relative = path.resolve().relative_to(root).as_posix()
    except ValueError:
        relative = path.as_posix()
    codes: list[str] = []
    for pattern, pattern_codes in settings.per_file_ignores.items():
        spec = _pattern_spec(pattern)
        if spec.match_file(relative) or spec.match_file(path.name):
            codes += pattern_codes
    return tuple(codes)
