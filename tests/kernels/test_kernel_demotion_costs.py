"""Every do_not_specialize / do_not_specialize_on_alignment in jitguard.kernels, with its price.

The signatures are recorded, not written by hand: each entry point runs once under the offline
backend (keys only) at a token count whose derived ints are all multiples of 16 (the class a
demotion takes away), and jitguard's own check compiles each kernel for sm_90 with and without
each of its demotions. A costly verdict here must be justified in the kernel's source with an
H200 timing (benchmarks/results/).
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil

import pytest
import torch

import jitguard
from jitguard import kernels, triton_compat
from jitguard.kernels import inv_rope, moe_align, moe_decode, moe_decode_gluon, moe_decode_route, moe_gemm, moe_routing
from jitguard.kernels.moe_chain import fused_moe
from jitguard.kernels.moe_decode import fused_moe_decode
from jitguard.kernels.moe_decode_gluon import gluon_gemms_supported
from jitguard.price.demotion_cost import DemotionCostChecker
from jitguard.runtime.call_capture import CallScope

M, E, K, H, I = 64, 8, 2, 256, 256  # 64 tokens x top-2: 128 pairs; every count % 16 == 0

# (module, kernel, param, demotion, verdict): the recorded verdict of each demotion in kernels/.
# Costly (Triton 3.9, sm_90, M = 64), and kept, justified beside their decorators with an H200 timing
# (benchmarks/results/kernel_demotions.md): the topk-id loads of moe_align's count and scatter kernels,
# masked by num_pairs, go from one 64-bit access to two 32-bit ones per thread.
# Made free by restructuring: inv_rope's MN-major scale padding (a runtime loop over the 0..3 padding
# tokens instead of a mask over them) and the sorted_ids sentinel fills of moe_align and the route
# kernel (bounded by padded_len rounded up to 16, inside the buffer).
EXPECTED = [
    (inv_rope, "inv_rope_fp8_kernel", "num_tokens", "do_not_specialize", "free"),
    (inv_rope, "inv_rope_fp8_kernel", "positions_ptr", "do_not_specialize_on_alignment", "free"),
    (moe_align, "_moe_count_kernel", "num_pairs", "do_not_specialize", "costly"),
    (moe_align, "_moe_count_kernel", "padded_len", "do_not_specialize", "free"),
    (moe_align, "_moe_block_experts_kernel", "num_blocks", "do_not_specialize", "free"),
    (moe_align, "_moe_block_experts_kernel", "block_size", "do_not_specialize", "free"),
    (moe_align, "_moe_scatter_kernel", "num_pairs", "do_not_specialize", "costly"),
    (moe_decode_route, "moe_decode_route_kernel", "num_tokens", "do_not_specialize", "free"),
    (moe_decode_route, "moe_decode_route_kernel", "num_pairs", "do_not_specialize", "free"),
    (moe_decode_route, "moe_decode_route_kernel", "padded_len", "do_not_specialize", "free"),
    (moe_decode_route, "moe_decode_route_kernel", "num_blocks", "do_not_specialize", "free"),
    (moe_decode_route, "moe_decode_route_kernel", "block_m", "do_not_specialize", "free"),
    (moe_decode, "moe_decode_gemm_kernel", "num_pairs", "do_not_specialize", "free"),
    (moe_decode, "moe_decode_gemm_kernel", "num_tokens", "do_not_specialize", "free"),
    (moe_gemm, "moe_grouped_gemm_kernel", "num_pairs", "do_not_specialize", "free"),
    (moe_gemm, "moe_topk_reduce_kernel", "num_tokens", "do_not_specialize", "free"),
    (moe_routing, "moe_softmax_topk_kernel", "num_tokens", "do_not_specialize", "free"),
]
# The decode layer's FP8 GEMMs in Gluon, where this Triton ships it (moe_decode_gluon).
if gluon_gemms_supported():
    EXPECTED += [(moe_decode_gluon, "moe_decode_gemm_gluon_kernel", "num_pairs", "do_not_specialize", "free"),
                 (moe_decode_gluon, "moe_decode_gemm_gluon_kernel", "num_tokens", "do_not_specialize", "free")]


@pytest.fixture(scope="module")
def recorded():
    """Compile events of every kernel, from one call of each entry point at M = 64 (keys only)."""
    x = torch.randn(M, H).to(torch.bfloat16)
    logits = torch.randn(M, E)
    w13 = torch.zeros(E, 2 * I, H, dtype=torch.bfloat16)
    w2 = torch.zeros(E, H, I, dtype=torch.bfloat16)
    heads, dim = 16, 512
    # CallScope: a fresh in-memory cache, so kernels another test compiled in this process compile again.
    with jitguard.offline(compile=False), CallScope(), jitguard.watch() as rec:
        weights, ids = moe_routing.softmax_topk(logits, K, renormalize=True)
        fused_moe(x, w13, w2, weights, ids)
        fused_moe_decode(x, logits, w13, w2, K, renormalize=True, path="grouped")
        if gluon_gemms_supported():
            # FP8 block scales with the GEMMs in Gluon (gluon_fp8_gemms "always": the grouped path at any M).
            fp8 = torch.float8_e4m3fn
            scales = {"w1_scale": torch.ones(E, 2 * I // 128, H // 128), "w2_scale": torch.ones(E, H // 128, I // 128)}
            fused_moe_decode(x, logits, w13.to(fp8), w2.to(fp8), K, renormalize=True, path="grouped",
                             use_fp8_w8a8=True, block_shape=[128, 128], **scales,
                             config=dataclasses.replace(moe_decode.DEFAULT_DECODE_CONFIG, gluon_fp8_gemms="always"))
        inv_rope.fused_inv_rope_fp8_quant(torch.empty(M, heads, dim, dtype=torch.bfloat16),
                                              torch.zeros(M, dtype=torch.int64), torch.empty(4096, 64),
                                              n_groups=4, heads_per_group=4)
    by_kernel: dict[str, list] = {}
    for event in rec.events:
        by_kernel.setdefault(event.kernel, []).append(event)
    return by_kernel


@pytest.fixture(scope="module")
def checker():
    return DemotionCostChecker(arch=90)


# Every module of jitguard.kernels, so a kernel in a new module cannot go unchecked.
_KERNEL_MODULES = [importlib.import_module(f"{kernels.__name__}.{info.name}")
                   for info in pkgutil.iter_modules(kernels.__path__)]


def test_every_demotion_in_kernels_has_a_recorded_verdict():
    declared = set()
    for module in _KERNEL_MODULES:
        for name, value in vars(module).items():
            jit_fn = triton_compat.unwrap_jit_function(value)
            if jit_fn is None or jit_fn.fn.__module__ != module.__name__:
                continue
            names = triton_compat.param_names(jit_fn)
            for option in ("do_not_specialize", "do_not_specialize_on_alignment"):
                for item in getattr(jit_fn, option, None) or []:
                    declared.add((module.__name__, name, names[item] if isinstance(item, int) else item, option))
    assert declared == {(m.__name__, k, p, d) for m, k, p, d, _ in EXPECTED}


@pytest.mark.parametrize("module, kernel, param, demotion, verdict", EXPECTED,
                         ids=[f"{k}.{p}" for _, k, p, _, _ in EXPECTED])
def test_demotion_verdict(recorded, checker, module, kernel, param, demotion, verdict):
    events = recorded.get(kernel)
    assert events, f"{kernel} did not run at M = {M}"
    cost = checker.cost(getattr(module, kernel), param, demotion, events)
    print(f"{kernel}.{param} ({demotion}): {cost.verdict}: {cost.detail}")
    assert cost.verdict == verdict, cost.detail


COSTLY = [(m, k, p) for m, k, p, _, verdict in EXPECTED if verdict == "costly"]


def _comment_above(module, kernel: str) -> str:
    """The comment lines right above ``kernel``'s decorator, joined."""
    import inspect

    lines = inspect.getsource(module).splitlines()
    decorator = next(i for i, line in enumerate(lines) if line.startswith(f"def {kernel}(")) - 1
    assert lines[decorator].startswith("@triton.jit"), f"{kernel}: no decorator line above its def"
    start = decorator
    while start > 0 and lines[start - 1].startswith("#"):
        start -= 1
    return " ".join(lines[start:decorator])


@pytest.mark.parametrize("module, kernel, param", COSTLY, ids=[f"{k}.{p}" for _, k, p in COSTLY])
def test_costly_demotion_is_justified_beside_its_decorator(module, kernel, param):
    """Issue 14: a costly demotion kept in kernels/ is justified right above its decorator, naming
    the parameter and the results file, with the H200 timing there or in the kernel note it cites."""
    import re

    comment = _comment_above(module, kernel)
    assert param in comment and "benchmarks/results/" in comment, f"{kernel}.{param}: no justification above it"
    cited = [name for name in re.findall(r"\b(_?\w+_kernel)\b", comment) if name != kernel]
    assert "H200" in comment or any("H200" in _comment_above(module, name) for name in cited), (
        f"{kernel}.{param}: neither its comment nor a kernel note it cites gives the H200 timing"
    )
