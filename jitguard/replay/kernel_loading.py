"""Finding the kernel a recorded variant names: by its module's name first, else by the name its
file is importable under; a script (`__main__`) is never run again to find one."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from typing import Any


def _loaded_from(file: str) -> Any:
    """A module of this process loaded from `file` (the running script's `__main__` included), or None."""
    absolute = os.path.realpath(file)
    for module in list(sys.modules.values()):
        origin = getattr(module, "__file__", None)
        if origin and os.path.realpath(origin) == absolute:
            return module
    return None


def importable_name(file: str) -> str | None:
    """The dotted module name `file` is imported under from some sys.path entry, or None."""
    absolute = os.path.realpath(file)
    if not absolute.endswith(".py"):
        return None
    for entry in sys.path:
        root = os.path.realpath(entry or os.getcwd())
        if not absolute.startswith(root + os.sep):
            continue
        parts = os.path.relpath(absolute, root)[:-3].split(os.sep)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if not parts or not all(part.isidentifier() for part in parts):
            continue
        name = ".".join(parts)
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is not None and spec.origin and os.path.realpath(spec.origin) == absolute:
            return name
    return None


def kernel_module(module_name: str, file: str) -> tuple[Any, list[str]]:
    """The module that defines a planned kernel, found by importing modules by name, never by
    running a file: (module, []) or (None, [why not, ...])."""
    errors: list[str] = []
    if module_name and module_name != "__main__":
        try:
            return importlib.import_module(module_name), []
        except Exception as exc:  # any import failure is reported, then the file is tried
            errors.append(f"import {module_name}: {type(exc).__name__}: {exc}")
    if file:
        loaded = _loaded_from(file)
        if loaded is not None:
            return loaded, []  # already running here (this very script, say): nothing is executed again
    if module_name == "__main__":
        errors.append(f"it was defined in a script run as `python {file or '?'}` (module __main__), and jitguard "
                      "does not run scripts to find kernels: move the kernel into an importable module, or call "
                      "jitguard.warmup from that script after the kernel is defined")
        return None, errors
    if not file:
        return None, errors or ["no module or file recorded"]
    if not os.path.isfile(file):
        errors.append(f"{file}: no such file")
        return None, errors
    name = importable_name(file)
    if name is None:
        errors.append(f"{file} is not importable as a module (no sys.path entry holds it); jitguard does not "
                      "run files to find kernels")
        return None, errors
    try:
        return importlib.import_module(name), []
    except Exception as exc:
        errors.append(f"import {name} ({file}): {type(exc).__name__}: {exc}")
        return None, errors


def module_attribute(entry: dict[str, Any]) -> tuple[Any, str, Any]:
    """(module, qualname, the attribute it names or None) for a plan entry; LookupError naming the
    kernel when its module cannot be imported."""
    module_name, name, file = entry.get("module") or "", entry.get("qualname") or entry["name"], entry.get("file") or ""
    module, errors = kernel_module(module_name, file)
    if module is None:
        raise LookupError(f"kernel {name!r} cannot be imported ({'; '.join(errors)})")
    target: Any = module
    for part in name.split("."):
        target = getattr(target, part, None)
        if target is None:
            break
    return module, name, target


def resolve_kernel(entry: dict[str, Any]) -> Any:
    """The JITFunction a plan entry names: by its module's name first, else by the name its file is
    importable under. A script (`__main__`) is never run again: its kernels are found only in the
    script itself. Raises LookupError with a one-line reason naming the kernel, module and file.
    """
    from jitguard import triton_compat

    module, name, target = module_attribute(entry)
    jit_fn = triton_compat.unwrap_jit_function(target) if target is not None else None
    if jit_fn is None:
        # A kernel defined inside a function is no module attribute; Triton's registry may know it.
        jit_fn = triton_compat.registered_kernel(module.__name__, name.rsplit(".", 1)[-1])
    if jit_fn is None:
        where = getattr(module, "__file__", None) or module.__name__
        raise LookupError(f"kernel {name!r} is gone: module {module.__name__} ({where}) "
                          "has no Triton kernel of that name")
    return jit_fn
