"""Reading a JSON input a user hands over (a report for `fix --from` and `warmup-plan`, a warm-up plan)
as data: parsed once, every failure one line naming the file, and checked against a shape so a field of
the wrong type is named by its path (`kernels[3].autotune.keys_tuned: 5, expected a list`) before any
code uses it.

    >>> data = load_json_file("report.json", ReportInputError)                       # doctest: +SKIP
    >>> check_shape(data, REPORT_SHAPE, "report.json", ReportInputError)            # doctest: +SKIP

A shape is a Python value: a type (`str`, `int`, `float` (any finite number), `bool`, `dict`, `list`),
`Nullable(shape)`, `ListOf(shape)`, `MapOf(shape)` (string keys), `Fields({...}, required=(...))`
(other keys allowed, a listed key's value may be absent) or `ANY`.

This module imports neither Triton nor torch.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

ANY = object()


@dataclass(frozen=True)
class Nullable:
    """`shape`, or null."""

    shape: Any


@dataclass(frozen=True)
class ListOf:
    """A list whose every item has `shape`."""

    shape: Any


@dataclass(frozen=True)
class MapOf:
    """An object whose every value has `shape`."""

    shape: Any


@dataclass(frozen=True)
class Fields:
    """An object: each listed key, when present, has its shape; `required` keys must be present."""

    shapes: dict[str, Any]
    required: tuple[str, ...] = field(default=())


_TYPE_WORDS = {str: "a string", int: "an integer", float: "a finite number", bool: "true or false",
               dict: "an object", list: "a list"}


def _words(value: Any) -> str:
    try:
        text = json.dumps(value, allow_nan=True, default=repr)
    except (ValueError, RecursionError):
        text = type(value).__name__
    return text if len(text) <= 40 else text[:37] + "..."


def _expected(shape: Any) -> str:
    if isinstance(shape, Nullable):
        return _expected(shape.shape) + " or null"
    if isinstance(shape, ListOf):
        return "a list"
    if isinstance(shape, (MapOf, Fields)):
        return "an object"
    return _TYPE_WORDS.get(shape, str(shape))


def _fits_scalar(value: Any, shape: Any) -> bool:
    if shape is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if shape is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return isinstance(value, shape)


def shape_error(value: Any, shape: Any, path: str = "") -> str | None:
    """Where `value` first departs from `shape`: '<path>: <value>, expected <words>'; None if it fits."""
    if shape is ANY:
        return None
    if isinstance(shape, Nullable):
        return None if value is None else shape_error(value, shape.shape, path)
    here = path or "the top level"
    if isinstance(shape, ListOf):
        if not isinstance(value, list):
            return f"{here}: {_words(value)}, expected a list"
        for index, item in enumerate(value):
            problem = shape_error(item, shape.shape, f"{path}[{index}]")
            if problem:
                return problem
        return None
    if isinstance(shape, (MapOf, Fields)):
        if not isinstance(value, dict):
            return f"{here}: {_words(value)}, expected an object"
        return _object_error(value, shape, path)
    if not _fits_scalar(value, shape):
        return f"{here}: {_words(value)}, expected {_expected(shape)}"
    return None


def _object_error(value: dict, shape: MapOf | Fields, path: str) -> str | None:
    prefix = f"{path}." if path else ""
    if isinstance(shape, MapOf):
        items = [(key, shape.shape) for key in value]
    else:
        missing = [key for key in shape.required if key not in value]
        if missing:
            return f"{path or 'the top level'}: no {missing[0]!r}"
        items = [(key, inner) for key, inner in shape.shapes.items() if key in value]
    for key, inner in items:
        child = f"{prefix}{key}" if key.isidentifier() else f"{path}[{json.dumps(key)}]"
        problem = shape_error(value[key], inner, child)
        if problem:
            return problem
    return None


def check_shape(value: Any, shape: Any, where: str, error: type[Exception]) -> None:
    """Raise `error("<where>: <path>: <value>, expected <words>")` where `value` departs from `shape`."""
    try:
        problem = shape_error(value, shape)
    except RecursionError:
        problem = "nested too deeply to read"
    if problem:
        raise error(f"{where}: {problem}")


def loads_json(text: str, where: str, error: type[Exception]) -> Any:
    """`json.loads(text)`, with every failure (not JSON, nested too deeply, an integer too long to
    convert) raised as one-line `error` naming `where`."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"{where}: not JSON ({exc.msg}, line {exc.lineno})") from None
    except RecursionError:
        raise error(f"{where}: JSON nested too deeply to read") from None
    except ValueError as exc:  # an integer of more digits than Python converts
        raise error(f"{where}: not readable JSON ({str(exc).split(';')[0]})") from None


def load_json_file(path: str, error: type[Exception]) -> Any:
    """The JSON value in the file at `path` (see `loads_json`); an unreadable file is `error` too."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as handle:
            text = handle.read()
    except OSError as exc:
        raise error(f"{path}: cannot read ({exc.strerror or exc})") from None
    return loads_json(text, path, error)


# --- the shapes of what jitguard writes and reads back --------------------------------------------

# Null only where jitguard itself writes null; an absent key is always allowed (older writers).
_PARAM_ENTRY = Fields({"kind": str, "type": Nullable(str), "spec": Nullable(str), "value": ANY,
                       "observed": ANY, "dtype": Nullable(str)})
_AUTOTUNE = Fields({"key": ListOf(str), "keys_tuned": ListOf(dict), "bucket": dict,
                    "tunings_by_dtype": ListOf(Fields({"key": dict, "dtypes": list}))})
_COST = Fields({"verdict": str, "detail": Nullable(str), "alternative": Nullable(str), "likely": Nullable(str)})

REPORT_SHAPE = Fields({
    "directory": str,
    "kernels": ListOf(Fields({
        "name": str, "binding": str, "module": str, "file": str, "line": int, "variants": int,
        "fix": Nullable(str), "fix_costly": Nullable(str),
        "params": MapOf(Fields({"specs_seen": ListOf(str), "recompiles_caused": int, "advice": Nullable(str),
                                "cost": Nullable(_COST)})),
        "variant_list": ListOf(Fields({"key": str, "triton_version": str, "params": MapOf(_PARAM_ENTRY),
                                       "options": dict, "compile_ms": Nullable(float)})),
        "autotune": _AUTOTUNE,
    }, required=("name",))),
}, required=("kernels", "directory"))
"""What `fix --from` and `warmup-plan` read from a `jitguard report --json` file."""

PLAN_SHAPE = Fields({
    "triton_versions": ListOf(str),
    "kernels": ListOf(Fields({
        "name": str, "module": str, "binding": str, "qualname": str, "file": str, "line": int,
        "variants": ListOf(Fields({"params": MapOf(_PARAM_ENTRY), "options": dict,
                                   "launch_kwargs": Nullable(dict), "key": str,
                                   "compile_ms": Nullable(float), "unrebuildable": str})),
        "autotune": _AUTOTUNE,
    }, required=("name", "module"))),
}, required=("kernels",))
"""What `jitguard.warmup(plan)` reads from a plan written by `jitguard warmup-plan`."""
