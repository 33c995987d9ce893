"""A small multi-process program for tests/tool/test_run_multiproc.py, run under `jitguard run --offline`.

    python tests/multiproc_program.py MANIFEST_DIR

The parent compiles a tiny kernel for a few token counts, then starts: two multiprocessing spawn
children, a fork child, a forkserver child, a torch.multiprocessing.spawn worker (when torch
imports), a `subprocess` child, a helper that never imports Triton, and a spawn child that the parent SIGKILLs after it
compiled. Every process that compiles
first writes MANIFEST_DIR/<role>.json: its pid and the (kernel, token count) calls it makes, and,
for the fork child, the calls whose compiled variants it inherits from the parent. The test
derives the expected compiles from those calls. Nothing here imports jitguard: the bootstrap does.

Kernel arguments use a small stand-in for a tensor (Triton keys a pointer only on its dtype and
data_ptr() % 16), so the processes skip importing torch and stay fast.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time


class DevicePointer:
    """What Triton needs of a tensor argument: a dtype and an address."""

    def __init__(self, address: int = 1 << 20, dtype: str = "float32") -> None:
        self.address = address
        self.dtype = dtype

    def data_ptr(self) -> int:
        return self.address


_KERNELS: dict = {}


def _kernels():  # type: ignore[no-untyped-def]
    # Defined once per process: Triton's in-memory cache belongs to each JITFunction object.
    if _KERNELS:
        return _KERNELS
    global triton, tl  # module globals: Triton 3.2 resolves a kernel's names there, not in a closure
    import triton
    import triton.language as tl

    @triton.jit
    def scale_tokens(x_ptr, num_tokens, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        mask = offs < num_tokens
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)

    @triton.jit
    def shift_tokens(x_ptr, num_tokens, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        mask = offs < num_tokens
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)

    _KERNELS.update(scale_tokens=scale_tokens, shift_tokens=shift_tokens)
    return _KERNELS


def write_manifest(manifest_dir: str, role: str, calls: list, inherited: list | None = None) -> None:
    """Record this process's pid and the calls it is about to make."""
    data = {"role": role, "pid": os.getpid(), "calls": calls, "inherited": inherited or []}
    path = os.path.join(manifest_dir, f"{role}.json")
    with open(path + ".tmp", "w") as handle:
        json.dump(data, handle)
    os.replace(path + ".tmp", path)


def make_calls(calls: list) -> None:
    """Launch each (kernel name, token count) once."""
    kernels = _kernels()
    x = DevicePointer()
    for name, num_tokens in calls:
        kernels[name][(1,)](x, num_tokens, BLOCK=32)


def child(manifest_dir: str, role: str, calls: list, inherited: list | None = None) -> None:
    """A child that compiles: manifest first, then the calls."""
    write_manifest(manifest_dir, role, calls, inherited)
    make_calls(calls)


def torch_child(index: int, manifest_dir: str, calls: list) -> None:
    """A torch.multiprocessing.spawn worker (its entry point takes the worker index first)."""
    child(manifest_dir, f"torch-spawn-{index}", calls)


def doomed_child(manifest_dir: str, calls: list) -> None:
    """Compiles, says so, then waits to be SIGKILLed by the parent."""
    write_manifest(manifest_dir, "killed", calls)
    make_calls(calls)
    with open(os.path.join(manifest_dir, "killed.ready"), "w") as handle:
        handle.write("compiled")
    time.sleep(120)


def _wait_for(path: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} did not appear")
        time.sleep(0.02)


def main(manifest_dir: str) -> int:
    parent_calls = [["scale_tokens", 1], ["scale_tokens", 16], ["scale_tokens", 48], ["scale_tokens", 17]]
    write_manifest(manifest_dir, "parent", parent_calls)
    make_calls(parent_calls)

    spawn = multiprocessing.get_context("spawn")
    workers = [
        spawn.Process(target=child, args=(manifest_dir, "spawn-a", [["scale_tokens", 7], ["scale_tokens", 64]])),
        spawn.Process(target=child, args=(manifest_dir, "spawn-b",
                                          [["scale_tokens", 1], ["shift_tokens", 3], ["shift_tokens", 33]])),
        # Forked after the parent compiled: the parent's variants are already in its cache.
        multiprocessing.get_context("fork").Process(
            target=child, args=(manifest_dir, "fork", [["scale_tokens", 32], ["scale_tokens", 5],
                                                       ["shift_tokens", 1]], parent_calls)),
        multiprocessing.get_context("forkserver").Process(
            target=child, args=(manifest_dir, "forkserver", [["shift_tokens", 80], ["shift_tokens", 9]])),
    ]
    for worker in workers:
        worker.start()

    torch_workers = None
    try:
        import torch.multiprocessing as torch_mp
    except ImportError:  # torch is optional here: the test expects a torch child only when it imports
        torch_mp = None
    if torch_mp is not None:
        torch_workers = torch_mp.spawn(torch_child, args=(manifest_dir, [["shift_tokens", 4], ["shift_tokens", 20]]),
                                       nprocs=1, join=False)

    doomed = spawn.Process(target=doomed_child, args=(manifest_dir, [["shift_tokens", 2], ["shift_tokens", 96]]))
    doomed.start()

    sub_calls = [["scale_tokens", 1], ["scale_tokens", 2]]
    script = ("import sys; sys.path.insert(0, sys.argv[1]); import multiproc_program as p; "
              "p.child(sys.argv[2], 'subprocess', __import__('json').loads(sys.argv[3]))")
    subprocess.run([sys.executable, "-c", script, os.path.dirname(os.path.abspath(__file__)), manifest_dir,
                    json.dumps(sub_calls)], check=True)
    # A helper that never imports Triton: it must leave no log.
    helper = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], check=True,
                            capture_output=True, text=True)
    with open(os.path.join(manifest_dir, "helper.pid"), "w") as handle:
        handle.write(helper.stdout.strip())

    _wait_for(os.path.join(manifest_dir, "killed.ready"))
    os.kill(doomed.pid, signal.SIGKILL)
    doomed.join()
    if torch_workers is not None:
        torch_workers.join()
    for worker in workers:
        worker.join()
        if worker.exitcode != 0:
            print(f"worker {worker.name} exited with {worker.exitcode}", file=sys.stderr)
            return 1
    return 0 if doomed.exitcode == -signal.SIGKILL else 1


if __name__ == "__main__":
    os.makedirs(sys.argv[1], exist_ok=True)  # the README runs it with a fresh MANIFEST_DIR
    sys.exit(main(sys.argv[1]))
