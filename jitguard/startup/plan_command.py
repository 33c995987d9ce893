"""`jitguard warmup-plan REPORT -o plan.json`: the command that writes a warm-up plan."""

from __future__ import annotations

import json
import sys

import click

from jitguard.render_text import kernel_label
from jitguard.report.output_file import write_output_file
from jitguard.startup.plan import PlanInputError, build_plan

LEFT_OUT_WHY = {
    "inductor": "torch.compile's generated kernels: torch makes them itself when the compiled function first "
                "runs; warm it up by calling it at start-up",
    "compile": "direct triton.compile calls: no @triton.jit function to replay",
}


def _say_left_out(left_out: dict[str, list[str]]) -> None:
    for origin, names in left_out.items():
        why = LEFT_OUT_WHY.get(origin, f"origin {origin!r}: not replayable")
        click.echo(f"  not in the plan: {len(names)} kernel(s) from {why}", err=True)


@click.command("warmup-plan")
@click.argument("reports", nargs=-1, required=True, type=click.Path(path_type=str), metavar="REPORT...")
@click.option("-o", "--output", "output", type=click.Path(dir_okay=False, path_type=str), default="warmup-plan.json",
              show_default=True, help="Where to write the plan (JSON); '-' prints it.")
def warmup_plan_command(reports: tuple[str, ...], output: str) -> None:
    """Turn REPORT (a directory of NDJSON logs, or a `jitguard report --json` file) into a warm-up
    plan that `jitguard.warmup(plan)` replays at start-up.

    Several REPORTs (each node's log directory, a glob, an @FILE listing paths) give one plan that
    covers every variant any of them compiled.
    """
    report = reports[0] if len(reports) == 1 else " ".join(reports)
    try:
        plan = build_plan(reports[0] if len(reports) == 1 else list(reports))
    except PlanInputError as exc:
        click.echo(f"jitguard warmup-plan: {exc}", err=True)
        sys.exit(2)
    _say_left_out(plan.get("left_out") or {})
    if not plan["kernels"]:
        click.echo(f"jitguard warmup-plan: {report}: no compiles recorded, nothing to plan", err=True)
        sys.exit(2)
    try:
        text = json.dumps(plan, indent=1, default=repr, allow_nan=False)  # a plan is strict JSON
    except ValueError as exc:
        click.echo(f"jitguard warmup-plan: {report}: a recorded value is not JSON ({exc})", err=True)
        sys.exit(2)
    if output == "-":
        click.echo(text)
    else:
        try:
            write_output_file(output, text + "\n")
        except OSError as exc:
            click.echo(f"jitguard warmup-plan: {output}: cannot write ({exc.strerror or exc})", err=True)
            sys.exit(2)
    summary_stream_is_err = output == "-"
    for entry in plan["kernels"]:
        bad = [v for v in entry["variants"] if v.get("unrebuildable")]
        note = f", {len(bad)} cannot be rebuilt: {bad[0]['unrebuildable']}" if bad else ""
        click.echo(f"  {kernel_label(entry)} ({entry['module']}): {len(entry['variants'])} variant(s){note}",
                   err=summary_stream_is_err)
    where = "stdout" if output == "-" else output
    click.echo(f"[jitguard] wrote {where}: {len(plan['kernels'])} kernel(s), {plan['variants']} variant(s)",
               err=summary_stream_is_err)
