"""`jitguard report`: merging logs written by several processes, and the JSON / text / markdown forms."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from jitguard.events import Cause, CompileEvent, ParamSpec, ProcessRecord, to_json_line
from jitguard.explain import explain_recompile
from jitguard.report.build import build_report
from jitguard.report.command import report_command
from jitguard.report.render_tables import format_markdown, format_text

KERNEL_FILE = "/srv/model/kernels/moe.py"


def int_spec(value: int) -> ParamSpec:
    spec = "one" if value == 1 else "div16" if value % 16 == 0 else "plain"
    return ParamSpec("int", "i32", spec, observed=value)


def compiles_for(pid: int, values: list[int], phase_of=lambda i: "warmup", role=None, rank=None,
                 kernel: str = "fused_moe_kernel") -> list[CompileEvent]:
    """The compile events one process emits calling `kernel` with these token counts (one per new class)."""
    events: list[CompileEvent] = []
    seen: dict[str, dict] = {}
    for i, value in enumerate(values):
        params = {"a_ptr": ParamSpec("ptr", "*bf16", "aligned16"), "num_tokens": int_spec(value),
                  "BLOCK_M": ParamSpec("constexpr", "constexpr", None, value=64)}
        key = str((params["num_tokens"].spec,))
        if key in seen:
            continue
        causes = explain_recompile(params, {"num_warps": 4}, [(p, {"num_warps": 4}) for p in seen.values()])
        seen[key] = params
        events.append(CompileEvent(kernel=kernel, module="model.kernels.moe", file=KERNEL_FILE, line=12, pid=pid,
                                   ppid=1, role=role, rank=rank, phase=phase_of(i), variant=len(seen), key=key,
                                   params=params, options={"num_warps": 4}, compile_ms=100.0 + i,
                                   causes=causes, triton_version="3.9.0", time=1000.0 + pid + i))
    return events


def write_log(directory: Path, pid: int, events: list[CompileEvent], role=None, rank=None,
              argv=("python", "serve.py")) -> Path:
    path = directory / f"node1-{pid}.ndjson"
    record = ProcessRecord(pid=pid, ppid=1, argv=list(argv), role=role, rank=rank, triton_version="3.9.0",
                           host="node1", time=1000.0 + pid)
    lines = [to_json_line(record)] + [to_json_line(e) for e in events]
    path.write_text("".join(line + "\n" for line in lines))
    return path


@pytest.fixture
def server_logs(tmp_path: Path) -> dict:
    """An API server that compiles nothing, and two TP workers with different token counts."""
    write_log(tmp_path, 10, [], role="api server")
    rank0 = compiles_for(20, [16, 32, 17, 1], role="worker", rank=0)
    rank1 = compiles_for(30, [48, 5], phase_of=lambda i: "serving" if i else "warmup", role="worker", rank=1)
    write_log(tmp_path, 20, rank0, role="worker", rank=0)
    write_log(tmp_path, 30, rank1, role="worker", rank=1)
    return {"dir": tmp_path, "rank0": rank0, "rank1": rank1}


def test_processes_are_listed_with_role_rank_argv_and_compiles(server_logs: dict) -> None:
    report = build_report(server_logs["dir"])
    rows = [(p["pid"], p["role"], p["rank"], p["compiles"], p["argv"]) for p in report["processes"]]
    assert rows == [(10, "api server", None, 0, ["python", "serve.py"]),
                    (20, "worker", 0, len(server_logs["rank0"]), ["python", "serve.py"]),
                    (30, "worker", 1, len(server_logs["rank1"]), ["python", "serve.py"])]


def test_kernel_variants_per_process_and_compile_ms_by_phase(server_logs: dict) -> None:
    report = build_report(server_logs["dir"])
    (kernel,) = report["kernels"]
    all_events = server_logs["rank0"] + server_logs["rank1"]
    assert kernel["name"] == "fused_moe_kernel" and kernel["file"] == KERNEL_FILE and kernel["line"] == 12
    assert kernel["compiles"] == len(all_events)
    assert kernel["variants"] == len({e.key for e in all_events})
    assert [(p["pid"], p["rank"], p["variants"]) for p in kernel["by_process"]] == [
        (20, 0, len(server_logs["rank0"])), (30, 1, len(server_logs["rank1"]))]
    serving = [e for e in all_events if e.phase == "serving"]
    assert kernel["by_phase"]["serving"] == {"compiles": len(serving),
                                             "compile_ms": pytest.approx(sum(e.compile_ms for e in serving))}
    assert kernel["compile_ms"] == pytest.approx(sum(e.compile_ms for e in all_events))
    assert report["totals"]["serving_compiles"] == len(serving) > 0


def test_causes_are_counted_and_advice_is_merged_across_ranks(server_logs: dict) -> None:
    (kernel,) = build_report(server_logs["dir"])["kernels"]
    all_causes = [c for e in server_logs["rank0"] + server_logs["rank1"] for c in e.causes]
    assert sum(c["count"] for c in kernel["causes"]) == len(all_causes)
    tokens = kernel["params"]["num_tokens"]
    assert tokens["recompiles_caused"] == sum(1 for e in server_logs["rank0"] + server_logs["rank1"]
                                              if any(c.param == "num_tokens" for c in e.causes))
    # rank 1 alone would get do_not_specialize_on_alignment; rank 0 passed 1, which wins.
    assert {c.advice for e in server_logs["rank1"] for c in e.causes} == {"do_not_specialize_on_alignment"}
    assert tokens["advice"] == "do_not_specialize"
    assert kernel["params"]["a_ptr"] == {"specs_seen": ["*bf16 aligned16"], "recompiles_caused": 0, "advice": None}
    assert kernel["params"]["BLOCK_M"]["specs_seen"] == ["constexpr 64"]
    assert kernel["fix"] == 'do_not_specialize=["num_tokens"]'


def test_alignment_only_flips_get_on_alignment_advice(tmp_path: Path) -> None:
    write_log(tmp_path, 40, compiles_for(40, [16, 3, 32, 7]))
    (kernel,) = build_report(tmp_path)["kernels"]
    assert kernel["params"]["num_tokens"]["advice"] == "do_not_specialize_on_alignment"
    assert kernel["fix"] == 'do_not_specialize_on_alignment=["num_tokens"]'


def test_truncated_last_line_is_skipped_and_counted(server_logs: dict) -> None:
    path = server_logs["dir"] / "node1-20.ndjson"
    full = path.read_text()
    path.write_text(full + to_json_line(server_logs["rank0"][0])[:57])
    report = build_report(server_logs["dir"])
    assert report["skipped_lines"] == 1
    assert [p["skipped_lines"] for p in report["processes"]] == [0, 1, 0]
    assert report["processes"][1]["compiles"] == len(server_logs["rank0"])
    assert "skipped 1 unreadable line(s)" in format_text(report) and "node1-20.ndjson" in format_text(report)


def test_a_process_record_written_twice_is_one_process(tmp_path: Path) -> None:
    events = compiles_for(50, [1, 2])
    path = write_log(tmp_path, 50, events)
    again = ProcessRecord(pid=50, ppid=1, argv=["python", "serve.py"], role="engine core", rank=None,
                          triton_version="3.9.0", host="node1", time=1100.0)
    with open(path, "a") as handle:
        handle.write(to_json_line(again) + "\n")
    (process,) = build_report(tmp_path)["processes"]
    assert process["role"] == "engine core" and process["compiles"] == len(events)


def test_text_report_has_process_and_kernel_tables(server_logs: dict) -> None:
    text = format_text(build_report(server_logs["dir"]))
    lines = text.splitlines()
    assert lines[0].startswith("[jitguard] report of ") and "3 process(es), 1 kernel(s)" in lines[0]
    header = lines[lines.index("Processes") + 1].split()
    assert header[:3] == ["pid", "ppid", "role"]
    assert any(line.split()[:3] == ["20", "1", "worker"] and "(rank 0)" in line for line in lines)
    assert "fix: do_not_specialize=[\"num_tokens\"]" in text
    assert "variants per process: pid 20 rank 0 worker: 3, pid 30 rank 1 worker: 2" in text


def test_long_argv_is_shortened_in_tables_but_kept_in_json(tmp_path: Path) -> None:
    argv = ["python", "-m", "vllm.entrypoints.openai.api_server"] + [f"--option-{i}=value" for i in range(20)]
    write_log(tmp_path, 60, [], argv=argv)
    report = build_report(tmp_path)
    assert report["processes"][0]["argv"] == argv
    row = next(line for line in format_text(report).splitlines() if line.strip().startswith("60 "))
    assert row.endswith("...") and len(row) < 140


def test_markdown_tables_are_well_formed(server_logs: dict) -> None:
    markdown = format_markdown(build_report(server_logs["dir"]))
    tables = [line for line in markdown.splitlines() if line.startswith("|")]
    assert tables
    for line in tables:
        assert line.endswith("|")
    assert "## Processes" in markdown and "### `fused_moe_kernel`" in markdown
    assert 'Fix: `do_not_specialize=["num_tokens"]`' in markdown


def test_cli_json_is_the_report(server_logs: dict) -> None:
    result = CliRunner().invoke(report_command, [str(server_logs["dir"]), "--json", "--no-cost"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    # The fixture's numbers, worked out by hand: rank 0 compiles 16, 17, 1 (32 is 16's class), rank 1
    # compiles 48 in warm-up and 5 while serving; three classes in all.
    assert [(p["pid"], p["role"], p["rank"], p["compiles"]) for p in data["processes"]] == [
        (10, "api server", None, 0), (20, "worker", 0, 3), (30, "worker", 1, 2)]
    (kernel,) = data["kernels"]
    assert (kernel["name"], kernel["file"], kernel["line"]) == ("fused_moe_kernel", KERNEL_FILE, 12)
    assert (kernel["variants"], kernel["compiles"]) == (3, 5)
    assert kernel["by_phase"]["serving"] == {"compiles": 1, "compile_ms": 101.0}
    assert kernel["compile_ms"] == (100.0 + 102.0 + 103.0) + (100.0 + 101.0)  # 100 ms + the call's index
    assert kernel["params"]["num_tokens"]["advice"] == "do_not_specialize"
    assert sorted(kernel["params"]["num_tokens"]["specs_seen"]) == ["i32 div16", "i32 one", "i32 plain"]


@pytest.mark.parametrize("args, message", [
    (["{tmp}/missing"], "missing: no such directory"),
    (["{tmp}"], "no *.ndjson logs here"),
    (["{tmp}", "--json", "--markdown"], "choose one of --json, --markdown"),
])
def test_bad_input_is_a_clear_error_with_exit_code_2(tmp_path: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(report_command, [a.format(tmp=tmp_path) for a in args])
    assert result.exit_code == 2
    assert message in result.output


def test_log_with_only_garbage_still_lists_the_file(tmp_path: Path) -> None:
    (tmp_path / "node1-77.ndjson").write_text('{"type": "proc')
    report = build_report(tmp_path)
    assert report["skipped_lines"] == 1
    assert [(p["pid"], p["compiles"]) for p in report["processes"]] == [(77, 0)]


def test_cause_records_keep_their_message(server_logs: dict) -> None:
    (kernel,) = build_report(server_logs["dir"])["kernels"]
    messages = {c.message for e in server_logs["rank0"] for c in e.causes if isinstance(c, Cause)}
    assert messages <= {c["message"] for c in kernel["causes"]}
