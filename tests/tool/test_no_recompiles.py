"""`jitguard.no_recompiles()`: which compiles fail a block, what the failure says, and what it leaves behind.

Keys-only offline backend (compile=False): hooks, keys and variant counts are Triton's own, the
compiler is skipped. Kernels live in this file so no other test warms them up.
"""

import inspect
import os
import threading

import pytest
import torch
import triton
import triton.language as tl

import jitguard
from jitguard.runtime.monitor import RecompileError


@triton.jit
def add_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1, mask=mask)


@triton.jit
def other_kernel(x_ptr, n, BLOCK: tl.constexpr):
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
        def tuned_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
            offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offsets < n
            tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1, mask=mask)

        _tuned.append(tuned_kernel)
    return _tuned[0]


X = torch.zeros(256)
Y = torch.zeros(256)


def add(n):
    add_kernel[(1,)](X, Y, n, BLOCK=64)


def other(n):
    other_kernel[(1,)](X, n, BLOCK=64)


def line_of(fn, text):
    """'file:line' of the line of `fn` containing `text` (call sites in messages are checked against it)."""
    lines, start = inspect.getsourcelines(fn)
    for offset, line in enumerate(lines):
        if text in line:
            return f"tests/tool/test_no_recompiles.py:{start + offset}"
    raise AssertionError(f"{text!r} not in {fn.__name__}")


@pytest.fixture(autouse=True)
def keys_only(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "triton-cache"))
    with jitguard.offline(compile=False):
        yield


def test_new_variant_after_warmup_fails_listing_cause_call_site_and_fix(monkeypatch):
    # paths print relative to the repository root
    monkeypatch.chdir(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    with pytest.raises(RecompileError) as failure:
        with jitguard.no_recompiles(warmup=1):
            add(16)
            add(17)
    message = str(failure.value)
    assert message.splitlines()[0] == ("Expected no new Triton variants after warm-up (the first call of each "
                                       "kernel), but 1 was compiled:")
    assert f"add_kernel (tests/tool/test_no_recompiles.py:{add_kernel.fn.__code__.co_firstlineno}): " \
           "1 variant in warm-up, 1 new after it" in message
    assert f"variant #2 at call 2, called from {line_of(add, 'add_kernel[')}" in message
    assert "    n: int32 divisible by 16 -> int32, value 17" in message
    assert '  fix: @triton.jit(do_not_specialize_on_alignment=["n"])' in message
    assert [e.kernel for e in failure.value.events] == ["add_kernel"]


def test_every_new_variant_is_listed_and_the_fix_covers_all_causes():
    with pytest.raises(RecompileError) as failure:
        with jitguard.no_recompiles():
            add(16)
            add(17)
            add(1)
            add(18)  # same class as 17: a cache hit, not listed
    message = str(failure.value)
    assert "but 2 were compiled" in message
    assert "variant #2 at call 2" in message and "variant #3 at call 3" in message
    assert "n: int32, value 17 -> the constant 1 (specialized int)" in message
    # n took the value 1: do_not_specialize, not the weaker alignment-only fix
    assert '  fix: @triton.jit(do_not_specialize=["n"])' in message
    assert "do_not_specialize_on_alignment" not in message


def test_calls_in_the_same_class_pass_and_report_the_warmup_compile():
    with jitguard.no_recompiles() as guard:
        for n in (32, 48, 64, 4096):
            add(n)
    assert [(c.kernel.name, c.call_number, c.after_warmup) for c in guard.compiles] == [("add_kernel", 1, False)]
    assert guard.new_variants == []


def test_a_variant_compiled_before_the_block_still_counts_inside_it():
    add(17)  # an earlier test compiled the `int32, value 17` variant: it is in Triton's cache
    with pytest.raises(RecompileError, match="variant #2 at call 2"):
        with jitguard.no_recompiles():
            add(16)
            add(17)


def test_isolate_false_judges_only_what_actually_compiles_inside():
    add(16)
    add(17)  # warmed up before the block
    with jitguard.no_recompiles(warmup=0, isolate=False) as guard:
        add(17)
        add(16)
    assert guard.compiles == []
    with pytest.raises(RecompileError, match="variant #3 at call 1"):
        with jitguard.no_recompiles(warmup=0, isolate=False):
            add(1)


def test_warmup_counts_calls_per_kernel_inside_the_block():
    add(1)  # calls before the block do not count towards its warm-up
    with jitguard.no_recompiles(warmup=2) as guard:
        add(16)
        other(16)  # another kernel has its own count
        add(17)
        other(17)
        add(32)
    assert guard.calls == {c: 3 if c.name == "add_kernel" else 2 for c in guard.calls}
    with pytest.raises(RecompileError, match=r"\(the first 2 calls of each kernel\), but 1 was compiled"):
        with jitguard.no_recompiles(warmup=2):
            add(16)
            add(32)
            add(17)


def test_kernels_restricts_the_check_and_names_must_exist():
    with jitguard.no_recompiles(kernels=["other_kernel"]):
        add(16)
        add(17)
        other(16)
        other(32)
    with pytest.raises(RecompileError, match=r"\(the first call of other_kernel\)"):
        with jitguard.no_recompiles(kernels=[other_kernel]):
            other(16)
            other(17)
    with pytest.raises(ValueError, match=r"no kernel named 'ad_kernel' was called inside the block "
                                         r"\(kernels called: add_kernel\); misspelled\?"):
        with jitguard.no_recompiles(kernels="ad_kernel"):
            add(16)


def test_autotune_benchmark_compiles_belong_to_the_call_that_triggered_them():
    x, y = torch.zeros(256), torch.zeros(256)
    with jitguard.no_recompiles() as guard:
        tuned_kernel()[(1,)](x, y, 64)  # benchmarks both configs: two variants, one call
        tuned_kernel()[(1,)](x, y, 64)
    assert [(c.call_number, c.event.autotuning) for c in guard.compiles] == [(1, True), (1, True)]
    with pytest.raises(RecompileError) as failure:
        with jitguard.no_recompiles():
            tuned_kernel()[(1,)](x, y, 64)
            tuned_kernel()[(1,)](x, y, 65)  # new autotune key, n no longer divisible by 16
    message = str(failure.value)
    assert "but 2 were compiled" in message
    assert message.count("at call 2 [autotune config]") == 2


def test_manual_warmup_calls_may_compile_and_do_not_count():
    with jitguard.no_recompiles(warmup=0) as guard:
        add_kernel.warmup(X, Y, 16, BLOCK=64, grid=(1,))
        add_kernel.warmup(X, Y, 17, BLOCK=64, grid=(1,))
        add(16)
        add(17)
    assert len(guard.compiles) == 2 and not guard.new_variants
    assert guard.calls == dict.fromkeys(guard.calls, 2)


def test_warmup_zero_failure_explains_isolation():
    with pytest.raises(RecompileError, match="with warmup=0 an isolated block compiles on each kernel's first call"):
        with jitguard.no_recompiles(warmup=0):
            add(16)


@pytest.mark.parametrize("warmup", [-1, 1.5, True, "1"])
def test_bad_warmup_is_a_clear_error(warmup):
    with pytest.raises(ValueError, match=r"warmup must be an int >= 0 \(calls per kernel\), not"):
        jitguard.no_recompiles(warmup=warmup)


def test_a_kernels_entry_that_is_not_a_kernel_is_a_clear_error():
    with pytest.raises(TypeError, match=r"42 is neither a kernel name nor a @triton.jit kernel"):
        jitguard.no_recompiles(kernels=[42])


def test_an_error_in_the_block_propagates_with_the_new_variants_as_a_note():
    with pytest.raises(KeyError) as failure:
        with jitguard.no_recompiles():
            add(16)
            add(17)
            raise KeyError("the test's own failure")
    assert any("n: int32 divisible by 16 -> int32, value 17" in note for note in failure.value.__notes__)


def test_nested_blocks_judge_their_own_calls():
    with jitguard.no_recompiles() as outer:
        add(16)
        with jitguard.no_recompiles() as inner:
            add(16)  # compiles again in the inner block (isolated): not new for the outer one
        add(16)
    assert len(inner.compiles) == 1 and len(outer.compiles) == 1 and not outer.new_variants


def test_the_block_restores_run_methods_and_keeps_earlier_variants():
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.jit import JITFunction
    before = (JITFunction.run, Autotuner.run)
    add(16)
    with jitguard.no_recompiles():
        add(16)
        add(32)
    assert (JITFunction.run, Autotuner.run) == before
    with jitguard.watch() as recorder:
        add(16)  # compiled before and inside the block: a cache hit after it
    assert recorder.events == []


def test_calls_from_another_thread_count():
    with pytest.raises(RecompileError, match="variant #2 at call 2"):
        with jitguard.no_recompiles():
            add(16)
            worker = threading.Thread(target=add, args=(17,))
            worker.start()
            worker.join()


def test_usable_as_a_decorator_and_after_importing_the_submodule():
    import jitguard.guard.recompile_guard  # the implementing module may be imported first

    @jitguard.no_recompiles(warmup=1)
    def decode_steps(sizes):
        for n in sizes:
            add(n)

    decode_steps([16, 32])
    with pytest.raises(RecompileError):
        decode_steps([16, 17])


# --- the price of each advised demotion, and autotune tunings (issues 14 and 15) -------------------

@triton.jit
def scale_kernel(x_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements  # bounds a mask over contiguous offsets: the vector width depends on n % 16
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)


def scale(n):
    x = torch.zeros(n)
    scale_kernel[(triton.cdiv(n, 256),)](x, torch.empty_like(x), n, BLOCK=256)


def nested_kernel():
    @triton.jit
    def made_in_a_function(x_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.arange(0, BLOCK)
        tl.store(x_ptr + offsets, tl.zeros([BLOCK], dtype=tl.float32), mask=offsets < n)
    return made_in_a_function


def _failure(block) -> str:
    with pytest.raises(RecompileError) as failure:
        block()
    return str(failure.value)


def test_a_costly_demotion_is_shown_with_its_price_before_the_fix():
    def block():
        with jitguard.no_recompiles():
            scale(1024)
            scale(1000)
    lines = _failure(block).splitlines()
    (price,) = [line for line in lines if "price" in line]
    assert price.startswith("  price: n_elements: costly: ") and "become 32-bit" in price
    assert "; instead: keep the specialization and cover its classes" in price
    assert lines.index(price) == lines.index('  fix: @triton.jit(do_not_specialize_on_alignment=["n_elements"])') - 1


def test_a_kernel_the_cost_check_cannot_import_says_price_unknown_and_why():
    kernel = nested_kernel()
    reason = "made_in_a_function is not a module-level name of tests.tool.test_no_recompiles"

    def block():
        with jitguard.no_recompiles():
            kernel[(1,)](X, 16, BLOCK=64)
            kernel[(1,)](X, 17, BLOCK=64)
    lines = _failure(block).splitlines()
    (price,) = [line for line in lines if "price" in line]
    assert price.startswith(f"  price unknown: n: {reason}")


def test_a_kernel_of_a_script_is_never_priced_by_running_the_script():
    guard = jitguard.no_recompiles()
    with pytest.raises(RecompileError):
        with guard:
            add(16)
            add(17)
    for item in guard.compiles:
        item.event.module = "__main__"  # as if add_kernel were defined in `python serve.py`
    (prices,) = guard.advised_prices(budget_s=0.5).values()
    assert prices == {"n": {"verdict": "unknown", "detail": "add_kernel is defined in a script run as __main__, which "
                                                            "the cost check never runs; `jitguard report` on its log "
                                                            "prices it"}}


@pytest.mark.parametrize("sizes, headline, new_key", [
    ((64, 64, 128), "but 1 autotune tuning ran:", "n=128 "),  # same class: a re-tune, no compile
    ((64, 65), "but 2 were compiled and 1 autotune tuning ran:", "n=65 "),  # a new class: compiles too
])
def test_a_tuning_after_warmup_fails_naming_the_varying_key_and_the_remedy(sizes, headline, new_key):
    x, y = torch.zeros(256), torch.zeros(256)
    kernel = tuned_kernel()

    def block():
        with jitguard.no_recompiles():
            for n in sizes:
                kernel[(1,)](x, y, n)
    message = _failure(block)
    assert headline in message
    call_site = line_of(test_a_tuning_after_warmup_fails_naming_the_varying_key_and_the_remedy, "kernel[(1,)](x, y, n)")
    assert f"autotune tuning at call {len(sizes)}, called from {call_site}: {new_key}(2 configs timed" in message
    values = ", ".join(str(n) for n in dict.fromkeys(sizes))
    assert f"  autotune key n took 2 values ({values}): each new value benchmarks every config again" in message
    assert '  remedy: bucket it: jitguard.autotune(..., bucket={"n": "pow2"})' in message


def test_tunings_during_warmup_calls_pass():
    x, y = torch.zeros(256), torch.zeros(256)
    with jitguard.no_recompiles(warmup=2) as guard:
        tuned_kernel()[(1,)](x, y, 64)
        tuned_kernel()[(1,)](x, y, 128)  # second call: still warm-up
    assert [t.after_warmup for t in guard.tunings] == [False, False] and not guard.new_tunings


def test_a_new_bucket_of_a_bucketed_kernel_is_named_as_a_bucket_and_warmup_is_the_remedy():
    x, y = torch.zeros(256), torch.zeros(256)
    kernel = jitguard.autotune([triton.Config({"BLOCK": 64}, num_warps=2), triton.Config({"BLOCK": 128}, num_warps=4)],
                               key=["n"], bucket={"n": "pow2"})(add_kernel)

    def block():
        with jitguard.no_recompiles():
            kernel[(1,)](x, y, 48)
            kernel[(1,)](x, y, 64)  # same bucket: no tuning
            kernel[(1,)](x, y, 80)  # bucket 128: tunes
    message = _failure(block)
    assert "autotune key n took 2 pow2 buckets (64, 128): each new bucket benchmarks every config again" in message
    assert "  remedy: tune these buckets during warm-up" in message and 'bucket={"n"' not in message
