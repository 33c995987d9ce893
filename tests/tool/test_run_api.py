"""The public API in processes started by `jitguard run` (the bootstrap environment), whatever the
log directory's state and whatever was imported first."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from jitguard.launcher import BOOTSTRAP_DIR, child_environment
from tests.tool.test_run_launcher import TINY_KERNEL

REPO = Path(__file__).resolve().parents[2]

# test_run_launcher's tiny kernel, plus a launcher the bootstrapped processes call.
KERNEL = TINY_KERNEL + textwrap.dedent("""

    def launch(n):
        tiny_kernel[(1,)](DevicePointer(), n, BLOCK=16)
""")


def run_bootstrapped(tmp_path: Path, body: str, log_dir: str, mode: str = "log") -> subprocess.CompletedProcess:
    """Run `body` as `jitguard run --offline` runs a Python process (bootstrap sitecustomize, JITGUARD_*)."""
    (tmp_path / "tiny_kernels.py").write_text(KERNEL)
    env = child_environment(log_dir, mode, "sm90")
    env["PYTHONPATH"] = os.pathsep.join([BOOTSTRAP_DIR, str(tmp_path), str(REPO)])
    env["TRITON_CACHE_DIR"] = str(tmp_path / "triton-cache")
    return subprocess.run([sys.executable, "-c", textwrap.dedent(body)], env=env, capture_output=True, text=True,
                          timeout=240, cwd=tmp_path)


def test_a_log_dir_that_cannot_be_created_leaves_every_check_working(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    log_dir = str(tmp_path / "a-file" / "logs")
    proc = run_bootstrapped(tmp_path, """
        import jitguard, tiny_kernels
        tiny_kernels.launch(3)
        try:
            with jitguard.no_recompiles(warmup=0, isolate=False):
                tiny_kernels.launch(16)
        except jitguard.RecompileError:
            print("no_recompiles raised")
        jitguard.mark_serving()
        try:
            tiny_kernels.launch(1)
        except jitguard.RecompileError:
            print("mode error raised")
    """, log_dir, mode="error")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:2] == ["no_recompiles raised", "mode error raised"]
    assert "could not start the monitor" not in proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if "cannot write the compile log" in line]
    assert len(warnings) == 1 and log_dir in warnings[0] and "Not a directory" in warnings[0]
    assert "recompile tiny_kernel#2" in proc.stderr  # the per-recompile line still comes out
    assert "3 compile event(s) of pid" in proc.stderr and f"could not be written to {log_dir}" in proc.stderr
