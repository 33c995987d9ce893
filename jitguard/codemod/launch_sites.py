"""What the launches of a file's kernels pass (`kernel[grid](...)`), read from the source, never run.

`scan` uses these facts where a parameter's name and body cannot tell: a float passed for a parameter
(a literal, a true division, `float(...)`) makes it a float (never specialized), `True`/`False` makes a
flag, an argument computed from what another parameter receives (`stride_sh = triton.cdiv(L, BLK)`
passed beside `L`) makes the first derived from the second, and an int only known at run time
(`(y != -100).sum().item()`, `len(seqs)`, `x.numel()`: `runtime_count`) makes a count of the parameter it
is passed. Names are
resolved through the assignments of the function the launch is in (`stride_sh = ...`, a few steps
back; for run-time counts, every value a name is given on any branch).

    >>> import ast
    >>> tree = ast.parse("def f(x, L):\\n    s = cdiv(L, 4)\\n    k[(1,)](x, L, s, 1e-6)")
    >>> facts = launch_facts(tree, {"k": ["x_ptr", "n", "stride", "eps"]})["k"]
    >>> facts.derived["stride"], sorted(facts.floats)
    ({'n'}, ['eps'])
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

_RESOLVE_STEPS = 4


@dataclass
class LaunchFacts:
    """What the launches of one kernel in one file pass."""

    launches: int = 0
    floats: set[str] = field(default_factory=set)  # params passed a float literal
    flags: set[str] = field(default_factory=set)  # params passed True/False or a comparison
    derived: dict[str, set[str]] = field(default_factory=dict)  # param -> params whose argument it is computed from
    constants: set[str] = field(default_factory=set)  # params passed an int literal at every launch
    tensors: set[str] = field(default_factory=set)  # params passed a tensor the source creates: pointers
    # param -> the argument expressions passed (resolved through locals), for signature synthesis
    passed: dict[str, list[ast.expr]] = field(default_factory=dict)
    # param -> (source text, line, file: "" for the kernel's own) of a count only known at run time that a launch
    # passes it (`mask.sum().item()`)
    runtime: dict[str, tuple[str, int, str]] = field(default_factory=dict)


def _assignments(scope: ast.AST) -> dict[str, ast.expr]:
    """Names assigned exactly once in `scope` -> their value (a name assigned twice is left unresolved); a
    parameter of the scope's function that is never assigned -> its default value (`niter=10`)."""
    values: dict[str, list[ast.expr]] = {}
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            values.setdefault(node.targets[0].id, []).append(node.value)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:  # `T, H = x.shape`, `n += 1`, loop variables: not one value
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        values.setdefault(name.id, []).extend([node.value, node.value] if isinstance(
                            node, (ast.Assign, ast.AugAssign)) else [ast.Constant(None), ast.Constant(None)])
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        arguments = scope.args
        positional = [*arguments.posonlyargs, *arguments.args]
        defaults = list(zip(positional[len(positional) - len(arguments.defaults):], arguments.defaults))
        defaults += [(a, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d is not None]
        for argument, default in defaults:
            values.setdefault(argument.arg, [default])
    return {name: assigned[0] for name, assigned in values.items() if len(assigned) == 1}


# Tensor methods that keep a tensor's shape (what `.stride(i)` of the result depends on).
_SHAPE_KEEPING = frozenset({"contiguous", "to", "cuda", "cpu", "clone", "detach", "float", "half", "bfloat16",
                            "int", "long", "requires_grad_"})
_SHAPED_VIEWS = frozenset({"view", "reshape", "new_empty", "new_zeros", "new_ones", "new_full", "expand"})
_FACTORIES = frozenset({"empty", "zeros", "ones", "full", "randn", "rand", "randint"})


def _dims(tensor: ast.expr, assigned: Mapping[str, ast.expr]) -> list[ast.expr] | None:
    """The shape a tensor expression was created or viewed with (`torch.empty((B, T, H))`, `x.view(M, 2 * H)`,
    through locals and shape-keeping calls), or None when the source does not say."""
    for _ in range(2 * _RESOLVE_STEPS):
        tensor = _resolved(tensor, assigned)
        if isinstance(tensor, ast.Call) and isinstance(tensor.func, ast.Attribute) and (
                tensor.func.attr in _SHAPE_KEEPING):
            tensor = tensor.func.value
            continue
        break
    if not isinstance(tensor, ast.Call):
        return None
    func = tensor.func
    last = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if last not in _SHAPED_VIEWS and last not in _FACTORIES:
        return None
    args = list(tensor.args)
    if last == "full" or last.startswith("new_full"):
        args = args[:1]
    if len(args) == 1 and isinstance(args[0], (ast.Tuple, ast.List)):
        args = list(args[0].elts)
    if not args or any(isinstance(arg, ast.Starred) for arg in args):
        return None
    return args


def _axis_dims(tensor: ast.expr, index: ast.expr, stride: bool, assigned: Mapping[str, ast.expr]) -> list[ast.expr]:
    """The dimensions `tensor.stride(index)` (the product of the dimensions after the axis, in the layout
    the tensor was created with) or `tensor.shape[index]` is made of; [] when the source does not say.
    A transposed view (`.T`, `.t()`, `.mT`, `.transpose(a, b)`, `.permute(...)`) keeps its base's strides
    in another order: a column-major scale `torch.empty((K // 128, M)).T` has `stride(1) == M`."""
    base, order = _transposed(_resolved(tensor, assigned), assigned)
    dims = _dims(base, assigned)
    if dims is None or (order is not None and len(order) != len(dims)):
        return []
    axis = _constant_index(index, len(dims))
    if axis is None:
        return []
    axis = order[axis] if order is not None else axis
    return dims[axis + 1:] if stride else [dims[axis]]


def _transposed(tensor: ast.expr, assigned: Mapping[str, ast.expr]) -> tuple[ast.expr, list[int] | None]:
    """(the base tensor, view axis -> base axis) for a transposed view of a 2-D base; (tensor, None) else."""
    if isinstance(tensor, ast.Attribute) and tensor.attr in ("T", "mT"):
        return _resolved(tensor.value, assigned), [1, 0]
    if isinstance(tensor, ast.Call) and isinstance(tensor.func, ast.Attribute):
        method, args = tensor.func.attr, tensor.args
        if method == "t" and not args:
            return _resolved(tensor.func.value, assigned), [1, 0]
        literal = [a.value for a in args if isinstance(a, ast.Constant) and type(a.value) is int]
        if method == "transpose" and len(literal) == 2 == len(args) and sorted(v % 2 for v in literal) == [0, 1]:
            return _resolved(tensor.func.value, assigned), [1, 0]
        if method == "permute" and len(literal) == len(args) and sorted(literal) == list(range(len(args))):
            return _resolved(tensor.func.value, assigned), literal
    return tensor, None


def _constant_index(node: ast.expr, size: int) -> int | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        value = -node.operand.value if isinstance(node.operand.value, int) else None
    else:
        value = node.value if isinstance(node, ast.Constant) and isinstance(node.value, int) else None
    if value is None or isinstance(value, bool) or not -size <= value < size:
        return None
    return value % size


def _launched(call: ast.Call, kernels: Mapping[str, Sequence[str]]) -> str | None:
    """The kernel name of `NAME[grid](...)`, when NAME is one of `kernels`."""
    func = call.func
    if isinstance(func, ast.Subscript) and isinstance(func.value, ast.Name) and func.value.id in kernels:
        return func.value.id
    return None


def _resolved(expression: ast.expr, assigned: Mapping[str, ast.expr]) -> ast.expr:
    for _ in range(_RESOLVE_STEPS):
        if isinstance(expression, ast.Name) and expression.id in assigned:
            expression = assigned[expression.id]
        else:
            break
    return expression


def _parts(expression: ast.expr, assigned: Mapping[str, ast.expr]) -> set[str]:
    """The `expression_key` of every sub-expression an argument is computed from, locals expanded a few steps; the
    stride of a tensor whose shape the source gives depends on the dimensions after its axis only, and
    the stride of one whose shape it does not give on nothing known."""
    found: set[str] = set()
    _collect(expression, assigned, found, 0)
    return found


def expression_key(node: ast.AST) -> str:
    """A cheap text key of an expression: equal for the same spelling (`x.shape[0]`, `T * H`)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Constant):
        return repr(node.value)
    if isinstance(node, ast.Attribute):
        return f"{expression_key(node.value)}.{node.attr}"
    if isinstance(node, ast.Subscript):
        return f"{expression_key(node.value)}[{expression_key(node.slice)}]"
    if isinstance(node, ast.Call):
        return f"{expression_key(node.func)}({','.join(expression_key(arg) for arg in node.args)})"
    if isinstance(node, ast.BinOp):
        return f"({expression_key(node.left)} {type(node.op).__name__} {expression_key(node.right)})"
    if isinstance(node, ast.UnaryOp):
        return f"{type(node.op).__name__} {expression_key(node.operand)}"
    if isinstance(node, (ast.Tuple, ast.List)):
        return f"({','.join(expression_key(item) for item in node.elts)})"
    return f"<{type(node).__name__} {id(node)}>"  # matches only itself


def _collect(node: ast.AST, assigned: Mapping[str, ast.expr], found: set[str], depth: int) -> None:
    if depth > 3 * _RESOLVE_STEPS or not isinstance(node, ast.expr) or isinstance(node, ast.Constant):
        return
    found.add(expression_key(node))
    axis_of = _tensor_axis(node)
    if axis_of is not None:
        tensor, index, stride = axis_of
        for dim in _axis_dims(tensor, index, stride, assigned):
            _collect(dim, assigned, found, depth + 1)
        return
    if isinstance(node, ast.Name) and node.id in assigned:
        _collect(assigned[node.id], assigned, found, depth + 1)
        return
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "numel" and not node.args:
            for dim in _dims(func.value, assigned) or []:
                _collect(dim, assigned, found, depth + 1)
        elif _callee(node) in _ARITHMETIC:
            for arg in node.args:
                _collect(arg, assigned, found, depth + 1)
        return  # another function (`bucket(n)`) may map the count to few values: not followed
    for child in ast.iter_child_nodes(node):
        _collect(child, assigned, found, depth + 1)


# Calls whose result moves with their arguments (a count through one is still a count).
_ARITHMETIC = frozenset({"cdiv", "ceil_div", "div_up", "round_up", "align", "ceil", "floor", "max", "min", "int",
                         "abs", "next_power_of_2", "prod"})


def _callee(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _is_tensor(value: ast.expr, assigned: Mapping[str, ast.expr]) -> bool:
    """A tensor the source creates or views (`torch.zeros(...)`, `x.view(...)`, `torch.empty_like(x)`)."""
    return _dims(value, assigned) is not None or (
        isinstance(value, ast.Call) and _callee(value).endswith("_like") and bool(value.args))


def _tensor_axis(node: ast.expr) -> tuple[ast.expr, ast.expr, bool] | None:
    """(tensor, axis, is a stride) for `t.stride(i)`, `t.stride()[i]`, `t.shape[i]`, `t.size(i)`."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("stride", "size") \
            and len(node.args) == 1:
        return node.func.value, node.args[0], node.func.attr == "stride"
    if isinstance(node, ast.Subscript):
        base = node.value
        if isinstance(base, ast.Attribute) and base.attr == "shape":
            return base.value, node.slice, False
        if isinstance(base, ast.Call) and isinstance(base.func, ast.Attribute) and base.func.attr in (
                "stride", "size") and not base.args:
            return base.func.value, node.slice, base.func.attr == "stride"
    return None


def _is_flag(expression: ast.expr) -> bool:
    if isinstance(expression, ast.Constant):
        return isinstance(expression.value, bool)
    return isinstance(expression, (ast.Compare, ast.BoolOp)) or (
        isinstance(expression, ast.UnaryOp) and isinstance(expression.op, ast.Not))


def all_values(scope: ast.AST) -> dict[str, list[ast.expr]]:
    """Every value each name of `scope` is assigned (`n = a` on one branch, `n = b` on another: both); a tuple
    target takes its item of the value (`B, T = x.shape`: `T` is `x.shape[1]`); `n += v` adds `v`."""
    values: dict[str, list[ast.expr]] = {}
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                _bind(target, node.value, values)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None and isinstance(
                node.target, ast.Name):
            values.setdefault(node.target.id, []).append(node.value)
        elif isinstance(node, ast.NamedExpr):
            values.setdefault(node.target.id, []).append(node.value)
    return values


def _bind(target: ast.expr, value: ast.expr, values: dict[str, list[ast.expr]]) -> None:
    if isinstance(target, ast.Name):
        values.setdefault(target.id, []).append(value)
        return
    if not isinstance(target, (ast.Tuple, ast.List)) or any(isinstance(e, ast.Starred) for e in target.elts):
        return
    for index, element in enumerate(target.elts):
        if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
            item = value.elts[index]
        else:
            item = ast.copy_location(ast.Subscript(value=value, slice=ast.Constant(index), ctx=ast.Load()), value)
        _bind(element, item, values)


# Tensor methods whose result holds ints whatever the input (`mask.nonzero()`, `x.long()`).
_INT_TENSORS = frozenset({"int", "long", "short", "nonzero", "argwhere", "argmax", "argmin", "count_nonzero",
                          "bincount", "argsort", "searchsorted"})
# Tensor methods and torch functions whose result is a bool tensor.
_BOOL_TENSORS = frozenset({"bool", "eq", "ne", "lt", "le", "gt", "ge", "isnan", "isinf", "isfinite", "isin",
                           "logical_and", "logical_or", "logical_not", "logical_xor"})
# Reductions that keep an int tensor's ints; `sum` and `cumsum` also count a bool tensor's True values.
_INT_REDUCTIONS = frozenset({"sum", "cumsum", "max", "min", "amax", "amin", "prod"})
_COUNTING_REDUCTIONS = frozenset({"sum", "cumsum"})
# Tensor methods that keep what a tensor holds (`.to(device)` without a dtype, views, copies).
_KIND_KEEPING = frozenset({"to", "contiguous", "cuda", "cpu", "clone", "detach", "flatten", "view", "reshape",
                           "squeeze", "unsqueeze", "masked_select"})


def _operand(call: ast.Call) -> ast.expr | None:
    """What a tensor method or torch function works on: `x` of `x.sum()` and of `torch.sum(x)`."""
    func = call.func
    if isinstance(func, ast.Attribute) and not (isinstance(func.value, ast.Name) and func.value.id in ("torch", "tl")):
        return func.value
    return call.args[0] if call.args else None


def _tensor_kind(tensor: ast.expr, values: Mapping[str, list[ast.expr]], depth: int = 0,
                 seen: frozenset[str] = frozenset()) -> str | None:
    """"bool" or "int" when the source shows what a tensor holds (a comparison, `.long()`, `dtype=torch.int32`,
    `mask.sum()`), else None: a float tensor's `.item()` is a float, never specialized."""
    if depth > 3 * _RESOLVE_STEPS:
        return None
    if isinstance(tensor, ast.Compare):
        return "bool"
    if isinstance(tensor, ast.Name):
        if tensor.id in seen:
            return None  # `mask = mask & other`: the other values decide
        kinds = {_tensor_kind(value, values, depth + 1, seen | {tensor.id}) for value in values.get(tensor.id, [])}
        return kinds.pop() if len(kinds) == 1 else None
    if isinstance(tensor, ast.UnaryOp) and isinstance(tensor.op, ast.Invert):
        return _tensor_kind(tensor.operand, values, depth + 1, seen)
    if isinstance(tensor, ast.BinOp) and isinstance(tensor.op, (ast.BitAnd, ast.BitOr, ast.BitXor)):
        left = _tensor_kind(tensor.left, values, depth + 1, seen)
        return left if left == _tensor_kind(tensor.right, values, depth + 1, seen) else None
    if isinstance(tensor, ast.Subscript):
        return _tensor_kind(tensor.value, values, depth + 1, seen)
    if not isinstance(tensor, ast.Call):
        return None
    callee, operand = _callee(tensor), _operand(tensor)
    dtype = next((keyword.value for keyword in tensor.keywords if keyword.arg == "dtype"), None)
    if callee == "to" and dtype is None and tensor.args:
        dtype = tensor.args[-1]
    named = ast.unparse(dtype).rsplit(".", 1)[-1] if dtype is not None else ""
    if named == "bool" or re.fullmatch(r"u?int\d*|long|short", named):
        return "bool" if named == "bool" else "int"
    if re.fullmatch(r"float\w*|b?float16|half|double|dtype", named):
        return None
    if callee in _KIND_KEEPING and operand is not None:
        return _tensor_kind(operand, values, depth + 1, seen)
    if callee in _BOOL_TENSORS:
        return "bool"
    if callee in _INT_TENSORS:
        return "int"
    if callee in _INT_REDUCTIONS and operand is not None:
        inner = _tensor_kind(operand, values, depth + 1, seen)
        return "int" if inner == "int" or (inner == "bool" and callee in _COUNTING_REDUCTIONS) else None
    return None


def runtime_count(expression: ast.expr, values: Mapping[str, list[ast.expr]],
                  assigned: Mapping[str, ast.expr], depth: int = 0,
                  memo: dict[str, ast.expr | None] | None = None) -> ast.expr | None:
    """The part of a launch argument that makes it an int known only at run time, or None: an int read back from
    a tensor (`(y != -100).sum().item()`, `int(n.item())`), `len(seqs)`, `x.numel()` of a tensor whose shape the
    source does not fix; through locals (any of their values), arithmetic and `cdiv`-like calls, not through
    other functions (`bucket(n)` may map a count to few values). `memo`: each local's answer, once per argument."""
    memo = {} if memo is None else memo
    if depth > 3 * _RESOLVE_STEPS or isinstance(expression, ast.Constant) or _makes_float(expression):
        return None
    if isinstance(expression, ast.Name):
        if expression.id not in memo:
            memo[expression.id] = None  # while it is resolved: a local computed from itself adds nothing
            memo[expression.id] = _local_count(expression.id, values, assigned, depth, memo)
        return memo[expression.id]
    if isinstance(expression, ast.Call):
        return _runtime_call(expression, values, assigned, depth, memo)
    children: list[ast.expr] = []
    if isinstance(expression, ast.BinOp):
        children = [expression.left, expression.right]
    elif isinstance(expression, ast.UnaryOp):
        children = [expression.operand]
    elif isinstance(expression, ast.IfExp):
        children = [expression.body, expression.orelse]
    for child in children:
        found = runtime_count(child, values, assigned, depth + 1, memo)
        if found is not None:
            return found
    return None


def _local_count(name: str, values: Mapping[str, list[ast.expr]], assigned: Mapping[str, ast.expr], depth: int,
                 memo: dict[str, ast.expr | None]) -> ast.expr | None:
    if any(_makes_float(value) for value in values.get(name, [])):
        return None  # a float on some path (`scale = 1.0 / n`): never specialized there, and no count
    for value in values.get(name, []):
        found = runtime_count(value, values, assigned, depth + 1, memo)
        if found is not None:
            return found
    return None


def _makes_float(expression: ast.expr) -> bool:
    """A float by its spelling: a float literal, a true division (`1.0 / n`, `n / 2`), `float(...)`, or arithmetic
    with one of those (`n * 0.5`)."""
    if isinstance(expression, ast.Constant):
        return isinstance(expression.value, float)
    if isinstance(expression, ast.BinOp):
        return isinstance(expression.op, ast.Div) or _makes_float(expression.left) or _makes_float(expression.right)
    if isinstance(expression, ast.UnaryOp):
        return _makes_float(expression.operand)
    return isinstance(expression, ast.Call) and isinstance(expression.func, ast.Name) and expression.func.id == "float"


def _runtime_call(call: ast.Call, values: Mapping[str, list[ast.expr]], assigned: Mapping[str, ast.expr],
                  depth: int, memo: dict[str, ast.expr | None]) -> ast.expr | None:
    callee, operand = _callee(call), _operand(call)
    if callee == "item" and not call.args and operand is not None:
        return call if _tensor_kind(operand, values) == "int" else None  # a bool's or a float's item is no count
    if callee == "int" and isinstance(call.func, ast.Name) and len(call.args) == 1:
        inner = call.args[0]
        if isinstance(inner, ast.Call) and _callee(inner) == "item":
            return call  # `int(t.item())`: an int read back from a tensor
        return runtime_count(inner, values, assigned, depth + 1, memo)
    if callee == "len" and isinstance(call.func, ast.Name) and len(call.args) == 1:
        sized = call.args[0]
        literal = isinstance(sized, (ast.List, ast.Tuple, ast.Set, ast.Dict, ast.Constant))
        shape = (isinstance(sized, ast.Attribute) and sized.attr == "shape") or (
            isinstance(sized, ast.Call) and _callee(sized) in ("size", "stride"))
        return None if literal or shape else call
    if callee == "numel" and operand is not None:
        dims = _dims(operand, assigned)
        if dims is None:
            return call
        for dim in dims:
            found = runtime_count(dim, values, assigned, depth + 1, memo)
            if found is not None:
                return found
        return None
    if callee in _ARITHMETIC or callee == "round":
        for arg in call.args:
            found = runtime_count(arg, values, assigned, depth + 1, memo)
            if found is not None:
                return found
    return None


def launch_lines(source: bytes, names: Sequence[str]) -> set[int]:
    """Line numbers where `NAME[` (a launch of one of `names`) is written: the statements worth walking."""
    if not names:
        return set()
    pattern = re.compile(rb"\b(?:" + b"|".join(re.escape(n.encode()) for n in names) + rb")[ \t]*\[")
    return {source.count(b"\n", 0, match.start()) + 1 for match in pattern.finditer(source)}


def _holds(statement: ast.stmt, lines: set[int] | None) -> bool:
    if lines is None:
        return True
    end = statement.end_lineno or statement.lineno
    return any(statement.lineno <= line <= end for line in lines)


def _calls(tree: ast.Module, match: Callable[[ast.Call], str | None],
           lines: set[int] | None) -> list[tuple[str, ast.Call, ast.AST]]:
    """(name, call, the innermost function holding it or the module) of each call `match` names, in source order,
    in one walk of the statements holding `lines` (None: all)."""
    found: list[tuple[str, ast.Call, ast.AST]] = []
    stack: list[tuple[ast.AST, ast.AST]] = [(tree, tree)]
    while stack:
        node, scope = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt) and not _holds(child, lines):
                continue
            if isinstance(child, ast.Call):
                name = match(child)
                if name is not None:
                    found.append((name, child, scope))
            stack.append((child, child if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else scope))
    return sorted(found, key=lambda item: (item[1].lineno, item[1].col_offset))


class _Scopes:
    """The assignments of each function holding a launch, and where the file calls a wrapper function: read once."""

    def __init__(self, tree: ast.Module, source: bytes | None) -> None:
        self.tree, self.source = tree, source
        self._facts: dict[int, tuple[dict[str, ast.expr], dict[str, list[ast.expr]]]] = {}
        self._callers: dict[str, list[tuple[str, ast.Call, ast.AST]]] = {}

    def facts(self, scope: ast.AST) -> tuple[dict[str, ast.expr], dict[str, list[ast.expr]]]:
        """(names assigned once -> value, every value of each name) in `scope`."""
        if id(scope) not in self._facts:
            self._facts[id(scope)] = (_assignments(scope), all_values(scope))
        return self._facts[id(scope)]

    def callers(self, function: str, method: bool) -> list[tuple[str, ast.Call, ast.AST]]:
        """Calls of `function` in the file with their scopes: `function(...)`, or for a method `self.function(...)`
        and `cls.function(...)` (another object's method of that name may take other arguments)."""
        key = f"{'.' if method else ''}{function}"
        if key not in self._callers:
            lines = None
            if self.source is not None:
                pattern = re.compile(rb"\b" + re.escape(function.encode()) + rb"[ \t]*\(")
                lines = {self.source.count(b"\n", 0, m.start()) + 1 for m in pattern.finditer(self.source)}

            def match(call: ast.Call) -> str | None:
                func = call.func
                if isinstance(func, ast.Attribute):
                    own = isinstance(func.value, ast.Name) and func.value.id in ("self", "cls")
                    return function if method and own and func.attr == function else None
                return function if not method and isinstance(func, ast.Name) and func.id == function else None

            self._callers[key] = _calls(self.tree, match, lines) if lines != set() else []
        return self._callers[key]

    def wrapper_count(self, argument: ast.expr, scope: ast.AST, depth: int = 0) -> ast.expr | None:
        """A run-time count the file's callers pass a wrapper for the parameter `argument` names: a launch inside
        `def launch(x, n)` passing `n`, and `launch(x, mask.sum().item())` elsewhere in the file."""
        if depth >= _WRAPPER_DEPTH or not isinstance(argument, ast.Name) or not isinstance(
                scope, (ast.FunctionDef, ast.AsyncFunctionDef)) or argument.id in self.facts(scope)[1]:
            return None
        positional = [a.arg for a in (*scope.args.posonlyargs, *scope.args.args)]
        keywords = {a.arg for a in scope.args.kwonlyargs}
        if argument.id not in positional and argument.id not in keywords:
            return None
        method = bool(positional) and positional[0] in ("self", "cls")
        for _, call, caller in self.callers(scope.name, method):
            passed = _argument_for(call, argument.id, positional)
            if passed is None:
                continue
            assigned, values = self.facts(caller)
            found = runtime_count(passed, values, assigned) or self.wrapper_count(passed, caller, depth + 1)
            if found is not None:
                return found
        return None


# How many wrappers deep a launch argument is followed to the file's calls of the function holding the launch.
_WRAPPER_DEPTH = 2


def _argument_for(call: ast.Call, name: str, positional: list[str]) -> ast.expr | None:
    """What `call` passes for the parameter `name` of a function whose positional parameters are `positional`
    (a method called as `obj.method(...)` gets `self` from `obj`)."""
    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword.value
    if name not in positional:
        return None
    index = positional.index(name)
    if positional[0] in ("self", "cls") and isinstance(call.func, ast.Attribute):
        index -= 1  # `self.launch(x, n)` passes `self` itself
    arguments = call.args[:next((i for i, a in enumerate(call.args) if isinstance(a, ast.Starred)), len(call.args))]
    return arguments[index] if 0 <= index < len(arguments) else None


def _passed(call: ast.Call, params: Sequence[str]) -> dict[str, ast.expr]:
    """param -> the argument a launch passes it, by position (up to a `*args`) and by keyword."""
    passed: dict[str, ast.expr] = {}
    for param, arg in zip(params, call.args):
        if isinstance(arg, ast.Starred):
            break
        passed[param] = arg
    passed.update({k.arg: k.value for k in call.keywords if k.arg is not None and k.arg in params})
    return passed


def launch_facts(tree: ast.Module, kernels: Mapping[str, Sequence[str]],
                 source: bytes | None = None) -> dict[str, LaunchFacts]:
    """kernel name -> what its launches in `tree` pass; `kernels` maps each launchable name to its
    parameter names (a kernel bound to another name, `fast = triton.jit(_fast)`, under that name).
    With the file's `source`, only the statements that spell a launch are walked."""
    facts: dict[str, LaunchFacts] = {}
    varying: dict[str, set[str]] = {}  # kernel -> params passed something other than an int literal somewhere
    lines = launch_lines(source, list(kernels)) if source is not None else None
    if lines == set():
        return facts
    scopes = _Scopes(tree, source)
    for name, call, scope in _calls(tree, lambda call: _launched(call, kernels), lines):
        assigned, values = scopes.facts(scope)
        passed = _passed(call, kernels[name])
        found = facts.setdefault(name, LaunchFacts())
        found.launches += 1
        parts = {param: _parts(arg, assigned) for param, arg in passed.items()}
        whole = {param: expression_key(_resolved(arg, assigned)) for param, arg in passed.items()}
        for param, arg in passed.items():
            value = _resolved(arg, assigned)
            found.passed.setdefault(param, []).append(value)
            if isinstance(value, ast.Constant) and type(value.value) is int:
                found.constants.add(param)
            else:
                varying.setdefault(name, set()).add(param)
            if _makes_float(value):
                found.floats.add(param)
            if _is_flag(value):
                found.flags.add(param)
            if _is_tensor(value, assigned):
                found.tensors.add(param)
            counted = runtime_count(arg, values, assigned) or scopes.wrapper_count(arg, scope)
            if counted is not None and param not in found.runtime:
                found.runtime[param] = (_cut(ast.unparse(counted)), counted.lineno, "")
            sources = {other for other, text in whole.items()
                       if other != param and text != whole[param] and text in parts[param]}
            if sources:
                found.derived.setdefault(param, set()).update(sources)
    for name, found in facts.items():
        found.constants -= varying.get(name, set())
    return facts


def _cut(text: str, limit: int = 48) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def merged_facts(found: Sequence[LaunchFacts]) -> LaunchFacts | None:
    """What several sets of launches pass, as one (an int literal counts only where every set passes one)."""
    if len(found) <= 1:
        return found[0] if found else None
    merged = LaunchFacts(constants=set.intersection(*(facts.constants for facts in found)))
    for facts in found:
        merged.launches += facts.launches
        merged.floats |= facts.floats
        merged.flags |= facts.flags
        merged.tensors |= facts.tensors
        for param, sources in facts.derived.items():
            merged.derived.setdefault(param, set()).update(sources)
        for param, values in facts.passed.items():
            merged.passed.setdefault(param, []).extend(values)
        for param, counted in facts.runtime.items():
            merged.runtime.setdefault(param, counted)
    return merged


#: How launches of a kernel defined in another file name its parameters: by position until the kernel's own
#: names are known (`#0`, `#1`, ...), by keyword as written.
POSITION = "#{}"


def by_position(tree: ast.Module, names: Sequence[str], source: bytes | None = None) -> dict[str, LaunchFacts]:
    """What the launches of `names` (kernels this file does not define) pass, parameters named `#0`, `#1`, ...
    by position and by keyword as written; without the argument expressions (`passed`), so the facts travel
    between processes."""
    lines = launch_lines(source, list(names)) if source is not None else None
    if not names or lines == set():
        return {}
    wanted: dict[str, Sequence[str]] = dict.fromkeys(names, ())
    calls = _calls(tree, lambda call: _launched(call, wanted), lines)
    params: dict[str, list[str]] = {}
    for name, call, _ in calls:
        listed = params.setdefault(name, [])
        for index in range(len(call.args)):
            if POSITION.format(index) not in listed:
                listed.append(POSITION.format(index))
        listed += [k.arg for k in call.keywords if k.arg is not None and k.arg not in listed]
    facts = launch_facts(tree, params, source)
    for found in facts.values():
        found.passed = {}
    return facts


def named_by(facts: LaunchFacts, params: Sequence[str], file: str = "") -> LaunchFacts:
    """`facts` from :func:`by_position` with `#i` renamed to the i-th of the kernel's `params` (others dropped);
    `file`: where those launches are, named by the run-time counts found there."""
    known = set(params)

    def name(key: str) -> str | None:
        if key.startswith("#") and key[1:].isdigit():
            index = int(key[1:])
            return params[index] if index < len(params) else None
        return key if key in known else None

    def names(keys: set[str]) -> set[str]:
        return {renamed for key in keys if (renamed := name(key)) is not None}

    renamed = LaunchFacts(launches=facts.launches, floats=names(facts.floats), flags=names(facts.flags),
                          constants=names(facts.constants), tensors=names(facts.tensors))
    for key, sources in facts.derived.items():
        if (param := name(key)) is not None:
            renamed.derived[param] = names(sources)
    for key, (text, line, where) in facts.runtime.items():
        if (param := name(key)) is not None:
            renamed.runtime[param] = (text, line, where or file)
    return renamed
