"""`jitguard.sweep` and `assert_max_variants`: variants per kernel over a range of values, with causes.

Keys-only offline backend: keys and variant counts are Triton's own, the compiler is skipped.
"""

import json
import os

import pytest
import torch
import triton
import triton.language as tl

import jitguard
from jitguard.runtime.monitor import RecompileError


@triton.jit
def stock_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, tl.zeros([BLOCK], dtype=tl.float32), mask=offsets < n)


@triton.jit(do_not_specialize=["n"])
def fixed_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, tl.zeros([BLOCK], dtype=tl.float32), mask=offsets < n)


_tuned = []


def tuned_kernel():
    """An autotuned kernel, decorated on first use: Triton 3.2's autotune asks the active driver for
    its benchmarker at decoration time, so the offline backend must be active by then."""
    if not _tuned:
        @triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=2),
                                  triton.Config({"BLOCK": 128}, num_warps=4)], key=["n"])
        @triton.jit
        def tuned_kernel(x_ptr, n, BLOCK: tl.constexpr):
            offsets = tl.arange(0, BLOCK)
            tl.store(x_ptr + offsets, tl.zeros([BLOCK], dtype=tl.float32), mask=offsets < n)

        _tuned.append(tuned_kernel)
    return _tuned[0]


X = torch.zeros(256)
TOKEN_COUNTS = [1, 2, 3, 16, 17, 32, 33, 64]


def both(n):
    stock_kernel[(1,)](X, n, BLOCK=64)
    fixed_kernel[(1,)](X, n, BLOCK=64)


@pytest.fixture(autouse=True)
def keys_only(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "triton-cache"))
    # call sites print relative to the repository root
    monkeypatch.chdir(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    with jitguard.offline(compile=False):
        yield


def test_table_counts_new_variants_per_kernel_and_the_values_that_made_them():
    table = jitguard.sweep(both, TOKEN_COUNTS)
    assert table.kernels() == {"stock_kernel": 3, "fixed_kernel": 1}
    assert table.variants(stock_kernel) == 3 and table.variants("fixed_kernel") == 1
    assert table.values_compiling("stock_kernel") == [1, 2, 16]
    stock = [r for r in table.rows if r.kernel == "stock_kernel"]
    assert [(r.variant, r.value) for r in stock] == [(1, 1), (2, 2), (3, 16)]
    assert [(c.param, c.before, c.after) for c in stock[2].causes] == [
        ("n", "int32, value 2", "int32 divisible by 16")]


def test_printed_table_has_a_row_per_kernel_with_causes_and_fix():
    text = str(jitguard.sweep(both, TOKEN_COUNTS))
    lines = text.splitlines()
    assert lines[0] == "jitguard sweep over 8 values: 1, 2, 3, 16, 17, 32, 33, 64"
    assert lines[1].split() == ["kernel", "variants", "new", "variant", "at", "values", "causes", "fix"]
    assert lines[2].split() == ["stock_kernel", "3", "1,", "2,", "16", "n", "x2", 'do_not_specialize=["n"]']
    assert lines[3].split() == ["fixed_kernel", "1", "1", "-", "-"]
    assert "  #2 at value 2: n: the constant 1 (specialized int) -> int32, value 2" in lines


def test_assert_max_variants_passes_at_the_limit_and_lists_every_variant_over_it():
    table = jitguard.sweep(both, TOKEN_COUNTS)
    jitguard.assert_max_variants(table, fixed_kernel, 1)
    jitguard.assert_max_variants(table, "stock_kernel", 3)
    with pytest.raises(RecompileError) as failure:
        jitguard.assert_max_variants(table, "stock_kernel", 1)
    message = str(failure.value)
    assert message.splitlines()[0] == ("Expected at most 1 variant of stock_kernel over the sweep of 8 values, "
                                       "but 3 were compiled:")
    assert "  #3 at value 16, called from tests/tool/test_sweep.py" in message
    assert "    n: int32, value 2 -> int32 divisible by 16" in message
    assert 'fix: do_not_specialize=["n"]' in message
    assert len(failure.value.events) == 3


def test_counts_do_not_depend_on_what_compiled_before_the_sweep():
    for n in TOKEN_COUNTS:
        both(n)  # every variant is in Triton's cache already
    assert jitguard.sweep(both, TOKEN_COUNTS).kernels() == {"stock_kernel": 3, "fixed_kernel": 1}
    with jitguard.watch() as recorder:
        both(17)  # the sweep put the earlier entries back: still a cache hit
    assert recorder.events == []


def test_autotune_configs_are_variants_of_the_value_that_benchmarked_them():
    table = jitguard.sweep(lambda n: tuned_kernel()[(1,)](X, n), [16, 32, 17])
    rows = [(r.value, r.autotuning) for r in table.rows]
    assert rows == [(16, True), (16, True), (17, True), (17, True)]
    assert "#2 at value 16 [autotune config]" in str(table)


def test_unknown_kernel_is_an_error_naming_the_kernels_seen():
    table = jitguard.sweep(both, [16])
    with pytest.raises(ValueError, match=r"kernel 'stok_kernel' compiled nothing in this sweep "
                                         r"\(kernels that compiled: stock_kernel, fixed_kernel\)"):
        jitguard.assert_max_variants(table, "stok_kernel", 1)


@pytest.mark.parametrize("n", [0, -1, 2.0, True])
def test_bad_limit_is_a_clear_error(n):
    table = jitguard.sweep(both, [16])
    with pytest.raises(ValueError, match=r"n must be an int >= 1"):
        jitguard.assert_max_variants(table, "stock_kernel", n)


def test_an_exception_in_fn_names_the_value():
    def fails_on_17(n):
        if n == 17:
            raise RuntimeError("boom")
        both(n)

    with pytest.raises(RuntimeError, match="boom") as failure:
        jitguard.sweep(fails_on_17, [16, 17, 32])
    assert "jitguard.sweep: raised by fn(17), value 2 of 3" in failure.value.__notes__


def test_an_enclosing_no_recompiles_block_leaves_the_sweep_to_its_table():
    with jitguard.no_recompiles():
        stock_kernel[(1,)](X, 16, BLOCK=64)
        table = jitguard.sweep(both, TOKEN_COUNTS)
        stock_kernel[(1,)](X, 17, BLOCK=64)  # compiled by the sweep: a cache hit here
    assert table.variants("stock_kernel") == 3


def test_to_dict_is_json():
    data = json.loads(json.dumps(jitguard.sweep(both, [1, 16]).to_dict()))
    assert data["values"] == [1, 16]
    assert data["kernels"]["stock_kernel"]["variants"] == 2
    assert data["kernels"]["stock_kernel"]["fix"] == 'do_not_specialize=["n"]'
    assert data["kernels"]["stock_kernel"]["rows"][1]["causes"][0]["param"] == "n"


def test_sweep_is_callable_after_importing_the_submodule():
    import jitguard.guard.variant_sweep
    assert jitguard.sweep(both, [16]).kernels() == {"stock_kernel": 1, "fixed_kernel": 1}


def test_fn_must_be_callable():
    with pytest.raises(TypeError, match="fn must be callable, got list"):
        jitguard.sweep([1, 2], [1])


FWD_KERNEL = '''import triton
import triton.language as tl


@triton.jit
def _fwd_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n) * {scale}, mask=offsets < n)
'''


def test_kernels_of_one_name_in_two_files_are_rows_of_their_own(tmp_path):
    import importlib.util

    modules = []
    for where, scale in (("prefill", 2), ("decode", 3)):
        path = tmp_path / where / "attn.py"
        path.parent.mkdir()
        path.write_text(FWD_KERNEL.format(scale=scale))
        spec = importlib.util.spec_from_file_location(f"sweep_{where}_attn", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        modules.append(module)
    prefill, decode = modules
    x = torch.zeros(64)

    def layer(n):
        prefill._fwd_kernel[(1,)](x, n, BLOCK=64)
        decode._fwd_kernel[(1,)](x, 16, BLOCK=64)  # one variant whatever n is

    table = jitguard.sweep(layer, [1, 16, 17])
    # Before: one row `_fwd_kernel` with 4 variants.
    assert table.kernels() == {"_fwd_kernel (prefill/attn.py:5)": 3, "_fwd_kernel (decode/attn.py:5)": 1}
    assert (table.variants(prefill._fwd_kernel), table.variants(decode._fwd_kernel)) == (3, 1)
    assert table.variants("_fwd_kernel") == 4  # the function's name: every kernel so named
    jitguard.assert_max_variants(table, decode._fwd_kernel, 1)
    with pytest.raises(RecompileError, match="at most 1 variant of _fwd_kernel over"):
        jitguard.assert_max_variants(table, prefill._fwd_kernel, 1)
    # The recorder names them alike.
    with jitguard.watch() as rec:
        for cache in [*jitguard.triton_compat.all_kernel_caches(prefill._fwd_kernel),
                      *jitguard.triton_compat.all_kernel_caches(decode._fwd_kernel)]:
            cache.clear()
        for n in (1, 16, 17):
            layer(n)
    assert rec.kernels() == table.kernels()
    assert rec.variants("_fwd_kernel (decode/attn.py:5)") == 1 and rec.variants("_fwd_kernel") == 4
