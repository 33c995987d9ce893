"""`jitguard report DIR [--json|--markdown] [--html FILE]`: merge per-process logs into one report."""

from __future__ import annotations

import json
import sys

import click

from jitguard.report import ReportInputError, build_report, format_markdown, format_text


def write_html_report(report: dict, path: str) -> None:
    """Write the self-contained HTML page for `report` to `path` (see jitguard.report_html)."""
    from jitguard.report_html import render_html
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(render_html(report))


@click.command("report")
@click.argument("path", type=click.Path(path_type=str))
@click.option("--json", "as_json", is_flag=True, help="Print the merged report as JSON (what `jitguard fix --from` reads).")
@click.option("--markdown", "as_markdown", is_flag=True, help="Print the report as markdown tables.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False, writable=True, path_type=str), default=None,
              help="Also write a self-contained HTML page (timeline and tables) to FILE.")
def report_command(path: str, as_json: bool, as_markdown: bool, html_path: str | None) -> None:
    """Merge every *.ndjson log in PATH (a directory, or one file) and print the report.

    Per kernel: variants per process and rank, compile ms by phase, every cause with counts, and
    the fix. Per process: pid, role, rank, argv and compiles. A truncated line (a process killed
    while writing) is skipped and counted.
    """
    if as_json and as_markdown:
        raise click.UsageError("choose one of --json and --markdown")
    try:
        report = build_report(path)
    except ReportInputError as exc:
        click.echo(f"jitguard report: {exc}", err=True)
        sys.exit(2)
    if html_path:
        try:
            write_html_report(report, html_path)
        except OSError as exc:
            click.echo(f"jitguard report: {html_path}: cannot write ({exc.strerror or exc})", err=True)
            sys.exit(2)
    if as_json:
        # Strict JSON: the loader lets no NaN/Infinity through; allow_nan=False makes that a promise.
        click.echo(json.dumps(report, indent=2, default=repr, allow_nan=False))
    elif as_markdown:
        click.echo(format_markdown(report), nl=False)
    else:
        click.echo(format_text(report), nl=False)
        if html_path:
            click.echo(f"[jitguard] wrote {html_path}")
    if as_json or as_markdown:
        for entry in report["unreadable_files"]:
            click.echo(f"jitguard report: could not read {entry['file']} ({entry['error']})", err=True)
        if report["skipped_lines"]:
            first = report["skipped"][0]
            click.echo(f"jitguard report: skipped {report['skipped_lines']} unreadable line(s), the first "
                       f"{first['file']}:{first['line']}: {first['reason']}", err=True)
