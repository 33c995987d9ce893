"""jitguard.kernels.inv_rope_fp8: maths against the reference, errors, and one variant for every T.

The maths test has one body for two backends: "interpreter" runs the kernel on the CPU under
TRITON_INTERPRET=1 (in one child process, since the flag must be set before Triton is
imported), "cuda" runs it on a GPU (marker ``gpu``). Both compare the pre-cast fp32 values and
the scales with the reference; on the GPU the fp8 output is also compared with the reference's
own cast (the interpreter's fp8 cast is wrong, triton#8322, so it is not checked there).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass

import pytest
import torch

from jitguard.kernels import inv_rope as irf
from jitguard.kernels.inv_rope import (
    FP8_DTYPE,
    inv_rope_fp8_reference,
    inverse_rope_reference,
    round_up_to_power_of_two,
    unpack_ue8m0,
)

HAS_CUDA = torch.cuda.is_available()
MAX_POSITION = 4096
# Token counts the issue asks the GPU to check.
GPU_TOKEN_COUNTS = (1, 2, 3, 13, 16, 17, 62, 64, 100, 1000, 4097, 8192)
INTERPRETER_TOKEN_COUNTS = (1, 3, 6)


@dataclass(frozen=True)
class Case:
    """One layout of the kernel: fixed per model, the token count varies."""

    name: str
    heads: int = 16
    head_dim: int = 512
    rope_dim: int = 64
    rope_start: int | None = None
    style: str = "gptj"
    group_size: int | None = 128
    scale_format: str = "fp32"
    scale_layout: str = "row"
    n_groups: int = 1
    quantize: bool = True
    dtype: str = "bfloat16"
    cache_dtype: str = "float32"
    positions_dtype: str = "int64"
    o_padding: int = 0  # extra columns after each head: o is a strided view

    def options(self) -> dict:
        return dict(
            rope_dim=self.rope_dim,
            rope_start=self.rope_start,
            style=self.style,
            group_size=self.group_size,
            scale_format=self.scale_format,
            quantize=self.quantize,
        )

    def inputs(self, num_tokens: int, seed: int) -> dict[str, torch.Tensor]:
        gen = torch.Generator().manual_seed(seed)
        wide = torch.randn(num_tokens, self.heads, self.head_dim + self.o_padding, generator=gen) * 4
        # A few rows of tiny values exercise the eps floor of the scale.
        wide[:, 0] *= 1e-12
        o = wide.to(getattr(torch, self.dtype))[:, :, : self.head_dim]
        angles = torch.rand(MAX_POSITION, self.rope_dim // 2, generator=gen) * 6.3
        cache = torch.cat((angles.cos(), angles.sin()), dim=-1).to(getattr(torch, self.cache_dtype))
        positions = torch.randint(0, MAX_POSITION, (num_tokens,), generator=gen)
        positions = positions.to(getattr(torch, self.positions_dtype))
        return dict(o=o, positions=positions, cos_sin_cache=cache)


CASES = [
    # Upstream vLLM's DeepSeek-V4 layout (TP8: 16 heads, 4 groups): pow2 scales, MN-major, grouped.
    Case("deepseek_v4_upstream_layout", scale_format="pow2", scale_layout="mn_major", n_groups=4),
    Case("gptj_per_head_fp32", group_size=None),
    Case("neox_packed_ue8m0_mn_major", heads=8, style="neox", scale_format="ue8m0_packed", scale_layout="mn_major"),
    Case("neox_rope_in_middle_non_pow2_head", heads=4, head_dim=192, rope_start=32, style="neox", group_size=64),
    Case("rope_spans_three_groups", heads=4, head_dim=128, rope_start=16, group_size=32, scale_format="pow2"),
    Case("rotation_only", heads=8, quantize=False),
    Case("fp16_bf16cache_int32pos_strided", heads=4, dtype="float16", cache_dtype="bfloat16",
         positions_dtype="int32", o_padding=64),
]

# MN-major cases, also run with the launch knob that switches loops: the prefetch only while programs have at most
# one tile each, on a grid of one program an SM (on the CPU 66 programs: at 6 tokens of 16 heads, 96 tiles, the loop
# without prefetch).
KNOB_CASES = [case for case in CASES if case.quantize and case.scale_layout == "mn_major"]
LAUNCH_KNOBS = {
    "prefetch_max_1": dict(rows_per_tile=1, prefetch_max_tiles=1, programs_per_sm=1),
}


def _layout(case: Case, inputs: dict) -> irf.InvRopeFp8Layout:
    return irf.plan_inv_rope_fp8(
        **inputs, **case.options(), scale_layout=case.scale_layout, n_groups=case.n_groups
    )


def _logical(case: Case, layout: irf.InvRopeFp8Layout, out: torch.Tensor, scales: torch.Tensor, tokens: int):
    """Kernel buffers -> ([T, H, D] values, [T, H, chunks] fp32 scales, raw scale buffer)."""
    out_view, scale_view = irf.output_views(layout, out, scales, tokens)
    values = out_view.reshape(tokens, case.heads, case.head_dim)
    if not case.quantize:
        return values, None
    scale_values = scale_view.reshape(tokens, case.heads, layout.scales_per_head)
    if case.scale_format == "ue8m0_packed":
        scale_values = unpack_ue8m0(scale_values)
    return values, scale_values


def run_kernel(
    case: Case, inputs: dict, device: str, fp8: bool, rows_per_tile: int | None = None, **knobs
) -> dict[str, torch.Tensor]:
    """Run the kernel once into poisoned buffers; pre-cast fp32 values, or fp8 when ``fp8``. ``knobs`` go to
    ``launch_inv_rope_fp8``."""
    inputs = {k: v.to(device) for k, v in inputs.items()}
    tokens = inputs["o"].shape[0]
    layout = _layout(case, inputs)
    out, scales = irf.allocate_inv_rope_fp8_outputs(layout, tokens, inputs["o"].device, inputs["o"].dtype)
    if not fp8:
        out = torch.full(out.shape, float("nan"), dtype=torch.float32, device=device)
    if scales.numel():
        scales.fill_(-7)
    irf.launch_inv_rope_fp8(layout, **inputs, out=out, scales=scales, rows_per_tile=rows_per_tile, **knobs)
    values, scale_values = _logical(case, layout, out, scales, tokens)
    result = {"values": values.cpu(), "scale_buffer": scales.cpu()}
    if scale_values is not None:
        result["scales"] = scale_values.cpu()
    return result


def _interpreter_child(request_path: str, result_path: str) -> None:
    """Child process body: TRITON_INTERPRET=1 is already in its environment."""
    requests = torch.load(request_path)
    results = {}
    for key, (case_fields, inputs) in requests.items():
        case = Case(**case_fields)
        # 8 rows per tile (the GPU default is 1): fewer interpreted programs, and partial tiles.
        results[key] = run_kernel(case, inputs, "cpu", fp8=False, rows_per_tile=8)
        if case in KNOB_CASES:
            for name, knobs in LAUNCH_KNOBS.items():
                results[(*key, name)] = run_kernel(case, inputs, "cpu", fp8=False, **knobs)
    torch.save(results, result_path)


def _seed(case: Case, tokens: int) -> int:
    return (sum(map(ord, case.name)) * 1000 + tokens) % 2**31


@pytest.fixture(scope="session")
def interpreter_results() -> dict:
    """Every interpreter case, run once in a child process with TRITON_INTERPRET=1."""
    with tempfile.TemporaryDirectory() as tmp:
        request_path, result_path = os.path.join(tmp, "in.pt"), os.path.join(tmp, "out.pt")
        requests = {
            (case.name, tokens): (asdict(case), case.inputs(tokens, _seed(case, tokens)))
            for case in CASES
            for tokens in INTERPRETER_TOKEN_COUNTS
        }
        torch.save(requests, request_path)
        env = dict(os.environ, TRITON_INTERPRET="1")
        child = subprocess.run(
            [sys.executable, __file__, request_path, result_path], env=env, capture_output=True, text=True, timeout=600
        )
        if child.returncode != 0 and _INTERPRETER_LOOP_BOUND_BUG in child.stderr:
            # Triton <= 3.6's interpreter turns a runtime loop bound into an index with int() on a
            # one-element array, which numpy 2 refuses (later Tritons squeeze it first); CI runs the
            # interpreter cases on the newest Triton.
            import numpy
            import triton

            pytest.skip(f"Triton {triton.__version__}'s interpreter cannot take a runtime loop bound under "
                        f"numpy {numpy.__version__}")
        assert child.returncode == 0, f"interpreter child failed:\n{child.stderr[-4000:]}"
        return torch.load(result_path)


_INTERPRETER_LOOP_BOUND_BUG = "only 0-dimensional arrays can be converted to Python scalars"


def assert_fp8_equal_except_ties(actual: torch.Tensor, precast: torch.Tensor) -> None:
    """fp8 values must equal the reference's cast, except where the pre-cast value is a tie."""
    expected = precast.to(FP8_DTYPE)
    differ = actual.view(torch.uint8) != expected.view(torch.uint8)
    if not differ.any():
        return
    a, e, p = actual.float()[differ], expected.float()[differ], precast[differ]
    ties = (a - p).abs() == (e - p).abs()
    assert ties.all(), (
        f"{int((~ties).sum())} fp8 values differ from the reference's cast and are not ties, "
        f"e.g. got {a[~ties][:4].tolist()} expected {e[~ties][:4].tolist()} (pre-cast {p[~ties][:4].tolist()})"
    )


def check_against_reference(case: Case, inputs: dict, got: dict, fp8_got: dict | None, device: str) -> None:
    """The shared assertions of the CPU (interpreter) and GPU tests; the reference runs on ``device``."""
    ref = inv_rope_fp8_reference(**{k: v.to(device) for k, v in inputs.items()}, **case.options())
    ref = type(ref)(ref.out.cpu(), ref.scales.cpu(), ref.precast.cpu())
    tokens = inputs["o"].shape[0]
    assert not got["values"].isnan().any(), "the kernel left output elements unwritten"
    torch.testing.assert_close(got["values"], ref.precast, rtol=1e-6, atol=0,
                               msg=lambda m: f"{case.name} T={tokens}: {m}")
    if not case.quantize:
        if fp8_got is not None:  # the output in the input dtype, rounded like the reference
            assert torch.equal(fp8_got["values"], ref.out)
        return
    torch.testing.assert_close(got["scales"], ref.scales, rtol=1e-6, atol=0, msg=lambda m: f"{case.name} scales: {m}")
    if case.scale_layout == "mn_major":
        padding = got["scale_buffer"][:, tokens:]
        assert padding.shape[1] == (-tokens) % 4
        assert (padding == 0).all(), "padding tokens of the MN-major scales must be zero"
    if fp8_got is not None:
        assert_fp8_equal_except_ties(fp8_got["values"], ref.precast)
        torch.testing.assert_close(fp8_got["scales"], ref.scales, rtol=1e-6, atol=0)


BACKENDS = [
    "interpreter",
    pytest.param("cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")]),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_kernel_matches_reference(case: Case, backend: str, request: pytest.FixtureRequest) -> None:
    """Rotation, scales and quantized values match the plain-torch reference for every T."""
    token_counts = INTERPRETER_TOKEN_COUNTS if backend == "interpreter" else GPU_TOKEN_COUNTS
    for tokens in token_counts:
        inputs = case.inputs(tokens, _seed(case, tokens))
        if backend == "interpreter":
            got = request.getfixturevalue("interpreter_results")[(case.name, tokens)]
            fp8_got = None
        else:
            got = run_kernel(case, inputs, "cuda", fp8=False)
            fp8_got = run_kernel(case, inputs, "cuda", fp8=True)
        check_against_reference(case, inputs, got, fp8_got, "cpu" if backend == "interpreter" else "cuda")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("knobs", list(LAUNCH_KNOBS))
@pytest.mark.parametrize("case", KNOB_CASES, ids=lambda c: c.name)
def test_launch_knobs_match_reference(case: Case, knobs: str, backend: str, request: pytest.FixtureRequest) -> None:
    """The loops other launch knobs switch to: the same rotation, scales, MN-major padding and fp8 values as the
    reference."""
    token_counts = INTERPRETER_TOKEN_COUNTS if backend == "interpreter" else GPU_TOKEN_COUNTS
    for tokens in token_counts:
        inputs = case.inputs(tokens, _seed(case, tokens))
        if backend == "interpreter":
            got = request.getfixturevalue("interpreter_results")[(case.name, tokens, knobs)]
            fp8_got = None
        else:
            got = run_kernel(case, inputs, "cuda", fp8=False, **LAUNCH_KNOBS[knobs])
            fp8_got = run_kernel(case, inputs, "cuda", fp8=True, **LAUNCH_KNOBS[knobs])
        check_against_reference(case, inputs, got, fp8_got, "cpu" if backend == "interpreter" else "cuda")


# ---- the reference itself --------------------------------------------------------------


def _forward_rope(x: torch.Tensor, positions: torch.Tensor, cache: torch.Tensor, rope_start: int, style: str):
    """Independent forward RoPE through complex numbers: pairs times exp(i * theta)."""
    half = cache.shape[1] // 2
    rope = x[..., rope_start : rope_start + 2 * half].double()
    if style == "gptj":
        pairs = torch.complex(rope[..., 0::2], rope[..., 1::2])
    else:
        pairs = torch.complex(rope[..., :half], rope[..., half:])
    rotation = torch.complex(cache[positions, :half].double(), cache[positions, half:].double())[:, None, :]
    turned = pairs * rotation
    out = x.double().clone()
    if style == "gptj":
        out[..., rope_start : rope_start + 2 * half] = torch.stack((turned.real, turned.imag), -1).flatten(-2)
    else:
        out[..., rope_start : rope_start + 2 * half] = torch.cat((turned.real, turned.imag), -1)
    return out


@pytest.mark.parametrize("style", ["gptj", "neox"])
def test_reference_inverse_rope_undoes_forward_rope(style: str) -> None:
    case = Case("roundtrip", heads=3, head_dim=96, rope_dim=32, rope_start=8, style=style)
    inputs = case.inputs(5, seed=1)
    x = inputs["o"].float()
    rotated = _forward_rope(x, inputs["positions"], inputs["cos_sin_cache"], 8, style).float()
    back = inverse_rope_reference(rotated, inputs["positions"], inputs["cos_sin_cache"], rope_start=8, style=style)
    torch.testing.assert_close(back, x, rtol=1e-5, atol=1e-5)
    assert not torch.allclose(rotated, x), "the forward rotation should move the rope slice"


def test_reference_dequantizes_close_to_rotation() -> None:
    case = CASES[0]
    inputs = case.inputs(7, seed=2)
    ref = inv_rope_fp8_reference(**inputs, **case.options())
    rotated = inverse_rope_reference(**{k: inputs[k] for k in ("o", "positions", "cos_sin_cache")})
    dequant = ref.out.float().reshape(7, 16, 4, 128) * ref.scales[..., None]
    # e4m3 keeps 3 mantissa bits: relative error <= 2**-4 of the group's largest value.
    error = (dequant.reshape(7, 16, 512) - rotated).abs().reshape(7, 16, 4, 128).amax(-1)
    assert (error <= rotated.abs().reshape(7, 16, 4, 128).amax(-1) * 2**-4 + 1e-30).all()


def test_power_of_two_scales_round_up_exactly() -> None:
    values = torch.tensor([1.0, 1.0000001, 0.75, 3.0e-13, 448.0 / 448.0, 2.0**-126, 5.0e30])
    rounded = round_up_to_power_of_two(values)
    mantissa, _ = torch.frexp(rounded)
    assert (mantissa == 0.5).all()
    assert (rounded >= values).all() and (rounded < 2 * values).all()
    assert rounded[0] == 1.0 and rounded[1] == 2.0


def test_unpack_ue8m0_reads_bytes_lowest_first() -> None:
    word = torch.tensor([[127 | (128 << 8) | (126 << 16) | (130 << 24)]], dtype=torch.int64).to(torch.int32)
    assert unpack_ue8m0(word).tolist() == [[1.0, 2.0, 0.5, 8.0]]


# ---- errors ------------------------------------------------------------------------------


def _good_inputs(tokens: int = 3) -> dict:
    return Case("errors", heads=2).inputs(tokens, seed=3)


@pytest.mark.parametrize(
    "change, options, error, words",
    [
        (dict(o=lambda i: i["o"].float()), {}, TypeError, "o: dtype"),
        (dict(o=lambda i: i["o"][0]), {}, ValueError, "o: expected [tokens, heads, head_dim]"),
        (dict(o=lambda i: i["o"].transpose(1, 2)), {}, ValueError, "o: last dimension"),
        (dict(positions=lambda i: i["positions"].float()), {}, TypeError, "positions: dtype"),
        (dict(positions=lambda i: i["positions"][:2]), {}, ValueError, "positions: expected shape [3]"),
        (dict(positions=lambda i: i["positions"].to("meta")), {}, ValueError, "positions: is on meta"),
        (dict(positions=lambda i: i["positions"] + MAX_POSITION), {}, ValueError,
         "positions: values must lie in [0, 4096)"),
        (dict(cos_sin_cache=lambda i: i["cos_sin_cache"].double()), {}, TypeError, "cos_sin_cache: dtype"),
        (dict(cos_sin_cache=lambda i: i["cos_sin_cache"][:, :47]), {}, ValueError, "rope_dim: must be a positive even"),
        ({}, dict(rope_dim=32), ValueError, "rope_dim: 32 does not match"),
        ({}, dict(rope_start=480), ValueError, "rope_dim: rope slice [480, 544) does not fit in head_dim 512"),
        ({}, dict(group_size=96), ValueError, "group_size: must be a power of two"),
        ({}, dict(group_size=256, scale_format="ue8m0_packed"), ValueError, "scale_format: 'ue8m0_packed' packs 4"),
        ({}, dict(scale_format="e8m0"), ValueError, "scale_format: must be one of"),
        ({}, dict(style="llama"), ValueError, "style: must be one of"),
        ({}, dict(n_groups=3), ValueError, "n_groups: must divide the number of heads 2"),
    ],
)
def test_bad_input_raises_one_line_error_naming_the_argument(change, options, error, words) -> None:
    inputs = _good_inputs()
    inputs.update({name: make(inputs) for name, make in change.items()})
    with pytest.raises(error) as info:
        irf.inv_rope_fp8(**inputs, **options)
    message = str(info.value)
    assert message.startswith("inv_rope_fp8: ") and words in message and "\n" not in message


def test_upstream_compatible_entry_point_checks_head_counts() -> None:
    with pytest.raises(ValueError, match="o: has 2 heads, expected n_groups \\* heads_per_group = 4"):
        irf.fused_inv_rope_fp8_quant(**_good_inputs(), n_groups=2, heads_per_group=2)


def test_empty_batch_returns_empty_outputs() -> None:
    out, scales = irf.inv_rope_fp8(**_good_inputs(0), scale_layout="mn_major")
    assert out.shape == (0, 2, 512) and out.dtype == FP8_DTYPE and scales.shape == (0, 2, 4)


def test_grid_stays_within_the_resident_cap_and_pairs_tiles_past_half_of_it() -> None:
    sms, per_sm = 132, 32
    cap = sms * per_sm
    for tokens in (1, 17, 132, 200, 256, 1000, 1024, 4096, 4097, 32768):
        n_tiles = tokens * 16
        grid = irf.inv_rope_grid(n_tiles, sms, per_sm)
        assert 1 <= grid <= min(n_tiles, cap), tokens
        if n_tiles > cap // 2:
            # Two tiles a program (the second prefetched) until the cap binds.
            assert grid == min(cap, max(cap // 2, -(-n_tiles // 2))), tokens
        else:
            assert grid == n_tiles, tokens


# ---- one compiled variant for every token count (offline backend) -----------------------

SWEEP_HEADS, SWEEP_DIM, SWEEP_MAX_T = 16, 512, 65536
# The classes Triton tells apart (1, multiples of 16, others), around every power of two.
SAMPLE_TOKEN_COUNTS = sorted(
    {1, 2, 3, 4, 5, 7, 8, 12, 15}
    | {v for k in range(4, 17) for v in (2**k - 1, 2**k, 2**k + 1, 2**k + 4)}
    - {SWEEP_MAX_T + 1, SWEEP_MAX_T + 4}
)


@pytest.fixture(scope="module")
def sweep_inputs() -> dict:
    # torch.empty never touches its pages: a 1 GiB buffer costs nothing until written.
    return dict(
        o=torch.empty(SWEEP_MAX_T, SWEEP_HEADS, SWEEP_DIM, dtype=torch.bfloat16),
        positions=torch.zeros(SWEEP_MAX_T, dtype=torch.int64),
        cos_sin_cache=torch.empty(MAX_POSITION, 64),
    )


def _variants_over(token_counts, call, compile: bool = False) -> tuple[int, list]:
    import jitguard

    with jitguard.offline(compile=compile), jitguard.watch() as recorder:
        for tokens in token_counts:
            call(tokens)
    return recorder.variants("inv_rope_fp8_kernel"), recorder.events


def test_upstream_layout_compiles_one_variant_for_every_token_count(sweep_inputs) -> None:
    """T = 1..65536 through the drop-in entry point: one key, derived strides included."""
    o, positions, cache = sweep_inputs["o"], sweep_inputs["positions"], sweep_inputs["cos_sin_cache"]

    def call(tokens: int) -> None:
        irf.fused_inv_rope_fp8_quant(o[:tokens], positions[:tokens], cache, n_groups=4, heads_per_group=4)

    variants, events = _variants_over(range(1, SWEEP_MAX_T + 1), call)
    assert variants == 1, [event.causes for event in events]


@pytest.mark.parametrize(
    "options",
    [
        dict(),
        dict(group_size=None, scale_format="pow2", scale_layout="mn_major"),
        dict(style="neox", scale_format="ue8m0_packed", scale_layout="mn_major", n_groups=2),
        dict(quantize=False),
    ],
    ids=["row_fp32", "per_head_pow2_mn_major", "neox_packed_grouped", "rotation_only"],
)
def test_every_layout_compiles_one_variant_across_token_classes(sweep_inputs, options) -> None:
    o, positions, cache = sweep_inputs["o"], sweep_inputs["positions"], sweep_inputs["cos_sin_cache"]

    def call(tokens: int) -> None:
        irf.inv_rope_fp8(o[:tokens], positions[:tokens], cache, check_positions=False, **options)

    variants, events = _variants_over(SAMPLE_TOKEN_COUNTS, call)
    assert variants == 1, [event.causes for event in events]


@pytest.mark.parametrize(
    "knobs, switch_tokens",
    [
        # 16 tiles a program on the CPU's 132 x 32 programs: 67584 rows, 4224 tokens of 16 heads.
        (dict(prefetch_max_tiles=16), 4224),
    ],
    ids=["prefetch_max_16"],
)
def test_loop_switches_compile_one_variant_on_both_sides(sweep_inputs, knobs, switch_tokens) -> None:
    """Knobs whose loop is chosen by the token count: below and above take two loops of one compiled variant."""
    o, positions, cache = sweep_inputs["o"], sweep_inputs["positions"], sweep_inputs["cos_sin_cache"]
    layout = irf.plan_inv_rope_fp8(o[:1], positions[:1], cache, scale_format="pow2", scale_layout="mn_major",
                                   n_groups=4)

    def call(tokens: int) -> None:
        out, scales = irf.allocate_inv_rope_fp8_outputs(layout, tokens, o.device)
        irf.launch_inv_rope_fp8(layout, o[:tokens], positions[:tokens], cache, out, scales, **knobs)

    variants, events = _variants_over(SAMPLE_TOKEN_COUNTS, call)
    assert variants == 1, [event.causes for event in events]
    assert min(SAMPLE_TOKEN_COUNTS) < switch_tokens < max(SAMPLE_TOKEN_COUNTS)


def test_default_specialization_copy_recompiles_where_ours_does_not(sweep_inputs) -> None:
    """The same kernel body under Triton's default specialization compiles per token class."""
    import triton

    stock = triton.jit(irf.inv_rope_fp8_kernel.fn)
    o, positions, cache = sweep_inputs["o"], sweep_inputs["positions"], sweep_inputs["cos_sin_cache"]
    layout = irf.plan_inv_rope_fp8(o[:1], positions[:1], cache)

    def call(tokens: int) -> None:
        out, scales = irf.allocate_inv_rope_fp8_outputs(layout, tokens, o.device)
        irf.launch_inv_rope_fp8(layout, o[:tokens], positions[:tokens], cache, out, scales, kernel=stock)

    variants, events = _variants_over((1, 2, 16, 17, 32), call)
    assert variants == 3
    assert {cause.param for event in events for cause in event.causes} == {"num_tokens"}


def test_real_compile_for_sm90_gives_one_variant(sweep_inputs, tmp_path, monkeypatch) -> None:
    """A real sm_90 compile (ptxas included, cold disk cache) of the upstream layout, reused for other T."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    o, positions, cache = sweep_inputs["o"], sweep_inputs["positions"], sweep_inputs["cos_sin_cache"]

    def call(tokens: int) -> None:
        irf.fused_inv_rope_fp8_quant(o[:tokens], positions[:tokens], cache, n_groups=4, heads_per_group=4)

    from jitguard import triton_compat

    def compiled() -> dict:
        return {id(kernel): kernel for cache in triton_compat.all_kernel_caches(irf.inv_rope_fp8_kernel)
                for kernel in cache.values()}

    before = compiled()
    variants, events = _variants_over((1, 17, 4096, 65536), call, compile=True)
    assert variants == 1 and len(events) == 1, [event.causes for event in events]
    assert any(path.suffix == ".cubin" for path in tmp_path.rglob("*")), "no cubin was written"
    ptx = [kernel.asm["ptx"] for slot, kernel in compiled().items() if slot not in before]
    assert len(ptx) == 1, "expected the one new variant in the kernel's cache"
    # The one variant keeps 128-bit row accesses although num_tokens is demoted: the bf16 row
    # (32 bytes a thread: two 128-bit loads, again for the prefetched row) and the fp8 row store,
    # which is a streaming store (st.global.cs).
    assert ptx[0].count("ld.global.v4.b32") >= 4, "row loads not 128-bit"
    assert ptx[0].count("st.global.cs.v4.b32") >= 1, "fp8 row store not 128-bit and streaming"
    # The fp8 cast saturates by itself, so no clamp precedes it (min.xorsign.abs is tl.clamp).
    assert "cvt.rn.satfinite.e4m3x2.f32" in ptx[0], "the fp8 cast does not saturate"
    assert "min.xorsign.abs.f32" not in ptx[0], "a clamp precedes the saturating fp8 cast"
    # Power-of-two scales: the inverse comes from the exponent, no division (div_rn is div.rn.f32, or rcp).
    assert "div.rn.f32" not in ptx[0] and "rcp." not in ptx[0], "the inverse scale is divided, not built"


if __name__ == "__main__":
    _interpreter_child(*sys.argv[1:3])
