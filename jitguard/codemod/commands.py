"""The `jitguard fix` and `jitguard scan` click commands (loaded lazily by `jitguard.cli`).

Exit codes, like ruff: 0 nothing to do, 1 pending changes (`--check`/`--diff`) or warnings
found (`scan`), 2 a usage or input error (bad file, unknown kernel, bad report).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

import click

from jitguard.codemod.cross_file_helpers import drop_cross_file_helper_findings
from jitguard.codemod.demotions import (
    NO_REWRITE_REASON,
    AdviceNote,
    Demotion,
    DemotionInputError,
    load_report,
    parse_bucket_option,
    parse_param_option,
    report_kernel_entries,
)
from jitguard.codemod.file_selection import PathInputError as SelectionPathError
from jitguard.codemod.file_selection import is_excluded, select_python_files
from jitguard.codemod.files import default_jobs, map_files, progress_for
from jitguard.codemod.scan import RULES, FileScan, scan_source, scan_task
from jitguard.codemod.scan_config import (
    ConfigError,
    ScanSettings,
    check_codes,
    enabled_rules,
    find_pyproject,
    ignored_for_file,
    load_settings,
)
from jitguard.codemod.scan_output import (
    OUTPUT_FORMATS,
    ScanResult,
    render_github,
    render_json,
    render_junit,
    render_sarif,
    text_line,
    use_color,
)
from jitguard.render_text import escape_controls


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _echo_err(message: str) -> None:
    click.echo(escape_controls(message), err=True)  # paths and kernel names may hold any character


def _collect_files(paths: tuple[str, ...]) -> list[Path]:
    """The files `fix` works on: scan's selection (excludes, .gitignore, `[tool.jitguard]`)."""
    try:
        settings = _scan_settings(None, (), (), (), (), None, False)
    except ConfigError as exc:
        _echo_err(f"error: {exc}")
        click.get_current_context().exit(2)
    try:
        files = select_python_files(paths, settings.selection)
    except SelectionPathError as exc:
        raise click.UsageError(str(exc)) from None
    if not files:
        _echo_err(f"warning: no Python files found under {', '.join(paths)}")
    return files


def _jobs(value: int | None) -> int:
    return default_jobs() if value is None else max(1, value)


def _describe_notes(notes: list[AdviceNote], skipped_findings: int) -> list[str]:
    lines = []
    for advice, count in sorted(Counter(note.advice for note in notes).items()):
        examples = ", ".join(sorted({f"{n.kernel}:{n.param}" for n in notes if n.advice == advice})[:3])
        lines.append(f"note: {_plural(count, 'parameter')} with advice `{advice}` ({examples}): "
                     f"{NO_REWRITE_REASON[advice]}")
    if skipped_findings:
        lines.append(f"note: {_plural(skipped_findings, 'finding')} carry no rewrite advice and were skipped")
    return lines


@click.command("fix")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--from", "report", type=click.Path(), help="A `jitguard report --json` or `jitguard scan --json` file.")
@click.option("--param", "params", multiple=True, metavar="KERNEL:PARAM[:align]",
              help="Demote PARAM of KERNEL (do_not_specialize; with :align, do_not_specialize_on_alignment).")
@click.option("--bucket", "buckets", multiple=True, metavar="KERNEL:PARAM[=STRATEGY]",
              help="Make KERNEL's autotune jitguard.autotune with PARAM's key values bucketed (pow2, align:N, "
                   "le:[...]; default pow2): one tuning per bucket, not per value.")
@click.option("--diff", "show_diff", is_flag=True, help="Print a unified diff and write nothing.")
@click.option("--check", is_flag=True, help="Write nothing; exit 1 if a file would change.")
@click.option("--accept-cost", is_flag=True,
              help="Also apply demotions the report prices as costly (slower code, fewer variants).")
@click.option("--accept-unknown", is_flag=True,
              help="Also apply demotions whose price is unknown (by default they are listed with the reason).")
@click.option("--price-from", "price_from", multiple=True, type=click.Path(file_okay=False, path_type=str),
              metavar="DIR", help="Also import kernels to price from DIR (repeatable): for a report recorded "
                                  "elsewhere. By default: this environment's import roots and the PATHs fixed.")
@click.option("-j", "--jobs", type=int, default=None, help="Worker processes (default: one per CPU).")
def fix_command(
    paths: tuple[str, ...], report: str | None, params: tuple[str, ...], buckets: tuple[str, ...],
    show_diff: bool, check: bool, accept_cost: bool, accept_unknown: bool, price_from: tuple[str, ...],
    jobs: int | None,
) -> None:
    """Add parameters to do_not_specialize / do_not_specialize_on_alignment of Triton kernels, and
    make an autotune keyed on a count `jitguard.autotune(..., bucket=...)` (--bucket, or the report).

    Edits in place by default, changing only the decorators that need it. A demotion from --from is
    applied when it prices free (`jitguard report --json`); a costly one is skipped with its price and
    the alternative unless --accept-cost, one of unknown price with its reason unless --accept-unknown.
    --param is always applied, its price said. Kernels are imported to price them only from this
    environment's import roots, the PATHs fixed and --price-from, never from the report's folder.

    \b
      jitguard fix --from report.json kernels/
      jitguard fix --param fused_moe_kernel:EM --param fused_moe_kernel:num_valid_tokens --diff src/
      jitguard fix --bucket rms_norm_kernel:num_tokens=pow2 src/
    """
    # libcst loads here, not at import: `jitguard scan` (a pre-commit hook) starts faster without it.
    from jitguard.codemod.demotion_prices import PricePolicy, price_requests
    from jitguard.codemod.file_writes import WriteReport, other_hard_links, write_refusal
    from jitguard.codemod.fix_tree import fix_paths, unified_diff, write_changes

    started = time.perf_counter()
    demotions: list[Demotion] = []
    notes: list[AdviceNote] = []
    entries: dict = {}
    skipped = 0
    try:
        demotions += [parse_param_option(text) for text in params]
        demotions += [parse_bucket_option(text) for text in buckets]
        if report is not None:
            from_report, notes = load_report(report)
            demotions += from_report
            entries = report_kernel_entries(report)
            skipped = _count_adviceless_findings(report)
    except DemotionInputError as exc:
        raise click.UsageError(str(exc)) from None
    if report is None and not params and not buckets:
        raise click.UsageError("nothing to do: give --from REPORT, --param KERNEL:PARAM or --bucket KERNEL:PARAM")
    files = _collect_files(paths)
    priced = price_requests(
        demotions, entries, PricePolicy(accept_cost, accept_unknown, writing=not (show_diff or check)),
        files=files, price_from=price_from,
        data_dirs=[os.path.dirname(os.path.abspath(report))] if report else [],
        on_compile=lambda: _echo_err("[jitguard] pricing the demotions the report left unpriced: each kernel "
                                     "compiled with and without (sm_90)"),
    )
    run = fix_paths(files, priced.apply, _jobs(jobs), progress_for("Fixing", len(files)), held=priced.held)
    writing = not (show_diff or check)
    # --check/--diff write nothing, but a pending change to a file fix could not write is said, not hidden.
    unwritable = {} if writing else {result.path: reason for result in run.results
                                     if result.changed and (reason := write_refusal(result.path))}
    for result in run.results:
        if show_diff and result.changed:
            click.echo(unified_diff(result), nl=False)
    written: set[Path] | None = None  # files actually replaced (None: nothing is written in this mode)
    write_report: WriteReport | None = None
    if writing:
        write_report = write_changes(run)
        written = set(write_report.written)
        run.errors += [f"{path}: {reason}" for path, reason in write_report.failed]
    changes = [(path, change) for path, change in run.changes if written is None or path in written]
    for path, change in changes:
        if not show_diff:
            verb = "" if writing else "would add "
            added = "; ".join(f"autotune -> jitguard.autotune, bucket += {', '.join(names)}" if option == "bucket"
                              else f"{option} += {', '.join(names)}" for option, names in change.added.items())
            click.echo(escape_controls(f"{path}:{change.line}: {change.label}: {verb}{added}"))
    for line in run.warnings:
        _echo_err(f"warning: {line}")
    for path, reason in unwritable.items():
        _echo_err(f"warning: {path}: {reason}; would change but cannot be written")
    # A rewrite replaces the name, not the file: other hard links (a package manager's cache) keep the old text.
    links_left = write_report.links_left if write_report else [
        (result.path, links) for result in run.results
        if result.changed and result.path not in unwritable and (links := other_hard_links(result.path))]
    for path, links in links_left:
        keep = "keeps" if links == 1 else "keep"
        _echo_err(f"note: {path}: its {_plural(links, 'other hard link')} {keep if writing else 'would keep'} "
                  f"the old text (fix {'wrote' if writing else 'writes'} a new file under this name only)")
    for line in priced.lines:
        _echo_err(line)
    for line in _describe_notes(notes, skipped):
        _echo_err(line)
    for demotion in demotions:
        if demotion.advice == "int64":
            _echo_err(f"note: {demotion.kernel}:{demotion.param} took values of 2**31 or more: besides "
                      f"do_not_specialize, annotate it `{demotion.param}: tl.int64` (fix edits decorators only)")
    for line in run.errors:
        _echo_err(f"error: {line}")
    changed_files = len(written) if written is not None else sum(1 for result in run.results if result.changed)
    kernels = len(changes)
    fixable = [(path, change) for path, change in changes if path not in unwritable]
    parameters = sum(len(names) for _, change in fixable for names in change.added.values())
    elapsed = time.perf_counter() - started
    if fixable:
        verb = "Fixed" if writing else "Would fix"
        summary = (f"{verb} {_plural(len(fixable), 'kernel')} in {_plural(changed_files - len(unwritable), 'file')} "
                   f"({_plural(parameters, 'parameter')})")
    elif unwritable:
        summary = "Nothing fix could write"
    else:
        summary = "Nothing to fix" if not (write_report and write_report.failed) else "Nothing written"
    if unwritable:
        summary += f"; {_plural(len(unwritable), 'file')} would change but cannot be written"
    summary += f"; {_plural(run.files_checked, 'file')} checked in {elapsed:.1f} s"
    if priced.skipped:
        summary += f"; {_plural(priced.skipped, 'costly demotion')} skipped"
    if priced.skipped_unknown:
        summary += f"; {_plural(priced.skipped_unknown, 'unpriced demotion')} skipped"
    if run.errors:
        summary += f"; {_plural(len(run.errors), 'error')}"
    if write_report is not None and write_report.stopped_by is not None:
        for line in write_report.stop_lines():
            _echo_err(line)
        _echo_err(f"{summary}.")
        click.get_current_context().exit(128 + write_report.stopped_by)
    _echo_err(summary + ".")
    if run.errors:
        click.get_current_context().exit(2)
    if kernels and not writing:
        click.get_current_context().exit(1)


def _count_adviceless_findings(report: str) -> int:
    try:
        data = json.loads(Path(report).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return 0
    findings = data.get("findings") if isinstance(data, dict) else None
    if not isinstance(findings, list):
        return 0
    return sum(1 for finding in findings if isinstance(finding, dict) and finding.get("advice") is None)


def _codes(values: tuple[str, ...]) -> list[str]:
    """`--select A,B --select C` -> [A, B, C]."""
    return [code.strip() for value in values for code in value.split(",") if code.strip()]


def _scan_settings(config: str | None, exclude: tuple[str, ...], extend_exclude: tuple[str, ...],
                   select: tuple[str, ...], ignore: tuple[str, ...], respect_gitignore: bool | None,
                   force_exclude: bool) -> ScanSettings:
    """`[tool.jitguard]` (from --config, else the nearest pyproject.toml) with the command line over it."""
    pyproject = Path(config) if config else find_pyproject(Path.cwd())
    if config and not Path(config).is_file():
        raise ConfigError(f"{config}: no such file")
    settings = load_settings(pyproject, RULES)
    selection = settings.selection
    if pyproject is None:
        selection = replace(selection, root=Path.cwd())
    if exclude:
        selection = replace(selection, exclude=tuple(_codes(exclude)))
    if extend_exclude:
        selection = replace(selection, extend_exclude=selection.extend_exclude + tuple(_codes(extend_exclude)))
    if respect_gitignore is not None:
        selection = replace(selection, respect_gitignore=respect_gitignore)
    if force_exclude:
        selection = replace(selection, force_exclude=True)
    cli_select = check_codes(_codes(select), RULES, "--select")
    cli_ignore = check_codes(_codes(ignore), RULES, "--ignore")
    chosen = cli_select or settings.select
    ignored = tuple(code for code in settings.ignore if code not in cli_select) + cli_ignore
    return replace(settings, selection=selection, select=chosen, ignore=ignored)


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("jitguard")
    except Exception:  # a missing distribution must not stop a scan
        return "0"


@click.command("scan")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--output-format", type=click.Choice(OUTPUT_FORMATS), default=None,
              help="text (default), json, github (Actions annotations), sarif, junit.")
@click.option("--json", "as_json", is_flag=True, help="Same as --output-format json.")
@click.option("--all", "show_all", is_flag=True, help="Also list info findings (JG102, JG106) in text output.")
@click.option("--select", multiple=True, metavar="CODES",
              help="Only these rules (ids or prefixes, comma-separated; ALL).")
@click.option("--ignore", multiple=True, metavar="CODES", help="Skip these rules (ids or prefixes, comma-separated).")
@click.option("--exclude", multiple=True, metavar="PATTERNS",
              help="Glob patterns to skip, replacing the default list (.git, .venv, build, ...).")
@click.option("--extend-exclude", multiple=True, metavar="PATTERNS",
              help="Glob patterns to skip, besides the defaults.")
@click.option("--respect-gitignore/--no-respect-gitignore", default=None,
              help="Skip files .gitignore ignores (default on).")
@click.option("--force-exclude", is_flag=True,
              help="Apply excludes to files named on the command line too (pre-commit).")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when warnings are found (2 still means a bad file).")
@click.option("-q", "--quiet", is_flag=True, help="Print findings and errors only: no summary.")
@click.option("--stdin-filename", metavar="PATH",
              help="The name to report (and match per-file-ignores) for `-` (stdin).")
@click.option("--config", metavar="PYPROJECT",
              help="Read [tool.jitguard] from this file (default: nearest pyproject.toml).")
@click.option("-j", "--jobs", type=int, default=None, help="Worker processes (default: one per CPU).")
def scan_command(
    paths: tuple[str, ...], output_format: str | None, as_json: bool, show_all: bool, select: tuple[str, ...],
    ignore: tuple[str, ...], exclude: tuple[str, ...], extend_exclude: tuple[str, ...],
    respect_gitignore: bool | None, force_exclude: bool, exit_zero: bool, quiet: bool, stdin_filename: str | None,
    config: str | None, jobs: int | None,
) -> None:
    """Find recompile risks in Triton kernels, without running them (default PATH: `.`).

    Exit 1 when a warning is found (info findings do not count; --exit-zero: 0), 2 when a file
    cannot be read or parsed, or a setting is wrong. Settings: [tool.jitguard] in pyproject.toml
    (exclude, extend-exclude, select, ignore, per-file-ignores, respect-gitignore, force-exclude).
    Silence a finding with `# jitguard: ignore` or `# jitguard: ignore[JG101]` on the parameter's
    line, the `def` line or a decorator line.

    \b
    Rules:
      JG101 token-count-specialized        (warning) int token/batch count not demoted
      JG102 size-specialized               (info)    model-dimension int used as a size
      JG103 runtime-size-constexpr         (warning) tl.constexpr named like a token count
      JG104 unknown-name-in-demotion-list  (warning) do_not_specialize names no parameter
      JG105 constexpr-in-demotion-list     (warning) do_not_specialize lists a tl.constexpr
      JG106 derived-stride-specialized     (info)    stride derived from a demoted count
      JG107 runtime-bound-specialized      (warning) int bounding a mask/loop not demoted
      JG108 heuristic-from-count           (warning) @triton.heuristics constexpr from a count
      JG109 autotune-key-count             (warning) autotune key holds a count: re-tunes
    """
    started = time.perf_counter()
    context = click.get_current_context()
    if as_json and output_format not in (None, "json"):
        raise click.UsageError("--json is --output-format json; give one of them")
    output_format = "json" if as_json else (output_format or "text")
    try:
        settings = _scan_settings(config, exclude, extend_exclude, select, ignore, respect_gitignore, force_exclude)
    except ConfigError as exc:
        _echo_err(f"error: {exc}")
        context.exit(2)
    enabled = enabled_rules(RULES, settings.select, settings.ignore)

    def rules_for(file: Path | str) -> frozenset[str]:
        return enabled - set(enabled_rules(RULES, ignored_for_file(file, settings) or ("-",), ()))

    if "-" in paths:
        if len(paths) > 1:
            raise click.UsageError("`-` (stdin) cannot be combined with other paths")
        display = stdin_filename or "-"
        files: list[Path] = []
        if (stdin_filename and settings.selection.force_exclude
                and is_excluded(Path(stdin_filename), settings.selection)):
            scans = []
        else:
            scans = [_scan_stdin(sys.stdin.buffer.read(), display, rules_for(display))]
        file_count = len(scans)
    else:
        try:
            files = select_python_files(paths, settings.selection)
        except SelectionPathError as exc:
            raise click.UsageError(str(exc)) from None
        if not files and not quiet:
            _echo_err(f"warning: no Python files found under {', '.join(paths) or '.'}")
        tasks = [(path, rules_for(path), None) for path in files]
        scans = list(map_files(scan_task, tasks, _jobs(jobs), progress_for("Scanning", len(files))))
        # A jit function another scanned file's kernels call is a device helper there.
        scans = drop_cross_file_helper_findings(scans)
        file_count = len(files)
    findings = sorted((f for scan in scans for f in scan.findings), key=lambda f: (f.file, f.line, f.column))
    errors = [(scan.path, scan.error) for scan in scans if scan.error]
    warnings = [finding for finding in findings if finding.severity == "warning"]
    kernels = sum(scan.kernels for scan in scans)
    result = ScanResult(findings, errors, file_count, kernels)
    show_info = show_all or bool(select)
    if output_format == "text":
        color = use_color(sys.stdout, dict(os.environ))
        for finding in findings:
            if finding.severity == "warning" or show_info:
                click.echo(text_line(finding, color), color=color)
    else:
        rendered = {"json": render_json, "github": render_github, "junit": render_junit,
                    "sarif": lambda r: render_sarif(r, _version())}[output_format](result)
        if rendered:
            click.echo(rendered)
    if output_format != "github":
        for path, message in errors:
            _echo_err(f"error: {path}: {message}")
    if not quiet:
        _echo_err(_scan_summary(result, warnings, time.perf_counter() - started,
                                hint=not show_info and output_format == "text"))
    if errors:
        context.exit(2)
    if warnings and not exit_zero:
        context.exit(1)


def _scan_stdin(data: bytes, display: str, enabled: frozenset[str]) -> FileScan:
    try:
        findings, kernels = scan_source(data, display, enabled)
    except SyntaxError as exc:
        return FileScan(display, [], 0, f"syntax error at line {exc.lineno}: {exc.msg}")
    except (ValueError, RecursionError, UnicodeDecodeError) as exc:
        return FileScan(display, [], 0, f"cannot parse: {exc}")
    return FileScan(display, findings, kernels)


def _scan_summary(result: ScanResult, warnings: list, elapsed: float, hint: bool) -> str:
    infos = len(result.findings) - len(warnings)
    by_rule = ", ".join(f"{rule} {count}" for rule, count in sorted(Counter(f.rule for f in result.findings).items()))
    summary = (f"{_plural(len(warnings), 'warning')}, {infos} info in {_plural(result.kernels, 'kernel')}; "
               f"{_plural(result.files, 'file')} scanned in {elapsed:.1f} s")
    if by_rule:
        summary += f" ({by_rule})"
    if infos and hint:
        summary += "; --all lists the info findings"
    if result.errors:
        summary += f"; {_plural(len(result.errors), 'error')}"
    return summary + "."
