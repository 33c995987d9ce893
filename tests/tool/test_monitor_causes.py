"""Every recompile cause of FACTS.md 1, with real compiles through the offline backend.

Counts are Triton's own (the real binder and cache); jitguard must name each cause by parameter.
"""

import pytest
import torch

import jitguard
from jitguard import triton_compat
from tests import kernels_for_tests as k


@pytest.fixture(autouse=True)
def offline_backend():
    """Each test starts with empty in-memory caches (later compiles hit the disk cache: still a variant)."""
    for kernel in vars(k).values():
        jit_fn = triton_compat.unwrap_jit_function(kernel)
        if jit_fn is not None:
            for cache in triton_compat.all_kernel_caches(jit_fn):
                cache.clear()
    with jitguard.offline():
        yield


def _run(kernel, n, x=None, y=None, **kwargs):
    x = torch.zeros(4096) if x is None else x
    y = torch.zeros(4096) if y is None else y
    kwargs.setdefault("BLOCK", 64)
    kernel[(1,)](x, y, n, **kwargs)


def _causes(event):
    return {c.param: c for c in event.causes}


def test_int_one_div16_plain_gives_three_variants_and_names_the_argument():
    with jitguard.watch() as rec:
        for n in (1, 2, 3, 16, 17, 32):
            _run(k.add_one_kernel, n)
    assert rec.variants("add_one_kernel") == 3
    specs = [e.params["n"].spec for e in rec.events]
    assert specs == ["one", "plain", "div16"]
    second, third = rec.events[1], rec.events[2]
    assert _causes(second)["n"].before == "the constant 1 (specialized int)"
    assert _causes(second)["n"].after == "int32, value 2"
    assert _causes(second)["n"].advice == "do_not_specialize"
    assert list(_causes(third)) == ["n"]  # nothing else changed
    assert _causes(third)["n"].after == "int32 divisible by 16"


@pytest.mark.parametrize("kernel", [k.add_one_dns_name, k.add_one_dns_index], ids=["by-name", "by-index"])
def test_do_not_specialize_gives_one_variant(kernel):
    with jitguard.watch() as rec:
        for n in (1, 2, 3, 16, 17, 32):
            _run(kernel, n)
    assert rec.variants(kernel.__name__) == 1
    assert rec.events[0].params["n"].spec == "off"


def test_misspelled_do_not_specialize_is_ignored_by_triton_and_reported(capsys):
    with jitguard.watch() as rec:
        for n in (1, 2, 16):
            _run(k.add_one_misspelled, n)
    assert rec.variants("add_one_misspelled") == 3
    err = capsys.readouterr().err
    assert "do_not_specialize lists 'nn', which is not a parameter; Triton ignores it silently" in err


def test_do_not_specialize_on_alignment_still_specializes_one():
    with jitguard.watch() as rec:
        for n in (1, 16, 17, 32):
            _run(k.add_one_dnsa, n)
    assert rec.variants("add_one_dnsa") == 2
    assert [e.params["n"].spec for e in rec.events] == ["one", "noalign"]
    # The alignment demotion keeps the value-1 variant on purpose (the alternative a costly full
    # demotion offers): the report does not advise the full demotion again.
    cause = _causes(rec.events[1])["n"]
    assert (cause.before, cause.after) == ("the constant 1 (specialized int)",
                                           "int32 (alignment not specialized), value 16")
    assert cause.advice == "expected" and "do_not_specialize_on_alignment" in cause.message


def test_div16_plain_flip_without_one_advises_on_alignment():
    with jitguard.watch() as rec:
        for n in (48, 49):
            _run(k.add_one_kernel, n, BLOCK=32)
    cause = _causes(rec.events[1])["n"]
    assert (cause.before, cause.after) == ("int32 divisible by 16 (value 48)", "int32, value 49")
    assert cause.advice == "do_not_specialize_on_alignment"


def test_int32_to_int64_at_2_pow_31_even_with_do_not_specialize():
    with jitguard.watch() as rec:
        _run(k.add_one_dns_name, 5, BLOCK=16)
        _run(k.add_one_dns_name, 2**31, BLOCK=16)
    assert rec.variants("add_one_dns_name") == 2
    cause = _causes(rec.events[1])["n"]
    assert cause.advice == "int64"
    assert "int64" in cause.after and "int32" in cause.before


def test_int64_annotation_plus_do_not_specialize_gives_one_variant():
    with jitguard.watch() as rec:
        for n in (1, 5, 16, 2**31, 2**31 + 16):
            _run(k.add_one_int64, n)
    assert rec.variants("add_one_int64") == 1


def test_pointer_alignment_from_slicing():
    x = torch.zeros(4096)
    with jitguard.watch() as rec:
        _run(k.add_one_kernel, 33, x=x, BLOCK=128)
        _run(k.add_one_kernel, 33, x=x[1:], BLOCK=128)
    cause = _causes(rec.events[1])["x_ptr"]
    assert cause.before == "pointer to fp32, 16-byte aligned"
    assert cause.after == "pointer to fp32, not 16-byte aligned (address % 16 = 4)"
    assert cause.advice == "caller_alignment"


def test_dtype_change_is_expected():
    with jitguard.watch() as rec:
        _run(k.add_one_kernel, 33, BLOCK=256)
        _run(k.add_one_kernel, 33, x=torch.zeros(4096, dtype=torch.float16),
             y=torch.zeros(4096, dtype=torch.float16), BLOCK=256)
    causes = _causes(rec.events[1])
    assert set(causes) == {"x_ptr", "y_ptr"}
    assert causes["x_ptr"].after == "pointer to fp16, 16-byte aligned"
    assert causes["x_ptr"].advice == "expected"


def test_constexpr_values_advice_after_three_values():
    with jitguard.watch() as rec:
        for block in (16, 32, 64):
            _run(k.add_one_kernel, 33, BLOCK=block)
    assert [e.params["BLOCK"].value for e in rec.events] == [16, 32, 64]
    assert _causes(rec.events[1])["BLOCK"].advice == "expected"
    assert _causes(rec.events[2])["BLOCK"].advice == "constexpr_values"
    assert _causes(rec.events[2])["BLOCK"].before == "constexpr 32"


def test_num_warps_is_a_launch_option_cause():
    with jitguard.watch() as rec:
        _run(k.add_one_kernel, 33, BLOCK=512)
        _run(k.add_one_kernel, 33, BLOCK=512, num_warps=8)
    cause = _causes(rec.events[1])["num_warps"]
    assert (cause.before, cause.after, cause.advice) == ("num_warps=4", "num_warps=8", "expected")


def test_autotune_compiles_each_config_and_says_so():
    kernel = k.make_autotuned_kernel()
    with jitguard.watch() as rec:
        kernel[(1,)](torch.zeros(4096), torch.zeros(4096), 100)
    assert rec.variants("add_one_autotuned_kernel") == 2
    assert all(e.autotuning for e in rec.events)
    causes = _causes(rec.events[1])
    assert {"BLOCK", "num_warps"} <= set(causes)


def test_heuristics_constexpr_recompiles_per_power_of_two():
    with jitguard.watch() as rec:
        for n in (3, 4, 5, 9, 10):
            k.add_one_heuristic[(1,)](torch.zeros(64), torch.zeros(64), n)
    assert rec.variants("add_one_heuristic") == 3  # BLOCK = 4, 8, 16
    assert [e.params["BLOCK"].value for e in rec.events] == [4, 8, 16]


def test_manual_warmup_is_recorded():
    with jitguard.watch() as rec:
        k.add_one_kernel.warmup(torch.zeros(64), torch.zeros(64), 7, BLOCK=8, grid=(1,))
    assert rec.events and rec.events[0].is_manual_warmup


def test_event_fields_are_filled():
    with jitguard.watch() as rec:
        _run(k.add_one_kernel, 77, BLOCK=8)
    event = rec.events[0]
    assert event.kernel == "add_one_kernel"
    assert event.file.endswith("kernels_for_tests.py") and event.line > 0
    assert event.call_site.startswith(__file__)
    assert event.compile_ms is not None and event.compile_ms > 0
    assert event.options["num_warps"] == 4
    assert event.triton_version == triton_compat.TRITON_VERSION
    assert event.phase == "warmup" and event.variant >= 1 and event.key
    # Known on every Triton: from the compilation listener (3.4+), else from the cache entry's age.
    assert (event.arrived, event.disk_cache_hit) in (("cold", False), ("disk", True))


def test_an_option_passed_explicitly_at_its_default_is_named():
    with jitguard.watch() as rec:
        _run(k.add_one_kernel, 33, BLOCK=1024)
        _run(k.add_one_kernel, 33, BLOCK=1024, num_warps=4)  # the default, but passed: a new key
    assert rec.variants("add_one_kernel") == 2
    cause = _causes(rec.events[1])["num_warps"]
    assert (cause.before, cause.after) == ("num_warps not passed", "num_warps=4 passed")
