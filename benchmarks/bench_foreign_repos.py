"""jitguard on Triton kernel libraries from PyPI that this repository did not write: scan, run, fix.

For each pinned library this script, working only under the folder it is given:

1. installs the pinned wheel (``pip install --no-deps --target``) and the few packages it needs to
   import into folders of its own there, put first on PYTHONPATH; torch, Triton and jitguard come from
   the interpreter running this script, whose environment is left as it was;
2. counts the kernels present with its own ``ast`` walk (a function decorated with ``triton.jit``, ``jit``,
   ``gluon.jit``, or passed to one by assignment), independent of jitguard's scanner, and
   runs ``jitguard scan --json`` on the package (kernels found, findings by rule);
3. on a fresh copy, runs a driver that calls the library's own Python wrappers over token counts
   1, 2, 3, 8, 16, 17, 31, 64, 100, 128, 257 under ``jitguard run --offline`` (real sm_90 compiles on the
   CPU), writes the report, applies ``jitguard fix --from report.json`` and runs the driver again;
4. on another fresh copy, applies ``jitguard scan --json`` then ``jitguard fix --from scan.json`` and runs
   the driver again;
5. prints, per library, the counts, the findings by rule, the variants per launched kernel before and
   after each route, and every demotion each ``fix`` applied or skipped with its price, as markdown.

The drivers below are this script's own code (calls of the libraries' public wrappers); no library
code is copied into this repository.

Usage: python benchmarks/bench_foreign_repos.py WORKDIR [--only NAME ...] [--json FILE]
(run it with the interpreter of an environment that has torch, Triton and jitguard; PyPI reachable).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

TOKENS = (1, 2, 3, 8, 16, 17, 31, 64, 100, 128, 257)


@dataclass(frozen=True)
class Library:
    """One PyPI kernel library: its pin, its import packages, what it needs to import, and a driver."""

    name: str
    requirement: str
    packages: tuple[str, ...]
    needs: tuple[str, ...]
    driver: str
    note: str = ""


DRIVER_HEAD = f"import torch\nTOKENS = {TOKENS!r}\n"

LIBRARIES = (
    Library(
        "cut-cross-entropy",
        "cut-cross-entropy==25.1.1",
        ("cut_cross_entropy",),
        (),
        """
from cut_cross_entropy import linear_cross_entropy
classifier = torch.randn(1000, 256, dtype=torch.bfloat16)
for t in TOKENS:
    embeddings = torch.randn(t, 256, dtype=torch.bfloat16)
    linear_cross_entropy(embeddings, classifier, torch.randint(0, 1000, (t,)), impl="cce")
""",
    ),
    Library(
        "cuda-triton-multiarch",
        "cuda-triton-multiarch==0.1.3",
        ("kernels",),
        (),
        """
from kernels.flash_attention import flash_attention_triton
from kernels.swiglu import swiglu_triton
for t in TOKENS:
    swiglu_triton(torch.randn(t, 4096, dtype=torch.float16), torch.randn(t, 4096, dtype=torch.float16))
    q = torch.randn(t, 64, dtype=torch.float16)
    flash_attention_triton(q, q.clone(), q.clone())
""",
    ),
    Library(
        "adasplash",
        "adasplash==0.2.2",
        ("adasplash",),
        (),
        """
from adasplash import adasplash_no_block_mask
for t in TOKENS:
    q = torch.randn(1, 4, t, 64, dtype=torch.float16)
    lengths = torch.tensor([t], dtype=torch.int32)
    adasplash_no_block_mask(q, q.clone(), q.clone(), alpha=1.5, is_causal=True, varlen=lengths)
""",
    ),
    Library(
        "conch-triton-kernels",
        "conch-triton-kernels==1.3",
        ("conch",),
        (),
        """
from conch.ops.activation.silu_and_mul import silu_and_mul
from conch.ops.normalization.rms_norm import rms_norm
weight = torch.randn(4096, dtype=torch.bfloat16)
for t in TOKENS:
    x = torch.randn(t, 4096, dtype=torch.bfloat16)
    rms_norm(x, weight, 1e-6)
    silu_and_mul(torch.randn(t, 2 * 4096, dtype=torch.bfloat16))
""",
    ),
    Library(
        "dsalt",
        "dsalt==1.0.0",
        ("dsalt",),
        ("packaging",),
        """
from dsalt.kernels.cross_entropy import LigerFusedLinearCrossEntropyFunction
weight = torch.randn(1000, 256, dtype=torch.float32)
for t in TOKENS:
    x = torch.randn(t, 256, dtype=torch.float32)
    LigerFusedLinearCrossEntropyFunction.apply(x, weight, torch.randint(0, 1000, (t,)))
""",
    ),
    Library(
        "crossentropy-triton",
        "crossentropy-triton==0.1.2",
        ("crossentropy_triton",),
        (),
        """
import triton
from crossentropy_triton import CrossEntropyFunction
from crossentropy_triton.crossentropy_tl import cross_entropy_kernel, element_mul_kernel
for t in TOKENS:
    logits = torch.randn(1, t + 1, 1000)
    try:
        CrossEntropyFunction.apply(logits, torch.randint(0, 1000, (1, t + 1)))
    except RuntimeError:  # the wrapper refuses CPU tensors: launch as it does, with its arguments
        flat, labels = logits[0, :-1].contiguous(), torch.randint(0, 1000, (t,))
        loss = torch.zeros(t)
        block = min(32768, triton.next_power_of_2(1000))
        cross_entropy_kernel[(t,)](X_ptr=flat, X_stride=flat.stride(-2), Y_ptr=labels, Y_stride=labels.stride(-1),
                                   loss_ptr=loss, loss_stride=loss.stride(-1), n_cols=1000,
                                   n_non_ignore=int((labels != -100).sum()), ignore_index=-100,
                                   BLOCK_SIZE=block, num_warps=32)
        element_mul_kernel[(t,)](flat, flat.stride(-2), torch.tensor(0.5), 1000, BLOCK_SIZE=block, num_warps=32)
""",
    ),
)


def _is_jit(node: ast.expr) -> bool:
    """``jit``, ``triton.jit``, ``gluon.jit``, called or not (not another compiler's ``tilelang.jit``)."""
    target = ast.unparse(node.func if isinstance(node, ast.Call) else node)
    return target == "jit" or target.endswith(("triton.jit", "gluon.jit"))


def jit_functions(root: Path) -> int:
    """Functions under ``root`` made Triton kernels, counted without jitguard: a decorator whose last dotted
    name is ``jit``, or an assignment ``name = <...>.jit(name)`` of a function defined in the same module."""
    found = 0
    for path in root.rglob("*.py"):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except SyntaxError:
            continue
        defined = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        decorated = [n for n in defined if any(_is_jit(d) for d in n.decorator_list)]
        wrapped = {
            node.args[0].id for node in ast.walk(tree)
            if isinstance(node, ast.Call) and _is_jit(node.func) and node.args and isinstance(node.args[0], ast.Name)
        } & ({n.name for n in defined} - {n.name for n in decorated})
        found += len(decorated) + len(wrapped)
    return found


def sh(args: list[str], cwd: Path, env: dict[str, str], timeout: int = 1800) -> subprocess.CompletedProcess[str]:
    """Run a command, capturing its text output; never raises on a non-zero exit."""
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)


def install(lib: Library, target: Path, deps: Path) -> None:
    """The pinned wheel unpacked into ``target`` (no dependencies), what it needs to import into ``deps``."""
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target"]
    if not target.exists():
        subprocess.run([*pip, str(target), lib.requirement], check=True)
    if lib.needs and not deps.exists():
        subprocess.run([*pip, str(deps), *lib.needs], check=True)


def fresh_copy(source: Path, dest: Path, lib: Library) -> Path:
    """The library's import packages copied into ``dest`` (emptied first)."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    for package in lib.packages:
        shutil.copytree(source / package, dest / package)
    return dest


@dataclass
class RouteResult:
    """Variants per launched kernel after one route, and what its ``fix`` printed."""

    variants: dict[str, int] = field(default_factory=dict)
    fix_output: str = ""
    run_error: str = ""


def environment(root: Path) -> dict[str, str]:
    """This process's environment with the library copy ``root`` and its dependencies first on PYTHONPATH."""
    return {**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{root.parent / 'deps'}", "TRITON_DEFAULT_FP_FUSION": "1"}


def run_driver(lib: Library, root: Path, bin_dir: Path, logs: Path) -> tuple[dict[str, int], dict, str]:
    """The driver under ``jitguard run --offline`` with ``root`` first on PYTHONPATH: variants per kernel."""
    env = environment(root)
    driver = root.parent / f"drive_{root.name}.py"
    driver.write_text(DRIVER_HEAD + lib.driver)
    shutil.rmtree(logs, ignore_errors=True)
    jitguard = str(bin_dir / "jitguard")
    ran = sh([jitguard, "run", "--offline", "--dir", str(logs), "--", str(bin_dir / "python"), str(driver)],
             root, env)
    raised = [line for line in ran.stderr.splitlines() if re.match(r"^[\w.]*(Error|Exception)\b", line)]
    error = raised[-1] if raised else ""
    report = sh([jitguard, "report", str(logs), "--json"], root, env)
    data = json.loads(report.stdout) if report.stdout.strip() else {"kernels": []}
    return {k["name"]: k["variants"] for k in data["kernels"]}, data, error


JITGUARD_LINE = re.compile(r"^(skipped|note|error|warning|Fixed|Nothing|Would|\[jitguard\])\b|^\S+\.py:\d+: ")


def fix(root: Path, source: Path, bin_dir: Path) -> str:
    """``jitguard fix --from SOURCE`` on ``root``, with ``root`` on PYTHONPATH: its own lines (standard output,
    then standard error); other lines (a compiler's IR dumps) are counted, not kept."""
    env = environment(root)
    done = sh([str(bin_dir / "jitguard"), "fix", "--from", str(source), "."], root, env)
    lines = [*done.stdout.splitlines(), *done.stderr.splitlines()]
    kept = [line for line in lines if JITGUARD_LINE.match(line)]
    left_out = len([line for line in lines if line.strip()]) - len(kept)
    return "\n".join(kept) + (f"\n({left_out} other lines of output left out)" if left_out else "")


def evaluate(lib: Library, work: Path, bin_dir: Path) -> dict:
    """Counts, scan findings and both routes' variants for one library."""
    base = work / lib.name
    site = base / "site"
    install(lib, site, base / "deps")
    present = sum(jit_functions(site / p) for p in lib.packages)
    scan_root = fresh_copy(site, base / "scanned", lib)
    scanned = sh([str(bin_dir / "jitguard"), "scan", "--json", "--all", "."], scan_root, dict(os.environ))
    scan = json.loads(scanned.stdout)
    findings = scan["findings"]
    by_rule = Counter(f["rule"] for f in findings)
    kernels_found = scan["kernels"]

    runtime_root = fresh_copy(site, base / "runtime_route", lib)
    before, report, error = run_driver(lib, runtime_root, bin_dir, base / "logs_before")
    (base / "report.json").write_text(json.dumps(report))
    fixed_by_report = fix(runtime_root, base / "report.json", bin_dir)
    after_report, _, _ = run_driver(lib, runtime_root, bin_dir, base / "logs_after_report")

    static_root = fresh_copy(site, base / "scan_route", lib)
    (base / "scan.json").write_text(scanned.stdout)
    fixed_by_scan = fix(static_root, base / "scan.json", bin_dir)
    after_scan, _, _ = run_driver(lib, static_root, bin_dir, base / "logs_after_scan")
    prices = {
        f"{k['name']}.{p}": v["cost"]
        for k in report["kernels"] for p, v in k.get("params", {}).items() if v.get("cost")
    }
    return {
        "library": lib.requirement, "present": present, "kernels_found": kernels_found,
        "findings_by_rule": dict(sorted(by_rule.items())), "findings": findings,
        "variants_before": before, "variants_after_report": after_report, "variants_after_scan": after_scan,
        "run_error": error, "report_prices": prices,
        "fix_from_report": fixed_by_report, "fix_from_scan": fixed_by_scan,
    }


def markdown(result: dict) -> str:
    """One library's tables and fix outputs, as markdown."""
    rules = ", ".join(f"{rule} {n}" for rule, n in result["findings_by_rule"].items()) or "none"
    lines = [
        f"### {result['library']}", "",
        f"Kernels present (ast walk): {result['present']}; found by `jitguard scan`: {result['kernels_found']}; "
        f"findings by rule (`--all`): {rules}.", "",
    ]
    if result["run_error"]:
        lines += [f"Driver stopped: `{result['run_error']}`", ""]
    lines += ["| kernel | variants before | after `fix --from report.json` | after `fix --from scan.json` |",
              "|---|---|---|---|"]
    for kernel, n in sorted(result["variants_before"].items()):
        lines.append(f"| {kernel} | {n} | {result['variants_after_report'].get(kernel, '-')} | "
                     f"{result['variants_after_scan'].get(kernel, '-')} |")
    lines.append("")
    for param, cost in sorted(result["report_prices"].items()):
        lines.append(f"- report price `{param}`: {cost['verdict']} ({cost.get('detail', '')})")
    for route in ("fix_from_report", "fix_from_scan"):
        lines += ["", f"`{route.replace('_', ' ').replace('from ', '--from ')}` printed:", "```",
                  result[route] or "(nothing)", "```"]
    return "\n".join(lines) + "\n"


def versions(bin_dir: Path) -> str:
    """The date and the versions this run measured (jitguard's commit when it runs from a checkout)."""
    import torch
    import triton

    import jitguard

    checkout = Path(jitguard.__file__).resolve().parents[1]
    commit = sh(["git", "rev-parse", "--short", "HEAD"], checkout, dict(os.environ)).stdout.strip()
    return (f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; torch {torch.__version__}, Triton "
            f"{triton.__version__}, jitguard {commit or 'installed'} ({bin_dir / 'jitguard'}); offline sm_90\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workdir", type=Path, help="folder for the installs, the copies and the logs")
    parser.add_argument("--only", nargs="*", help="library names (default: all)")
    parser.add_argument("--json", type=Path, help="also write every result (findings included) here")
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    bin_dir = Path(sys.executable).parent
    print(versions(bin_dir), flush=True)
    results = []
    for lib in LIBRARIES:
        if args.only and lib.name not in args.only:
            continue
        started = time.monotonic()
        result = evaluate(lib, args.workdir.resolve(), bin_dir)
        result["seconds"] = round(time.monotonic() - started, 1)
        results.append(result)
        print(markdown(result), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
