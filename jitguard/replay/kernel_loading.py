"""Loading the module that defines a recorded kernel, for the warm-up and the price check alike.

Logs, reports and scan results are data: what they name is imported only when

(a) the recorded file, resolved with realpath, lies inside an import root of the environment running
    the command (the working directory's tree, `sys.path` entries other than the standard library,
    site-packages, or a folder the user trusts explicitly, `--price-from DIR`) and not inside a folder
    being read as data (the log directory, the report's folder); and
(b) that file, read as text and parsed with `ast` (never executed), defines a function of the recorded
    name decorated with a Triton or Gluon jit decorator (`triton.jit`, `gluon.jit`, `jit`, stacked
    under `autotune(...)` / `heuristics(...)`) or passed to one (`fast = triton.jit(_kernel)`).

Anything else raises `KernelLoadError` with a one-line reason and imports nothing. A warm-up plan is
code the user chose to run: it skips (a) and keeps (b), so a plan naming module `this` imports nothing.

A module is loaded the way the watched process loaded it: the one already loaded from that file, else
by its dotted name under the import root holding the file. When that import fails (a parent package's
`__init__` needs a missing optional dependency or a compiled extension), the file is loaded by itself
with each parent package stood in by an empty namespace package whose `__path__` is its real folder,
so sibling imports still resolve and no parent `__init__` runs. A script's kernels (`__main__`) are
never run again to find them.
"""

from __future__ import annotations

import ast
import importlib
import importlib.machinery
import importlib.util
import os
import site
import sys
import sysconfig
import types
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from jitguard.runtime.offline_backend import driver_for_imports

# Decorators (their last dotted part) that make a function a Triton or Gluon kernel, or wrap one.
_JIT_NAMES = frozenset({"jit"})
_WRAPPER_NAMES = frozenset({"autotune", "heuristics"})


class KernelLoadError(LookupError):
    """A recorded kernel's module cannot or may not be loaded; the message is one line saying why."""


@dataclass(frozen=True)
class KernelTrust:
    """Where a command may import recorded kernels from (see the module docstring).

    `data_dirs`: folders being read as data (a log directory, a report's folder): nothing in them is
    imported. `extra_roots`: folders the user trusts explicitly (`--price-from DIR`), searched first.
    `named_files`: files the user named (the files `fix` edits), trusted wherever they lie, imported
    under `naming_roots` (the folders their module names start from). `check_roots=False` (a warm-up
    plan, which is code) keeps only the static check of the file.
    """

    data_dirs: tuple[str, ...] = ()
    extra_roots: tuple[str, ...] = ()
    named_files: tuple[str, ...] = ()
    naming_roots: tuple[str, ...] = ()
    check_roots: bool = True
    refusal: str = "not priced"  # how a refusal's line starts

    def roots(self) -> list[str]:
        """The import roots module names are taken from: explicit ones first, then the environment's."""
        explicit = [os.path.realpath(r) for r in self.extra_roots + self.naming_roots]
        return _unique(explicit + environment_import_roots())

    def problem(self, file: str, kernel: str) -> str | None:
        """Why the kernel `kernel` recorded in `file` may not be imported, or None when it may."""
        real = os.path.realpath(file)
        if not os.path.isfile(real):
            return f"{self.refusal}: {file}: no such file"
        explicit = (any(_inside(real, os.path.realpath(r)) for r in self.extra_roots)
                    or real in {os.path.realpath(f) for f in self.named_files})
        if self.check_roots and not explicit:
            data = next((d for d in self.data_dirs if _inside(real, os.path.realpath(d))), None)
            if data is not None:
                return (f"{self.refusal}: {file} lies in the folder being read ({data}); logs are data "
                        "(--price-from DIR trusts a folder)")
            if not any(_inside(real, root) for root in self.roots()):
                return (f"{self.refusal}: {file} is outside this environment's import roots "
                        "(--price-from DIR trusts a folder)")
        if not defines_jit_kernel(real, kernel.rsplit(".", 1)[-1]):
            return f"{self.refusal}: {file} defines no Triton kernel named {kernel}"
        return None


def _unique(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def environment_import_roots() -> list[str]:
    """Folders this environment imports from by itself: the working directory, `sys.path` entries
    and site-packages, without the standard library (realpaths)."""
    paths = sysconfig.get_paths()
    stdlib = {os.path.realpath(paths[key]) for key in ("stdlib", "platstdlib") if key in paths}
    packages = [os.path.realpath(p) for p in site.getsitepackages() + [site.getusersitepackages()]]
    packages += [os.path.realpath(paths[key]) for key in ("purelib", "platlib") if key in paths]
    roots = [os.getcwd()] + [os.path.realpath(entry or os.getcwd()) for entry in sys.path] + packages

    def in_stdlib(root: str) -> bool:
        return (any(_inside(root, s) for s in stdlib) and not any(_inside(root, p) for p in packages))

    return _unique([r for r in roots if os.path.isdir(r) and not in_stdlib(r)])


# --- the static check ------------------------------------------------------------------------------

def _dotted_tail(node: ast.expr) -> str:
    """The last name of a decorator or callee: `triton.jit(...)` -> "jit", `autotune` -> "autotune"."""
    while isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _jit_names(tree: ast.AST) -> frozenset[str]:
    """"jit", and the names the file imports Triton's or Gluon's jit under (`from triton import jit as tjit`)."""
    aliases = {alias.asname for node in ast.walk(tree)
               if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "triton"
               for alias in node.names if alias.name in _JIT_NAMES and alias.asname}
    return _JIT_NAMES | frozenset(name for name in aliases if name)


def _binds_jit_call(node: ast.AST, name: str, jit_names: frozenset[str] = _JIT_NAMES) -> bool:
    """`name = triton.jit(_k)` / `name = triton.autotune(...)(triton.jit(...)(_k))`: an assignment of a jit call."""
    if not isinstance(node, (ast.Assign, ast.AnnAssign)):
        return False
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    if not any(isinstance(t, ast.Name) and t.id == name for t in targets) or node.value is None:
        return False
    return any(isinstance(call, ast.Call) and _dotted_tail(call.func) in jit_names for call in ast.walk(node.value))


def defines_jit_kernel(file: str, name: str) -> bool:
    """True when `file`, parsed (never run), defines a function `name` made a Triton/Gluon kernel by
    its decorators (a jit, maybe under autotune/heuristics) or by a jit call taking it, or binds
    `name` to a jit call (`fast = triton.jit(_kernel)`)."""
    try:
        with open(file, encoding="utf-8") as handle:
            tree = ast.parse(handle.read(), filename=file)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    jit_names = _jit_names(tree)
    if any(_binds_jit_call(node, name, jit_names) for node in ast.walk(tree)):
        return True
    defined = False
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            tails = [_dotted_tail(d) for d in node.decorator_list]
            if any(t in jit_names for t in tails):
                return True
            defined = True
    if not defined:
        return False
    # `fast = triton.jit(_kernel)` / `triton.jit(do_not_specialize=[...])(_kernel)`
    return any(isinstance(node, ast.Call) and _dotted_tail(node.func) in jit_names
               and any(isinstance(a, ast.Name) and a.id == name for a in node.args)
               for node in ast.walk(tree))


# --- loading ---------------------------------------------------------------------------------------

def _loaded_from(file: str) -> Any:
    """A module of this process loaded from `file` (the running script's `__main__` included), or None."""
    absolute = os.path.realpath(file)
    for module in list(sys.modules.values()):
        origin = getattr(module, "__file__", None)
        if isinstance(origin, str) and os.path.realpath(origin) == absolute:
            return module
    return None


def _names_under_roots(file: str, roots: Sequence[str]) -> list[tuple[str, str]]:
    """(dotted name, root) `file` is importable as, one per root holding it, shortest name first."""
    real = os.path.realpath(file)
    found = []
    for root in roots:
        if not _inside(real, root) or not real.endswith(".py"):
            continue
        parts = os.path.relpath(real, root)[:-3].split(os.sep)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts and all(part.isidentifier() for part in parts):
            found.append((".".join(parts), root))
    return sorted(found, key=lambda item: item[0].count("."))


def _file_of_module(name: str) -> str:
    """The file `import name` would find on sys.path, looked up without importing anything ("" if none)."""
    parts = name.split(".") if name else []
    if not parts or not all(part.isidentifier() for part in parts):
        return ""
    for entry in sys.path:
        base = os.path.join(entry or os.getcwd(), *parts)
        for candidate in (base + ".py", os.path.join(base, "__init__.py")):
            if os.path.isfile(candidate):
                return candidate
    return ""


def importable_name(file: str) -> str | None:
    """The dotted module name `file` is imported under from some sys.path entry, or None."""
    names = _names_under_roots(file, [os.path.realpath(e or os.getcwd()) for e in sys.path])
    return names[0][0] if names else None


@contextmanager
def _on_sys_path(root: str) -> Iterator[None]:
    added = root not in sys.path
    if added:
        sys.path.insert(0, root)
    try:
        yield
    finally:
        if added and root in sys.path:
            sys.path.remove(root)


def _import_by_name(name: str, root: str, file: str) -> Any:
    """`import name` with `root` on sys.path; ImportError unless it is the module of `file`."""
    with _on_sys_path(root):
        module = importlib.import_module(name)
    origin = getattr(module, "__file__", None)
    if not isinstance(origin, str) or os.path.realpath(origin) != os.path.realpath(file):
        raise ImportError(f"{name} is {origin or 'a module without a file'}, not {file}")
    return module


def _stand_in_parents(name: str, root: str) -> list[str]:
    """Put an empty namespace package in sys.modules for each parent of `name` not yet imported,
    its `__path__` the real folder; returns the names stood in."""
    parts = name.split(".")[:-1]
    added = []
    for depth in range(1, len(parts) + 1):
        parent = ".".join(parts[:depth])
        folder = os.path.join(root, *parts[:depth])
        existing = sys.modules.get(parent)
        if existing is not None:
            paths = [os.path.realpath(p) for p in getattr(existing, "__path__", None) or []]
            if os.path.realpath(folder) not in paths:
                raise ImportError(f"package {parent} is already imported from elsewhere")
            continue
        spec = importlib.machinery.ModuleSpec(parent, None, is_package=True)
        spec.submodule_search_locations = [folder]
        package = types.ModuleType(parent)
        package.__spec__, package.__path__, package.__package__ = spec, [folder], parent
        sys.modules[parent] = package
        added.append(parent)
    return added


def _load_from_file(name: str, root: str, file: str) -> Any:
    """Execute `file` as module `name` without running its parent packages' `__init__`."""
    added = _stand_in_parents(name, root)
    try:
        spec = importlib.util.spec_from_file_location(name, file)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {file}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            with _on_sys_path(root):
                spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        return module
    finally:
        for parent in added:  # the stand-ins served this load only: a later `import` finds the real package
            sys.modules.pop(parent, None)


def _error_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0][:200]}"


def load_module(module_name: str, file: str, kernel: str, trust: KernelTrust) -> Any:
    """The module that defines `kernel` (recorded as module `module_name`, file `file`), loaded as the
    watched process loaded it. Raises `KernelLoadError` with one line naming the kernel and file."""
    loaded = _loaded_from(file) if file else None
    if loaded is not None:
        return loaded  # already running here (this very script, say): nothing is executed again
    if module_name == "__main__":
        raise KernelLoadError(
            f"kernel {kernel!r} was defined in a script run as `python {file or '?'}` (module __main__), and "
            "jitguard does not run scripts to find kernels: move the kernel into an importable module, or call "
            "jitguard.warmup from that script after the kernel is defined")
    if module_name in sys.modules and not file:
        return sys.modules[module_name]  # imported already: nothing runs
    file = file or _file_of_module(module_name)
    if not file:
        raise KernelLoadError(f"kernel {kernel!r}: module {module_name or '?'} is not found on this environment's "
                              "import path (no file to check before importing it)")
    problem = trust.problem(file, kernel)
    if problem is not None:
        raise KernelLoadError(f"kernel {kernel!r} (module {module_name or '?'}) {problem}")
    candidates = _names_under_roots(file, trust.roots())
    candidates.sort(key=lambda item: item[0] != module_name)  # the name the watched process used, first
    if not candidates:
        raise KernelLoadError(f"kernel {kernel!r}: {file} is not importable as a module (no import root holds it "
                              "under package names)")
    name, root = candidates[0]
    with driver_for_imports():  # no GPU here: a decorator that asks for the driver gets the offline one
        try:
            return _import_by_name(name, root, file)
        except Exception as exc:  # a parent's __init__ failing is the case the file load below is for
            by_name = _error_line(exc)
        try:
            return _load_from_file(name, root, file)
        except Exception as exc:
            raise KernelLoadError(f"kernel {kernel!r}: import {name} ({file}): {by_name}; loaded from its file: "
                                  f"{_error_line(exc)}") from None


def kernel_attribute(module: Any, qualname: str) -> Any:
    """The attribute `qualname` (`a.b` allowed) of `module`, or None."""
    target: Any = module
    for part in qualname.split("."):
        target = getattr(target, part, None)
        if target is None:
            return None
    return target


def load_jit_function(module_name: str, file: str, qualname: str, kernel: str, trust: KernelTrust) -> Any:
    """The JITFunction a record names (its module loaded by `load_module`); `KernelLoadError` otherwise.

    `qualname` is the attribute holding it (a binding such as `Pack.kernel` or `fast`), `kernel` the
    function's own name (what the file must define)."""
    from jitguard import triton_compat

    module = load_module(module_name, file, kernel or qualname, trust)
    target = kernel_attribute(module, qualname)
    jit_fn = triton_compat.unwrap_jit_function(target) if target is not None else None
    if jit_fn is None:
        # A kernel defined inside a function is no module attribute; Triton's registry may know it.
        jit_fn = triton_compat.registered_kernel(module.__name__, qualname.rsplit(".", 1)[-1])
    if jit_fn is None:
        where = getattr(module, "__file__", None) or module.__name__
        raise KernelLoadError(f"kernel {qualname!r} is gone: module {module.__name__} ({where}) "
                              f"has no Triton kernel named {qualname}")
    return jit_fn


# A warm-up plan is code the user asked to run: no import-root check, the static check kept.
PLAN_TRUST = KernelTrust(check_roots=False, refusal="not loaded")


def _plan_names(entry: dict[str, Any]) -> tuple[str, str, str, str]:
    qualname = entry.get("qualname") or entry.get("binding") or entry["name"]
    return entry.get("module") or "", entry.get("file") or "", qualname, entry.get("name") or qualname


def module_attribute(entry: dict[str, Any]) -> tuple[Any, str, Any]:
    """(module, qualname, the attribute it names or None) for a plan entry; LookupError naming the
    kernel when its module cannot be loaded."""
    module_name, file, qualname, kernel = _plan_names(entry)
    module = load_module(module_name, file, kernel, PLAN_TRUST)
    return module, qualname, kernel_attribute(module, qualname)


def resolve_kernel(entry: dict[str, Any]) -> Any:
    """The JITFunction a plan entry names (see `load_jit_function`). Raises LookupError with a
    one-line reason naming the kernel, module and file."""
    module_name, file, qualname, kernel = _plan_names(entry)
    return load_jit_function(module_name, file, qualname, kernel, PLAN_TRUST)
