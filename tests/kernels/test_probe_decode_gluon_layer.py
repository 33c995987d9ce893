"""benchmarks/probe_decode_gluon_layer.py's --gluon-tiles parsing, which needs no GPU: each column's switches."""

from __future__ import annotations

import pytest

from jitguard.kernels import moe_decode
from jitguard.kernels.moe_configs import expert_weight_bytes
from jitguard.kernels.moe_decode_gluon import GluonTile
from tests.kernels.benchmark_scripts import load_benchmark_script

probe = load_benchmark_script("probe_decode_gluon_layer.py")
H100 = "NVIDIA H100 80GB HBM3"


def test_forced_tiles_run_at_every_token_count_on_every_gpu(monkeypatch):
    """``path:GATE_UPxS/DOWNxS`` sets the tiles at every M: neither GLUON_TILES_AT nor a GPU's own
    GLUON_TILES_ON_GPU entry may take a point back (before the thirty-fifth session the H100's entries did)."""
    [(label, path, switches)] = probe.gluon_variants("pairs:64x8/128x3")
    assert (label, path) == ("pairs, gluon 64x8/128x3", "pairs")
    assert switches["GLUON_FP8_GEMMS"] == "always"
    large = expert_weight_bytes(7168, 1024, 1)
    # A GPU's own entry and an H200 one at points the forced tiles must still take.
    monkeypatch.setattr(moe_decode, "GLUON_TILES_ON_GPU", {H100: {"large": {"pairs": {2: ((32, 4), (64, 3))}}}})
    monkeypatch.setattr(moe_decode, "GLUON_TILES_AT", {"large": {"pairs": {5: ((32, 6), (64, 4))}}})
    assert moe_decode.gluon_tiles("pairs", 2, large, gpu_name=H100) == (GluonTile(32, 4), GluonTile(64, 3))
    assert moe_decode.gluon_tiles("pairs", 5, large, gpu_name=H100) == (GluonTile(32, 6), GluonTile(64, 4))
    for name, value in switches.items():
        monkeypatch.setattr(moe_decode, name, value)
    for gpu in (H100, moe_decode.GLUON_TABLES_GPU, None):
        for M in (1, 2, 5, 19):
            assert moe_decode.gluon_tiles("pairs", M, large, gpu_name=gpu) == (GluonTile(64, 8), GluonTile(128, 3))


def test_switch_values_may_be_tables_and_labels_name_columns():
    spec = ("[H200's counts]auto:default+GLUON_FP8_TOKENS_ON_GPU={'X': {'large': {'pairs': (1, 2)}}},"
            "grouped:default+wait")
    (label, path, switches), (label2, path2, switches2) = probe.gluon_variants(spec)
    assert (label, path, switches) == ("shipped, H200's counts", "auto",
                                       {"GLUON_FP8_TOKENS_ON_GPU": {"X": {"large": {"pairs": (1, 2)}}}})
    assert (label2, path2) == ("grouped, gluon default, down waits first", "grouped")
    assert switches2["GLUON_DOWN_WEIGHTS_BEFORE_WAIT"] is False and "GLUON_TILES_ON_GPU" not in switches2
    assert probe.gluon_variants("") == []


@pytest.mark.parametrize("spec, message", [
    ("pairs:default+NO_SUCH_SWITCH=1", r"unknown suffix \['NO_SUCH_SWITCH'\]"),
    ("pairs:32x6", r"'32x6' is not GATE_UPxSTAGES/DOWNxSTAGES"),
])
def test_bad_specs_are_one_line_errors(spec, message):
    with pytest.raises(SystemExit, match=r"^probe_decode_gluon_layer: --gluon-tiles: " + message):
        probe.gluon_variants(spec)
