"""Autotune tuning records and their summary (pure: no Triton, no torch).

`@triton.autotune(key=["num_tokens"])` benchmarks every config again for each new key value; in a
server that is a stall on the request path per new count. A `TuningRecord` says which kernel
tuned, for which key values, how many configs it timed, how long it took and in which phase;
`jitguard.tuning.recorder` makes them, the report reads them back from NDJSON.

NDJSON record (one line, `"type": "tuning"`): `kernel`, `file`, `line` (the kernel's `def`),
`call_site` ("path:line" of the first frame outside Triton, torch and jitguard: the launch that
paid for the tuning), `key` ({param: value} of the key parameters this call passed),
`bucketed_key` ({param: value} as the tuner's cache holds them: equal to `key` except for
parameters bucketed by `jitguard.autotune`), `bucket` ({param: strategy}, {} for
`triton.autotune`), `dtypes` (the tensor dtypes Triton adds to its key), `configs_timed`,
`tuning_s` (Triton's own benchmark time), `best_config`, `phase` ("warmup"|"serving"), `time`
(unix seconds), `pid`.

`summarize_tunings` gives the report's per-kernel `"autotune"` entry, `remedy_lines` the text the
log, reports and pytest failures show.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from jitguard.events import bound_label
from jitguard.tuning.bucketed_autotune import bucket_count

RECORD_TYPE = "tuning"


@dataclass
class TuningRecord:
    """One benchmark run of one autotuned kernel for one new tuning key (see module docstring)."""

    kernel: str
    file: str
    line: int
    call_site: str
    key: dict[str, Any]
    bucketed_key: dict[str, Any]
    bucket: dict[str, str]
    dtypes: list[str]
    configs_timed: int
    tuning_s: float
    best_config: str
    phase: str
    time: float
    pid: int
    type: str = field(default=RECORD_TYPE)
    binding: str = ""  # as CompileEvent.binding: the module-level name, when not the function's

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def label(self) -> str:
        """The kernel as messages name it (`events.bound_label`)."""
        return bound_label(self.kernel, self.binding)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TuningRecord:
        """A record read back from NDJSON; missing fields get empty values (older writers)."""
        return cls(kernel=str(data.get("kernel", "?")), file=str(data.get("file", "")), line=int(data.get("line") or 0),
                   call_site=str(data.get("call_site") or ""),
                   key=dict(data.get("key") or {}),
                   bucketed_key=dict(data.get("bucketed_key") or data.get("key") or {}),
                   bucket=dict(data.get("bucket") or {}), dtypes=list(data.get("dtypes") or []),
                   configs_timed=int(data.get("configs_timed") or 0), tuning_s=float(data.get("tuning_s") or 0.0),
                   best_config=str(data.get("best_config", "")), phase=str(data.get("phase") or "warmup"),
                   time=float(data.get("time") or 0.0), pid=int(data.get("pid") or 0),
                   binding=str(data.get("binding") or ""))


def json_value(value: Any) -> Any:
    """A key value as JSON holds it: numbers and strings as they are, anything else by its repr."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    return repr(value)


# --- pure: summary and remedy ---------------------------------------------------------------------

def _as_record(item: TuningRecord | Mapping[str, Any]) -> TuningRecord:
    return item if isinstance(item, TuningRecord) else TuningRecord.from_dict(item)


def summarize_tunings(records: Iterable[TuningRecord | Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """{kernel name: the report's `"autotune"` entry} from tuning records (objects or NDJSON dicts).

    Entry: `key` (key parameter names), `tunings`, `tunings_during_serving`, `configs_timed`,
    `tuning_s`, `key_params_varying` (parameters whose tuned value took more than one value),
    `bucket` ({param: strategy} where `jitguard.autotune` buckets), `keys_tuned` (each distinct
    {param: tuned value} once, in first-seen order: what older warm-up plans replay),
    `tunings_by_dtype` (each distinct {"key": {param: tuned value}, "dtypes": [...]} once, in
    first-seen order: Triton's tuning key also holds the tensor arguments' dtypes, in argument order
    as `str(tensor.dtype)`, so a key value tuned for fp16 and for bf16 is listed twice; what a
    warm-up pre-tune replays), and `values_seen` ({param: sorted distinct raw int values}). Records
    of other types are ignored.
    """
    out: dict[str, dict[str, Any]] = {}
    for item in records:
        if isinstance(item, Mapping) and item.get("type", RECORD_TYPE) != RECORD_TYPE:
            continue
        record = _as_record(item)
        entry = out.setdefault(record.kernel, {
            "key": [], "tunings": 0, "tunings_during_serving": 0, "configs_timed": 0, "tuning_s": 0.0,
            "key_params_varying": [], "bucket": {}, "keys_tuned": [], "tunings_by_dtype": [],
            "values_seen": {}})
        for name in record.key:
            if name not in entry["key"]:
                entry["key"].append(name)
        entry["tunings"] += 1
        entry["tunings_during_serving"] += record.phase == "serving"
        entry["configs_timed"] += record.configs_timed
        entry["tuning_s"] += record.tuning_s
        entry["bucket"].update(record.bucket)
        if record.bucketed_key not in entry["keys_tuned"]:
            entry["keys_tuned"].append(dict(record.bucketed_key))
        tuned = {"key": dict(record.bucketed_key), "dtypes": list(record.dtypes)}
        if tuned not in entry["tunings_by_dtype"]:
            entry["tunings_by_dtype"].append(tuned)
        for name, value in record.key.items():
            if isinstance(value, int) and not isinstance(value, bool):
                seen = entry["values_seen"].setdefault(name, [])
                if value not in seen:
                    seen.append(value)
    for entry in out.values():
        entry["tuning_s"] = round(entry["tuning_s"], 6)
        entry["values_seen"] = {k: sorted(v) for k, v in entry["values_seen"].items()}
        entry["key_params_varying"] = [name for name in entry["key"]
                                       if len({repr(k.get(name)) for k in entry["keys_tuned"]}) > 1]
    return out


def bucket_advice(entry: Mapping[str, Any]) -> dict[str, int]:
    """{param: tunings with pow2 bucketing} for each varying, unbucketed int key parameter that
    bucketing would tune fewer times; {} when bucketing would change nothing."""
    advice: dict[str, int] = {}
    keys_tuned = list(entry.get("keys_tuned") or [])
    for name in entry.get("key_params_varying") or []:
        if name in (entry.get("bucket") or {}):
            continue
        values = [k.get(name) for k in keys_tuned]
        if not values or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            continue
        if bucket_count("pow2", values) >= len(set(values)):
            continue  # already powers of two, or too few values: bucketing saves nothing
        buckets = {tuple((n, _pow2_if(n == name, v)) for n, v in sorted(k.items())) for k in keys_tuned}
        advice[name] = len(buckets)
    return advice


def _pow2_if(condition: bool, value: Any) -> Any:
    if condition and isinstance(value, int) and value > 1:
        return 1 << (value - 1).bit_length()
    return value


def remedy_lines(kernel: str, entry: Mapping[str, Any]) -> list[str]:
    """One line per key parameter worth bucketing, for the log, the reports and pytest failures.

    e.g. `rows_kernel: num_tokens varies across 64 tunings (64 values); bucket it:
    jitguard.autotune(..., bucket={"num_tokens": "pow2"}) tunes 7 times for these values`.
    """
    lines = []
    tunings = entry.get("tunings", 0)
    for name, after in bucket_advice(entry).items():
        distinct = len({repr(k.get(name)) for k in entry.get("keys_tuned") or []})
        lines.append(f'{kernel}: {name} varies across {tunings} tunings ({distinct} values); bucket it: '
                     f'jitguard.autotune(..., bucket={{"{name}": "pow2"}}) tunes {after} times for these values')
    return lines


def format_tuning_line(record: TuningRecord | Mapping[str, Any]) -> str:
    """The log line of one tuning, e.g. `jitguard: autotune rows_kernel (k.py:12) tuned M=5
    [bucket M=8]: 4 configs, 0.210 s, serving, called from app.py:40`."""
    r = _as_record(record)
    values = ", ".join(f"{k}={v}" for k, v in r.key.items())
    bucketed = ", ".join(f"{k}={r.bucketed_key.get(k)}" for k in r.bucket if r.bucketed_key.get(k) != r.key.get(k))
    where = f" ({os.path.basename(r.file)}:{r.line})" if r.file else ""
    called = f", called from {r.call_site}" if r.call_site else ""
    return (f"jitguard: autotune {r.label}{where} tuned {values or 'its key'}"
            f"{f' [bucket {bucketed}]' if bucketed else ''}: {r.configs_timed} configs, {r.tuning_s:.3f} s, "
            f"{r.phase}{called}")


def format_autotune_summary(kernel: str, entry: Mapping[str, Any]) -> str:
    """One line per autotuned kernel for the text/markdown reports, e.g. `rows_kernel: autotune 64
    tunings (56 during serving), 2176 configs timed, 32.0 s; key num_tokens, hidden; varying: num_tokens`."""
    bucket = entry.get("bucket") or {}
    varying = ", ".join(entry.get("key_params_varying") or []) or "none"
    bucketed = f"; bucketed: {', '.join(f'{k} {v}' for k, v in bucket.items())}" if bucket else ""
    return (f"{kernel}: autotune {entry.get('tunings', 0)} tunings ({entry.get('tunings_during_serving', 0)} during "
            f"serving), {entry.get('configs_timed', 0)} configs timed, {float(entry.get('tuning_s', 0.0)):.1f} s; "
            f"key {', '.join(entry.get('key') or [])}; varying: {varying}{bucketed}")


def suggested_bucket(entry: Mapping[str, Any]) -> dict[str, str]:
    """{param: strategy} that `jitguard fix` would write into `jitguard.autotune(..., bucket=...)`
    for a report's autotune entry ({} when bucketing would not cut the tunings)."""
    return dict.fromkeys(bucket_advice(entry), "pow2")


def iter_tuning_records(records: Iterable[Mapping[str, Any]]) -> Iterator[TuningRecord]:
    """The tuning records among NDJSON records of every type (as `events.read_ndjson` returns them)."""
    for data in records:
        if isinstance(data, Mapping) and data.get("type") == RECORD_TYPE:
            yield TuningRecord.from_dict(data)
