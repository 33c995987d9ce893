"""Tile configurations for the fused-MoE GEMMs: a small table per shape class.

A shape class is (precision, expert class): "bf16", "fp8" (per-tensor or per-channel scales) or
"fp8-block", and "few" (E <= 16, large experts,
Mixtral-like) or "many" (E > 16, small experts, Qwen3/DeepSeek-like). Each class maps a token
count M to one :class:`MoeTileConfigs` row (one tile for gate_up, one for down, the same token
tile so one alignment serves both). The number of distinct rows an M range touches is the number
of compiled variants per GEMM over that range.

The swap-AB heuristic lives in this table: rows with a token tile below 64 run swapped (weights
in wgmma's 64-row slot, tokens in its N slot). ``benchmarks/tune_fused_moe.py`` measures swap on
and off and candidate tiles on a GPU and prints a replacement for ``TILE_TABLE``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TileConfig:
    """One GEMM launch configuration (token tile = block_m)."""

    block_m: int
    block_n: int
    block_k: int
    group_m: int
    num_warps: int
    num_stages: int
    swap_ab: bool

    def check(self, where: str) -> None:
        """Raise ValueError naming ``where`` if the tile cannot be compiled by the MoE GEMM."""
        for name in ("block_m", "block_n", "block_k"):
            v = getattr(self, name)
            if v < 8 or v & (v - 1):
                raise ValueError(f"{where}: {name} must be a power of two >= 8, got {v}")
        if self.block_n < 16:
            raise ValueError(f"{where}: block_n must be >= 16 (gate/up interleave), got {self.block_n}")
        if self.group_m < 1:
            raise ValueError(f"{where}: group_m must be >= 1, got {self.group_m}")


@dataclass(frozen=True)
class MoeTileConfigs:
    """The two GEMM tiles of one table row; both share the token tile ``block_m``."""

    gate_up: TileConfig
    down: TileConfig

    @property
    def block_m(self) -> int:
        return self.gate_up.block_m


def _t(bm: int, bn: int, bk: int, gm: int, warps: int, stages: int, swap: bool) -> TileConfig:
    return TileConfig(bm, bn, bk, gm, warps, stages, swap)


def _same(cfg: TileConfig) -> MoeTileConfigs:
    return MoeTileConfigs(cfg, cfg)


# (max M of the row or None for "and above", configs). Decode rows (M <= 64): token tile sized
# to the most pairs one expert can receive (M <= 8 means <= 8 per expert), swapped below 64
# rows. Block-scaled FP8 has its own class: a scale multiply per K step favours smaller tiles.
# Large-M rows and the fp8-block rows use tile shapes that upstream tuned on H200 for its kernel
# (vLLM 0.33 configs for E=8 N=14336 and E=128 N=768). Measured on H200:
# benchmarks/results/fused_moe.md.
TILE_TABLE: dict[tuple[str, str], list[tuple[int | None, MoeTileConfigs]]] = {
    ("bf16", "few"): [
        (8, _same(_t(8, 64, 128, 1, 4, 5, True))),
        (16, _same(_t(16, 64, 128, 1, 4, 5, True))),
        (64, _same(_t(32, 64, 128, 8, 4, 4, True))),
        (256, _same(_t(64, 128, 64, 8, 4, 4, False))),
        (None, _same(_t(128, 256, 64, 16, 8, 4, False))),
    ],
    ("bf16", "many"): [
        # M=1: measured on H200, gate_up fastest as 16 columns (32 rows) per tile on mma.sync
        # (more CTAs than SMs), down fastest swapped with 3 stages.
        (1, MoeTileConfigs(_t(8, 32, 128, 1, 4, 4, False), _t(8, 64, 128, 1, 4, 3, True))),
        (8, MoeTileConfigs(_t(8, 64, 128, 1, 4, 5, True), _t(8, 64, 128, 1, 4, 3, True))),
        (128, _same(_t(16, 64, 128, 1, 4, 4, True))),
        (512, _same(_t(32, 64, 128, 8, 4, 4, True))),
        (2048, _same(_t(64, 128, 64, 8, 4, 4, False))),
        (None, _same(_t(128, 256, 64, 16, 8, 4, False))),
    ],
    ("fp8", "few"): [
        (8, _same(_t(8, 64, 128, 1, 4, 5, True))),
        (16, _same(_t(16, 64, 128, 1, 4, 5, True))),
        (64, _same(_t(32, 64, 128, 8, 4, 4, True))),
        (256, _same(_t(64, 128, 128, 8, 4, 4, False))),
        (None, _same(_t(128, 256, 128, 16, 8, 3, False))),
    ],
    ("fp8", "many"): [
        (8, _same(_t(8, 64, 128, 1, 4, 5, True))),
        (128, _same(_t(16, 64, 128, 1, 4, 4, True))),
        (512, _same(_t(32, 64, 128, 8, 4, 4, True))),
        (2048, _same(_t(64, 128, 128, 8, 4, 4, False))),
        (None, _same(_t(128, 256, 128, 16, 8, 3, False))),
    ],
    ("fp8-block", "few"): [
        (2, _same(_t(16, 64, 128, 1, 4, 4, True))),
        (8, _same(_t(16, 64, 128, 1, 4, 3, True))),
        (64, _same(_t(32, 128, 128, 1, 4, 3, True))),
        (None, _same(_t(64, 128, 128, 16, 4, 4, False))),
    ],
    ("fp8-block", "many"): [
        (1, MoeTileConfigs(_t(8, 32, 128, 1, 4, 4, False), _t(8, 64, 128, 1, 4, 3, True))),
        (2, _same(_t(16, 64, 128, 1, 4, 4, True))),
        (4, _same(_t(16, 128, 128, 1, 4, 3, True))),
        (8, MoeTileConfigs(_t(8, 64, 128, 1, 4, 5, True), _t(8, 64, 128, 1, 4, 3, True))),
        (128, _same(_t(16, 128, 128, 1, 4, 3, True))),
        (None, _same(_t(64, 128, 128, 16, 4, 4, False))),
    ],
}

PRECISIONS = ("bf16", "fp8", "fp8-block")


def shape_class(num_experts: int, precision: str) -> tuple[str, str]:
    """The table key of an MoE layer: precision ("bf16", "fp8", "fp8-block") and few/many experts."""
    if precision not in PRECISIONS:
        raise ValueError(f"select_tile_configs: precision must be one of {PRECISIONS}, got {precision!r}")
    return (precision, "few" if num_experts <= 16 else "many")


def select_tile_configs(
    num_tokens: int, num_experts: int, precision: str = "bf16", *, fp8: bool | None = None
) -> MoeTileConfigs:
    """The table row for ``num_tokens`` (M) tokens of a layer with ``num_experts`` experts.

    ``fp8=True/False`` is the older spelling of precision "fp8"/"bf16" (kept for callers).
    """
    if fp8 is not None:
        precision = "fp8" if fp8 else "bf16"
    rows = TILE_TABLE[shape_class(num_experts, precision)]
    for max_m, cfgs in rows:
        if max_m is None or num_tokens <= max_m:
            return cfgs
    return rows[-1][1]
