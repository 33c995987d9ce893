"""jitguard.kernels' front door: its entry points are functions whatever was imported before.

Each order runs in a fresh interpreter: submodules first (in the order given), then every entry
point is read from ``jitguard.kernels`` and must be the function of its home module.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SUBMODULES = ["moe_configs", "moe_quant", "moe_align", "moe_gemm", "moe_routing", "moe_inputs", "pdl",
              "device_clock", "moe_chain",
              "moe_decode_route", "moe_decode_gluon", "moe_decode", "moe_dispatch", "inv_rope"]
HOMES = {"fused_moe": "moe_chain", "fused_moe_decode": "moe_decode", "fused_moe_from_logits": "moe_dispatch",
         "inv_rope_fp8": "inv_rope", "fused_inv_rope_fp8_quant": "inv_rope"}

CHECK = """
import importlib, inspect, sys
for name in {order!r}:
    importlib.import_module("jitguard.kernels." + name)
import jitguard.kernels as k
assert sorted(k.__all__) == sorted({homes!r}), k.__all__
for name, home in {homes!r}.items():
    value = getattr(k, name)
    assert inspect.isfunction(value), (name, value)
    assert value is getattr(importlib.import_module("jitguard.kernels." + home), name), name
print("ok")
"""

# Every submodule before the front door, forwards and backwards; the entry points' modules alone.
ORDERS = [SUBMODULES, SUBMODULES[::-1], ["moe_dispatch"], ["inv_rope", "moe_chain"], []]


@pytest.mark.parametrize("order", ORDERS, ids=lambda o: ",".join(o) or "nothing")
def test_entry_points_stay_functions_after_any_import_order(order: list[str]) -> None:
    result = subprocess.run([sys.executable, "-c", CHECK.format(order=order, homes=HOMES)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-2000:]


def test_front_door_imports_neither_torch_nor_triton() -> None:
    code = "import sys, jitguard.kernels as k; print(sorted(m for m in ('torch', 'triton') if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[]"


def test_no_entry_point_shares_its_name_with_a_module() -> None:
    """A module named like an entry point would replace it as an attribute once imported."""
    directory = Path(__file__).resolve().parents[2] / "kernels"
    modules = {path.stem for path in directory.glob("*.py")} - {"__init__"}
    assert modules == set(SUBMODULES)  # the import orders above cover every module
    assert not set(HOMES) & modules
