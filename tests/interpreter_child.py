"""Running a test module's maths cases once more under TRITON_INTERPRET=1, in a child pytest.

The flag must be set before Triton is imported, so the cases run in a child process; in the
child, `maths_device` picks the CPU, in a GPU session the GPU, and otherwise skips (the parent's
`run_under_interpreter` test runs them).
"""

import os
import subprocess
import sys

import pytest
import torch

INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"


def maths_device(in_child: bool) -> str:
    """Where a maths case runs: "cuda", "cpu" inside the interpreter child, else the case skips."""
    if torch.cuda.is_available():
        return "cuda"
    if in_child and INTERPRETED:
        return "cpu"
    pytest.skip("runs on a GPU, or on the CPU via test_math_under_interpreter")


def run_under_interpreter(test_file: str, child_flag: str, *pytest_args: str) -> str:
    """Run `test_file` in a child pytest with TRITON_INTERPRET=1 and `child_flag`=1; returns its output's tail.

    Fails the calling test, with that tail, when the child fails.
    """
    env = dict(os.environ, TRITON_INTERPRET="1", **{child_flag: "1"})
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-p", "no:xdist", *pytest_args,
         test_file],
        env=env, capture_output=True, text=True, timeout=600,
    )
    tail = (proc.stdout + proc.stderr)[-4000:]
    assert proc.returncode == 0, tail
    return tail
