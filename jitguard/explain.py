"""Why a kernel compiled again: compare a new variant with the nearest earlier one, per parameter.

Pure: no I/O, no Triton. Input is what the monitor recorded (`ParamSpec` per parameter, launch
options); output is a list of `Cause`, each naming a parameter by its source name, its class
before and after in words, and an advice code (the keys of `jitguard.events.OPTION_FOR_ADVICE`).
The advice merge lives here too: the strongest advice per parameter across variants and processes,
and the fix it asks for.

    >>> from jitguard.events import ParamSpec
    >>> old = {"n": ParamSpec("int", "i32", "div16", observed=16)}
    >>> new = {"n": ParamSpec("int", "i32", "plain", observed=17)}
    >>> [(c.param, c.before, c.after) for c in explain_recompile(new, {}, [(old, {})])]
    [('n', 'int32 divisible by 16', 'int32, value 17')]
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from jitguard.events import CONFIG_OPTIONS, LAUNCH_OPTIONS, OPTION_FOR_ADVICE, Cause, ParamSpec, constexpr_words

Variant = tuple[dict[str, ParamSpec], dict[str, Any]]  # (params, launch options)

_INT_WORDS = {"i1": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
              "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64"}
_INT_SPEC_CLASSES = {"one", "div16", "plain", "off", "noalign"}
# Options worth naming when they differ between variants (others are derived or rarely set).
_NAMED_OPTIONS = (*CONFIG_OPTIONS, "debug", *(o for o in LAUNCH_OPTIONS if o not in CONFIG_OPTIONS),
                  "instrumentation_mode")


def _type_words(ty: str | None) -> str:
    if not ty:
        return "?"
    if ty.startswith("*"):
        return f"pointer to {ty[1:]}"
    return _INT_WORDS.get(ty, ty)


# A specialization class (ParamSpec.spec) in the fewest words, as prices name the classes a demotion merges.
SPEC_CLASS_WORDS = {"one": "== 1", "div16": "% 16 == 0", "aligned16": "16-byte aligned", "plain": "other",
                    "unaligned": "unaligned", "off": "not specialized", "noalign": "not specialized on alignment"}


def describe_spec(spec: ParamSpec) -> str:
    """A parameter's class in words, e.g. 'int32 divisible by 16' or 'pointer to bf16, 16-byte aligned'."""
    if spec.kind == "constexpr":
        return f"constexpr {constexpr_words(spec.value)}"
    if spec.kind == "none":
        return "None"
    if spec.kind == "int":
        if spec.spec == "one":
            return "the constant 1 (specialized int)"
        base = _type_words(spec.type)
        shown = isinstance(spec.observed, int) and not isinstance(spec.observed, bool)
        if spec.spec == "div16":
            return f"{base} divisible by 16" + (f" (value {spec.observed})" if shown and spec.observed != 16 else "")
        if spec.spec == "off":
            return f"{base} (not specialized)" + (f", value {spec.observed}" if shown else "")
        if spec.spec == "noalign":
            return f"{base} (alignment not specialized)" + (f", value {spec.observed}" if shown else "")
        return f"{base}, value {spec.observed}" if shown else f"{base} not divisible by 16"
    if spec.kind == "ptr":
        base = _type_words(spec.type)
        if spec.spec == "aligned16":
            return f"{base}, 16-byte aligned"
        if spec.spec == "unaligned":
            align = spec.observed.get("align") if isinstance(spec.observed, dict) else None
            return f"{base}, not 16-byte aligned" + (f" (address % 16 = {align})" if align else "")
        return base
    if spec.kind == "tuple":
        return f"tuple {spec.value!r}" if spec.value is not None else "tuple"
    return _type_words(spec.type)


def _int_advice(name: str, before: ParamSpec, after: ParamSpec, history: Sequence[ParamSpec]) -> tuple[str, str]:
    if "i64" in (before.type, after.type) and before.type != after.type:
        return "int64", (f"{name} crossed 2**31: annotate it `{name}: tl.int64` and add it to do_not_specialize "
                         "(do_not_specialize alone still compiles an i32 and an i64 variant)")
    classes = {s.spec for s in history} | {before.spec, after.spec}
    if classes <= {"one", "noalign"}:
        return "expected", (f"{name} is in do_not_specialize_on_alignment, which keeps its value-1 variant: "
                            "2 variants (== 1 and other) by design; do_not_specialize would merge them, "
                            "at the price the cost check gives")
    if "one" in classes:
        return "do_not_specialize", (f"{name} took the value 1 and other values: do_not_specialize "
                                     "compiles one variant for all of them")
    return "do_not_specialize_on_alignment", (
        f"{name} flips between divisible-by-16 and not: do_not_specialize_on_alignment keeps one variant "
        "(it still specializes the value 1: if {0} can be 1, use do_not_specialize)".format(name))


def _cause_for_param(name: str, before: ParamSpec | None, after: ParamSpec,
                     history: Sequence[ParamSpec]) -> Cause | None:
    if before is None:
        return Cause(name, "absent", describe_spec(after), "expected", f"{name} is new in this variant")
    words_before, words_after = describe_spec(before), describe_spec(after)
    if before.kind == "constexpr" or after.kind == "constexpr":
        if before.kind == after.kind and before.value == after.value:
            return None
        distinct = {repr(s.value) for s in history if s.kind == "constexpr"} | {repr(before.value), repr(after.value)}
        if len(distinct) >= 3:
            return Cause(name, words_before, words_after, "constexpr_values",
                         f"{name} is a tl.constexpr that took {len(distinct)} values (one compile each): "
                         "make it a runtime argument, or bucket its values (e.g. next power of 2)")
        return Cause(name, words_before, words_after, "expected", f"constexpr {name} changed value")
    same_class = (before.kind, before.type, before.spec) == (after.kind, after.type, after.spec)
    if same_class:
        return None
    if before.kind == "int" and after.kind == "int" and {before.spec, after.spec} <= _INT_SPEC_CLASSES:
        advice, message = _int_advice(name, before, after, history)
        return Cause(name, describe_spec(before), describe_spec(after), advice, message)
    if before.kind == "ptr" and after.kind == "ptr":
        if before.type != after.type:
            return Cause(name, words_before, words_after, "expected", f"{name} changed dtype: one variant per dtype")
        return Cause(name, words_before, words_after, "caller_alignment",
                     f"{name} is sometimes 16-byte aligned and sometimes not (a sliced tensor such as x[1:]): "
                     "fix the caller's slicing, or add it to do_not_specialize_on_alignment")
    if before.kind == "none" or after.kind == "none":
        return Cause(name, words_before, words_after, "expected", f"{name} switched between None and a value")
    return Cause(name, words_before, words_after, "expected", f"{name} changed type")


def _option_causes(before: dict[str, Any], after: dict[str, Any]) -> list[Cause]:
    causes = []
    for option in _NAMED_OPTIONS:
        if option in before or option in after:
            if before.get(option) != after.get(option):
                causes.append(Cause(option, f"{option}={before.get(option)!r}", f"{option}={after.get(option)!r}",
                                    "expected", f"launch option {option} changed"))
    changed = {c.param for c in causes}
    passed_before, passed_after = before.get("passed") or {}, after.get("passed") or {}
    if "passed" in before and "passed" in after:
        for option in sorted((set(passed_before) ^ set(passed_after)) - changed):
            was = f"{option}={passed_before[option]!r} passed" if option in passed_before else f"{option} not passed"
            now = f"{option}={passed_after[option]!r} passed" if option in passed_after else f"{option} not passed"
            causes.append(Cause(option, was, now, "expected",
                                f"Triton keys a variant on the options a call passes, even when equal to the "
                                f"default: pass {option} the same way at every call site"))
    return causes


def _mark_tile_config_switches(causes: list[Cause], params: dict[str, ParamSpec]) -> None:
    """Several constexprs/options changing together is a tile-config switch, not a leaked runtime size.

    A runtime value turned constexpr (a heuristic's next_pow2(n), `num_tokens: tl.constexpr`) moves
    alone; an autotune or tile-table config moves BLOCK_M, BLOCK_N, num_warps... together.
    """
    knobs = [c for c in causes if c.param in _NAMED_OPTIONS
             or (c.param in params and params[c.param].kind == "constexpr")]
    if len(knobs) < 2:
        return
    names = ", ".join(c.param for c in knobs)
    for cause in knobs:
        if cause.advice == "constexpr_values":
            cause.advice = "expected"
            cause.message = f"{cause.param} changed with {names}: a different tile config (expected)"


def _difference(a: Variant, b: Variant) -> int:
    params_a, opts_a = a
    params_b, opts_b = b
    diff = 0
    for name in set(params_a) | set(params_b):
        pa, pb = params_a.get(name), params_b.get(name)
        if pa is None or pb is None or (pa.kind, pa.type, pa.spec, pa.value) != (pb.kind, pb.type, pb.spec, pb.value):
            diff += 1
    diff += sum(1 for o in _NAMED_OPTIONS if opts_a.get(o) != opts_b.get(o))
    diff += len(set(opts_a.get("passed") or {}) ^ set(opts_b.get("passed") or {}))
    return diff


def _tile_config(variant: Variant) -> tuple:
    """What a launch chose rather than what it was given: its constexpr values and named options."""
    params, options = variant
    constexprs = tuple(sorted((name, repr(spec.value)) for name, spec in params.items() if spec.kind == "constexpr"))
    return constexprs, tuple(repr(options.get(option)) for option in _NAMED_OPTIONS)


def nearest_variant(new: Variant, earlier: Sequence[Variant]) -> int:
    """Index of the earlier variant `new` is explained against: among those with the same constexprs
    and launch options (the same tile config), else among all, the one differing in the fewest
    parameters (latest on ties).

    Launches that alternate tile configs (BLOCK 64 for small inputs, 128 for large) would otherwise
    blame the config for a variant a runtime int caused, and miss that int's class change.
    """
    config = _tile_config(new)
    same_config = [index for index, old in enumerate(earlier) if _tile_config(old) == config]
    best, best_diff = -1, None
    for index in same_config or range(len(earlier)):
        diff = _difference(new, earlier[index])
        if best_diff is None or diff <= best_diff:
            best, best_diff = index, diff
    return best


def explain_recompile(params: dict[str, ParamSpec], options: dict[str, Any],
                      earlier: Sequence[Variant]) -> list[Cause]:
    """Every parameter and launch option that differs from the nearest earlier variant.

    Returns [] for a first compile. When nothing differs (same key, e.g. a cleared cache or another
    device), returns one cause saying so.
    """
    if not earlier:
        return []
    nearest = earlier[nearest_variant((params, options), earlier)]
    old_params, old_options = nearest
    causes: list[Cause] = []
    for name, after in params.items():
        history = [variant[0][name] for variant in earlier if name in variant[0]]
        cause = _cause_for_param(name, old_params.get(name), after, history)
        if cause is not None:
            causes.append(cause)
    causes.extend(_option_causes(old_options, options))
    _mark_tile_config_switches(causes, params)
    if not causes:
        causes.append(Cause("(none)", "same key", "same key", "expected",
                            "no parameter or option differs: the in-memory cache was cleared, or another device"))
    return causes


# When a parameter's causes carry several advice codes (across processes too), the strongest wins:
# int64 needs the annotation on top of do_not_specialize; a parameter that ever took the value 1
# needs do_not_specialize, which also covers the alignment flips.
ADVICE_PRIORITY = ("int64", "do_not_specialize", "do_not_specialize_on_alignment", "caller_alignment",
                   "constexpr_values", "expected")


def strongest_advice(codes: Iterable[str | None], took_value_one: bool = False) -> str | None:
    """The one advice for a parameter from every advice its causes carried (None if none did).

    `took_value_one`: some variant specialized the parameter as the constant 1. Then
    do_not_specialize_on_alignment (which still specializes 1) becomes do_not_specialize, the only
    fix that leaves one variant everywhere.
    """
    present = {code for code in codes if code}
    best = next((code for code in ADVICE_PRIORITY if code in present), min(present) if present else None)
    if best == "do_not_specialize_on_alignment" and took_value_one:
        return "do_not_specialize"
    return best


def without_weaker_advice(causes: Iterable[Cause]) -> list[Cause]:
    """Drop alignment-only advice for a parameter that also needs do_not_specialize (which covers it)."""
    causes = list(causes)
    strong = {c.param for c in causes if c.advice in ("do_not_specialize", "int64")}
    weak = ("do_not_specialize_on_alignment", "caller_alignment")
    return [c for c in causes if not (c.param in strong and c.advice in weak)]


@dataclass
class FixParts:
    """What a fix asks for: decorator options with their parameters, int64 annotations, constexprs to bucket."""

    options: dict[str, list[str]] = field(default_factory=dict)  # "do_not_specialize" -> ["n", ...]
    int64: list[str] = field(default_factory=list)
    bucket: list[str] = field(default_factory=list)

    def arguments(self) -> list[str]:
        """One decorator argument per option: ['do_not_specialize=["n"]', 'do_not_specialize_on_alignment=["s"]']."""
        return [f"{option}=[" + ", ".join(f'"{n}"' for n in names) + "]" for option, names in self.options.items()]

    def other_steps(self) -> list[str]:
        """What the decorator cannot say: 'annotate n: tl.int64', 'make runtime or bucket BLOCK'."""
        steps = []
        if self.int64:
            steps.append("annotate " + ", ".join(f"{n}: tl.int64" for n in self.int64))
        if self.bucket:
            steps.append("make runtime or bucket " + ", ".join(self.bucket))
        return steps


def fix_parts(causes: Iterable[Cause]) -> FixParts:
    """The fix these causes ask for, as parts; a parameter that needs do_not_specialize is not also
    listed for do_not_specialize_on_alignment."""
    causes = without_weaker_advice(causes)
    lists: dict[str, list[str]] = {}
    for cause in causes:
        option = OPTION_FOR_ADVICE.get(cause.advice or "")
        if option and cause.param not in lists.setdefault(option, []):
            lists[option].append(cause.param)
    options = {option: lists[option] for option in ("do_not_specialize", "do_not_specialize_on_alignment")
               if lists.get(option)}
    return FixParts(options=options, int64=[c.param for c in causes if c.advice == "int64"],
                    bucket=[c.param for c in causes if c.advice == "constexpr_values"])


def fix_hint(causes: Iterable[Cause]) -> str:
    """The decorator arguments that would remove these causes, e.g. 'do_not_specialize=["n"]'; '' if none.

    A parameter that needs do_not_specialize is not also listed for do_not_specialize_on_alignment.
    """
    parts = fix_parts(causes)
    return "; ".join(parts.arguments() + parts.other_steps())


def fix_for_advice(advice: dict[str, str | None]) -> str:
    """The fix for one (merged) advice code per parameter, spelled as `fix_hint` spells it."""
    return fix_hint(Cause(param, "", "", code) for param, code in advice.items() if code)


def short_path(path: str, keep: int | None = None, elided: str = ".../") -> str:
    """`path` relative to the working directory when under it; else, with `keep`, its last `keep`
    components after `elided`, or the whole path (':line' suffixes are kept either way)."""
    cwd = os.getcwd().rstrip(os.sep) + os.sep
    if path.startswith(cwd):
        return path[len(cwd):]
    pieces = path.split(os.sep)
    if keep is None or len(pieces) <= keep:
        return path
    return elided + os.sep.join(pieces[-keep:])
