"""Find `@triton.jit` kernels in Python source, with their parameters and demotion lists.

Discovery runs on the standard library's `ast` (fast enough for a whole vLLM tree); the
rewrite in `fix.py` then edits only the decorator text with libcst.

    >>> [k.name for k in find_kernels(b"import triton\\n@triton.jit\\ndef add(x_ptr, n): pass\\n")]
    ['add']
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

#: The two decorator options `fix` edits, in the order they are written when both are added.
DEMOTION_OPTIONS = ("do_not_specialize", "do_not_specialize_on_alignment")

# A file with neither a line like `@triton.jit` / `@tjit` / `@tr.jit(...)` nor a `jit as` alias
# holds no decorated kernel, so it is never parsed: a scan of a large tree reads few files.
# A line starts after LF or a lone CR (old Mac files) and may open with a form feed.
JIT_DECORATOR_LINE = re.compile(
    rb"(?:^|\r)[ \t\f]*@[ \t]*(?:\w+[ \t]*\.[ \t]*)*\w*jit\b|\bjit[ \t]+as\b", re.MULTILINE
)


@dataclass(frozen=True)
class KernelParam:
    """One parameter of a kernel, in signature order (`index` is what Triton's index lists use)."""

    name: str
    index: int
    line: int
    annotation: str | None
    is_constexpr: bool
    has_default: bool


@dataclass
class DemotionList:
    """An existing `do_not_specialize...=[...]` keyword on the decorator.

    `entries` holds the literal items (str names or int indices) in source order; `literal` is
    False when the value is not a list/tuple of constants (a variable, a comprehension...).
    """

    option: str
    entries: list[str | int]
    literal: bool
    line: int


@dataclass
class TritonKernel:
    """A function decorated with Triton's `jit`, located in one file."""

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

    def param(self, name: str) -> KernelParam | None:
        """The parameter called `name`, or None."""
        for param in self.params:
            if param.name == name:
                return param
        return None

    def demoted(self, option: str) -> set[str]:
        """Names of parameters listed under `option` (indices resolved to names)."""
        listed = self.demotions.get(option)
        if listed is None:
            return set()
        names: set[str] = set()
        for entry in listed.entries:
            if isinstance(entry, int):
                if -len(self.params) <= entry < len(self.params):
                    names.add(self.params[entry].name)
            else:
                names.add(entry)
        return names


@dataclass
class TritonNames:
    """What the names in one file refer to: modules that are Triton, and Triton's `jit`."""

    triton_modules: set[str]
    jit_functions: set[str]


def might_contain_kernels(source: bytes) -> bool:
    """Cheap text test: False means the file certainly has no decorated Triton kernel.

    A kernel's decorator needs a name bound by an import that spells `triton` somewhere.
    """
    return b"triton" in source and JIT_DECORATOR_LINE.search(source) is not None


def _is_triton_module(module: str) -> bool:
    # Gluon's jit (triton.experimental.gluon) is a different language; leave it alone.
    return (module == "triton" or module.startswith("triton.")) and not module.startswith("triton.experimental")


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


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def resolve_triton_names(tree: ast.Module) -> TritonNames:
    """Collect the local names bound to Triton's module and to its `jit` anywhere in the file.

    `triton` itself always counts (vLLM re-exports it: `from vllm.triton_utils import triton`).
    """
    modules = {"triton"}
    jits: set[str] = set()
    for node, _ in _statements(tree.body):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "triton" and alias.asname:
                    modules.add(alias.asname)
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                local = alias.asname or alias.name
                if alias.name == "triton":
                    modules.add(local)
                elif alias.name == "jit" and _is_triton_module(node.module):
                    jits.add(local)
    return TritonNames(modules, jits)


def _jit_target(decorator: ast.expr) -> ast.expr:
    return decorator.func if isinstance(decorator, ast.Call) else decorator


def is_triton_jit(decorator: ast.expr, names: TritonNames) -> bool:
    """True for `@triton.jit`, `@triton.jit(...)`, `@tr.jit`, `@jit` imported from triton."""
    target = _jit_target(decorator)
    if isinstance(target, ast.Name):
        return target.id in names.jit_functions
    if isinstance(target, ast.Attribute) and target.attr == "jit":
        base = target.value
        return isinstance(base, ast.Name) and base.id in names.triton_modules
    return False


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
    for index, arg in enumerate(positional):
        annotation = dotted_name(arg.annotation)
        params.append(
            KernelParam(
                name=arg.arg,
                index=index,
                line=arg.lineno,
                annotation=annotation,
                is_constexpr=annotation is not None and annotation.split(".")[-1] == "constexpr",
                has_default=index >= defaults_from,
            )
        )
    for arg, default in zip(arguments.kwonlyargs, arguments.kw_defaults):
        annotation = dotted_name(arg.annotation)
        params.append(
            KernelParam(
                name=arg.arg,
                index=len(params),
                line=arg.lineno,
                annotation=annotation,
                is_constexpr=annotation is not None and annotation.split(".")[-1] == "constexpr",
                has_default=default is not None,
            )
        )
    return params


def _demotions(decorator: ast.expr) -> dict[str, DemotionList]:
    found: dict[str, DemotionList] = {}
    if not isinstance(decorator, ast.Call):
        return found
    for keyword in decorator.keywords:
        if keyword.arg not in DEMOTION_OPTIONS:
            continue
        value = keyword.value
        entries: list[str | int] = []
        literal = isinstance(value, (ast.List, ast.Tuple))
        if literal:
            for element in value.elts:  # type: ignore[union-attr]
                if isinstance(element, ast.Constant) and isinstance(element.value, (str, int)) and not isinstance(
                    element.value, bool
                ):
                    entries.append(element.value)
                else:
                    literal = False
        found[keyword.arg] = DemotionList(keyword.arg, entries, literal, keyword.lineno)
    return found


def _kernel(node: ast.FunctionDef, decorator: ast.expr, scope: tuple[str, ...]) -> TritonKernel:
    return TritonKernel(
        name=node.name,
        qualname=".".join([*scope, node.name]),
        line=node.lineno,
        first_line=min(d.lineno for d in node.decorator_list),
        end_line=node.end_lineno or node.lineno,
        params=_params(node),
        decorator_span=(
            decorator.lineno,
            decorator.col_offset,
            decorator.end_lineno or decorator.lineno,
            decorator.end_col_offset or 0,
        ),
        decorator_is_call=isinstance(decorator, ast.Call),
        demotions=_demotions(decorator),
        node=node,
    )


def parse_source(source: bytes) -> ast.Module:
    """Parse bytes as Python; raises SyntaxError/ValueError with the reason."""
    return ast.parse(source, type_comments=False)


def find_kernels(source: bytes, tree: ast.Module | None = None) -> list[TritonKernel]:
    """All Triton kernels in `source`, outermost first, in source order."""
    if tree is None:
        if not might_contain_kernels(source):
            return []
        tree = parse_source(source)
    names = resolve_triton_names(tree)
    kernels: list[TritonKernel] = []
    for node, scope in _statements(tree.body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for decorator in node.decorator_list:
                if is_triton_jit(decorator, names):
                    kernels.append(_kernel(node, decorator, scope))  # type: ignore[arg-type]
                    break
    return kernels
