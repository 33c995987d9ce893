"""Static findings priced before they are applied: signatures synthesized from source, then each demotion
compiled both ways in every one (offline sm_90)."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path
from typing import Any

import pytest

from jitguard.codemod.demotions import Demotion
from jitguard.codemod.kernels import find_kernels
from jitguard.codemod.launch_sites import launch_facts
from jitguard.codemod.static_prices import module_and_root, price_scan_demotions
from jitguard.codemod.static_signatures import synthesize

HEADER = "import torch\nimport triton\nimport triton.language as tl\n"


def _synthesized(body: str) -> Any:
    source = (HEADER + textwrap.dedent(body)).encode()
    kernel = find_kernels(source)[0]
    launches = launch_facts(ast.parse(source), {kernel.name: [p.name for p in kernel.params]}).get(kernel.name)
    return synthesize(kernel, launches)


def _base(body: str) -> dict[str, Any]:
    synthesized = _synthesized(body)
    assert synthesized.reason is None, synthesized.reason
    return synthesized.groups[0][0]["params"]


# (case id, kernel source, {param: (kind, type)} expected in the base signature)
TYPES = [
    ("store-of-a-cast-types-the-pointer", """
        @triton.jit
        def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 64):
            offs = tl.arange(0, BLOCK)
            tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n).to(tl.bfloat16), mask=offs < n)
     """, {"out_ptr": ("ptr", "*bf16"), "x_ptr": ("ptr", "*fp32"), "n": ("int", "i32")}),
    ("an-index-table-is-int", """
        @triton.jit
        def k(x_ptr, ids_ptr, pos_ptr, out_ptr, BLOCK: tl.constexpr = 64):
            offs = tl.arange(0, BLOCK)
            rows = tl.load(ids_ptr + offs)
            pos = tl.load(pos_ptr + offs).to(tl.int64)
            tl.store(out_ptr + offs, tl.load(x_ptr + rows * 8 + pos))
     """, {"ids_ptr": ("ptr", "*i32"), "pos_ptr": ("ptr", "*i64")}),
    ("an-index-table-through-locals", """
        @triton.jit
        def k(out_ptr, feats_ptr, coords_ptr, stride, BLOCK: tl.constexpr = 64):
            rows = coords_ptr + tl.program_id(0) * stride
            x = tl.load(rows + 0)
            offset = x * stride
            tl.store(out_ptr + offset + tl.arange(0, BLOCK), tl.load(feats_ptr + tl.arange(0, BLOCK)))
     """, {"coords_ptr": ("ptr", "*i32"), "feats_ptr": ("ptr", "*fp32"), "out_ptr": ("ptr", "*fp32")}),
    ("dot-operands-are-half-precision", """
        @triton.jit
        def k(q_ptr, k_ptr, out_ptr, BLOCK: tl.constexpr = 16):
            offs = tl.arange(0, BLOCK)[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :]
            q = tl.load(q_ptr + offs)
            keys = k_ptr + offs
            tl.store(out_ptr + offs, tl.dot(q, tl.trans(tl.load(keys))))
     """, {"q_ptr": ("ptr", "*fp16"), "k_ptr": ("ptr", "*fp16"), "out_ptr": ("ptr", "*fp32")}),
    ("pointer-names-say-what-they-hold", """
        @triton.jit
        def k(x_ptr, seq_starts_ptr, positions_ptr, keep_mask_ptr, BLOCK: tl.constexpr = 64):
            pass
     """, {"seq_starts_ptr": ("ptr", "*i32"), "positions_ptr": ("ptr", "*i64"), "keep_mask_ptr": ("ptr", "*i1"),
           "x_ptr": ("ptr", "*fp32")}),
    ("launch-dtype-float-and-flag", """
        @triton.jit
        def k(x_ptr, eps, w, use_w, total: tl.int64, BLOCK: tl.constexpr):
            tl.store(x_ptr + tl.arange(0, BLOCK), eps)

        def launch(n):
            x = torch.empty((n, 8), dtype=torch.float16, device="cuda")
            k[(1,)](x, 1e-6, 0, False, n, BLOCK=32)
     """, {"x_ptr": ("ptr", "*fp16"), "eps": ("float", "fp32"), "use_w": ("bool", "i1"), "w": ("int", "i32"),
           "total": ("int", "i64")}),
]


@pytest.mark.parametrize(("body", "expected"), [c[1:] for c in TYPES], ids=[c[0] for c in TYPES])
def test_runtime_parameters_are_typed_from_the_source(body: str, expected: dict[str, tuple[str, str]]) -> None:
    params = _base(body)
    assert {name: (params[name]["kind"], params[name]["type"]) for name in expected} == expected


def test_every_int_class_and_every_autotune_config_is_synthesized() -> None:
    synthesized = _synthesized("""
        @triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=4), triton.Config({"BLOCK": 256},
                                  num_warps=8)], key=["n"])
        @triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
        @triton.jit
        def k(x_ptr, n, EVEN: tl.constexpr, BLOCK: tl.constexpr, OUT: tl.constexpr = tl.float8e4nv):
            pass
     """)
    configs = [(g[0]["params"]["BLOCK"]["value"], g[0]["params"]["EVEN"]["value"], g[0]["options"]["num_warps"])
               for g in synthesized.groups]
    assert configs == [(64, True, 4), (64, False, 4), (256, True, 8), (256, False, 8)]
    assert synthesized.groups[0][0]["params"]["OUT"]["value"] == "triton.language.float8e4nv"
    assert [v["params"]["n"]["spec"] for v in synthesized.groups[0]] == ["div16", "one", "plain"]


def test_heuristics_are_computed_from_the_constexprs_they_read() -> None:
    synthesized = _synthesized("""
        @triton.autotune(configs=[triton.Config({"BLOCK_D": 32}), triton.Config({"BLOCK_D": 64})], key=["n"])
        @triton.heuristics({"GROUP": lambda args: 8, "BACK_D": lambda args: args["BLOCK_D"] * 2,
                            "WIDE": lambda args: min(args["BLOCK_D"], 48) == 48})
        @triton.jit
        def k(x_ptr, n, BLOCK_D: tl.constexpr, BACK_D: tl.constexpr, GROUP: tl.constexpr, WIDE: tl.constexpr):
            pass
     """)
    values = [{name: g[0]["params"][name]["value"] for name in ("BLOCK_D", "BACK_D", "GROUP", "WIDE")}
              for g in synthesized.groups]
    assert values == [{"BLOCK_D": 32, "BACK_D": 64, "GROUP": 8, "WIDE": False},
                      {"BLOCK_D": 64, "BACK_D": 128, "GROUP": 8, "WIDE": True}]


def test_a_heuristic_over_run_time_values_takes_every_value_its_form_allows() -> None:
    # the wrappers come as statements after the jit call, as some libraries write them
    synthesized = _synthesized("""
        def _k(x_ptr, w_ptr, PREC: tl.constexpr, HAS_W: tl.constexpr):
            pass

        k = triton.jit(_k)
        k = triton.heuristics({"PREC": lambda args: "tf32" if torch.get_float32_matmul_precision() == "high"
                               else "ieee", "HAS_W": lambda args: args["w_ptr"] is not None})(k)
    """)
    assert synthesized.reason is None, synthesized.reason
    pairs = [(g[0]["params"]["PREC"]["value"], g[0]["params"]["HAS_W"]["value"]) for g in synthesized.groups]
    assert pairs == [("tf32", True), ("tf32", False), ("ieee", True), ("ieee", False)]


def test_a_constexpr_given_no_value_is_valued_from_its_use_and_said() -> None:
    synthesized = _synthesized("""
        @triton.jit
        def k(x_ptr, n, BLOCK: tl.constexpr, HAS_W: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            if HAS_W:
                tl.store(x_ptr + offs, 0.0, mask=offs < n)
     """)
    assert [(g[0]["params"]["BLOCK"]["value"], g[0]["params"]["HAS_W"]["value"]) for g in synthesized.groups] == [
        (64, True), (64, False)]
    assert synthesized.assumed_constexprs == ["BLOCK=64", "HAS_W=True/False"]


# (case id, kernel source, constexpr, value assumed from its use, words the price says)
USE_VALUES = [
    ("a-multiplier-from-a-shape-is-a-count", """
        @triton.jit
        def k(x_ptr, n, HEADS: tl.constexpr):
            row = tl.program_id(1) * HEADS + tl.program_id(0)
            tl.store(x_ptr + row, 0.0, mask=row < n)

        def launch(q):
            k[(q.shape[1], q.shape[0])](q, q.numel(), q.shape[1])
     """, "HEADS", 16, "HEADS=16 (`q.shape[1]` at a launch)"),
    ("a-loop-bound", """
        @triton.jit
        def k(x_ptr, STEPS: tl.constexpr):
            for i in range(0, STEPS):
                tl.store(x_ptr + i, 0.0)
     """, "STEPS", 16, "STEPS=16"),
    ("a-block-shape-and-a-multiplier", """
        @triton.jit
        def k(x_ptr, D: tl.constexpr):
            offs = tl.program_id(0) * D + tl.arange(0, D)
            tl.store(x_ptr + offs, 0.0)
     """, "D", 64, "D=64"),
    ("a-dtype", """
        @triton.jit
        def k(x_ptr, out_ptr, OUT_TYPE: tl.constexpr):
            tl.store(out_ptr, tl.load(x_ptr).to(OUT_TYPE))
     """, "OUT_TYPE", "triton.language.float16", "OUT_TYPE=float16"),
    ("a-string-compared", """
        @triton.jit
        def k(x_ptr, MODE: tl.constexpr):
            if MODE == "fp8":
                tl.store(x_ptr, 1.0)
            elif MODE == "int8":
                tl.store(x_ptr, 2.0)
     """, "MODE", "fp8", "MODE=fp8/int8"),
    ("a-dtype-compared", """
        @triton.jit
        def k(x_ptr, CACHE_TYPE: tl.constexpr):
            element = tl.float32
            if CACHE_TYPE == tl.bfloat16:
                element = tl.bfloat16
            tl.store(x_ptr, tl.load(x_ptr).to(element))
     """, "CACHE_TYPE", "triton.language.bfloat16", "CACHE_TYPE=bfloat16"),
    ("never-read", """
        @triton.jit
        def k(x_ptr, UNUSED: tl.constexpr):
            tl.store(x_ptr, 1.0)
     """, "UNUSED", 16, "UNUSED=16"),
]


@pytest.mark.parametrize(("body", "name", "value", "words"), [c[1:] for c in USE_VALUES],
                         ids=[c[0] for c in USE_VALUES])
def test_a_constexpr_with_no_value_in_the_source_is_valued_from_its_use(body: str, name: str, value: Any,
                                                                        words: str) -> None:
    synthesized = _synthesized(body)
    assert synthesized.reason is None, synthesized.reason
    assert synthesized.groups[0][0]["params"][name]["value"] == value
    assert synthesized.assumed_constexprs == [words]


INTEGER_POINTERS = [
    ("packed-values-in-bit-operations", """
        @triton.jit
        def k(packed_ptr, out_ptr, BLOCK: tl.constexpr = 64):
            offs = tl.arange(0, BLOCK)
            w = tl.load(packed_ptr + offs)
            tl.store(out_ptr + offs, ((w >> 4) & 0xF).to(tl.float16))
     """, {"packed_ptr": "*i32", "out_ptr": "*fp16"}),
    ("a-lock-taken-by-compare-and-swap", """
        @triton.jit
        def k(x_ptr, Locks, n):
            lock = Locks + tl.program_id(0) % n
            while tl.atomic_cas(lock, 0, 1) == 1:
                pass
            tl.store(x_ptr, tl.load(x_ptr) + 1.0)
            tl.atomic_xchg(lock, 0)
     """, {"Locks": "*i32", "x_ptr": "*fp32"}),
    ("a-table-of-addresses", """
        @triton.jit
        def k(layer_ptrs, out_ptr, BLOCK: tl.constexpr = 64):
            base = tl.load(layer_ptrs + tl.program_id(0)).to(tl.pointer_type(tl.float16))
            tl.store(out_ptr + tl.arange(0, BLOCK), tl.load(base + tl.arange(0, BLOCK)))
     """, {"layer_ptrs": "*i64"}),
    ("a-float-atomic-add-keeps-the-default", """
        @triton.jit
        def k(acc_ptr, x_ptr):
            tl.atomic_add(acc_ptr, tl.load(x_ptr))
     """, {"acc_ptr": "*fp32"}),
]


@pytest.mark.parametrize(("body", "expected"), [c[1:] for c in INTEGER_POINTERS], ids=[c[0] for c in INTEGER_POINTERS])
def test_pointers_the_body_shows_hold_integers_are_integer(body: str, expected: dict[str, str]) -> None:
    params = _base(body)
    assert {name: params[name]["type"] for name in expected} == expected


@pytest.mark.parametrize(("body", "reason"), [
    ("""
     @triton.heuristics({"BLOCK": lambda args: triton.next_power_of_2(args["n"])})
     @triton.jit
     def k(x_ptr, n, BLOCK: tl.constexpr):
         pass
     """, "heuristic `BLOCK` reads run-time values the source does not give"),
], ids=["numeric-heuristic"])
def test_a_signature_that_cannot_be_built_says_why(body: str, reason: str) -> None:
    synthesized = _synthesized(body)
    assert synthesized.groups == [] and reason in (synthesized.reason or "")


KERNELS = HEADER + '''

@triton.jit
def row_flags(x_ptr, num_tokens, hidden, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = (offs < hidden) & (row < num_tokens)
    tl.store(x_ptr + row * hidden + offs, tl.load(x_ptr + row * hidden + offs, mask=mask) * 2, mask=mask)


@triton.jit
def copy_flat(x_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit
def needs_shift(x_ptr, num_tokens, SHIFT: tl.constexpr):
    tl.store(x_ptr + SHIFT, 0.0, mask=num_tokens > 0)


def launch(x, out):
    row_flags[(x.shape[0],)](x, x.shape[0], x.shape[1], BLOCK=128)
    copy_flat[(1,)](x, out, x.numel(), BLOCK=1024)
'''


def test_a_file_of_namespace_packages_under_the_working_directory_keeps_its_dotted_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "lib" / "kernels").mkdir(parents=True)
    (tmp_path / "lib" / "kernels" / "ops.py").write_text("")
    monkeypatch.chdir(tmp_path)
    assert module_and_root(str(tmp_path / "lib" / "kernels" / "ops.py")) == ("lib.kernels.ops",
                                                                            str(tmp_path.resolve()))


def test_module_and_root_walk_up_through_packages(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "sub" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "sub" / "ops.py").write_text("")
    (tmp_path / "loose.py").write_text("")
    assert module_and_root(str(tmp_path / "pkg" / "sub" / "ops.py")) == ("pkg.sub.ops", str(tmp_path.resolve()))
    assert module_and_root(str(tmp_path / "loose.py")) == ("loose", str(tmp_path.resolve()))


def test_a_namespace_folder_inside_a_package_is_imported_through_the_package(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # lib/__init__.py, lib/third_party/ (no __init__), lib/third_party/vllm/__init__.py: the file is
    # lib.third_party.vllm.attention, never a top-level `vllm` that another folder's `vllm` would clash with
    (tmp_path / "lib" / "third_party" / "vllm").mkdir(parents=True)
    (tmp_path / "lib" / "__init__.py").write_text("")
    (tmp_path / "lib" / "third_party" / "vllm" / "__init__.py").write_text("")
    (tmp_path / "lib" / "third_party" / "vllm" / "attention.py").write_text("")
    monkeypatch.chdir(tmp_path)
    assert module_and_root(str(tmp_path / "lib" / "third_party" / "vllm" / "attention.py")) == (
        "lib.third_party.vllm.attention", str(tmp_path.resolve()))


def test_a_pointer_used_only_inside_a_jit_helper_is_synthesized_as_a_pointer(tmp_path: Path) -> None:
    from jitguard.codemod.static_prices import _kernel_sources

    file = tmp_path / "helper_store.py"
    file.write_text(HEADER + textwrap.dedent("""
        @triton.jit
        def _store_row(dst, offs, values, mask):
            tl.store(dst + offs, values, mask=mask)


        @triton.jit
        def scale(x_ptr, out, n_rows, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n_rows
            _store_row(out, offs, tl.load(x_ptr + offs, mask=mask) * 2, mask)
        """))
    source = next(k for k in _kernel_sources(str(file)) if k.kernel.name == "scale")
    params = source.synthesized.groups[0][0]["params"]
    assert params["out"]["kind"] == "ptr" and params["n_rows"]["kind"] == "int"


def test_scan_demotions_are_priced_in_their_synthesized_signatures(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    package = tmp_path / "static_price_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("raise ImportError('a parent __init__ that fails is never run')\n")
    (package / "kernels.py").write_text(KERNELS)
    file = package / "kernels.py"
    requests = [Demotion(kernel, param, "do_not_specialize", "scan.json", str(file), line, "do_not_specialize")
                for kernel, param, line in (("row_flags", "num_tokens", 7), ("copy_flat", "n_elements", 15),
                                            ("needs_shift", "num_tokens", 22))]
    priced = price_scan_demotions(requests, [file])
    costs = {d.kernel: d.report_entry["params"][d.param]["cost"] for d in priced if d.report_entry is not None}
    # num_tokens only bounds a program id: nothing vectorizes on it
    assert costs["row_flags"]["verdict"] == "free", costs["row_flags"]
    assert "free in the synthesized signature" in costs["row_flags"]["detail"]
    # n_elements bounds the contiguous offsets: 128-bit accesses need it % 16 == 0
    assert costs["copy_flat"]["verdict"] == "costly", costs["copy_flat"]
    assert "BLOCK=1024" in costs["copy_flat"]["detail"]
    # SHIFT has no value in the source: priced with one from its use, and the price says so
    assert costs["needs_shift"]["verdict"] == "free", costs["needs_shift"]
    assert "assumed from their use: SHIFT=16" in costs["needs_shift"]["detail"]


RETYPED = HEADER + '''

@triton.jit
def scaled_dot(a_ptr, b_ptr, out_ptr, num_rows, BLOCK: tl.constexpr = 16):
    rows = tl.arange(0, BLOCK)
    cols = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + rows[:, None] * BLOCK + cols[None, :], mask=rows[:, None] < num_rows)
    b = tl.load(b_ptr + rows[:, None] * BLOCK + cols[None, :]).to(tl.float32)
    tl.store(out_ptr + rows[:, None] * BLOCK + cols[None, :], tl.dot(a, b), mask=rows[:, None] < num_rows)


@triton.jit
def checked(x_ptr, num_rows, STRICT: tl.constexpr):
    if STRICT:
        tl.static_assert(False, "this configuration does not compile")
    row = tl.program_id(0)
    tl.store(x_ptr + row, 1.0, mask=row < num_rows)
'''


def _priced_costs(tmp_path: Path, source: str, requests: list[tuple[str, str, int]]) -> dict[str, dict[str, str]]:
    package = tmp_path / "static_retry_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    file = package / "kernels.py"
    file.write_text(source)
    demotions = [Demotion(kernel, param, "do_not_specialize", "scan.json", str(file), line, "do_not_specialize")
                 for kernel, param, line in requests]
    priced = price_scan_demotions(demotions, [file])
    return {d.kernel: d.report_entry["params"][d.param]["cost"] for d in priced if d.report_entry is not None}


def test_pointers_of_unknown_dtype_are_retyped_when_the_signature_does_not_compile(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    costs = _priced_costs(tmp_path, RETYPED, [("scaled_dot", "num_rows", 7), ("checked", "num_rows", 16)])
    # dot operands are taken as fp16 first, which makes `tl.dot` mix fp16 and the fp32 cast: the price is
    # computed with the pointers retyped until it compiles, and says which dtypes it took
    assert costs["scaled_dot"]["verdict"] in ("free", "costly"), costs["scaled_dot"]
    assert "taken as fp32: a_ptr, b_ptr, out_ptr" in costs["scaled_dot"]["detail"]
    # STRICT=True does not compile; the demotion is priced on the signatures that do, and the failure is said
    assert costs["checked"]["verdict"] == "free", costs["checked"]
    assert "1 of 2 synthesized signatures did not compile" in costs["checked"]["detail"]
    assert "this configuration does not compile" in costs["checked"]["detail"]
