"""`jitguard report` prices every demotion it advises: a real run's logs, then both kernels compiled
with and without the demotion. A mask bound over contiguous offsets is costly and left out of the
fix with its price and an alternative; a row-loop bound is free and stays in the fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

import jitguard
from jitguard import triton_compat
from jitguard.report.command import report_command
from tests import kernels_for_tests as k


@pytest.fixture(scope="module")
def run_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    logs = tmp_path_factory.mktemp("logs")
    x, y = torch.zeros(64 * 32), torch.zeros(64 * 32)
    for kernel in (k.scale_elements_kernel, k.sum_rows_kernel):  # other tests in this worker may have compiled them
        triton_compat.forget_compiled_variants(kernel)
    with jitguard.offline(compile=True), jitguard.watch(dir=str(logs)):
        for n in (16, 17, 1):  # one variant per class of each int: 3 recompile classes
            k.scale_elements_kernel[(1,)](x, y, n, BLOCK=1024)  # 8 elements a thread: 128-bit accesses when n % 16 == 0
            k.sum_rows_kernel[(1,)](x, y, n, BLOCK=64)
    return logs


def test_json_gives_each_advised_demotion_its_verdict(run_logs: Path) -> None:
    result = CliRunner().invoke(report_command, [str(run_logs), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    kernels = {entry["name"]: entry for entry in report["kernels"]}
    costly = kernels["scale_elements_kernel"]["params"]["n_elements"]["cost"]
    assert costly["verdict"] == "costly"
    assert "128-bit" in costly["detail"] and "become" in costly["detail"]
    assert costly["alternative"]
    free = kernels["sum_rows_kernel"]["params"]["num_rows"]["cost"]
    assert free["verdict"] == "free"
    assert kernels["scale_elements_kernel"]["fix"] is None
    assert kernels["scale_elements_kernel"]["fix_costly"] == 'do_not_specialize=["n_elements"]'
    assert kernels["sum_rows_kernel"]["fix"] == 'do_not_specialize=["num_rows"]'
    assert kernels["sum_rows_kernel"]["fix_costly"] is None  # every kernel carries the key
    assert "pricing 2 advised demotion(s)" in result.stderr


def test_text_shows_the_price_beside_the_fix(run_logs: Path) -> None:
    result = CliRunner().invoke(report_command, [str(run_logs)])
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "  skipped: n_elements: costly: " in text and "; instead: " in text
    assert "  cost: num_rows: free" in text
    markdown = CliRunner().invoke(report_command, [str(run_logs), "--markdown"]).stdout
    assert "- skipped: n_elements: costly: " in markdown


def test_no_cost_leaves_the_report_unpriced(run_logs: Path) -> None:
    result = CliRunner().invoke(report_command, [str(run_logs), "--json", "--no-cost"])
    report = json.loads(result.stdout)
    assert all("cost" not in info for entry in report["kernels"] for info in entry["params"].values())
    assert [entry["fix_costly"] for entry in report["kernels"]] == [None, None]
    assert {entry["name"]: entry["fix"] for entry in report["kernels"]} == {
        "scale_elements_kernel": 'do_not_specialize=["n_elements"]',
        "sum_rows_kernel": 'do_not_specialize=["num_rows"]'}


def test_a_kernel_that_cannot_be_imported_is_unknown_with_the_reason(tmp_path: Path) -> None:
    from tests.tool.test_report import compiles_for, write_log

    write_log(tmp_path, 20, compiles_for(20, [16, 17, 1]))
    result = CliRunner().invoke(report_command, [str(tmp_path), "--json"])
    cost = json.loads(result.stdout)["kernels"][0]["params"]["num_tokens"]["cost"]
    assert cost["verdict"] == "unknown" and "model.kernels.moe" in cost["detail"]
