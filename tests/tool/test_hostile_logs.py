"""Hostile logs: every reader survives every line (one bad record is skipped and named, never the whole
file), text for people is printable (control characters escaped, long names shortened, JSON whole), and
a file that is not a log is refused with one line."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from jitguard.events import to_json_line
from jitguard.report import build as report_build
from jitguard.report.build import build_report
from jitguard.report.command import report_command
from jitguard.report.render_tables import format_markdown, format_text
from jitguard.startup.plan import build_plan
from jitguard.startup.plan_command import warmup_plan_command
from tests.tool.test_report import compiles_for, write_log

# Characters that act on a terminal: ESC (CSI, OSC 8 links, OSC 52 clipboard), BEL, C1 CSI, bidi overrides.
TERMINAL_ACTING = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def good_logs(directory: Path, pid: int = 20, values: tuple[int, ...] = (16, 17, 1)) -> Path:
    directory.mkdir(exist_ok=True)
    return write_log(directory, pid, compiles_for(pid, list(values)), role="worker", rank=0)


def append_line(log: Path, line: str) -> int:
    """Append one raw line; its line number."""
    with open(log, "a", encoding="utf-8") as stream:
        stream.write(line + "\n")
    return len(log.read_text().splitlines())


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


HOSTILE_LINES = {
    "nested 1,000 levels": nested(1000),
    "nested 100,000 levels": nested(100_000),
    "nested inside a record": json.dumps({"type": "compile", "kernel": "k"})[:-1] + ', "params": {"n": '
                              + '{"value": ' * 990 + "1" + "}" * 990 + "}}",
    "5,000-digit integer": '{"type": "compile", "kernel": "k", "line": ' + "9" * 5000 + "}",
    "5,000-digit integer in a value": '{"type": "process", "pid": 1, "ppid": ' + "1" * 5000 + "}",
    "lone surrogate in a number": '{"type": "compile", "kernel": "k", "line": "\\ud800"}',
    "NUL bytes": "\x00" * 100,
    "a JSON string": '"compile"',
    "an object as the type": '{"type": {"compile": 1}, "kernel": "k"}',
    "a list as params": '{"type": "compile", "kernel": "k", "params": [[1]]}',
    "a huge float": '{"type": "compile", "kernel": "k", "compile_ms": 1e999}',
}


@pytest.mark.parametrize("name", list(HOSTILE_LINES))
def test_one_hostile_line_is_skipped_and_named_and_every_good_record_kept(tmp_path: Path, name: str) -> None:
    log = good_logs(tmp_path)
    number = append_line(log, HOSTILE_LINES[name])
    append_line(log, to_json_line(compiles_for(20, [48])[0]))
    report = build_report(tmp_path)
    assert report["totals"]["compiles"] == 4
    assert report["skipped_lines"] == 1
    (skipped,) = report["skipped"]
    assert (skipped["file"], skipped["line"]) == (log.name, number) and skipped["reason"]


@pytest.mark.parametrize("name", ["nested 1,000 levels", "5,000-digit integer"])
def test_report_and_warmup_plan_commands_survive_the_line(tmp_path: Path, name: str) -> None:
    logs = tmp_path / "logs"
    log = good_logs(logs)
    append_line(log, HOSTILE_LINES[name])
    result = CliRunner().invoke(report_command, [str(logs), "--no-cost"])
    assert result.exit_code == 0, result.output
    assert "fused_moe_kernel" in result.output and f"{log.name}:" in result.output
    result = CliRunner().invoke(warmup_plan_command, [str(logs), "-o", str(tmp_path / "plan.json")])
    assert result.exit_code == 0, result.output
    assert len(build_plan(str(logs))["kernels"]) == 1


@pytest.mark.parametrize("content", [
    "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n",
    json.dumps({"jitguard_report": 1, "directory": "/x", "kernels": [], "processes": []}, indent=2),
    json.dumps({"jitguard_report": 1, "directory": "/x", "kernels": [], "processes": []}),
    "\x89PNG\r\n\x1a\n\x00\x00",
])
def test_a_file_that_is_not_a_log_exits_2_with_one_line(tmp_path: Path, content: str) -> None:
    path = tmp_path / "input.txt"
    path.write_text(content, encoding="utf-8", errors="surrogateescape")
    result = CliRunner().invoke(report_command, [str(path), "--no-cost"])
    assert result.exit_code == 2
    assert "not a jitguard log" in result.output and len(result.output.strip().splitlines()) == 1
    assert "pid 0" not in result.output


def test_a_log_file_given_by_name_with_one_good_record_still_reports(tmp_path: Path) -> None:
    log = good_logs(tmp_path)
    append_line(log, "root:x:0:0")
    result = CliRunner().invoke(report_command, [str(log), "--no-cost"])
    assert result.exit_code == 0, result.output
    assert "skipped 1" in result.output


# Names a planted log could carry; each must reach a terminal inert.
ESCAPES = {
    "clear screen": "\x1b[2J\x1b[H",
    "OSC 52 clipboard write": "\x1b]52;c;cm0gLXJmIH4K\x07",
    "OSC 8 link": "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\",
    "title change": "\x1b]0;pwned\x07",
    "C1 CSI": "\x9b2J",
    "bidi override": "safe\u202eevil",
    "carriage return": "real\rfake",
    "newline forging a row": "k\n  forged_kernel  x.py:1  99",
    "lone surrogate": "\ud800",
}


def _planted(tmp_path: Path, text: str) -> Path:
    directory = tmp_path / "logs"
    directory.mkdir()
    events = compiles_for(20, [16, 17], kernel="kern" + text, role="role" + text)
    for event in events:
        event.file = f"/srv/model/{text}.py"
        event.module = "m" + text
        for cause in event.causes:
            cause.before = "b" + text
    write_log(directory, 20, events, role="role" + text, argv=("python", "serve" + text))
    return directory


@pytest.mark.parametrize("name", list(ESCAPES))
@pytest.mark.parametrize("render", [format_text, format_markdown], ids=["text", "markdown"])
def test_terminal_escapes_in_a_log_are_shown_escaped(tmp_path: Path, name: str, render) -> None:
    report = build_report(_planted(tmp_path, ESCAPES[name]))
    text = render(report)
    assert not TERMINAL_ACTING.search(text), repr(TERMINAL_ACTING.search(text))
    assert not [line for line in text.splitlines() if line.lstrip("| ").startswith("forged_kernel")]
    assert "kern" in text
    # JSON keeps the name as it was.
    assert any(k["name"] == "kern" + ESCAPES[name] for k in report["kernels"])


def test_jitguard_report_cli_output_is_inert_even_into_a_pipe(tmp_path: Path) -> None:
    result = CliRunner().invoke(report_command, [str(_planted(tmp_path, ESCAPES["OSC 52 clipboard write"])),
                                                 "--no-cost"])
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output and "\x07" not in result.output
    assert "\\x1b]52" in result.output


def test_a_50_mb_kernel_name_is_shortened_in_text_and_whole_in_json(tmp_path: Path) -> None:
    name = "k" * 5_000_000 + "_tail"
    directory = tmp_path / "logs"
    directory.mkdir()
    write_log(directory, 20, compiles_for(20, [16, 17], kernel=name))
    report = build_report(directory)
    text = format_text(report)
    assert len(text) < 20_000
    assert "_tail" in text  # the end of a name is kept: it is what tells names apart
    assert report["kernels"][0]["name"] == name


def test_skipped_lines_are_counted_in_full_and_named_up_to_a_bound(tmp_path: Path) -> None:
    log = good_logs(tmp_path)
    with open(log, "a", encoding="utf-8") as stream:
        stream.write("garbage\n" * 3000)
    report = build_report(tmp_path)
    assert report["skipped_lines"] == 3000
    assert len(report["skipped"]) == 1000
    assert report["totals"]["compiles"] == 3
    assert "  ... and 2990 more" in format_text(report)


def test_the_timeline_keeps_the_slowest_compiles_past_its_bound(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(report_build, "TIMELINE_POINTS", 5)
    every = []
    for pid in (20, 21, 22, 23):
        events = compiles_for(pid, [16, 17, 1])
        for event in events:
            event.compile_ms = float(pid * 10 + event.variant)
        every += [event.compile_ms for event in events]
        write_log(tmp_path, pid, events)
    report = build_report(tmp_path)
    assert report["totals"]["compiles"] == 12 and report["timeline_dropped"] == 7
    kept = sorted(point["compile_ms"] for point in report["timeline"])
    assert kept == sorted(every)[-5:]
    rows = [point["process"] for point in report["timeline"]]
    assert rows == sorted(rows)  # kept points stay in report order: process by process


def test_the_report_is_the_same_whatever_order_the_files_are_read(tmp_path: Path, monkeypatch) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for directory in (a, b):
        directory.mkdir()
        # The later-started process sorts first by name: the report still lists by start.
        write_log(directory, 30, compiles_for(30, [48, 5]), role="worker", rank=1)
        write_log(directory, 20, compiles_for(20, [16, 17, 1]), role="worker", rank=0)
    (b / "node1-30.ndjson").rename(b / "node0-30.ndjson")
    first, second = build_report(a), build_report(b)
    for report in (first, second):
        report.pop("directory")
        for process in report["processes"]:
            process.pop("file")
    assert first == second


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_report_on_a_fifo_or_device_exits_2_without_reading_it(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "fifo"
    if kind == "fifo":
        os.mkfifo(path)  # a read would wait for a writer forever
    result = CliRunner().invoke(report_command, [str(path) if kind == "fifo" else "/dev/zero", "--no-cost"])
    assert result.exit_code == 2
    assert "not a directory or a log file" in result.output and len(result.output.strip().splitlines()) == 1


def test_a_fifo_and_a_link_planted_among_the_logs_are_named_and_the_rest_reported(tmp_path: Path) -> None:
    good_logs(tmp_path)
    os.mkfifo(tmp_path / "node1-7.ndjson")
    secret = tmp_path.parent / f"{tmp_path.name}-secret.txt"
    secret.write_text('{"type": "process", "pid": 8, "argv": ["the secret"]}\n')
    (tmp_path / "node1-8.ndjson").symlink_to(secret)
    report = build_report(tmp_path)
    assert report["totals"]["compiles"] == 3
    reasons = {entry["file"].rsplit("/", 1)[-1]: entry["error"] for entry in report["unreadable_files"]}
    assert reasons == {"node1-7.ndjson": "not a regular file", "node1-8.ndjson": "a symbolic link (not followed)"}
    assert "the secret" not in json.dumps(report)


def test_stderr_lines_of_report_name_a_planted_file_inert(tmp_path: Path) -> None:
    good_logs(tmp_path)
    (tmp_path / "node1-\x1b]52;c;eA==\x07.ndjson").write_text("garbage\n")
    os.mkfifo(tmp_path / "node1-\x1b[2J.ndjson")
    result = CliRunner().invoke(report_command, [str(tmp_path), "--no-cost", "--json"])
    assert result.exit_code == 0, result.output
    assert "skipped 1" in result.stderr and "could not read" in result.stderr
    assert "\x1b" not in result.stderr and "\x07" not in result.stderr
