"""`jitguard bundle PLAN_OR_REPORT -o FILE`: compile every planned variant for a target and pack the cache
entries into one file (jitguard/startup/bundle_build.py); `jitguard bundle --show FILE` prints its manifest."""

from __future__ import annotations

import json
import sys
import tarfile

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
@click.option("--push", is_flag=True,
              help="Then push the bundle's entries into Triton's remote cache (Redis at TRITON_REDIS_HOST/PORT); "
                   "SOURCE may be a bundle already built.")
def bundle_command(source: str, output: str | None, arch: int, on_gpu: bool, python: str | None, push: bool) -> None:
    """Compile a warm-up plan's (or a report's) variants and pack Triton's cache entries into one file.

    Load it with `jitguard.warmup(plan, bundle=FILE)`, `jitguard run --bundle FILE -- ...`, or
    JITGUARD_BUNDLE=FILE; or `--push` it into Triton's remote cache for a fleet. A bundle is code: load
    only bundles you built or trust as you trust the kernels.
    """
    from jitguard.startup.bundle_build import BundleBuildError, build_bundle

    failed = False
    if push and tarfile.is_tarfile(source):
        target = source
    else:
        plan = _plan_from(source)
        target = output or (source.rsplit(".", 1)[0] + ".bundle.tgz")
        try:
            result = build_bundle(plan, target, arch=arch, offline=not on_gpu, python=python)
        except BundleBuildError as exc:
            click.echo(f"jitguard bundle: {exc}", err=True)
            sys.exit(1)
        click.echo(result.summary())
        failed = bool(result.failures)
    if push:
        failed = _push(target) or failed
    sys.exit(1 if failed else 0)


def _push(path: str) -> bool:
    """Push `path` into Triton's remote cache; True when an entry was skipped or the push failed."""
    from jitguard.runtime.bundle_format import BundleError
    from jitguard.runtime.bundle_remote import push_bundle

    try:
        pushed = push_bundle(path)
    except (BundleError, OSError, ImportError) as exc:
        click.echo(f"jitguard bundle --push: {exc}", err=True)
        return True
    except Exception as exc:  # the remote store's own errors (connection refused, ...) in one line
        click.echo(f"jitguard bundle --push: {path}: {type(exc).__name__}: {exc}", err=True)
        return True
    for line in pushed.skipped:
        click.echo(f"[jitguard] bundle: {line}", err=True)
    click.echo(f"[jitguard] bundle {path}: {len(pushed.installed)} entries pushed to Triton's remote cache, "
               f"{pushed.skipped_entries} skipped")
    return bool(pushed.skipped)
