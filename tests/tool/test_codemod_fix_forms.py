"""`jitguard fix` finds kernels however they are bound, says where to add a name to a computed
list, selects files as `scan` does, and both commands skip dangling symlinks."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from jitguard.codemod.commands import fix_command, scan_command
from jitguard.codemod.kernels import find_kernels
from jitguard.codemod.scan import scan_source

BODY = "    pid = tl.program_id(0)\n    tl.store(x_ptr + pid, 0.0, mask=pid < n)\n"

# (source, --param, expected source after the fix)
BOUND_CASES = [
    ("import triton\nimport triton.language as tl\n\ndef _k(x_ptr, n):\n" + BODY + "\nk = triton.jit(_k)\n",
     "k:n",
     "import triton\nimport triton.language as tl\n\ndef _k(x_ptr, n):\n" + BODY
     + '\nk = triton.jit(_k, do_not_specialize=["n"])\n'),
    ("import triton\nimport triton.language as tl\n\ndef _k(x_ptr, n):\n" + BODY + "\nk = triton.jit(_k)\n",
     "_k:n",
     "import triton\nimport triton.language as tl\n\ndef _k(x_ptr, n):\n" + BODY
     + '\nk = triton.jit(_k, do_not_specialize=["n"])\n'),
    ("import triton\nimport triton.language as tl\n\ndef _k(x_ptr, n):\n" + BODY
     + "\nfast = triton.jit(do_not_specialize=['x_ptr'])(_k)\n",
     "fast:n",
     "import triton\nimport triton.language as tl\n\ndef _k(x_ptr, n):\n" + BODY
     + "\nfast = triton.jit(do_not_specialize=['x_ptr', 'n'])(_k)\n"),
]


@pytest.mark.parametrize("source, param, expected", BOUND_CASES, ids=["bound-name", "function-name", "factory-call"])
def test_param_finds_kernels_bound_by_assignment(tmp_path: Path, source: str, param: str, expected: str) -> None:
    target = tmp_path / "ops.py"
    target.write_text(source)
    result = CliRunner().invoke(fix_command, ["--param", param, str(target)])
    assert result.exit_code == 0, result.output
    assert target.read_text() == expected
    again = CliRunner().invoke(fix_command, ["--check", "--param", param, str(target)])
    assert again.exit_code == 0, again.output  # idempotent


HEAD = "import triton\nimport triton.language as tl\nHOPPER = True\n"

# (decorator, --param name, the one error line expected after `error: FILE: `)
COMPUTED_CASES = [
    ("@triton.jit(do_not_specialize=['n'] if HOPPER else [])", "n",
     "is not a literal list (line 4 (`['n'] if HOPPER else []`)); add `n` by hand where it is missing: not HOPPER"),
    ("@triton.jit(do_not_specialize=_dns())", "n",
     "do_not_specialize is not a literal list, computed at line 4 (`_dns()`): add `n` there by hand"),
    # A module constant is one list with no condition: the line that sets it, not an empty list of branches.
    ("DNS = ['x_ptr']\n@triton.jit(do_not_specialize=DNS)", "n",
     "do_not_specialize is not a literal list, computed at line 4 (`DNS = ...`): add `n` there by hand\n"),
    # A starred part makes it computed; the names written out are listed whichever branch is taken.
    ("@triton.jit(do_not_specialize=['x_ptr', *(() if HOPPER else ('n',))])", "n",
     "add `n` by hand where it is missing: HOPPER"),
]


@pytest.mark.parametrize("decorator, param, said", COMPUTED_CASES, ids=["branch", "call", "constant", "starred"])
def test_computed_list_says_where_to_add_the_name(tmp_path: Path, decorator: str, param: str, said: str) -> None:
    source = HEAD + decorator + "\ndef k(x_ptr, n):\n" + BODY
    target = tmp_path / "ops.py"
    target.write_text(source)
    result = CliRunner().invoke(fix_command, ["--param", f"k:{param}", str(target)])
    assert result.exit_code == 1, result.output  # a finding left for a hand edit, not bad input
    assert target.read_text() == source
    assert said in result.stderr, result.stderr


def test_name_listed_in_every_branch_is_already_demoted(tmp_path: Path) -> None:
    source = HEAD + "@triton.jit(do_not_specialize=['n', 'x_ptr'] if HOPPER else ['n'])\ndef k(x_ptr, n):\n" + BODY
    target = tmp_path / "ops.py"
    target.write_text(source)
    result = CliRunner().invoke(fix_command, ["--param", "k:n", str(target)])
    assert result.exit_code == 0, result.output
    assert target.read_text() == source and "Nothing to fix" in result.stderr


KERNEL = "import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(x_ptr, n):\n" + BODY


def test_fix_selects_files_like_scan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("generated/\n")
    for folder in ("src", "generated", "build"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "ops.py").write_text(KERNEL)
    (tmp_path / "pyproject.toml").write_text('[tool.jitguard]\nextend-exclude = ["src/skip_*.py"]\n')
    (tmp_path / "src" / "skip_me.py").write_text(KERNEL)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(fix_command, ["--param", "k:n", "."])
    assert result.exit_code == 0, result.output
    changed = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.py") if p.read_text() != KERNEL)
    assert changed == ["src/ops.py"]
    assert "1 file checked" in result.stderr


@pytest.mark.parametrize("named", [False, True], ids=["walked", "named"])
def test_scan_skips_a_dangling_symlink(tmp_path: Path, named: bool) -> None:
    (tmp_path / "ok.py").write_text("x = 1\n")
    lock = tmp_path / ".#ops.py"
    lock.symlink_to("user@host.1234:1700000000")  # an Emacs lock file
    paths = [str(tmp_path / "ok.py"), str(lock)] if named else [str(tmp_path)]
    result = CliRunner().invoke(scan_command, paths)
    assert result.exit_code == 0, result.output
    assert "error" not in result.stderr and "1 file scanned" in result.stderr



def test_pre_commit_scan_hook_forces_excludes() -> None:
    """Read as text (PyYAML is optional here): the hook's entry applies `exclude` to staged files."""
    hooks = (Path(__file__).resolve().parents[2] / ".pre-commit-hooks.yaml").read_text()
    check = hooks.split("\n- id: jitguard-check", 1)[1].split("\n- id:", 1)[0]
    assert "\n  entry: jitguard scan --force-exclude\n" in check


@pytest.mark.parametrize("order", [["k:n:align", "k:n"], ["k:n", "k:n:align"]], ids=["align-first", "full-first"])
def test_name_asked_both_ways_is_demoted_once(tmp_path: Path, order: list[str]) -> None:
    """`do_not_specialize` already drops the alignment classes: listing n twice would only add noise."""
    target = tmp_path / "ops.py"
    target.write_text(KERNEL)
    result = CliRunner().invoke(fix_command, [arg for param in order for arg in ("--param", param)] + [str(target)])
    assert result.exit_code == 0, result.output
    assert target.read_text() == KERNEL.replace("@triton.jit", '@triton.jit(do_not_specialize=["n"])')


def test_names_one_computed_list_lacks_are_one_hand_edit(tmp_path: Path) -> None:
    source = HEAD + "DNS = ['x_ptr']\n@triton.jit(do_not_specialize=DNS)\ndef k(x_ptr, n, m):\n" + BODY
    target = tmp_path / "ops.py"
    target.write_text(source)
    result = CliRunner().invoke(fix_command, ["--param", "k:n", "--param", "k:m", str(target)])
    assert result.exit_code == 1, result.output
    assert not [line for line in result.stderr.splitlines() if line.startswith("error:")]
    hand_edits = [line for line in result.stderr.splitlines() if line.startswith("hand edit:")]
    assert len(hand_edits) == 1
    assert hand_edits[0].endswith("computed at line 4 (`DNS = ...`): add `n`, `m` there by hand")


def test_starred_list_names_are_demoted_in_every_branch() -> None:
    source = (HEAD + "@triton.jit(do_not_specialize=['n', *(() if HOPPER else ('x_ptr',))])\ndef k(x_ptr, n):\n"
              + BODY).encode()
    (kernel,) = find_kernels(source)
    assert kernel.demoted("do_not_specialize") == {"n"}
    assert [finding for finding in scan_source(source, "ops.py")[0] if finding.param == "n"] == []


# One function made a kernel by two jit calls: two kernels at run time, each with its own options.
TWO_BINDINGS = ("import triton\nimport triton.language as tl\n\ndef _k(x_ptr, n):\n" + BODY
                + "\nplain = triton.jit(do_not_specialize=['x_ptr'])(_k)\nwide = triton.jit(_k)\n")


def test_every_jit_call_on_one_function_is_a_kernel() -> None:
    kernels = find_kernels(TWO_BINDINGS.encode())
    assert [(kernel.name, kernel.bound_as, kernel.decorator_line) for kernel in kernels] == [
        ("_k", ("plain",), 8), ("_k", ("wide",), 9)]
    findings = [finding for finding in scan_source(TWO_BINDINGS.encode(), "ops.py")[0] if finding.param == "n"]
    assert [finding.binding for finding in findings] == ["as `plain`, line 8", "as `wide`, line 9"]


@pytest.mark.parametrize(
    "param, plain, wide, said",
    [("_k:n", "['x_ptr', 'n']", "_k, do_not_specialize=['n']", ["_k (as `plain`, line 8)", "_k (as `wide`, line 9)"]),
     ("wide:n", "['x_ptr']", "_k, do_not_specialize=['n']", ["_k (as `wide`, line 9)"]),
     ("plain:n", "['x_ptr', 'n']", "_k", ["_k (as `plain`, line 8)"])],
    ids=["function-name", "one-binding", "other-binding"],
)
def test_fix_edits_the_jit_calls_a_name_means(
    tmp_path: Path, param: str, plain: str, wide: str, said: list[str]
) -> None:
    target = tmp_path / "ops.py"
    target.write_text(TWO_BINDINGS)
    result = CliRunner().invoke(fix_command, ["--param", param, str(target)])
    assert result.exit_code == 0, result.output
    assert target.read_text().endswith(
        f"plain = triton.jit(do_not_specialize={plain})(_k)\nwide = triton.jit({wide})\n")
    assert [line.split(": ")[1] for line in result.stdout.splitlines() if line.startswith(str(target))] == said
    assert "matches" not in result.stderr  # bindings of one function are not an ambiguous name
    again = CliRunner().invoke(fix_command, ["--check", "--param", param, str(target)])
    assert again.exit_code == 0, again.output
