"""Tuning records (real offline compiles), their summary and remedy (pure), and the warm-up pre-tune."""

import json

import pytest
import torch
import triton
import triton.language as tl

import jitguard
from jitguard.events import to_json_line
from jitguard.tuning.pretune import pretune
from jitguard.tuning.recorder import record_tunings
from jitguard.tuning.records import (
    TuningRecord,
    format_autotune_summary,
    format_tuning_line,
    remedy_lines,
    suggested_bucket,
    summarize_tunings,
)

TOKEN_COUNTS = range(1, 65)


def configs():
    return [triton.Config({"BLOCK": 64}, num_warps=2), triton.Config({"BLOCK": 128}, num_warps=4)]


def make_scale_kernel(decorator):
    @decorator
    @triton.jit
    def scale_rows(x_ptr, y_ptr, num_tokens, hidden, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < num_tokens * hidden
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)

    return scale_rows


def launcher(kernel):
    def launch(num_tokens, hidden=1):
        x = torch.zeros(num_tokens * hidden)
        kernel[(1,)](x, torch.zeros_like(x), num_tokens, hidden)
    return launch


PLAIN = lambda: triton.autotune(configs(), key=["num_tokens", "hidden"])
POW2 = lambda: jitguard.autotune(configs(), key=["num_tokens", "hidden"], bucket={"num_tokens": "pow2"})


def test_a_record_per_tuning_with_key_values_buckets_and_place():
    with jitguard.offline(compile=True):
        launch = launcher(make_scale_kernel(POW2()))
        with record_tunings() as recorder:
            for m in (3, 4, 5, 9):
                launch(m)
    records = recorder.records
    assert [r.key for r in records] == [{"num_tokens": 3, "hidden": 1}, {"num_tokens": 5, "hidden": 1},
                                        {"num_tokens": 9, "hidden": 1}]
    assert [r.bucketed_key["num_tokens"] for r in records] == [4, 8, 16]
    first = records[0]
    assert (first.kernel, first.file, first.configs_timed, first.phase) == ("scale_rows", __file__, 2, "warmup")
    assert first.bucket == {"num_tokens": "pow2"} and first.dtypes == ["torch.float32", "torch.float32"]
    assert "BLOCK" in first.best_config
    assert first.call_site.startswith(__file__ + ":")  # the launch that paid for the tuning
    line = json.loads(to_json_line(first.to_dict()))
    assert line["type"] == "tuning" and TuningRecord.from_dict(line) == first
    assert format_tuning_line(first).startswith("jitguard: autotune scale_rows (test_tuning_records.py:")
    assert "tuned num_tokens=3, hidden=1 [bucket num_tokens=4]: 2 configs" in format_tuning_line(first)


def test_phase_comes_from_the_installed_monitor():
    with jitguard.offline(compile=False), jitguard.watch(mode="log"):
        launch = launcher(make_scale_kernel(PLAIN()))
        with record_tunings() as recorder:
            launch(1)
            jitguard.mark_serving()
            launch(2)
            launch(3)
    summary = summarize_tunings(recorder.records)["scale_rows"]
    assert (summary["tunings"], summary["tunings_during_serving"]) == (3, 2)


def test_a_failing_sink_loses_nothing_and_never_breaks_the_launch(capsys):
    def full_disk(record):
        raise OSError(28, "No space left on device")

    with jitguard.offline(compile=False):
        launch = launcher(make_scale_kernel(PLAIN()))
        with record_tunings(on_record=full_disk) as recorder:
            for m in (1, 2, 3):
                launch(m)
    assert len(recorder.records) == 3
    assert capsys.readouterr().err.count("could not write a tuning record") == 1


def test_nothing_is_recorded_after_stop():
    with jitguard.offline(compile=False):
        launch = launcher(make_scale_kernel(PLAIN()))
        with record_tunings() as recorder:
            launch(1)
        launch(2)
    assert len(recorder.records) == 1


def _record(kernel="k", phase="warmup", bucket=None, dtypes=(), **key):
    bucket = bucket or {}
    bucketed = {n: (1 << (v - 1).bit_length() if n in bucket and v > 1 else v) for n, v in key.items()}
    return {"type": "tuning", "kernel": kernel, "file": "k.py", "line": 3, "key": key, "bucketed_key": bucketed,
            "bucket": bucket, "dtypes": list(dtypes), "configs_timed": 34, "tuning_s": 0.5, "best_config": "",
            "phase": phase, "time": 0.0, "pid": 1}


STORM = [_record(num_tokens=m, hidden=4096, phase="serving" if m > 8 else "warmup") for m in range(1, 65)]


@pytest.mark.parametrize("records, expected, remedy", [
    (STORM,
     {"key": ["num_tokens", "hidden"], "tunings": 64, "tunings_during_serving": 56, "configs_timed": 2176,
      "tuning_s": 32.0, "key_params_varying": ["num_tokens"]},
     ['k: num_tokens varies across 64 tunings (64 values); bucket it: '
      'jitguard.autotune(..., bucket={"num_tokens": "pow2"}) tunes 7 times for these values']),
    ([_record(hidden=h) for h in (4096, 8192)],
     {"key": ["hidden"], "tunings": 2, "tunings_during_serving": 0, "configs_timed": 68, "tuning_s": 1.0,
      "key_params_varying": ["hidden"]},
     []),  # two model sizes, already powers of two: bucketing would save nothing
    ([_record(bucket={"num_tokens": "pow2"}, num_tokens=m) for m in (1, 2, 3, 5, 9)],
     {"key": ["num_tokens"], "tunings": 5, "tunings_during_serving": 0, "configs_timed": 170, "tuning_s": 2.5,
      "key_params_varying": ["num_tokens"]},
     []),  # already bucketed
    ([_record(num_tokens=m, hidden=h) for m in (3, 5, 6, 7) for h in (1024, 2048)],
     {"key": ["num_tokens", "hidden"], "tunings": 8, "tunings_during_serving": 0, "configs_timed": 272,
      "tuning_s": 4.0, "key_params_varying": ["num_tokens", "hidden"]},
     ['k: num_tokens varies across 8 tunings (4 values); bucket it: '
      'jitguard.autotune(..., bucket={"num_tokens": "pow2"}) tunes 4 times for these values']),
], ids=["token-storm", "model-sizes", "bucketed", "two-params"])
def test_summary_and_remedy(records, expected, remedy):
    entry = summarize_tunings(records + [{"type": "compile", "kernel": "k"}])["k"]
    assert {k: entry[k] for k in expected} == expected
    assert remedy_lines("k", entry) == remedy
    assert suggested_bucket(entry) == ({"num_tokens": "pow2"} if remedy else {})


def test_summary_line_for_reports():
    entry = summarize_tunings(STORM)["k"]
    assert format_autotune_summary("k", entry) == ("k: autotune 64 tunings (56 during serving), 2176 configs timed, "
                                                   "32.0 s; key num_tokens, hidden; varying: num_tokens")


def test_summary_keeps_one_entry_per_bucket_tuned():
    entry = summarize_tunings([_record(bucket={"num_tokens": "pow2"}, num_tokens=m) for m in (3, 4, 5, 9)])["k"]
    assert entry["keys_tuned"] == [{"num_tokens": 4}, {"num_tokens": 8}, {"num_tokens": 16}]
    assert entry["values_seen"] == {"num_tokens": [3, 4, 5, 9]} and entry["bucket"] == {"num_tokens": "pow2"}


F16, BF16 = ["torch.float16"] * 2, ["torch.bfloat16"] * 2


@pytest.mark.parametrize("records, keys_tuned, by_dtype", [
    ([_record(num_tokens=4, dtypes=F16), _record(num_tokens=4, dtypes=BF16), _record(num_tokens=4, dtypes=F16)],
     [{"num_tokens": 4}], [{"key": {"num_tokens": 4}, "dtypes": F16}, {"key": {"num_tokens": 4}, "dtypes": BF16}]),
    ([_record(bucket={"num_tokens": "pow2"}, num_tokens=m, dtypes=d) for m, d in ((3, BF16), (4, BF16), (5, F16))],
     [{"num_tokens": 4}, {"num_tokens": 8}],
     [{"key": {"num_tokens": 4}, "dtypes": BF16}, {"key": {"num_tokens": 8}, "dtypes": F16}]),
    ([_record(num_tokens=2, dtypes=["torch.float32", "torch.float16"]),
      _record(num_tokens=2, dtypes=["torch.float16", "torch.float32"])],  # order is part of Triton's key
     [{"num_tokens": 2}], [{"key": {"num_tokens": 2}, "dtypes": ["torch.float32", "torch.float16"]},
                           {"key": {"num_tokens": 2}, "dtypes": ["torch.float16", "torch.float32"]}]),
], ids=["two-dtypes-one-key", "bucketed", "dtype-order"])
def test_summary_lists_each_key_value_once_per_dtype_set(records, keys_tuned, by_dtype):
    entry = summarize_tunings(records)["k"]
    assert entry["keys_tuned"] == keys_tuned and entry["tunings_by_dtype"] == by_dtype


@pytest.mark.parametrize("source", ["summary", "older report"])
def test_pretune_passes_dtypes_only_when_asked(source):
    records = [_record(kernel="a", num_tokens=4, dtypes=d) for d in (F16, BF16)]
    entries = summarize_tunings(records)
    if source == "older report":
        del entries["a"]["tunings_by_dtype"]
    report = {"kernels": [{"name": "a", "autotune": entries["a"]}]}
    calls = []
    as_before = pretune(report, {"a": lambda **key: calls.append(("key only", key))})
    with_dtypes = pretune(report, {"a": lambda dtypes, **key: calls.append((dtypes, key))}, pass_dtypes=True)
    recorded = [F16, BF16] if source == "summary" else [None]
    assert calls == [("key only", {"num_tokens": 4})] + [(d, {"num_tokens": 4}) for d in recorded]
    assert as_before.pretuned == {"a": [{"num_tokens": 4}]} and not as_before.errors
    assert with_dtypes.pretuned_tunings == {"a": [{"key": {"num_tokens": 4}, "dtypes": d} for d in recorded]}


@pytest.mark.parametrize("decorate, pretunes", [(PLAIN, 64), (POW2, 7)], ids=["triton.autotune", "pow2"])
def test_pretune_from_a_report_leaves_no_tuning_for_serving(decorate, pretunes):
    with jitguard.offline(compile=False):
        first_run = launcher(make_scale_kernel(decorate()))
        with record_tunings() as recorder:
            for m in TOKEN_COUNTS:
                first_run(m)
        report = {"kernels": [{"name": name, "autotune": entry}
                              for name, entry in summarize_tunings(recorder.records).items()]}
        report = json.loads(json.dumps(report))  # as read back from `jitguard report --json`

        restarted = launcher(make_scale_kernel(decorate()))  # a new process's kernel: nothing tuned
        result = pretune(report, {"scale_rows": restarted})
        with jitguard.watch(mode="log"), record_tunings() as serving:
            jitguard.mark_serving()
            for m in TOKEN_COUNTS:
                restarted(m)
    assert len(result.pretuned["scale_rows"]) == pretunes and not result.errors
    assert serving.records == []


def test_pretune_reports_missing_launchers_and_failing_buckets():
    records = [_record(kernel="a", num_tokens=m) for m in (1, 2, 3)] + [_record(kernel="b", num_tokens=1)]

    def launch_a(num_tokens):
        if num_tokens == 2:
            raise RuntimeError("out of memory")

    result = pretune(records, {"a": launch_a})
    assert result.pretuned == {"a": [{"num_tokens": 1}, {"num_tokens": 3}]}
    assert result.missing_launchers == ["b"]
    assert result.errors == ["a {'num_tokens': 2}: RuntimeError: out of memory"]
