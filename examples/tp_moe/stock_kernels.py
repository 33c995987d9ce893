"""The "stock" fused-MoE kernels: jitguard.kernels' own sources with every demotion list removed.

Upstream kernels ship plain ``@triton.jit``; ours list each token-count-derived argument in
``do_not_specialize``. To compare the two on the same code, this module derives the stock set at
load time from the installed ``jitguard.kernels`` sources (there is no second copy to drift):
each ``@triton.jit(...)`` / ``@jit(...)`` decorator loses its ``do_not_specialize`` and
``do_not_specialize_on_alignment`` keywords, and nothing else changes. Line numbers are kept (the
removed text is replaced by as many newlines), and each module is compiled under its real file
name, so a report's ``file:line`` of a stock kernel points at the same ``def`` as the fixed one.

The derived modules live in their own package, ``tp_moe_stock_kernels``, next to (never instead
of) ``jitguard.kernels``; relative imports among them resolve inside that package.

    >>> fused_moe = load_stock_module("moe_chain").fused_moe   # doctest: +SKIP
"""

from __future__ import annotations

import ast
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types
from dataclasses import dataclass

STOCK_PACKAGE = "tp_moe_stock_kernels"
SOURCE_PACKAGE = "jitguard.kernels"
DEMOTION_KEYWORDS = ("do_not_specialize", "do_not_specialize_on_alignment")


class StockDerivationError(RuntimeError):
    """A kernel module cannot be turned into its stock form (named file and reason)."""


@dataclass(frozen=True)
class RemovedDemotion:
    """One keyword taken out of a decorator: where, on which function, and its source text."""

    file: str
    line: int
    function: str
    keyword: str
    text: str


def _is_jit_call(node: ast.expr) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    return (isinstance(func, ast.Attribute) and func.attr == "jit") or (isinstance(func, ast.Name) and func.id == "jit")


def _offsets(source: str) -> list[int]:
    """Character offset of the start of each line (1-based line numbers index it directly)."""
    starts = [0, 0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def strip_demotions(source: str, filename: str) -> tuple[str, list[RemovedDemotion]]:
    """``source`` with the demotion keywords of every jit decorator removed, line count kept.

    Returns the new source and what was removed. Raises StockDerivationError naming
    ``filename`` if the source does not parse.
    """
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        raise StockDerivationError(f"{filename}:{exc.lineno}: cannot parse ({exc.msg})") from exc
    starts = _offsets(source)

    def offset(line: int, col: int) -> int:
        # ast columns are UTF-8 byte offsets; convert within the line.
        text = source[starts[line]:starts[line + 1] if line + 1 < len(starts) else len(source)]
        return starts[line] + len(text.encode("utf-8")[:col].decode("utf-8"))

    edits: list[tuple[int, int, str]] = []
    removed: list[RemovedDemotion] = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for decorator in node.decorator_list:
            if not _is_jit_call(decorator):
                continue
            assert isinstance(decorator, ast.Call)
            dropped = [kw for kw in decorator.keywords if kw.arg in DEMOTION_KEYWORDS]
            if not dropped:
                continue
            kept = [ast.get_source_segment(source, arg) for arg in decorator.args]
            kept += [ast.get_source_segment(source, kw) for kw in decorator.keywords if kw.arg not in DEMOTION_KEYWORDS]
            func_text = ast.get_source_segment(source, decorator.func)
            start = offset(decorator.lineno, decorator.col_offset)
            end = offset(decorator.end_lineno, decorator.end_col_offset)  # type: ignore[arg-type]
            old = source[start:end]
            new = f"{func_text}({', '.join(k for k in kept if k is not None)})"
            new = new[:-1] + "\n" * (old.count("\n") - new.count("\n")) + ")"
            edits.append((start, end, new))
            for kw in dropped:
                removed.append(RemovedDemotion(filename, kw.lineno, node.name, kw.arg or "",
                                               ast.get_source_segment(source, kw) or ""))
    for start, end, new in sorted(edits, reverse=True):
        source = source[:start] + new + source[end:]
    return source, sorted(removed, key=lambda r: r.line)


def _source_dir() -> str:
    spec = importlib.util.find_spec(SOURCE_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise StockDerivationError(f"{SOURCE_PACKAGE} is not installed (pip install -e . in the repository)")
    return next(iter(spec.submodule_search_locations))


class _StockLoader(importlib.abc.Loader):
    """Executes the stripped source of one kernels/ file under the file's real name."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.removed: list[RemovedDemotion] = []

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        with open(self.path, encoding="utf-8") as handle:
            original = handle.read()
        stripped, self.removed = strip_demotions(original, self.path)
        if stripped.count("\n") != original.count("\n"):  # pragma: no cover - guarded by strip_demotions
            raise StockDerivationError(f"{self.path}: stock derivation changed the line count")
        module.__dict__["STOCK_REMOVED_DEMOTIONS"] = list(self.removed)
        exec(compile(stripped, self.path, "exec", dont_inherit=True), module.__dict__)


class _StockFinder(importlib.abc.MetaPathFinder):
    """Answers ``tp_moe_stock_kernels.X`` with the stripped ``jitguard/kernels/X.py``."""

    def __init__(self, source_dir: str) -> None:
        self.source_dir = source_dir

    def find_spec(self, fullname: str, path=None, target=None):  # type: ignore[no-untyped-def]
        prefix = STOCK_PACKAGE + "."
        if not fullname.startswith(prefix) or "." in fullname[len(prefix):]:
            return None
        file = os.path.join(self.source_dir, fullname[len(prefix):] + ".py")
        if not os.path.isfile(file):
            return None
        return importlib.util.spec_from_file_location(fullname, file, loader=_StockLoader(file))


def _install_stock_package() -> None:
    if STOCK_PACKAGE in sys.modules:
        return
    source_dir = _source_dir()
    package = types.ModuleType(STOCK_PACKAGE, f"{SOURCE_PACKAGE} without do_not_specialize lists")
    package.__path__ = []  # a package with no directory: only _StockFinder answers for its children
    sys.modules[STOCK_PACKAGE] = package
    sys.meta_path.append(_StockFinder(source_dir))


def load_stock_module(name: str) -> types.ModuleType:
    """``jitguard.kernels.<name>`` in its stock form (imported once, with its relative imports).

    Raises StockDerivationError if the module reaches the fixed kernels through an absolute import
    (its stock form would then still run fixed kernels).
    """
    _install_stock_package()
    module = importlib.import_module(f"{STOCK_PACKAGE}.{name}")
    for attribute, value in vars(module).items():
        origin = getattr(value, "__module__", None) or ""
        if isinstance(value, types.ModuleType):
            origin = value.__name__
        if origin.startswith(SOURCE_PACKAGE + "."):
            raise StockDerivationError(
                f"{module.__file__}: {attribute} comes from {origin} (an absolute import): "
                f"the stock form needs relative imports between kernel modules")
    return module


def stock_demotions_removed() -> list[RemovedDemotion]:
    """Every demotion keyword removed so far, over all loaded stock modules, by file and line."""
    found = []
    for name, module in sorted(sys.modules.items()):
        if name.startswith(STOCK_PACKAGE + ".") and module is not None:
            found.extend(getattr(module, "STOCK_REMOVED_DEMOTIONS", []))
    return found
