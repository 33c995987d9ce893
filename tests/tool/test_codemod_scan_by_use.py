"""`jitguard scan` judges ambiguous parameters by their uses: in device helpers, at launches, as
pitches, flags and floats. A table: source -> the findings a user sees, (rule, parameter)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from jitguard.codemod.commands import fix_command, scan_command
from jitguard.codemod.demotions import load_report
from jitguard.codemod.scan import scan_source

HEADER = """\
import torch
import triton
import triton.language as tl
"""

# (case id, body after HEADER, expected {(rule, param)} over the whole file)
CASES = [
    # -- a bound inside a called @triton.jit helper is a use of what the caller passes --
    ("helper-mask-bound-positional", """
        @triton.jit
        def _inner(acc, k_ptr, start, kv_len, BLOCK: tl.constexpr):
            offs = start + tl.arange(0, BLOCK)
            return acc + tl.load(k_ptr + offs, mask=offs < kv_len)

        @triton.jit
        def attn(o_ptr, k_ptr, kv_len, BLOCK: tl.constexpr):
            acc = tl.zeros([BLOCK], dtype=tl.float32)
            acc = _inner(acc, k_ptr, 0, kv_len, BLOCK)
            tl.store(o_ptr + tl.arange(0, BLOCK), acc)
     """, {("JG107", "kv_len")}),
    ("helper-loop-bound-by-keyword-through-two-helpers", """
        @triton.jit
        def _rows(x_ptr, stop, BLOCK: tl.constexpr):
            for start in range(0, stop, BLOCK):
                tl.store(x_ptr + start + tl.arange(0, BLOCK), 0.0)

        @triton.jit
        def _middle(x_ptr, extent, BLOCK: tl.constexpr):
            _rows(x_ptr, stop=extent, BLOCK=BLOCK)

        @triton.jit
        def k(x_ptr, S, BLOCK: tl.constexpr):
            _middle(x_ptr, S, BLOCK)
     """, {("JG107", "S")}),
    ("helper-pointer-is-no-count", """
        @triton.jit
        def _zero(rows, BLOCK: tl.constexpr):
            tl.store(rows + tl.arange(0, BLOCK), 0.0)

        @triton.jit
        def k(cache, num_tokens, BLOCK: tl.constexpr):
            _zero(cache, BLOCK)
     """, {("JG101", "num_tokens")}),
    # -- single letters and model-ish words by use --
    ("single-letters-by-use", """
        @triton.jit
        def k(x_ptr, L, S, N, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            for s in range(0, S, BLOCK):
                tl.store(x_ptr + s + offs, 0.0, mask=(offs < L) & (offs < N))
     """, {("JG107", "L"), ("JG107", "S"), ("JG102", "N")}),
    ("a-block-count-bounds-a-loop", """
        @triton.jit
        def k(x_ptr, num_blocks, BLOCK: tl.constexpr):
            for b in range(0, num_blocks):
                tl.store(x_ptr + b * BLOCK + tl.arange(0, BLOCK), 0.0)
     """, {("JG107", "num_blocks")}),
    ("a-pitch-is-a-layout-dimension", """
        @triton.jit
        def k(x_ptr, block_size, BLOCK: tl.constexpr):
            page = tl.program_id(0)
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + page * block_size + offs, 0.0, mask=offs < block_size)
     """, {("JG102", "block_size")}),
    ("n-prefixed-model-word", """
        @triton.jit
        def k(x_ptr, ngroups, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, 0.0, mask=offs < ngroups)
     """, {("JG102", "ngroups")}),
    ("bound-through-a-local", """
        @triton.jit
        def k(x_ptr, extent, BLOCK: tl.constexpr):
            last = extent - 1
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, 0.0, mask=offs <= last)
     """, {("JG107", "extent")}),
    # -- ints computed from a count where the kernel is launched --
    ("stride-computed-from-a-count-at-the-launch", """
        @triton.jit
        def k(x_ptr, L, stride_sh, BLK: tl.constexpr):
            offs = tl.arange(0, BLK)
            tl.store(x_ptr + tl.program_id(0) * stride_sh + offs, 0.0, mask=offs < L)

        def launch(x, L, BLK):
            stride_sh = triton.cdiv(L, BLK)
            k[(1,)](x, L, stride_sh, BLK=BLK)
     """, {("JG107", "L"), ("JG106", "stride_sh")}),
    ("count-of-blocks-passed-beside-the-count", """
        @triton.jit(do_not_specialize=["num_tokens"])
        def k(x_ptr, num_tokens, n_tiles, BLOCK: tl.constexpr):
            tl.store(x_ptr + tl.program_id(0) * n_tiles, 0.0)

        def launch(x, BLOCK):
            num_tokens = x.shape[0]
            k[(1,)](x, num_tokens, n_tiles=(num_tokens + BLOCK - 1) // BLOCK, BLOCK=BLOCK)
     """, {("JG106", "n_tiles")}),
    ("stride-from-the-tensor-is-not-derived", """
        @triton.jit(do_not_specialize=["num_tokens"])
        def k(x_ptr, num_tokens, stride_xt, BLOCK: tl.constexpr):
            tl.store(x_ptr + tl.program_id(0) * stride_xt, 0.0)

        def launch(x, BLOCK):
            k[(1,)](x, x.shape[0], x.stride(0), BLOCK=BLOCK)
     """, set()),
    ("stride-of-a-created-tensor-after-the-count-axis", """
        @triton.jit
        def k(t_ptr, L, stride_th, stride_tl, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(t_ptr + tl.program_id(0) * stride_th + offs * stride_tl, 0.0, mask=offs < L)

        def launch(B, H, L):
            taus = torch.zeros((B, H, L), dtype=torch.float32).contiguous()
            k[(B * H,)](taus, L, taus.stride(1), taus.stride(2), BLOCK=64)
     """, {("JG107", "L"), ("JG106", "stride_th")}),
    ("stride-of-a-view-before-the-count-axis-is-not-derived", """
        @triton.jit
        def k(x_ptr, M, stride_xm, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + tl.program_id(0) * stride_xm + offs, 0.0, mask=offs < M)

        def launch(x, H):
            M = x.numel() // (2 * H)
            rows = x.contiguous().view(M, 2 * H)
            k[(M,)](rows, M, rows.stride(0), BLOCK=64)
     """, {("JG101", "M")}),
    ("column-major-scale-stride-equal-to-the-count", """
        @triton.jit(do_not_specialize=["M"])
        def k(a_ptr, as_ptr, M, K, stride_as_m, stride_as_k, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            scale = tl.load(as_ptr + offs * stride_as_m + tl.program_id(1) * stride_as_k, mask=offs < M)
            tl.store(a_ptr + offs, scale, mask=offs < M)

        def launch(a, group=128):
            M, K = a.shape
            a_s = torch.empty((K // group, M), dtype=torch.float32).T
            k[(1,)](a, a_s, M, K, a_s.stride(0), a_s.stride(1), BLOCK=64)
     """, {("JG106", "stride_as_k")}),
    ("a-bucketing-function-is-not-followed", """
        @triton.jit
        def k(x_ptr, n_rows, rows_bin, BLOCK: tl.constexpr):
            tl.store(x_ptr + tl.program_id(0) * rows_bin, 0.0, mask=tl.program_id(0) < n_rows)

        def launch(x):
            k[(1,)](x, x.shape[0], bucket_of(x.shape[0]), BLOCK=64)
     """, {("JG101", "n_rows")}),
    ("a-created-tensor-is-a-pointer", """
        from .helpers import lock_and_add

        @triton.jit
        def k(x_ptr, locks, num_tokens, BLOCK: tl.constexpr):
            lock_and_add(locks, x_ptr, num_tokens)

        def launch(x):
            locks = torch.zeros((triton.cdiv(x.shape[0], 64),), dtype=torch.int32)
            k[(1,)](x, locks, x.shape[0], BLOCK=64)
     """, {("JG101", "num_tokens")}),
    ("a-constant-at-every-launch-is-no-count", """
        @triton.jit
        def k(x_ptr, NITER, BLOCK: tl.constexpr):
            for _ in range(NITER):
                tl.store(x_ptr + tl.arange(0, BLOCK), 0.0)

        def launch(x, niter=10):
            k[(1,)](x, niter, BLOCK=64)
            k[(1,)](x, 4, BLOCK=64)
     """, {("JG102", "NITER")}),
    ("a-float-by-the-launching-functions-default", """
        @triton.jit
        def k(x_ptr, alpha, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, 0.0, mask=offs.to(tl.float32) < alpha)

        def launch(x, alpha=1.5):
            k[(1,)](x, alpha, BLOCK=64)
     """, set()),
    # -- a count only known at run time where the kernel is launched, whatever the body does with it --
    ("divisor-passed-a-count-of-a-mask", """
        @triton.jit
        def k(x_ptr, n_valid, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs) / n_valid)

        def launch(x, labels):
            n_valid = (labels != -100).sum().item()
            k[(1,)](x, n_valid, BLOCK=64)
     """, {("JG101", "n_valid")}),
    ("divisor-without-a-launch-is-silent", """
        @triton.jit
        def k(x_ptr, n_valid, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs) / n_valid)
     """, set()),
    ("count-on-one-branch-of-two", """
        @triton.jit
        def k(x_ptr, denom, BLOCK: tl.constexpr):
            tl.store(x_ptr, tl.load(x_ptr) / denom)

        def launch(x, labels, weights=None):
            denom = labels.ne(-1).sum().item()
            if weights is not None:
                denom = weights.sum().item()
            k[(1,)](x, denom, BLOCK=64)
     """, {("JG101", "denom")}),
    ("len-numel-and-int-of-an-item", """
        @triton.jit
        def k(x_ptr, total, picked, last, BLOCK: tl.constexpr):
            tl.store(x_ptr, tl.load(x_ptr) * total + picked - last)

        def launch(x, pieces, index, offsets):
            k[(1,)](x, len(pieces), index.numel(), int(offsets[-1].item()), BLOCK=64)
     """, {("JG101", "total"), ("JG101", "picked"), ("JG101", "last")}),
    ("int-tensor-reduced-and-through-arithmetic", """
        @triton.jit
        def k(x_ptr, longest, BLOCK: tl.constexpr):
            tl.store(x_ptr, tl.load(x_ptr) * longest)

        def launch(x, lengths):
            k[(1,)](x, triton.cdiv(lengths.long().max().item(), 16) * 16, BLOCK=64)
     """, {("JG101", "longest")}),
    ("int-computed-from-a-launched-count-names-it", """
        @triton.jit
        def k(x_ptr, n_valid, n_tiles, BLOCK: tl.constexpr):
            tl.store(x_ptr + tl.program_id(0) * n_tiles, tl.load(x_ptr) / n_valid)

        def launch(x, mask):
            n_valid = mask.bool().sum().item()
            k[(1,)](x, n_valid, (n_valid + 63) // 64, BLOCK=64)
     """, {("JG101", "n_valid"), ("JG106", "n_tiles")}),
    ("count-passed-through-wrappers-in-the-file", """
        @triton.jit
        def k(x_ptr, n_valid, BLOCK: tl.constexpr):
            tl.store(x_ptr, tl.load(x_ptr) / n_valid)

        def _launch(x, n_valid):
            k[(1,)](x, n_valid, BLOCK=64)

        def _middle(x, count):
            _launch(x, count)

        def loss(x, labels):
            _middle(x, count=(labels >= 0).sum().item())
     """, {("JG101", "n_valid")}),
    ("count-passed-through-a-method-not-through-another-objects", """
        @triton.jit
        def k(x_ptr, scale_by, divide_by, BLOCK: tl.constexpr):
            tl.store(x_ptr, tl.load(x_ptr) * scale_by / divide_by)

        class Op:
            def launch(self, x, scale_by, divide_by):
                k[(1,)](x, scale_by, divide_by, BLOCK=64)

            def run(self, x, seqs, other):
                self.launch(x, 2, len(seqs))
                other.launch(x, len(seqs), 2)
     """, {("JG101", "divide_by")}),
    ("not-counts-float-and-bool-items-fixed-numel-bucketed-model-name", """
        @triton.jit
        def k(x_ptr, amax, any_set, cells, binned, hidden, inverse, BLOCK: tl.constexpr):
            tl.store(x_ptr, tl.load(x_ptr) / amax + any_set * cells + binned + hidden + inverse)

        def launch(x, mask, weights, mean):
            grid = torch.empty((4, 8), dtype=torch.float32)
            n_set = (mask != 0).sum().item()
            inverse = 1.0
            if mean:
                inverse = 1 / n_set
            k[(1,)](x, x.abs().amax().item(), mask.any().item(), grid.numel(),
                    bucket_of(n_set), len(weights), inverse, BLOCK=64)
     """, set()),
    # -- never specialized, or not a count: floats and bool flags --
    ("float-by-default-value", """
        @triton.jit
        def k(x_ptr, cutoff=0.5, BLOCK: tl.constexpr = 64):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, 0.0, mask=offs.to(tl.float32) < cutoff * BLOCK)
     """, set()),
    ("float-by-launch", """
        @triton.jit
        def k(x_ptr, cutoff, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, 0.0, mask=offs.to(tl.float32) < cutoff * BLOCK)

        def launch(x):
            k[(1,)](x, 0.25, BLOCK=64)
     """, set()),
    ("bool-flag-read-as-a-condition", """
        @triton.jit
        def k(x_ptr, tokens_sorted: tl.constexpr):
            if tokens_sorted:
                tl.store(x_ptr, 0.0)
     """, set()),
    ("bool-flag-by-default", """
        @triton.jit
        def k(x_ptr, v, batch_invariant: tl.constexpr = False):
            tl.store(x_ptr, tl.where(batch_invariant, v, 0.0))
     """, set()),
    ("bool-flag-by-launch", """
        @triton.jit
        def k(x_ptr, v, seq_major: tl.constexpr):
            tl.store(x_ptr, tl.where(seq_major, v, 0.0))

        def launch(x):
            k[(1,)](x, 1.0, seq_major=True)
     """, set()),
    ("count-constexpr-is-still-found", """
        @triton.jit
        def k(x_ptr, num_tokens: tl.constexpr):
            tl.store(x_ptr + tl.arange(0, num_tokens), 0.0)
     """, {("JG103", "num_tokens")}),
    ("heuristics-applied-in-a-later-statement", """
        def _k(x_ptr, num_tokens, EVEN: tl.constexpr):
            pass

        k = triton.jit(_k, do_not_specialize=["num_tokens"])
        k = triton.heuristics({"EVEN": lambda args: args["num_tokens"] % 16 == 0})(k)
     """, {("JG108", "EVEN")}),
    # -- Gluon kernels are scanned like triton.jit --
    ("gluon-jit", """
        from triton.experimental import gluon
        from triton.experimental.gluon import language as gl

        @gluon.jit
        def k(x_ptr, num_tokens, BLOCK: gl.constexpr):
            offs = gl.arange(0, BLOCK, layout=gl.BlockedLayout([1], [32], [4], [0]))
            gl.store(x_ptr + offs, 0.0, mask=offs < num_tokens)
     """, {("JG101", "num_tokens")}),
    ("gluon-jit-imported-as-jit", """
        from triton.experimental.gluon import jit as gjit

        @gjit(do_not_specialize=["num_tokens", "M"])
        def k(x_ptr, num_tokens, M):
            pass
     """, set()),
    ("gluon-jit-module-alias", """
        import triton.experimental.gluon as glu

        @glu.jit
        def k(x_ptr, num_tokens):
            pass
     """, {("JG101", "num_tokens")}),
]


def _source(body: str) -> bytes:
    return (HEADER + textwrap.dedent(body).lstrip("\n")).encode()


@pytest.mark.parametrize(("body", "expected"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_scan_by_use(body: str, expected: set[tuple[str, str | None]]) -> None:
    findings, kernels = scan_source(_source(body), "k.py")
    assert kernels >= 1
    assert {(finding.rule, finding.param) for finding in findings} == expected


def test_a_helper_bound_names_the_helper() -> None:
    body = {case[0]: case[1] for case in CASES}["helper-mask-bound-positional"]
    (finding,) = scan_source(_source(body), "k.py")[0]
    assert finding.kernel == "attn" and "`offs < kv_len` in `_inner`" in finding.message


def test_a_launch_derived_stride_is_a_warning_that_says_where_it_comes_from() -> None:
    body = {case[0]: case[1] for case in CASES}["stride-computed-from-a-count-at-the-launch"]
    (stride,) = [f for f in scan_source(_source(body), "k.py")[0] if f.param == "stride_sh"]
    assert stride.severity == "warning" and stride.advice == "do_not_specialize"
    assert "computed from `L`" in stride.message


def _run(command: object, args: list[str]) -> object:
    return CliRunner().invoke(command, [str(arg) for arg in args])  # type: ignore[arg-type]


def test_jg109_is_counted_in_the_summary_and_fix_buckets_it(tmp_path: Path) -> None:
    kernel = tmp_path / "tuned.py"
    kernel.write_text(HEADER + textwrap.dedent("""
        @triton.autotune(configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})], key=["num_tokens"])
        @triton.jit
        def k(x_ptr, num_tokens, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, 0.0, mask=offs < num_tokens)
        """))
    scan = _run(scan_command, [kernel])
    assert scan.exit_code == 1  # type: ignore[attr-defined]
    assert "(JG101 1, JG109 1)" in scan.stderr  # type: ignore[attr-defined]
    report = tmp_path / "scan.json"
    report.write_text(_run(scan_command, ["--json", kernel]).stdout)  # type: ignore[attr-defined]
    (finding,) = [f for f in json.loads(report.read_text())["findings"] if f["rule"] == "JG109"]
    assert finding["advice"] == "bucket"
    demotions, _ = load_report(report)
    assert [(d.kernel, d.param, d.option) for d in demotions if d.advice == "bucket"] == [
        ("k", "num_tokens", "bucket:pow2")]
    fixed = _run(fix_command, ["--from", report, "--allow-jitguard-import", kernel])
    assert fixed.exit_code in (0, 1), fixed.output  # type: ignore[attr-defined]
    text = kernel.read_text()
    assert 'bucket={"num_tokens": "pow2"}' in text and "@jitguard.autotune(" in text and "import jitguard" in text


def test_fix_edits_a_gluon_decorator(tmp_path: Path) -> None:
    kernel = tmp_path / "g.py"
    kernel.write_text(_source({case[0]: case[1] for case in CASES}["gluon-jit"]).decode())
    result = _run(fix_command, ["--param", "k:num_tokens", kernel])
    assert result.exit_code == 0, result.stderr  # type: ignore[attr-defined]
    assert '@gluon.jit(do_not_specialize=["num_tokens"])\ndef k(' in kernel.read_text()
    assert scan_source(kernel.read_bytes(), "g.py")[0] == []


def test_a_launched_count_says_what_the_launch_passes_and_fix_demotes_it(tmp_path: Path) -> None:
    body = {case[0]: case[1] for case in CASES}["divisor-passed-a-count-of-a-mask"]
    (finding,) = scan_source(_source(body), "k.py")[0]
    assert finding.severity == "warning" and finding.advice == "do_not_specialize"
    assert "passed a run-time count (`(labels != -100).sum().item()`, line 10)" in finding.message
    assert "although the kernel only computes with it, is specialized" in finding.message
    package = tmp_path / f"launched_{tmp_path.name}"  # a package name of its own: the price check imports it
    package.mkdir()
    (package / "__init__.py").write_text("")
    kernel = package / "loss.py"
    kernel.write_bytes(_source(body))
    result = _run(fix_command, [kernel])  # scans, prices the demotion (a divisor: free) and applies it
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    assert '@triton.jit(do_not_specialize=["n_valid"])\ndef k(' in kernel.read_text()
    assert scan_source(kernel.read_bytes(), "loss.py")[0] == []


def test_launches_in_another_file_count_for_the_kernel_they_import(tmp_path: Path) -> None:
    kernel = """
        @triton.jit
        def loss_kernel(x_ptr, n_valid, limit, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs) / n_valid, mask=offs.to(tl.float32) < limit)
    """
    package = tmp_path / "lib"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "kernels.py").write_bytes(_source(kernel))
    (package / "same_name.py").write_bytes(_source(kernel))  # a kernel of the same name no one imports
    (package / "ops.py").write_text(textwrap.dedent("""
        from .kernels import loss_kernel


        def loss(x, labels):
            loss_kernel[(1,)](x, (labels != -100).sum().item(), 0.5 * x.shape[1], BLOCK=64)
        """))
    scan = _run(scan_command, ["--json", package])
    findings = json.loads(scan.stdout)["findings"]  # type: ignore[attr-defined]
    seen = {(Path(f["file"]).name, f["rule"], f["param"]) for f in findings}
    # the launch in ops.py makes n_valid a count and limit a float (never specialized) in kernels.py only
    assert seen == {("kernels.py", "JG101", "n_valid"), ("same_name.py", "JG107", "limit")}, seen
    (counted,) = [f for f in findings if f["param"] == "n_valid"]
    assert f"(`(labels != -100).sum().item()`, {package / 'ops.py'}:6)" in counted["message"]
