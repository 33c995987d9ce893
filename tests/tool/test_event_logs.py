"""Reading logs back: every record is checked; what does not fit is skipped, counted and named."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from jitguard.events import ProcessRecord, to_json_line
from jitguard.report.build import build_report
from jitguard.report.command import report_command
from jitguard.report.event_logs import LogInputError, load_logs, read_compile_events
from jitguard.report.render_html import render_html
from jitguard.report.render_tables import format_markdown, format_text
from tests.tool.test_report import compiles_for, write_log


def good_record() -> dict:
    (event,) = compiles_for(20, [16])
    return json.loads(to_json_line(event))


def set_path(record: dict, path: str, value: object) -> dict:
    """record with the field at a dotted path ("params.num_tokens.kind") set, or removed for DELETE."""
    *parents, last = path.split(".")
    target = record
    for key in parents:
        target = target[int(key)] if isinstance(target, list) else target[key]
    if value is DELETE:
        del target[last]
    elif isinstance(target, list):
        target[int(last)] = value
    else:
        target[last] = value
    return record


class _Delete:
    """Marks a field to remove from the record (a stable repr keeps test ids equal across xdist workers)."""

    def __repr__(self) -> str:
        return "<deleted>"


DELETE = _Delete()

# (field path, bad value, words the reason must contain)
BAD_COMPILE_FIELDS = [
    ("variant", "x", "variant"),
    ("variant", 0, "variant"),
    ("variant", 2.5, "variant"),
    ("variant", True, "variant"),
    ("compile_ms", "slow", "compile_ms"),
    ("compile_ms", -3, "compile_ms"),
    ("compile_ms", [1], "compile_ms"),
    ("compile_ms", float("nan"), "compile_ms"),
    ("compile_ms", float("inf"), "compile_ms"),
    ("compile_ms", float("-inf"), "compile_ms"),
    ("time", float("nan"), "time"),
    ("time", "noon", "time"),
    ("params", [1, 2], "params"),
    ("params", "n", "params"),
    ("params.num_tokens", 7, "params[\"num_tokens\"]"),
    ("params.num_tokens.kind", "integer", "kind"),
    ("params.num_tokens.kind", None, "kind"),
    ("params.num_tokens.type", 32, "type"),
    ("params.num_tokens.spec", ["div16"], "spec"),
    ("causes", "n", "causes"),
    ("causes", {"param": "n"}, "causes"),
    ("kernel", 7, "kernel"),
    ("kernel", "", "kernel"),
    ("kernel", DELETE, "kernel"),
    ("kernel", None, "kernel"),
    ("file", ["a.py"], "file"),
    ("line", "12", "line"),
    ("line", -1, "line"),
    ("pid", "20", "pid"),
    ("ppid", 1.5, "ppid"),
    ("rank", "0", "rank"),
    ("role", 3, "role"),
    ("device", "cuda:0", "device"),
    ("phase", 1, "phase"),
    ("phase", "", "phase"),
    ("key", 12345, "key"),
    ("options", [4], "options"),
    ("options.passed", "num_warps=4", "options.passed"),
    ("disk_cache_hit", "yes", "disk_cache_hit"),
    ("autotuning", 1, "autotuning"),
    ("is_manual_warmup", "no", "is_manual_warmup"),
    ("triton_version", 3.9, "triton_version"),
    ("call_site", {"file": "x"}, "call_site"),
    ("type", 5, "type"),
    ("type", None, "type"),
]


def test_table_has_more_than_thirty_shapes() -> None:
    assert len(BAD_COMPILE_FIELDS) >= 30


@pytest.mark.parametrize("path, value, words", BAD_COMPILE_FIELDS,
                         ids=[f"{p}={v!r}" for p, v, _ in BAD_COMPILE_FIELDS])
def test_a_field_of_the_wrong_type_skips_that_record_only(tmp_path: Path, path: str, value: object,
                                                          words: str) -> None:
    events = compiles_for(20, [16, 17, 1])
    log = write_log(tmp_path, 20, events)
    bad = set_path(good_record(), path, value)
    with open(log, "a") as handle:
        handle.write(json.dumps(bad) + "\n")
    report = build_report(tmp_path)
    assert report["totals"]["compiles"] == len(events)  # the good records are all reported
    assert report["skipped_lines"] == 1
    (skipped,) = report["skipped"]
    assert skipped["file"] == "node1-20.ndjson" and skipped["line"] == len(events) + 2
    assert words in skipped["reason"]
    text = format_text(report)
    assert f"node1-20.ndjson:{len(events) + 2}: " in text and words in text
    json.dumps(report, allow_nan=False)
    render_html(report)
    format_markdown(report)


def test_causes_entry_of_the_wrong_shape_is_named(tmp_path: Path) -> None:
    record = good_record()
    record["causes"] = [{"param": "n", "before": 16, "after": "17", "advice": None}]
    write_log(tmp_path, 20, [])
    with open(tmp_path / "node1-20.ndjson", "a") as handle:
        handle.write(json.dumps(record) + "\n")
    (skipped,) = build_report(tmp_path)["skipped"]
    assert skipped["reason"] == "causes[0].before is 16, expected a string"


BAD_PROCESS_FIELDS = [
    ("argv", "python serve.py", "argv"),
    ("argv", ["python", 3], "argv"),
    ("pid", "x", "pid"),
    ("rank", [0], "rank"),
    ("time", float("nan"), "time"),
    ("events_not_written", "3", "events_not_written"),
    ("events_not_written", -1, "events_not_written"),
]


@pytest.mark.parametrize("name, value, words", BAD_PROCESS_FIELDS, ids=[f"{n}={v!r}" for n, v, _ in BAD_PROCESS_FIELDS])
def test_a_bad_process_record_is_skipped_and_its_compiles_kept(tmp_path: Path, name: str, value: object,
                                                               words: str) -> None:
    events = compiles_for(20, [16, 17])
    log = write_log(tmp_path, 20, events)
    lines = log.read_text().splitlines()
    record = json.loads(lines[0])
    record[name] = value
    log.write_text("\n".join([json.dumps(record)] + lines[1:]) + "\n")
    report = build_report(tmp_path)
    assert report["totals"]["compiles"] == len(events)
    (skipped,) = report["skipped"]
    assert skipped["line"] == 1 and words in skipped["reason"]


def test_nan_inside_free_form_values_stays_as_words_and_json_is_strict(tmp_path: Path) -> None:
    record = good_record()
    record["params"]["BLOCK_M"]["value"] = float("nan")
    record["options"]["num_warps"] = float("inf")
    write_log(tmp_path, 20, [])
    with open(tmp_path / "node1-20.ndjson", "a") as handle:
        handle.write(json.dumps(record) + "\n")  # json.dumps writes bare NaN / Infinity
        handle.write('{"type": "compile", "kernel": "k", "compile_ms": 1e999}\n')
    result = CliRunner().invoke(report_command, [str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output

    def refuse(name: str) -> None:
        raise AssertionError(f"non-JSON constant {name} in the output")

    data = json.loads(result.stdout, parse_constant=refuse)
    (kernel,) = data["kernels"]
    assert "constexpr 'nan'" in kernel["params"]["BLOCK_M"]["specs_seen"]
    assert data["skipped_lines"] == 1 and "compile_ms" in data["skipped"][0]["reason"]
    page = tmp_path / "r.html"
    result = CliRunner().invoke(report_command, [str(tmp_path), "--html", str(page)])
    assert result.exit_code == 0, result.output
    assert page.read_text().count('<circle class="compile ') == 1


def test_lines_that_are_not_records_are_named_with_their_reason(tmp_path: Path) -> None:
    log = write_log(tmp_path, 20, compiles_for(20, [16]))
    with open(log, "a") as handle:
        handle.write("[1, 2]\n")
        handle.write('"a string"\n')
        handle.write('{"type": "compile", "kernel": "k"')  # truncated
    reasons = [(s["line"], s["reason"]) for s in build_report(tmp_path)["skipped"]]
    assert reasons == [(3, "a JSON list, not a record"), (4, "a JSON str, not a record"),
                       (5, "not JSON (truncated: a process killed while writing?)")]


def test_records_of_a_newer_type_are_ignored_not_counted(tmp_path: Path) -> None:
    log = write_log(tmp_path, 20, compiles_for(20, [16]))
    with open(log, "a") as handle:
        handle.write('{"type": "autotune", "kernel": "k", "configs": 4}\n')
    report = build_report(tmp_path)
    assert report["skipped_lines"] == 0 and report["totals"]["compiles"] == 1


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_an_unreadable_file_is_named_and_the_others_are_reported(tmp_path: Path) -> None:
    write_log(tmp_path, 20, compiles_for(20, [16, 17]))
    locked = write_log(tmp_path, 30, compiles_for(30, [1]))
    locked.chmod(0)
    try:
        report = build_report(tmp_path)
        result = CliRunner().invoke(report_command, [str(tmp_path)])
    finally:
        locked.chmod(0o644)
    assert [p["pid"] for p in report["processes"]] == [20]
    assert report["unreadable_files"] == [{"file": str(locked), "error": "Permission denied"}]
    assert result.exit_code == 0
    assert f"could not read {locked} (Permission denied)" in result.output


def test_a_directory_named_like_a_log_is_an_unreadable_file(tmp_path: Path) -> None:
    write_log(tmp_path, 20, compiles_for(20, [16]))
    (tmp_path / "node1-99.ndjson").mkdir()
    report = build_report(tmp_path)
    assert report["totals"]["compiles"] == 1
    assert [entry["file"] for entry in report["unreadable_files"]] == [str(tmp_path / "node1-99.ndjson")]


def test_no_readable_log_at_all_is_an_input_error_naming_them(tmp_path: Path) -> None:
    (tmp_path / "node1-99.ndjson").mkdir()
    with pytest.raises(LogInputError, match=r"cannot read any log: .*node1-99.ndjson"):
        load_logs(tmp_path)
    result = CliRunner().invoke(report_command, [str(tmp_path)])
    assert result.exit_code == 2 and "node1-99.ndjson" in result.output


def write_process_records(directory: Path, pid: int, not_written: list[int | None], events: list) -> None:
    lines = []
    for count in not_written:
        record = ProcessRecord(pid=pid, ppid=1, argv=["python", "serve.py"], host="node1", time=1000.0 + pid)
        data = record.to_dict()
        if count is not None:
            data["events_not_written"] = count
        lines.append(json.dumps(data))
    lines += [to_json_line(e) for e in events]
    (directory / f"node1-{pid}.ndjson").write_text("\n".join(lines) + "\n")


def test_events_not_written_are_shown_per_process_and_in_the_summary(tmp_path: Path) -> None:
    write_process_records(tmp_path, 20, [None, 3, 5], compiles_for(20, [16]))  # the last record knows of 5
    write_process_records(tmp_path, 30, [2], [])
    write_process_records(tmp_path, 40, [None], [])
    report = build_report(tmp_path)
    assert [(p["pid"], p["events_not_written"]) for p in report["processes"]] == [(20, 5), (30, 2), (40, 0)]
    assert report["totals"]["events_not_written"] == 7
    text = format_text(report)
    assert text.splitlines()[0].endswith(", 7 event(s) not written to the logs")
    header = next(line for line in text.splitlines() if line.strip().startswith("pid "))
    assert "not written" in header
    row = next(line for line in text.splitlines() if line.strip().startswith("30 "))
    assert row.split()[6] == "2"
    assert "7 event(s) not written to the logs" in format_markdown(report)
    assert "7 event(s) not written to the logs" in render_html(report)


def test_a_run_that_lost_nothing_keeps_its_usual_tables(tmp_path: Path) -> None:
    write_process_records(tmp_path, 20, [0], compiles_for(20, [16]))
    text = format_text(build_report(tmp_path))
    assert "Processes" in text and "Kernels" in text and "not written" not in text


def test_the_warmup_side_reads_the_same_checked_events(tmp_path: Path) -> None:
    events = compiles_for(20, [16, 17, 1])
    log = write_log(tmp_path, 20, events)
    with open(log, "a") as handle:
        handle.write(json.dumps(set_path(good_record(), "params", [1, 2])) + "\n")
    assert [e.key for e in read_compile_events(tmp_path)] == [e.key for e in events]


def test_a_process_record_written_with_its_lost_events_reads_back(tmp_path: Path) -> None:
    record = ProcessRecord(pid=20, ppid=1, argv=["serve"], host="node1", time=1000.0, events_not_written=4)
    (tmp_path / "node1-20.ndjson").write_text(to_json_line(record) + "\n")
    (process,) = build_report(tmp_path)["processes"]
    assert process["events_not_written"] == 4


def test_secrets_in_an_old_log_do_not_reach_any_report(tmp_path: Path) -> None:
    argv = ["python", "serve.py", "--api-key", "SECRET-1", "--db", "postgres://u:SECRET-2@h/db", "HF_TOKEN=SECRET-3"]
    write_log(tmp_path, 20, compiles_for(20, [16]), argv=argv)  # written verbatim, as before redaction by shape
    report = build_report(tmp_path)
    outputs = [json.dumps(report), format_text(report), format_markdown(report), render_html(report)]
    for output in outputs:
        assert "SECRET-" not in output
    assert report["processes"][0]["argv"] == ["python", "serve.py", "--api-key", "***", "--db",
                                              "postgres://u:***@h/db", "HF_TOKEN=***"]


def test_a_fifo_or_a_planted_link_in_a_log_dir_is_named_never_read(tmp_path: Path) -> None:
    """A FIFO would block the report forever; a link could point anywhere: both are named unreadable."""
    good = tmp_path / "node1-20.ndjson"
    good.write_text(json.dumps({"type": "process", "pid": 20, "ppid": 1, "argv": ["serve.py"]}) + "\n")
    os.mkfifo(tmp_path / "node1-21.ndjson")
    secret = tmp_path.parent / "elsewhere.txt"
    secret.write_text("not a log\n")
    (tmp_path / "node1-22.ndjson").symlink_to(secret)
    logs = load_logs(tmp_path)
    assert [p.pid for p in logs.processes] == [20]
    assert {os.path.basename(f): e for f, e in logs.unreadable} == {
        "node1-21.ndjson": "not a regular file", "node1-22.ndjson": "a symbolic link (not followed)"}


@pytest.mark.parametrize("field", ["key", "bucketed_key"])
def test_a_tuning_key_value_that_is_not_json_finite_is_skipped(tmp_path: Path, field: str) -> None:
    record = {"type": "tuning", "kernel": "k", "file": "k.py", "line": 3, "key": {"n": 5}, "bucketed_key": {"n": 8},
              "configs_timed": 2, "tuning_s": 0.1, "phase": "warmup", "time": 1.0, "pid": 20}
    record[field] = {"n": float("nan")}
    (tmp_path / "node1-20.ndjson").write_text(json.dumps(record) + "\n")
    logs = load_logs(tmp_path)
    assert logs.tunings == []
    assert logs.skipped[0].reason.startswith(f"{field} is ")
