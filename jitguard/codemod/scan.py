"""Static recompile risks in Triton kernels: rules over each Triton `jit` function.

Each finding names a rule, the file, line and column, the kernel and the parameter; a parameter
gets one finding, the other causes folded into its message (`also`). Rules (id, name):

- JG101 token-count-specialized (warning): an int parameter named like a token/batch/sequence
  count is specialized; every call moves it among `== 1`, `% 16 == 0` and other -> up to 3
  compiles per other key. Advice `do_not_specialize`.
- JG102 size-specialized (info): an int parameter named like a model dimension (`hidden`, `N`,
  `head_dim`) is used as a size and specialized. Fine for model dimensions.
- JG103 runtime-size-constexpr (warning): a `tl.constexpr` named like a token count (one compile
  per value). Advice `constexpr_values`.
- JG104 unknown-name-in-demotion-list (warning): `do_not_specialize` names a parameter that does
  not exist, or an index out of range; Triton ignores it silently.
- JG105 constexpr-in-demotion-list (warning): `do_not_specialize` lists a `tl.constexpr`
  parameter; Triton raises a CompilationError at the first compile.
- JG106 derived-stride-specialized (info): with the token count demoted, a stride that is an
  outer dimension of a buffer whose token axis comes later in the signature ([G, T, X]:
  `stride_g = T * X`), or the group stride of a padded scale buffer, is still specialized.
- JG107 runtime-bound-specialized (warning): an int not named like a model dimension bounds a
  mask or a loop (`offs < n`, `range(0, n, BLOCK)`, `tl.range`) and is specialized: judged from
  use, so `n` and `sl` count. Advice `do_not_specialize`.
- JG108 heuristic-from-count (warning): `@triton.heuristics` derives a constexpr from a count
  (`EVEN = n % BLOCK == 0`, `next_power_of_2(n)`): new values of the count compile new variants
  whatever `do_not_specialize` says. Advice `constexpr_values`.
- JG109 autotune-key-count (warning): `@triton.autotune(key=[...])` holds a count: every new
  value re-benchmarks every config. Bucket it (`jitguard.autotune(..., bucket={"n": "pow2"})`).

A `# jitguard: ignore` or `# jitguard: ignore[JG101,JG106]` comment on the parameter's line, the
`def` line or a decorator line of the kernel silences findings there.
"""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Collection
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from jitguard.codemod.cross_file_helpers import HELPER_RULES, helper_calls
from jitguard.codemod.files import SourceError, read_source
from jitguard.codemod.kernels import (
    DEMOTION_OPTIONS,
    KernelParam,
    TritonKernel,
    dotted_name,
    find_kernels,
    might_contain_kernels,
    parse_source,
)


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
             "int token/batch count not demoted"),
        Rule("JG102", "size-specialized", "info", None, "model-dimension int used as a size"),
        Rule("JG103", "runtime-size-constexpr", "warning", "constexpr_values",
             "tl.constexpr named like a token count"),
        Rule("JG104", "unknown-name-in-demotion-list", "warning", None, "do_not_specialize names no parameter"),
        Rule("JG105", "constexpr-in-demotion-list", "warning", None, "do_not_specialize lists a tl.constexpr"),
        Rule("JG106", "derived-stride-specialized", "info", None, "stride derived from a demoted count"),
        Rule("JG107", "runtime-bound-specialized", "warning", "do_not_specialize",
             "int bounding a mask/loop not demoted"),
        Rule("JG108", "heuristic-from-count", "warning", "constexpr_values",
             "@triton.heuristics constexpr from a count"),
        Rule("JG109", "autotune-key-count", "warning", None, "autotune key holds a count: re-tunes"),
    )
}
# When one parameter has several findings, the first of these is reported and the rest folded in.
PRIORITY = ("JG105", "JG104", "JG101", "JG107", "JG103", "JG109", "JG108", "JG106", "JG102")


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


# Words (between underscores, lower-cased) that make an int parameter a token/batch count.
TOKEN_WORDS = frozenset(
    {"token", "tokens", "tok", "toks", "seq", "seqs", "seqlen", "seqlens", "req", "reqs", "request", "requests",
     "batch", "batches", "bs", "rows"}
)
# Words that make such a name an id, an index, a flag or a per-item constant, not a count.
NOT_A_COUNT_WORDS = frozenset(
    {"id", "ids", "idx", "indices", "index", "mask", "offs", "loc", "locs", "map", "mapping", "table", "data",
     "factor", "quant", "per", "has", "is", "use", "ptr", "ptrs", "scale", "stride",
     # a count the caller has already bucketed (`total_tokens_bucket`: rounded to a power of two) takes few values
     "bucket", "buckets", "bucketed"}
)
# Whole names that count tokens in GEMM/elementwise conventions.
TOKEN_NAMES = frozenset({"M", "EM", "T", "n_elements", "numel", "n_elem", "num_elements", "n_rows", "num_rows"})
# Words that make an int a model dimension (fixed per model), not a per-call count.
MODEL_WORDS = frozenset(
    {"hidden", "dim", "dims", "head", "heads", "hd", "vocab", "col", "cols", "ncols", "feature", "features",
     "channel", "channels", "group", "groups", "expert", "experts", "kv", "embed", "emb", "intermediate", "inter",
     "ffn", "width", "height", "rank", "topk", "block", "blocks", "page", "pages", "chunk", "window", "split",
     "splits", "partition", "partitions", "layer", "layers", "classes", "bins", "bits", "stages", "warps", "k",
     "d", "h", "w", "c", "g", "e", "v", "q", "out", "in", "inp", "nheads", "headdim", "size", "stride", "strides",
     "ld", "lda", "ldb", "ldc", "eps", "step", "steps", "max", "min", "cap", "capacity", "padding", "pad", "align",
     "alignment", "num", "n",
     # Mamba's head and state dimensions (`hdim`, `dstate`)
     "hdim", "dstate"}
)
FLOAT_ANNOTATIONS = ("float", "float16", "float32", "float64", "bfloat16", "fp32", "fp16")
SUPPRESSION = re.compile(r"#\s*jitguard:\s*ignore(?:\[([A-Za-z0-9_,\s]+)\])?")


def _words(name: str) -> list[str]:
    return [word for word in name.lower().split("_") if word]


def is_token_count_name(name: str) -> bool:
    """True for names like `num_tokens`, `seq_len`, `EM`, `n_elements`, `batch_size` (not strides)."""
    words = _words(name)
    if set(words) & NOT_A_COUNT_WORDS or name.lower().startswith("max_num") or name.endswith("ptr"):
        return False  # ids, masks, pointers, buffer capacities (max_num_reqs) are no per-call count
    return name in TOKEN_NAMES or any(word in TOKEN_WORDS for word in words)


def is_model_dimension_name(name: str) -> bool:
    """True for `hidden_size`, `head_dim`, `N`, `K`, `n_cols`, `num_experts`: fixed per model.

    Upper-case names are GEMM/model conventions (`N`, `K`, `D`) unless they are token names;
    a lone `n` or `num` is not a model word on its own (`n` bounds an elementwise mask).
    """
    if name in TOKEN_NAMES:
        return False
    if name.isupper() or (len(name) <= 2 and name[:1].isupper()):
        return True
    words = _words(name)
    if words in (["n"], ["num"], ["len"], ["length"]):
        return False
    meaningful = [word for word in words if word not in ("n", "num")]
    return bool(meaningful) and any(word in MODEL_WORDS for word in meaningful)


def _is_stride_name(name: str) -> bool:
    return "stride" in _words(name) or name.lower().startswith("stride")


def _stride_axis(name: str) -> tuple[str, str]:
    """(tensor, axis) of a stride name.

    `stride_am` -> (a, m), `q_stride_t` -> (q, t), `stride_x_group` -> (x, group).
    """
    words = [word for word in _words(name) if word != "stride"]
    if not words:
        return "", ""
    if len(words) == 1:
        word = words[0]
        return (word[:-1], word[-1]) if len(word) == 2 else ("", word)
    return "_".join(words[:-1]), words[-1]


def _leftmost(node: ast.expr) -> ast.expr:
    while isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        node = node.left
    return node


def _short(node: ast.AST, limit: int = 48) -> str:
    text = ast.unparse(node)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass
class _Uses:
    sizes: dict[str, str]  # param -> first size-like use ("tl.cdiv", "a loop bound", "a comparison")
    bounds: dict[str, ast.AST]  # param -> first mask/loop bound it appears in
    pointers: set[str]


_ORDERING = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
_INDEX_SOURCES = frozenset({"arange", "program_id", "num_programs"})


def _index_names(nodes: list[ast.AST]) -> set[str]:
    """Locals holding positions (derived from `tl.arange`/`tl.program_id`, or loop variables):
    a parameter compared with one bounds a mask; one compared with loaded values does not."""
    names: set[str] = set()
    assignments: list[tuple[list[ast.expr], ast.expr]] = []
    for node in nodes:
        if isinstance(node, ast.For):
            names.update(n.id for n in ast.walk(node.target) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Assign):
            assignments.append((node.targets, node.value))
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None:
            assignments.append(([node.target], node.value))
    pending = assignments
    for _ in range(3):  # offsets built in steps: pid -> start -> offs
        waiting = []
        for targets, value in pending:
            if _is_index_expression(value, names):
                for target in targets:
                    if isinstance(target, ast.Name):
                        names.add(target.id)
                    else:
                        names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
            else:
                waiting.append((targets, value))
        if len(waiting) == len(pending):
            break
        pending = waiting
    return names


# Calls whose result is still a position when their arguments are; any other call (a load) is data.
_INDEX_PRESERVING = frozenset({"minimum", "maximum", "multiple_of", "max_contiguous", "cdiv", "where", "broadcast_to",
                               "reshape", "expand_dims", "to"})


def _is_index_expression(expression: ast.AST, index_names: set[str]) -> bool:
    if isinstance(expression, ast.Name):
        return expression.id in index_names
    if isinstance(expression, ast.Call):
        func = expression.func
        last = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if last in _INDEX_SOURCES:
            return True
        if last not in _INDEX_PRESERVING:
            return False
        inner = ([*expression.args, expression.func.value] if isinstance(expression.func, ast.Attribute)
                 else expression.args)
        return any(_is_index_expression(arg, index_names) for arg in inner)
    return any(_is_index_expression(child, index_names) for child in ast.iter_child_nodes(expression)
               if isinstance(child, ast.expr))


def _mentions(expression: ast.AST, params: set[str]) -> set[str]:
    return {node.id for node in ast.walk(expression) if isinstance(node, ast.Name) and node.id in params}


def _parameter_uses(nodes: list[ast.AST], params: set[str]) -> _Uses:
    uses = _Uses({}, {}, set())
    index_names: set[str] | None = None  # computed on the first ordering comparison
    assigned: dict[str, list[ast.expr]] = {}  # local -> the values assigned to it (`row = base_ptr + i * n`)

    def mark(expression: ast.AST, use: str, bound: ast.AST | None = None) -> None:
        for name in _mentions(expression, params):
            uses.sizes.setdefault(name, use)
            if bound is not None:
                uses.bounds.setdefault(name, bound)

    for node in nodes:
        if isinstance(node, ast.Call):
            callee = dotted_name(node.func) or ""
            last = callee.rsplit(".", 1)[-1]
            if last == "cdiv":
                for arg in node.args:
                    mark(arg, "tl.cdiv")
            elif last in ("range", "static_range"):
                for arg in node.args:
                    mark(arg, "a loop bound", node)
            elif (last in ("load", "store") or last.startswith("atomic_")) and node.args:
                base = _leftmost(node.args[0])
                if isinstance(base, ast.Name):
                    uses.pointers.add(base.id)
        elif isinstance(node, ast.Compare) and any(isinstance(op, _ORDERING) for op in node.ops):
            if index_names is None:
                index_names = _index_names(nodes)
            operands = [node.left, *node.comparators]
            for position, operand in enumerate(operands):
                # `offs < n` bounds a mask; `x < y` over loaded values is data, not a size
                others = operands[:position] + operands[position + 1 :]
                if any(_is_index_expression(other, index_names) for other in others):
                    mark(operand, "a comparison", node)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.FloorDiv, ast.Mod)):
            # `pid // sl`, `pid % sl`: a position split by a run-time extent (batch, sequence index)
            if isinstance(node.right, ast.Name) and node.right.id in params:
                if index_names is None:
                    index_names = _index_names(nodes)
                if _is_index_expression(node.left, index_names):
                    mark(node.right, "a position's divisor", node)
        elif isinstance(node, ast.Attribute) and node.attr == "dtype" and isinstance(node.value, ast.Name):
            uses.pointers.add(node.value.id)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            assigned.setdefault(node.targets[0].id, []).append(node.value)
    # A load through a local (`row = req_to_token + i * n; tl.load(row + offs)`) makes what the local was built
    # from a pointer too: the leftmost term of its sums, a few steps back.
    found = set(uses.pointers)
    for _ in range(4):
        bases = {base.id for name in found for value in assigned.get(name, ())
                 if isinstance(base := _leftmost(value), ast.Name)} - uses.pointers
        if not bases:
            break
        uses.pointers |= bases
        found = bases
    return uses


def _looks_like_pointer(param: KernelParam, uses: _Uses) -> bool:
    lowered = param.name.lower()
    return param.name in uses.pointers or lowered.endswith(("ptr", "ptrs", "_pointer")) or lowered.startswith("ptr_")


def _is_float(param: KernelParam) -> bool:
    return param.annotation is not None and param.annotation.split(".")[-1] in FLOAT_ANNOTATIONS


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
    if listed.resolved and listed.branches:
        lacking = listed.branches_without(param.name, param.index)
        if lacking and len(lacking) < len(listed.branches):
            where = "; ".join(label or "the list" for label in lacking)
            return f"do_not_specialize lacks it when {where} (set at {listed.computed_at}): add it there"
    return f"do_not_specialize is computed at {listed.computed_at}: add `{param.name}` there"


def _configs_count(kernel: TritonKernel) -> int | None:
    if kernel.node is None:
        return None
    for decorator in kernel.node.decorator_list:
        if isinstance(decorator, ast.Call) and (dotted_name(decorator.func) or "").endswith("autotune"):
            configs = decorator.args[0] if decorator.args else next(
                (k.value for k in decorator.keywords if k.arg == "configs"), None)
            if isinstance(configs, (ast.List, ast.Tuple)):
                return len(configs.elts)
    return None


# Axes laid out outside the token axis ([B, T, ...], [G, T, X], [E, T, X]): their strides are T * inner.
OUTER_AXES = frozenset({"batch", "b", "z", "bs", "group", "groups", "g", "expert", "experts", "e", "split", "splits"})
# Axes that are the token axis itself: a stride along one proves the tensor has a token axis.
TOKEN_AXES = frozenset({"token", "tokens", "tok", "seq", "s", "t", "m", "row", "rows", "pos", "l"})


def _derived_strides(kernel: TritonKernel, candidates: list[KernelParam]) -> list[KernelParam]:
    """Strides computed from the token count: the stride of an axis laid out outside the token
    axis (batch, group, expert) of a tensor that also has a token-axis stride, or the group
    stride of a scale buffer ([groups, align(T, 4), X])."""
    axes = [(param, *_stride_axis(param.name)) for param in kernel.params if _is_stride_name(param.name)]
    derived = []
    for param in candidates:
        tensor, axis = _stride_axis(param.name)
        has_token_axis = any(other is not param and other_tensor == tensor and other_axis in TOKEN_AXES
                             for other, other_tensor, other_axis in axes)
        scale_group = bool({"scale", "scales", "sf", "s"} & set(tensor.split("_"))) and axis in ("group", "groups", "g")
        if (axis in OUTER_AXES and has_token_axis) or scale_group:
            derived.append(param)
    return derived


def _heuristic_findings(kernel: TritonKernel, counts: dict[str, str]) -> list[tuple[int, str, str]]:
    """(line, heuristic name, message) for heuristics that read a count."""
    found = []
    for heuristic in kernel.heuristics:
        read = [name for name in heuristic.reads if name in counts]
        if not read:
            continue
        shown = heuristic.expression.body if isinstance(heuristic.expression, ast.Lambda) else heuristic.expression
        text = _short(shown, 60)
        calls = {(dotted_name(n.func) or "").rsplit(".", 1)[-1] for n in ast.walk(heuristic.expression)
                 if isinstance(n, ast.Call)}
        if "next_power_of_2" in calls:
            variants = "one variant per power of two it reaches"
        elif any(isinstance(n, (ast.Compare, ast.BoolOp)) for n in ast.walk(heuristic.expression)):
            variants = "2 variants (True/False) as the count changes"
        else:
            variants = "one variant per distinct value"
        found.append((heuristic.line, heuristic.name,
                      f"heuristic `{heuristic.name} = {text}` derives a tl.constexpr from {counts[read[0]]} "
                      f"`{read[0]}`: {variants}, even with `{read[0]}` in do_not_specialize; derive it in the "
                      "kernel at run time, or bucket the count"))
    return found


def _merge_per_parameter(findings: list[Finding]) -> list[Finding]:
    """One finding per (kernel, parameter): the highest-priority rule, the others folded in."""
    by_param: dict[tuple[str, str], list[Finding]] = {}
    merged: list[Finding] = []
    for finding in findings:
        if finding.param is None:
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
        if not group:
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
) -> list[Finding]:
    """Apply every rule (or those in `enabled`) to one kernel found by `find_kernels`.

    A `device_helper` (a jit function other kernels call) is inlined into its callers and never
    specialized on its own, so only the rules about its decorator lists apply. For one of several jit calls on
    one function, each finding says which (`Finding.binding`).
    """
    lines = lines or []
    found: list[Finding] = []
    kernel_lines = {kernel.line, kernel.first_line, kernel.decorator_line}

    def add(rule_id: str, line: int, param: str | None, message: str) -> None:
        if enabled is not None and rule_id not in enabled:
            return
        if any(_suppressed(lines, where, rule_id) for where in {line, *kernel_lines}):
            return
        rule = RULES[rule_id]
        found.append(
            Finding(rule.id, file, line, kernel.name, param, message, rule.advice, rule.severity, rule.name,
                    kernel.qualname, _column(lines, line, param), binding=kernel.binding_label)
        )

    names = {param.name for param in kernel.params}
    for option in DEMOTION_OPTIONS:
        listed = kernel.demotions.get(option)
        if listed is None:
            continue
        anywhere = sorted(listed.listed_anywhere(), key=lambda entry: (isinstance(entry, str), str(entry)))
        for entry in listed.entries if listed.literal else anywhere:
            if isinstance(entry, int):
                if not -len(kernel.params) <= entry < len(kernel.params):
                    add("JG104", listed.line, None,
                        f"{option} lists index {entry} but `{kernel.name}` has {len(kernel.params)} parameters; "
                        "Triton ignores it silently")
                    continue
                param = kernel.params[entry]
            elif entry not in names:
                close = difflib.get_close_matches(entry, sorted(names), n=1, cutoff=0.75)
                hint = f" (did you mean `{close[0]}`?)" if close else ""
                add("JG104", listed.line, entry,
                    f"{option} lists `{entry}`, which is not a parameter of `{kernel.name}`{hint}; "
                    "Triton ignores it silently")
                continue
            else:
                param = kernel.param(entry)  # type: ignore[assignment]
            if param is not None and param.is_constexpr:
                add("JG105", listed.line, param.name,
                    f"{option} lists `{param.name}`, a tl.constexpr: Triton raises a CompilationError at "
                    "the first compile; remove it from the list")
    if kernel.node is None or device_helper:
        # A device helper (or a kernel with no body to read) keeps the rules of HELPER_RULES: its
        # decorator's lists. The same set decides which findings a helper called from another file keeps.
        return _merge_per_parameter([f for f in found if f.rule in HELPER_RULES])
    demoted = kernel.demoted("do_not_specialize") | kernel.demoted("do_not_specialize_on_alignment")
    uses = _parameter_uses(kernel.nodes(), names)
    runtime_ints = [
        param
        for param in kernel.params
        if not param.is_constexpr and not _is_float(param) and not _looks_like_pointer(param, uses)
    ]
    counts: dict[str, str] = {}  # parameter -> why it is a per-call count
    demotes_token_count = False
    for param in runtime_ints:
        if is_token_count_name(param.name):
            counts[param.name] = "the token count"
            if param.name in kernel.demoted("do_not_specialize"):
                demotes_token_count = True
            if param.name not in demoted:
                use = uses.sizes.get(param.name)
                why = f", used in {use}" if use else ""
                add("JG101", param.line, param.name,
                    f"`{param.name}` looks like a token/batch count{why} and is specialized: values 1, "
                    f"multiples of 16 and others compile separate variants; {_demotion_hint(kernel, param)}")
        elif param.name in uses.bounds and not is_model_dimension_name(param.name) and not _is_stride_name(param.name):
            counts[param.name] = "a run-time bound"
            if param.name in kernel.demoted("do_not_specialize"):
                demotes_token_count = True
            elif param.name not in demoted:
                add("JG107", param.line, param.name,
                    f"`{param.name}` bounds or splits a position (`{_short(uses.bounds[param.name])}`) "
                    f"and is specialized: values 1, multiples "
                    f"of 16 and others compile separate variants; unless it is fixed per model, "
                    f"{_demotion_hint(kernel, param)}")
        elif param.name in uses.sizes and param.name not in demoted and not _is_stride_name(param.name):
            add("JG102", param.line, param.name,
                f"`{param.name}` is used in {uses.sizes[param.name]} and is specialized (1 / multiple of 16 / "
                "other); fine for a model dimension, demote it if it changes from call to call")
    for param in kernel.params:
        if param.is_constexpr and not param.name.isupper() and is_token_count_name(param.name) and not (
            param.name.lower().startswith("max_")
        ):
            counts.setdefault(param.name, "the token count")
            add("JG103", param.line, param.name,
                f"`{param.name}: tl.constexpr` looks like a runtime size: every new value compiles a new "
                "variant; make it a runtime argument (or bucket its values)")
    # Someone demoted the count but left the strides: the state vLLM's inverse-RoPE kernel was in.
    if demotes_token_count:
        strides = [p for p in runtime_ints if _is_stride_name(p.name) and p.name not in demoted]
        for param in _derived_strides(kernel, strides):
            add("JG106", param.line, param.name,
                f"stride `{param.name}` is specialized while the token count is demoted; it walks an axis "
                "laid out outside the token axis ([B, T, X]: it is T * X), so it flips classes as the count "
                "changes: demote it")
    for line, name, message in _heuristic_findings(kernel, counts):
        add("JG108", line, name, message)
    configs = _configs_count(kernel)
    for key in kernel.autotune_keys:
        if key.bucketed or key.name not in counts:
            continue
        every = f"all {configs} configs" if configs else "every config"
        add("JG109", key.line, key.name,
            f"autotune key `{key.name}` is {counts[key.name]}: every new value re-benchmarks {every} (on the "
            f"request path in a server); bucket it: `jitguard.autotune(..., bucket={{\"{key.name}\": \"pow2\"}})`, "
            "or drop it from key=[...]")
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
    findings, kernels, _ = _scan_with_calls(source, file, enabled, None)
    return findings, kernels


def _scan_with_calls(source: bytes, file: str, enabled: Collection[str] | None,
                     path: Path | None) -> tuple[list[Finding], int, frozenset[tuple[str, str]]]:
    if not might_contain_kernels(source):
        return [], 0, frozenset()
    tree = parse_source(source)
    kernels = find_kernels(source, tree)
    lines = source_lines(source)
    helpers = called_names(kernels)
    findings = [
        finding
        for kernel in kernels
        for finding in scan_kernel(kernel, file, lines, kernel.name in helpers, enabled)
    ]
    return findings, len(kernels), helper_calls(tree, (kernel.nodes() for kernel in kernels), path)


def scan_file(path: Path, enabled: Collection[str] | None = None, display: str | None = None) -> FileScan:
    """Scan one file; read and syntax errors come back in `error`, never as exceptions."""
    name = display or str(path)
    try:
        source = read_source(path)
        findings, kernels, calls = _scan_with_calls(source, name, enabled, path)
    except SourceError as exc:
        return FileScan(name, [], 0, str(exc))
    except SyntaxError as exc:
        return FileScan(name, [], 0, f"syntax error at line {exc.lineno}: {exc.msg}")
    except (ValueError, RecursionError) as exc:
        return FileScan(name, [], 0, f"cannot parse: {exc}")
    return FileScan(name, findings, kernels, module_path=str(path), helper_calls=calls)


def scan_task(task: tuple[Path, Collection[str] | None, str | None]) -> FileScan:
    """`scan_file(*task)`, one picklable argument for the worker pool: (path, enabled rules, display name)."""
    return scan_file(*task)
