"""Test session set-up: a fresh Triton cache per session, so compiles are real compiles, and a
price cache of the run's own."""

import os
import shutil
import tempfile

import pytest

# Set before Triton reads it; every test session compiles from a cold disk cache.
os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="jitguard-triton-cache-")
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # silences Triton 3.9's fp-fusion notice
# One price cache per test run, never the user's: made by the run's first process (xdist's
# controller, or a plain run) and inherited by its workers and the pytest runs they start, so a
# demotion that many tests' failing guards advise is priced in one child process, not in each.
_PRICE_CACHE_MADE_HERE = None
if "PYTEST_XDIST_WORKER" not in os.environ:
    _PRICE_CACHE_MADE_HERE = os.environ["JITGUARD_CACHE_DIR"] = tempfile.mkdtemp(prefix="jitguard-test-cache-")


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pytest_configure(config):
    # pyproject.toml's markers list belongs to packaging; this one belongs to the kernel tests.
    config.addinivalue_line(
        "markers",
        "interpreter: kernel maths case; runs on a GPU, or on the CPU under TRITON_INTERPRET=1 "
        "(tests/run.sh: TRITON_INTERPRET=1 pytest -m interpreter tests/kernels), else skips",
    )


def pytest_collection_modifyitems(config, items):
    if _cuda_available():
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)


def pytest_unconfigure(config):
    if _PRICE_CACHE_MADE_HERE:
        shutil.rmtree(_PRICE_CACHE_MADE_HERE, ignore_errors=True)
