"""The public API never changes under the user: every name of `jitguard.__all__` works whatever
jitguard submodule was imported first, before or after `import triton`, under `jitguard run` or not.

Each order runs in a fresh interpreter: it imports the submodules in that order, then calls every
public name (the first calls, `set_process_info` / `install` / `mark_serving`, come before the
program itself imports Triton) and prints what each call did.
"""

from __future__ import annotations

import json
import os
import pkgutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import jitguard
from jitguard.launcher import BOOTSTRAP_DIR, child_environment

REPO = Path(__file__).resolve().parents[2]

# The kernel is made inside a function and kept under another name, so a child process could not
# import it by name: the failing no_recompiles block below prices its advice as "unknown" at once
# instead of compiling it twice in a child (4 s per interpreter; the prices have tests of their own).
KERNELS = textwrap.dedent("""
    import triton, triton.language as tl


    def _make():
        @triton.jit
        def api_kernel(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
        return api_kernel


    made_kernel = _make()
""")

# The bootstrap's sitecustomize runs by path at interpreter start (importing it by name would run
# the user's own sitecustomize); `__main__` is the CLI.
NOT_IMPORTED_BY_NAME = {"jitguard.__main__", "jitguard.runtime.bootstrap.sitecustomize"}


def submodules() -> list[str]:
    names = [m.name for m in pkgutil.walk_packages(jitguard.__path__, "jitguard.")]
    return sorted(n for n in names if n not in NOT_IMPORTED_BY_NAME)


def test_no_public_name_is_also_a_submodule_name() -> None:
    children = {name.split(".")[1] for name in submodules()}
    assert {"runtime", "startup", "guard"} <= children  # the walk found the tree
    assert children & set(jitguard.__all__) == set()


EXERCISE = textwrap.dedent('''
    import io, json, sys, types, warnings
    import jitguard

    results = {}

    def check(name, use):
        value = getattr(jitguard, name)
        assert not isinstance(value, types.ModuleType), f"jitguard.{name} is a module"
        results[name] = use(value)

    def running():
        return sys.modules["jitguard.runtime.monitor"].current()

    # Before the program imports Triton (jitguard may import it itself).
    check("set_process_info", lambda f: (f(role="api-test"), running().role)[1])
    check("install", lambda f: f(summary=False) is running())
    check("mark_serving", lambda f: (f(), running().phase)[1])
    check("mark_warmup", lambda f: (f(), running().phase)[1])
    from jitguard import triton_compat
    state = {"env_offline_driver": type(triton_compat.get_active_driver_raw()).__name__ == "OfflineCudaDriver",
             "one_monitor": running()._previous.get("post_compile") is None}

    import torch
    from api_kernels import made_kernel as api_kernel

    def launch(n, block=16):
        api_kernel[(1,)](torch.zeros(64), n, BLOCK=block)

    def watched(watch):
        with jitguard.offline(compile=False), watch() as rec:
            launch(3)
        return rec.variants("api_kernel")

    def guarded(no_recompiles):
        try:
            with jitguard.offline(compile=False), no_recompiles(warmup=1):
                launch(16)
                launch(17)
        except jitguard.RecompileError as exc:
            return str(exc).splitlines()[0]
        return "did not raise"

    def swept(sweep):
        with jitguard.offline(compile=False):
            return sweep(launch, [1, 16, 17]).variants("api_kernel")

    def capped(assert_max_variants):
        with jitguard.offline(compile=False):
            table = jitguard.sweep(launch, [1, 16, 17])
        try:
            assert_max_variants(table, "api_kernel", 1)
        except jitguard.RecompileError as exc:
            return str(exc).splitlines()[0]
        return "did not raise"

    def warmed(warmup):
        from jitguard.startup.plan import build_plan
        from jitguard import triton_compat
        with jitguard.offline(compile=False), jitguard.watch() as rec:
            launch(5, block=32)
        for cache in triton_compat.all_kernel_caches(api_kernel):
            cache.clear()
        with jitguard.offline(compile=False):
            result = warmup(build_plan(rec), stream=io.StringIO())
        return [o.status for o in result.outcomes]

    check("watch", watched)

    def bucketed(autotune):
        import triton
        with jitguard.offline(compile=False):
            tuner = autotune([triton.Config({"BLOCK": 16})], key=["n"], bucket={"n": "pow2"})(api_kernel)
        return tuner.jitguard_bucket

    check("autotune", bucketed)
    def driver_of(offline):
        with offline(compile=False) as driver:
            return type(driver).__name__

    check("offline", driver_of)
    check("no_recompiles", guarded)
    check("sweep", swept)
    check("assert_max_variants", capped)
    check("warmup", warmed)
    check("Recorder", lambda c: c().events)
    check("RecompileError", lambda c: issubclass(c, AssertionError))
    check("RecompileWarning", lambda c: issubclass(c, UserWarning))
    check("CompileEvent", lambda c: c(kernel="k").kernel)
    check("ParamSpec", lambda c: c("int", "i32", "div16").spec)
    check("explain_recompile", lambda f: [(c.param, c.before, c.after) for c in f(
        {"n": jitguard.ParamSpec("int", "i32", "plain")}, {},
        [({"n": jitguard.ParamSpec("int", "i32", "div16")}, {})])])
    check("__version__", lambda v: isinstance(v, str))
    check("uninstall", lambda f: (f(), running())[1])
    missing = set(jitguard.__all__) - set(results)
    assert not missing, missing
    print("STATE " + json.dumps(state))
    print("RESULTS " + json.dumps(results))
''')

EXPECTED = {
    "set_process_info": "api-test", "install": True, "mark_serving": "serving", "mark_warmup": "warmup",
    "watch": 1, "offline": "OfflineCudaDriver",
    "no_recompiles": ("Expected no new Triton variants after warm-up (the first call of each kernel), "
                      "but 1 was compiled:"),
    "sweep": 3,
    "assert_max_variants": "Expected at most 1 variant of api_kernel over the sweep of 3 values, but 3 were compiled:",
    "warmup": ["compiled"], "Recorder": [], "RecompileError": True, "RecompileWarning": True, "CompileEvent": "k",
    "ParamSpec": "div16", "explain_recompile": [["n", "int32 divisible by 16", "int32 not divisible by 16"]],
    "__version__": True,
    "uninstall": None, "autotune": {"n": "pow2"},
}

ORDERS = {
    "nothing imported first": [],
    "every submodule first": submodules(),
    "every submodule first, reversed": submodules()[::-1],
    "the bootstrap's order": ["jitguard.runtime.offline_backend", "jitguard.runtime.monitor"],
    "the pytest plugin's order": [
        "jitguard.guard.pytest_plugin", "jitguard.runtime.offline_backend", "jitguard.guard.recompile_guard"],
}


@pytest.mark.parametrize("under_run", [False, True], ids=["plain python", "under jitguard run"])
@pytest.mark.parametrize("order", list(ORDERS))
def test_every_public_name_works_whatever_was_imported_first(order: str, under_run: bool, tmp_path: Path) -> None:
    prelude = "".join(f"import {name}\n" for name in ORDERS[order])
    env = dict(os.environ)
    for name in ("JITGUARD", "JITGUARD_DIR", "JITGUARD_OFFLINE", "JITGUARD_MODE"):
        env.pop(name, None)
    if under_run:
        env = child_environment(str(tmp_path / "logs"), "log", "sm90", base=env)
        env["PYTHONPATH"] = os.pathsep.join([BOOTSTRAP_DIR, str(tmp_path), str(REPO)])
    else:
        env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(REPO)])
    (tmp_path / "api_kernels.py").write_text(KERNELS)
    env["TRITON_CACHE_DIR"] = str(tmp_path / "triton-cache")
    proc = subprocess.run([sys.executable, "-c", prelude + EXERCISE], env=env, capture_output=True, text=True,
                          timeout=240, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.split("RESULTS ", 1)[1])
    assert results == EXPECTED
    # Under `jitguard run --offline` the run's own start-up happened too (JITGUARD_OFFLINE's driver), once.
    state = json.loads(proc.stdout.split("STATE ", 1)[1].splitlines()[0])
    assert state == {"env_offline_driver": under_run, "one_monitor": True}
    assert "[jitguard] could not" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    if under_run:
        records = [json.loads(line) for path in (tmp_path / "logs").glob("*.ndjson")
                   for line in path.read_text().splitlines()]
        assert any(r["type"] == "process" and r.get("role") == "api-test" for r in records)
