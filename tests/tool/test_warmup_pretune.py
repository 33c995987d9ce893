"""Warm-up plans pre-tune autotuned kernels: `build_plan` carries each autotuned kernel's
`keys_tuned`, `jitguard.warmup(plan)` launches every recorded key once, and serving the same sizes
then tunes nothing. A key value that cannot be rebuilt is a named failure.

Real Triton autotuners through the offline backend (keys only: the tuner and its cache are Triton's).
"""

from __future__ import annotations

import io
import json

import pytest
import torch
import triton
import triton.language as tl

import jitguard
from jitguard.report.build import build_report
from jitguard.runtime import monitor
from jitguard.startup.plan import build_plan
from jitguard.startup.replay import warmup

CONFIGS = [triton.Config({"BLOCK_N": 32}, num_warps=2), triton.Config({"BLOCK_N": 64}, num_warps=4)]


def scale_rows(x_ptr, out_ptr, num_tokens, hidden, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = (row < num_tokens) & (cols < hidden)
    tl.store(out_ptr + row * hidden + cols, tl.load(x_ptr + row * hidden + cols, mask=mask) * 2, mask=mask)


def keyed_on_a_pointer(x_ptr, n, BLOCK_N: tl.constexpr):
    offs = tl.arange(0, BLOCK_N)
    tl.store(x_ptr + offs, tl.zeros([BLOCK_N], dtype=tl.float32), mask=offs < n)


def cast_rows(x_ptr, out_ptr, n, OUT_DTYPE: tl.constexpr, BLOCK_N: tl.constexpr):
    offs = tl.arange(0, BLOCK_N)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n).to(OUT_DTYPE), mask=offs < n)


_SOURCES = {"scale_rows": scale_rows, "keyed_on_a_pointer": keyed_on_a_pointer, "cast_rows": cast_rows}


def fresh_server_kernel(name: str, key: list[str], bucket: dict[str, str] | None = None):
    """The module attribute `name` as a new server process would have it: a new autotuner (no tuning
    done) over the kernel; decorated here, inside the offline context (Triton 3.2's autotune asks
    the active driver for its benchmarker when it is decorated)."""
    decorate = jitguard.autotune(CONFIGS, key=key, bucket=bucket) if bucket else triton.autotune(CONFIGS, key=key)
    kernel = decorate(triton.jit(_SOURCES[name]))
    globals()[name] = kernel
    return kernel


def serve(kernel, sizes, hidden=64):
    for num_tokens in sizes:
        x = torch.zeros(num_tokens, hidden)
        kernel[(num_tokens,)](x, torch.empty_like(x), num_tokens, hidden)


@pytest.fixture(autouse=True)
def keys_only():
    monitor.uninstall()
    with jitguard.offline(compile=False):
        yield
    monitor.uninstall()
    globals().update(_SOURCES)


@pytest.mark.parametrize("source, bucket, tuned", [
    ("log directory", None, list(range(1, 13))),
    ("report", None, list(range(1, 13))),
    ("report", {"num_tokens": "pow2"}, [1, 2, 4, 8, 16]),  # jitguard.autotune: one tuning per bucket
])
def test_after_warmup_from_the_plan_serving_the_same_sizes_tunes_nothing(tmp_path, source, bucket, tuned):
    sizes = range(1, 13)
    with jitguard.watch(dir=str(tmp_path / "logs")) as first_run:
        serve(fresh_server_kernel("scale_rows", ["num_tokens"], bucket), sizes)
    assert len(first_run.tunings) == len(tuned)  # the storm the plan must prevent
    report = build_report(str(tmp_path / "logs"))
    (tmp_path / "report.json").write_text(json.dumps(report))
    plan = build_plan(str(tmp_path / ("logs" if source == "log directory" else "report.json")))
    (entry,) = plan["kernels"]
    assert entry["autotune"]["keys_tuned"] == [{"num_tokens": n} for n in tuned] and plan["tunings"] == len(tuned)

    kernel = fresh_server_kernel("scale_rows", ["num_tokens"], bucket)  # a new process: nothing tuned yet
    stream = io.StringIO()
    result = warmup(json.loads(json.dumps(plan)), stream=stream, quiet=True)
    assert result.ok, result.summary()
    assert result.pretuned == {"scale_rows": [{"num_tokens": n} for n in tuned]}
    assert f"{len(tuned)} autotune key(s) pre-tuned, 0 failed" in stream.getvalue()
    with jitguard.watch() as serving:
        jitguard.mark_serving()
        serve(kernel, sizes)
        jitguard.mark_warmup()
    assert serving.tunings == []


def serve_dtypes(kernel, sizes, dtypes, keywords=False, hidden=64):
    """Each size with each dtype: x of that dtype, out fp32; `keywords` passes out_ptr before x_ptr,
    so Triton's tuning key lists the dtypes as [fp32, x's] instead of argument order."""
    for num_tokens in sizes:
        for dtype in dtypes:
            x, out = torch.zeros(num_tokens, hidden, dtype=dtype), torch.empty(num_tokens, hidden)
            if keywords:
                kernel[(num_tokens,)](out_ptr=out, x_ptr=x, num_tokens=num_tokens, hidden=hidden)
            else:
                kernel[(num_tokens,)](x, out, num_tokens, hidden)


def _dtypes(dtype, keywords):
    return ["torch.float32", str(dtype)] if keywords else [str(dtype), "torch.float32"]


@pytest.mark.parametrize("bucket, keywords, plan_from", [
    (None, False, "logs"),                    # triton.autotune, tensors passed positionally
    ({"num_tokens": "pow2"}, False, "report"),  # jitguard.autotune: sizes 3 and 4 share bucket 4
    (None, True, "logs"),                     # pointers as keywords, out of argument order
    (None, False, "older"),                   # a report written before tunings_by_dtype: as before
])
def test_each_key_value_is_pretuned_with_each_dtype_set_it_was_tuned_for(tmp_path, bucket, keywords, plan_from):
    sizes, dtypes = [3, 4], [torch.float16, torch.bfloat16]
    tuned = [4] if bucket else [3, 4]
    with jitguard.watch(dir=str(tmp_path / "logs")) as first_run:
        serve_dtypes(fresh_server_kernel("scale_rows", ["num_tokens"], bucket), sizes, dtypes, keywords)
    assert len(first_run.tunings) == len(tuned) * 2  # one tuning per key value and dtype set
    expected = [{"key": {"num_tokens": n}, "dtypes": _dtypes(d, keywords)} for n in tuned for d in dtypes]
    report = build_report(str(tmp_path / "logs"))
    assert report["kernels"][0]["autotune"]["tunings_by_dtype"] == expected
    if plan_from == "older":
        del report["kernels"][0]["autotune"]["tunings_by_dtype"]
    (tmp_path / "report.json").write_text(json.dumps(report))
    plan = build_plan(str(tmp_path / ("logs" if plan_from == "logs" else "report.json")))
    (entry,) = plan["kernels"]
    assert entry["autotune"]["keys_tuned"] == [{"num_tokens": n} for n in tuned]  # unchanged: older readers
    if plan_from == "older":
        assert "tunings_by_dtype" not in entry["autotune"] and plan["tunings"] == len(tuned)
    else:
        assert entry["autotune"]["tunings_by_dtype"] == expected and plan["tunings"] == len(expected)

    kernel = fresh_server_kernel("scale_rows", ["num_tokens"], bucket)  # a new process: nothing tuned yet
    with jitguard.watch() as warming:
        result = warmup(json.loads(json.dumps(plan)), stream=io.StringIO(), quiet=True)
    assert result.ok, result.summary()
    launched = [{"key": r.bucketed_key, "dtypes": r.dtypes} for r in warming.tunings]  # what the kernel received
    with jitguard.watch() as serving:
        jitguard.mark_serving()
        serve_dtypes(kernel, sizes, dtypes, keywords)
        jitguard.mark_warmup()
    if plan_from != "older":
        assert launched == expected and result.pretuned_tunings == {"scale_rows": expected}
        assert serving.tunings == []
    else:  # once per key value, with the first variant's buffers: the other dtype set tunes when served
        first = _dtypes(dtypes[0], keywords)
        assert result.pretuned == {"scale_rows": [{"num_tokens": n} for n in tuned]}
        assert launched == [{"key": {"num_tokens": n}, "dtypes": first} for n in tuned]
        assert [r.dtypes for r in serving.tunings] == [_dtypes(dtypes[1], keywords)] * len(tuned)


def test_a_dtype_set_no_variant_has_is_one_named_failure(tmp_path):
    with jitguard.watch(dir=str(tmp_path)):
        serve_dtypes(fresh_server_kernel("scale_rows", ["num_tokens"]), [4], [torch.float16, torch.bfloat16])
    plan = build_plan(str(tmp_path))
    tunings = plan["kernels"][0]["autotune"]["tunings_by_dtype"]
    tunings[1]["dtypes"] = ["torch.float64", "torch.float32"]  # no variant compiled for fp64 x
    fresh_server_kernel("scale_rows", ["num_tokens"])
    result = warmup(plan, stream=io.StringIO(), quiet=True)
    assert result.pretuned_tunings == {"scale_rows": [tunings[0]]}  # the other dtype set still pre-tuned
    (failure,) = result.pretune_failures
    assert failure.startswith("scale_rows {'num_tokens': 4} dtypes ['torch.float64', 'torch.float32']: ")
    assert "no rebuildable variant of scale_rows in the plan has pointers of dtypes" in failure
    assert "\n" not in failure and not result.ok


def test_a_key_value_that_cannot_be_rebuilt_is_a_named_failure(tmp_path):
    with jitguard.watch(dir=str(tmp_path)):
        kernel = fresh_server_kernel("keyed_on_a_pointer", ["x_ptr", "n"])
        kernel[(1,)](torch.zeros(64), 16)
    plan = build_plan(str(tmp_path))
    (entry,) = plan["kernels"]
    assert entry["autotune"]["key"] == ["x_ptr", "n"]
    fresh_server_kernel("keyed_on_a_pointer", ["x_ptr", "n"])
    result = warmup(plan, stream=io.StringIO(), quiet=True)
    assert not result.ok and result.pretuned == {"keyed_on_a_pointer": []}
    (failure,) = result.pretune_failures
    assert failure.startswith("keyed_on_a_pointer {'x_ptr': ")
    assert "ValueError: key x_ptr=" in failure and "cannot be represented: a ptr argument's value in the key" in failure


def test_a_kernel_made_inside_a_function_is_a_named_failure(tmp_path):
    with jitguard.watch(dir=str(tmp_path)):
        serve(fresh_server_kernel("scale_rows", ["num_tokens"]), [4])
    plan = build_plan(str(tmp_path))
    plan["kernels"][0]["qualname"] = "make.<locals>.scale_rows"
    result = warmup(plan, stream=io.StringIO(), quiet=True)
    (failure,) = result.pretune_failures
    assert failure.startswith("scale_rows {'num_tokens': 4} dtypes ['torch.float32', 'torch.float32']: ")
    assert "is not a module-level name" in failure or "is gone" in failure  # Triton < 3.5 keeps no kernel registry
    assert not result.pretuned.get("scale_rows")


def test_a_dtype_constexpr_in_the_key_is_pretuned(tmp_path):
    """`OUT_DTYPE` (a Triton dtype object) in the autotune key round-trips through the plan as itself."""
    with jitguard.watch(dir=str(tmp_path)):
        kernel = fresh_server_kernel("cast_rows", ["n", "OUT_DTYPE"])
        for n in (16, 17):
            kernel[(1,)](torch.zeros(64), torch.zeros(64, dtype=torch.float16), n, OUT_DTYPE=tl.float16)
    plan = build_plan(str(tmp_path))
    fresh_server_kernel("cast_rows", ["n", "OUT_DTYPE"])
    result = warmup(plan, stream=io.StringIO(), quiet=True)
    assert result.pretune_failures == [] and len(result.pretuned["cast_rows"]) == 2
