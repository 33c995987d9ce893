"""The pytest plugin, run on small suites with `pytester`: verdicts, messages, order, xdist, options.

The suites run on whatever `jitguard_backend` picks (the offline backend on a CPU-only machine).
"""

import os
import re
import shutil
import subprocess
import sys

import pytest
import torch
import triton
import triton.language as tl

import jitguard

pytest_plugins = ["pytester"]

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

KERNELS = '''
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, tl.zeros([BLOCK], dtype=tl.float32) + 1, mask=offsets < n)


@triton.jit(do_not_specialize=["n"])
def add_kernel_fixed(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, tl.zeros([BLOCK], dtype=tl.float32) + 1, mask=offsets < n)


@triton.jit
def other_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, tl.zeros([BLOCK], dtype=tl.float32), mask=offsets < n)


@triton.jit
def recorded_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, tl.zeros([BLOCK], dtype=tl.float32), mask=offsets < n)
'''

CONFTEST = '''
import os


def pytest_collection_modifyitems(items):
    if os.environ.get("JG_SUITE_REVERSE") == "1":
        items.reverse()
'''

SUITE = '''
import pytest
import torch

from jg_suite_kernels import add_kernel, add_kernel_fixed, other_kernel, recorded_kernel


def launch(kernel, n, device):
    x = torch.zeros(64, device=device)
    kernel[(1,)](x, n, BLOCK=64)


def test_unguarded_compiles_17(jitguard_backend):
    launch(add_kernel, 17, jitguard_backend.device)


@pytest.mark.no_recompiles
def test_decode_sizes_recompile(jitguard_backend):
    for n in (16, 17):
        launch(add_kernel, n, jitguard_backend.device)


@pytest.mark.no_recompiles(warmup=1)
def test_decode_sizes_fixed_kernel(jitguard_backend):
    for n in (16, 17, 1):
        launch(add_kernel_fixed, n, jitguard_backend.device)


@pytest.mark.no_recompiles(warmup=2)
def test_two_warmup_calls(jitguard_backend):
    for n in (16, 17, 32):
        launch(add_kernel, n, jitguard_backend.device)


@pytest.mark.no_recompiles(kernels=["other_kernel"])
def test_only_other_kernel_is_judged(jitguard_backend):
    for n in (16, 17):
        launch(add_kernel, n, jitguard_backend.device)
    launch(other_kernel, 16, jitguard_backend.device)


@pytest.mark.no_recompiles
def test_marker_brings_the_backend(request):
    assert "jitguard_backend" in request.fixturenames


def test_recorder_fixture(jitguard, jitguard_backend):
    for n in (16, 17, 32):
        launch(recorded_kernel, n, jitguard_backend.device)
    assert jitguard.variants("recorded_kernel") == 2
'''

EXPECTED = {
    "test_unguarded_compiles_17": "PASSED",
    "test_decode_sizes_recompile": "FAILED",
    "test_decode_sizes_fixed_kernel": "PASSED",
    "test_two_warmup_calls": "PASSED",
    "test_only_other_kernel_is_judged": "PASSED",
    "test_marker_brings_the_backend": "PASSED",
    "test_recorder_fixture": "PASSED",
}


@triton.jit
def _load_compile_path_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, tl.zeros([BLOCK], dtype=tl.float32), mask=offsets < n)


@pytest.fixture(scope="module", autouse=True)
def compile_path_loaded(tmp_path_factory):
    """An in-process pytester run drops the modules it imported, and Triton's C extension aborts the
    process when imported twice: load the whole compile path here, once, before any run."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TRITON_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "triton-cache"))
        with jitguard.offline(compile=True):
            _load_compile_path_kernel[(1,)](torch.zeros(64), 16, BLOCK=64)


@pytest.fixture
def suite(pytester, tmp_path_factory, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "triton-cache"))
    monkeypatch.delenv("JG_SUITE_REVERSE", raising=False)
    pytester.makepyfile(jg_suite_kernels=KERNELS, test_suite=SUITE)
    pytester.makeconftest(CONFTEST)
    return pytester


def verdicts(result):
    """{test name: PASSED/FAILED/...} from the `-rA` short summary."""
    found = {}
    for line in result.outlines:
        match = re.match(r"^(PASSED|FAILED|ERROR|XFAIL|XPASS|SKIPPED) \S*::(\w+)", line)
        if match:
            found[match.group(2)] = match.group(1)
    return found


def line_in(path, text):
    """1-based number of the first line of `path` containing `text`."""
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def run_order(result):
    """Test names in the order `-v` reported them."""
    return [m.group(1) for line in result.outlines if (m := re.match(r"^test_suite\.py::(\w+) ", line))]


def test_verdicts_and_the_full_failure_message(suite):
    result = suite.runpytest("-rA", "-p", "no:cacheprovider")
    assert verdicts(result) == EXPECTED
    kernel_line = line_in(suite.path / "jg_suite_kernels.py", "def add_kernel(") - 1  # its decorator's line
    launch_line = line_in(suite.path / "test_suite.py", "kernel[(1,)](x, n, BLOCK=64)")
    result.stdout.fnmatch_lines([
        "*_ test_decode_sizes_recompile _*",
        "Expected no new Triton variants after warm-up (the first call of each kernel), but 1 was compiled:",
        "",
        f"add_kernel (jg_suite_kernels.py:{kernel_line}): 1 variant in warm-up, 1 new after it",
        f"  variant #2 at call 2, called from test_suite.py:{launch_line}",
        "    n: int32 divisible by 16 -> int32, value 17",
        "  price: n: free (*)",  # computed in a child process: the test process keeps its driver
        '  fix: @triton.jit(do_not_specialize_on_alignment=["n"])',
        "    n flips between divisible-by-16 and not: do_not_specialize_on_alignment keeps one variant*",
        "",
        "(checked by jitguard: @pytest.mark.no_recompiles() on test_decode_sizes_recompile, test_suite.py:*)",
    ])
    result.stdout.fnmatch_lines(["FAILED test_suite.py::test_decode_sizes_recompile - Expected no new Triton*"])


def test_same_verdicts_in_reversed_order(suite, monkeypatch):
    monkeypatch.setenv("JG_SUITE_REVERSE", "1")
    result = suite.runpytest("-rA", "-v", "-p", "no:cacheprovider")
    assert run_order(result) == list(reversed(EXPECTED))  # test_unguarded_compiles_17 now runs last
    assert verdicts(result) == EXPECTED


def test_same_verdicts_with_xdist_and_a_summary_gathered_from_the_workers(suite):
    result = suite.runpytest_subprocess("-p", "xdist", "-n", "2", "-rA", "-p", "no:cacheprovider", "--jitguard",
                                        timeout=300)
    assert verdicts(result) == EXPECTED
    result.stdout.fnmatch_lines([
        "*= jitguard: Triton compiles =*",
        "per test (* of 7 tests compiled):",
        "  test_suite.py::test_decode_sizes_recompile * 2 compiles (*): add_kernel x2  1 NEW AFTER WARM-UP",
        "per kernel:",
        "  kernel * defined at * compiles * ms * tests * after warm-up * causes * fix",
    ])
    # how many compiles each worker needed depends on which tests it ran: the verdict column does not
    result.stdout.re_match_lines([r'^  add_kernel +jg_suite_kernels\.py:\d+ +\d+ +\d+ +\d+ +1 +n x\d+ +'
                                  r'do_not_specialize_on_alignment=\["n"\]$'])


def test_strict_option_fails_an_unmarked_test_that_recompiles(pytester, tmp_path_factory, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "triton-cache"))
    pytester.makepyfile(jg_strict_kernels=KERNELS, test_strict='''
        import torch
        from jg_strict_kernels import add_kernel

        def test_recompiles(jitguard_backend):
            for n in (16, 17):
                add_kernel[(1,)](torch.zeros(64, device=jitguard_backend.device), n, BLOCK=64)

        def test_one_variant(jitguard_backend):
            for n in (16, 32):
                add_kernel[(1,)](torch.zeros(64, device=jitguard_backend.device), n, BLOCK=64)
    ''')
    relaxed = pytester.runpytest("-p", "no:cacheprovider", "--jitguard-backend=offline-keys")
    relaxed.assert_outcomes(passed=2)
    strict = pytester.runpytest("-rA", "-p", "no:cacheprovider", "--jitguard-backend=offline-keys",
                                "--jitguard-strict")
    assert verdicts(strict) == {"test_recompiles": "FAILED", "test_one_variant": "PASSED"}
    strict.stdout.fnmatch_lines(["(checked by jitguard: --jitguard-strict (every test runs as if marked "
                                 "no_recompiles(warmup=1)) on test_recompiles, test_strict.py:*)"])


def test_a_costly_fix_carries_its_price_and_an_autotune_storm_its_remedy(pytester, tmp_path_factory, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "triton-cache"))
    pytester.makepyfile(jg_priced_kernels='''
        import triton
        import triton.language as tl


        @triton.jit
        def scale_kernel(x_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n_elements
            tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)


        def rows_kernel(x_ptr, out_ptr, n_rows, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n_rows) + 1, mask=offs < n_rows)
    ''', test_priced='''
        import pytest
        import torch
        import triton

        import jg_priced_kernels as k


        @pytest.mark.no_recompiles(warmup=1)
        def test_scale(jitguard_backend):
            for n in (1024, 1000):
                x = torch.zeros(n, device=jitguard_backend.device)
                k.scale_kernel[(4,)](x, torch.empty_like(x), n, BLOCK=256)


        @pytest.mark.no_recompiles(warmup=1)
        def test_rows(jitguard_backend):
            tuned = triton.autotune([triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})],
                                    key=["n_rows"])(triton.jit(k.rows_kernel))
            for n in (16, 32, 48):
                x = torch.zeros(n, device=jitguard_backend.device)
                tuned[(1,)](x, torch.empty_like(x), n)
    ''')
    result = pytester.runpytest("-rA", "-p", "no:cacheprovider", "--jitguard-backend=offline-keys")
    assert verdicts(result) == {"test_scale": "FAILED", "test_rows": "FAILED"}
    result.stdout.fnmatch_lines([
        "    n_elements: int32 divisible by 16 (value 1024) -> int32, value 1000",
        "  price: n_elements: costly: * become 32-bit *; instead: keep the specialization and cover its classes*",
        '  fix: @triton.jit(do_not_specialize_on_alignment=["n_elements"])',
        "not in the command (costly, see the price above): scale_kernel.n_elements: keep the specialization and "
        "compile its variants before serving (*); or accept it: "
        "jitguard fix --param scale_kernel:n_elements:align jg_priced_kernels.py",
    ])
    assert "fix with:" not in result.stdout.str()  # the only advised demotion is costly: no command applies it
    result.stdout.fnmatch_lines([
        "Expected no new Triton variants after warm-up (the first call of each kernel), but 2 autotune tunings ran:",
        "rows_kernel (jg_priced_kernels.py:*): 2 variants in warm-up, 0 new after it, 2 autotune tunings after it",
        "  autotune tuning at call 2, called from test_priced.py:*: n_rows=32 (2 configs timed, *",
        "  autotune tuning at call 3, called from test_priced.py:*: n_rows=48 (2 configs timed, *",
        "  autotune key n_rows took 3 values (16, 32, 48): each new value benchmarks every config again",
        '  remedy: bucket it: jitguard.autotune(..., bucket={"n_rows": "pow2"}) tunes once per bucket, *',
    ])


def test_a_log_dir_that_cannot_be_written_does_not_silence_the_marker(pytester, tmp_path_factory, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "triton-cache"))
    blocker = tmp_path_factory.mktemp("logdir") / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("JITGUARD_DIR", str(blocker / "logs"))  # its parent is a file: every write fails
    pytester.makepyfile(jg_logdir_kernels=KERNELS, test_logdir='''
        import pytest, torch
        from jg_logdir_kernels import add_kernel

        @pytest.mark.no_recompiles
        def test_recompiles(jitguard_backend):
            for n in (16, 17):
                add_kernel[(1,)](torch.zeros(64, device=jitguard_backend.device), n, BLOCK=64)
    ''')
    result = pytester.runpytest_subprocess("-rA", "-p", "no:cacheprovider", "--jitguard-backend=offline-keys")
    assert verdicts(result) == {"test_recompiles": "FAILED"}
    result.stdout.fnmatch_lines(["*but 1 was compiled:*"])
    assert f"cannot write the compile log in {blocker / 'logs'}" in result.stderr.str() + result.stdout.str()


def test_bad_marker_arguments_fail_with_one_clear_line(pytester):
    pytester.makepyfile(test_bad_marker='''
        import pytest

        @pytest.mark.no_recompiles(warmups=2)
        def test_typo():
            pass

        @pytest.mark.no_recompiles(warmup=-1)
        def test_negative():
            pass
    ''')
    result = pytester.runpytest("-p", "no:cacheprovider", "--jitguard-backend=offline-keys")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines([
        "*jitguard: @pytest.mark.no_recompiles got warmups; it takes warmup=1, kernels=None",
        "*jitguard: @pytest.mark.no_recompiles: jitguard.no_recompiles: warmup must be an int >= 0 "
        "(calls per kernel), not -1",
    ], consecutive=False)


def test_example_suite_catches_the_stock_kernel_and_passes_the_fixed_one(pytester, tmp_path_factory, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "triton-cache"))
    shutil.copytree(os.path.join(REPO, "examples", "pytest_suite"), pytester.path, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, xfailed=1)
    shown = pytester.runpytest("-p", "no:cacheprovider", "--runxfail")
    shown.assert_outcomes(passed=1, failed=1)
    shown.stdout.fnmatch_lines([
        "Expected no new Triton variants after warm-up (the first call of each kernel), but 2 were compiled:",
        "scale_rows_kernel (tinyops/stock.py:*): 1 variant in warm-up, 2 new after it",
        "  variant #2 at call 2, called from tinyops/stock.py:*, reached from test_tinyops.py:*",
        "    num_tokens: int32 divisible by 16 -> int32, value 17",
        "    num_tokens: int32, value 17 -> the constant 1 (specialized int)",
        '  fix: @triton.jit(do_not_specialize=["num_tokens"])',
    ], consecutive=False)


def test_loading_the_plugin_imports_neither_triton_nor_torch():
    code = ("import sys, jitguard.guard.pytest_plugin; "
            "print(sorted(m for m in ('triton', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.strip() == "[]"
