"""The command line: fast help, exit codes, and the demo end to end on the offline backend."""

import json
import os
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from jitguard.cli import COMMANDS, main


def test_help_loads_no_command_and_nothing_heavy():
    # What keeps `jitguard --help` fast: no command module, no Triton, torch or libcst behind it.
    code = ("import sys, json; from jitguard.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print('LOADED', json.dumps(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = set(json.loads(out.split("LOADED ", 1)[1]))
    heavy = {"torch", "triton", "libcst"} | {target.split(":")[0] for target, _ in COMMANDS.values()}
    assert heavy & loaded == set()
    assert {m.split(".")[0] for m in loaded} & {"torch", "triton", "libcst"} == set()
    for name in COMMANDS:
        assert name in out


def test_unknown_command_is_a_usage_error():
    result = CliRunner().invoke(main, ["frobnicate"])
    assert result.exit_code == 2
    assert "No such command" in result.output


def test_demo_shows_the_storm_and_the_fix(tmp_path):
    env = {**os.environ, "TRITON_CACHE_DIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "jitguard", "demo", "--steps", "40", "--seed", "1"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "[jitguard] recompile per_token_quant_kernel#2" in out
    assert '+@triton.jit(do_not_specialize=["num_tokens"]' in out
    labels = ("kernel as written", "after jitguard fix", "fix + warm-up plan")
    rows = {label: line.split()[-3:] for line in out.splitlines() for label in labels if line.startswith("  " + label)}
    assert rows["kernel as written"][0] == "0" and int(rows["kernel as written"][1]) >= 3
    assert rows["after jitguard fix"][:2] == ["0", "1"]
    assert rows["fix + warm-up plan"][:2] == ["1", "0"]  # compiled at start-up, nothing on the request path
    assert "[jitguard] warm-up: 1 compiled, 0 already compiled, 0 failed" in out



@click.command()
def _torch_at_run_time_command() -> None:
    import torch  # noqa: F401  (a command that needs torch only once it runs)


# (command line, modules made unimportable, the one line it prints)
MISSING = [
    (["run", "--", sys.executable, "-c", "pass"], ["triton"],
     "jitguard run needs Triton, which is not installed here: pip install 'jitguard[monitor]'"),
    (["demo"], ["torch"], "jitguard demo needs torch, which is not installed here: pip install 'jitguard[kernels]'"),
    (["demo"], ["triton", "torch"],
     "jitguard demo needs Triton and torch, which are not installed here: pip install 'jitguard[kernels]'"),
    (["late-torch"], ["torch"],
     "jitguard late-torch needs torch, which is not installed here: pip install 'jitguard[kernels]'"),
    (["top-triton", "--help"], ["triton"],
     "jitguard top-triton needs Triton, which is not installed here: pip install 'jitguard[monitor]'"),
]

TOP_TRITON_MODULE = "import triton\nimport click\n\ncommand = click.command()(print)\n"


@pytest.mark.parametrize("args,missing,line", MISSING, ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_a_missing_extra_is_one_line_and_exit_2(monkeypatch, tmp_path, args, missing, line):
    # late-torch imports torch in its body; top-triton's module imports Triton on its first line
    monkeypatch.setitem(COMMANDS, "late-torch", (f"{__name__}:_torch_at_run_time_command", "needs torch late"))
    (tmp_path / "modules").mkdir()
    (tmp_path / "modules" / "jg_top_triton_command.py").write_text(TOP_TRITON_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path / "modules"))
    monkeypatch.setitem(COMMANDS, "top-triton", ("jg_top_triton_command:command", "imports Triton first"))
    for module in missing:
        monkeypatch.setitem(sys.modules, module, None)  # `import` raises ModuleNotFoundError, find_spec says None
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    result = CliRunner().invoke(main, args)
    assert (result.exit_code, result.output) == (2, line + "\n")
    assert os.listdir(tmp_path / "cwd") == []  # nothing started, nothing written (no jitguard-logs/)


@click.command("crashes")
def _crashing_command() -> None:
    raise RuntimeError("a bug in the command")


@click.command("finds")
def _finding_command() -> None:
    click.get_current_context().exit(1)


def test_a_crash_exits_2_with_its_traceback_never_1(monkeypatch):
    # exit 1 means "findings left" (CI reads it as such): a crash must not look like one
    monkeypatch.setitem(COMMANDS, "crashes", (f"{__name__}:_crashing_command", "raises"))
    monkeypatch.setitem(COMMANDS, "finds", (f"{__name__}:_finding_command", "exits 1"))
    result = CliRunner().invoke(main, ["crashes"])
    assert result.exit_code == 2, result.output
    assert "Traceback" in result.output and "RuntimeError: a bug in the command" in result.output
    assert result.output.rstrip().splitlines()[-1] == (
        "error: jitguard crashes crashed: RuntimeError('a bug in the command') (traceback above)")
    assert CliRunner().invoke(main, ["finds"]).exit_code == 1  # a command's own exit code passes through
