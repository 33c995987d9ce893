"""Read the per-process NDJSON logs of a run back into records, checking every record on the way.

`jitguard run` (and the vLLM plugin) leave one `<host>-<pid>.ndjson` file per process in a
directory. `load_logs(path)` reads them all; the report and the warm-up plan builder both start
here:

    >>> logs = load_logs("jitguard-logs/run-1")                          # doctest: +SKIP
    >>> [(p.pid, len(p.events)) for p in logs.processes]                # doctest: +SKIP
    [(5200, 3), (5207, 2)]

A line that is not JSON (a process killed mid-write), or a record with a field of the wrong type
(`"variant": "x"`, `"compile_ms": NaN`, `"params": [1, 2]`) is skipped and kept in `skipped` with
its file, line and reason; one unreadable file is named in `unreadable` while the others are read.
Non-finite floats never come out of here, so every report built on these records is strict JSON.

This module imports neither Triton nor torch.
"""

from __future__ import annotations

import errno
import glob
import json
import math
import os
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from jitguard.events import ORIGINS, Cause, CompileEvent, ParamSpec
from jitguard.report.log_sources import LogSourceError, common_directory, expand_log_sources, names_several
from jitguard.runtime.arrival import ARRIVALS
from jitguard.runtime.dynamo_recompiles import RECORD_TYPE as GRAPH_COMPILE_TYPE
from jitguard.runtime.phase_marks import PHASES
from jitguard.runtime.phase_marks import RECORD_TYPE as PHASE_MARK_TYPE
from jitguard.tuning.records import RECORD_TYPE as TUNING_RECORD_TYPE
from jitguard.tuning.records import TuningRecord


class LogInputError(ValueError):
    """The logs are unusable as a whole: no such path, no NDJSON logs in it, or none readable."""


class InvalidRecord(ValueError):
    """One record does not fit the CompileEvent / process record contract; the message says which field."""


@dataclass
class SkippedLine:
    """A line of a log that was not used, and why."""

    file: str
    line: int
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"file": os.path.basename(self.file), "line": self.line, "reason": self.reason}


@dataclass
class ProcessLog:
    """One process as read back from its log file: its record (if it wrote one) and its compiles."""

    host: str
    pid: int
    ppid: int | None
    argv: list[str]
    role: str | None
    rank: int | None
    triton_version: str
    started: float | None
    file: str
    events: list[CompileEvent] = field(default_factory=list)
    tunings: list[TuningRecord] = field(default_factory=list)  # autotune benchmark runs ("type": "tuning")
    phase_marks: list[dict[str, Any]] = field(default_factory=list)  # {"phase", "time"} ("type": "phase")
    skipped_lines: int = 0
    events_not_written: int = 0  # events the process could not write to its log (its record says)
    node: str = ""  # the cluster node (JITGUARD_NODE) where the host alone does not tell, e.g. Ray nodes on one host


@dataclass
class MergedLogs:
    """Everything read from one directory of logs."""

    directory: str
    files: list[str]
    processes: list[ProcessLog]
    skipped: list[SkippedLine] = field(default_factory=list)  # the first SKIPPED_KEPT of them
    unreadable: list[tuple[str, str]] = field(default_factory=list)  # (path, error)
    skipped_count: int | None = None  # every skipped line, kept or not (None: len(skipped))

    @property
    def skipped_lines(self) -> int:
        return len(self.skipped) if self.skipped_count is None else self.skipped_count

    @property
    def events(self) -> list[CompileEvent]:
        return [event for process in self.processes for event in process.events]

    @property
    def tunings(self) -> list[TuningRecord]:
        return [tuning for process in self.processes for tuning in process.tunings]


# --- record checks ------------------------------------------------------------------------------

_MISSING = object()


def _words(value: Any) -> str:
    text = json.dumps(value, default=repr, allow_nan=True)
    return text if len(text) <= 40 else text[:37] + "..."


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _field(record: dict, name: str, check: Callable[[Any], bool], expected: str, default: Any,
           nullable: bool = True) -> Any:
    """record[name] if it passes `check`; `default` when absent (or null, when `nullable`)."""
    value = record.get(name, _MISSING)
    if value is _MISSING or (value is None and nullable):
        return default
    if _is_number(value) and not math.isfinite(value):
        raise InvalidRecord(f"{name} is {_words(value)}, expected {expected}")
    if not check(value):
        raise InvalidRecord(f"{name} is {_words(value)}, expected {expected}")
    return value


# Each reader below returns at once for the usual well-typed value (a log holds millions of them) and
# goes through `_field`, which words the error, otherwise.

def _string(record: dict, name: str, default: Any = "") -> Any:
    value = record.get(name)
    if type(value) is str:
        return value
    return _field(record, name, lambda v: isinstance(v, str), "a string", default)


def _int(record: dict, name: str, default: Any = 0, minimum: int | None = None) -> Any:
    value = record.get(name)
    if type(value) is int and (minimum is None or value >= minimum):
        return value
    check = (lambda v: _is_int(v)) if minimum is None else (lambda v: _is_int(v) and v >= minimum)
    expected = "an integer" if minimum is None else f"an integer >= {minimum}"
    return _field(record, name, check, expected, default)


def _number(record: dict, name: str, default: Any = None) -> Any:
    value = record.get(name)
    if type(value) is float and 0 <= value < math.inf:
        return value
    value = _field(record, name, lambda v: _is_number(v) and v >= 0, "a finite number >= 0", default)
    return float(value) if value is not None else None


def _arrival(record: dict) -> str | None:
    """`arrived`: one of `runtime.arrival.ARRIVALS`, or null (this Triton could not tell)."""
    value = record.get("arrived")
    if value is None or value in ARRIVALS:
        return value
    raise InvalidRecord(f"arrived is {_words(value)}, expected " + ", ".join(f'"{a}"' for a in ARRIVALS) + " or null")


def _cache_miss(record: dict) -> dict[str, Any] | None:
    """`cache_miss`: null, or {"entries": an integer >= 0, "differs": a list of strings}."""
    value = record.get("cache_miss")
    if value is None:
        return None
    if (isinstance(value, dict) and _is_int(value.get("entries")) and value["entries"] >= 0
            and isinstance(value.get("differs"), list) and all(isinstance(d, str) for d in value["differs"])):
        return {"entries": value["entries"], "differs": list(value["differs"])}
    raise InvalidRecord(f"cache_miss is {_words(value)}, expected null or {{\"entries\": n, \"differs\": [...]}}")


def _bool(record: dict, name: str, default: Any = False) -> Any:
    value = record.get(name)
    if value is True or value is False:
        return value
    return _field(record, name, lambda v: isinstance(v, bool), "true or false", default)


def finite_json(value: Any) -> Any:
    """`value` with every NaN/Infinity float replaced by its name as a string ("nan", "inf", "-inf").

    Free-form values (a constexpr's value, launch options) keep what they said; the output stays JSON.
    """
    if value is None or type(value) in (str, int, bool):
        return value
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, dict):
        return {str(k): finite_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite_json(v) for v in value]
    return value


_PARAM_KINDS = ("int", "ptr", "float", "bool", "constexpr", "tuple", "none")


def _param_spec(name: Any, data: Any) -> ParamSpec:
    if not isinstance(data, dict):
        raise InvalidRecord(f"params[{_words(name)}] is {_words(data)}, expected an object")
    kind = data.get("kind")
    if not isinstance(kind, str) or kind not in _PARAM_KINDS:
        raise InvalidRecord(f"params[{_words(name)}].kind is {_words(kind)}, expected one of {', '.join(_PARAM_KINDS)}")
    for key in ("type", "spec"):
        value = data.get(key)
        if value is not None and not isinstance(value, str):
            raise InvalidRecord(f"params[{_words(name)}].{key} is {_words(value)}, expected a string or null")
    return ParamSpec(kind=kind, type=data.get("type"), spec=data.get("spec"),
                     value=finite_json(data.get("value")), observed=finite_json(data.get("observed")))


class ParamsMemo:
    """The checked `params` of the last record of each (kernel, file, key), reused while the next
    record's raw `params` are equal: a log repeats one variant's parameters in every process, and
    comparing two dicts is far cheaper than checking them again."""

    def __init__(self) -> None:
        self._seen: dict[tuple[Any, Any, Any], tuple[dict, dict[str, ParamSpec]]] = {}

    def params(self, record: dict, raw: dict) -> dict[str, ParamSpec]:
        slot = (record.get("kernel"), record.get("file"), record.get("key"))
        if not all(isinstance(part, (str, type(None))) for part in slot):
            return {str(name): _param_spec(name, spec) for name, spec in raw.items()}
        cached = self._seen.get(slot)
        if cached is not None and cached[0] == raw:
            return cached[1]
        parsed = {str(name): _param_spec(name, spec) for name, spec in raw.items()}
        self._seen[slot] = (raw, parsed)
        return parsed


def _cause(index: int, data: Any) -> Cause:
    if not isinstance(data, dict):
        raise InvalidRecord(f"causes[{index}] is {_words(data)}, expected an object")
    values = {}
    for key in ("param", "before", "after"):
        value = data.get(key)
        if not isinstance(value, str):
            raise InvalidRecord(f"causes[{index}].{key} is {_words(value)}, expected a string")
        values[key] = value
    advice, message = data.get("advice"), data.get("message", "")
    if advice is not None and not isinstance(advice, str):
        raise InvalidRecord(f"causes[{index}].advice is {_words(advice)}, expected a string or null")
    if message is None:
        message = ""
    if not isinstance(message, str):
        raise InvalidRecord(f"causes[{index}].message is {_words(message)}, expected a string")
    return Cause(values["param"], values["before"], values["after"], advice, message)


def _json_scalars(value: Any) -> bool:
    """An object whose values are strings, ints, bools, None or finite floats (no NaN reaches a report)."""
    return isinstance(value, dict) and all(
        v is None or isinstance(v, (str, int)) or (isinstance(v, float) and math.isfinite(v)) for v in value.values())


_TUNING_FIELDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "kernel": (lambda v: isinstance(v, str), "a string"),
    "file": (lambda v: isinstance(v, str), "a string"),
    "line": (_is_int, "an integer"),
    "call_site": (lambda v: isinstance(v, str), "a string"),
    "key": (lambda v: _json_scalars(v), "an object of numbers and strings"),
    "bucketed_key": (lambda v: _json_scalars(v), "an object of numbers and strings"),
    "bucket": (lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()), "an object of strings"),
    "dtypes": (lambda v: isinstance(v, list), "a list"),
    "configs_timed": (lambda v: _is_int(v) and v >= 0, "a count"),
    "tuning_s": (lambda v: _is_number(v) and math.isfinite(v) and v >= 0, "a finite number of seconds"),
    "phase": (lambda v: v in ("warmup", "serving"), '"warmup" or "serving"'),
    "time": (lambda v: _is_number(v) and math.isfinite(v), "a finite number"),
    "pid": (_is_int, "an integer"),
}


def tuning_record_from_record(record: dict) -> TuningRecord:
    """A `"type": "tuning"` NDJSON record as a TuningRecord; InvalidRecord names the first bad field."""
    if not isinstance(record.get("kernel"), str) or not record.get("kernel"):
        raise InvalidRecord(f"kernel is {_words(record.get('kernel', None))}, expected a kernel name")
    for name, (check, expected) in _TUNING_FIELDS.items():
        if name in record and record[name] is not None and not check(record[name]):
            raise InvalidRecord(f"{name} is {_words(record[name])}, expected {expected}")
    return TuningRecord.from_dict(record)


def compile_event_from_record(record: dict, memo: ParamsMemo | None = None) -> CompileEvent:
    """A `CompileEvent` from one `"type": "compile"` record; raises InvalidRecord naming the bad field.

    Absent (or null) optional fields take their defaults; unknown fields are ignored, so a newer
    writer's records still read. Events read with one `memo` may share their (unchanged) ParamSpecs.
    """
    kernel = record.get("kernel")
    if not isinstance(kernel, str) or not kernel:
        raise InvalidRecord(f"kernel is {_words(kernel)}, expected a kernel name")
    params = record.get("params") or {}
    if not isinstance(params, dict):
        raise InvalidRecord(f"params is {_words(params)}, expected an object")
    options = record.get("options") or {}
    if not isinstance(options, dict):
        raise InvalidRecord(f"options is {_words(options)}, expected an object")
    if options.get("passed") is not None and not isinstance(options["passed"], dict):
        raise InvalidRecord(f"options.passed is {_words(options['passed'])}, expected an object")
    causes = record.get("causes") or []
    if not isinstance(causes, list):
        raise InvalidRecord(f"causes is {_words(causes)}, expected a list")
    phase = _string(record, "phase", "warmup")
    if not phase:
        raise InvalidRecord("phase is empty, expected \"warmup\" or \"serving\"")
    return CompileEvent(
        kernel=kernel,
        module=_string(record, "module"),
        file=_string(record, "file"),
        line=_int(record, "line", 0, minimum=0),
        call_site=_string(record, "call_site"),
        pid=_int(record, "pid", 0, minimum=0),
        ppid=_int(record, "ppid", 0, minimum=0),
        rank=_int(record, "rank", None),
        role=_string(record, "role", None),
        device=_int(record, "device", 0),
        phase=phase,
        variant=_int(record, "variant", 1, minimum=1),
        key=_string(record, "key"),
        params=memo.params(record, params) if memo is not None else {str(n): _param_spec(n, spec)
                                                                      for n, spec in params.items()},
        options=finite_json(options),
        compile_ms=_number(record, "compile_ms"),
        disk_cache_hit=_bool(record, "disk_cache_hit", None),
        arrived=_arrival(record),
        cache_miss=_cache_miss(record),
        causes=[_cause(i, c) for i, c in enumerate(causes)],
        triton_version=_string(record, "triton_version"),
        time=_number(record, "time", 0.0),
        is_manual_warmup=_bool(record, "is_manual_warmup"),
        autotuning=_bool(record, "autotuning"),
        binding=_string(record, "binding"),
        origin=_origin(record),
        inductor=_inductor_facts(record),
    )


def graph_compile_from_record(record: dict) -> dict[str, Any]:
    """A torch.compile graph compile (`runtime.dynamo_recompiles`), its fields checked; InvalidRecord names
    the bad one."""
    compile_id = _string(record, "compile_id")
    if not compile_id:
        raise InvalidRecord("compile_id is empty, expected Dynamo's compile id (\"0/1\")")
    return {"compile_id": compile_id, "function": _string(record, "function"), "file": _string(record, "file"),
            "line": _int(record, "line", 0, minimum=0), "recompile_reason": _string(record, "recompile_reason", None),
            "phase": _string(record, "phase", "warmup") or "warmup", "time": _number(record, "time", 0.0),
            "handovers_seen": _bool(record, "handovers_seen", None)}


def phase_mark_from_record(record: dict) -> dict[str, Any]:
    """A process's turn to a phase (`runtime.phase_marks`): {"phase", "time"}; InvalidRecord names the bad field."""
    phase = record.get("phase")
    if phase not in PHASES:
        raise InvalidRecord(f"phase is {_words(phase)}, expected \"warmup\" or \"serving\"")
    when = _number(record, "time")
    if when is None:
        raise InvalidRecord(f"time is {_words(record.get('time'))}, expected a time in seconds")
    return {"phase": phase, "time": when}


def _origin(record: dict) -> str:
    """What made the compile; "jit" in a log written before the field."""
    return str(_field(record, "origin", lambda v: v in ORIGINS, "one of " + ", ".join(ORIGINS), "jit"))


_INDUCTOR_LISTS = ("ops", "nodes")
_INDUCTOR_TEXTS = ("compile_id", "recompile_reason")


def _inductor_facts(record: dict) -> dict[str, Any] | None:
    """An Inductor kernel's provenance (`compile_origin.InductorFacts`): lists of strings and strings only."""
    facts = _field(record, "inductor", lambda v: isinstance(v, dict), "an object", None)
    if facts is None:
        return None
    checked: dict[str, Any] = {}
    for name in _INDUCTOR_LISTS:
        value = facts.get(name) or []
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise InvalidRecord(f"inductor.{name} is {_words(value)}, expected a list of strings")
        checked[name] = value
    for name in _INDUCTOR_TEXTS:
        value = facts.get(name)
        if value is not None and not isinstance(value, str):
            raise InvalidRecord(f"inductor.{name} is {_words(value)}, expected a string")
        checked[name] = value
    return checked


@dataclass
class ProcessFields:
    """The checked fields of one `"type": "process"` record."""

    host: str
    pid: int | None
    ppid: int | None
    argv: list[str] | None
    role: str | None
    rank: int | None
    triton_version: str
    time: float | None
    events_not_written: int | None
    node: str = ""


def process_fields_from_record(record: dict) -> ProcessFields:
    """The fields of one process record; raises InvalidRecord naming the bad field."""
    argv = record.get("argv")
    if argv is not None and not (isinstance(argv, list) and all(isinstance(a, str) for a in argv)):
        raise InvalidRecord(f"argv is {_words(argv)}, expected a list of strings")
    return ProcessFields(host=_string(record, "host"), pid=_int(record, "pid", None, minimum=0),
                         ppid=_int(record, "ppid", None, minimum=0), argv=argv, role=_string(record, "role", None),
                         rank=_int(record, "rank", None), triton_version=_string(record, "triton_version"),
                         time=_number(record, "time"),
                         events_not_written=_int(record, "events_not_written", None, minimum=0),
                         node=_string(record, "node"))


# --- files --------------------------------------------------------------------------------------

# One directory or log file, or several of them, globs and `@list` files (jitguard.report.log_sources).
LogPaths = str | os.PathLike | Sequence[str | os.PathLike]


def log_files(path: LogPaths) -> list[str]:
    """The NDJSON logs at `path` (a directory of them, or one file, or several: see LogPaths), sorted per
    directory; raises LogInputError."""
    if not isinstance(path, (str, os.PathLike)):
        try:
            return expand_log_sources(path)
        except LogSourceError as exc:
            raise LogInputError(str(exc)) from None
    path = os.fspath(path)
    if not os.path.exists(path) and names_several(path):
        return log_files([path])
    if os.path.isfile(path):
        return [path]
    if not os.path.isdir(path):
        # A FIFO or device is never opened (a read could wait forever): it is not a log.
        raise LogInputError(f"{path}: not a directory or a log file" if os.path.exists(path)
                            else f"{path}: no such directory")
    files = sorted(glob.glob(os.path.join(path, "*.ndjson")))
    if not files:
        raise LogInputError(f"{path}: no *.ndjson logs here (write them with `jitguard run` or JITGUARD_DIR)")
    return files


def _host_pid_from_name(path: str) -> tuple[str, int]:
    stem = os.path.basename(path).rsplit(".", 1)[0]
    host, _, pid = stem.rpartition("-")
    return host, int(pid) if pid.isdigit() else 0


# Skipped lines named one by one, at most this many per run; the count goes on past it (a log of a
# million garbled lines must not cost a million entries).
SKIPPED_KEPT = 1000


class SkippedLines:
    """The lines a read did not use: every one counted, the first SKIPPED_KEPT kept with file, line, reason.

    `recognised` counts the records of a jitguard type (process, compile, tuning), used or not: none
    at all means the input is not jitguard logs (a report, a passwd file), not logs with bad lines.
    """

    def __init__(self) -> None:
        self.kept: list[SkippedLine] = []
        self.count = 0
        self.recognised = 0

    def add(self, path: str, line: int, reason: str) -> None:
        self.count += 1
        if len(self.kept) < SKIPPED_KEPT:
            self.kept.append(SkippedLine(path, line, reason))


def _open_log(path: str) -> Any:
    """A text stream over one log; OSError for a link, a FIFO or anything but a regular file."""
    # Never follow a link planted in a shared log directory, never block on a FIFO: a log is a
    # regular file or it is named as unreadable.
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(errno.ELOOP, "a symbolic link (not followed)") from exc
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file")
    return os.fdopen(fd, encoding="utf-8", errors="replace")


def _parse_line(line: str) -> Any:
    """The JSON value of one line, or a str saying why there is none (a SkippedLine reason)."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError:
        return "not JSON (truncated: a process killed while writing?)"
    except RecursionError:
        return "JSON nested too deeply to read"
    except ValueError as exc:  # e.g. an integer of more digits than Python converts
        return f"not readable JSON ({str(exc).split(';')[0]})"
    if not isinstance(obj, dict):
        return f"a JSON {type(obj).__name__}, not a record"
    return obj


def _records(path: str, skipped: SkippedLines) -> Iterator[tuple[int, dict]]:
    """(line number, JSON object) for each line of one file, read as they come; the rest go to `skipped`."""
    with _open_log(path) as handle:
        for number, line in enumerate(handle, start=1):
            line = line.strip()
            if not line:
                continue
            obj = _parse_line(line)
            if isinstance(obj, str):
                skipped.add(path, number, obj)
            else:
                yield number, obj


def _checked(kind: str, record: dict, memo: ParamsMemo) -> Any:
    """The record as ProcessFields / CompileEvent / TuningRecord; InvalidRecord names the bad field."""
    try:
        if kind == "process":
            return process_fields_from_record(record)
        if kind == "compile":
            return compile_event_from_record(record, memo)
        if kind == GRAPH_COMPILE_TYPE:
            return graph_compile_from_record(record)
        if kind == PHASE_MARK_TYPE:
            return phase_mark_from_record(record)
        return tuning_record_from_record(record)
    except RecursionError:
        raise InvalidRecord("a field is nested too deeply to read") from None


class LogItem(NamedTuple):
    """One thing read from a log: a new process ("process", item None), or a compile or tuning of it."""

    kind: str
    process: ProcessLog
    item: Any


def _merge_process_record(current: ProcessLog, fields: ProcessFields) -> None:
    """A second record of the same process (the monitor's, then the vLLM plugin's): keep the latest of each."""
    # Its argv can differ: `python -m pkg.mod` shows "-m" until runpy names the module.
    current.argv = list(fields.argv or current.argv)
    current.role = fields.role or current.role
    current.rank = fields.rank if fields.rank is not None else current.rank
    current.triton_version = fields.triton_version or current.triton_version
    # A later record knows of more lost events, never fewer.
    current.events_not_written = max(current.events_not_written, fields.events_not_written or 0)
    current.node = fields.node or current.node


def iter_log_file(path: str, skipped: SkippedLines, memo: ParamsMemo | None = None) -> Iterator[LogItem]:
    """Every process, compile and tuning of one log file, in file order, one record in memory at a time.

    A bad line or record goes to `skipped` (file, line, reason naming the field); an OSError opening
    the file goes to the caller, which names the file.
    """
    memo = memo if memo is not None else ParamsMemo()
    host, pid = _host_pid_from_name(path)
    current: ProcessLog | None = None
    first_skip = skipped.count
    for number, record in _records(path, skipped):
        kind = record.get("type")
        if not isinstance(kind, str):
            skipped.add(path, number, f"type is {_words(kind)}, expected \"compile\" or \"process\"")
            continue
        if kind not in ("process", "compile", TUNING_RECORD_TYPE, GRAPH_COMPILE_TYPE, PHASE_MARK_TYPE):
            continue  # a record type from a newer jitguard: not ours to judge
        skipped.recognised += 1
        try:
            item = _checked(kind, record, memo)
        except InvalidRecord as exc:
            skipped.add(path, number, str(exc))
            continue
        if kind == "process":
            if current is not None and current.pid == item.pid and current.ppid == item.ppid:
                _merge_process_record(current, item)
                continue
            current = ProcessLog(host=item.host or host, pid=item.pid or pid, ppid=item.ppid,
                                 argv=list(item.argv or []), role=item.role, rank=item.rank,
                                 triton_version=item.triton_version, started=item.time, file=path,
                                 events_not_written=item.events_not_written or 0, node=item.node)
            yield LogItem("process", current, None)
            continue
        if current is None:  # the process record was lost (e.g. a garbled first line)
            current = ProcessLog(host=host, pid=item.pid or pid, ppid=getattr(item, "ppid", None), argv=[],
                                 role=getattr(item, "role", None), rank=getattr(item, "rank", None),
                                 triton_version=getattr(item, "triton_version", ""), started=None, file=path)
            yield LogItem("process", current, None)
        if kind == "compile":
            # The role and rank can be named after the process record was written.
            current.role = item.role or current.role
            current.rank = item.rank if item.rank is not None else current.rank
        yield LogItem(kind, current, item)
    if current is None and skipped.count > first_skip:
        current = ProcessLog(host=host, pid=pid, ppid=None, argv=[], role=None, rank=None,
                             triton_version="", started=None, file=path)
        yield LogItem("process", current, None)
    if current is not None:
        current.skipped_lines += skipped.count - first_skip


def _by_start(process: ProcessLog) -> tuple[float, int]:
    return (process.started if process.started is not None else float("inf"), process.pid)


def read_logs(path: LogPaths, on_item: Callable[[LogItem], None]) -> MergedLogs:
    """Read every `*.ndjson` log at `path`, handing each process, compile and tuning to `on_item` as it
    is read; the MergedLogs returned hold the processes (sorted by start) but no events or tunings.

    A file that cannot be read is listed in `unreadable` (with its error) and the others are read;
    raises LogInputError when there are no logs, or none can be read, or nothing read is a log record.
    """
    files = log_files(path)
    processes: list[ProcessLog] = []
    skipped = SkippedLines()
    unreadable: list[tuple[str, str]] = []
    memo = ParamsMemo()
    for file in files:
        try:
            for item in iter_log_file(file, skipped, memo):
                if item.kind == "process":
                    processes.append(item.process)
                on_item(item)
        except OSError as exc:
            unreadable.append((file, exc.strerror or str(exc)))
    if unreadable and len(unreadable) == len(files):
        names = ", ".join(f"{file} ({error})" for file, error in unreadable)
        raise LogInputError(f"cannot read any log: {names}")
    if isinstance(path, (str, os.PathLike)) and os.path.isfile(path) and not skipped.recognised and skipped.kept:
        # One file named on the command line that holds no jitguard record at all (a report, a passwd
        # file) is the wrong input, not a log with bad lines; a directory's logs of processes killed
        # before their first record are still listed.
        first = skipped.kept[0]
        raise LogInputError(f"{os.fspath(path)}: not a jitguard log (no process, compile or tuning record; "
                            f"line {first.line}: {first.reason})")
    processes.sort(key=_by_start)
    if not isinstance(path, (str, os.PathLike)) or not os.path.exists(path):  # several, a glob, an @list
        directory = common_directory(files)
    else:
        directory = os.fspath(path) if os.path.isdir(path) else os.path.dirname(os.fspath(path))
    return MergedLogs(directory=directory, files=files, processes=processes, skipped=skipped.kept,
                      unreadable=unreadable, skipped_count=skipped.count)


def load_logs(path: LogPaths) -> MergedLogs:
    """Read every `*.ndjson` log at `path` (a directory, or a single file), every event kept in memory.

    A file that cannot be read is listed in `unreadable` (with its error) and the others are read;
    raises LogInputError when there are no logs, or none can be read.
    """
    def keep(item: LogItem) -> None:
        if item.kind == "compile":
            item.process.events.append(item.item)
        elif item.kind == TUNING_RECORD_TYPE:
            item.process.tunings.append(item.item)
        elif item.kind == PHASE_MARK_TYPE:
            item.process.phase_marks.append(item.item)

    return read_logs(path, keep)


def read_compile_events(path: LogPaths) -> list[CompileEvent]:
    """Every valid compile event in the logs at `path` (what the warm-up plan builder needs)."""
    return load_logs(path).events
