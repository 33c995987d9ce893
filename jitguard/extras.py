"""The package's optional extras, and the one line a user sees when a feature's extra is missing.

`pip install jitguard` brings what `scan`, `fix` and `report` need; the rest needs an extra
(pyproject.toml's `[project.optional-dependencies]` is the source of truth, this table mirrors it):

    >>> missing_extra_message("jitguard run", "monitor", missing=["triton"])
    "jitguard run needs Triton, which is not installed here: pip install 'jitguard[monitor]'"
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

# extra -> the top-level modules it brings that a feature imports
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "monitor": ("triton",),
    "kernels": ("triton", "torch"),
    "pytest": ("triton", "torch"),
}

# a module found missing at run time -> the smallest extra that brings it
_EXTRA_FOR_MODULE = {"triton": "monitor", "torch": "kernels"}
_DISPLAY_NAMES = {"triton": "Triton", "torch": "torch"}


def missing_modules(extra: str) -> list[str]:
    """The modules of `extra` that cannot be imported here (found without importing them)."""
    return [name for name in EXTRA_MODULES[extra] if importlib.util.find_spec(name) is None]


def missing_extra_message(what: str, extra: str, missing: Sequence[str] | None = None) -> str | None:
    """One line saying `what` needs the missing modules of `extra` and how to install them, or None."""
    absent = missing_modules(extra) if missing is None else list(missing)
    if not absent:
        return None
    names = " and ".join(_DISPLAY_NAMES.get(name, name) for name in absent)
    verb = "is" if len(absent) == 1 else "are"
    return f"{what} needs {names}, which {verb} not installed here: pip install 'jitguard[{extra}]'"


def extra_for_missing_module(module_name: str | None) -> str | None:
    """The extra that brings `module_name` (as in `ModuleNotFoundError.name`), or None if no extra does."""
    if not module_name:
        return None
    return _EXTRA_FOR_MODULE.get(module_name.split(".")[0])
