"""The two kernel sets the simulation compares.

- "fixed": `jitguard.kernels` as it ships (every token-count-derived argument in
  `do_not_specialize`), warmed up at start-up from a plan.
- "upstream": the same kernels "as upstream ships": their `do_not_specialize` and
  `do_not_specialize_on_alignment` lists removed, so Triton specializes every int argument on
  1 / multiple of 16 / other, and every pointer on 16-byte alignment. Derived at import time by a
  source transformation of the installed `jitguard.kernels` files (no second copy is kept): a
  meta-path importer serves `jitguard_upstream_kernels.<name>` from `jitguard/kernels/<name>.py`
  with each such decorator list replaced by `[]` (line numbers kept, so tracebacks and Triton's
  `inspect.getsource` line up with the real file's lines).

Only `ast` is used (the GPU host has no libcst).
"""

from __future__ import annotations

import ast
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import linecache
import os
import sys
from types import ModuleType

KERNEL_SETS = ("upstream", "fixed")
UPSTREAM_PACKAGE = "jitguard_upstream_kernels"
DEMOTION_OPTIONS = ("do_not_specialize", "do_not_specialize_on_alignment")


def remove_demotions(source: str, filename: str = "<source>") -> tuple[str, list[str]]:
    """`source` with every `do_not_specialize[_on_alignment]=...` of a decorator call replaced by `[]`.

    Returns (new source, ["kernel: option=old value", ...]). Line count and the lines of every
    other statement are unchanged.
    """
    tree = ast.parse(source, filename)
    lines = source.splitlines(keepends=True)
    edits: list[tuple[int, int, int, int, str]] = []
    removed: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for decorator in node.decorator_list:
            if not isinstance(decorator, ast.Call):
                continue
            for keyword in decorator.keywords:
                if keyword.arg in DEMOTION_OPTIONS:
                    value = keyword.value
                    old = ast.get_source_segment(source, value) or "?"
                    removed.append(f"{node.name}: {keyword.arg}={old}")
                    # Keep the line count: the replacement spans as many lines as the old value.
                    newlines = "\n" * (value.end_lineno - value.lineno)
                    edits.append((value.lineno, value.col_offset, value.end_lineno, value.end_col_offset,
                                  f"[{newlines}]"))
    # Apply from the end so earlier offsets stay valid (offsets are UTF-8 byte columns).
    for start_line, start_col, end_line, end_col, text in sorted(edits, reverse=True):
        first = lines[start_line - 1].encode()
        last = lines[end_line - 1].encode()
        merged = first[:start_col] + text.encode() + last[end_col:]
        lines[start_line - 1:end_line] = [merged.decode()]
    return "".join(lines), removed


class _UpstreamKernelsLoader(importlib.abc.Loader):
    """Loads `jitguard_upstream_kernels[.name]` from the jitguard.kernels sources, transformed."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.removed: dict[str, list[str]] = {}

    def _path(self, fullname: str) -> str:
        if fullname == UPSTREAM_PACKAGE:
            return os.path.join(self.directory, "__init__.py")
        return os.path.join(self.directory, fullname.split(".", 1)[1] + ".py")

    def virtual_filename(self, fullname: str) -> str:
        # A name that is not a real file: linecache then serves the transformed text to
        # inspect.getsource (which Triton uses), never the file on disk.
        return self._path(fullname) + " [upstream specialization]"

    def get_source(self, fullname: str) -> str:
        path = self._path(fullname)
        with open(path, encoding="utf-8") as handle:
            source, removed = remove_demotions(handle.read(), path)
        self.removed[fullname] = removed
        return source

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        fullname = module.__name__
        source = self.get_source(fullname)
        filename = self.virtual_filename(fullname)
        linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
        module.__file__ = filename
        exec(compile(source, filename, "exec"), module.__dict__)


class _UpstreamKernelsFinder(importlib.abc.MetaPathFinder):
    def __init__(self, loader: _UpstreamKernelsLoader) -> None:
        self.loader = loader

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != UPSTREAM_PACKAGE and not fullname.startswith(UPSTREAM_PACKAGE + "."):
            return None
        if not os.path.isfile(self.loader._path(fullname)):
            return None
        is_package = fullname == UPSTREAM_PACKAGE
        spec = importlib.machinery.ModuleSpec(fullname, self.loader, is_package=is_package)
        if is_package:
            spec.submodule_search_locations = []
        return spec


def _kernels_directory() -> str:
    spec = importlib.util.find_spec("jitguard.kernels")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("serve_sim: jitguard.kernels is not importable (install jitguard, or run from the repo)")
    return next(iter(spec.submodule_search_locations))


def _upstream_loader() -> _UpstreamKernelsLoader:
    for finder in sys.meta_path:
        if isinstance(finder, _UpstreamKernelsFinder):
            return finder.loader
    loader = _UpstreamKernelsLoader(_kernels_directory())
    sys.meta_path.insert(0, _UpstreamKernelsFinder(loader))
    return loader


def load_kernel_set(name: str) -> tuple[ModuleType, ModuleType, list[str]]:
    """(moe_chain module, inv_rope module, decorator lists removed) for kernel set `name`."""
    if name == "fixed":
        return (importlib.import_module("jitguard.kernels.moe_chain"),
                importlib.import_module("jitguard.kernels.inv_rope"), [])
    if name == "upstream":
        loader = _upstream_loader()
        moe = importlib.import_module(UPSTREAM_PACKAGE + ".moe_chain")
        rope = importlib.import_module(UPSTREAM_PACKAGE + ".inv_rope")
        removed = [entry for module_removed in loader.removed.values() for entry in module_removed]
        return moe, rope, sorted(removed)
    raise ValueError(f"serve_sim: kernel set must be one of {', '.join(KERNEL_SETS)}, not {name!r}")
