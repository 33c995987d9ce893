"""jitguard's pytest plugin (registered by the `pytest11` entry point). Work in progress (issue 5)."""

from __future__ import annotations


def pytest_configure(config) -> None:  # noqa: ANN001
    config.addinivalue_line("markers", "no_recompiles(warmup=1, kernels=None): fail the test when a kernel "
                            "compiles a new variant after its warm-up calls")
