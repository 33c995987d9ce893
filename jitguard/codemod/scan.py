"""Static recompile risks in Triton and Gluon kernels: one check per rule over each `jit` function.

Each finding names a rule, the file, line and column, the kernel and the parameter; a parameter
gets one finding, the other causes folded into its message (`also`), but for JG109, which asks
for another edit and stands alone. Parameters are judged by name only where the name is
unambiguous (`param_names`), otherwise by use (`param_uses`: masks, loops and position divisors,
followed into the `@triton.jit` helpers a kernel calls; pitches) and by what the file's launches
pass (`launch_sites`: floats, bool flags, ints computed from a count, counts only known at run time), the
launches of other files that import the kernel included (`cross_file_launches`). Rules (id, name):

- JG101 token-count-specialized (warning): an int parameter that is a per-call count is
  specialized; every call moves it among `== 1`, `% 16 == 0` and other -> up to 3 compiles per
  other key. A count by its name (`num_tokens`, `M`), or by what a launch of the file passes it: an
  int read back from a tensor (`(y != -100).sum().item()`, `int(t.item())`), `len(seqs)`,
  `x.numel()` of a tensor whose shape the source does not fix, or arithmetic over those, however
  the body uses it (a divisor is specialized like a bound). Advice `do_not_specialize`.
- JG102 size-specialized (info): an int parameter named like a model dimension (`hidden`, `N`,
  `head_dim`), or one that multiplies a position (a layout pitch), is used as a size and
  specialized. Fine for model dimensions. Never on floats (never specialized).
- JG103 runtime-size-constexpr (warning): a `tl.constexpr` named like a token count (one compile
  per value), unless it is a bool flag. Advice `constexpr_values`.
- JG104 unknown-name-in-demotion-list (warning): `do_not_specialize` names a parameter that does
  not exist, or an index out of range; Triton ignores it silently.
- JG105 constexpr-in-demotion-list (warning): `do_not_specialize` lists a `tl.constexpr`
  parameter; Triton raises a CompilationError at the first compile.
- JG106 derived-stride-specialized: an int computed from a count where the kernel is launched
  (`stride_sh = cdiv(L, BLK)` passed beside `L`: warning), or, in a kernel with a per-call count,
  a stride that is an outer dimension of a buffer whose token axis comes later ([G, T, X]:
  `stride_g = T * X`) or the group stride of a padded scale buffer (info). Advice `do_not_specialize`.
- JG107 runtime-bound-specialized (warning): an int not named like a model dimension bounds a
  mask or a loop (`offs < n`, `range(0, n, BLOCK)`, `tl.range`, in the kernel or a helper it calls)
  and is specialized: judged from use, so `n`, `L`, `kv_len` count. Advice `do_not_specialize`.
- JG108 heuristic-from-count (warning): `@triton.heuristics` derives a constexpr from a count
  (`EVEN = n % BLOCK == 0`, `next_power_of_2(n)`): new values of the count compile new variants
  whatever `do_not_specialize` says. Advice `constexpr_values`.
- JG109 autotune-key-count (warning): `@triton.autotune(key=[...])` holds a count: every new
  value re-benchmarks every config. Advice `bucket`: `jitguard.autotune(..., bucket={"n": "pow2"})`.

A `# jitguard: ignore` or `# jitguard: ignore[JG101,JG106]` comment on the parameter's line, the
`def` line or a decorator line of the kernel silences findings there.
"""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from jitguard.codemod.cross_file_helpers import HELPER_RULES, helper_calls, imported_functions
from jitguard.codemod.files import SourceError, read_source
from jitguard.codemod.kernels import (
    DEMOTION_OPTIONS,
    KernelParam,
    TritonKernel,
    autotune_calls,
    configs_argument,
    dotted_name,
    find_kernels,
    might_contain_kernels,
    parameter_defaults,
    parse_source,
    where_to_add,
)
from jitguard.codemod.launch_sites import LaunchFacts, by_position, launch_facts, merged_facts, named_by
from jitguard.codemod.param_names import (
    OUTER_AXES,
    TOKEN_AXES,
    is_model_dimension_name,
    is_stride_name,
    is_token_count_name,
    stride_axis,
)
from jitguard.codemod.param_uses import HelperUses, ParamUses, parameter_uses, short_text
from jitguard.events import listed_parameter


@dataclass(frozen=True)
class Rule:
    """A scan rule: id, short name, severity, the advice code its findings carry, one-line summary."""

    id: str
    name: str
    severity: str  # "warning" | "info"
    advice: str | None
    summary: str = ""


RULES = {
    rule.id: rule
    for rule in (
        Rule("JG101", "token-count-specialized", "warning", "do_not_specialize",
             "int count (by name or by launch) not demoted"),
        Rule("JG102", "size-specialized", "info", None, "model-dimension int used as a size"),
        Rule("JG103", "runtime-size-constexpr", "warning", "constexpr_values",
             "tl.constexpr named like a token count"),
        Rule("JG104", "unknown-name-in-demotion-list", "warning", None, "do_not_specialize names no parameter"),
        Rule("JG105", "constexpr-in-demotion-list", "warning", None, "do_not_specialize lists a tl.constexpr"),
        Rule("JG106", "derived-stride-specialized", "info", "do_not_specialize",
             "int computed from a count (a stride) not demoted"),
        Rule("JG107", "runtime-bound-specialized", "warning", "do_not_specialize",
             "int bounding a mask/loop not demoted"),
        Rule("JG108", "heuristic-from-count", "warning", "constexpr_values",
             "@triton.heuristics constexpr from a count"),
        Rule("JG109", "autotune-key-count", "warning", "bucket", "autotune key holds a count: re-tunes"),
    )
}
# When one parameter has several findings, the first of these is reported and the rest folded in.
PRIORITY = ("JG105", "JG104", "JG101", "JG107", "JG103", "JG108", "JG106", "JG102")


@dataclass(frozen=True)
class Finding:
    """One static finding (the `findings[]` record of `jitguard scan --json`)."""

    rule: str
    file: str
    line: int
    kernel: str
    param: str | None
    message: str
    advice: str | None
    severity: str
    name: str
    qualname: str = ""  # `Class.kernel` when the kernel is defined inside a class or function
    column: int = 1  # 1-based, like ruff
    also: tuple[str, ...] = ()  # other rules this parameter triggers, folded into this finding
    # For a function made a kernel by several jit calls, which call: "as `wide`, line 12" (else "").
    binding: str = ""

    def to_json(self) -> dict[str, object]:
        """The JSON record: rule, file, line, column, kernel, param, message, advice (+ severity, name, ...)."""
        record = asdict(self)
        record["also"] = list(self.also)
        return record


@dataclass
class FileScan:
    """What scanning one file gave: findings, kernels seen, or the error that stopped it."""

    path: str
    findings: list[Finding]
    kernels: int
    error: str | None = None
    module_path: str = ""  # the file on disk (none for stdin): where other files' imports point
    # (module, name) of the jit functions this file's kernels call through imports
    # (cross_file_helpers): device helpers of other files.
    helper_calls: frozenset[tuple[str, str]] = frozenset()
    kernel_names: frozenset[str] = frozenset()  # the kernels this file defines
    # (module ref, name, facts by position) of each kernel of another file this file launches
    # (`from .ops import k` then `k[grid](...)`), for cross_file_launches to hand to the file defining it.
    launches_elsewhere: tuple[tuple[str, str, LaunchFacts], ...] = ()


FLOAT_ANNOTATIONS = ("float", "float16", "float32", "float64", "bfloat16", "fp32", "fp16")
SUPPRESSION = re.compile(r"#\s*jitguard:\s*ignore(?:\[([A-Za-z0-9_,\s]+)\])?")


def _suppressed(lines: list[str], line: int, rule: str) -> bool:
    if not 1 <= line <= len(lines):
        return False
    match = SUPPRESSION.search(lines[line - 1])
    if match is None:
        return False
    listed = match.group(1)
    return listed is None or rule in {item.strip() for item in listed.split(",")}


def _column(lines: list[str], line: int, text: str | None) -> int:
    """1-based column of `text` as a word on `line` (1 when absent)."""
    if text and 1 <= line <= len(lines):
        match = re.search(rf"\b{re.escape(text)}\b", lines[line - 1])
        if match:
            return match.start() + 1
    return 1


def called_names(kernels: list[TritonKernel]) -> set[str]:
    """Names of functions called inside these kernels (`helper(...)`, `mod.helper(...)`)."""
    names: set[str] = set()
    for kernel in kernels:
        for node in kernel.nodes():
            if isinstance(node, ast.Call):
                func = node.func
                if isinstance(func, ast.Attribute):
                    names.add(func.attr)
                elif isinstance(func, ast.Name):
                    names.add(func.id)
    return names


def _demotion_hint(kernel: TritonKernel, param: KernelParam) -> str:
    """What to do for a parameter that is not demoted in every case: where to add it."""
    listed = kernel.demotions.get("do_not_specialize")
    if listed is None:
        return "add it to do_not_specialize"
    if listed.literal:
        return "add it to do_not_specialize"
    return where_to_add(listed, [param.name], kernel)


def _configs_count(kernel: TritonKernel) -> int | None:
    for autotune in autotune_calls(kernel):
        configs = configs_argument(autotune)
        if isinstance(configs, (ast.List, ast.Tuple)):
            return len(configs.elts)
    return None


def _constant_of_type(expression: ast.expr | None, kind: type) -> bool:
    if isinstance(expression, ast.UnaryOp):
        expression = expression.operand
    return isinstance(expression, ast.Constant) and type(expression.value) is kind


def used_only_as_condition(kernel: TritonKernel, name: str) -> bool:
    """True when every read of `name` in the body is a condition (`if FLAG:`, `not FLAG`, `A and FLAG`)."""
    conditions: set[int] = set()
    reads = 0
    for node in kernel.nodes():
        if isinstance(node, (ast.If, ast.IfExp, ast.While)):
            conditions.add(id(node.test))
        elif isinstance(node, ast.BoolOp):
            conditions.update(id(value) for value in node.values)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            conditions.add(id(node.operand))
        elif isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load):
            reads += 1
    named = [node for node in kernel.nodes() if isinstance(node, ast.Name) and node.id == name
             and isinstance(node.ctx, ast.Load)]
    return reads > 0 and all(id(node) in conditions for node in named)


@dataclass
class _KernelFacts:
    """What the rules judge one kernel by: its uses, its launches, and which ints are per-call counts."""

    kernel: TritonKernel
    uses: ParamUses
    launches: LaunchFacts
    defaults: dict[str, ast.expr]
    runtime_ints: list[KernelParam] = field(default_factory=list)
    counts: dict[str, str] = field(default_factory=dict)  # parameter -> why it is a per-call count
    kinds: dict[str, str] = field(default_factory=dict)  # runtime int -> "count" | "bound" | "derived" | "size"

    @property
    def demoted(self) -> set[str]:
        """Parameters out of either specialization list in every case."""
        return self.kernel.demoted("do_not_specialize") | self.kernel.demoted("do_not_specialize_on_alignment")

    def is_float(self, param: KernelParam) -> bool:
        """Annotated float, defaulting to a float, or passed a float literal at a launch: never specialized."""
        annotated = param.annotation is not None and param.annotation.split(".")[-1] in FLOAT_ANNOTATIONS
        return annotated or _constant_of_type(self.defaults.get(param.name), float) or (
            param.name in self.launches.floats)

    def is_flag(self, param: KernelParam) -> bool:
        """A bool: defaulting to True/False, passed one at a launch, or read only as a condition."""
        return (_constant_of_type(self.defaults.get(param.name), bool) or param.name in self.launches.flags
                or used_only_as_condition(self.kernel, param.name))


def _looks_like_pointer(param: KernelParam, uses: ParamUses, launches: LaunchFacts | None = None) -> bool:
    lowered = param.name.lower()
    return (param.name in uses.pointers or lowered.endswith(("ptr", "ptrs", "_pointer")) or lowered.startswith("ptr_")
            or (launches is not None and param.name in launches.tensors))


def _judge_ints(facts: _KernelFacts) -> None:
    """Fill `runtime_ints`, `kinds` and `counts`: token names first, then uses decide the ambiguous names."""
    kernel, uses = facts.kernel, facts.uses
    facts.runtime_ints = [param for param in kernel.params if not param.is_constexpr and not facts.is_float(param)
                          and not _looks_like_pointer(param, uses, facts.launches)]
    for param in facts.runtime_ints:
        name = param.name
        if is_token_count_name(name):
            facts.kinds[name], facts.counts[name] = "count", "the token count"
        elif is_stride_name(name):
            continue
        elif (name in uses.bounds and not is_model_dimension_name(name) and name not in uses.pitches
              and name not in facts.launches.constants):
            facts.kinds[name], facts.counts[name] = "bound", "a run-time bound"
        elif name in uses.sizes:
            facts.kinds[name] = "size"
    # an int computed from another parameter's count at the launch names that parameter; one the launch computes
    # from a count only known there (`mask.sum().item()`) names it; then ints computed from those
    _judge_derived(facts)
    _judge_launched_counts(facts)
    _judge_derived(facts)
    for param in kernel.params:
        if param.is_constexpr and _is_count_constexpr(facts, param):
            facts.counts.setdefault(param.name, "the token count")


def _judge_derived(facts: _KernelFacts) -> None:
    """Ints a launch computes from a parameter already judged a count: "derived", naming the likeliest source."""
    counted = set(facts.counts)
    for param in facts.runtime_ints:
        # the token counts first, then run-time bounds: the likeliest cause is named
        sources = sorted(facts.launches.derived.get(param.name, set()) & counted,
                         key=lambda name: (facts.kinds.get(name) != "count", name))
        if sources and param.name not in counted:
            facts.kinds[param.name] = "derived"
            facts.counts[param.name] = f"computed from `{sources[0]}`"


def _judge_launched_counts(facts: _KernelFacts) -> None:
    """Ints that a launch passes a count only known at run time (`mask.sum().item()`, `len(seqs)`): counts however
    the body uses them (a divisor is specialized like a bound). Model-dimension names, strides and flags excepted."""
    launched = [param.name for param in facts.runtime_ints
                if param.name not in facts.counts and param.name in facts.launches.runtime
                and not is_model_dimension_name(param.name) and not is_stride_name(param.name)
                and not facts.is_flag(param)]
    for name in launched:
        if facts.launches.derived.get(name, set()) & set(launched):
            continue  # computed from another of these parameters: `_judge_derived` names that one
        source, line, file = facts.launches.runtime[name]
        where = f"{file}:{line}" if file else f"line {line}"
        facts.kinds[name], facts.counts[name] = "count", f"a run-time count (`{source}`, {where})"


def _is_count_constexpr(facts: _KernelFacts, param: KernelParam) -> bool:
    name = param.name
    return (not name.isupper() and is_token_count_name(name) and not name.lower().startswith("max_")
            and not facts.is_flag(param))


def runtime_kinds(kernel: TritonKernel, helpers: HelperUses | None = None,
                  launches: LaunchFacts | None = None) -> dict[str, str]:
    """Each runtime (non-constexpr) parameter's kind as the rules judge it: "ptr", "float", "flag" or "int"."""
    params = {param.name for param in kernel.params}
    uses = helpers.of(kernel) if helpers is not None else parameter_uses(kernel.nodes(), params)
    facts = _KernelFacts(kernel, uses, launches or LaunchFacts(), parameter_defaults(kernel))
    kinds = {}
    for param in kernel.params:
        if param.is_constexpr:
            continue
        if facts.is_float(param):
            kinds[param.name] = "float"
        elif _looks_like_pointer(param, uses, facts.launches):
            kinds[param.name] = "ptr"
        elif facts.is_flag(param):
            kinds[param.name] = "flag"
        else:
            kinds[param.name] = "int"
    return kinds


@dataclass(frozen=True)
class _Hit:
    """One rule's finding before it becomes a `Finding`: where, which parameter, what to say."""

    line: int
    param: str | None
    message: str
    severity: str | None = None  # None: the rule's own


def _listed_entries(kernel: TritonKernel) -> Iterator[tuple[str, int, str | int]]:
    """(option, line, entry) of every demotion list entry (a computed list: every branch's entries)."""
    for option in DEMOTION_OPTIONS:
        listed = kernel.demotions.get(option)
        if listed is None:
            continue
        anywhere = sorted(listed.listed_anywhere(), key=lambda entry: (isinstance(entry, str), str(entry)))
        for entry in listed.entries if listed.literal else anywhere:
            yield option, listed.line, entry


def _jg104_unknown_names(facts: _KernelFacts) -> Iterator[_Hit]:
    kernel = facts.kernel
    names = sorted(param.name for param in kernel.params)
    for option, line, entry in _listed_entries(kernel):
        if isinstance(entry, int) and listed_parameter(entry, [param.name for param in kernel.params]) is None:
            yield _Hit(line, None, f"{option} lists index {entry} but `{kernel.name}` has {len(kernel.params)} "
                                   "parameters (numbered from 0); Triton ignores it silently")
        elif isinstance(entry, str) and entry not in names:
            close = difflib.get_close_matches(entry, names, n=1, cutoff=0.75)
            hint = f" (did you mean `{close[0]}`?)" if close else ""
            yield _Hit(line, entry, f"{option} lists `{entry}`, which is not a parameter of `{kernel.name}`{hint}; "
                                    "Triton ignores it silently")


def _jg105_listed_constexprs(facts: _KernelFacts) -> Iterator[_Hit]:
    kernel = facts.kernel
    for option, line, entry in _listed_entries(kernel):
        if isinstance(entry, int):
            listed = listed_parameter(entry, [p.name for p in kernel.params])
            param = kernel.param(listed) if listed is not None else None
        else:
            param = kernel.param(entry)
        if param is not None and param.is_constexpr:
            yield _Hit(line, param.name, f"{option} lists `{param.name}`, a tl.constexpr: Triton raises a "
                                         "CompilationError at the first compile; remove it from the list")


def _jg101_token_counts(facts: _KernelFacts) -> Iterator[_Hit]:
    for param in facts.runtime_ints:
        if facts.kinds.get(param.name) == "count" and param.name not in facts.demoted:
            use = facts.uses.sizes.get(param.name)
            if is_token_count_name(param.name):
                what = f"`{param.name}` looks like a token/batch count{f', used in {use}' if use else ''} and"
            else:  # a count by what its launch passes
                used = f", used in {use}, and" if use else " and, although the kernel only computes with it,"
                what = f"`{param.name}` is passed {facts.counts[param.name]} where the kernel is launched{used}"
            yield _Hit(param.line, param.name,
                       f"{what} is specialized: values 1, multiples of 16 and others compile separate variants; "
                       f"{_demotion_hint(facts.kernel, param)}")


def _jg107_runtime_bounds(facts: _KernelFacts) -> Iterator[_Hit]:
    for param in facts.runtime_ints:
        if facts.kinds.get(param.name) == "bound" and param.name not in facts.demoted:
            yield _Hit(param.line, param.name,
                       f"`{param.name}` bounds or splits a position ({facts.uses.bounds[param.name]}) and is "
                       "specialized: values 1, multiples of 16 and others compile separate variants; unless it is "
                       f"fixed per model, {_demotion_hint(facts.kernel, param)}")


def _jg102_model_sizes(facts: _KernelFacts) -> Iterator[_Hit]:
    for param in facts.runtime_ints:
        if facts.kinds.get(param.name) == "size" and param.name not in facts.demoted:
            pitch = ", multiplies a position (a layout pitch)," if param.name in facts.uses.pitches else ""
            yield _Hit(param.line, param.name,
                       f"`{param.name}` is used in {facts.uses.sizes[param.name]}{pitch} and is specialized (1 / "
                       "multiple of 16 / other); fine for a model dimension, demote it if it changes from call to call")


def _jg103_count_constexprs(facts: _KernelFacts) -> Iterator[_Hit]:
    for param in facts.kernel.params:
        if param.is_constexpr and _is_count_constexpr(facts, param):
            yield _Hit(param.line, param.name,
                       f"`{param.name}: tl.constexpr` looks like a runtime size: every new value compiles a new "
                       "variant; make it a runtime argument (or bucket its values)")


def _derived_strides(kernel: TritonKernel, candidates: list[KernelParam]) -> list[KernelParam]:
    """Strides computed from the token count: the stride of an axis laid out outside the token
    axis (batch, group, expert) of a tensor that also has a token-axis stride, or the group
    stride of a scale buffer ([groups, align(T, 4), X])."""
    axes = [(param, *stride_axis(param.name)) for param in kernel.params if is_stride_name(param.name)]
    derived = []
    for param in candidates:
        tensor, axis = stride_axis(param.name)
        has_token_axis = any(other is not param and other_tensor == tensor and other_axis in TOKEN_AXES
                             for other, other_tensor, other_axis in axes)
        scale_group = bool({"scale", "scales", "sf", "s"} & set(tensor.split("_"))) and axis in ("group", "groups", "g")
        if (axis in OUTER_AXES and has_token_axis) or scale_group:
            derived.append(param)
    return derived


def _jg106_derived_strides(facts: _KernelFacts) -> Iterator[_Hit]:
    """Ints computed from a count: proven at a launch of this file (warning), or a stride whose name says
    it walks an axis outside the token axis (info), once the kernel has a per-call count to demote."""
    kernel, demoted = facts.kernel, facts.demoted
    for param in facts.runtime_ints:
        if facts.kinds.get(param.name) == "derived" and param.name not in demoted:
            yield _Hit(param.line, param.name,
                       f"`{param.name}` is {facts.counts[param.name]} where the kernel is launched, so it flips "
                       "classes (1 / multiple of 16 / other) as the count changes, even with the count demoted: "
                       "demote it too", "warning")
    if not any(facts.kinds.get(p.name) in ("count", "bound") for p in facts.runtime_ints):
        return
    strides = [p for p in facts.runtime_ints if is_stride_name(p.name) and p.name not in demoted
               and facts.kinds.get(p.name) != "derived"]
    for param in _derived_strides(kernel, strides):
        yield _Hit(param.line, param.name,
                   f"stride `{param.name}` walks an axis laid out outside the token axis ([B, T, X]: it is T * X), "
                   "so it flips classes as the token count changes, even with the count demoted: demote it too")


def _jg108_heuristics_from_counts(facts: _KernelFacts) -> Iterator[_Hit]:
    """Heuristics that derive a constexpr from a count."""
    for heuristic in facts.kernel.heuristics:
        read = [name for name in heuristic.reads if name in facts.counts]
        if not read:
            continue
        shown = heuristic.expression.body if isinstance(heuristic.expression, ast.Lambda) else heuristic.expression
        calls = {(dotted_name(n.func) or "").rsplit(".", 1)[-1] for n in ast.walk(heuristic.expression)
                 if isinstance(n, ast.Call)}
        if "next_power_of_2" in calls:
            variants = "one variant per power of two it reaches"
        elif any(isinstance(n, (ast.Compare, ast.BoolOp)) for n in ast.walk(heuristic.expression)):
            variants = "2 variants (True/False) as the count changes"
        else:
            variants = "one variant per distinct value"
        yield _Hit(heuristic.line, heuristic.name,
                   f"heuristic `{heuristic.name} = {short_text(shown, 60)}` derives a tl.constexpr from "
                   f"{facts.counts[read[0]]} `{read[0]}`: {variants}, even with `{read[0]}` in do_not_specialize; "
                   "derive it in the kernel at run time, or bucket the count")


def _jg109_autotune_key_counts(facts: _KernelFacts) -> Iterator[_Hit]:
    configs = _configs_count(facts.kernel)
    every = f"all {configs} configs" if configs else "every config"
    for key in facts.kernel.autotune_keys:
        if key.bucketed or key.name not in facts.counts:
            continue
        yield _Hit(key.line, key.name,
                   f"autotune key `{key.name}` is {facts.counts[key.name]}: every new value re-benchmarks {every} "
                   f"(on the request path in a server); bucket it: `jitguard fix --bucket {facts.kernel.name}:"
                   f"{key.name}` makes it `jitguard.autotune(..., bucket={{\"{key.name}\": \"pow2\"}})` (the "
                   "kernel's module then imports jitguard), or drop it from key=[...]")


# One check per rule, in `RULES` order; a device helper gets only `HELPER_RULES`.
RULE_CHECKS: dict[str, Callable[[_KernelFacts], Iterator[_Hit]]] = {
    "JG101": _jg101_token_counts,
    "JG102": _jg102_model_sizes,
    "JG103": _jg103_count_constexprs,
    "JG104": _jg104_unknown_names,
    "JG105": _jg105_listed_constexprs,
    "JG106": _jg106_derived_strides,
    "JG107": _jg107_runtime_bounds,
    "JG108": _jg108_heuristics_from_counts,
    "JG109": _jg109_autotune_key_counts,
}
# Findings of these rules stand alone; the others on one parameter are merged into one finding.
# JG109 asks for another edit (bucket the autotune key), so it is counted and fixed as itself.
SEPARATE_RULES = frozenset({"JG109"})


def _merge_per_parameter(findings: list[Finding]) -> list[Finding]:
    """One finding per (kernel, parameter): the highest-priority rule, the others folded in."""
    by_param: dict[tuple[str, str], list[Finding]] = {}
    merged: list[Finding] = []
    for finding in findings:
        if finding.param is None or finding.rule in SEPARATE_RULES:
            merged.append(finding)
            continue
        key = (finding.qualname, finding.param)
        if key not in by_param:
            by_param[key] = []
            merged.append(finding)  # placeholder keeps source order
        by_param[key].append(finding)
    result = []
    for finding in merged:
        group = by_param.get((finding.qualname, finding.param or "")) if finding.param is not None else None
        if not group or finding.rule in SEPARATE_RULES:
            result.append(finding)
            continue
        group.sort(key=lambda f: PRIORITY.index(f.rule) if f.rule in PRIORITY else len(PRIORITY))
        head, rest = group[0], group[1:]
        if rest:
            extra = " ".join(f"Also {f.rule}: {f.message}" for f in rest)
            severity = "warning" if any(f.severity == "warning" for f in group) else head.severity
            head = replace(head, message=f"{head.message}. {extra}", also=tuple(f.rule for f in rest),
                           severity=severity)
        result.append(head)
    return result


def scan_kernel(
    kernel: TritonKernel,
    file: str,
    lines: list[str] | None = None,
    device_helper: bool = False,
    enabled: Collection[str] | None = None,
    helpers: HelperUses | None = None,
    launches: LaunchFacts | None = None,
) -> list[Finding]:
    """Apply every rule (or those in `enabled`) to one kernel found by `find_kernels`.

    A `device_helper` (a jit function other kernels call) is inlined into its callers and never
    specialized on its own, so only the rules about its decorator lists apply. `helpers` follows
    calls into the file's other jit functions; `launches` is what this file's launches pass to the
    kernel. For one of several jit calls on one function, each finding says which (`Finding.binding`).
    """
    lines = lines or []
    kernel_lines = {kernel.line, kernel.first_line, kernel.decorator_line}
    if kernel.node is None or device_helper:
        # A device helper (or a kernel with no body to read) keeps the rules of HELPER_RULES: its decorator's
        # lists. The same set decides which findings a helper called from another file keeps.
        checks = [rule for rule in RULE_CHECKS if rule in HELPER_RULES]
    else:
        checks = list(RULE_CHECKS)
    params = {param.name for param in kernel.params}
    uses = helpers.of(kernel) if helpers is not None else parameter_uses(kernel.nodes(), params)
    facts = _KernelFacts(kernel, uses, launches or LaunchFacts(), parameter_defaults(kernel))
    _judge_ints(facts)
    found: list[Finding] = []
    for rule_id in checks:
        if enabled is not None and rule_id not in enabled:
            continue
        rule = RULES[rule_id]
        for hit in RULE_CHECKS[rule_id](facts):
            if any(_suppressed(lines, where, rule_id) for where in {hit.line, *kernel_lines}):
                continue
            found.append(Finding(rule.id, file, hit.line, kernel.name, hit.param, hit.message, rule.advice,
                                 hit.severity or rule.severity, rule.name, kernel.qualname,
                                 _column(lines, hit.line, hit.param), binding=kernel.binding_label))
    return sorted(_merge_per_parameter(found), key=lambda finding: (finding.line, finding.column))


def source_lines(source: bytes) -> list[str]:
    """Lines numbered as Python numbers them (str.splitlines would also split on form feeds)."""
    return re.split(r"\r\n|\r|\n", source.decode("utf-8", errors="replace"))


def scan_source(source: bytes, file: str, enabled: Collection[str] | None = None) -> tuple[list[Finding], int]:
    """Findings and kernel count for one file's bytes; raises SyntaxError/ValueError if unparsable.

    `enabled` limits the rules applied (`--select`/`--ignore`); None applies all. A jit function
    that a kernel of this source calls is judged as a device helper; one that other files call is
    for :func:`cross_file_helpers.drop_cross_file_helper_findings` to judge.
    """
    scanned = _scan_with_calls(source, file, enabled, None)
    return scanned.findings, scanned.kernels


@dataclass
class _Scanned:
    """What one source gave: findings, kernels, and what cross-file passes need (see `FileScan`)."""

    findings: list[Finding] = field(default_factory=list)
    kernels: int = 0
    helper_calls: frozenset[tuple[str, str]] = frozenset()
    kernel_names: frozenset[str] = frozenset()
    launches_elsewhere: tuple[tuple[str, str, LaunchFacts], ...] = ()


# `name[grid](`: how a launch is spelled, in a file with kernels or without (one another file defines).
_LAUNCH_SPELLING = re.compile(rb"\b([A-Za-z_]\w*)[ \t]*\[[^\[\]]*\][ \t]*\(")


def _scan_with_calls(source: bytes, file: str, enabled: Collection[str] | None, path: Path | None,
                     elsewhere: Mapping[str, Sequence[tuple[str, LaunchFacts]]] | None = None) -> _Scanned:
    if not might_contain_kernels(source):
        return _Scanned(launches_elsewhere=_launches_in_wrapper_file(source, path))
    tree = parse_source(source)
    kernels = find_kernels(source, tree)
    lines = source_lines(source)
    called = called_names(kernels)
    helpers = HelperUses({kernel.name: kernel for kernel in reversed(kernels)})
    launches = launch_facts(tree, {name: [param.name for param in kernel.params]
                                   for kernel in kernels for name in (kernel.name, *kernel.bound_as)}, source)
    findings = [
        finding
        for kernel in kernels
        for finding in scan_kernel(kernel, file, lines, kernel.name in called, enabled, helpers,
                                   _kernel_launches(kernel, launches, elsewhere))
    ]
    names = {name for kernel in kernels for name in (kernel.name, *kernel.bound_as)}
    return _Scanned(findings, len(kernels), helper_calls(tree, (kernel.nodes() for kernel in kernels), path),
                    frozenset(names), _launches_of_imports(tree, source, path, names))


def _launches_of_imports(tree: ast.Module, source: bytes, path: Path | None,
                         local: Collection[str]) -> tuple[tuple[str, str, LaunchFacts], ...]:
    """(module ref, name, facts by position) of each launch of a name this file imports (`from .ops import k`)."""
    launched = {match.group(1).decode() for match in _LAUNCH_SPELLING.finditer(source)} - set(local)
    if path is None or not launched:
        return ()  # reading the imports costs a walk of the whole tree: only where a launch is spelled
    imported = {local_name: bound for local_name, bound in imported_functions(tree, path).items()
                if local_name in launched}
    found = by_position(tree, list(imported), source)
    return tuple((*imported[name], facts) for name, facts in sorted(found.items()))


def _launches_in_wrapper_file(source: bytes, path: Path | None) -> tuple[tuple[str, str, LaunchFacts], ...]:
    """Launches of imported kernels in a file without kernels; one that does not parse launches nothing here
    (scan never reported errors of files without kernels)."""
    if path is None or not _LAUNCH_SPELLING.search(source):
        return ()
    try:
        tree = parse_source(source)
    except (SyntaxError, ValueError, RecursionError):
        return ()
    return _launches_of_imports(tree, source, path, ())


def _kernel_launches(kernel: TritonKernel, launches: dict[str, LaunchFacts],
                     elsewhere: Mapping[str, Sequence[tuple[str, LaunchFacts]]] | None = None) -> LaunchFacts | None:
    """The launches of `kernel` under any of its names (one kernel bound twice: each binding's own), and those
    of other files (`elsewhere`: kernel name -> (file, facts by position from `launch_sites.by_position`))."""
    names = kernel.bound_as if kernel.several_bindings and kernel.bound_as else (kernel.name, *kernel.bound_as)
    found = [launches[name] for name in names if name in launches]
    params = [param.name for param in kernel.params]
    found += [named_by(facts, params, file) for file, facts in (elsewhere or {}).get(kernel.name, ())]
    return merged_facts(found)


def scan_file(path: Path, enabled: Collection[str] | None = None, display: str | None = None,
              elsewhere: Mapping[str, Sequence[tuple[str, LaunchFacts]]] | None = None) -> FileScan:
    """Scan one file; read and syntax errors come back in `error`, never as exceptions. `elsewhere`: kernel
    name -> what other files' launches of it pass (`cross_file_launches`), judged with this file's own."""
    name = display or str(path)
    try:
        source = read_source(path)
        scanned = _scan_with_calls(source, name, enabled, path, elsewhere)
    except SourceError as exc:
        return FileScan(name, [], 0, str(exc))
    except SyntaxError as exc:
        return FileScan(name, [], 0, f"syntax error at line {exc.lineno}: {exc.msg}")
    except (ValueError, RecursionError) as exc:
        return FileScan(name, [], 0, f"cannot parse: {exc}")
    return FileScan(name, scanned.findings, scanned.kernels, module_path=str(path), helper_calls=scanned.helper_calls,
                    kernel_names=scanned.kernel_names, launches_elsewhere=scanned.launches_elsewhere)


def scan_task(task: tuple[Path, Collection[str] | None, str | None]) -> FileScan:
    """`scan_file(*task)`, one picklable argument for the worker pool: (path, enabled rules, display name)."""
    return scan_file(*task)
