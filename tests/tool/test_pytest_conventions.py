"""The pytest plugin as pytest users expect it, run with `pytester`: settings from the ini file (pytest.ini,
[tool.pytest.ini_options]) and a failure that ends with the command that fixes it.

Each run is a subprocess: these suites import Triton afresh, which an in-process run could not undo.
"""

import shlex
import subprocess
import sys

import pytest

pytest_plugins = ["pytester"]

KERNELS = '''
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, tl.zeros([BLOCK], dtype=tl.float32) + 1, mask=offsets < n)
'''

SUITE = '''
import torch
from jg_ini_kernels import add_kernel


def test_recompiles(jitguard_backend):
    for n in (16, 17):
        add_kernel[(1,)](torch.zeros(64, device=jitguard_backend.device), n, BLOCK=64)


def test_one_variant(jitguard_backend):
    for n in (16, 32):
        add_kernel[(1,)](torch.zeros(64, device=jitguard_backend.device), n, BLOCK=64)
'''

# (config file, how its settings are written): both places pytest reads ini options from
CONFIG_FILES = {
    "pytest.ini": "[pytest]\n{lines}\n",
    "pyproject.toml": "[tool.pytest.ini_options]\n{toml_lines}\n",
}


def write_config(pytester: pytest.Pytester, file_name: str, settings: dict[str, str]) -> None:
    lines = "\n".join(f"{key} = {value}" for key, value in settings.items())
    toml_lines = "\n".join(f'{key} = "{value}"' for key, value in settings.items())
    (pytester.path / file_name).write_text(CONFIG_FILES[file_name].format(lines=lines, toml_lines=toml_lines))


@pytest.fixture
def suite(pytester, tmp_path_factory, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "triton-cache"))
    pytester.makepyfile(jg_ini_kernels=KERNELS, test_ini_suite=SUITE)
    return pytester


def run(suite: pytest.Pytester, *args: str) -> pytest.RunResult:
    # An unknown ini key would be a PytestConfigWarning: as an error it fails the run.
    return suite.runpytest_subprocess("-rA", "-p", "no:cacheprovider", "-W", "error::pytest.PytestConfigWarning",
                                      *args, timeout=300)


@pytest.mark.parametrize("file_name", sorted(CONFIG_FILES))
def test_strict_and_backend_from_the_ini_file(suite, file_name):
    write_config(suite, file_name, {"jitguard_strict": "true", "jitguard_backend": "offline-keys"})
    result = run(suite)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        f"(checked by jitguard: jitguard_strict = true in {file_name} (every test runs as if marked "
        "no_recompiles(warmup=1)) on test_recompiles, test_ini_suite.py:*)",
        "FAILED test_ini_suite.py::test_recompiles - *",
    ], consecutive=False)
    assert "PytestConfigWarning" not in result.stdout.str() + result.stderr.str()


def test_summary_from_the_ini_file(suite):
    write_config(suite, "pytest.ini", {"jitguard": "true", "jitguard_backend": "offline-keys"})
    result = run(suite)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*= jitguard: Triton compiles =*", "per kernel:"])


@pytest.mark.parametrize("in_ini, on_command_line", [("cuda", "offline-keys"), ("offline-keys", "offline")])
def test_the_command_line_wins_over_the_ini_file(suite, in_ini, on_command_line):
    # The chosen backend is printed by a test of the suite, so the check holds on a GPU host too.
    suite.makepyfile(test_which_backend=(
        "def test_which(jitguard_backend):\n"
        "    print('backend:', jitguard_backend.name, 'compiles:', jitguard_backend.compiles)\n"))
    write_config(suite, "pytest.ini", {"jitguard_backend": in_ini})
    result = run(suite, f"--jitguard-backend={on_command_line}", "-s", "test_which_backend.py")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"*backend: offline compiles: {on_command_line == 'offline'}*"])


def test_a_bad_backend_in_the_ini_file_is_one_usage_error(suite):
    write_config(suite, "pytest.ini", {"jitguard_backend": "gpu"})
    result = run(suite)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: jitguard: jitguard_backend = gpu in pytest.ini; "
                                 "expected one of auto, cuda, offline, offline-keys"])


def test_the_failure_ends_with_the_jitguard_fix_command_that_makes_it_pass(suite):
    write_config(suite, "pytest.ini", {"jitguard_strict": "true", "jitguard_backend": "offline-keys"})
    failed = run(suite)
    failed.assert_outcomes(passed=1, failed=1)
    lines = failed.stdout.lines
    last = lines[next(i for i, line in enumerate(lines) if line.startswith("(checked by jitguard:")) + 1]
    assert last == "fix with: jitguard fix --param add_kernel:n:align jg_ini_kernels.py"
    command = shlex.split(last.removeprefix("fix with: "))
    fixed = subprocess.run([sys.executable, "-m", *command], cwd=suite.path, capture_output=True, text=True)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert '@triton.jit(do_not_specialize_on_alignment=["n"])' in (suite.path / "jg_ini_kernels.py").read_text()
    run(suite).assert_outcomes(passed=2)
