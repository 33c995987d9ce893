"""`jitguard report DIR [--json|--markdown|--html [FILE]] [-o FILE]`: merge per-process logs into one report."""

from __future__ import annotations

import json
import os
import sys

import click

from jitguard.render_text import escape_controls
from jitguard.report.build import ReportInputError, build_report
from jitguard.report.output_file import write_output_file
from jitguard.report.render_tables import format_markdown, format_text

# `--html` given without a FILE: the page is the report's main output (stdout, or -o FILE).
_HTML_AS_OUTPUT = "\0as-output"


def write_html_report(report: dict, path: str) -> None:
    """Write the self-contained HTML page for `report` to `path` (see jitguard.report.render_html)."""
    from jitguard.report.render_html import render_html
    write_output_file(path, render_html(report))


def _write_or_exit(path: str, text: str) -> None:
    try:
        write_output_file(path, text)
    except OSError as exc:
        click.echo(f"jitguard report: {path}: cannot write ({exc.strerror or exc})", err=True)
        sys.exit(2)


def price_demotions(report: dict, stream: object = None, data_dirs: tuple[str, ...] = (),
                    price_from: tuple[str, ...] = ()) -> None:
    """Add each advised demotion's price to `report` (jitguard.price.demotion_cost), saying so on stderr.

    The check compiles each kernel with and without the demotion (offline, sm_90): seconds per
    kernel, never on anyone's request path. Without Triton the report goes out unpriced, saying why.
    Kernels are imported only as `jitguard.replay.kernel_loading` allows: from this environment's
    import roots or a `price_from` folder, never from `data_dirs` (the logs being read).
    """
    def say(line: str) -> None:
        click.echo(escape_controls(line), err=True)  # kernel and module names come from the logs

    if not any(info.get("advice") for k in report["kernels"] for info in (k.get("params") or {}).values()
               if isinstance(info, dict)):
        return
    try:
        import triton  # noqa: F401 - the check compiles

        from jitguard.price.demotion_cost import add_costs_to_report
    except ImportError as exc:
        say(f"[jitguard] demotions not priced: {exc.name or exc} is not installed (pip install 'jitguard[monitor]')")
        return

    def progress(done: int, total: int, kernel: str, param: str) -> None:
        if done == 0:
            say(f"[jitguard] pricing {total} advised demotion(s): each kernel compiled with and without (sm_90)")

    from jitguard.price.demotion_cost import DemotionCostChecker
    from jitguard.replay.kernel_loading import KernelTrust

    checker = DemotionCostChecker(trust=KernelTrust(data_dirs=data_dirs, extra_roots=price_from))
    add_costs_to_report(report, checker=checker, on_progress=progress)


def _log_directories(paths: tuple[str, ...]) -> tuple[str, ...]:
    """The directories of every log the report read (never a source of kernels to import)."""
    from jitguard.report.event_logs import log_files

    files = log_files(paths[0] if len(paths) == 1 else list(paths))
    return tuple(sorted({os.path.dirname(os.path.abspath(path)) for path in files}))


@click.command("report")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=str), metavar="PATH...")
@click.option("--json", "as_json", is_flag=True,
              help="Print the merged report as JSON (what `jitguard fix --from` reads).")
@click.option("--markdown", "as_markdown", is_flag=True, help="Print the report as markdown tables.")
@click.option("--html", "html_path", is_flag=False, flag_value=_HTML_AS_OUTPUT, default=None, metavar="[FILE]",
              help="Also write a self-contained HTML page (timeline and tables) to FILE; without FILE the page "
                   "is the output (stdout, or -o FILE).")
@click.option("-o", "--output", "output", type=click.Path(dir_okay=False, path_type=str), default=None,
              help="Write the report (text, --json, --markdown or a bare --html) to FILE instead of stdout.")
@click.option("--no-cost", "no_cost", is_flag=True,
              help="Do not compile advised demotions both ways to price them (faster; verdicts left out).")
@click.option("--price-from", "price_from", multiple=True, type=click.Path(file_okay=False, path_type=str),
              metavar="DIR", help="Also import kernels to price from DIR (repeatable): for logs recorded "
                                  "elsewhere. By default only this environment's import roots are used.")
def report_command(paths: tuple[str, ...], as_json: bool, as_markdown: bool, html_path: str | None,
                   output: str | None, no_cost: bool, price_from: tuple[str, ...]) -> None:
    """Merge every *.ndjson log in each PATH (a directory, one file, a glob, or @FILE listing such paths one a
    line) and print the report; several nodes' logs make one report with a node column.

    Per kernel: variants per process and rank, compile ms by phase, every cause with counts, and
    the fix. Per process: pid, role, rank, argv and compiles. A line that is not a valid record is
    skipped and named (file:line and why); an unreadable log is named and the others reported.
    """
    html_is_output = html_path == _HTML_AS_OUTPUT
    if sum((as_json, as_markdown, html_is_output)) > 1:
        raise click.UsageError("choose one of --json, --markdown and --html without FILE")
    try:
        report = build_report(paths[0] if len(paths) == 1 else list(paths))
    except ReportInputError as exc:
        click.echo(escape_controls(f"jitguard report: {exc}"), err=True)
        sys.exit(2)
    if not no_cost:
        price_demotions(report, data_dirs=_log_directories(paths),
                        price_from=price_from)
    if html_path and not html_is_output:
        try:
            write_html_report(report, html_path)
        except OSError as exc:
            click.echo(f"jitguard report: {html_path}: cannot write ({exc.strerror or exc})", err=True)
            sys.exit(2)
    if html_is_output:
        from jitguard.report.render_html import render_html
        text = render_html(report)
    elif as_json:
        # Strict JSON: the loader lets no NaN/Infinity through; allow_nan=False makes that a promise.
        text = json.dumps(report, indent=2, default=repr, allow_nan=False) + "\n"
    elif as_markdown:
        text = format_markdown(report)
    else:
        text = format_text(report)
    if output:
        _write_or_exit(output, text)
        click.echo(f"[jitguard] wrote {output}", err=True)
    else:
        click.echo(text, nl=False)
    if html_path and not html_is_output and not (as_json or as_markdown or output):
        click.echo(f"[jitguard] wrote {html_path}")
    elif html_path and not html_is_output:
        click.echo(f"[jitguard] wrote {html_path}", err=True)
    if as_json or as_markdown or html_is_output or output:
        for entry in report["unreadable_files"]:
            click.echo(escape_controls(f"jitguard report: could not read {entry['file']} ({entry['error']})"), err=True)
        if report["skipped_lines"]:
            first = report["skipped"][0]
            click.echo(escape_controls(f"jitguard report: skipped {report['skipped_lines']} unreadable line(s), the "
                                       f"first {first['file']}:{first['line']}: {first['reason']}"), err=True)
