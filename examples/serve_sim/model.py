"""The model a worker runs per engine step: a stack of MoE layers, each followed by the
inverse-RoPE + FP8 quantization of the attention output (DeepSeek-V4's o-projection input).

Attention itself is not simulated: its output is a persistent buffer, sliced to the step's token
count as vLLM slices its persistent input buffers. The router is plain torch (logits, softmax,
top-k); the MoE layer and the inverse RoPE are `jitguard.kernels` (fixed or upstream set).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .kernel_sets import load_kernel_set


@dataclass(frozen=True)
class ModelShape:
    """Sizes of one tensor-parallel rank's shard."""

    layers: int = 2
    hidden: int = 128
    experts: int = 8
    top_k: int = 2
    intermediate: int = 64  # per rank (the full model's intermediate / TP)
    heads: int = 4  # per rank
    head_dim: int = 128
    rope_dim: int = 64
    group_size: int = 64
    max_tokens: int = 256  # the engine's max_num_batched_tokens: buffers are sized for it
    max_position: int = 4096

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# Qwen3-30B-A3B-like MoE (E128 top-8, H2048, I768 split over TP2) and DeepSeek-V4-like inverse
# RoPE (16 heads of 512 per rank, rope on the last 64, 128-element FP8 groups).
GPU_SHAPE = ModelShape(layers=2, hidden=2048, experts=128, top_k=8, intermediate=384, heads=16, head_dim=512,
                       rope_dim=64, group_size=128, max_tokens=512, max_position=16384)


class SimModel:
    """One rank's weights and buffers, and `forward(num_tokens, positions)` through the kernels."""

    def __init__(self, shape: ModelShape, kernel_set: str, device: Any, seed: int = 0, values: bool = True) -> None:
        """`values=False` leaves weights uninitialised (a keys-only calibration never reads them)."""
        import torch

        self.shape = shape
        self.device = device
        self.moe, self.rope, self.removed = load_kernel_set(kernel_set)
        gen = torch.Generator(device=device).manual_seed(seed)
        bf16 = torch.bfloat16

        def weights(*size: int) -> Any:
            if not values:
                return torch.empty(*size, dtype=bf16, device=device)
            return (torch.randn(*size, generator=gen, dtype=bf16, device=device) * 0.05)

        s = shape
        self.router = [weights(s.hidden, s.experts) for _ in range(s.layers)]
        self.w13 = [weights(s.experts, 2 * s.intermediate, s.hidden) for _ in range(s.layers)]
        self.w2 = [weights(s.experts, s.hidden, s.intermediate) for _ in range(s.layers)]
        self.hidden_buffer = weights(s.max_tokens, s.hidden)
        self.attn_buffer = weights(s.max_tokens, s.heads, s.head_dim)
        self.positions_buffer = torch.zeros(s.max_tokens, dtype=torch.int64, device=device)
        angles = torch.rand(s.max_position, s.rope_dim, generator=gen, device=device) * 6.283
        half = s.rope_dim // 2
        self.cos_sin = torch.cat([angles[:, :half].cos(), angles[:, :half].sin()], dim=1)

    def forward(self, num_tokens: int, segments: list[tuple[int, int]]) -> None:
        """Run every layer for `num_tokens` tokens; `segments` are (first position, length) per request."""
        import torch

        s = self.shape
        positions = self.positions_buffer[:num_tokens]
        offset = 0
        for start, length in segments:
            positions[offset:offset + length] = torch.arange(start, start + length, device=self.device)
            offset += length
        x = self.hidden_buffer[:num_tokens]
        o = self.attn_buffer[:num_tokens]
        for layer in range(s.layers):
            probs = torch.softmax((x @ self.router[layer]).float(), dim=-1)
            topk_weights, topk_ids = torch.topk(probs, s.top_k, dim=-1)
            x = self.moe.fused_moe(x, self.w13[layer], self.w2[layer], topk_weights, topk_ids)
            self.rope.inv_rope_fp8(o, positions, self.cos_sin, rope_dim=s.rope_dim, group_size=s.group_size,
                                   check_positions=False)
