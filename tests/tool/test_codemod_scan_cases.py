"""`jitguard scan` rules as a table: source snippet -> the findings a user sees, (rule, parameter)."""

from __future__ import annotations

import textwrap

import pytest

from jitguard.codemod.kernels import find_kernels
from jitguard.codemod.scan import scan_source

HEADER = """\
import functools
import triton
import triton.language as tl
from triton import jit as tjit
HOPPER = True
"""

# (case id, body after HEADER, expected {(rule, param)} over the whole file)
CASES = [
    # -- every spelling of a kernel is found (a token count shows it was scanned) --
    ("call-form", """
        def _k(x_ptr, num_tokens):
            pass
        k = triton.jit(_k)
     """, {("JG101", "num_tokens")}),
    ("call-form-with-options", """
        def _k(x_ptr, num_tokens, seq_len):
            pass
        k = triton.jit(do_not_specialize=["seq_len"])(_k)
     """, {("JG101", "num_tokens")}),
    ("alias-by-assignment", """
        my_jit = triton.jit
        @my_jit
        def k(x_ptr, num_tokens):
            pass
     """, {("JG101", "num_tokens")}),
    ("alias-by-import", """
        @tjit
        def k(x_ptr, num_tokens):
            pass
     """, {("JG101", "num_tokens")}),
    ("functools-partial", """
        @functools.partial(triton.jit, do_not_specialize=["seq_len"])
        def k(x_ptr, num_tokens, seq_len):
            pass
     """, {("JG101", "num_tokens")}),
    ("autotune-over-call-form", """
        def _k(x_ptr, num_tokens, BLOCK: tl.constexpr):
            pass
        k = triton.autotune(configs=[triton.Config({"BLOCK": 64})], key=["num_tokens"])(triton.jit(_k))
     """, {("JG101", "num_tokens"), ("JG109", "num_tokens")}),
    ("alias-of-a-jit-call-keeps-its-list", """
        shared_jit = functools.partial(triton.jit, do_not_specialize=["num_tokens"])
        @shared_jit
        def k(x_ptr, num_tokens):
            pass
     """, set()),
    ("not-triton", """
        from numba import jit as njit
        @njit
        def k(x, num_tokens):
            return x
     """, set()),
    # -- computed demotion lists --
    ("conditional-list-demoted-in-every-branch", """
        @triton.jit(do_not_specialize=["T", "scale"] if HOPPER else ["T"])
        def k(x_ptr, T, scale):
            pass
     """, set()),
    ("conditional-list-missing-in-one-branch", """
        @triton.jit(do_not_specialize=["T"] if HOPPER else [])
        def k(x_ptr, T):
            pass
     """, {("JG101", "T")}),
    ("module-constant-list", """
        DNS = ["num_tokens"]
        @triton.jit(do_not_specialize=DNS)
        def k(x_ptr, num_tokens):
            pass
     """, set()),
    ("module-constant-table", """
        _SHAPE_ARGS = {"rms": ["T"], "rope": ("sl",)}
        @triton.jit(do_not_specialize=_SHAPE_ARGS["rms"])
        def k(x_ptr, T):
            pass
     """, set()),
    ("constant-typo-is-still-caught", """
        DNS = ["num_token"]
        @triton.jit(do_not_specialize=DNS)
        def k(x_ptr, num_tokens):
            pass
     """, {("JG104", "num_token"), ("JG101", "num_tokens")}),
    ("computed-list-is-not-trusted", """
        @triton.jit(do_not_specialize=make_list())
        def k(x_ptr, num_tokens):
            pass
     """, {("JG101", "num_tokens")}),
    # -- rules from use, not names --
    ("n-bounds-a-mask", """
        @triton.jit
        def k(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, 0.0, mask=offs < n)
     """, {("JG107", "n")}),
    ("sl-bounds-a-loop", """
        @triton.jit
        def k(x_ptr, sl, BLOCK: tl.constexpr):
            for start in tl.range(0, sl, BLOCK):
                tl.store(x_ptr + start, 0.0)
     """, {("JG107", "sl")}),
    ("sl-divides-a-position", """
        @triton.jit
        def k(x_ptr, sl, num_heads, BLOCK: tl.constexpr):
            pid = tl.program_id(0).to(tl.int64)
            batch = pid // sl
            head = pid % num_heads
            tl.store(x_ptr + batch * BLOCK + pid % sl, 0.0)
     """, {("JG107", "sl"), ("JG102", "num_heads")}),
    ("model-dimension-is-info", """
        @triton.jit
        def k(x_ptr, hidden_size, N, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, 0.0, mask=(offs < hidden_size) & (offs < N))
     """, {("JG102", "hidden_size"), ("JG102", "N")}),
    ("equality-is-no-bound", """
        @triton.jit
        def k(x_ptr, mode):
            if mode == 1:
                tl.store(x_ptr, 0.0)
     """, set()),
    ("demoted-bound-is-quiet", """
        @triton.jit(do_not_specialize=["n"])
        def k(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, 0.0, mask=offs < n)
     """, set()),
    # -- JG106: only strides derived from the count --
    ("weight-strides-are-fixed", """
        @triton.jit(do_not_specialize=["num_tokens"])
        def k(a_ptr, num_tokens, stride_am, stride_ak, stride_bk, stride_bn):
            pass
     """, set()),
    ("outer-stride-of-a-token-buffer", """
        @triton.jit(do_not_specialize=["num_tokens"])
        def k(x_ptr, num_tokens, stride_xg, stride_xt, stride_xd):
            pass
     """, {("JG106", "stride_xg")}),
    ("padded-scale-group-stride", """
        @triton.jit(do_not_specialize=["num_tokens"])
        def k(scale_ptr, num_tokens, scale_stride_group):
            pass
     """, {("JG106", "scale_stride_group")}),
    # -- heuristics and autotune keys --
    ("heuristic-flag-from-count", """
        @triton.heuristics({"EVEN": lambda args: args["num_tokens"] % args["BLOCK"] == 0})
        @triton.jit(do_not_specialize=["num_tokens"])
        def k(x_ptr, num_tokens, EVEN: tl.constexpr, BLOCK: tl.constexpr):
            pass
     """, {("JG108", "EVEN")}),
    ("heuristic-pow2-of-a-bound", """
        @triton.heuristics({"BLOCK": lambda meta: triton.next_power_of_2(meta["n"])})
        @triton.jit(do_not_specialize=["n"])
        def k(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, 0.0, mask=offs < n)
     """, {("JG108", "BLOCK")}),
    ("heuristic-on-model-dimension-is-fine", """
        @triton.heuristics({"EVEN_K": lambda args: args["K"] % args["BLOCK"] == 0})
        @triton.jit
        def k(x_ptr, K, EVEN_K: tl.constexpr, BLOCK: tl.constexpr):
            pass
     """, set()),
    ("autotune-key-holds-count", """
        @triton.autotune(configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})], key=["M", "N"])
        @triton.jit(do_not_specialize=["M"])
        def k(x_ptr, M, N, BLOCK: tl.constexpr):
            pass
     """, {("JG109", "M")}),
    ("autotune-key-bucketed-by-jitguard", """
        import jitguard
        @jitguard.autotune(configs=[triton.Config({"BLOCK": 64})], key=["M"], bucket={"M": "pow2"})
        @triton.jit(do_not_specialize=["M"])
        def k(x_ptr, M, BLOCK: tl.constexpr):
            pass
     """, set()),
    # -- noise: one finding per parameter; the autotune key's is its own (another edit: bucket it) --
    ("one-finding-per-parameter", """
        @triton.jit(do_not_specialize=["num_tokens"])
        def k(x_ptr, num_tokens: tl.constexpr):
            pass
     """, {("JG105", "num_tokens")}),
    ("autotune-key-finding-stands-alone", """
        @triton.autotune(configs=[triton.Config({"BLOCK": 64})], key=["num_tokens"])
        @triton.jit
        def k(x_ptr, num_tokens, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, 0.0, mask=offs < num_tokens)
     """, {("JG101", "num_tokens"), ("JG109", "num_tokens")}),
    # -- suppression comments --
    ("ignore-on-decorator-line", """
        @triton.jit  # jitguard: ignore[JG101]
        def k(x_ptr, num_tokens):
            pass
     """, set()),
    ("ignore-on-first-decorator-line", """
        @triton.autotune(configs=[], key=["hidden"])  # jitguard: ignore
        @triton.jit
        def k(x_ptr, num_tokens):
            pass
     """, set()),
    ("ignore-other-rule-keeps-finding", """
        @triton.jit  # jitguard: ignore[JG102]
        def k(x_ptr, num_tokens):
            pass
     """, {("JG101", "num_tokens")}),
    # Mamba's head and state dimensions bound masks but are fixed per model (vllm's, sglang's selective scan)
    ("mamba-dimensions", """
        @triton.jit
        def k(x_ptr, hdim, dstate, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, 0.0, mask=(offs < hdim) & (offs < dstate))
     """, {("JG102", "hdim"), ("JG102", "dstate")}),
    # A count its caller rounds to a power of two (sglang's DSV4 decode) takes few values: no JG101 / JG109
    ("bucketed-count", """
        @triton.autotune(configs=[triton.Config({"BLOCK": 64})], key=["total_tokens_bucket"])
        @triton.jit
        def k(x_ptr, total_tokens_bucket, BLOCK: tl.constexpr):
            pass
     """, set()),
    # sglang's cache_locs kernels: a pointer named like a count, loaded through locals built from it
    ("pointer-loaded-through-locals", """
        @triton.jit
        def k(req_to_token, out, num_tokens, pool_len: tl.constexpr, BLOCK: tl.constexpr):
            pid = tl.program_id(0)
            row = req_to_token + pid * pool_len
            ptrs = row + 4
            offs = tl.arange(0, BLOCK)
            tl.store(out + offs, tl.load(ptrs + offs, mask=offs < num_tokens), mask=offs < num_tokens)
     """, {("JG101", "num_tokens")}),
]


def _source(body: str) -> bytes:
    return (HEADER + textwrap.dedent(body).lstrip("\n")).encode()


@pytest.mark.parametrize(("body", "expected"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_scan_case(body: str, expected: set[tuple[str, str | None]]) -> None:
    findings, kernels = scan_source(_source(body), "k.py")
    assert kernels == (0 if "numba" in body else 1)
    assert {(finding.rule, finding.param) for finding in findings} == expected
    # never a parameter named twice (but for the autotune key's own finding)
    params = [(finding.kernel, finding.param, finding.rule == "JG109") for finding in findings if finding.param]
    assert len(params) == len(set(params))


def test_folded_causes_are_listed_in_one_message() -> None:
    body = {case[0]: case[1] for case in CASES}["one-finding-per-parameter"]
    (finding,) = scan_source(_source(body), "k.py")[0]
    assert finding.also == ("JG103",)
    assert "CompilationError" in finding.message and "make it a runtime argument" in finding.message


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ("""
         @triton.jit(do_not_specialize=["T"] if HOPPER else [])
         def k(x_ptr, T):
             pass
         """, "add `T` by hand where it is missing: not HOPPER"),
        ("""
         @triton.jit(do_not_specialize=make_list())
         def k(x_ptr, num_tokens):
             pass
         """, "computed at line 6 (`make_list()`): add `num_tokens` there"),
        ("""
         DNS = compute()
         @triton.jit(do_not_specialize=DNS)
         def k(x_ptr, num_tokens):
             pass
         """, "computed at line 6 (`DNS = ...`)"),
    ],
    ids=["branch", "call", "constant"],
)
def test_computed_lists_say_where_to_add_the_name(body: str, fragment: str) -> None:
    (finding,) = scan_source(_source(body), "k.py")[0]
    assert fragment in finding.message


SPELLINGS = [
    ("k = triton.jit(_k)", "call", ("k",), "triton.jit(_k)"),
    ("k = triton.jit(debug=True)(_k)", "call", ("k",), "triton.jit(debug=True)"),
    ("k = functools.partial(triton.jit, debug=True)(_k)", "call", ("k",), "functools.partial(triton.jit, debug=True)"),
    ("k = triton.autotune(configs=[], key=['n'])(tjit(_k))", "call", ("k",), "tjit(_k)"),
    ("triton.jit(_k)", "call", (), "triton.jit(_k)"),
]


@pytest.mark.parametrize(("statement", "form", "bound", "span_text"), SPELLINGS, ids=[s[0] for s in SPELLINGS])
def test_call_forms_record_the_jit_call_for_fix(
    statement: str, form: str, bound: tuple[str, ...], span_text: str
) -> None:
    source = _source(f"def _k(x_ptr, n):\n    pass\n{statement}\n")
    (kernel,) = find_kernels(source)
    assert (kernel.name, kernel.form, kernel.bound_as) == ("_k", form, bound)
    assert all(kernel.matches(name) for name in ("_k", *bound))
    line, col, end_line, end_col = kernel.decorator_span
    assert line == end_line
    assert source.decode().splitlines()[line - 1][col:end_col] == span_text


def test_fix_rewrites_the_call_form() -> None:
    from jitguard.codemod.fix import fix_source

    source = _source("def _k(x_ptr, n):\n    pass\nk = triton.jit(_k)\n")
    (kernel,) = find_kernels(source)
    outcome = fix_source(source, {("_k", kernel.line): [("n", "do_not_specialize")]})
    assert b'k = triton.jit(_k, do_not_specialize=["n"])\n' in outcome.source


def test_fix_refuses_to_edit_a_shared_alias() -> None:
    from jitguard.codemod.fix import fix_source

    source = _source("dbg = triton.jit(debug=True)\n@dbg\ndef k(x_ptr, n):\n    pass\n")
    (kernel,) = find_kernels(source)
    outcome = fix_source(source, {("k", kernel.line): [("n", "do_not_specialize")]})
    assert outcome.source == source and outcome.errors
