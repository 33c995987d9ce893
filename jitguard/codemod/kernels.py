"""Find Triton `jit` kernels in Python source, with their parameters and demotion lists.

Discovery runs on the standard library's `ast` (fast enough for a whole vLLM tree); the
rewrite in `fix.py` then edits only the decorator text with libcst. Every spelling counts:
`@triton.jit`, `@tjit` (`from triton import jit as tjit`), `my_jit = triton.jit` then
`@my_jit`, `@functools.partial(triton.jit, ...)`, and the call forms `name = triton.jit(fn)`
and `triton.jit(...)(fn)`, with `@triton.autotune` / `@triton.heuristics` stacked on any; Gluon's `@gluon.jit`
(`from triton.experimental import gluon`) counts as `triton.jit`.

This module is also the one place that judges what a `do_not_specialize` value holds
(`resolve_demotion_value`): a literal list `fix` may edit, a value resolved through branches
and module constants, or a computed value a human must edit.

    >>> [k.name for k in find_kernels(b"import triton\\n@triton.jit\\ndef add(x_ptr, n): pass\\n")]
    ['add']
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from jitguard.events import listed_parameter

#: The two decorator options `fix` edits, in the order they are written when both are added.
DEMOTION_OPTIONS = ("do_not_specialize", "do_not_specialize_on_alignment")

# A file with none of: a line like `@triton.jit` / `@tjit` / `@tr.jit(...)`, a `jit as` alias,
# a `= triton.jit` alias or a `jit(` call holds no kernel, so it is never parsed: a scan of a
# large tree reads few files. A line starts after LF or a lone CR (old Mac files) and may open
# with a form feed.
JIT_DECORATOR_LINE = re.compile(
    rb"(?:^|\r)[ \t\f]*@[ \t]*(?:\w+[ \t]*\.[ \t]*)*\w*jit\b|\bjit[ \t]+as\b|=[ \t]*(?:\w+[ \t]*\.[ \t]*)*jit\b"
    rb"|\bjit[ \t]*\(",
    re.MULTILINE,
)
# Call forms (`triton.jit(fn)`, `partial(triton.jit, ...)`) need a walk of expressions; only files
# that spell one pay for it.
_CALL_FORM = re.compile(rb"jit[ \t]*\(|\bpartial[ \t]*\(")


@dataclass(frozen=True)
class KernelParam:
    """One parameter of a kernel, in signature order (`index` is what Triton's index lists use)."""

    name: str
    index: int
    line: int
    annotation: str | None
    is_constexpr: bool
    has_default: bool


@dataclass(frozen=True)
class DemotionBranch:
    """One value a computed demotion list can take: `label` says when (`if HOPPER`, `else`)."""

    label: str
    entries: tuple[str | int, ...]


@dataclass
class DemotionList:
    """A `do_not_specialize...=` value of a kernel, resolved as far as the file allows.

    `entries` holds what is listed in every case (str names or int indices; for a literal list,
    its items in source order). `literal` is True only for a list/tuple of constants written
    right there: the one form `fix` may edit. A conditional (`[...] if X else [...]`) or a
    module constant (`DNS`, `_SHAPE_ARGS["rms"]`) is resolved into `branches`; anything else
    has `resolved` False and `computed_at` saying where the value comes from.
    """

    option: str
    entries: list[str | int]
    literal: bool
    line: int
    branches: list[DemotionBranch] = field(default_factory=list)
    resolved: bool = True
    computed_at: str | None = None  # e.g. "line 12 (`_dns(cfg)`)" when not literal

    def listed_anywhere(self) -> set[str | int]:
        """Entries present in at least one branch (a literal list: its entries)."""
        found: set[str | int] = set(self.entries)
        for branch in self.branches:
            found.update(branch.entries)
        return found

    def branches_without(self, name: str, index: int | None = None) -> list[str]:
        """Labels of the branches that do not list `name` (nor its index)."""
        return [b.label for b in self.branches if name not in b.entries and (index is None or index not in b.entries)]


@dataclass(frozen=True)
class AutotuneKey:
    """One entry of `@triton.autotune(key=[...])` (or `jitguard.autotune`, with its `bucketed` names)."""

    name: str
    line: int
    bucketed: bool


@dataclass(frozen=True)
class Heuristic:
    """One `@triton.heuristics({"NAME": lambda args: ...})` entry: the parameters its body reads."""

    name: str
    line: int
    reads: tuple[str, ...]
    expression: ast.expr = field(repr=False, compare=False)


@dataclass
class TritonKernel:
    """A function made a kernel by Triton's `jit`, located in one file.

    `name` is the function's own name (what Triton reports at run time). For the call forms,
    `bound_as` holds the names the kernel is assigned to (`fast = triton.jit(_fast)`), and
    `decorator_span` covers the `triton.jit(...)` call, so adding a keyword there is the fix.
    """

    name: str
    qualname: str
    line: int  # the `def` line
    first_line: int  # the first decorator line (what `inspect.getsourcelines` reports)
    end_line: int  # the last line of the body
    params: list[KernelParam]
    decorator_span: tuple[int, int, int, int]  # (line, col, end_line, end_col), ast style
    decorator_is_call: bool
    demotions: dict[str, DemotionList] = field(default_factory=dict)
    node: ast.FunctionDef | None = field(default=None, repr=False, compare=False)
    form: str = "decorator"  # "decorator" | "call" (`triton.jit(fn)`) | "alias" (`@my_jit` bound to a call)
    bound_as: tuple[str, ...] = ()
    decorator_line: int = 0  # the line of the jit decorator (or of the jit call)
    # Its function is made a kernel by more than one jit call (`a = triton.jit(f)`, `b = triton.jit(...)(f)`):
    # one kernel per call at run time, told apart by `binding_label`.
    several_bindings: bool = False
    autotune_keys: list[AutotuneKey] = field(default_factory=list)
    heuristics: list[Heuristic] = field(default_factory=list)
    # (line, col, end_line, end_col) of the `autotune(...)` call wrapping the kernel (what `fix --bucket` edits)
    autotune_span: tuple[int, int, int, int] | None = None
    _nodes: list[ast.AST] | None = field(default=None, repr=False, compare=False)

    def nodes(self) -> list[ast.AST]:
        """Every node of the kernel's function, walked once and shared by the rules (empty without `node`)."""
        if self._nodes is None:
            self._nodes = list(ast.walk(self.node)) if self.node is not None else []
        return self._nodes

    def param(self, name: str) -> KernelParam | None:
        """The parameter called `name`, or None."""
        for param in self.params:
            if param.name == name:
                return param
        return None

    def demoted(self, option: str) -> set[str]:
        """Names of parameters listed under `option` in every case (indices resolved to names)."""
        listed = self.demotions.get(option)
        if listed is None:
            return set()
        return self._names(listed.entries)

    def _names(self, entries: list[str | int] | set[str | int] | tuple[str | int, ...]) -> set[str]:
        names: set[str] = set()
        for entry in entries:
            if isinstance(entry, int):
                listed = listed_parameter(entry, [param.name for param in self.params])
                if listed is not None:  # a negative index names nothing: Triton ignores it
                    names.add(listed)
            else:
                names.add(entry)
        return names

    @property
    def binding_label(self) -> str:
        """Which jit call made this kernel, for a function bound by several (`as `wide`, line 12`); else ""."""
        if not self.several_bindings:
            return ""
        bound = f"`{'`, `'.join(self.bound_as)}`" if self.bound_as else "the jit call"
        return f"as {bound}, line {self.decorator_line}"

    def matches(self, spec: str) -> bool:
        """True when `spec` (from `--param K:P` or a report) names this kernel."""
        return spec in (self.name, self.qualname) or spec in self.bound_as or self.qualname.endswith("." + spec)


@dataclass
class TritonNames:
    """What the names in one file refer to: modules that are Triton, Triton's `jit` and its aliases.

    `jit_aliases` maps a name bound to a jit *call* or partial (`my_jit = triton.jit(debug=True)`)
    to that expression: its options apply to every kernel it decorates.
    """

    triton_modules: set[str]
    jit_functions: set[str]
    jit_aliases: dict[str, ast.expr] = field(default_factory=dict)
    constants: dict[str, list[ast.expr]] = field(default_factory=dict)
    partial_functions: set[str] = field(default_factory=lambda: {"partial"})


def might_contain_kernels(source: bytes) -> bool:
    """Cheap text test: False means the file certainly has no Triton kernel.

    A kernel needs a name bound by an import that spells `triton` somewhere.
    """
    return b"triton" in source and JIT_DECORATOR_LINE.search(source) is not None


GLUON_MODULE = "triton.experimental.gluon"


def _is_triton_module(module: str) -> bool:
    """Modules whose `jit` makes a kernel: Triton's, and Gluon's (`triton.experimental.gluon`), which
    specializes ints and pointers the same way and takes the same `do_not_specialize` lists."""
    if module == GLUON_MODULE or module.startswith(GLUON_MODULE + "."):
        return True
    return (module == "triton" or module.startswith("triton.")) and not module.startswith("triton.experimental")


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _statements(body: list[ast.stmt], scope: tuple[str, ...] = ()) -> Iterator[tuple[ast.stmt, tuple[str, ...]]]:
    """Every statement, nested ones included, with the names of the enclosing classes/functions.

    Expressions are never entered: imports and definitions are statements, and skipping the
    expression trees makes discovery several times faster on large files.
    """
    for statement in body:
        yield statement, scope
        inner = scope + (statement.name,) if isinstance(statement, _DEFINITIONS) else scope
        for field_name in ("body", "orelse", "finalbody"):
            block = getattr(statement, field_name, None)
            if isinstance(block, list):
                yield from _statements(block, inner)
        for handler in getattr(statement, "handlers", ()):
            yield from _statements(handler.body, inner)
        for case in getattr(statement, "cases", ()):
            yield from _statements(case.body, inner)


def _module_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Module statements, entering `if`/`try`/`with` blocks but no function or class."""
    for statement in body:
        yield statement
        if isinstance(statement, _DEFINITIONS):
            continue
        for field_name in ("body", "orelse", "finalbody"):
            block = getattr(statement, field_name, None)
            if isinstance(block, list):
                yield from _module_level(block)
        for handler in getattr(statement, "handlers", ()):
            yield from _module_level(handler.body)


def resolve_triton_names(
    tree: ast.Module, statements: list[tuple[ast.stmt, tuple[str, ...]]] | None = None
) -> TritonNames:
    """Collect the local names bound to Triton's module, to its `jit` and to jit aliases.

    `triton` itself always counts (vLLM re-exports it: `from vllm.triton_utils import triton`).
    `statements` is `_statements(tree.body)` when the caller has it already.
    """
    names = TritonNames({"triton"}, set())
    assignments: list[ast.Assign] = []
    for node, _ in statements if statements is not None else _statements(tree.body):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in ("triton", GLUON_MODULE) and alias.asname:
                    names.triton_modules.add(alias.asname)
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                local = alias.asname or alias.name
                if alias.name == "triton" or f"{node.module}.{alias.name}" == GLUON_MODULE:
                    names.triton_modules.add(local)
                elif alias.name == "jit" and _is_triton_module(node.module):
                    names.jit_functions.add(local)
                elif alias.name == "partial" and node.module == "functools":
                    names.partial_functions.add(local)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            assignments.append(node)
    for node in _module_level(tree.body):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    names.constants.setdefault(target.id, []).append(node.value)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            names.constants.setdefault(node.target.id, []).append(node.value)
    # `my_jit = triton.jit`, then `other = my_jit`: resolve in source order.
    for node in assignments:
        target = node.targets[0].id  # type: ignore[attr-defined]
        value = node.value
        if _is_jit_name(value, names):
            names.jit_functions.add(target)
        elif _jit_factory(value, names) is not None:
            names.jit_aliases[target] = value
    return names


def _is_jit_name(node: ast.expr, names: TritonNames) -> bool:
    """`triton.jit`, `tr.jit`, `jit` (imported from triton) or a plain alias of one."""
    if isinstance(node, ast.Name):
        return node.id in names.jit_functions
    if isinstance(node, ast.Attribute) and node.attr == "jit":
        if isinstance(node.value, ast.Name):
            return node.value.id in names.triton_modules
        # `triton.experimental.gluon.jit`, spelled out
        return dotted_name(node.value) in {f"{module}.experimental.gluon" for module in names.triton_modules}
    return False


def _is_partial(node: ast.expr, names: TritonNames) -> bool:
    if isinstance(node, ast.Name):
        return node.id in names.partial_functions
    return isinstance(node, ast.Attribute) and node.attr == "partial" and isinstance(node.value, ast.Name) and (
        node.value.id == "functools"
    )


def _jit_factory(node: ast.expr, names: TritonNames) -> ast.Call | None:
    """The call holding jit options when `node` is a decorator factory: `triton.jit(...)` with no
    function, or `functools.partial(triton.jit, ...)`; else None."""
    if not isinstance(node, ast.Call):
        return None
    if _is_jit_name(node.func, names) and not node.args:
        return node
    if _is_partial(node.func, names) and node.args and _is_jit_name(node.args[0], names):
        return node
    return None


def _jit_decorator(node: ast.expr, names: TritonNames) -> tuple[ast.expr, str] | None:
    """(the expression holding the options, form) when decorator `node` makes a Triton kernel."""
    if _is_jit_name(node, names):
        return node, "decorator"
    if isinstance(node, ast.Name) and node.id in names.jit_aliases:
        return names.jit_aliases[node.id], "alias"
    factory = _jit_factory(node, names)
    if factory is not None:
        return factory, "decorator"
    return None


def autotune_calls(kernel: TritonKernel) -> list[ast.Call]:
    """The kernel's `@...autotune(...)` decorator calls, outermost first."""
    if kernel.node is None:
        return []
    return [d for d in kernel.node.decorator_list
            if isinstance(d, ast.Call) and (dotted_name(d.func) or "").endswith("autotune")]


def configs_argument(autotune: ast.Call) -> ast.expr | None:
    """The expression an autotune call takes as its configs (first argument or `configs=`)."""
    return autotune.args[0] if autotune.args else next((k.value for k in autotune.keywords if k.arg == "configs"),
                                                       None)


def parameter_defaults(kernel: TritonKernel) -> dict[str, ast.expr]:
    """Parameter -> its default value's expression."""
    if kernel.node is None:
        return {}
    arguments = kernel.node.args
    positional = [*arguments.posonlyargs, *arguments.args]
    found = {arg.arg: value for arg, value in zip(positional[len(positional) - len(arguments.defaults):],
                                                  arguments.defaults)}
    found.update({arg.arg: value for arg, value in zip(arguments.kwonlyargs, arguments.kw_defaults)
                  if value is not None})
    return found


def dotted_name(node: ast.expr | None) -> str | None:
    """`tl.constexpr` for an Attribute chain, the string itself for a string annotation."""
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ast.unparse(node)


def _params(function: ast.FunctionDef) -> list[KernelParam]:
    arguments = function.args
    positional = arguments.posonlyargs + arguments.args
    defaults_from = len(positional) - len(arguments.defaults)
    params: list[KernelParam] = []
    pairs = [(arg, index >= defaults_from) for index, arg in enumerate(positional)]
    pairs += [(arg, default is not None) for arg, default in zip(arguments.kwonlyargs, arguments.kw_defaults)]
    for arg, has_default in pairs:
        annotation = dotted_name(arg.annotation)
        params.append(
            KernelParam(
                name=arg.arg,
                index=len(params),
                line=arg.lineno,
                annotation=annotation,
                is_constexpr=annotation is not None and annotation.split(".")[-1] == "constexpr",
                has_default=has_default,
            )
        )
    return params


def literal_entries(value: ast.expr) -> list[str | int] | None:
    """The items of a list/tuple of str/int constants, else None: the one test of "literal list".

    `fix` edits only values for which this returns a list (a bare `a, b` cannot be a keyword value).
    """
    if not isinstance(value, (ast.List, ast.Tuple)):
        return None
    entries: list[str | int] = []
    for element in value.elts:
        negative = isinstance(element, ast.UnaryOp) and isinstance(element.op, ast.USub)
        constant = element.operand if isinstance(element, ast.UnaryOp) and negative else element
        if isinstance(constant, ast.Constant) and isinstance(constant.value, (str, int)) and not isinstance(
            constant.value, bool
        ) and not (negative and isinstance(constant.value, str)):
            entries.append(-constant.value if negative and isinstance(constant.value, int) else constant.value)
        else:
            return None
    return entries


_MAX_DEPTH = 8


def _branches(value: ast.expr, names: TritonNames, label: str, depth: int = 0) -> list[DemotionBranch] | None:
    """Every value `value` can take, through `X if C else Y`, `A + B` and module constants; None if not."""
    if depth > _MAX_DEPTH:
        return None
    entries = literal_entries(value)
    if entries is not None:
        return [DemotionBranch(label, tuple(entries))]
    if isinstance(value, ast.IfExp):
        condition = ast.unparse(value.test)
        body = _branches(value.body, names, _join(label, condition), depth + 1)
        negated = f"not {condition}" if isinstance(value.test, ast.Name) else f"not ({condition})"
        orelse = _branches(value.orelse, names, _join(label, negated), depth + 1)
        return None if body is None or orelse is None else body + orelse
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
        return _concatenated(_branches(value.left, names, label, depth + 1),
                             _branches(value.right, names, label, depth + 1))
    if isinstance(value, (ast.List, ast.Tuple)):
        # A list with starred parts (`["n", *(() if C else ("m",))]`): its items joined, branch by branch.
        joined: list[DemotionBranch] | None = [DemotionBranch(label, ())]
        for element in value.elts:
            if isinstance(element, ast.Starred):
                part = _branches(element.value, names, label, depth + 1)
            else:
                part = _branches(ast.List(elts=[element], ctx=ast.Load()), names, label, depth + 1)
            joined = _concatenated(joined, part)
        return joined
    if isinstance(value, ast.Name) and value.id in names.constants:
        found: list[DemotionBranch] = []
        assigned = names.constants[value.id]
        for expression in assigned:
            where = f"`{value.id}` is set at line {expression.lineno}" if len(assigned) > 1 else label
            resolved = _branches(expression, names, where if len(assigned) > 1 else label, depth + 1)
            if resolved is None:
                return None
            found += resolved
        return found
    if isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name) and value.value.id in names.constants:
        key = value.slice
        if not (isinstance(key, ast.Constant) and isinstance(key.value, (str, int))):
            return None
        found = []
        for table in names.constants[value.value.id]:
            if isinstance(table, ast.Dict):
                for table_key, item in zip(table.keys, table.values):
                    if isinstance(table_key, ast.Constant) and table_key.value == key.value:
                        resolved = _branches(item, names, label, depth + 1)
                        if resolved is None:
                            return None
                        found += resolved
                        break
                else:
                    return None
            else:
                return None
        return found or None
    return None


def _concatenated(
    left: list[DemotionBranch] | None, right: list[DemotionBranch] | None
) -> list[DemotionBranch] | None:
    """Every value of `left + right` (None when either is unknown or there are more than 16)."""
    if left is None or right is None or len(left) * len(right) > 16:
        return None
    return [DemotionBranch(_join(a.label, b.label) if a.label != b.label else a.label, a.entries + b.entries)
            for a in left for b in right]


def _join(outer: str, inner: str) -> str:
    return f"{outer}, {inner}" if outer else inner


def _source_of(value: ast.expr, names: TritonNames) -> str:
    """Where a computed value is set: the constant's assignment line, else the keyword's own line."""
    root = value.value if isinstance(value, ast.Subscript) else value
    if isinstance(root, ast.Name) and root.id in names.constants:
        assigned = names.constants[root.id][0]
        return f"line {assigned.lineno} (`{root.id} = ...`)"
    text = ast.unparse(value)
    return f"line {value.lineno} (`{text if len(text) <= 60 else text[:57] + '...'}`)"


def resolve_demotion_value(option: str, value: ast.expr, line: int, names: TritonNames) -> DemotionList:
    """Judge one `do_not_specialize...=` value: literal, resolved through branches/constants, or computed."""
    entries = literal_entries(value)
    if entries is not None:
        return DemotionList(option, entries, True, line)
    branches = _branches(value, names, "")
    if branches is None:
        return DemotionList(option, [], False, line, resolved=False, computed_at=_source_of(value, names))
    common = [entry for entry in branches[0].entries if all(entry in b.entries for b in branches[1:])]
    return DemotionList(option, common, False, line, branches=branches, computed_at=_source_of(value, names))


def _demotions(options: ast.expr, names: TritonNames) -> dict[str, DemotionList]:
    found: dict[str, DemotionList] = {}
    if not isinstance(options, ast.Call):
        return found
    for keyword in options.keywords:
        if keyword.arg in DEMOTION_OPTIONS:
            found[keyword.arg] = resolve_demotion_value(keyword.arg, keyword.value, keyword.lineno, names)
    return found


def _callee_last(node: ast.expr) -> str:
    target = node.func if isinstance(node, ast.Call) else node
    if isinstance(target, ast.Attribute):
        return target.attr
    return target.id if isinstance(target, ast.Name) else ""


def _autotune_keys(wrapper: ast.expr) -> list[AutotuneKey]:
    """The `key=[...]` names of an `autotune(...)` call (literal lists only)."""
    if not isinstance(wrapper, ast.Call) or _callee_last(wrapper) != "autotune":
        return []
    key_value: ast.expr | None = wrapper.args[1] if len(wrapper.args) > 1 else None
    bucketed: set[str] = set()
    for keyword in wrapper.keywords:
        if keyword.arg == "key":
            key_value = keyword.value
        elif keyword.arg == "bucket" and isinstance(keyword.value, ast.Dict):
            bucketed |= {k.value for k in keyword.value.keys
                         if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    if key_value is None:
        return []
    entries = literal_entries(key_value) or []
    return [AutotuneKey(entry, key_value.lineno, entry in bucketed) for entry in entries if isinstance(entry, str)]


def _reads(expression: ast.expr) -> tuple[str, ...]:
    """Parameters a heuristic reads: `args["n"]`, `meta["n"]`, `args.n` on its lambda's argument."""
    argument = expression.args.args[0].arg if isinstance(expression, ast.Lambda) and expression.args.args else None
    found: list[str] = []
    for node in ast.walk(expression):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and (
            argument is None or node.value.id == argument
        ):
            if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
                found.append(node.slice.value)
    return tuple(dict.fromkeys(found))


def _heuristics(wrapper: ast.expr) -> list[Heuristic]:
    if not isinstance(wrapper, ast.Call) or _callee_last(wrapper) != "heuristics":
        return []
    table = wrapper.args[0] if wrapper.args else next((k.value for k in wrapper.keywords if k.arg == "values"), None)
    if not isinstance(table, ast.Dict):
        return []
    return [
        Heuristic(key.value, key.lineno, _reads(value), value)
        for key, value in zip(table.keys, table.values)
        if isinstance(key, ast.Constant) and isinstance(key.value, str)
    ]


def _kernel(
    node: ast.FunctionDef,
    jit_expression: ast.expr,
    options: ast.expr,
    form: str,
    scope: tuple[str, ...],
    names: TritonNames,
    wrappers: list[ast.expr],
    bound_as: tuple[str, ...] = (),
) -> TritonKernel:
    demotions = _demotions(options, names)
    if form == "alias":
        # The options live in a shared alias: `@my_jit(...)` would be wrong; mark them hand-edit only.
        for option in DEMOTION_OPTIONS:
            listed = demotions.get(option)
            where = f"line {options.lineno} (the jit alias)"
            if listed is None:
                demotions[option] = DemotionList(option, [], False, options.lineno, computed_at=where)
            else:
                listed.literal = False
                listed.computed_at = where
                if not listed.branches:
                    listed.branches = [DemotionBranch("", tuple(listed.entries))]
    kernel = TritonKernel(
        name=node.name,
        qualname=".".join([*scope, node.name]),
        line=node.lineno,
        first_line=min([d.lineno for d in node.decorator_list] + [node.lineno]),
        end_line=node.end_lineno or node.lineno,
        params=_params(node),
        decorator_span=(
            jit_expression.lineno,
            jit_expression.col_offset,
            jit_expression.end_lineno or jit_expression.lineno,
            jit_expression.end_col_offset or 0,
        ),
        decorator_is_call=isinstance(jit_expression, ast.Call),
        demotions=demotions,
        node=node,
        form=form,
        bound_as=bound_as,
        decorator_line=jit_expression.lineno,
    )
    _attach_wrappers(kernel, wrappers)
    return kernel


def _attach_wrappers(kernel: TritonKernel, wrappers: list[ast.expr]) -> None:
    """Add what `autotune(...)` / `heuristics(...)` wrappers around the kernel say: keys, heuristics, the span."""
    for wrapper in wrappers:
        kernel.autotune_keys += _autotune_keys(wrapper)
        kernel.heuristics += _heuristics(wrapper)
        if kernel.autotune_span is None and isinstance(wrapper, ast.Call) and _callee_last(wrapper) == "autotune":
            kernel.autotune_span = (wrapper.lineno, wrapper.col_offset, wrapper.end_lineno or wrapper.lineno,
                                    wrapper.end_col_offset or 0)


def parse_source(source: bytes) -> ast.Module:
    """Parse bytes as Python; raises SyntaxError/ValueError with the reason.

    Nesting deeper than CPython's parser takes (8,000 unary minuses) is a ValueError for that file
    alone: the parser reports it as MemoryError or RecursionError, which must not end a whole run.
    """
    try:
        return ast.parse(source, type_comments=False)
    except (MemoryError, RecursionError):
        raise ValueError("nested too deeply for Python's parser") from None


def _call_form(call: ast.Call, names: TritonNames) -> tuple[ast.expr, ast.expr, str, str] | None:
    """For `triton.jit(fn, ...)`, `triton.jit(...)(fn)`, `partial(triton.jit, ...)(fn)`, `my_jit(fn)`:
    (jit expression to edit, options expression, form, function name)."""
    if len(call.args) < 1 or not isinstance(call.args[0], ast.Name):
        return None
    function = call.args[0].id
    if _is_jit_name(call.func, names):
        return call, call, "call", function
    decorator = _jit_decorator(call.func, names)
    if decorator is None:
        return None
    options, form = decorator
    return call.func, options, ("alias" if form == "alias" else "call"), function


def _wrapped_calls(value: ast.expr) -> tuple[list[ast.expr], ast.expr]:
    """`autotune(...)(heuristics(...)(X))` -> ([autotune(...), heuristics(...)], X)."""
    wrappers: list[ast.expr] = []
    while (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Call)
        and _callee_last(value.func) in ("autotune", "heuristics")
        and len(value.args) == 1
    ):
        wrappers.append(value.func)
        value = value.args[0]
    return wrappers, value


def find_kernels(source: bytes, tree: ast.Module | None = None) -> list[TritonKernel]:
    """All Triton kernels in `source`, outermost first, in source order."""
    if tree is None:
        if not might_contain_kernels(source):
            return []
        tree = parse_source(source)
    statements = list(_statements(tree.body))
    names = resolve_triton_names(tree, statements)
    kernels: list[TritonKernel] = []
    functions: dict[str, tuple[ast.FunctionDef, tuple[str, ...]]] = {}
    calls: list[tuple[ast.stmt, ast.expr]] = []
    walk_calls = bool(names.jit_aliases) or _CALL_FORM.search(source) is not None
    for node, scope in statements:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions.setdefault(node.name, (node, scope))  # type: ignore[arg-type]
            for position, decorator in enumerate(node.decorator_list):
                found = _jit_decorator(decorator, names)
                if found is not None:
                    options, form = found
                    kernels.append(
                        _kernel(node, decorator, options, form, scope, names, node.decorator_list[:position])  # type: ignore[arg-type]
                    )
                    break
        elif walk_calls and isinstance(node, (ast.Assign, ast.Expr, ast.AnnAssign)) and node.value is not None:
            calls.append((node, node.value))
    # A function that is already a kernel by decorator is not made one again; a plain function may be bound by
    # several jit calls (each a kernel of its own at run time, with its own options), and each is listed.
    decorated = {kernel.node for kernel in kernels}
    later: list[tuple[str, list[ast.expr]]] = []  # `k = triton.heuristics({...})(k)` after `k` is a kernel
    for statement, value in calls:
        wrappers, inner = _wrapped_calls(value)
        if isinstance(inner, ast.Name) and wrappers:
            later.append((inner.id, wrappers))
        if not isinstance(inner, ast.Call):
            continue
        call_form = _call_form(inner, names)
        if call_form is None or call_form[3] not in functions:
            continue
        jit_expression, call_options, kind, function = call_form
        node, scope = functions[function]
        if node in decorated:
            continue
        targets = statement.targets if isinstance(statement, ast.Assign) else [getattr(statement, "target", None)]
        bound = tuple(target.id for target in targets if isinstance(target, ast.Name) and target.id != function)
        kernels.append(_kernel(node, jit_expression, call_options, kind, scope, names, wrappers, bound))
    for name, wrappers in later:
        for kernel in kernels:
            if name == kernel.name or name in kernel.bound_as:
                _attach_wrappers(kernel, wrappers)
    kernels.sort(key=lambda kernel: kernel.line)
    jit_calls = Counter((kernel.name, kernel.line) for kernel in kernels)
    for kernel in kernels:
        kernel.several_bindings = jit_calls[(kernel.name, kernel.line)] > 1
    return kernels


def where_to_add(listed: DemotionList, param_names: Sequence[str], kernel: TritonKernel) -> str:
    """Where names go in a computed demotion list: the branches lacking each, or the line computing it
    (one wording for `fix`'s hand edits and `scan`'s findings)."""
    source = f" ({listed.computed_at})" if listed.computed_at else ""
    lacking: dict[tuple[str, ...], list[str]] = {}  # the branches a name is missing from -> those names
    for name in param_names:
        index = next((i for i, p in enumerate(kernel.params) if p.name == name), None)
        missing = listed.branches_without(name, index) if listed.branches else []
        # Branches only when some list it and some do not: a list with one value (a module constant) has one
        # unlabelled branch, and a name no branch lists goes where the list is computed.
        key = tuple(missing) if 0 < len(missing) < len(listed.branches) else ()
        lacking.setdefault(key, []).append(name)
    parts = []
    for branches, names in lacking.items():
        quoted = ", ".join(f"`{name}`" for name in names)
        verb = "it is" if len(names) == 1 else "they are"
        parts.append(f"add {quoted} by hand where {verb} missing: {', '.join(branches)}" if branches
                     else f"add {quoted} there by hand")
    if all(lacking):
        return f"{listed.option} is not a literal list{source}; " + "; ".join(parts)
    computed = listed.computed_at or f"line {listed.line}"
    return f"{listed.option} is not a literal list, computed at {computed}: " + "; ".join(parts)
