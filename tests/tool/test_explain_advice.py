"""Every advice rule of DESIGN.md ("Advice rules"), and the merge of advice across variants: pure tables."""

from __future__ import annotations

from typing import Any

import pytest

from jitguard.events import Cause, ParamSpec
from jitguard.explain import explain_recompile, fix_for_advice, fix_hint, strongest_advice
from jitguard.render_text import decorator_fix


def int_arg(value: int) -> ParamSpec:
    ty = "i64" if value >= 2**31 else "i32"
    spec = "one" if value == 1 else "div16" if value % 16 == 0 else "plain"
    return ParamSpec("int", ty, spec, observed=value)


def ptr_arg(dtype: str = "bf16", align: int = 0) -> ParamSpec:
    return ParamSpec("ptr", f"*{dtype}", "aligned16" if align == 0 else "unaligned", observed={"align": align})


def constexpr(value: Any) -> ParamSpec:
    return ParamSpec("constexpr", "constexpr", value=value)


def run(variants: list[tuple[dict[str, ParamSpec], dict[str, Any]]]) -> list[Cause]:
    """Compile each variant in turn as Triton would (a class seen before compiles nothing); every cause."""
    earlier: list[tuple[dict, dict]] = []
    causes: list[Cause] = []
    for params, options in variants:
        signature = ({n: (s.kind, s.type, s.spec, repr(s.value)) for n, s in params.items()}, options)
        if any(signature == ({n: (s.kind, s.type, s.spec, repr(s.value)) for n, s in p.items()}, o)
               for p, o in earlier):
            continue
        causes += explain_recompile(params, options, earlier)
        earlier.append((params, options))
    return causes


def ints(*values: int) -> list:
    return [({"n": int_arg(v)}, {}) for v in values]


# (rule, variants in call order, the advice each recompile carries, the merged advice, the fix)
RULES = [
    ("one -> div16: do_not_specialize", ints(1, 16), ["do_not_specialize"], "do_not_specialize",
     'do_not_specialize=["n"]'),
    ("div16 -> one", ints(16, 1), ["do_not_specialize"], "do_not_specialize", 'do_not_specialize=["n"]'),
    ("one -> plain", ints(1, 17), ["do_not_specialize"], "do_not_specialize", 'do_not_specialize=["n"]'),
    ("plain -> one", ints(17, 1), ["do_not_specialize"], "do_not_specialize", 'do_not_specialize=["n"]'),
    ("one, div16, plain", ints(1, 16, 17), ["do_not_specialize", "do_not_specialize"], "do_not_specialize",
     'do_not_specialize=["n"]'),
    ("div16 -> plain, 1 seen before: still do_not_specialize", ints(1, 16, 17),
     ["do_not_specialize", "do_not_specialize"], "do_not_specialize", 'do_not_specialize=["n"]'),
    ("div16 -> plain, never 1: on_alignment", ints(16, 17), ["do_not_specialize_on_alignment"],
     "do_not_specialize_on_alignment", 'do_not_specialize_on_alignment=["n"]'),
    ("plain -> div16, never 1", ints(7, 64, 9), ["do_not_specialize_on_alignment"],
     "do_not_specialize_on_alignment", 'do_not_specialize_on_alignment=["n"]'),
    ("on_alignment first, then 1: merged to do_not_specialize", ints(16, 17, 1),
     ["do_not_specialize_on_alignment", "do_not_specialize"], "do_not_specialize", 'do_not_specialize=["n"]'),
    ("crossing 2**31 upward: tl.int64 and do_not_specialize", ints(16, 2**31 + 16), ["int64"], "int64",
     'do_not_specialize=["n"]; annotate n: tl.int64'),
    ("crossing 2**31 downward", ints(2**31 + 17, 17), ["int64"], "int64",
     'do_not_specialize=["n"]; annotate n: tl.int64'),
    ("int64 outranks do_not_specialize", ints(1, 16, 2**31 + 16), ["do_not_specialize", "int64"], "int64",
     'do_not_specialize=["n"]; annotate n: tl.int64'),
    ("pointer aligned16 -> unaligned: caller_alignment",
     [({"x": ptr_arg()}, {}), ({"x": ptr_arg(align=2)}, {})], ["caller_alignment"], "caller_alignment",
     'do_not_specialize_on_alignment=["x"]'),
    ("pointer unaligned -> aligned16",
     [({"x": ptr_arg(align=4)}, {}), ({"x": ptr_arg()}, {})], ["caller_alignment"], "caller_alignment",
     'do_not_specialize_on_alignment=["x"]'),
    ("constexpr taking a third value: constexpr_values",
     [({"BLOCK": constexpr(v)}, {}) for v in (16, 32, 64)], ["expected", "constexpr_values"],
     "constexpr_values", "make runtime or bucket BLOCK"),
    ("constexpr taking two values: expected",
     [({"BLOCK": constexpr(v)}, {}) for v in (16, 32)], ["expected"], "expected", ""),
    ("pointer dtype: expected", [({"x": ptr_arg("fp16")}, {}), ({"x": ptr_arg("bf16")}, {})], ["expected"],
     "expected", ""),
    ("num_warps: expected", [({}, {"num_warps": 4}), ({}, {"num_warps": 8})], ["expected"], "expected", ""),
    ("an autotune config (constexprs and num_warps together): expected",
     [({"BLOCK_M": constexpr(m), "BLOCK_N": constexpr(n)}, {"num_warps": w})
      for m, n, w in ((16, 64, 4), (32, 128, 4), (64, 256, 8))],
     ["expected"] * 5, "expected", ""),
]


@pytest.mark.parametrize("rule, variants, per_recompile, merged, fix", RULES, ids=[r[0] for r in RULES])
def test_advice_rule(rule: str, variants: list, per_recompile: list[str], merged: str, fix: str) -> None:
    causes = [c for c in run(variants) if c.param != "(none)"]
    assert [c.advice for c in causes] == per_recompile
    took_one = any(s.kind == "int" and s.spec == "one" for params, _ in variants for s in params.values())
    params = {c.param for c in causes}
    advice = {p: strongest_advice([c.advice for c in causes if c.param == p], took_value_one=took_one)
              for p in params}
    assert set(advice.values()) == {merged}
    assert fix_for_advice(advice) == fix
    assert fix_hint(causes) == fix  # the causes of one process ask for the same fix as the merge


@pytest.mark.parametrize("codes, took_one, merged", [
    ([], False, None),
    ([None, None], False, None),
    (["expected"], False, "expected"),
    (["expected", "caller_alignment"], False, "caller_alignment"),
    (["do_not_specialize_on_alignment"], False, "do_not_specialize_on_alignment"),
    (["do_not_specialize_on_alignment"], True, "do_not_specialize"),  # another process passed 1
    (["caller_alignment"], True, "caller_alignment"),  # a pointer is never "one"
    (["do_not_specialize_on_alignment", "do_not_specialize"], False, "do_not_specialize"),
    (["do_not_specialize", "int64"], False, "int64"),
    (["constexpr_values", "expected"], False, "constexpr_values"),
    (["a_newer_code"], False, "a_newer_code"),
])
def test_strongest_advice_across_variants_and_processes(codes: list, took_one: bool, merged: str | None) -> None:
    assert strongest_advice(codes, took_value_one=took_one) == merged


@pytest.mark.parametrize("causes, hint, decorator", [
    ([Cause("n", "", "", "do_not_specialize")], 'do_not_specialize=["n"]', '@triton.jit(do_not_specialize=["n"])'),
    ([Cause("n", "", "", "do_not_specialize"), Cause("n", "", "", "do_not_specialize_on_alignment"),
      Cause("s", "", "", "do_not_specialize_on_alignment")],
     'do_not_specialize=["n"]; do_not_specialize_on_alignment=["s"]',
     '@triton.jit(do_not_specialize=["n"], do_not_specialize_on_alignment=["s"])'),
    ([Cause("n", "", "", "int64")], 'do_not_specialize=["n"]; annotate n: tl.int64',
     '@triton.jit(do_not_specialize=["n"]); annotate n: tl.int64'),
    ([Cause("B", "", "", "constexpr_values")], "make runtime or bucket B", "make runtime or bucket B"),
    ([Cause("x", "", "", "expected")], "", ""),
])
def test_the_fix_is_spelled_from_one_set_of_parts(causes: list[Cause], hint: str, decorator: str) -> None:
    assert fix_hint(causes) == hint
    assert decorator_fix(causes) == decorator
