"""What the launches of a file's kernels pass (`kernel[grid](...)`), read from the source, never run.

`scan` uses these facts where a parameter's name and body cannot tell: a float literal passed for a
parameter makes it a float (never specialized), `True`/`False` makes a flag, and an argument computed
from what another parameter receives (`stride_sh = triton.cdiv(L, BLK)` passed beside `L`) makes
the first derived from the second. Names are resolved through the assignments of the function the
launch is in (`stride_sh = ...`, a few steps back).

    >>> import ast
    >>> tree = ast.parse("def f(x, L):\\n    s = cdiv(L, 4)\\n    k[(1,)](x, L, s, 1e-6)")
    >>> facts = launch_facts(tree, {"k": ["x_ptr", "n", "stride", "eps"]})["k"]
    >>> facts.derived["stride"], sorted(facts.floats)
    ({'n'}, ['eps'])
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

_RESOLVE_STEPS = 4


@dataclass
class LaunchFacts:
    """What the launches of one kernel in one file pass."""

    launches: int = 0
    floats: set[str] = field(default_factory=set)  # params passed a float literal
    flags: set[str] = field(default_factory=set)  # params passed True/False or a comparison
    derived: dict[str, set[str]] = field(default_factory=dict)  # param -> params whose argument it is computed from
    # param -> the argument expressions passed (resolved through locals), for signature synthesis
    passed: dict[str, list[ast.expr]] = field(default_factory=dict)


def _scopes(tree: ast.Module) -> list[ast.AST]:
    """Functions innermost first, then the module: a launch belongs to the first scope that holds it."""
    functions = [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return [*reversed(functions), tree]


def _assignments(scope: ast.AST) -> dict[str, ast.expr]:
    """Names assigned exactly once in `scope` -> their value (a name assigned twice is left unresolved)."""
    values: dict[str, list[ast.expr]] = {}
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            values.setdefault(node.targets[0].id, []).append(node.value)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple):
            for target in node.targets[0].elts:  # `T, H = x.shape`: unresolved, but not a single value either
                if isinstance(target, ast.Name):
                    values.setdefault(target.id, []).extend([node.value, node.value])
    return {name: assigned[0] for name, assigned in values.items() if len(assigned) == 1}


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
    """`ast.dump` of every sub-expression, locals expanded a few steps: what an argument is computed from."""
    found: set[str] = set()
    todo = [expression]
    for _ in range(_RESOLVE_STEPS):
        following = []
        for item in todo:
            for node in ast.walk(item):
                if isinstance(node, ast.expr) and not isinstance(node, ast.Constant):
                    found.add(ast.dump(node))
                if isinstance(node, ast.Name) and node.id in assigned:
                    following.append(assigned[node.id])
        todo = following
    return found


def _is_float(expression: ast.expr) -> bool:
    if isinstance(expression, ast.UnaryOp):
        expression = expression.operand
    if isinstance(expression, ast.Constant):
        return isinstance(expression.value, float)
    return isinstance(expression, ast.Call) and isinstance(expression.func, ast.Name) and expression.func.id == "float"


def _is_flag(expression: ast.expr) -> bool:
    if isinstance(expression, ast.Constant):
        return isinstance(expression.value, bool)
    return isinstance(expression, (ast.Compare, ast.BoolOp)) or (
        isinstance(expression, ast.UnaryOp) and isinstance(expression.op, ast.Not))


def _launches(tree: ast.Module, kernels: Mapping[str, Sequence[str]]) -> Iterator[tuple[str, ast.Call, dict]]:
    seen: set[int] = set()
    for scope in _scopes(tree):
        assigned: dict[str, ast.expr] | None = None
        for node in ast.walk(scope):
            if not isinstance(node, ast.Call) or id(node) in seen:
                continue
            name = _launched(node, kernels)
            if name is None:
                continue
            seen.add(id(node))
            assigned = _assignments(scope) if assigned is None else assigned
            yield name, node, assigned


def launch_facts(tree: ast.Module, kernels: Mapping[str, Sequence[str]]) -> dict[str, LaunchFacts]:
    """kernel name -> what its launches in `tree` pass; `kernels` maps each launchable name to its
    parameter names (a kernel bound to another name, `fast = triton.jit(_fast)`, under that name)."""
    facts: dict[str, LaunchFacts] = {}
    for name, call, assigned in _launches(tree, kernels):
        params = kernels[name]
        passed: dict[str, ast.expr] = {}
        for param, arg in zip(params, call.args):
            if isinstance(arg, ast.Starred):
                break
            passed[param] = arg
        passed.update({k.arg: k.value for k in call.keywords if k.arg is not None and k.arg in params})
        found = facts.setdefault(name, LaunchFacts())
        found.launches += 1
        parts = {param: _parts(arg, assigned) for param, arg in passed.items()}
        whole = {param: ast.dump(_resolved(arg, assigned)) for param, arg in passed.items()}
        for param, arg in passed.items():
            value = _resolved(arg, assigned)
            found.passed.setdefault(param, []).append(value)
            if _is_float(value):
                found.floats.add(param)
            if _is_flag(value):
                found.flags.add(param)
            sources = {other for other, text in whole.items()
                       if other != param and text != whole[param] and text in parts[param]}
            if sources:
                found.derived.setdefault(param, set()).update(sources)
    return facts
