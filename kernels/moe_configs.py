"""Tile configurations for the fused-MoE GEMMs: a small table per shape class.

A shape class is (precision, expert class): "bf16", "fp8" (per-tensor or per-channel scales) or
"fp8-block", and "few" (E <= 16, large experts,
Mixtral-like) or "many" (E > 16, small experts, Qwen3/DeepSeek-like). Each class maps a token
count M to one :class:`MoeTileConfigs` row (one tile for gate_up, one for down, the same token
tile so one alignment serves both). The number of distinct rows an M range touches is the number
of compiled variants per GEMM over that range.

The swap-AB heuristic lives in this table, per GEMM and row: a swapped tile (weights in wgmma's
64-row slot, tokens in its N slot) is used where it measured faster on an H200 than the same tile
without swap. ``benchmarks/tune_fused_moe.py`` times candidate tiles side by side with vLLM's
kernel and rewrites the tuned rows of ``TILE_TABLE``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from jitguard.triton_compat import MIN_DOT_SIZE, TRITON_VERSION

# Triton before 3.3 takes no tl.dot operand under 16 rows or columns, so its token tiles start at
# 16: the tables' 8-token rows run there with 16-token tiles.
MIN_TOKEN_TILE = max(8, MIN_DOT_SIZE)


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
        if self.block_m < MIN_TOKEN_TILE:
            raise ValueError(f"{where}: block_m must be >= {MIN_TOKEN_TILE} on Triton {TRITON_VERSION} "
                             f"(its tl.dot takes no smaller operand), got {self.block_m}")
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


def _for_this_triton(cfgs: MoeTileConfigs) -> MoeTileConfigs:
    """A table row as this Triton can compile it: token tiles of at least MIN_TOKEN_TILE."""
    if cfgs.block_m >= MIN_TOKEN_TILE:
        return cfgs
    return MoeTileConfigs(replace(cfgs.gate_up, block_m=MIN_TOKEN_TILE), replace(cfgs.down, block_m=MIN_TOKEN_TILE))


def _same(cfg: TileConfig) -> MoeTileConfigs:
    return MoeTileConfigs(cfg, cfg)


# (max M of the row or None for "and above", configs). Decode rows (M <= 64): token tile sized
# to the most pairs one expert can receive (M <= 8 means <= 8 per expert). Block-scaled FP8 has
# its own class: a scale multiply per K step favours smaller tiles. Rows with a "tuned" comment
# were written by `benchmarks/tune_fused_moe.py write-table` from an H200 run (the comment gives
# the times that decided them, with vLLM 0.33's at the same point); the others are hand-set, the
# large-M ones from tile shapes upstream tuned on H200 for its kernel. Measured with the whole
# table: benchmarks/results/fused_moe.md.
# FP8 block scales, many experts: fused_moe's 128-deep row up to 128 tokens, which the decode path
# keeps at 9..64 tokens (DECODE_TILE_TABLE) where fused_moe now takes a 256-deep gate_up.
_FP8_BLOCK_MANY_128 = _same(_t(16, 128, 128, 1, 4, 3, True))

TILE_TABLE: dict[tuple[str, str], list[tuple[int | None, MoeTileConfigs]]] = {
    ('bf16', 'few'): [
        # tuned, gate_up/down: mixtral-bf16 M=1: 112.5/58.9 us (vLLM 118.0/63.0)
        # mixtral-bf16 M=2: 164.3/86.5 us (vLLM 180.1/92.2)
        (2, MoeTileConfigs(_t(8, 32, 256, 1, 4, 3, False), _t(8, 32, 256, 1, 4, 4, False))),
        # tuned, gate_up/down: mixtral-bf16 M=4: 267.6/137.7 us (vLLM 286.4/143.2)
        (4, MoeTileConfigs(_t(8, 64, 256, 1, 4, 3, True), _t(8, 128, 128, 1, 4, 3, True))),
        # tuned, gate_up/down: mixtral-bf16 M=8: 372.3/189.4 us (vLLM 375.7/195.0)
        (8, _same(_t(16, 64, 128, 1, 4, 4, True))),
        (16, _same(_t(16, 64, 128, 1, 4, 5, True))),
        # tuned, gate_up/down: mixtral-bf16 M=32: 428.4/216.7 us (vLLM 439.4/244.9)
        # mixtral-bf16 M=64: 432.0/218.4 us (vLLM 436.4/220.8)
        (64, MoeTileConfigs(_t(32, 128, 128, 1, 4, 3, False), _t(32, 128, 128, 1, 4, 4, True))),
        (256, _same(_t(64, 128, 64, 8, 4, 4, False))),
        (None, _same(_t(128, 256, 64, 16, 8, 4, False))),
    ],
    ('bf16', 'many'): [
        # tuned, gate_up/down: qwen3-30b-bf16 M=1: 15.8/9.5 us (vLLM 16.6/9.6)
        (1, MoeTileConfigs(_t(8, 32, 128, 1, 4, 4, False), _t(8, 64, 128, 1, 4, 3, True))),
        # tuned, gate_up/down: qwen3-30b-bf16 M=2: 27.2/16.0 us (vLLM 27.8/16.5)
        (2, _same(_t(8, 64, 128, 1, 4, 3, True))),
        # tuned, gate_up/down: qwen3-30b-bf16 M=4: 47.5/26.3 us (vLLM 48.5/27.6)
        (4, MoeTileConfigs(_t(8, 32, 64, 1, 4, 3, False), _t(8, 32, 128, 1, 4, 3, False))),
        # tuned, gate_up/down: qwen3-30b-bf16 M=8: 74.9/40.3 us (vLLM 77.7/42.0)
        (8, MoeTileConfigs(_t(8, 32, 256, 1, 4, 3, False), _t(8, 32, 128, 1, 4, 3, False))),
        # tuned, gate_up/down: qwen3-30b-bf16 M=16: 119.3/64.2 us (vLLM 122.1/67.9)
        # qwen3-30b-bf16 M=32: 158.0/83.8 us (vLLM 162.8/85.8)
        # qwen3-30b-bf16 M=64: 178.5/95.0 us (vLLM 183.5/101.1)
        (128, MoeTileConfigs(_t(16, 64, 128, 1, 4, 5, True), _t(16, 128, 128, 1, 4, 3, True))),
        (512, _same(_t(32, 64, 128, 8, 4, 4, True))),
        (2048, _same(_t(64, 128, 64, 8, 4, 4, False))),
        (None, _same(_t(128, 256, 64, 16, 8, 4, False))),
    ],
    ('fp8', 'few'): [
        # tuned, gate_up/down: mixtral-fp8-tensor M=1: 60.1/33.1 us (vLLM 70.1/37.2)
        (1, MoeTileConfigs(_t(8, 64, 128, 1, 4, 3, True), _t(8, 64, 256, 1, 4, 5, True))),
        # tuned, gate_up/down: mixtral-fp8-tensor M=2: 86.8/46.4 us (vLLM 99.0/48.2)
        (2, _same(_t(8, 32, 256, 1, 4, 4, False))),
        # tuned, gate_up/down: mixtral-fp8-tensor M=4: 138.7/72.7 us (vLLM 150.5/75.5)
        (4, MoeTileConfigs(_t(8, 64, 256, 1, 4, 5, True), _t(8, 64, 256, 1, 4, 3, True))),
        # tuned, gate_up/down: mixtral-fp8-tensor M=8: 191.3/99.6 us (vLLM 207.5/103.5)
        (8, MoeTileConfigs(_t(8, 64, 256, 1, 4, 4, True), _t(8, 128, 256, 1, 4, 3, True))),
        (16, _same(_t(16, 64, 128, 1, 4, 5, True))),
        (64, _same(_t(32, 64, 128, 8, 4, 4, True))),
        (256, _same(_t(64, 128, 128, 8, 4, 4, False))),
        (None, _same(_t(128, 256, 128, 16, 8, 3, False))),
    ],
    ('fp8', 'many'): [
        (8, _same(_t(8, 64, 128, 1, 4, 5, True))),
        (128, _same(_t(16, 64, 128, 1, 4, 4, True))),
        (512, _same(_t(32, 64, 128, 8, 4, 4, True))),
        (2048, _same(_t(64, 128, 128, 8, 4, 4, False))),
        (None, _same(_t(128, 256, 128, 16, 8, 3, False))),
    ],
    ('fp8-block', 'few'): [
        (2, _same(_t(16, 64, 128, 1, 4, 4, True))),
        (8, _same(_t(16, 64, 128, 1, 4, 3, True))),
        (64, _same(_t(32, 128, 128, 1, 4, 3, True))),
        (None, _same(_t(64, 128, 128, 16, 4, 4, False))),
    ],
    ('fp8-block', 'many'): [
        # tuned, gate_up/down: qwen3-30b-fp8-block M=1: 10.6/7.0 us (vLLM 10.7/7.8)
        # deepseek-v3-tp2-fp8-block M=1: 34.2/19.2 us (vLLM 39.4/21.0)
        (1, MoeTileConfigs(_t(8, 32, 128, 1, 4, 5, False), _t(8, 64, 128, 1, 4, 4, True))),
        (2, _same(_t(16, 64, 128, 1, 4, 4, True))),
        (4, _same(_t(16, 128, 128, 1, 4, 3, True))),
        (8, MoeTileConfigs(_t(8, 64, 128, 1, 4, 5, True), _t(8, 64, 128, 1, 4, 3, True))),
        # tuned, gate_up/down: qwen3-30b-fp8-block M=16: 64.4/35.5 us (vLLM 64.6/37.1)
        # qwen3-30b-fp8-block M=32: 84.6/46.2 us (vLLM 85.5/48.5)
        # qwen3-30b-fp8-block M=64: 94.8/51.6 us (vLLM 96.2/53.8)
        # deepseek-v3-tp2-fp8-block M=16: 318.4/165.3 us (vLLM 326.6/166.8)
        # deepseek-v3-tp2-fp8-block M=32: 537.8/277.8 us (vLLM 551.1/281.5)
        # deepseek-v3-tp2-fp8-block M=64: 732.6/377.6 us (vLLM 747.9/383.6)
        (64, MoeTileConfigs(_t(16, 128, 256, 1, 4, 3, True), _t(16, 128, 128, 1, 4, 3, True))),
        (128, _FP8_BLOCK_MANY_128),
        # tuned, gate_up/down: qwen3-30b-fp8-block M=4096: 410.9/266.4 us (vLLM 443.5/279.4)
        # deepseek-v3-tp2-fp8-block M=4096: 2036.5/1246.5 us (vLLM 2143.6/1382.2)
        (None, _same(_t(64, 256, 128, 16, 8, 4, False))),
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
            return _for_this_triton(cfgs)
    return _for_this_triton(rows[-1][1])


# Experts up to this size (w13 and w2 of one expert, weights only) are "small": Qwen3-30B-like
# (4.7 MB in FP8) against DeepSeek-V3-TP2's 22 MB. The decode table and fused_moe_from_logits's
# choice of path both split on it.
SMALL_EXPERT_BYTES = 8 << 20


def expert_weight_bytes(hidden: int, intermediate: int, element_size: int) -> int:
    """Bytes of one expert's w13 ([2I, H]) and w2 ([H, I]) weights."""
    return 3 * hidden * intermediate * element_size


def expert_size_class(expert_bytes: int | None) -> str:
    """"small" (at most SMALL_EXPERT_BYTES) or "large"; an unknown size counts as large."""
    return "small" if expert_bytes is not None and expert_bytes <= SMALL_EXPERT_BYTES else "large"


# Decode-layer rows (``moe_decode``, M <= 64) where its GEMMs want other tiles than ``fused_moe``'s:
# its gate_up also quantizes the intermediate for block scales, its down GEMM reduces the top-k
# rows itself. Keyed by shape class and expert size class; a row of None takes TILE_TABLE's row
# for those M. Written from ``benchmarks/tune_moe_decode.py`` runs on the H200; a key or an M past
# the last row takes TILE_TABLE's.
DECODE_TILE_TABLE: dict[tuple[str, str, str], list[tuple[int, MoeTileConfigs | None]]] = {
    ('fp8-block', 'many', 'large'): [
        # tuned (whole layer, H200, 2026-11-30 run 3): deepseek-v3-tp2-fp8-block M=1 57.8/57.7 us against
        # 62.8/58.5 on TILE_TABLE's row; 2026-12-01: no deeper pipeline (gate_up 8-12 stages, down
        # 4-8) faster alone.
        (1, MoeTileConfigs(_t(8, 32, 128, 1, 2, 6, True), _t(8, 64, 128, 1, 4, 3, False))),
        # M = 2..3: the sweep's best was slower at M = 3 (134.9/135.6 against 130.6/130.5), and so was
        # the 256-deep gate_up of the M = 4 row below (133.1/133.1 against 128.1/128.5, 2026-12-01).
        (3, None),
        # tuned (whole layer, H200, 2026-12-01, alternating with TILE_TABLE's row): a gate_up
        # tile 256 deep (two 128-deep scale groups per iteration): deepseek-v3-tp2-fp8-block M=4 174.7/174.7 us
        # against 177.0/177.7, 171.5/171.6 against 173.3/173.0.
        (4, MoeTileConfigs(_t(16, 128, 256, 1, 4, 3, True), _t(16, 128, 128, 1, 4, 3, True))),
        # tuned (whole layer, H200, 2026-12-01): the row (M=6 251.1/252.0 us against TILE_TABLE's
        # 256.7/257.0, M=8 331.1/330.4 against 334.9) with its gate_up 256 deep at half the stages; against that
        # row: M=5 205.9/206.3 against 217.0/217.4, M=6 255.0/255.0 against 244.6/244.5,
        # M=7 291.5/291.7 against 300.0/300.5, M=8 320.2/320.1 against 322.3/322.6 (another run: 326.1/326.5 against
        # 330.9/331.4); 1% less over M = 5..8, slower at M = 6. On the pairs path at M = 6:
        # the sweep's best was level with it (246.6/247.0 us against 273.5/245.4).
        (8, MoeTileConfigs(_t(8, 32, 256, 1, 2, 3, True), _t(8, 64, 128, 1, 4, 4, False))),
        # M = 9..64: TILE_TABLE's 128-deep row, which the decode GEMMs were timed with (the 256-deep
        # gate_up that TILE_TABLE now gives fused_moe there was not timed on the decode path).
        (64, _FP8_BLOCK_MANY_128),
    ],
    ('bf16', 'many', 'large'): [
        (1, None),
        # tuned (whole layer, H200, 2026-12-01, alternating with TILE_TABLE's row): the down tile
        # 256 deep at 2 stages: qwen3-30b-bf16 M=2 (pairs path) 44.2/44.2 us against 44.9/44.9; at M = 1 and 4
        # it was slower (25.9/25.8 against 25.0/25.4, 78.9/78.9 against 78.6/78.7).
        (2, MoeTileConfigs(_t(8, 64, 128, 1, 4, 3, True), _t(8, 64, 256, 1, 4, 2, True))),
    ],
    ('fp8-block', 'many', 'small'): [
        # tuned (whole layer, H200, 2026-12-01): qwen3-30b-fp8-block M=1 20.8/20.8 us against 21.4/21.4
        # on the large experts' row (gate_up alone 11.1 against 11.6).
        (1, MoeTileConfigs(_t(16, 64, 128, 1, 4, 6, True), _t(16, 64, 128, 1, 4, 4, True))),
        # M = 2, 3 on the pairs path: the sweep's best was level with TILE_TABLE's row
        # (M=2 28.4/28.4 us against 28.6/28.5, M=3 35.7/35.8 against 35.6/36.1).
        (8, None),
        # M = 9..64: TILE_TABLE's 128-deep row (the decode path measured the 256-deep gate_up slower at
        # qwen3-30b-fp8-block M=16, 113.7/113.7 us against 112.2/112.5, 2026-12-01).
        (64, _FP8_BLOCK_MANY_128),
    ],
}


# FP8 block scales on the pairs path (one token tile per (token, expert) pair): rows that differ from
# DECODE_TILE_TABLE's, timed on that path (``benchmarks/tune_moe_decode.py --fp8-path pairs``) at the
# token counts where moe_decode.FP8_PAIRS_TOKENS sends FP8 there; a row of None, or an M past the last
# row, takes DECODE_TILE_TABLE's. The grouped path measured slower on the M = 4 rows (grouped
# path with them / without: qwen3-30b-fp8-block M=4 47.3 / 45.6 us,
# deepseek-v3-tp2-fp8-block M=4 174.9 / 171.1; two calls, each against vLLM's GEMMs in its own call:
# benchmarks/results/moe_layer.md), hence a table of their own.
DECODE_PAIRS_TILE_TABLE: dict[tuple[str, str, str], list[tuple[int, MoeTileConfigs | None]]] = {
    ('fp8-block', 'many', 'large'): [
        (1, None),
        # tuned (whole layer, H200, 2026-12-02), against the row before:
        # deepseek-v3-tp2-fp8-block M=2 95.0/95.0 us against 96.2/96.2, M=4 165.0/164.9 against
        # 169.1/168.9 (DECODE_TILE_TABLE's M = 4 row, 256 deep, tuned on the grouped path).
        (2, MoeTileConfigs(_t(16, 128, 128, 1, 4, 6, True), _t(16, 64, 128, 1, 4, 3, True))),
        (3, None),
        (4, MoeTileConfigs(_t(16, 64, 128, 1, 4, 4, True), _t(16, 128, 128, 1, 4, 3, True))),
    ],
    ('fp8-block', 'many', 'small'): [
        (3, None),
        # tuned (whole layer, H200, 2026-12-02), against TILE_TABLE's row:
        # qwen3-30b-fp8-block M=4 42.7/42.5 us against 44.5/44.4, M=5 54.3/54.4 against 55.7/55.7,
        # M=6 60.0/59.9 against 62.3/62.4. The M = 4 and 5 gate_up tiles are unswapped: one token in a
        # 16-row MMA, which Triton 3.2-3.9 run on mma.sync with the e4m3 operands converted to f16
        # (wgmma, unconverted, on the swapped tiles); the layer still measured faster on them.
        (4, MoeTileConfigs(_t(16, 32, 128, 1, 2, 4, False), _t(16, 128, 128, 1, 4, 3, True))),
        (5, MoeTileConfigs(_t(16, 128, 128, 1, 2, 4, False), _t(16, 128, 128, 1, 4, 2, True))),
        (6, MoeTileConfigs(_t(16, 64, 128, 1, 4, 4, True), _t(16, 128, 128, 1, 4, 2, True))),
    ],
}


def _row(table: dict, key: tuple, num_tokens: int) -> MoeTileConfigs | None:
    """The first row of ``table[key]`` whose M reaches ``num_tokens``; None for a None row or none."""
    for max_m, cfgs in table.get(key, []):
        if num_tokens <= max_m:
            return cfgs
    return None


def select_decode_tile_configs(num_tokens: int, num_experts: int, precision: str = "bf16",
                               expert_bytes: int | None = None, path: str = "grouped") -> MoeTileConfigs:
    """The decode layer's tiles for ``num_tokens`` tokens on ``path``: DECODE_PAIRS_TILE_TABLE's row
    on the pairs path, else DECODE_TILE_TABLE's, else TILE_TABLE's.

    ``expert_bytes`` (:func:`expert_weight_bytes`) picks the small or large experts' rows; None
    takes the large ones'.
    """
    key = (*shape_class(num_experts, precision), expert_size_class(expert_bytes))
    cfgs = _row(DECODE_PAIRS_TILE_TABLE, key, num_tokens) if path == "pairs" else None
    if cfgs is None:
        cfgs = _row(DECODE_TILE_TABLE, key, num_tokens)
    return select_tile_configs(num_tokens, num_experts, precision) if cfgs is None else _for_this_triton(cfgs)
