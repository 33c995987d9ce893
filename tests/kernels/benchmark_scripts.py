"""benchmarks/*.py scripts loaded as modules for the tests of their GPU-free parts."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load_benchmark_script(file_name: str):
    """``benchmarks/<file_name>`` as a fresh module (registered under a name of its own, which its
    dataclasses look up)."""
    spec = importlib.util.spec_from_file_location(f"{Path(file_name).stem}_under_test", BENCHMARKS / file_name)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
