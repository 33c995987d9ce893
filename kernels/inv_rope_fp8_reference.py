"""Plain-torch reference for the fused inverse-RoPE + FP8 quantization kernel.

The reference defines the arithmetic the Triton kernel follows step for step (fp32 maths,
``amax * (1 / fp8_max)`` for the scale, an exact round-up to a power of two, a reciprocal
computed once per group and multiplied in), so its fp8 cast is the kernel's expected output
up to ties. It is also the "plain torch" baseline in ``benchmarks/bench_inv_rope_fp8.py``.

Everything here works on any torch device and returns the logical layout: outputs
``[T, H, D]`` and scales ``[T, H, chunks]`` as fp32 values.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

FP8_DTYPE = torch.float8_e4m3fn
FP8_MAX = float(torch.finfo(FP8_DTYPE).max)
AMAX_EPS = 1e-10

_SCALE_FORMATS = ("fp32", "pow2", "ue8m0_packed")
_STYLES = ("gptj", "neox")


@dataclass(frozen=True)
class InvRopeFp8Reference:
    """What the reference computes.

    ``out``: fp8 ``[T, H, D]`` (bf16 rotated values when ``quantize=False``);
    ``scales``: fp32 ``[T, H, chunks]`` (empty when ``quantize=False``);
    ``precast``: fp32 ``[T, H, D]``, the scaled and clamped values just before the fp8 cast
    (the rotated fp32 values when ``quantize=False``).
    """

    out: torch.Tensor
    scales: torch.Tensor
    precast: torch.Tensor


def round_up_to_power_of_two(scale: torch.Tensor) -> torch.Tensor:
    """Smallest power of two >= each positive fp32 value, computed exactly on the bits.

    ``log2``/``exp2`` are approximate on GPUs; the kernel and this reference both bump the
    exponent when the mantissa is non-zero instead.
    """
    bits = scale.contiguous().view(torch.int32)
    exponent = (bits >> 23) & 0xFF
    exponent = exponent + ((bits & 0x7FFFFF) != 0).to(torch.int32)
    return (exponent << 23).view(torch.float32)


def unpack_ue8m0(packed: torch.Tensor) -> torch.Tensor:
    """Expand int32 words holding four UE8M0 exponent bytes (lowest byte first) to fp32 scales.

    ``[..., k]`` int32 -> ``[..., 4 * k]`` fp32, each ``2 ** (byte - 127)``.
    """
    if packed.dtype != torch.int32:
        raise TypeError(f"unpack_ue8m0: packed must be int32, got {packed.dtype}")
    shifts = torch.arange(4, device=packed.device, dtype=torch.int32) * 8
    exponents = (packed.unsqueeze(-1) >> shifts) & 0xFF
    scales = (exponents << 23).view(torch.float32)
    return scales.reshape(*packed.shape[:-1], packed.shape[-1] * 4)


def inverse_rope_reference(
    o: torch.Tensor,
    positions: torch.Tensor,
    cos_sin_cache: torch.Tensor,
    *,
    rope_dim: int | None = None,
    rope_start: int | None = None,
    style: str = "gptj",
) -> torch.Tensor:
    """Rotate the rope slice of every head by -theta; returns fp32 ``[T, H, D]``."""
    if style not in _STYLES:
        raise ValueError(f"inverse_rope_reference: style must be one of {_STYLES}, got {style!r}")
    head_dim = o.shape[-1]
    rope_dim = cos_sin_cache.shape[-1] if rope_dim is None else rope_dim
    rope_start = head_dim - rope_dim if rope_start is None else rope_start
    half = rope_dim // 2
    x = o.float()
    rows = cos_sin_cache.index_select(0, positions.long()).float()
    cos = rows[:, None, :half]
    sin = rows[:, None, half : 2 * half]
    rope = x[..., rope_start : rope_start + rope_dim]
    if style == "gptj":
        first, second = rope[..., 0::2], rope[..., 1::2]
    else:
        first, second = rope[..., :half], rope[..., half:]
    # Inverse rotation: (a, b) -> (a cos + b sin, b cos - a sin).
    new_first = first * cos + second * sin
    new_second = second * cos - first * sin
    if style == "gptj":
        rotated = torch.stack((new_first, new_second), dim=-1).flatten(-2)
    else:
        rotated = torch.cat((new_first, new_second), dim=-1)
    out = x.clone()
    out[..., rope_start : rope_start + rope_dim] = rotated
    return out


def inv_rope_fp8_reference(
    o: torch.Tensor,
    positions: torch.Tensor,
    cos_sin_cache: torch.Tensor,
    *,
    rope_dim: int | None = None,
    rope_start: int | None = None,
    style: str = "gptj",
    group_size: int | None = 128,
    scale_format: str = "fp32",
    quantize: bool = True,
) -> InvRopeFp8Reference:
    """Inverse RoPE then FP8 e4m3 quantization per (token, head) or per ``group_size`` group.

    ``group_size=None`` quantizes each head as one group. ``scale_format`` "fp32" keeps
    ``amax / 448``; "pow2" and "ue8m0_packed" round it up to a power of two (the values are
    returned as fp32 here either way).
    """
    if scale_format not in _SCALE_FORMATS:
        raise ValueError(
            f"inv_rope_fp8_reference: scale_format must be one of {_SCALE_FORMATS}, got {scale_format!r}"
        )
    rotated = inverse_rope_reference(
        o, positions, cos_sin_cache, rope_dim=rope_dim, rope_start=rope_start, style=style
    )
    num_tokens, num_heads, head_dim = rotated.shape
    if not quantize:
        empty = torch.empty(0, dtype=torch.float32, device=o.device)
        return InvRopeFp8Reference(rotated.to(o.dtype), empty, rotated)
    group = head_dim if group_size is None else group_size
    grouped = rotated.reshape(num_tokens, num_heads, head_dim // group, group)
    amax = grouped.abs().amax(dim=-1).clamp_min(AMAX_EPS)
    scales = amax * torch.tensor(1.0 / FP8_MAX, dtype=torch.float32)
    if scale_format != "fp32":
        scales = round_up_to_power_of_two(scales)
    inverse = torch.ones((), dtype=torch.float32, device=o.device) / scales
    precast = (grouped * inverse.unsqueeze(-1)).clamp(-FP8_MAX, FP8_MAX)
    precast = precast.reshape(num_tokens, num_heads, head_dim)
    return InvRopeFp8Reference(precast.to(FP8_DTYPE), scales, precast)
