"""The `triton.Config`s an autotune is given, read from the source (never run) when they are built by code:
a function of the same file or package that returns `triton.autotune(configs=...)` (a decorator
`@my_autotune()`), a config list from a function, a module-level constant, a list comprehension over
literal lists, or a loop of `configs.append(triton.Config(...))` over literal lists.

Only literals, names bound to literals and arithmetic on them are evaluated; anything else (a value
read from the environment, a device query) leaves the list unresolved: `None`, and the caller says so.

    >>> import ast
    >>> tree = ast.parse('''
    ... import triton
    ... def configs():
    ...     return [triton.Config({"BLOCK": b}, num_warps=4 if b < 128 else 8) for b in (64, 128)]
    ... def tuned():
    ...     return triton.autotune(configs=configs(), key=["n"])
    ... ''')
    >>> scope = ModuleScope(tree, None)
    >>> factory = ast.parse("tuned()").body[0].value
    >>> resolve_factory_configs(factory, scope)
    [({'BLOCK': 64}, {'num_warps': 4}), ({'BLOCK': 128}, {'num_warps': 8})]
"""

from __future__ import annotations

import ast
import itertools
from pathlib import Path
from typing import Any

from jitguard.codemod.kernels import configs_argument, dotted_name
from jitguard.events import CONFIG_OPTIONS

# Bounds on what is followed: calls through functions, and configs built (a list past this is cut).
MAX_DEPTH = 4
MAX_CONFIGS = 256
Config = tuple[dict[str, Any], dict[str, Any]]


class Unresolved(Exception):
    """A value the source does not give as literals."""


class ModuleScope:
    """One module's functions, module-level assignments and `from X import name` imports (other files of
    the same tree are read on demand, once)."""

    def __init__(self, tree: ast.Module, file: Path | None, cache: dict[Path, ModuleScope] | None = None) -> None:
        self.file = file
        self.functions: dict[str, ast.FunctionDef] = {}
        self.constants: dict[str, ast.expr] = {}
        self.imports: dict[str, tuple[int, str, str]] = {}  # local name -> (level, module, name)
        self._cache = cache if cache is not None else {}
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                self.functions[node.name] = node
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                self.constants[node.targets[0].id] = node.value
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    self.imports[alias.asname or alias.name] = (node.level, node.module or "", alias.name)

    def function(self, name: str) -> tuple[ast.FunctionDef, ModuleScope] | None:
        """The function `name` names here: defined in this module or imported from a file of its tree."""
        if name in self.functions:
            return self.functions[name], self
        other = self._imported(name)
        if other is None:
            return None
        found = other[0].functions.get(other[1])
        return (found, other[0]) if found is not None else None

    def constant(self, name: str) -> tuple[ast.expr, ModuleScope] | None:
        """The expression a module-level name is assigned (here, or in the module it is imported from)."""
        if name in self.constants:
            return self.constants[name], self
        other = self._imported(name)
        if other is None or other[1] not in other[0].constants:
            return None
        return other[0].constants[other[1]], other[0]

    def _imported(self, name: str) -> tuple[ModuleScope, str] | None:
        if name not in self.imports or self.file is None:
            return None
        level, module, original = self.imports[name]
        path = _module_file(self.file, level, module)
        if path is None:
            return None
        if path not in self._cache:
            try:
                self._cache[path] = ModuleScope(ast.parse(path.read_bytes()), path, self._cache)
            except (OSError, SyntaxError, ValueError, RecursionError):
                return None
        return self._cache[path], original


def _module_file(file: Path, level: int, module: str) -> Path | None:
    """The file `from <level dots><module> import ...` in `file` reads: relative imports from the file's
    folder; absolute ones under any folder above the file (the tree being fixed holds the package)."""
    parts = module.split(".") if module else []
    if level:
        bases = [file.parent.parents[level - 2] if level > 1 else file.parent]
    else:
        bases = list(file.parent.parents)[:8] + [file.parent]
    for base in bases:
        candidate = base.joinpath(*parts)
        for path in (candidate.with_suffix(".py"), candidate / "__init__.py"):
            if parts and path.is_file():
                return path
    return None


def resolve_factory_configs(call: ast.Call, scope: ModuleScope) -> list[Config] | None:
    """The configs of an autotune decorator `call`: its `configs=` list, or, for a call of a function with
    no configs (`@my_autotune()`), the configs of the `triton.autotune(...)` that function returns. None
    when they cannot be read statically."""
    try:
        argument = configs_argument(call)
        if argument is not None:
            return _configs(argument, {}, scope, 0)
        name = dotted_name(call.func)
        found = scope.function(name) if name and "." not in name else None
        if found is None:
            return None
        function, home = found
        for node in ast.walk(function):
            if isinstance(node, ast.Return) and isinstance(node.value, ast.Call) and (
                    dotted_name(node.value.func) or "").endswith("autotune"):
                inner = configs_argument(node.value)
                return _configs(inner, {}, home, 1) if inner is not None else None
        return None
    except (Unresolved, RecursionError, ArithmeticError, TypeError, ValueError):
        return None


def _configs(node: ast.expr, env: dict[str, Any], scope: ModuleScope, depth: int) -> list[Config]:
    if depth > MAX_DEPTH:
        raise Unresolved("too deep")
    if isinstance(node, (ast.List, ast.Tuple)):
        found: list[Config] = []
        for element in node.elts:
            found += _configs(element.value if isinstance(element, ast.Starred) else element, env, scope, depth)
        return found[:MAX_CONFIGS]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return (_configs(node.left, env, scope, depth) + _configs(node.right, env, scope, depth))[:MAX_CONFIGS]
    if isinstance(node, ast.ListComp):
        found = []
        for bound in _bindings(node.generators, env, scope):
            found += _configs(node.elt, bound, scope, depth)
        return found[:MAX_CONFIGS]
    if isinstance(node, ast.Name):
        if node.id in env and isinstance(env[node.id], list):
            return list(env[node.id])
        constant = scope.constant(node.id)
        if constant is None:
            raise Unresolved(node.id)
        return _configs(constant[0], {}, constant[1], depth + 1)
    if isinstance(node, ast.Call):
        name = dotted_name(node.func) or ""
        if name.rsplit(".", 1)[-1] == "Config":
            return [_one_config(node, env, scope)]
        found_function = scope.function(name) if name and "." not in name and not node.args else None
        if found_function is not None:
            return _run(found_function[0].body, {}, found_function[1], depth + 1)
    raise Unresolved(ast.dump(node)[:60])


def _one_config(call: ast.Call, env: dict[str, Any], scope: ModuleScope) -> Config:
    """(constexprs, launch options) of `triton.Config({...}, num_warps=...)` or `Config(dict(A=1))`."""
    values: dict[str, Any] = {}
    first = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "kwargs"), None)
    if isinstance(first, ast.Dict):
        for key, value in zip(first.keys, first.values):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                raise Unresolved("config key")
            values[key.value] = _scalar(value, env, scope)
    elif isinstance(first, ast.Call) and dotted_name(first.func) == "dict" and not first.args:
        values = {k.arg: _scalar(k.value, env, scope) for k in first.keywords if k.arg is not None}
    else:
        raise Unresolved("config values")
    options = {k.arg: _scalar(k.value, env, scope) for k in call.keywords if k.arg in CONFIG_OPTIONS}
    return values, options


def _bindings(generators: list[ast.comprehension], env: dict[str, Any], scope: ModuleScope) -> list[dict[str, Any]]:
    """Every binding of a comprehension's targets over literal iterables, its `if`s applied."""
    found = [env]
    for generator in generators:
        following = []
        for bound in found:
            for item in _iterable(generator.iter, bound, scope):
                candidate = _bind(generator.target, item, bound)
                if all(_scalar(test, candidate, scope) for test in generator.ifs):
                    following.append(candidate)
                if len(following) > MAX_CONFIGS:
                    raise Unresolved("too many")
        found = following
    return found


def _iterable(node: ast.expr, env: dict[str, Any], scope: ModuleScope) -> list[Any]:
    if isinstance(node, ast.Call) and dotted_name(node.func) == "range":
        bounds = [_scalar(a, env, scope) for a in node.args]
        if not all(type(b) is int for b in bounds) or len(bounds) > 3:
            raise Unresolved("range")
        return list(range(*bounds))
    if isinstance(node, ast.Call) and dotted_name(node.func) in ("itertools.product", "product"):
        return list(itertools.product(*(_iterable(a, env, scope) for a in node.args)))
    if isinstance(node, ast.Name) and node.id not in env:
        constant = scope.constant(node.id)
        if constant is None:
            raise Unresolved(node.id)
        return _iterable(constant[0], {}, constant[1])
    value = _scalar(node, env, scope)
    if not isinstance(value, (list, tuple)):
        raise Unresolved("not iterable")
    return list(value)


def _bind(target: ast.expr, item: Any, env: dict[str, Any]) -> dict[str, Any]:
    if isinstance(target, ast.Name):
        return {**env, target.id: item}
    if isinstance(target, (ast.Tuple, ast.List)) and isinstance(item, (list, tuple)) and len(item) == len(
            target.elts):
        for element, value in zip(target.elts, item):
            env = _bind(element, value, env)
        return env
    raise Unresolved("loop target")


_OPERATORS: dict[type, Any] = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b, ast.Div: lambda a, b: a / b,
    ast.LShift: lambda a, b: a << b, ast.RShift: lambda a, b: a >> b,
    ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b, ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}


def _scalar(node: ast.expr, env: dict[str, Any], scope: ModuleScope) -> Any:
    """The value of a literal expression over `env` (numbers, strings, bools, None, tuples and lists of
    them, arithmetic and comparisons); `Unresolved` for anything else."""
    if isinstance(node, ast.Constant):
        return node.value
    name = dotted_name(node) if isinstance(node, ast.Attribute) else None
    if name and name.split(".")[0] in ("tl", "triton", "gl") and len(name.split(".")) > 1:
        return "triton.language." + name.rsplit(".", 1)[-1]  # a dtype, as signatures write it
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        constant = scope.constant(node.id)
        if constant is None:
            raise Unresolved(node.id)
        return _scalar(constant[0], {}, constant[1])
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_scalar(e, env, scope) for e in node.elts]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Not)):
        value = _scalar(node.operand, env, scope)
        return -value if isinstance(node.op, ast.USub) else not value
    if isinstance(node, ast.IfExp):
        return _scalar(node.body if _scalar(node.test, env, scope) else node.orelse, env, scope)
    if isinstance(node, ast.BoolOp):
        values = [_scalar(v, env, scope) for v in node.values]
        return all(values) if isinstance(node.op, ast.And) else any(values)
    operator = None
    if isinstance(node, ast.BinOp):
        operator, parts = _OPERATORS.get(type(node.op)), [node.left, node.right]
    elif isinstance(node, ast.Compare) and len(node.ops) == 1:
        operator, parts = _OPERATORS.get(type(node.ops[0])), [node.left, node.comparators[0]]
    if operator is None:
        raise Unresolved(ast.dump(node)[:60])
    return operator(*(_scalar(part, env, scope) for part in parts))


def _run(body: list[ast.stmt], env: dict[str, Any], scope: ModuleScope, depth: int) -> list[Config]:
    """The configs a function body returns, executing only assignments of literals, `for` loops over
    literal iterables, `if`s it can decide, `.append(...)` / `+=` on config lists, and `return`."""
    result = _execute(body, env, scope, depth)
    if result is None:
        raise Unresolved("no return")
    return result[:MAX_CONFIGS]


def _execute(body: list[ast.stmt], env: dict[str, Any], scope: ModuleScope, depth: int) -> list[Config] | None:
    for statement in body:
        if isinstance(statement, ast.Return) and statement.value is not None:
            return _configs(statement.value, env, scope, depth)
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
            try:
                env.update(_bind(target, _scalar(value, env, scope), {}))
            except Unresolved:
                if not isinstance(target, ast.Name):
                    raise
                env[target.id] = _configs(value, env, scope, depth)
        elif isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name) and isinstance(
                env.get(statement.target.id), list):
            env[statement.target.id] += _configs(statement.value, env, scope, depth)
        elif isinstance(statement, ast.Expr) and _is_append(statement.value, env):
            call = statement.value
            assert isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            assert isinstance(call.func.value, ast.Name)
            env[call.func.value.id] += _configs(call.args[0], env, scope, depth)
            if len(env[call.func.value.id]) > MAX_CONFIGS:
                raise Unresolved("too many")
        elif isinstance(statement, ast.For):
            for item in _iterable(statement.iter, env, scope):
                env.update(_bind(statement.target, item, {}))
                returned = _execute(statement.body, env, scope, depth)
                if returned is not None:
                    return returned
        elif isinstance(statement, ast.If):
            returned = _execute(statement.body if _scalar(statement.test, env, scope) else statement.orelse, env,
                                scope, depth)
            if returned is not None:
                return returned
        elif not isinstance(statement, (ast.Pass, ast.Expr)):
            raise Unresolved(type(statement).__name__)
    return None


def _is_append(node: ast.expr, env: dict[str, Any]) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
        "append", "extend") and isinstance(node.func.value, ast.Name) and isinstance(env.get(node.func.value.id),
                                                                                    list) and len(node.args) == 1)
