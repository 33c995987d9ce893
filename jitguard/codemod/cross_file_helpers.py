"""Jit functions that kernels in other files call: device helpers, not launched kernels.

A `@triton.jit` function called from another jit function is inlined into its caller and never
specialized on its own, so `scan` judges only its decorator lists. Within one file `scan` sees the
call; across files it needs the caller's imports. This module finds, for each file, the jit
functions its kernels call through an import (`from .routing import topk_rows` then
`topk_rows(...)`, or `from . import routing` then `routing.topk_rows(...)`), as pairs of the
module the name comes from and the name; and, once every file of a run is scanned, drops the
findings of each kernel that another file calls that way. A call matches a kernel only in the
file its import names (relative imports resolved from the caller's folder, absolute ones by their
dotted path's tail), so a launched kernel that shares a helper's name elsewhere keeps its
findings. Names re-exported through a package's ``__init__`` are not followed.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path, PurePosixPath

# (where the module is, function name); where: "path:<absolute path without .py>" for a relative
# import, "module:<dotted name>" for an absolute one.
HelperCall = tuple[str, str]

# The rules a device helper keeps (its decorator's lists): the others judge launches. scan.scan_kernel
# reports only these for a helper it sees called in its own file, and the cross-file pass below keeps
# only these for a helper called from another file: a new decorator-list rule goes here, once.
HELPER_RULES = frozenset({"JG104", "JG105"})


def _module_ref(folder: Path | None, module: str | None, level: int) -> str | None:
    """Where `from <level dots><module> import ...` or `import <module>` points, or None;
    `folder` is the importing file's folder, resolved (None: relative imports point nowhere)."""
    if level == 0:
        if not module or module == "triton" or module.startswith("triton."):
            return None
        return f"module:{module}"
    if folder is None:
        return None
    base = folder
    for _ in range(level - 1):
        base = base.parent
    for part in (module or "").split("."):
        if part:
            base = base / part
    return f"path:{base.as_posix()}"


def _join(ref: str, sub: str) -> str:
    kind, where = ref.split(":", 1)
    return f"{kind}:{where}/{sub}" if kind == "path" else f"{kind}:{where}.{sub}"


def _import_bindings(tree: ast.Module, path: Path | None) -> tuple[dict[str, HelperCall], dict[str, str]]:
    """Names bound by imports: ``{local: (module ref, original name)}`` for `from X import name`,
    and ``{local: module ref}`` for names that may be modules (`import a.b [as m]`, and the
    `from X import mod` names, which may be submodules)."""
    functions: dict[str, HelperCall] = {}
    modules: dict[str, str] = {}
    folder = path.resolve().parent if path is not None else None
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            ref = _module_ref(folder, node.module, node.level)
            if ref is None:
                continue
            for alias in node.names:
                if alias.name == "*":
                    continue
                local = alias.asname or alias.name
                functions[local] = (ref, alias.name)
                modules[local] = _join(ref, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                ref = _module_ref(None, alias.name, 0)
                if ref is None:
                    continue
                if alias.asname:
                    modules[alias.asname] = ref
                else:
                    # `import a.b` binds `a`; `a.b.f(...)` then reads as module a.b, name f.
                    root = alias.name.split(".")[0]
                    modules.setdefault(root, f"module:{root}")
    return functions, modules


def imported_functions(tree: ast.Module, path: Path | None) -> dict[str, HelperCall]:
    """Names `from X import name [as local]` binds: ``{local: (module ref, name)}`` (see :func:`defines`)."""
    return _import_bindings(tree, path)[0]


def helper_calls(tree: ast.Module, kernel_nodes: Iterable[Iterable[ast.AST]],
                 path: Path | None) -> frozenset[HelperCall]:
    """The imported functions that these kernels' bodies call, as (module ref, name)."""
    functions, modules = _import_bindings(tree, path)
    if not functions and not modules:
        return frozenset()
    calls: set[HelperCall] = set()
    for nodes in kernel_nodes:
        for node in nodes:
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Name) and func.id in functions:
                calls.add(functions[func.id])
            elif isinstance(func, ast.Attribute):
                chain = []
                value: ast.expr = func.value
                while isinstance(value, ast.Attribute):
                    chain.append(value.attr)
                    value = value.value
                if isinstance(value, ast.Name) and value.id in modules:
                    ref = modules[value.id]
                    for part in reversed(chain):
                        ref = _join(ref, part)
                    calls.add((ref, func.attr))
    return frozenset(calls)


def module_stem(file_path: str) -> str:
    """The file's absolute path without ``.py`` (its package's folder for an ``__init__.py``)."""
    file = PurePosixPath(Path(file_path).resolve().as_posix())
    return (file.parent if file.name == "__init__.py" else file.with_suffix("")).as_posix()


def defines(stem: str, ref: str) -> bool:
    """Whether the module `ref` (from :func:`helper_calls`) is the file of :func:`module_stem` `stem`."""
    kind, where = ref.split(":", 1)
    if kind == "path":
        return stem == where
    tail = where.replace(".", "/")
    return stem == tail or stem.endswith("/" + tail)


def drop_cross_file_helper_findings(scans: list) -> list:
    """The scans with the launch findings of kernels that another scanned file calls removed
    (the rules of :data:`HELPER_RULES` stay).

    Each scan is a :class:`jitguard.codemod.scan.FileScan` with ``module_path`` and ``helper_calls``.
    """
    calling = [(scan.path, scan.helper_calls) for scan in scans if scan.helper_calls]
    if not calling:
        return scans
    kept = []
    for scan in scans:
        if scan.findings and scan.module_path:
            stem = module_stem(scan.module_path)
            named = {f.kernel for f in scan.findings}
            helpers = {name for path, calls in calling if path != scan.path for ref, name in calls
                       if name in named and defines(stem, ref)}
            if helpers:
                scan = replace(scan, findings=[f for f in scan.findings
                                               if f.kernel not in helpers or f.rule in HELPER_RULES])
        kept.append(scan)
    return kept
