"""The serving simulation on CPU (offline backend, real compiles): the kernels as upstream ships
compile on the request path; jitguard's kernels with a warm-up plan compile nothing there."""

from __future__ import annotations

import re
import sys
from dataclasses import replace
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "examples"))

from serve_sim.kernel_sets import load_kernel_set, remove_demotions  # noqa: E402
from serve_sim.simulation import SimConfig, run_simulation  # noqa: E402
from serve_sim.trace import TraceSpec, make_trace  # noqa: E402


def test_upstream_set_is_the_same_source_without_demotion_lists() -> None:
    source = (
        "import triton\n"
        "@triton.jit(do_not_specialize=[\n    'n',\n    'm',\n], debug=False)\n"
        "def k(x, n, m):\n    pass\n"
        "@triton.jit(do_not_specialize_on_alignment=['x'])  # é\n"
        "def j(x):\n    pass\n"
    )
    new, removed = remove_demotions(source)
    assert new.count("\n") == source.count("\n")
    assert "do_not_specialize=[\n\n\n], debug=False)" in new
    assert "do_not_specialize_on_alignment=[])  # é" in new
    assert [r.split(":")[0] for r in removed] == ["k", "j"]
    assert new.splitlines()[5:7] == source.splitlines()[5:7]  # the def and body lines are untouched

    _moe, rope, removed = load_kernel_set("upstream")
    assert rope.inv_rope_fp8_kernel.do_not_specialize == []
    assert "inv_rope_fp8_kernel: do_not_specialize=[\"num_tokens\"]" in removed
    _fixed_moe, fixed_rope, _ = load_kernel_set("fixed")
    assert fixed_rope.inv_rope_fp8_kernel.do_not_specialize == ["num_tokens"]
    # Same kernel body: Triton reads the transformed source through linecache.
    assert rope.inv_rope_fp8_kernel.src == fixed_rope.inv_rope_fp8_kernel.src


def test_trace_is_seeded() -> None:
    spec = TraceSpec(num_requests=50, seed=3)
    assert make_trace(spec) == make_trace(spec)
    assert make_trace(spec) != make_trace(TraceSpec(num_requests=50, seed=4))
    assert all(1 <= r.prompt_len <= spec.prompt_max for r in make_trace(spec))


def test_warm_up_plan_takes_request_path_compiles_to_zero(tmp_path: Path) -> None:
    from jitguard.report.build import build_report

    # One worker keeps this under 40 s on 2 cores (two ranks compiling at once take 2.5x longer
    # each); the recorded runs use two.
    config = replace(SimConfig.cpu_small(), workers=1)
    result = run_simulation(config, runs=("upstream", "fixed+warmup"), out_dir=str(tmp_path))
    upstream, fixed = result.run("upstream"), result.run("fixed+warmup")
    table = result.format_table()
    print(result.format_header())
    print(table)

    for run in (upstream, fixed):
        assert sorted(run.ttft_s) == list(range(config.trace.num_requests))  # every request got its first token
        assert len(run.workers) == config.workers
    assert upstream.compiles_on_path > 0
    assert {"inv_rope_fp8_kernel", "moe_grouped_gemm_kernel"} <= set(upstream.workers[0].serving_by_kernel)
    # The per-process jitguard logs tell the same story as the simulation's own counters.
    assert build_report(upstream.log_dir)["totals"]["serving_compiles"] == upstream.compiles_on_path

    assert fixed.warmup_failures == []
    assert [w.warmup_compiles for w in fixed.workers] == [result.plan_variants] * config.workers
    assert [w.profile_compiles for w in fixed.workers] == [0] * config.workers  # the plan covered it
    assert fixed.compiles_on_path == 0
    assert fixed.ttft_quantile(0.99) < upstream.ttft_quantile(0.5)
    assert "fixed+warmup vs upstream: compiles on the request path" in table
    per_request = result.format_requests().splitlines()
    assert len(per_request) == 1 + config.trace.num_requests
    assert "upstream TTFT ms" in per_request[0] and "fixed+warmup TTFT ms" in per_request[0]


def test_bad_run_name_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=re.escape("unknown run 'fixed+tuned'")):
        run_simulation(SimConfig.cpu_small(), runs=("fixed+tuned",))
