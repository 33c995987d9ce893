"""jitguard.autotune: triton.autotune that tunes once per bucket of a key value (real offline compiles)."""

import os

import pytest
import torch
import triton
import triton.language as tl

import jitguard
from jitguard import triton_compat
from jitguard.tuning.bucketed_autotune import BucketError, bucket_value
from jitguard.tuning.recorder import record_tunings

TOKEN_COUNTS = range(1, 65)


def configs(pre_hook=None):
    return [triton.Config({"BLOCK": 64}, num_warps=2, pre_hook=pre_hook),
            triton.Config({"BLOCK": 128}, num_warps=4, pre_hook=pre_hook)]


def make_rows_kernel(decorator):
    """Decorated on demand: Triton 3.2's autotune picks its benchmarker when decorated (offline here)."""

    @decorator
    @triton.jit
    def rows_kernel(x_ptr, y_ptr, M, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < M
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)

    return rows_kernel


def drive(kernel, counts=TOKEN_COUNTS):
    x, y = torch.zeros(128), torch.zeros(128)
    for m in counts:
        kernel[(1,)](x, y, m)


@pytest.mark.parametrize("spec, value, expected", [
    ("pow2", 0, 0), ("pow2", 1, 1), ("pow2", 2, 2), ("pow2", 3, 4), ("pow2", 64, 64), ("pow2", 65, 128),
    ("log2", 5, 8),
    ("align:16", 1, 16), ("align:16", 16, 16), ("align:16", 17, 32), ("align:16", 0, 0),
    ("le:[1,8,32]", 1, 1), ("le:[1,8,32]", 2, 8), ("le:[1, 8, 32]", 32, 32), ("le:[1,8,32]", 1000, 32),
    ("le:32,8,1", 9, 32),
])
def test_strategy_buckets(spec, value, expected):
    assert bucket_value(spec, value) == expected


@pytest.mark.parametrize("bucket, says", [
    ({"M": "pow3"}, "unknown strategy 'pow3'"),
    ({"M": "align:0"}, "align needs a positive integer"),
    ({"M": "align:x"}, "align needs a positive integer"),
    ({"M": "le:[]"}, "le needs integer bounds"),
    ({"M": 2}, "is not a string"),
    ({"N": "pow2"}, "bucket names 'N', which is not in key=['M']"),
    (["M"], "bucket= must be a dict"),
])
def test_bad_bucket_is_one_error_at_decoration_naming_kernel_and_param(bucket, says):
    with jitguard.offline(compile=False):
        with pytest.raises(BucketError) as info:
            make_rows_kernel(jitguard.autotune(configs(), key=["M"], bucket=bucket))
    message = str(info.value)
    assert says in message
    assert "rows_kernel" in message and __file__ in message
    if isinstance(bucket, dict):
        assert repr(next(iter(bucket))) in message


@pytest.mark.parametrize("decorate, tunings", [
    (lambda: triton.autotune(configs(), key=["M"]), 64),
    (lambda: jitguard.autotune(configs(), key=["M"]), 64),
    (lambda: jitguard.autotune(configs(), key=["M"], bucket={"M": "pow2"}), 7),
    (lambda: jitguard.autotune(configs(), key=["M"], bucket={"M": "align:16"}), 4),
    (lambda: jitguard.autotune(configs(), key=["M"], bucket={"M": "le:[1,8,32]"}), 3),
], ids=["triton.autotune", "no-bucket", "pow2", "align16", "le"])
def test_tunings_over_token_counts(decorate, tunings):
    with jitguard.offline(compile=True):
        kernel = make_rows_kernel(decorate())
        with record_tunings() as recorder:
            drive(kernel)
    assert len(recorder.records) == tunings
    assert sum(r.configs_timed for r in recorder.records) == 2 * tunings


def test_kernel_launches_with_the_true_value_not_the_bucket():
    seen = []
    with jitguard.offline(compile=True):
        kernel = make_rows_kernel(jitguard.autotune(configs(pre_hook=lambda nargs: seen.append(nargs["M"])),
                                                    key=["M"], bucket={"M": "pow2"}))
        for m in (3, 4, 5, 33):
            seen.clear()
            drive(kernel, [m])
            assert seen and set(seen) == {m}  # benchmark runs (if any) and the launch all get m


def test_prune_configs_by_runs_once_per_bucket_with_true_values():
    pruned_for = []

    def early_config_prune(configs, named_args, **kwargs):
        pruned_for.append(named_args["M"])
        return configs

    with jitguard.offline(compile=False):
        kernel = make_rows_kernel(jitguard.autotune(configs(), key=["M"], bucket={"M": "pow2"},
                                                    prune_configs_by={"early_config_prune": early_config_prune}))
        drive(kernel)
    assert pruned_for == [1, 2, 3, 5, 9, 17, 33]


def test_key_passed_by_keyword_is_bucketed_too():
    with jitguard.offline(compile=False):
        kernel = make_rows_kernel(jitguard.autotune(configs(), key=["M"], bucket={"M": "pow2"}))
        x, y = torch.zeros(128), torch.zeros(128)
        with record_tunings() as recorder:
            for m in TOKEN_COUNTS:
                kernel[(1,)](x, y, M=m)
    assert len(recorder.records) == 7


def test_buckets_hold_across_offline_contexts():
    """The offline backend drops its tuning choices on exit; the next context still tunes per bucket."""
    with jitguard.offline(compile=False):
        kernel = make_rows_kernel(jitguard.autotune(configs(), key=["M"], bucket={"M": "pow2"}))
        drive(kernel)
    with jitguard.offline(compile=False), record_tunings() as recorder:
        drive(kernel)
    assert len(recorder.records) == 7


@pytest.mark.parametrize("extra", [{"cache_results": False}, {"reset_to_zero": ["y_ptr"]},
                                   {"restore_value": ["y_ptr"]}, {"bogus_option": 1}])
def test_other_arguments_behave_as_in_the_installed_triton(extra):
    """Whatever triton.autotune accepts or rejects on this version, the drop-in does the same."""
    outcomes = []
    for decorate in (lambda: triton.autotune(configs(), key=["M"], **extra),
                     lambda: jitguard.autotune(configs(), key=["M"], bucket={"M": "pow2"}, **extra)):
        with jitguard.offline(compile=False):
            try:
                kernel = make_rows_kernel(decorate())
                drive(kernel, [3, 4])
                outcomes.append("ok")
            except TypeError as exc:
                outcomes.append(type(exc).__name__)
    assert outcomes[0] == outcomes[1]


@pytest.mark.skipif(triton_compat.VERSION < (3, 3),
                    reason="Triton 3.2's interpreter cannot run any autotuned kernel "
                           "(Config passes num_buffers_warp_spec)")
def test_outputs_equal_triton_autotune_under_the_interpreter(monkeypatch):
    def fake_bench(fn, quantiles=None, **kwargs):
        fn()
        return [1.0, 1.0, 1.0] if quantiles else 1.0

    kernels = []
    with jitguard.offline(compile=False):
        monkeypatch.setenv("TRITON_INTERPRET", "1")  # read when decorated: these two are interpreted
        for decorate in (lambda: triton.autotune(configs(), key=["M"], do_bench=fake_bench),
                         lambda: jitguard.autotune(configs(), key=["M"], bucket={"M": "pow2"}, do_bench=fake_bench)):
            kernels.append(make_rows_kernel(decorate()))
        monkeypatch.delenv("TRITON_INTERPRET")
        x = torch.arange(1, 129, dtype=torch.float32)
        for m in (1, 3, 5, 17, 64):
            outputs = []
            for kernel in kernels:
                y = torch.zeros(128)
                kernel[(2,)](x, y, m)
                outputs.append(y)
            expected = torch.where(torch.arange(128) < m, 2 * x, torch.zeros(128))
            assert torch.equal(outputs[0], expected) and torch.equal(outputs[1], expected)


def test_import_jitguard_autotune_is_lazy():
    import subprocess
    import sys
    code = ("import sys, jitguard; f = jitguard.autotune; "
            "print('triton' in sys.modules, 'torch' in sys.modules, f.__module__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ),
                         timeout=120).stdout.split()
    assert out == ["False", "False", "jitguard.tuning.bucketed_autotune"]


def test_no_recompiles_isolation_sets_bucketed_choices_aside_and_back():
    with jitguard.offline(compile=False):
        kernel = make_rows_kernel(jitguard.autotune(configs(), key=["M"], bucket={"M": "pow2"}))
        drive(kernel)
        with record_tunings() as recorder:
            with jitguard.no_recompiles(warmup=2, isolate=True):  # a tuning after warm-up would fail the block
                drive(kernel, [3, 5])  # a fresh block tunes its buckets (4 and 8) again
            inside = len(recorder.records)
            drive(kernel)  # every bucket chosen before the block is back
    assert (inside, len(recorder.records)) == (2, 2)


def test_a_non_int_value_for_a_bucketed_param_says_kernel_param_and_value():
    with jitguard.offline(compile=False):
        kernel = make_rows_kernel(jitguard.autotune(configs(), key=["M"], bucket={"M": "pow2"}))
        with pytest.raises(TypeError, match=r"rows_kernel .*bucket 'M' \(pow2\) needs an int, got float 3.5"):
            kernel[(1,)](torch.zeros(8), torch.zeros(8), 3.5)


def test_stacks_over_heuristics_like_triton_autotune():
    with jitguard.offline(compile=False):
        @jitguard.autotune(configs(), key=["M"], bucket={"M": "align:16"})
        @triton.heuristics({"EVEN": lambda args: args["M"] % 16 == 0})
        @triton.jit
        def even_rows(x_ptr, y_ptr, M, BLOCK: tl.constexpr, EVEN: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < M), mask=offs < M)

        with record_tunings() as recorder:
            drive(even_rows)
    assert [r.bucketed_key["M"] for r in recorder.records] == [16, 32, 48, 64]
    assert {r.kernel for r in recorder.records} == {"even_rows"}
