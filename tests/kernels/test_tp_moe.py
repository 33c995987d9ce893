"""examples/tp_moe under `jitguard run --offline -- torchrun --nproc-per-node 2`: per-rank reporting.

Two ranks (gloo on CPU with the compile-only sm_90 backend; or, marker `gpu`, NCCL on two GPUs)
each run the MoE layer over its own token-count stream, once with the stock kernels (do_not_specialize lists stripped)
and once with the fixed ones. The merged report (`jitguard report DIR --json`) must put every compile on the right rank
and process, show the stock kernels compiling different variants on the two ranks, and the fixed
kernels compiling the same variant per tile config on both.

Expected stock counts come from Triton's rule for a plain int (FACTS.md 1: classes == 1,
% 16 == 0, other) applied to the token-derived arguments, and from the tile table.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from jitguard.kernels.moe_configs import select_tile_configs

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "examples" / "tp_moe" / "run.py"
STREAMS = {0: [3, 5, 11, 13, 7], 1: [1, 16, 8, 12, 2]}
EXPERTS, TOP_K, WORLD = 4, 2, 2
GEMMS_PER_LAYER = 2  # gate_up and down: one kernel, two constexpr sets
SHAPE_ARGS = ["--hidden", "128", "--intermediate", "128", "--experts", str(EXPERTS), "--top-k", str(TOP_K)]


def int_class(value: int) -> str:
    """Triton's specialization class of a plain int argument."""
    if value == 1:
        return "one"
    return "div16" if value % 16 == 0 else "plain"


def tile_of(num_tokens: int) -> object:
    return select_tile_configs(num_tokens, EXPERTS // WORLD, fp8=False)


def _start_layer(kernels: str, backend: str, logs: Path, cache: Path) -> subprocess.Popen:
    env = dict(os.environ, TRITON_CACHE_DIR=str(cache), OMP_NUM_THREADS="1")
    env.pop("JITGUARD", None)
    offline = []
    if backend == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""  # gloo on CPU even on a GPU host
        offline = ["--offline"]
    # --standalone: torchrun's rendezvous binds a free port itself (two runs at once never clash).
    command = [sys.executable, "-m", "jitguard", "run", "--dir", str(logs), *offline, "--",
               sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(WORLD),
               "--standalone", str(PROGRAM), "--kernels", kernels, *SHAPE_ARGS]
    for rank in range(WORLD):
        command += ["--tokens", ",".join(map(str, STREAMS[rank]))]
    with open(logs.with_suffix(".stdout"), "w") as out, open(logs.with_suffix(".stderr"), "w") as err:
        return subprocess.Popen(command, env=env, stdout=out, stderr=err, cwd=ROOT)


def _finish_layer(started: subprocess.Popen, backend: str, logs: Path) -> dict:
    try:
        started.wait(timeout=300)
    except subprocess.TimeoutExpired:
        started.terminate()  # jitguard run forwards it to torchrun, which stops its ranks
        try:
            started.wait(timeout=20)
        except subprocess.TimeoutExpired:
            started.kill()
            started.wait()
    stdout, stderr = logs.with_suffix(".stdout").read_text(), logs.with_suffix(".stderr").read_text()
    assert started.returncode == 0, stdout[-2000:] + stderr[-4000:]
    assert ("nccl on cuda" if backend == "gpu" else "gloo on cpu") in stdout
    report = subprocess.run([sys.executable, "-m", "jitguard", "report", str(logs), "--json"],
                            capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert report.returncode == 0, report.stderr
    # Each rank prints "[rank R] pid P ..." itself: the ground truth for attribution.
    pids = [[int(r), int(p)] for r, p in re.findall(r"^\[rank (\d+)\] pid (\d+) ", stdout, re.M)]
    return {"stdout": stdout, "stderr": stderr, "report": json.loads(report.stdout), "pid_of_rank": pids}


def _run_both(backend: str, base: Path) -> dict[str, dict]:
    # Both runs at once: their processes spend much of their time waiting on each other's ranks.
    started = {kernels: _start_layer(kernels, backend, base / f"logs-{kernels}", base / "triton-cache")
               for kernels in ("stock", "fixed")}
    try:
        return {kernels: _finish_layer(proc, backend, base / f"logs-{kernels}") for kernels, proc in started.items()}
    finally:
        for proc in started.values():
            if proc.poll() is None:
                proc.terminate()
                proc.wait()


def _session_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.getbasetemp()
    # Under pytest-xdist each worker has its own basetemp; their common parent is this session's.
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="module", params=["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """Both kernel sets on two ranks: gloo + offline backend on CPU, or NCCL on two GPUs."""
    backend = request.param
    if backend == "gpu":
        import torch

        if torch.cuda.device_count() < WORLD:
            pytest.skip(f"needs {WORLD} GPUs, found {torch.cuda.device_count()}")
    shared = _session_dir(tmp_path_factory)
    results = shared / f"tp_moe-{backend}-results.json"
    with open(shared / f"tp_moe-{backend}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the first worker runs the layers; the others read its results
        if not results.exists():
            base = tmp_path_factory.mktemp(f"tp_moe-{backend}")
            results.write_text(json.dumps(_run_both(backend, base)))
    loaded = json.loads(results.read_text())
    for run in loaded.values():
        run["pid_of_rank"] = dict(map(tuple, run["pid_of_rank"]))
    return loaded


def _by_rank(kernel: dict) -> dict[int, dict]:
    return {p["rank"]: p for p in kernel["by_process"]}


def _kernel(report: dict, name: str) -> dict:
    matches = [k for k in report["kernels"] if k["name"] == name]
    assert len(matches) == 1, [k["name"] for k in report["kernels"]]
    return matches[0]


@pytest.mark.parametrize("kernels", ["stock", "fixed"])
def test_every_compile_is_attributed_to_its_rank_and_process(runs: dict, kernels: str) -> None:
    run = runs[kernels]
    report, pid_of_rank = run["report"], run["pid_of_rank"]
    assert sorted(pid_of_rank) == [0, 1], run["stdout"]
    assert "variants per process" in run["stderr"]  # `jitguard run` printed the merged report

    compiling = [p for p in report["processes"] if p["compiles"]]
    assert {p["rank"]: p["pid"] for p in compiling} == pid_of_rank
    assert all("run.py" in " ".join(p["argv"]) for p in compiling)
    assert sum(p["compiles"] for p in compiling) == report["totals"]["compiles"]
    for kernel in report["kernels"]:
        assert {(p["rank"], p["pid"]) for p in kernel["by_process"]} == set(pid_of_rank.items()), kernel["name"]
        assert sum(p["compiles"] for p in kernel["by_process"]) == kernel["compiles"], kernel["name"]


def test_stock_kernels_compile_different_variants_on_ranks_with_different_streams(runs: dict) -> None:
    report = runs["stock"]["report"]
    reduce_ranks = _by_rank(_kernel(report, "moe_topk_reduce_kernel"))
    gemm = _kernel(report, "moe_grouped_gemm_kernel")
    for rank, stream in STREAMS.items():
        # The reduce's only token-derived int is num_tokens; the GEMM's is num_pairs, per tile.
        assert reduce_ranks[rank]["variants"] == len({int_class(m) for m in stream}), rank
        gemm_keys = {(int_class(m * TOP_K), tile_of(m)) for m in stream}
        assert _by_rank(gemm)[rank]["variants"] == GEMMS_PER_LAYER * len(gemm_keys), rank
    assert reduce_ranks[0]["variants"] != reduce_ranks[1]["variants"]
    assert _by_rank(gemm)[0]["variants"] != _by_rank(gemm)[1]["variants"]
    # Across ranks there are more variants than either rank compiled on its own.
    assert gemm["variants"] > min(p["variants"] for p in gemm["by_process"])
    assert gemm["params"]["num_pairs"]["recompiles_caused"] > 0


def test_fixed_kernels_compile_one_variant_per_tile_config_on_both_ranks(runs: dict) -> None:
    report = runs["fixed"]["report"]
    configs = {rank: {tile_of(m) for m in stream} for rank, stream in STREAMS.items()}
    shared = configs[0] & configs[1]
    assert shared  # at least one tile config both ranks use: its keys must be identical across ranks
    # GEMM: one variant per (tile config, use) on each rank; across both ranks, the union of
    # configs, so a config both ranks used compiled the very same key on each.
    gemm_per_rank = {rank: GEMMS_PER_LAYER * len(used) for rank, used in configs.items()}
    gemm_union = GEMMS_PER_LAYER * len(configs[0] | configs[1])
    single = {"moe_topk_reduce_kernel", "_moe_count_kernel", "_moe_block_experts_kernel", "_moe_scatter_kernel"}
    assert {k["name"] for k in report["kernels"]} == single | {"moe_grouped_gemm_kernel"}
    for kernel in report["kernels"]:
        per_rank = {p["rank"]: p["variants"] for p in kernel["by_process"]}
        if kernel["name"] == "moe_grouped_gemm_kernel":
            assert per_rank == gemm_per_rank and kernel["variants"] == gemm_union, (per_rank, kernel["variants"])
        else:  # no tile config: one variant, the same key on both ranks
            assert per_rank == {0: 1, 1: 1} and kernel["variants"] == 1, kernel["name"]
        assert kernel["fix"] is None, (kernel["name"], kernel["fix"])


def test_report_on_stock_kernels_asks_only_for_demotions_the_fixed_kernels_have(runs: dict) -> None:
    from jitguard.kernels import moe_align, moe_chain, moe_gemm  # noqa: F401 - moe_chain loads the rest

    fixed_lists = {}
    for module in (moe_align, moe_gemm):
        for name, kernel in vars(module).items():
            demoted = getattr(kernel, "do_not_specialize", None) or []
            fixed_lists[name] = {e if isinstance(e, str) else kernel.arg_names[e] for e in demoted}
    advised = {k["name"]: {p for p, entry in k["params"].items()
                           if entry["advice"] in ("do_not_specialize", "do_not_specialize_on_alignment")}
               for k in runs["stock"]["report"]["kernels"]}
    assert any(advised.values())
    for name, params in advised.items():
        assert params <= fixed_lists.get(name, set()), name


def _stock_kernels_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("tp_moe_stock_kernels_loader", PROGRAM.with_name("stock_kernels.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


STRIP_CASES = [
    ('@triton.jit(do_not_specialize=["n"])\ndef k(x, n):\n    pass\n',
     "@triton.jit()\ndef k(x, n):\n    pass\n"),
    ('@triton.jit(\n    do_not_specialize=["n", "m"],\n    debug=True,\n)\ndef k(x, n, m):\n    pass\n',
     "@triton.jit(debug=True\n\n\n)\ndef k(x, n, m):\n    pass\n"),
    ('@jit(do_not_specialize_on_alignment=[1], do_not_specialize=["n"])\ndef k(x, n):\n    pass\n',
     "@jit()\ndef k(x, n):\n    pass\n"),
    ('@triton.autotune(configs=[], key=["n"])\n@triton.jit\ndef k(x, n):\n    pass\n',
     '@triton.autotune(configs=[], key=["n"])\n@triton.jit\ndef k(x, n):\n    pass\n'),
    ('@other(do_not_specialize=["n"])\ndef k(x, n):\n    pass\n',
     '@other(do_not_specialize=["n"])\ndef k(x, n):\n    pass\n'),
]


@pytest.mark.parametrize("before,after", STRIP_CASES)
def test_stock_derivation_removes_only_demotion_lists_and_keeps_line_numbers(before: str, after: str) -> None:
    stripped, removed = _stock_kernels_module().strip_demotions(before, "k.py")
    assert stripped == after
    assert stripped.count("\n") == before.count("\n")
    assert len(removed) == before.count("do_not_specialize") - after.count("do_not_specialize")


def test_stock_derivation_names_the_file_it_cannot_parse() -> None:
    module = _stock_kernels_module()
    with pytest.raises(module.StockDerivationError, match=r"^broken\.py:1: cannot parse"):
        module.strip_demotions("def k(:\n", "broken.py")


def test_stock_kernels_are_the_fixed_kernels_without_their_demotions() -> None:
    from jitguard.kernels import moe_gemm

    stock = _stock_kernels_module().load_stock_module("moe_chain")
    stock_gemm = sys.modules[stock.__name__.rsplit(".", 1)[0] + ".moe_gemm"].moe_grouped_gemm_kernel
    fixed_gemm = moe_gemm.moe_grouped_gemm_kernel
    assert fixed_gemm.do_not_specialize and not stock_gemm.do_not_specialize
    assert stock_gemm.fn.__code__.co_filename == fixed_gemm.fn.__code__.co_filename
    assert stock_gemm.fn.__code__.co_firstlineno == fixed_gemm.fn.__code__.co_firstlineno
    assert stock_gemm.src == fixed_gemm.src
