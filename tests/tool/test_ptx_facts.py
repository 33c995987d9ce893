"""Reading code facts from PTX, TTIR and cuobjdump text (no compiler: fixed snippets in the forms
Triton 3.2-3.9 print)."""

import pytest

from jitguard.price.ptx_facts import (
    CodeFacts,
    compare_facts,
    divisible_args,
    likely_impact,
    occupancy_drop,
    param_uses,
    ptx_facts,
    resident_warps,
    resource_usage,
)

PTX_CASES = [
    # id, PTX lines, loads {bytes: n}, stores {bytes: n}, extra facts
    ("predicated-v4", "\t@%p1 ld.global.v4.b32 { %r1, %r2, %r3, %r4 }, [ %rd1 + 0 ];\n"
                      "\t@%p2 st.global.v4.b32 [ %rd3 + 0 ], { %r9, %r10, %r11, %r12 };", {16: 1}, {16: 1}, {}),
    ("cache-hint-v2", "\t@!%p3 ld.global.L1::evict_last.v2.b32 { %r1, %r2 }, [ %rd1 + 0 ];", {8: 1}, {}, {}),
    ("scalar-b16", "\tld.global.b16 { %rs1 }, [ %rd1 + 0 ];\n\tst.global.b16 [ %rd2 + 0 ], { %rs1 };",
     {2: 1}, {2: 1}, {}),
    ("cp-async-16", "\tcp.async.cg.shared.global [ %r97 + 0 ], [ %rd21 + 0 ], 0x10, %r98;", {16: 1}, {}, {}),
    ("cp-async-4", "\tcp.async.ca.shared.global [ %r97 + 0 ], [ %rd21 + 0 ], 4, %r98;", {4: 1}, {}, {}),
    ("tensor-cores", "\twgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%f1}, %rd1, %rd2, 1, 1, 1, 0, 1;\n"
                     "\tmma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%f1}, {%r1}, {%r2}, {%f1};\n"
                     "\tcp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes "
                     "[%r1], [%rd1, {%r2, %r3}], [%r4];",
     {}, {}, {"wgmma": 1, "mma": 1, "tma": 1}),
    ("not-instructions", ".visible .entry k(\n\t.param .u64 .ptr .global .align 1 k_param_0\n)\n{\n$L__BB0_1:\n"
                         "\t// ld.global.v4.b32 in a comment\n}", {}, {}, {"instructions": 0}),
]


@pytest.mark.parametrize("ptx, loads, stores, extra", [c[1:] for c in PTX_CASES], ids=[c[0] for c in PTX_CASES])
def test_ptx_facts(ptx, loads, stores, extra):
    facts = ptx_facts(ptx)
    assert facts.loads == loads and facts.stores == stores
    for name, value in extra.items():
        assert getattr(facts, name) == value


TTIR_NEW = ('  tt.func public @k(%x_ptr: !tt.ptr<f32> {tt.divisibility = 16 : i32} loc("x_ptr"(#loc)), '
            '%n: i32 loc("n"(#loc)), %stride: i32 {tt.divisibility = 16 : i32} loc("stride"(#loc))) '
            'attributes {noinline = false} {\n'
            '    %0 = tt.splat %n : i32 -> tensor<16xi32> loc(#loc1)\n'
            '    %1 = arith.cmpi slt, %r, %0 : tensor<16xi32> loc(#loc2)\n'
            '    %2 = arith.muli %row, %stride : i32 loc(#loc3)\n'
            '    %3 = tt.addptr %x_ptr, %2 : !tt.ptr<f32>, i32 loc(#loc4)\n')
TTIR_OLD = ('  tt.func public @k(%arg0: !tt.ptr<f32> {tt.divisibility = 16 : i32} loc("f.py":8:0), '
            '%arg1: i32 loc("f.py":8:0), %arg2: i32 {tt.divisibility = 16 : i32} loc("f.py":8:0)) '
            'attributes {noinline = false} {\n'
            '    %0 = scf.for %arg3 = %c0 to %arg1 step %c1 iter_args(%a = %b) -> (i32) : i32 {\n'
            '    %2 = arith.muli %row, %arg2 : i32 loc(#loc3)\n'
            '    %3 = tt.addptr %arg0, %2 : !tt.ptr<f32>, i32 loc(#loc4)\n')


@pytest.mark.parametrize("ttir, uses", [
    (TTIR_NEW, {"x_ptr": ("address",), "n": ("bound",), "stride": ("address",)}),
    (TTIR_OLD, {"x_ptr": ("address", "in-loop"), "n": ("loop",), "stride": ("address", "in-loop")}),
], ids=["named-args", "numbered-args"])
def test_ttir_divisibility_and_uses(ttir, uses):
    names = ["x_ptr", "n", "stride"]
    assert divisible_args(ttir, names) == ("x_ptr", "stride")
    assert {name: param_uses(ttir, name, names) for name in names} == uses


def test_resource_usage_from_cuobjdump():
    text = " Function add:\n  REG:18 STACK:0 SHARED:0 LOCAL:24 CONSTANT[0]:548 TEXTURE:0"
    assert resource_usage(text) == (18, 24)
    assert resource_usage("no resource lines") is None


COMPARE_CASES = [
    ("narrowed", CodeFacts(loads={16: 2}), CodeFacts(loads={4: 8}),
     ["2 of 2 128-bit loads become 32-bit (2 -> 8 loads)"]),
    ("partly-narrowed", CodeFacts(loads={16: 6}), CodeFacts(loads={16: 4, 2: 16}),
     ["2 of 6 128-bit loads become 16-bit (6 -> 20 loads)"]),
    ("same", CodeFacts(loads={16: 2}, instructions=40), CodeFacts(loads={16: 2}, instructions=44), []),
    ("wgmma-lost", CodeFacts(wgmma=4), CodeFacts(mma=16), ["wgmma lost (4 -> 0; 16 mma.sync)"]),
    ("spills", CodeFacts(local_bytes=0), CodeFacts(local_bytes=64), ["spills 0 -> 64 B of local memory"]),
    ("many-more-instructions", CodeFacts(instructions=100), CodeFacts(instructions=140),
     ["40% more instructions (100 -> 140)"]),
]


@pytest.mark.parametrize("before, after, prices", [c[1:] for c in COMPARE_CASES], ids=[c[0] for c in COMPARE_CASES])
def test_compare_facts_prices(before, after, prices):
    assert compare_facts(before, after)[0] == prices


WIDE = CodeFacts(loads={16: 4}, stores={16: 2}, instructions=200)
NARROW = CodeFacts(loads={2: 32}, stores={2: 16}, instructions=260)


@pytest.mark.parametrize("roles, pointer, after, likely", [
    ({"bound"}, False, NARROW, "large"),              # a mask bound: every access it guards
    ({"address", "bound"}, False, NARROW, "large"),
    ({"address", "in-loop"}, False, NARROW, "large"),  # an address computed every iteration
    ({"address"}, False, NARROW, "small"),            # one row's base address, once per program
    ({"address"}, True, NARROW, "large"),             # a pointer's own alignment
    ({"address"}, False, CodeFacts(loads={16: 4}, stores={16: 2}, instructions=200, local_bytes=64), "large"),
    (set(), False, NARROW, "large"),                  # use not found: the conservative grade
])
def test_a_costly_price_is_graded_by_what_the_lost_width_touches(roles, pointer, after, likely):
    grade, why = likely_impact(WIDE, after, "n", roles, is_pointer=pointer)
    assert grade == likely and why


def test_extra_instructions_at_the_value_one_with_accesses_unchanged_are_not_a_price():
    before = CodeFacts(loads={16: 2}, stores={16: 1}, instructions=100)
    grown = CodeFacts(loads={16: 2}, stores={16: 1}, instructions=140)
    assert compare_facts(before, grown)[0] == ["40% more instructions (100 -> 140)"]
    prices, notes = compare_facts(before, grown, degenerate=True)
    assert prices == [] and "at the value 1 only" in notes[0]
    narrowed = CodeFacts(loads={4: 8}, stores={16: 1}, instructions=140)
    assert len(compare_facts(before, narrowed, degenerate=True)[0]) == 2  # a narrowed access is still a price


@pytest.mark.parametrize("registers, num_warps, warps", [
    (30, 4, 64),    # 32 registers a thread: 16 programs of 4 warps fill the SM's 64 warps
    (56, 4, 36),    # 56 * 32 * 4 = 7,168 of 65,536 registers a program: 9 programs
    (128, 4, 16),
    (119, 4, 16),   # allocated as 120
    (255, 8, 8),
    (16, 1, 32),    # the 32-programs-per-SM limit, not registers
])
def test_resident_warps_on_sm90(registers, num_warps, warps):
    assert resident_warps(registers, num_warps) == warps


def test_shared_memory_bounds_the_resident_warps_and_hides_a_register_rise():
    assert resident_warps(32, 8, shared_bytes=100 * 1024) == 16  # two programs of ~101 KiB fill 228 KiB
    # Shared memory already holds the SM to one program of 8 warps: registers 96 -> 168 change nothing.
    big = 200 * 1024
    before = CodeFacts(loads={16: 4}, registers=96, shared_bytes=big)
    after = CodeFacts(loads={16: 4}, registers=168, shared_bytes=big)
    assert occupancy_drop(before, after, num_warps=8) is None
    assert occupancy_drop(CodeFacts(registers=96), CodeFacts(registers=168), num_warps=8) == (
        "registers 96 -> 168: 16 -> 8 warps per SM at 8 warps a program")


def test_registers_halving_the_resident_warps_are_a_price_graded_small():
    before = CodeFacts(loads={16: 8}, stores={2: 1}, instructions=564, registers=30)
    far = CodeFacts(loads={16: 8}, stores={2: 1}, instructions=610, registers=128)
    near = CodeFacts(loads={16: 8}, stores={2: 1}, instructions=584, registers=56)
    prices, notes = compare_facts(before, far, degenerate=True)
    assert prices == ["registers 30 -> 128: 64 -> 16 warps per SM at 4 warps a program"]
    assert likely_impact(before, far, "n", {"loop"})[0] == "small"
    prices, notes = compare_facts(before, near, degenerate=True)  # 64 -> 36 warps: measured 1.01x
    assert prices == [] and "registers 30 -> 56" in notes
    # With 16 warps a program, 56 registers hold the SM to two programs (28,672 registers each): half.
    assert compare_facts(before, near, degenerate=True, num_warps=16)[0] == [
        "registers 30 -> 56: 64 -> 32 warps per SM at 16 warps a program"]
    assert occupancy_drop(before, CodeFacts(registers=None)) is None  # no cuobjdump: nothing claimed


def test_narrowed_accesses_with_an_occupancy_drop_keep_the_access_grade():
    before = CodeFacts(loads={16: 4}, instructions=200, registers=30)
    after = CodeFacts(loads={2: 32}, instructions=260, registers=128)
    assert likely_impact(before, after, "n", {"bound"}) == (
        "large", "n bounds a mask or branch: every access it guards pays")
