"""Autotune tunings in the monitor: every benchmark run a new tuning key triggers is
kept, written to the NDJSON log, logged when it is a re-tune or during serving, summed up at exit
with its remedy, acted on by warn/error modes, and read back by the report.

Real Triton autotuners and real sm_90 compiles through the offline backend.
"""

from __future__ import annotations

import io
import warnings

import pytest
import torch
import triton
import triton.language as tl

import jitguard
from jitguard import triton_compat
from jitguard.report.build import build_report
from jitguard.runtime import monitor

CONFIGS = [triton.Config({"BLOCK_N": 32}, num_warps=2), triton.Config({"BLOCK_N": 64}, num_warps=4)]


@triton.jit
def scale_rows(x_ptr, out_ptr, num_tokens, hidden, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = (row < num_tokens) & (cols < hidden)
    tl.store(out_ptr + row * hidden + cols, tl.load(x_ptr + row * hidden + cols, mask=mask) * 2, mask=mask)


def storm_kernel():
    """A fresh tuner (empty config cache) on the shared kernel; decorated inside the offline context,
    because Triton 3.2's autotune asks the active driver for its benchmarker at decoration time."""
    for cache in triton_compat.all_kernel_caches(scale_rows):
        cache.clear()
    return triton.autotune(CONFIGS, key=["num_tokens"])(scale_rows)


def launch(kernel, num_tokens: int, hidden: int = 64) -> None:
    x = torch.zeros(num_tokens, hidden)
    kernel[(num_tokens,)](x, torch.empty_like(x), num_tokens, hidden)


@pytest.fixture(autouse=True)
def offline_and_clean():
    monitor.uninstall()
    with jitguard.offline():
        yield
    monitor.uninstall()


def test_a_storm_under_watch_reaches_the_report_with_counts_key_and_remedy(tmp_path):
    stream = io.StringIO()
    kernel = storm_kernel()
    monitor.install(dir=str(tmp_path), summary=False, stream=stream)
    with jitguard.watch() as recorder:
        for num_tokens in range(1, 13):
            if num_tokens == 5:
                jitguard.mark_serving()
            launch(kernel, num_tokens)
        jitguard.mark_warmup()
    exit_lines = monitor.current().summary_lines()
    monitor.uninstall()

    assert [t.key for t in recorder.tunings] == [{"num_tokens": m} for m in range(1, 13)]
    assert all(t.configs_timed == 2 for t in recorder.tunings)
    report = build_report(str(tmp_path))
    (entry,) = [k for k in report["kernels"] if k["name"] == "scale_rows"]
    autotune = entry["autotune"]
    assert (autotune["tunings"], autotune["tunings_during_serving"], autotune["configs_timed"]) == (12, 8, 24)
    assert autotune["key"] == ["num_tokens"] and autotune["key_params_varying"] == ["num_tokens"]
    assert autotune["remedy"] == [
        'scale_rows: num_tokens varies across 12 tunings (12 values); bucket it: '
        'jitguard.autotune(..., bucket={"num_tokens": "pow2"}) tunes 5 times for these values']

    # The first tuning (warm-up, first of its kernel) is quiet; every re-tune is one line.
    tuning_lines = [line for line in stream.getvalue().splitlines() if line.startswith("[jitguard] autotune")]
    assert len(tuning_lines) == 11
    line = triton_compat.kernel_location(scale_rows)[1]
    assert tuning_lines[0].startswith(
        f"[jitguard] autotune scale_rows (test_monitor_tunings.py:{line}) tuned num_tokens=2:")
    assert "; tuning #2 of scale_rows, key num_tokens varies" in tuning_lines[0]
    assert tuning_lines[-1].endswith('; remedy: bucket it: jitguard.autotune(..., bucket={"num_tokens": "pow2"}) '
                                     'tunes 5 times for these values')
    assert ", serving, called from " in tuning_lines[-1]

    assert "[jitguard] autotune summary (this process)" in exit_lines
    autotune_part = exit_lines[exit_lines.index("[jitguard] autotune summary (this process)"):]
    assert autotune_part[1].split() == ["kernel", "tunings", "in", "serving", "configs", "timed", "tuning", "s",
                                        "key", "varying"]
    row = autotune_part[2].split()
    assert row[:4] == ["scale_rows", "12", "8", "24"] and row[-1] == "num_tokens"
    assert any(line.startswith("  remedy: scale_rows: num_tokens varies across 12 tunings") for line in exit_lines)


@pytest.mark.parametrize("mode, outcome", [("error", "raises"), ("warn", "warns"), ("log", "quiet")])
def test_modes_act_on_a_tuning_during_serving_like_on_a_compile(mode, outcome):
    kernel = storm_kernel()
    with jitguard.watch(mode=mode) as recorder:
        launch(kernel, 16)  # warm-up: compiles both configs and tunes num_tokens=16
        jitguard.mark_serving()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if outcome == "raises":
                with pytest.raises(monitor.RecompileError, match=r"scale_rows autotuned during serving: .* "
                                                                 r"tuned num_tokens=32: 2 configs") as failure:
                    launch(kernel, 32)  # same specialization class: no compile, only a re-tune
                assert [t.key for t in failure.value.tunings] == [{"num_tokens": 32}]
            else:
                launch(kernel, 32)
        jitguard.mark_warmup()
    assert [t.phase for t in recorder.tunings] == ["warmup", "serving"]
    assert all(e.phase == "warmup" for e in recorder.events)  # the serving tuning compiled nothing
    serving_warnings = [w for w in caught if issubclass(w.category, monitor.RecompileWarning)]
    assert len(serving_warnings) == (1 if outcome == "warns" else 0)
    if outcome == "warns":
        assert "scale_rows autotuned during serving" in str(serving_warnings[0].message)


def test_an_unwritable_log_never_breaks_the_launch_nor_loses_tunings(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    stream = io.StringIO()
    kernel = storm_kernel()
    monitor.install(dir=str(blocker / "logs"), summary=False, stream=stream)
    with jitguard.watch() as recorder:
        for num_tokens in (1, 2, 3):
            launch(kernel, num_tokens)
    monitor.uninstall()
    assert len(recorder.tunings) == 3
    assert stream.getvalue().count("cannot write the compile log") == 1


def test_uninstall_puts_autotuner_run_back():
    Autotuner = triton_compat.autotuner_type()
    before = Autotuner.__dict__["run"]
    with jitguard.watch():
        assert Autotuner.__dict__["run"] is not before
        assert getattr(Autotuner.__dict__["run"], "__jitguard_observer__", False)
    assert Autotuner.__dict__["run"] is before


def test_compiles_of_a_cost_check_copy_are_not_the_programs():
    from jitguard.price.demotion_cost import COST_PROBE_ATTRIBUTE, _copy_with

    probe = _copy_with(scale_rows, "num_tokens", "do_not_specialize")
    assert getattr(probe, COST_PROBE_ATTRIBUTE) is True
    x = torch.zeros(4, 64)
    storm_kernel()  # empties the kernel's caches
    with jitguard.watch() as recorder:
        probe[(4,)](x, torch.empty_like(x), 4, 64, BLOCK_N=32)
        scale_rows[(4,)](x, torch.empty_like(x), 4, 64, BLOCK_N=32)
    assert [(e.kernel, e.variant) for e in recorder.events] == [("scale_rows", 1)]  # the probe's compile is not here
    assert triton_compat.registered_kernel(scale_rows.fn.__module__, "scale_rows") in (scale_rows, None)


def test_a_config_knob_taking_many_values_is_expected_never_make_it_runtime():
    storm_kernel()  # empties the kernel's caches
    configs = [triton.Config({"BLOCK_N": n}) for n in (16, 32, 64, 128)]  # BLOCK_N alone, 4 values
    kernel = triton.autotune(configs, key=["num_tokens"])(scale_rows)
    with jitguard.watch() as recorder:
        launch(kernel, 16)
    causes = [c for e in recorder.events for c in e.causes]
    assert [c.param for c in causes] == ["BLOCK_N"] * 3
    assert causes[-1].advice == "expected"  # 4 values of a constexpr would say "make it runtime" elsewhere
    assert causes[-1].message == "BLOCK_N is set by the autotune configs: one variant per config (expected)"
