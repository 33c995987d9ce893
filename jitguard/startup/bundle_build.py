"""`build_bundle(plan, output)`: compile every variant of a warm-up plan for a target and pack exactly the
Triton cache entries they need into one file (see bundle_format.py), with a manifest that says what they
were built for.

The variants compile in a child process with an empty `TRITON_CACHE_DIR` of its own, so the cache holds
exactly what the plan needs: under `jitguard.offline(arch)` on a CPU machine (the real compiler, for a
target the machine does not have), or on the GPU it runs on. The child is `python` (default: this
interpreter): Triton keys its cache on its own build (`triton_key()` differs between the wheels of one
Triton version built for different Pythons) and its host-side C modules on the Python ABI, so build with
the interpreter and Triton wheel the servers run. The child also builds Triton's host-side modules
(`cuda_utils`; before Triton 3.9 one `__triton_launcher` per kernel signature), linked against a stub
`libcuda.so.1` when there is no GPU. An autotuned kernel's chosen configs are packed when Triton cached
them on a GPU; offline choices are not measurements and are left out.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any

from jitguard.runtime.bundle_format import FORMAT, entry_kind, read_cache_entries, write_bundle
from jitguard.startup.plan import load_plan


class BundleBuildError(RuntimeError):
    """The bundle could not be built (the child failed, or it compiled nothing); the message says why."""


@dataclass
class BuildResult:
    """What `build_bundle` packed: kernel entries, host-module entries, and the variants it could not build."""

    path: str
    kernel_entries: int = 0
    host_module_entries: int = 0
    failures: list[str] = field(default_factory=list)
    manifest: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> str:
        line = (f"[jitguard] bundle {self.path}: {self.kernel_entries} kernel entries, {self.host_module_entries} "
                f"host module(s), Triton {self.manifest['triton']['version']}, {_target_text(self.manifest)}, "
                f"Python {self.manifest['python']['cache_tag']}")
        return line + "".join(f"\n[jitguard] bundle: not built: {f}" for f in self.failures)


def _target_text(manifest: dict[str, Any]) -> str:
    target = manifest.get("target") or {}
    return f"{target.get('backend')} arch {target.get('arch')} warp {target.get('warp_size')}"


def build_bundle(plan: dict[str, Any] | str | os.PathLike, output: str | os.PathLike, arch: int = 90,
                 offline: bool = True, python: str | None = None, timeout: float | None = None,
                 env: dict[str, str] | None = None) -> BuildResult:
    """Compile `plan` (a warm-up plan or its JSON file) for sm_`arch` in a child process and write the bundle.

    `env`: variables set for the compiling child, such as the servers' Triton knobs (those in the cache key
    must be the servers' values, or their entries are skipped at install, naming the knob)."""
    data = load_plan(plan)
    work = tempfile.mkdtemp(prefix="jitguard-bundle-")
    try:
        plan_path = os.path.join(work, "plan.json")
        with open(plan_path, "w") as f:
            json.dump(data, f)
        cache_dir, facts_path = os.path.join(work, "cache"), os.path.join(work, "facts.json")
        os.makedirs(cache_dir)
        _run_child(python or sys.executable, [plan_path, facts_path, str(arch), "1" if offline else "0", work],
                   cache_dir, timeout, env or {})
        with open(facts_path) as f:
            facts = json.load(f)
        entries = read_cache_entries(cache_dir, skip_kinds=("autotune",) if offline else ())
        failures = facts["failures"] + facts["host_module_problems"]
        if not any(entry_kind(list(files)) == "kernel" for files in entries.values()):
            raise BundleBuildError(f"bundle {output}: not written, the plan compiled no kernel; "
                                   + "; ".join(failures[:3]))
        manifest = _manifest(facts, offline)
        write_bundle(os.fspath(output), manifest, entries)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    kinds = [e["kind"] for e in manifest["entries"].values()]
    return BuildResult(path=os.fspath(output), kernel_entries=kinds.count("kernel"),
                       host_module_entries=kinds.count("host_module"), failures=failures, manifest=manifest)


def _run_child(python: str, args: list[str], cache_dir: str, timeout: float | None, extra: dict[str, str]) -> None:
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {k: v for k, v in os.environ.items() if not k.startswith("JITGUARD") and k != "TRITON_CACHE_MANAGER"}
    env.update(extra)
    env.update(TRITON_CACHE_DIR=cache_dir, PYTHONPATH=os.pathsep.join(
        p for p in (package_root, os.environ.get("PYTHONPATH", "")) if p))
    done = subprocess.run([python, "-m", "jitguard.startup.bundle_build", *args], env=env, capture_output=True,
                          text=True, timeout=timeout)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise BundleBuildError(f"building the bundle with {python} failed (exit {done.returncode}): {tail[0]}")


def _manifest(facts: dict[str, Any], offline: bool) -> dict[str, Any]:
    entries: dict[str, Any] = {}
    for kernel in facts["kernels"]:
        for entry in kernel["entries"]:
            entries[entry] = {"kernel": kernel["kernel"]}
    return {"format": FORMAT, "triton": facts["triton"], "python": facts["python"], "target": facts["target"],
            "compiler": facts["compiler"], "env": facts["env"], "kernels": facts["kernels"],
            "built": {"offline": offline, "autotune_choices": "left out: offline choices are not measured"
                      if offline else "packed where Triton cached them"},
            "entries": entries}


# --- the child process ------------------------------------------------------------------------------


def _stub_libcuda(work: str) -> str:
    """A `libcuda.so.1` with no symbols, for linking host modules that bind to the real driver where they load."""
    stub_dir = os.path.join(work, "libcuda-stub")
    os.makedirs(stub_dir, exist_ok=True)
    source = os.path.join(stub_dir, "stub.c")
    with open(source, "w") as f:
        f.write("int jitguard_libcuda_stub;\n")
    compiler = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc") or "cc"
    for name in ("libcuda.so.1", "libcuda.so"):  # Triton links `-l:libcuda.so.1` (3.3+) or `-lcuda` (3.2)
        subprocess.run([compiler, "-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", "-o", os.path.join(stub_dir, name),
                        source], check=True, capture_output=True)
    return stub_dir


def _compile_plan(plan_path: str, arch: int, offline: bool) -> tuple[dict[str, Any], list[str]]:
    import contextlib

    import jitguard
    from jitguard.startup.replay import warmup

    context = jitguard.offline(arch=arch, compile=True) if offline else contextlib.nullcontext()
    with context:
        result = warmup(plan_path, quiet=True, stream=sys.stderr)
    failures = [f"{o.label} ({o.describe}): {o.reason}" for o in result.failures] + result.pretune_failures
    return load_plan(plan_path), failures


def _child_main(plan_path: str, facts_path: str, arch: int, offline: bool, work: str) -> None:
    from jitguard import triton_cache, triton_compat
    from jitguard.render_text import kernel_label
    from jitguard.replay.kernel_loading import resolve_kernel

    plan, failures = _compile_plan(plan_path, arch, offline)
    kernels, compiled_all = [], []
    for entry in plan["kernels"]:
        try:
            jit_fn = resolve_kernel(entry)
        except LookupError:
            continue  # named among the warm-up failures
        compiled = triton_cache.compiled_kernels(jit_fn)
        compiled_all += compiled
        variants = {triton_cache.cache_entry_name(k.hash): triton_compat.key_string(key)
                    for cache in triton_compat.all_kernel_caches(jit_fn) for key, k in cache.items()
                    if hasattr(k, "hash")}
        kernels.append({"kernel": kernel_label(entry), "module": entry.get("module", ""),
                        "binding": entry.get("binding", ""), "source_hash": triton_cache.kernel_source_hash(jit_fn),
                        "entries": sorted(variants), "specializations": variants})
    problems = triton_cache.build_cuda_host_modules(compiled_all, _stub_libcuda(work) if offline else None)
    target = compiled_all[0].metadata.target if compiled_all else None
    target_facts = {"backend": target.backend, "arch": target.arch, "warp_size": target.warp_size} if target else {}
    facts = {"triton": {"version": _triton_version(), "build_key_sha256": _sha(triton_cache.triton_build_key())},
             "python": triton_cache.host_platform(), "target": target_facts,
             "compiler": {"backend_key": triton_cache.backend_key(target.backend, target.arch, target.warp_size)
                          if target else ""},
             "env": triton_cache.cache_key_env(), "kernels": kernels, "failures": failures,
             "host_module_problems": problems}
    with open(facts_path, "w") as f:
        json.dump(facts, f)


def _sha(text: str) -> str:
    import hashlib
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _triton_version() -> str:
    import triton
    return str(triton.__version__)


if __name__ == "__main__":
    _plan, _facts, _arch, _offline, _work = sys.argv[1:6]
    _child_main(_plan, _facts, int(_arch), _offline == "1", _work)
