"""explain is pure: variants in, causes out. Table-driven, no Triton."""

import subprocess
import sys

import pytest

from jitguard.events import Cause, CompileEvent, ParamSpec
from jitguard.explain import describe_spec, explain_recompile, fix_hint, nearest_variant
from jitguard.render_text import format_event_line


def i32(spec, value):
    return ParamSpec("int", "i32", spec, observed=value)


@pytest.mark.parametrize("spec, words", [
    (i32("one", 1), "the constant 1 (specialized int)"),
    (i32("div16", 16), "int32 divisible by 16"),
    (i32("div16", 64), "int32 divisible by 16 (value 64)"),
    (i32("plain", 17), "int32, value 17"),
    (ParamSpec("int", "i32", "plain"), "int32 not divisible by 16"),
    (ParamSpec("int", "i64", "off", observed=2**31), "int64 (not specialized), value 2147483648"),
    (ParamSpec("ptr", "*bf16", "aligned16"), "pointer to bf16, 16-byte aligned"),
    (ParamSpec("ptr", "*bf16", "unaligned", observed={"align": 2}),
     "pointer to bf16, not 16-byte aligned (address % 16 = 2)"),
    (ParamSpec("constexpr", "constexpr", value=128), "constexpr 128"),
    (ParamSpec("none"), "None"),
    (ParamSpec("float", "fp32"), "fp32"),
])
def test_describe_spec(spec, words):
    assert describe_spec(spec) == words


def test_every_changed_parameter_is_listed_not_just_the_first():
    old = {"num_tokens": i32("div16", 16), "stride": i32("div16", 16), "x": ParamSpec("ptr", "*bf16", "aligned16")}
    new = {"num_tokens": i32("plain", 17), "stride": i32("plain", 20), "x": ParamSpec("ptr", "*bf16", "aligned16")}
    causes = explain_recompile(new, {"num_warps": 4}, [(old, {"num_warps": 4})])
    assert [(c.param, c.before, c.after) for c in causes] == [
        ("num_tokens", "int32 divisible by 16", "int32, value 17"),
        ("stride", "int32 divisible by 16", "int32, value 20"),
    ]
    assert fix_hint(causes) == 'do_not_specialize_on_alignment=["num_tokens", "stride"]'


def test_nearest_earlier_variant_is_the_reference():
    far = ({"a": i32("one", 1), "b": i32("one", 1)}, {})
    near = ({"a": i32("plain", 3), "b": i32("one", 1)}, {})
    new = ({"a": i32("plain", 5), "b": i32("div16", 32)}, {})
    assert nearest_variant(new, [far, near]) == 1
    causes = explain_recompile(*new, [far, near])
    assert [c.param for c in causes] == ["b"]
    assert causes[0].advice == "do_not_specialize"  # b took the value 1


def test_first_compile_has_no_causes_and_identical_key_says_so():
    params = {"n": i32("plain", 3)}
    assert explain_recompile(params, {}, []) == []
    causes = explain_recompile(params, {}, [(dict(params), {})])
    assert causes[0].param == "(none)" and "cache was cleared" in causes[0].message


def test_log_line_is_grepable_and_carries_the_fix():
    event = CompileEvent(kernel="fused_moe_kernel", file="/x/fused_moe.py", line=297, call_site="/x/layer.py:88",
                         variant=3, compile_ms=412.4,
                         causes=[Cause("num_valid_tokens", "int32 divisible by 16", "int32, value 17",
                                       "do_not_specialize"),
                                 Cause("EM", "int32 divisible by 16", "int32, value 33", "do_not_specialize")])
    line = format_event_line(event)
    assert line.startswith("[jitguard] recompile fused_moe_kernel#3 (")
    assert "412 ms, called from " in line
    assert line.endswith('num_valid_tokens: int32 divisible by 16 -> int32, value 17; '
                         'EM: int32 divisible by 16 -> int32, value 33; '
                         'fix: do_not_specialize=["num_valid_tokens", "EM"]')


def test_explain_imports_no_triton():
    code = "import sys, jitguard.explain; print('triton' in sys.modules or 'torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"


def test_constexprs_moving_together_are_a_tile_config_not_a_leak():
    def variant(block_m, block_n, warps):
        return ({"BLOCK_M": ParamSpec("constexpr", "constexpr", value=block_m),
                 "BLOCK_N": ParamSpec("constexpr", "constexpr", value=block_n)}, {"num_warps": warps})
    earlier = [variant(16, 64, 4), variant(32, 64, 4)]
    causes = explain_recompile(*variant(64, 128, 8), earlier)
    assert {c.param for c in causes} == {"BLOCK_M", "BLOCK_N", "num_warps"}
    assert all(c.advice == "expected" for c in causes)
    alone = explain_recompile(*variant(128, 64, 4), earlier)  # BLOCK_M alone took a third value
    assert [(c.param, c.advice) for c in alone] == [("BLOCK_M", "constexpr_values")]


def test_log_line_calls_an_all_expected_variant_what_it_is():
    event = CompileEvent(kernel="gemm", variant=2, compile_ms=10.0,
                         causes=[Cause("BLOCK_M", "constexpr 16", "constexpr 64", "expected")])
    assert format_event_line(event).startswith("[jitguard] new variant (expected) gemm#2 (")


def _tiled(l_spec, block):
    return ({"L": i32(l_spec, 16 if l_spec == "div16" else 17),
             "BLK": ParamSpec("constexpr", "constexpr", value=block)}, {"num_warps": 4})


@pytest.mark.parametrize("launches, blamed", [
    # a length alternating classes while the wrapper alternates tile configs: each variant after the
    # first config switch is the length's, explained against the variant of the same BLK
    ([("div16", 64), ("plain", 128), ("plain", 64), ("div16", 128)], [{"L", "BLK"}, {"L"}, {"L"}]),
    ([("div16", 64), ("div16", 128), ("plain", 128), ("plain", 64)], [{"BLK"}, {"L"}, {"L"}]),
    # no earlier variant of this config: nearest overall, config change named
    ([("div16", 64), ("div16", 128)], [{"BLK"}]),
])
def test_a_variant_is_explained_against_the_same_tile_config(launches, blamed):
    variants = [_tiled(*launch) for launch in launches]
    got = [{c.param for c in explain_recompile(*variants[i], variants[:i])} for i in range(1, len(variants))]
    assert got == blamed
