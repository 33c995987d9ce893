"""render_text: the words of every table, cause line, fix and failure, pinned to their exact output.

The monitor's end-of-process summary and the `no_recompiles` failure text are pinned here too, so
monitor.py and recompile_guard.py can call these functions with no change in what users read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import pytest

from jitguard.events import Cause, CompileEvent
from jitguard.render_text import (
    cause_line,
    fix_block,
    format_new_variants,
    format_summary,
    kernel_where,
    plural,
    table,
    tally,
    warmup_words,
)

HERE = os.getcwd()


def ev(kernel: str, variant: int, causes: list[Cause], ms: float = 10.0, **kw) -> CompileEvent:
    return CompileEvent(kernel=kernel, file=f"{HERE}/ops/k.py", line=7, variant=variant, compile_ms=ms, causes=causes,
                        **kw)


DNS = Cause("n", "int32 divisible by 16", "int32, value 17", "do_not_specialize",
            "n took the value 1 and other values: do_not_specialize compiles one variant for all of them")
ALIGN = Cause("s", "int32 divisible by 16", "int32, value 20", "do_not_specialize_on_alignment", "s flips")
SPLIT = Cause("s", "int32, value 20", "int32 divisible by 16", "do_not_specialize_on_alignment", "s flips")
DTYPE = Cause("x", "pointer to fp16, 16-byte aligned", "pointer to bf16, 16-byte aligned", "expected",
              "x changed dtype")
INT64 = Cause("m", "int32, value 7", "int64, value 2147483664", "int64", "m crossed 2**31")

EVENTS = [
    ev("add_one_kernel", 1, []),
    ev("add_one_kernel", 2, [DNS], ms=12.4),
    ev("add_one_kernel", 3, [DNS, ALIGN]),
    ev("gemm", 1, [], ms=100.0),
    ev("gemm", 2, [DTYPE], ms=99.6),
]


def test_plural_table_tally_cause_line() -> None:
    assert [plural(0, "variant"), plural(1, "variant"), plural(2, "kernel")] == ["0 variants", "1 variant", "2 kernels"]
    assert table(["a", "long header"], [["xx", "1"], ["y", ""]]) == ["  a   long header", "  xx  1", "  y"]
    assert tally({"n": 1, "s": 3, "m": 1, "q": 1}, top=3) == "s x3, n x1, m x1"
    assert cause_line(DNS) == "n: int32 divisible by 16 -> int32, value 17"
    assert kernel_where(f"{HERE}/ops/k.py", 7) == "ops/k.py:7"
    assert kernel_where("/elsewhere/pkg/ops/k.py", 7) == "ops/k.py:7"


SUMMARY = [
    "[jitguard] compile summary (this process)",
    "  kernel          variants  compile ms  causes      fix",
    '  add_one_kernel  3         32          n x2, s x1  do_not_specialize=["n"]; do_not_specialize_on_alignment=["s"]',
    "  gemm            2         200         x x1        -",
]


def test_summary_table_is_pinned() -> None:
    assert format_summary(EVENTS) == SUMMARY
    assert format_summary([]) == []


def test_summary_rows_keep_kernels_of_one_name_in_two_files_apart() -> None:
    places = (("prefill", 10, 1), ("prefill", 10, 2), ("decode", 40, 1))
    fwd = [CompileEvent(kernel="_fwd_kernel", file=f"{HERE}/{where}/attn.py", line=line, variant=variant,
                        compile_ms=5.0) for where, line, variant in places]
    assert format_summary([*fwd, EVENTS[0]]) == [
        "[jitguard] compile summary (this process)",
        "  kernel                            variants  compile ms  causes  fix",
        "  _fwd_kernel (prefill/attn.py:10)  2         10          -       -",
        "  _fwd_kernel (decode/attn.py:40)   1         5           -       -",
        "  add_one_kernel                    1         10          -       -",
    ]


@pytest.mark.parametrize("causes, lines", [
    ([DNS], ['  fix: @triton.jit(do_not_specialize=["n"])', f"    {DNS.message}"]),
    ([ALIGN, SPLIT], ['  fix: @triton.jit(do_not_specialize_on_alignment=["s"])', "    s flips"]),
    ([DNS, Cause("n", "a", "b", "do_not_specialize_on_alignment", "weaker")],
     ['  fix: @triton.jit(do_not_specialize=["n"])', f"    {DNS.message}"]),
    ([INT64], ['  fix: @triton.jit(do_not_specialize=["m"]); annotate m: tl.int64', "    m crossed 2**31"]),
    ([DTYPE], ["  no decorator fix: x changed in an expected way (dtype, launch options, constexpr or autotune "
               "config); call these variants during warm-up, or raise warmup"]),
    ([], ["  fix: call this kernel during warm-up with the arguments it will see later"]),
])
def test_fix_block_is_pinned(causes: list[Cause], lines: list[str]) -> None:
    assert fix_block(causes) == lines


@pytest.mark.parametrize("warmup, words", [(0, "no warm-up calls"), (1, "the first call of each kernel"),
                                           (3, "the first 3 calls of each kernel")])
def test_warmup_words(warmup: int, words: str) -> None:
    assert warmup_words(warmup, "each kernel") == words


@dataclass(frozen=True)
class Kernel:
    name: str
    file: str
    line: int

    @property
    def label(self) -> str:
        return self.name

    def where(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass
class Seen:
    event: CompileEvent
    call_number: int
    after_warmup: bool
    block_line: str = ""

    @property
    def kernel(self) -> Kernel:
        return Kernel(self.event.kernel, self.event.file, self.event.line)


SEEN = [
    Seen(ev("add_one_kernel", 1, []), 1, False),
    Seen(ev("add_one_kernel", 2, [DNS], call_site=f"{HERE}/tests/test_ops.py:12"), 2, True,
         block_line=f"{HERE}/tests/test_ops.py:30"),
    Seen(ev("gemm", 1, [], autotuning=True), 1, True),
]

FAILURE = f"""Expected no new Triton variants after warm-up (the first call of each kernel), but 2 were compiled:

add_one_kernel (ops/k.py:7): 1 variant in warm-up, 1 new after it
  variant #2 at call 2, called from tests/test_ops.py:12, reached from tests/test_ops.py:30
    n: int32 divisible by 16 -> int32, value 17
  fix: @triton.jit(do_not_specialize=["n"])
    {DNS.message}

gemm (ops/k.py:7): 0 variants in warm-up, 1 new after it
  variant #1 at call 1 [autotune config]
    (first variant of this kernel in the block: it was not called during warm-up)
  fix: call this kernel during warm-up with the arguments it will see later"""


def test_no_recompiles_failure_text_is_pinned() -> None:
    assert format_new_variants(SEEN, warmup=1) == FAILURE
    zero = format_new_variants(SEEN, warmup=0)
    assert zero.startswith("Expected no new Triton variants after warm-up (no warm-up calls), but 2 were")
    assert zero.endswith("call kernel.warmup(...) inside the block, or isolate=False to rely on warm-up done before it")


@pytest.mark.parametrize("module", ["jitguard.render_text", "jitguard.report.event_logs",
                                    "jitguard.runtime.argv_redaction", "jitguard.report.build",
                                    "jitguard.report.render_html"])
def test_report_side_imports_neither_triton_nor_torch(module: str) -> None:
    import subprocess
    import sys
    code = f"import sys, {module}; print(sorted({{'triton', 'torch'}} & set(sys.modules)))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "[]"
