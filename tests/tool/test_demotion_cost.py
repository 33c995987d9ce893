"""The demotion cost check: real offline sm_90 compiles with and without a demotion, compared.

Each case is a small kernel, the parameter to demote, the recorded class of that parameter, and the
verdict a user must see: costly where the demotion makes the generated code worse (narrower loads
and stores, lost contiguity), free where it compiles to the same code that matters.
"""

import pytest
import torch
import triton
import triton.language as tl

import jitguard
from jitguard.price import demotion_cost as dc
from jitguard.price.demotion_cost import DemotionCostChecker, demotion_cost, signature_from_call


@triton.jit
def mask_bound_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)


@triton.jit
def row_loop_kernel(x_ptr, y_ptr, num_rows, N_COLS: tl.constexpr):
    cols = tl.arange(0, N_COLS)
    for row in range(tl.program_id(0), num_rows, tl.num_programs(0)):
        tl.store(y_ptr + row * N_COLS + cols, tl.load(x_ptr + row * N_COLS + cols) * 2)


@triton.jit
def row_stride_kernel(x_ptr, y_ptr, stride_row, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    tile = tl.load(x_ptr + rows[:, None] * stride_row + cols[None, :])
    tl.store(y_ptr + rows[:, None] * BLOCK_N + cols[None, :], tile * 2)


@triton.jit
def element_stride_kernel(x_ptr, y_ptr, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs * stride) + 1)


@triton.jit
def base_offset_kernel(x_ptr, y_ptr, start, BLOCK: tl.constexpr):
    offs = start + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) + 1)


@triton.jit
def scalar_compare_kernel(x_ptr, y_ptr, limit, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if limit > 0:
        x = x * 2
    tl.store(y_ptr + offs, x)


@triton.jit
def tile_mask_kernel(x_ptr, y_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    tile = tl.load(x_ptr + rows[:, None] * BLOCK_N + cols[None, :], mask=mask)
    tl.store(y_ptr + rows[:, None] * BLOCK_N + cols[None, :], tile + 1, mask=mask)


X = torch.zeros(64)
Y = torch.zeros(64)

CASES = [
    # id, kernel, call args, constexprs, param, demotion, verdict, words the detail holds, alternative
    ("mask-bound-contiguous", mask_bound_kernel, (X, Y, 4096), {"BLOCK": 1024}, "n_elements",
     "do_not_specialize", "costly", "128-bit loads become 32-bit", dc.ALTERNATIVE_WARMUP),
    ("row-loop-bound", row_loop_kernel, (X, Y, 4096), {"N_COLS": 256}, "num_rows",
     "do_not_specialize", "free", "", None),
    ("row-stride-in-addressing", row_stride_kernel, (X, Y, 4096), {"BLOCK_M": 16, "BLOCK_N": 64}, "stride_row",
     "do_not_specialize", "costly", "128-bit loads become 32-bit", dc.ALTERNATIVE_PAD.format(param="stride_row")),
    ("unit-stride-in-addressing", element_stride_kernel, (X, Y, 1), {"BLOCK": 1024}, "stride",
     "do_not_specialize", "costly", "128-bit loads become 32-bit", dc.ALTERNATIVE_ON_ALIGNMENT),
    ("pointer-like-int-offset", base_offset_kernel, (X, Y, 4096), {"BLOCK": 1024}, "start",
     "do_not_specialize", "costly", "128-bit loads become 32-bit", dc.ALTERNATIVE_PAD.format(param="start")),
    ("pointer-alignment", mask_bound_kernel, (X, Y, 4096), {"BLOCK": 1024}, "x_ptr",
     "do_not_specialize_on_alignment", "costly", "128-bit loads become 32-bit", dc.ALTERNATIVE_ALIGNED_POINTER),
    ("scalar-compare-only", scalar_compare_kernel, (X, Y, 4096), {"BLOCK": 1024}, "limit",
     "do_not_specialize", "free", "", None),
    ("2d-mask-on-strided-axis", tile_mask_kernel, (X, Y, 4096, 4096), {"BLOCK_M": 32, "BLOCK_N": 64}, "M",
     "do_not_specialize", "free", "", None),
    ("2d-mask-on-contiguous-axis", tile_mask_kernel, (X, Y, 4096, 4096), {"BLOCK_M": 32, "BLOCK_N": 64}, "N",
     "do_not_specialize", "costly", "128-bit loads become 32-bit", dc.ALTERNATIVE_WARMUP),
]


@pytest.fixture(scope="module")
def checker():
    return DemotionCostChecker(arch=90)


@pytest.mark.parametrize("kernel, args, constexprs, param, demotion, verdict, words, alternative",
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_verdict_per_case(checker, kernel, args, constexprs, param, demotion, verdict, words, alternative):
    signature = signature_from_call(kernel, *args, **constexprs)
    cost = checker.cost(kernel, param, demotion, signature)
    assert cost.verdict == verdict, cost.detail
    assert words in cost.detail
    assert "\n" not in cost.detail
    assert cost.alternative == alternative
    assert cost.to_json()["verdict"] == verdict and cost.to_json()["detail"] == cost.detail


def _variant(n_spec, n_type="i32"):
    """A report `variant_list` entry of mask_bound_kernel, as the monitor records it."""
    return {"key": f"k-{n_spec}", "options": {"num_warps": 4, "num_stages": 3},
            "params": {"x_ptr": {"kind": "ptr", "type": "*fp32", "spec": "aligned16", "value": None,
                                 "observed": {"dtype": "float32", "shape": [64], "align": 0}},
                       "y_ptr": {"kind": "ptr", "type": "*fp32", "spec": "aligned16", "value": None, "observed": None},
                       "n_elements": {"kind": "int", "type": n_type, "spec": n_spec, "value": None, "observed": None},
                       "BLOCK": {"kind": "constexpr", "type": "constexpr", "spec": None, "value": 1024,
                                 "observed": 1024}}}


def _report_entry(variants, advice="do_not_specialize", module=__name__):
    return {"name": "mask_bound_kernel", "module": module, "file": __file__,
            "params": {"n_elements": {"advice": advice, "specs_seen": [], "recompiles_caused": 2}},
            "variant_list": variants}


def test_report_entry_worst_variant_wins(checker):
    """The report's three classes of n: the % 16 == 0 one loses its vector accesses, so costly."""
    entry = _report_entry([_variant("one"), _variant("div16"), _variant("plain")])
    cost = checker.cost_for_report_kernel(entry, "n_elements")
    assert cost.verdict == "costly"
    assert "n_elements % 16 == 0" in cost.detail


def test_report_entry_with_only_plain_values_is_free_without_compiling(checker, monkeypatch):
    monkeypatch.setattr(DemotionCostChecker, "_compile", lambda *a: pytest.fail("nothing should compile"))
    cost = checker.cost_for_report_kernel(_report_entry([_variant("plain")]), "n_elements")
    assert cost.verdict == "free"
    assert "n_elements is other" in cost.detail


def test_on_alignment_keeps_the_one_class():
    """do_not_specialize_on_alignment leaves n == 1 specialized: that variant's code cannot change."""
    cost = demotion_cost(mask_bound_kernel, "n_elements", "do_not_specialize_on_alignment", [_variant("one")])
    assert cost.verdict == "free"


def test_same_pair_compiles_once(monkeypatch):
    checker = DemotionCostChecker()
    compiles = []
    real = DemotionCostChecker._compile
    monkeypatch.setattr(DemotionCostChecker, "_compile",
                        lambda self, *a: compiles.append((a[1], a[2])) or real(self, *a))
    first = checker.cost(mask_bound_kernel, "n_elements", "do_not_specialize", [_variant("div16")])
    again = checker.cost(mask_bound_kernel, "n_elements", "do_not_specialize", [_variant("div16")])
    other = checker.cost(mask_bound_kernel, "x_ptr", "do_not_specialize", [_variant("div16")])
    assert first == again and first.verdict == other.verdict == "costly"
    assert len(compiles) == len(set(compiles))  # the kernel as it is: compiled once for both params
    assert ("n_elements", "do_not_specialize") in compiles and ("x_ptr", "do_not_specialize") in compiles


def test_recorded_compile_events_are_signatures():
    """What the monitor records (CompileEvent) is accepted as it is."""
    with jitguard.offline(compile=False), jitguard.watch() as rec:
        mask_bound_kernel[(1,)](X, Y, 4096, BLOCK=1024)
    events = [e for e in rec.events if e.kernel == "mask_bound_kernel"]
    assert events
    assert demotion_cost(mask_bound_kernel, "n_elements", signature=events).verdict == "costly"


UNKNOWN_CASES = [
    ("script-kernel", "__main__:mask_bound_kernel", "n_elements", "do_not_specialize", [_variant("div16")],
     "never runs scripts"),
    ("no-such-module", "no_such_module_xyz:kernel", "n_elements", "do_not_specialize", [_variant("div16")],
     "module no_such_module_xyz is not found on this environment's import path"),
    ("no-such-kernel", f"{__name__}:no_such_kernel", "n_elements", "do_not_specialize", [_variant("div16")],
     "has no Triton kernel named no_such_kernel"),
    ("no-such-param", mask_bound_kernel, "n_elemnts", "do_not_specialize", [_variant("div16")],
     "no parameter 'n_elemnts'"),
    ("constexpr-param", mask_bound_kernel, "BLOCK", "do_not_specialize", [_variant("div16")],
     "BLOCK is a tl.constexpr"),
    ("kernel-changed", row_loop_kernel, "num_rows", "do_not_specialize", [_variant("div16")],
     "changed since the signature was recorded"),
    ("bad-demotion", mask_bound_kernel, "n_elements", "do_not_inline", [_variant("div16")],
     "'do_not_inline' is not one of"),
    ("no-signature", mask_bound_kernel, "n_elements", "do_not_specialize", [], "no recorded signature"),
    ("compile-fails", mask_bound_kernel, "n_elements", "do_not_specialize",
     [dict(_variant("div16"), options={"num_warps": 3})], "could not compile"),
]


@pytest.mark.parametrize("kernel, param, demotion, signature, words", [c[1:] for c in UNKNOWN_CASES],
                         ids=[c[0] for c in UNKNOWN_CASES])
def test_unknown_names_the_problem_in_one_line(checker, kernel, param, demotion, signature, words):
    cost = checker.cost(kernel, param, demotion, signature)
    assert cost.verdict == "unknown"
    assert words in cost.detail
    assert "\n" not in cost.detail


@triton.jit(do_not_specialize=["n_elements"])
def demoted_mask_bound_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)


def test_an_existing_demotion_is_judged_on_the_recorded_value():
    """Recorded while demoted ("off"): judged on the class 4096 would have had (% 16 == 0)."""
    with jitguard.offline(compile=False), jitguard.watch() as rec:
        demoted_mask_bound_kernel[(1,)](X, Y, 4096, BLOCK=1024)
    events = [e for e in rec.events if e.kernel == "demoted_mask_bound_kernel"]
    assert events and events[0].params["n_elements"].spec == "off"
    cost = demotion_cost(demoted_mask_bound_kernel, "n_elements", signature=events)
    assert cost.verdict == "costly" and "n_elements % 16 == 0" in cost.detail


def test_in_a_child_process_the_callers_driver_is_untouched(monkeypatch):
    """A process that launches GPU work asks a child; its own active driver never changes."""
    monkeypatch.setenv("JITGUARD_CACHE_DIR", "off")  # a child every time (test_price_cache: the cache)
    from jitguard import triton_compat
    from jitguard.price.demotion_cost import COST_PROBE_ATTRIBUTE, _copy_with, cost_in_subprocess

    driver_before = triton_compat.get_active_driver_raw()
    cost = cost_in_subprocess(f"{__name__}:mask_bound_kernel", "n_elements", "do_not_specialize", [_variant("div16")])
    assert cost.verdict == "costly" and "128-bit loads become 32-bit" in cost.detail
    assert cost.alternative == dc.ALTERNATIVE_WARMUP
    assert triton_compat.get_active_driver_raw() is driver_before
    assert getattr(_copy_with(mask_bound_kernel, "n_elements", None), COST_PROBE_ATTRIBUTE) is True


def test_costs_for_report_judges_only_demotion_advice(checker):
    entry = _report_entry([_variant("div16")])
    entry["params"]["BLOCK"] = {"advice": "constexpr_values", "specs_seen": [], "recompiles_caused": 1}
    costs = dc.costs_for_report({"kernels": [entry]}, checker=checker)
    assert list(costs) == [("mask_bound_kernel", "n_elements")]
    assert costs[("mask_bound_kernel", "n_elements")].to_json()["verdict"] == "costly"


@triton.jit
def decode_rows_kernel(q_ptr, k_ptr, out_ptr, kv_len, D: tl.constexpr, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    d = tl.arange(0, D)
    q = tl.load(q_ptr + row * D + d).to(tl.float32)
    acc = tl.zeros([D], dtype=tl.float32)
    for start in range(0, kv_len, BLOCK_N):
        n = start + tl.arange(0, BLOCK_N)
        k = tl.load(k_ptr + (row * kv_len + n[:, None]) * D + d[None, :], mask=n[:, None] < kv_len,
                    other=0.0).to(tl.float32)
        w = tl.exp(tl.sum(k * q[None, :], axis=1))
        acc += tl.sum(w[:, None] * k, axis=0)
    tl.store(out_ptr + row * D + d, acc.to(tl.bfloat16))


@pytest.mark.parametrize("block_n, verdict", [(64, "costly"), (16, "free")])
def test_registers_that_halve_the_warps_per_sm_are_costly_even_at_the_value_one(checker, block_n, verdict):
    """At kv_len == 1 every load is the same either way; demoted, the general loop holds a BLOCK_N x D
    tile in registers. At BLOCK_N 64 that quarters the warps an SM holds (measured 1.25x on an H100),
    at BLOCK_N 16 it keeps more than half (measured 1.01x)."""
    q = torch.empty(8, 128, dtype=torch.bfloat16)
    signature = signature_from_call(decode_rows_kernel, q, q, q, 1, D=128, BLOCK_N=block_n)
    cost = checker.cost(decode_rows_kernel, "kv_len", "do_not_specialize", signature)
    if cost.facts_before is None or cost.facts_before.registers is None:
        pytest.skip("no cuobjdump: register counts unknown")
    assert cost.verdict == verdict, cost.detail
    assert cost.facts_before.shared_bytes is not None  # the compile's shared memory is read as well
    if verdict == "costly":
        assert cost.likely == "small" and "occupancy" in cost.detail and "warps per SM" in cost.detail
        assert "loads become" not in cost.detail
