"""Where a kernel maths case runs: the GPU, or the CPU under TRITON_INTERPRET=1.

Maths cases carry the ``interpreter`` marker (registered in tests/conftest.py). tests/run.sh runs
them as a step of their own, ``TRITON_INTERPRET=1 pytest -m interpreter tests/kernels``, each case
shown; in a run without the flag and without a GPU they skip (compiled Triton cannot run on a CPU).
The flag must be in the environment before Triton is imported, hence a separate pytest run.
"""

import os

import pytest
import torch

INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"


def maths_device() -> str:
    """"cuda" on a GPU, "cpu" under TRITON_INTERPRET=1, else the case skips."""
    if torch.cuda.is_available():
        return "cuda"
    if INTERPRETED:
        return "cpu"
    pytest.skip("maths case: runs on a GPU, or on the CPU with TRITON_INTERPRET=1 pytest -m interpreter")
