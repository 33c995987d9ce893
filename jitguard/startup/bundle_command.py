"""`jitguard bundle PLAN_OR_REPORT -o FILE`: compile every planned variant for a target and pack the cache
entries into one file (jitguard/startup/bundle_build.py); `jitguard bundle --show FILE` prints its manifest."""

from __future__ import annotations

import json
import sys

import click


def _plan_from(path: str) -> dict:
    from jitguard.startup.plan import PlanInputError, build_plan, load_plan

    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, json.JSONDecodeError) as exc:
        raise click.UsageError(f"{path}: not a readable JSON plan or report ({exc})") from exc
    try:
        return load_plan(data) if isinstance(data, dict) and "jitguard_warmup_plan" in data else build_plan(data)
    except (PlanInputError, ValueError) as exc:
        raise click.UsageError(f"{path}: {exc}") from exc


@click.command("bundle")
@click.argument("source", type=click.Path(exists=True, dir_okay=False, path_type=str))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=str), default=None,
              help="The bundle file to write (default: SOURCE with .bundle.tgz).")
@click.option("--arch", type=int, default=90, show_default=True, help="CUDA arch to compile for (offline).")
@click.option("--on-gpu", is_flag=True, help="Compile on this machine's GPU instead of offline.")
@click.option("--python", "python", default=None, metavar="PYTHON",
              help="Interpreter to build with: the servers' Python with their Triton wheel (default: this one).")
def bundle_command(source: str, output: str | None, arch: int, on_gpu: bool, python: str | None) -> None:
    """Compile a warm-up plan's (or a report's) variants and pack Triton's cache entries into one file.

    Load it with `jitguard.warmup(plan, bundle=FILE)`, `jitguard run --bundle FILE -- ...`, or
    JITGUARD_BUNDLE=FILE. A bundle is code: load only bundles you built or trust as you trust the kernels.
    """
    from jitguard.startup.bundle_build import BundleBuildError, build_bundle

    plan = _plan_from(source)
    target = output or (source.rsplit(".", 1)[0] + ".bundle.tgz")
    try:
        result = build_bundle(plan, target, arch=arch, offline=not on_gpu, python=python)
    except BundleBuildError as exc:
        click.echo(f"jitguard bundle: {exc}", err=True)
        sys.exit(1)
    click.echo(result.summary())
    sys.exit(1 if result.failures else 0)
