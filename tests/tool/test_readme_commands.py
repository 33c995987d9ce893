"""The README shows real output: its commands are run here from the checkout and each shown line
must come out of the real run (timings, temp names and pids normalized).

Covered elsewhere: the two commands' install line (tests/tool/test_packaging.py), `bash tests/run.sh`
(CI itself), and `jitguard run ... tests/multiproc_program.py` (tests/tool/test_run_multiproc.py
runs the same program under `jitguard run --offline` and checks every process's compiles).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()
JITGUARD = [sys.executable, "-m", "jitguard"]


def normalized(text: str) -> str:
    """Numbers that change between runs (ms, seconds, pids, temp folder names) as placeholders."""
    text = re.sub(r"jitguard-demo-\w+", "jitguard-demo-X", text)
    text = re.sub(r"\d+(\.\d+)? ms\b", "N ms", text)
    text = re.sub(r"\d+\.\d+( s)?\b", r"N\1", text)
    # the compile ms column of a compile summary row: `  kernel  variants  compile ms  causes  fix`
    text = re.sub(r"^(\s+\w+\s+\d+\s+)\d+(\s{2,}\S)", r"\1N\2", text)
    # a price's detail (instruction and register counts) depends on the Triton version; its verdict does not
    text = re.sub(r"^(\s*price: \w+: \w+) \(.*\)$", r"\1", text)
    return re.sub(r"(?<=\S)\s{2,}", "  ", text)  # table padding follows the widest number


def block_after(marker: str) -> list[str]:
    """The lines of the first fenced block after `marker` in the README."""
    start = README.index(marker)
    fence = README.index("```", start)
    body = README.index("\n", fence) + 1
    return README[body:README.index("```", body)].splitlines()


def lines_from(marker: str) -> list[str]:
    """The README's lines from `marker` (inside a fenced block) to the end of that block."""
    start = README.index(marker)
    return README[start:README.index("```", start)].splitlines()


def run(args: list[str], cwd: Path, env: dict | None = None) -> str:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, TRITON_DEFAULT_FP_FUSION="1", **(env or {})))
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return done.stdout + done.stderr


def assert_shown_lines_are_real(shown: list[str], output: str) -> None:
    real = {normalized(line).rstrip() for line in output.splitlines()}
    for line in shown:
        if not line.strip() or line.startswith("$ ") or line.strip() == "...":
            continue
        assert normalized(line).rstrip() in real, f"README line not in the real output:\n{line}"


def test_the_demo_block_is_what_jitguard_demo_prints() -> None:
    shown = block_after("## What `jitguard demo` prints")
    output = run([*JITGUARD, "demo"], REPO)
    summary = [line for line in shown if line.startswith("     per_token_quant_kernel")]
    assert summary, "the README's demo block lost its summary tables"
    assert_shown_lines_are_real(shown, output)


def test_the_scan_block_is_what_jitguard_scan_prints() -> None:
    shown = lines_from("$ jitguard scan kernels")
    scan_lines = [line for line in shown if line.startswith("kernels/")]
    assert len(scan_lines) >= 3
    output = run([*JITGUARD, "scan", "kernels"], REPO / "examples" / "codemod")
    assert_shown_lines_are_real(scan_lines, output)


@pytest.mark.parametrize("bucketed, counts", [(False, "64 tunings (56 during serving), 2176 configs timed"),
                                              (True, "7 tunings (3 during serving), 238 configs timed")])
def test_the_autotune_storm_counts(tmp_path: Path, bucketed: bool, counts: str) -> None:
    shown = block_after("## Story 5: autotune storms")
    args = [*JITGUARD, "run", "--offline", "--dir", str(tmp_path / "logs"), "--", sys.executable,
            "examples/autotune_storm/storm.py"] + (["--bucketed"] if bucketed else [])
    output = run(args, REPO)
    assert counts in output
    if not bucketed:
        assert_shown_lines_are_real([line for line in shown if line.startswith(("  ", "scale_tokens"))], output)
