"""`jitguard fix` at the source level: (before, after) tables, idempotency, untouched files."""

from __future__ import annotations

import ast
import io
import textwrap
import tokenize

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jitguard.codemod.fix import fix_source
from jitguard.codemod.kernels import find_kernels

DNS = "do_not_specialize"
ALIGN = "do_not_specialize_on_alignment"


def _src(text: str) -> bytes:
    return textwrap.dedent(text).lstrip("\n").encode()


def _plan(source: bytes, kernel: str, requests: list[tuple[str, str]]) -> dict:
    matches = [k for k in find_kernels(source) if k.name == kernel]
    assert len(matches) == 1, f"expected one kernel {kernel!r}, found {len(matches)}"
    return {(kernel, matches[0].line): requests}


# (id, before, kernel, requests, after)
DECORATOR_FORMS = [
    (
        "bare-triton-jit",
        """
        import triton
        @triton.jit
        def add(x_ptr, n):
            pass
        """,
        "add", [("n", DNS)],
        """
        import triton
        @triton.jit(do_not_specialize=["n"])
        def add(x_ptr, n):
            pass
        """,
    ),
    (
        "empty-call",
        """
        import triton
        @triton.jit()
        def add(x_ptr, n):
            pass
        """,
        "add", [("n", DNS)],
        """
        import triton
        @triton.jit(do_not_specialize=["n"])
        def add(x_ptr, n):
            pass
        """,
    ),
    (
        "call-with-debug",
        """
        import triton
        @triton.jit(debug=True)
        def add(x_ptr, n):
            pass
        """,
        "add", [("n", ALIGN)],
        """
        import triton
        @triton.jit(debug=True, do_not_specialize_on_alignment=["n"])
        def add(x_ptr, n):
            pass
        """,
    ),
    (
        "from-triton-import-jit",
        """
        from triton import jit
        @jit
        def add(x_ptr, n):  # kernel
            pass
        """,
        "add", [("n", DNS)],
        """
        from triton import jit
        @jit(do_not_specialize=["n"])
        def add(x_ptr, n):  # kernel
            pass
        """,
    ),
    (
        "module-alias",
        """
        import triton as tr
        @tr.jit
        def add(x_ptr, n):
            pass
        """,
        "add", [("n", DNS)],
        """
        import triton as tr
        @tr.jit(do_not_specialize=["n"])
        def add(x_ptr, n):
            pass
        """,
    ),
    (
        "jit-alias",
        """
        from triton import jit as tjit
        @tjit
        def add(x_ptr, n):
            pass
        """,
        "add", [("n", DNS)],
        """
        from triton import jit as tjit
        @tjit(do_not_specialize=["n"])
        def add(x_ptr, n):
            pass
        """,
    ),
    (
        "reexported-module",
        """
        from vllm.triton_utils import tl, triton
        @triton.jit
        def add(x_ptr, n, BLOCK: tl.constexpr):
            pass
        """,
        "add", [("n", DNS)],
        """
        from vllm.triton_utils import tl, triton
        @triton.jit(do_not_specialize=["n"])
        def add(x_ptr, n, BLOCK: tl.constexpr):
            pass
        """,
    ),
    (
        "under-autotune-and-heuristics",
        """
        import triton
        @triton.autotune(configs=[triton.Config({}, num_warps=4)], key=["n"])
        @triton.heuristics({"EVEN": lambda args: args["n"] % 16 == 0})
        @triton.jit
        def add(x_ptr, n, EVEN):
            pass
        """,
        "add", [("n", DNS)],
        """
        import triton
        @triton.autotune(configs=[triton.Config({}, num_warps=4)], key=["n"])
        @triton.heuristics({"EVEN": lambda args: args["n"] % 16 == 0})
        @triton.jit(do_not_specialize=["n"])
        def add(x_ptr, n, EVEN):
            pass
        """,
    ),
    (
        "staticmethod-in-class-with-comments",
        """
        import triton
        class Kernel:
            @staticmethod
            # why this kernel exists
            @triton.jit
            def kernel(x_ptr, num_tokens, stride):
                pass
        """,
        "kernel", [("num_tokens", DNS), ("stride", DNS)],
        """
        import triton
        class Kernel:
            @staticmethod
            # why this kernel exists
            @triton.jit(do_not_specialize=["num_tokens", "stride"])
            def kernel(x_ptr, num_tokens, stride):
                pass
        """,
    ),
    (
        "nested-definition",
        """
        import triton
        def make():
            @triton.jit
            def inner(x_ptr, n):
                pass
            return inner
        """,
        "inner", [("n", DNS)],
        """
        import triton
        def make():
            @triton.jit(do_not_specialize=["n"])
            def inner(x_ptr, n):
                pass
            return inner
        """,
    ),
    (
        "merge-names-and-indices-keep-order",
        """
        import triton
        @triton.jit(do_not_specialize=[2, "m"])
        def add(x_ptr, n, k, m):
            pass
        """,
        "add", [("k", DNS), ("n", DNS), ("m", DNS)],
        """
        import triton
        @triton.jit(do_not_specialize=[2, "m", "n"])
        def add(x_ptr, n, k, m):
            pass
        """,
    ),
    (
        "merge-single-quotes-tuple",
        """
        import triton
        @triton.jit(do_not_specialize=('m',))
        def add(x_ptr, n, m):
            pass
        """,
        "add", [("n", DNS)],
        """
        import triton
        @triton.jit(do_not_specialize=('m', 'n'))
        def add(x_ptr, n, m):
            pass
        """,
    ),
    (
        "multiline-list-with-comments",
        """
        import triton
        @triton.jit(
            do_not_specialize=[  # dynamic sizes
                "m",  # tokens
            ],
            debug=False,
        )
        def add(x_ptr, n, m):
            pass
        """,
        "add", [("n", DNS)],
        """
        import triton
        @triton.jit(
            do_not_specialize=[  # dynamic sizes
                "m",  # tokens
                "n",
            ],
            debug=False,
        )
        def add(x_ptr, n, m):
            pass
        """,
    ),
    (
        "multiline-call-new-keyword",
        """
        import triton
        @triton.jit(
            launch_metadata=None,
        )
        def add(x_ptr, n, m):
            pass
        """,
        "add", [("n", DNS), ("x_ptr", ALIGN)],
        """
        import triton
        @triton.jit(
            launch_metadata=None,
            do_not_specialize=["n"],
            do_not_specialize_on_alignment=["x_ptr"],
        )
        def add(x_ptr, n, m):
            pass
        """,
    ),
    (
        "multiline-call-comment-on-last-argument",
        """
        import triton
        @triton.jit(
            debug=False,  # keep me
        )
        def add(x_ptr, n):
            pass
        """,
        "add", [("n", DNS)],
        """
        import triton
        @triton.jit(
            debug=False,  # keep me
            do_not_specialize=["n"],
        )
        def add(x_ptr, n):
            pass
        """,
    ),
    (
        "multiline-list-without-trailing-comma",
        """
        import triton
        @triton.jit(do_not_specialize=[
            "m"  # tokens
        ])
        def add(x_ptr, n, m):
            pass
        """,
        "add", [("n", DNS)],
        """
        import triton
        @triton.jit(do_not_specialize=[
            "m",  # tokens
            "n"
        ])
        def add(x_ptr, n, m):
            pass
        """,
    ),
    (
        "comment-before-paren-extends-existing-list-in-place",
        """
        import triton
        @triton.jit(
            do_not_specialize=["a"]  # keep a generic
        )
        def k(a, n):
            pass
        """,
        "k", [("n", DNS)],
        """
        import triton
        @triton.jit(
            do_not_specialize=["a", "n"]  # keep a generic
        )
        def k(a, n):
            pass
        """,
    ),
    (
        "comment-before-paren-stays-on-its-argument",
        """
        import triton
        @triton.jit(
            debug=False  # a note about debug
        )
        def k(a, n):
            pass
        """,
        "k", [("n", DNS)],
        """
        import triton
        @triton.jit(
            debug=False,  # a note about debug
            do_not_specialize=["n"]
        )
        def k(a, n):
            pass
        """,
    ),
    (
        "own-line-comment-before-paren-stays-last",
        """
        import triton
        @triton.jit(
            debug=False
            # more options later
        )
        def k(a, n):
            pass
        """,
        "k", [("n", DNS)],
        """
        import triton
        @triton.jit(
            debug=False,
            do_not_specialize=["n"]
            # more options later
        )
        def k(a, n):
            pass
        """,
    ),
    (
        "trailing-comma-with-line-and-own-line-comments",
        """
        import triton
        @triton.jit(
            debug=False,  # a note about debug
            # more options later
        )
        def k(a, n):
            pass
        """,
        "k", [("n", DNS)],
        """
        import triton
        @triton.jit(
            debug=False,  # a note about debug
            do_not_specialize=["n"],
            # more options later
        )
        def k(a, n):
            pass
        """,
    ),
    (
        "several-comments-two-new-keywords",
        """
        import triton
        @triton.jit(  # options
            debug=False,  # c1
            # c2
            launch_metadata=None  # c3
            # c4
            # c5
        )
        def k(a, n):
            pass
        """,
        "k", [("n", DNS), ("a", ALIGN)],
        """
        import triton
        @triton.jit(  # options
            debug=False,  # c1
            # c2
            launch_metadata=None,  # c3
            do_not_specialize=["n"],
            do_not_specialize_on_alignment=["a"]
            # c4
            # c5
        )
        def k(a, n):
            pass
        """,
    ),
    (
        "tab-indented-comment-before-paren",
        """
        import triton
        class Kernels:
        \t@triton.jit(
        \t\tdebug=False  # a note about debug
        \t)
        \tdef k(a, n):
        \t\tpass
        """,
        "k", [("n", DNS)],
        """
        import triton
        class Kernels:
        \t@triton.jit(
        \t\tdebug=False,  # a note about debug
        \t\tdo_not_specialize=["n"]
        \t)
        \tdef k(a, n):
        \t\tpass
        """,
    ),
    (
        "jit-under-autotune-comment-before-paren",
        """
        from triton import autotune, Config, jit
        @autotune(configs=[Config({}, num_warps=4)], key=["n"])  # tuned
        @jit(
            debug=False  # a note about debug
        )
        def k(a, n):
            pass
        """,
        "k", [("n", ALIGN)],
        """
        from triton import autotune, Config, jit
        @autotune(configs=[Config({}, num_warps=4)], key=["n"])  # tuned
        @jit(
            debug=False,  # a note about debug
            do_not_specialize_on_alignment=["n"]
        )
        def k(a, n):
            pass
        """,
    ),
    (
        "one-line-call-comment-before-paren-ends-the-line",
        """
        import triton
        @triton.jit(debug=False  # a note about debug
        )
        def k(a, n):
            pass
        """,
        "k", [("n", DNS)],
        """
        import triton
        @triton.jit(debug=False, do_not_specialize=["n"]  # a note about debug
        )
        def k(a, n):
            pass
        """,
    ),
    (
        "multiline-list-own-line-comment-before-bracket",
        """
        import triton
        @triton.jit(do_not_specialize=[
            "m"  # tokens
            # more later
        ])
        def k(a, n, m):
            pass
        """,
        "k", [("n", DNS)],
        """
        import triton
        @triton.jit(do_not_specialize=[
            "m",  # tokens
            "n"
            # more later
        ])
        def k(a, n, m):
            pass
        """,
    ),
    (
        "multiline-list-trailing-comma-own-line-comment-before-bracket",
        """
        import triton
        @triton.jit(do_not_specialize=[
            "m",  # tokens
            # more later
        ])
        def k(a, n, m):
            pass
        """,
        "k", [("n", DNS)],
        """
        import triton
        @triton.jit(do_not_specialize=[
            "m",  # tokens
            "n",
            # more later
        ])
        def k(a, n, m):
            pass
        """,
    ),
    (
        "multiline-tuple-comment-before-paren",
        """
        import triton
        @triton.jit(do_not_specialize=(
            'm',
            'b'  # tokens
        ))
        def k(a, n, m, b):
            pass
        """,
        "k", [("n", DNS)],
        """
        import triton
        @triton.jit(do_not_specialize=(
            'm',
            'b',  # tokens
            'n'
        ))
        def k(a, n, m, b):
            pass
        """,
    ),
    (
        "align-already-covered-by-dns",
        """
        import triton
        @triton.jit(do_not_specialize=["n"])
        def add(x_ptr, n):
            pass
        """,
        "add", [("n", ALIGN)],
        """
        import triton
        @triton.jit(do_not_specialize=["n"])
        def add(x_ptr, n):
            pass
        """,
    ),
    (
        "only-the-named-kernel-changes",
        """
        import triton

        @triton.jit
        def other(x_ptr, n):
            pass

        @triton.jit
        def add(x_ptr, n):
            pass
        """,
        "add", [("n", DNS)],
        """
        import triton

        @triton.jit
        def other(x_ptr, n):
            pass

        @triton.jit(do_not_specialize=["n"])
        def add(x_ptr, n):
            pass
        """,
    ),
    (
        "index-one-element-tuple",
        """
        import triton
        @triton.jit(do_not_specialize=(4,))
        def k(a, b, c, d, e, b_seq_len):
            pass
        """,
        "k", [("b_seq_len", DNS)],
        """
        import triton
        @triton.jit(do_not_specialize=(4, "b_seq_len"))
        def k(a, b, c, d, e, b_seq_len):
            pass
        """,
    ),
    (
        "index-list",
        """
        import triton
        @triton.jit(do_not_specialize=[0, 3])
        def k(a, b, c, d, n):
            pass
        """,
        "k", [("n", DNS)],
        """
        import triton
        @triton.jit(do_not_specialize=[0, 3, "n"])
        def k(a, b, c, d, n):
            pass
        """,
    ),
    (
        "mixed-index-and-name-tuple",
        """
        import triton
        @triton.jit(do_not_specialize=(0, 'b'))
        def k(a, b, n):
            pass
        """,
        "k", [("n", DNS)],
        """
        import triton
        @triton.jit(do_not_specialize=(0, 'b', 'n'))
        def k(a, b, n):
            pass
        """,
    ),
    (
        "one-name-tuple-spaced",
        """
        import triton
        @triton.jit(do_not_specialize=( 'm' , ))
        def k(x_ptr, n, m):
            pass
        """,
        "k", [("n", DNS)],
        """
        import triton
        @triton.jit(do_not_specialize=( 'm' , 'n' ))
        def k(x_ptr, n, m):
            pass
        """,
    ),
    (
        "two-element-tuple-keeps-its-trailing-comma",
        """
        import triton
        @triton.jit(do_not_specialize=(0, 1,))
        def k(a, b, n):
            pass
        """,
        "k", [("n", DNS)],
        """
        import triton
        @triton.jit(do_not_specialize=(0, 1, "n",))
        def k(a, b, n):
            pass
        """,
    ),
    (
        "empty-list",
        """
        import triton
        @triton.jit(do_not_specialize=[])
        def k(x_ptr, n):
            pass
        """,
        "k", [("n", DNS)],
        """
        import triton
        @triton.jit(do_not_specialize=["n"])
        def k(x_ptr, n):
            pass
        """,
    ),
    (
        "empty-tuple",
        """
        import triton
        @triton.jit(do_not_specialize=())
        def k(x_ptr, n):
            pass
        """,
        "k", [("n", DNS)],
        """
        import triton
        @triton.jit(do_not_specialize=("n",))
        def k(x_ptr, n):
            pass
        """,
    ),
    (
        "index-tuple-align",
        """
        import triton
        @triton.jit(do_not_specialize=(1,), do_not_specialize_on_alignment=(0,))
        def k(p, n, q):
            pass
        """,
        "k", [("q", ALIGN)],
        """
        import triton
        @triton.jit(do_not_specialize=(1,), do_not_specialize_on_alignment=(0, "q"))
        def k(p, n, q):
            pass
        """,
    ),
    (
        "multiline-one-element-tuple-keeps-its-comma",
        """
        import triton
        @triton.jit(
            do_not_specialize=(
                4,
            ),
        )
        def k(a, b, c, d, e, n):
            pass
        """,
        "k", [("n", DNS)],
        """
        import triton
        @triton.jit(
            do_not_specialize=(
                4,
                "n",
            ),
        )
        def k(a, b, c, d, e, n):
            pass
        """,
    ),
]


@pytest.mark.parametrize("before, kernel, requests, after", [case[1:] for case in DECORATOR_FORMS],
                         ids=[case[0] for case in DECORATOR_FORMS])
def test_fix_rewrites_each_decorator_form(before: str, kernel: str, requests: list, after: str) -> None:
    source = _src(before)
    outcome = fix_source(source, _plan(source, kernel, requests))
    assert outcome.errors == []
    assert outcome.source.decode() == _src(after).decode()
    ast.parse(outcome.source)


@pytest.mark.parametrize("before, kernel, requests, after", [case[1:] for case in DECORATOR_FORMS],
                         ids=[case[0] for case in DECORATOR_FORMS])
def test_second_run_changes_nothing(before: str, kernel: str, requests: list, after: str) -> None:
    once = fix_source(_src(before), _plan(_src(before), kernel, requests)).source
    twice = fix_source(once, _plan(once, kernel, requests))
    assert twice.source == once
    assert not twice.changed


def test_crlf_and_non_ascii_bytes_around_the_decorator_are_kept() -> None:
    source = "# café ☕\r\nimport triton\r\n@triton.jit\r\ndef add(x_ptr, n):  # ünïcode\r\n    pass\r\n".encode()
    outcome = fix_source(source, _plan(source, "add", [("n", DNS)]))
    expected = ("# café ☕\r\nimport triton\r\n@triton.jit(do_not_specialize=[\"n\"])\r\n"
                "def add(x_ptr, n):  # ünïcode\r\n    pass\r\n")
    assert outcome.source.decode() == expected


def test_crlf_inside_a_multiline_decorator_is_kept() -> None:
    source = b"import triton\r\n@triton.jit(\r\n    debug=False,  # keep\r\n)\r\ndef add(x_ptr, n):\r\n    pass\r\n"
    outcome = fix_source(source, _plan(source, "add", [("n", DNS)]))
    assert outcome.source == (
        b'import triton\r\n@triton.jit(\r\n    debug=False,  # keep\r\n    do_not_specialize=["n"],\r\n)\r\n'
        b"def add(x_ptr, n):\r\n    pass\r\n"
    )


def test_constexpr_parameter_is_refused_with_a_reason() -> None:
    source = _src("""
        import triton
        import triton.language as tl
        @triton.jit
        def add(x_ptr, num_tokens: tl.constexpr):
            pass
    """)
    outcome = fix_source(source, _plan(source, "add", [("num_tokens", DNS)]))
    assert outcome.source == source
    assert len(outcome.errors) == 1
    assert "`num_tokens` is tl.constexpr" in outcome.errors[0]
    assert outcome.hand_edits == outcome.errors  # a finding left for a person, not bad input


def test_a_computed_list_is_a_hand_edit_and_an_unknown_parameter_is_not() -> None:
    source = _src("""
        import triton
        DNS = make_list()
        @triton.jit(do_not_specialize=DNS)
        def add(x_ptr, n, m):
            pass
    """)
    outcome = fix_source(source, _plan(source, "add", [("n", DNS), ("nope", DNS)]))
    assert outcome.source == source
    assert len(outcome.errors) == 2
    assert [error for error in outcome.errors if "nope" in error] != outcome.hand_edits
    (hand_edit,) = outcome.hand_edits
    assert "`n`" in hand_edit and "DNS" in hand_edit


def test_unknown_parameter_is_an_error_that_lists_the_real_ones() -> None:
    source = _src("""
        import triton
        @triton.jit
        def add(x_ptr, n):
            pass
    """)
    outcome = fix_source(source, _plan(source, "add", [("nn", DNS)]))
    assert outcome.source == source
    assert outcome.errors == ["kernel `add` (line 3) has no parameter `nn` (parameters: x_ptr, n)"]


def test_non_literal_list_is_left_for_a_human() -> None:
    source = _src("""
        import triton
        DYNAMIC = ["m"]
        @triton.jit(do_not_specialize=DYNAMIC)
        def add(x_ptr, n, m):
            pass
    """)
    outcome = fix_source(source, _plan(source, "add", [("n", DNS)]))
    assert outcome.source == source
    assert "not a literal list" in outcome.errors[0]


def test_valid_requests_apply_when_another_request_on_the_kernel_fails() -> None:
    source = _src("""
        import triton
        @triton.jit
        def add(x_ptr, n, BLOCK: "tl.constexpr"):
            pass
    """)
    outcome = fix_source(source, _plan(source, "add", [("BLOCK", DNS), ("n", DNS)]))
    assert b'@triton.jit(do_not_specialize=["n"])' in outcome.source
    assert len(outcome.errors) == 1


def test_other_jit_decorators_are_not_triton_kernels_but_gluons_is() -> None:
    source = _src("""
        import triton
        from numba import jit
        import torch
        @jit
        def a(x, n): pass
        @torch.jit.script
        def b(x, n): pass
        @triton.experimental.gluon.jit
        def c(x, n): pass
    """)
    # Gluon's jit makes a kernel that specializes like triton.jit's; numba's and torch's do not.
    assert [kernel.name for kernel in find_kernels(source)] == ["c"]


# Building blocks of files that mention jit and Triton but define no Triton kernel.
_HEADERS = st.sampled_from([
    "import triton\n", "from numba import jit\n", "import torch\n", "import triton.language as tl\n",
    "# -*- coding: utf-8 -*-\n", "", "from cutlass import cute\n",
])
_DECORATORS = st.sampled_from(["@jit\n", "@torch.jit.script\n", "@cute.jit\n", "@functools.cache\n",
                               "@staticmethod\n", ""])
_NAMES = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True).filter(
    lambda n: n not in {"if", "in", "is", "or", "as", "def", "for", "not", "and", "del", "try", "with", "else",
                        "elif", "from", "pass", "class", "while", "yield", "async", "await", "break", "raise",
                        "global", "lambda", "import", "return", "except", "assert", "finally", "continue",
                        "nonlocal"})
_COMMENTS = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), max_size=20)


@st.composite
def _kernel_free_files(draw: st.DrawFn) -> tuple[bytes, list[str]]:
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    parts = draw(st.lists(_HEADERS, max_size=3))
    names = []
    for _ in range(draw(st.integers(0, 4))):
        name = draw(_NAMES)
        names.append(name)
        comment = draw(_COMMENTS).replace("\r", " ").replace("\n", " ")
        parts.append(f"{draw(_DECORATORS)}def {name}(x_ptr, n):  # {comment}\n    return n\n\n")
    text = "".join(parts).replace("\n", newline)
    return text.encode("utf-8"), names


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_kernel_free_files())
def test_files_without_triton_kernels_come_out_byte_identical(case: tuple[bytes, list[str]]) -> None:
    source, names = case
    kernels = find_kernels(source)
    assert kernels == []
    plan = {(name, line): [("n", DNS)] for line, name in enumerate(names, start=1)}
    outcome = fix_source(source, plan, kernels)
    assert outcome.source == source
    assert len(outcome.errors) == len(plan)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=st.sampled_from(DECORATOR_FORMS),
    newline=st.sampled_from(["\n", "\r\n", "\r"]),
    prefix=st.lists(_COMMENTS.map(lambda c: "# " + c.replace("\r", " ").replace("\n", " ")), max_size=3),
)
def test_only_decorator_lines_change_whatever_the_surroundings(case: tuple, newline: str, prefix: list[str]) -> None:
    _, before, kernel, requests, after = case
    head = "".join(line + "\n" for line in prefix)
    source = (head + textwrap.dedent(before).lstrip("\n")).replace("\n", newline).encode()
    expected = (head + textwrap.dedent(after).lstrip("\n")).replace("\n", newline).encode()
    outcome = fix_source(source, _plan(source, kernel, requests))
    assert outcome.source == expected
    assert fix_source(outcome.source, _plan(outcome.source, kernel, requests)).source == outcome.source


_LATIN1_COMMENTS = st.text(st.characters(min_codepoint=0xA0, max_codepoint=0xFF) | st.sampled_from("abc #'\""),
                           max_size=20)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=st.sampled_from(DECORATOR_FORMS),
    newline=st.sampled_from(["\n", "\r\n", "\r"]),
    prefix=st.lists(_LATIN1_COMMENTS.map(lambda c: "# " + c), max_size=3),
)
def test_latin_1_files_change_only_on_decorator_lines(case: tuple, newline: str, prefix: list[str]) -> None:
    _, before, kernel, requests, after = case
    head = "# -*- coding: latin-1 -*-\n" + "".join(line + "\n" for line in prefix)
    source = (head + textwrap.dedent(before).lstrip("\n")).replace("\n", newline).encode("latin-1")
    expected = (head + textwrap.dedent(after).lstrip("\n")).replace("\n", newline).encode("latin-1")
    outcome = fix_source(source, _plan(source, kernel, requests))
    assert outcome.source == expected
    assert fix_source(outcome.source, _plan(outcome.source, kernel, requests)).source == outcome.source


def test_quotes_in_comments_do_not_choose_the_quote_style() -> None:
    source = b"# it's a kernel, isn't it: 'x' 'y'\nimport triton\n\n\n@triton.jit\ndef k(x_ptr, n):\n    pass\n"
    outcome = fix_source(source, _plan(source, "k", [("n", "do_not_specialize")]))
    assert b'@triton.jit(do_not_specialize=["n"])' in outcome.source


def _comments(source: bytes) -> list[str]:
    return sorted(token.string for token in tokenize.tokenize(io.BytesIO(source).readline)
                  if token.type == tokenize.COMMENT)


@pytest.mark.parametrize("before, kernel, requests", [case[1:4] for case in DECORATOR_FORMS],
                         ids=[case[0] for case in DECORATOR_FORMS])
def test_every_comment_survives_exactly_once(before: str, kernel: str, requests: list) -> None:
    source = _src(before)
    outcome = fix_source(source, _plan(source, kernel, requests))
    assert outcome.errors == []
    assert _comments(outcome.source) == _comments(source)
