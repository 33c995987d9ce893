"""The report's `"autotune"` entry: tuning records in the logs become per-kernel tuning counts, the
varying key parameter and the bucketing remedy; a malformed tuning record is skipped and named."""

from __future__ import annotations

import json
from pathlib import Path

from jitguard.report.build import build_report
from jitguard.report.render_tables import format_markdown, format_text
from jitguard.tuning.records import TuningRecord
from tests.tool.test_report import KERNEL_FILE, compiles_for, write_log


def tuning(pid: int, num_tokens: int, phase: str = "warmup") -> dict:
    return TuningRecord(kernel="fused_moe_kernel", file=KERNEL_FILE, line=12, call_site="serve.py:40",
                        key={"num_tokens": num_tokens, "hidden": 4096},
                        bucketed_key={"num_tokens": num_tokens, "hidden": 4096}, bucket={},
                        dtypes=["torch.bfloat16"], configs_timed=34, tuning_s=0.5, best_config="BLOCK_M: 64",
                        phase=phase, time=2000.0 + num_tokens, pid=pid).to_dict()


def test_tunings_per_kernel_with_the_varying_key_and_the_remedy(tmp_path: Path) -> None:
    path = write_log(tmp_path, 20, compiles_for(20, [16, 17]))
    lines = [json.dumps(tuning(20, m, "serving" if m > 8 else "warmup")) for m in range(1, 65)]
    path.write_text(path.read_text() + "".join(line + "\n" for line in lines))
    report = build_report(tmp_path)
    (kernel,) = report["kernels"]
    entry = kernel["autotune"]
    assert (entry["tunings"], entry["tunings_during_serving"], entry["configs_timed"]) == (64, 56, 64 * 34)
    assert entry["key"] == ["num_tokens", "hidden"] and entry["key_params_varying"] == ["num_tokens"]
    assert entry["tuning_s"] == 32.0
    assert entry["remedy"] == ['fused_moe_kernel: num_tokens varies across 64 tunings (64 values); bucket it: '
                               'jitguard.autotune(..., bucket={"num_tokens": "pow2"}) tunes 7 times for these values']
    text = format_text(report)
    assert "fused_moe_kernel: autotune 64 tunings (56 during serving), 2176 configs timed, 32.0 s; " \
           "key num_tokens, hidden; varying: num_tokens" in text
    assert "remedy: fused_moe_kernel: num_tokens varies across 64 tunings" in text
    assert 'bucket={"num_tokens": "pow2"}' in format_markdown(report)
    json.dumps(report, allow_nan=False)


def test_a_kernel_that_never_tuned_has_no_autotune_entry(tmp_path: Path) -> None:
    write_log(tmp_path, 20, compiles_for(20, [16, 17]))
    (kernel,) = build_report(tmp_path)["kernels"]
    assert "autotune" not in kernel


def test_malformed_tuning_records_are_skipped_and_named(tmp_path: Path) -> None:
    path = write_log(tmp_path, 20, compiles_for(20, [16]))
    bad = [dict(tuning(20, 3), configs_timed="many"), dict(tuning(20, 4), tuning_s=float("nan")),
           dict(tuning(20, 5), key=[1, 2]), dict(tuning(20, 6), kernel=7), dict(tuning(20, 7), phase="later")]
    good = tuning(20, 9)
    lines = [json.dumps(record) for record in bad] + [json.dumps(good)]
    path.write_text(path.read_text() + "".join(line + "\n" for line in lines))
    report = build_report(tmp_path)
    assert report["kernels"][0]["autotune"]["tunings"] == 1
    reasons = [skip["reason"] for skip in report["skipped"]]
    assert len(reasons) == 5
    assert any(r.startswith("configs_timed is \"many\"") for r in reasons)
    assert any(r.startswith("tuning_s is NaN") for r in reasons)
    assert any(r.startswith("phase is \"later\"") for r in reasons)
    json.dumps(report, allow_nan=False)
