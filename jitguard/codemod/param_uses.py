"""How a kernel's body uses its parameters, read from the source (never run): the facts `scan` judges by.

A parameter *bounds* a position when it is compared with one (`offs < n`), bounds a loop
(`range(0, n, BLOCK)`) or divides one (`pid // n`); it is a *size* when it is also used in
`tl.cdiv`; a *pitch* when it multiplies a position (`pid * chunk_size`: the extent of an inner
axis, fixed by the layout); a *pointer* when a load or store goes through it. Positions are
locals built from `tl.arange` / `tl.program_id` or loop variables.

A call into another `@triton.jit` function of the same file (a device helper, inlined by Triton)
is followed: a mask bound inside the helper is a use of whatever the caller passed for it.

    >>> import ast
    >>> tree = ast.parse("def k(x_ptr, n, B):\\n    o = tl.arange(0, B)\\n    tl.store(x_ptr + o, 0, mask=o < n)")
    >>> uses = parameter_uses(list(ast.walk(tree)), {"x_ptr", "n", "B"})
    >>> uses.bounds, sorted(uses.pointers)
    ({'n': '`o < n`'}, ['x_ptr'])
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from jitguard.codemod.kernels import TritonKernel, dotted_name


@dataclass
class ParamUses:
    """The uses `scan` judges parameters by (see the module docstring)."""

    sizes: dict[str, str] = field(default_factory=dict)  # param -> first size-like use ("tl.cdiv", "a loop bound")
    bounds: dict[str, str] = field(default_factory=dict)  # param -> the first mask/loop bound it is in, as text
    pointers: set[str] = field(default_factory=set)
    pitches: set[str] = field(default_factory=set)  # params that multiply a position


_ORDERING = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
_INDEX_SOURCES = frozenset({"arange", "program_id", "num_programs"})
# Calls whose result is still a position when their arguments are; any other call (a load) is data.
_INDEX_PRESERVING = frozenset({"minimum", "maximum", "multiple_of", "max_contiguous", "cdiv", "where", "broadcast_to",
                               "reshape", "expand_dims", "to"})
# How many helper calls deep a use is followed (helpers calling helpers).
_HELPER_DEPTH = 4


def leftmost(node: ast.expr) -> ast.expr:
    """The first term of a sum (`base + i * n + offs` -> `base`): what a pointer expression starts from."""
    while isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        node = node.left
    return node


def short_text(node: ast.AST, limit: int = 48) -> str:
    """The source of `node`, cut to `limit` characters."""
    text = ast.unparse(node)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def index_names(nodes: list[ast.AST]) -> set[str]:
    """Locals holding positions (derived from `tl.arange`/`tl.program_id`, or loop variables):
    a parameter compared with one bounds a mask; one compared with loaded values does not."""
    names: set[str] = set()
    pending: list[tuple[list[ast.expr], ast.expr]] = []
    for node in nodes:
        if isinstance(node, ast.For):
            names.update(n.id for n in ast.walk(node.target) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Assign):
            pending.append((node.targets, node.value))
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None:
            pending.append(([node.target], node.value))
    for _ in range(3):  # offsets built in steps: pid -> start -> offs
        waiting = []
        for targets, value in pending:
            if is_index_expression(value, names):
                names.update(n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name))
            else:
                waiting.append((targets, value))
        if len(waiting) == len(pending):
            break
        pending = waiting
    return names


def is_index_expression(expression: ast.AST, names: set[str]) -> bool:
    """True when `expression` is a position: built from `tl.arange`/`tl.program_id` or a local in `names`."""
    if isinstance(expression, ast.Name):
        return expression.id in names
    if isinstance(expression, ast.Call):
        func = expression.func
        last = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if last in _INDEX_SOURCES:
            return True
        if last not in _INDEX_PRESERVING:
            return False
        inner = [*expression.args, func.value] if isinstance(func, ast.Attribute) else expression.args
        return any(is_index_expression(arg, names) for arg in inner)
    return any(is_index_expression(child, names) for child in ast.iter_child_nodes(expression)
               if isinstance(child, ast.expr))


def _assigned_values(nodes: list[ast.AST]) -> dict[str, list[ast.expr]]:
    """local -> the values assigned to it (`row = base_ptr + i * n`, `limit = min(chunk, n - start)`)."""
    assigned: dict[str, list[ast.expr]] = {}
    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            assigned.setdefault(node.targets[0].id, []).append(node.value)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            assigned.setdefault(node.target.id, []).append(node.value)
    return assigned


class _Reader:
    """One pass over one function's nodes, filling a `ParamUses`."""

    def __init__(self, nodes: list[ast.AST], params: set[str], helper_uses: Callable[[ast.Call], None]) -> None:
        self.nodes = nodes
        self.params = params
        self.uses = ParamUses()
        self.positions = index_names(nodes)
        self.assigned = _assigned_values(nodes)
        self.helper_uses = helper_uses

    def mentioned(self, expression: ast.AST) -> set[str]:
        """Parameters in `expression`, also through locals that are not positions (`limit = n - start`)."""
        found: set[str] = set()
        seen: set[str] = set()
        todo: list[ast.AST] = [expression]
        for _ in range(4):
            following: list[ast.AST] = []
            for item in todo:
                for node in ast.walk(item):
                    if not isinstance(node, ast.Name):
                        continue
                    if node.id in self.params:
                        found.add(node.id)
                    elif node.id in self.assigned and node.id not in self.positions and node.id not in seen:
                        seen.add(node.id)
                        following += self.assigned[node.id]
            todo = following
        return found

    def mark(self, expression: ast.AST, use: str, bound: str | None = None) -> None:
        for name in self.mentioned(expression):
            self.uses.sizes.setdefault(name, use)
            if bound is not None:
                self.uses.bounds.setdefault(name, bound)

    def read(self) -> ParamUses:
        for node in self.nodes:
            if isinstance(node, ast.Call):
                self._call(node)
            elif isinstance(node, ast.Compare) and any(isinstance(op, _ORDERING) for op in node.ops):
                self._comparison(node)
            elif isinstance(node, ast.BinOp):
                self._arithmetic(node)
            elif isinstance(node, ast.Attribute) and node.attr == "dtype" and isinstance(node.value, ast.Name):
                self.uses.pointers.add(node.value.id)
        self._pointers_through_locals()
        return self.uses

    def _call(self, node: ast.Call) -> None:
        last = (dotted_name(node.func) or "").rsplit(".", 1)[-1]
        if last == "cdiv":
            for arg in node.args:
                self.mark(arg, "tl.cdiv")
        elif last in ("range", "static_range"):
            for arg in node.args:
                self.mark(arg, "a loop bound", f"`{short_text(node)}`")
        elif (last in ("load", "store") or last.startswith("atomic_")) and node.args:
            base = leftmost(node.args[0])
            if isinstance(base, ast.Name):
                self.uses.pointers.add(base.id)
        else:
            self.helper_uses(node)

    def _comparison(self, node: ast.Compare) -> None:
        operands = [node.left, *node.comparators]
        for position, operand in enumerate(operands):
            # `offs < n` bounds a mask; `x < y` over loaded values is data, not a size
            others = operands[:position] + operands[position + 1 :]
            if any(is_index_expression(other, self.positions) for other in others):
                self.mark(operand, "a comparison", f"`{short_text(node)}`")

    def _arithmetic(self, node: ast.BinOp) -> None:
        right = node.right
        if isinstance(node.op, (ast.FloorDiv, ast.Mod)) and isinstance(right, ast.Name) and right.id in self.params:
            # `pid // sl`, `pid % sl`: a position split by a run-time extent (batch, sequence index)
            if is_index_expression(node.left, self.positions):
                self.mark(right, "a position's divisor", f"`{short_text(node)}`")
        elif isinstance(node.op, ast.Mult):
            for factor, other in ((node.left, node.right), (node.right, node.left)):
                if isinstance(factor, ast.Name) and factor.id in self.params and is_index_expression(
                        other, self.positions):
                    self.uses.pitches.add(factor.id)

    def _pointers_through_locals(self) -> None:
        # A load through a local (`row = req_to_token + i * n; tl.load(row + offs)`) makes what the local was
        # built from a pointer too: the leftmost term of its sums, a few steps back.
        found = set(self.uses.pointers)
        for _ in range(4):
            bases = {base.id for name in found for value in self.assigned.get(name, ())
                     if isinstance(base := leftmost(value), ast.Name)} - self.uses.pointers
            if not bases:
                break
            self.uses.pointers |= bases
            found = bases


def _arguments(call: ast.Call, helper: TritonKernel) -> dict[str, ast.expr]:
    """helper parameter -> the expression the call passes for it."""
    passed = {param.name: arg for param, arg in zip(helper.params, call.args) if not isinstance(arg, ast.Starred)}
    passed.update({keyword.arg: keyword.value for keyword in call.keywords if keyword.arg is not None})
    return passed


class HelperUses:
    """Uses of the jit functions of one file, each read once, for following calls into them."""

    def __init__(self, helpers: Mapping[str, TritonKernel]) -> None:
        self.helpers = helpers
        self._read: dict[str, ParamUses] = {}
        self._reading: set[str] = set()

    def of(self, kernel: TritonKernel, depth: int = 0) -> ParamUses:
        """The uses of `kernel`'s parameters, its calls into helpers of this file followed."""
        if kernel.qualname in self._read:
            return self._read[kernel.qualname]
        self._reading.add(kernel.qualname)
        params = {param.name for param in kernel.params}
        reader: _Reader

        def follow(call: ast.Call) -> None:
            self._follow(reader, call, depth)

        reader = _Reader(kernel.nodes(), params, follow)
        uses = reader.read()
        self._reading.discard(kernel.qualname)
        self._read[kernel.qualname] = uses
        return uses

    def _follow(self, reader: _Reader, call: ast.Call, depth: int) -> None:
        helper = self.helpers.get(call.func.id) if isinstance(call.func, ast.Name) else None
        if helper is None or helper.qualname in self._reading or depth >= _HELPER_DEPTH:
            return
        inner = self.of(helper, depth + 1)
        for name, expression in _arguments(call, helper).items():
            where = f" in `{helper.name}`"
            if name in inner.bounds:
                reader.mark(expression, inner.sizes.get(name, "a comparison") + where, inner.bounds[name] + where)
            elif name in inner.sizes:
                reader.mark(expression, inner.sizes[name] + where)
            if name in inner.pointers and isinstance(base := leftmost(expression), ast.Name):
                reader.uses.pointers.add(base.id)
            if name in inner.pitches and isinstance(expression, ast.Name) and expression.id in reader.params:
                reader.uses.pitches.add(expression.id)


def parameter_uses(nodes: list[ast.AST], params: set[str]) -> ParamUses:
    """The uses of `params` in `nodes` (one function's walked nodes), without following calls."""
    return _Reader(nodes, params, lambda call: None).read()
