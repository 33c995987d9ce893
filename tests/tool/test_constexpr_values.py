"""Constexpr values of every kind are recorded as themselves or a tagged JSON form, and rebuilt from
logs, reports and warm-up plans: a dtype constexpr (tl.float8e4nv) prices and warms up like any other."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
import triton.language as tl
from click.testing import CliRunner

import jitguard
from jitguard import triton_compat
from jitguard.events import constexpr_words
from jitguard.replay.arguments import constexpr_value, unrebuildable_reason
from jitguard.report.command import report_command
from jitguard.startup.plan import build_plan
from jitguard.startup.replay import warmup
from tests import kernels_dtype_constexpr as K


@pytest.mark.parametrize("value, words", [
    (tl.float8e4nv, "fp8e4nv"),
    (tl.bfloat16, "bf16"),
    (None, "None"),
    (1.5, "1.5"),
    (float("inf"), "inf"),
    ((16, tl.float16), "(16, fp16)"),
    ((8,), "(8,)"),
    ("silu", "'silu'"),
    (True, "True"),
    (128, "128"),
])
def test_a_constexpr_round_trips_through_json_as_itself(value, words):
    stored = json.loads(json.dumps(triton_compat.constexpr_json(value), allow_nan=False))
    rebuilt = constexpr_value("X", stored)
    assert type(rebuilt) is type(value) and rebuilt == value
    assert constexpr_words(stored) == words
    assert unrebuildable_reason({"X": {"kind": "constexpr", "value": stored}}) is None


def test_a_not_finite_float_constexpr_is_rebuilt_as_a_float():
    assert math.isnan(constexpr_value("X", triton_compat.constexpr_json(float("nan"))))


def test_an_older_log_s_dtype_string_is_rebuilt_as_the_dtype():
    assert constexpr_value("OUT_DTYPE", "triton.language.float8e4nv") == tl.float8e4nv
    assert constexpr_words("triton.language.float8e4nv") == "float8e4nv"
    assert constexpr_value("MODE", "triton.language.no_such_thing") == "triton.language.no_such_thing"


def test_a_value_recorded_only_by_its_repr_names_the_parameter():
    stored = triton_compat.constexpr_json(object())
    assert "repr" in stored
    reason = unrebuildable_reason({"ACT": {"kind": "constexpr", "value": stored}})
    assert reason and "'ACT'" in reason and "cannot be rebuilt" in reason
    with pytest.raises(ValueError, match="'ACT'"):
        constexpr_value("ACT", stored)
    with pytest.raises(ValueError, match="not a Triton dtype"):
        constexpr_value("OUT", {"dtype": "fp99"})


@pytest.fixture(scope="module")
def dtype_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    logs = tmp_path_factory.mktemp("logs")
    triton_compat.forget_compiled_variants(K.quantize_rows_kernel)
    x = torch.zeros(4 * 1024, dtype=torch.bfloat16)
    y = torch.zeros(4 * 1024, dtype=torch.float8_e4m3fn)
    with jitguard.offline(compile=True), jitguard.watch(dir=str(logs)):
        for n_cols in (1024, 1000, 1):
            K.quantize_rows_kernel[(4,)](x, y, n_cols, 0.5, BLOCK=1024, OUT_DTYPE=tl.float8e4nv)
    return logs


def test_a_dtype_constexpr_kernel_is_priced(dtype_logs: Path) -> None:
    result = CliRunner().invoke(report_command, [str(dtype_logs), "--json"])
    assert result.exit_code == 0, result.output
    kernel = json.loads(result.stdout)["kernels"][0]
    assert kernel["variant_list"][0]["params"]["OUT_DTYPE"]["value"] == {"dtype": "fp8e4nv"}
    cost = kernel["params"]["n_cols"]["cost"]
    assert cost["verdict"] == "costly", cost  # the mask bound decides the access width
    assert "128-bit" in cost["detail"]


def test_a_dtype_constexpr_kernel_warms_up_from_its_plan(dtype_logs: Path) -> None:
    result = CliRunner().invoke(report_command, [str(dtype_logs), "--json", "--no-cost"])
    plan = build_plan(json.loads(result.stdout))
    triton_compat.forget_compiled_variants(K.quantize_rows_kernel)
    with jitguard.offline(compile=True):
        outcome = warmup(plan, quiet=True)
    assert [o.reason for o in outcome.failures] == []
    assert len(outcome.compiled) == 3
