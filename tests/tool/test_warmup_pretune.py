"""Warm-up plans pre-tune autotuned kernels (issue 15): `build_plan` carries each autotuned kernel's
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
from jitguard import monitor
from jitguard.report import build_report
from jitguard.warmup_plan import build_plan
from jitguard.warmup_replay import warmup

CONFIGS = [triton.Config({"BLOCK_N": 32}, num_warps=2), triton.Config({"BLOCK_N": 64}, num_warps=4)]


def scale_rows(x_ptr, out_ptr, num_tokens, hidden, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = (row < num_tokens) & (cols < hidden)
    tl.store(out_ptr + row * hidden + cols, tl.load(x_ptr + row * hidden + cols, mask=mask) * 2, mask=mask)


def keyed_on_a_pointer(x_ptr, n, BLOCK_N: tl.constexpr):
    offs = tl.arange(0, BLOCK_N)
    tl.store(x_ptr + offs, tl.zeros([BLOCK_N], dtype=tl.float32), mask=offs < n)


_SOURCES = {"scale_rows": scale_rows, "keyed_on_a_pointer": keyed_on_a_pointer}


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
