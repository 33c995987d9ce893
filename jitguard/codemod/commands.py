"""The `jitguard fix` and `jitguard scan` click commands (loaded lazily by `jitguard.cli`).

Exit codes, like ruff: 0 nothing to do, 1 pending changes (`--check`/`--diff`), warnings found
(`scan`) or findings left for a hand edit (`fix`), 2 a usage or input error (bad file, unknown
kernel, bad report) or a crash.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import click

from jitguard.codemod.demotions import NO_REWRITE_REASON, AdviceNote, Demotion, DemotionInputError
from jitguard.codemod.file_selection import PathInputError as SelectionPathError
from jitguard.codemod.file_selection import is_excluded, select_python_files
from jitguard.codemod.files import default_jobs, progress_for
from jitguard.codemod.fix_inputs import FixRequests, scan_paths
from jitguard.codemod.scan import RULES, FileScan, scan_source
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


def _collect_files(paths: tuple[str, ...], settings: ScanSettings) -> list[Path]:
    """The files `fix` works on: scan's selection (excludes, .gitignore, `[tool.jitguard]`)."""
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
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--from", "report", type=click.Path(allow_dash=True),
              help="A `jitguard report --json` or `jitguard scan --json` file (`-`: standard input).")
@click.option("--param", "params", multiple=True, metavar="KERNEL:PARAM[:align]",
              help="Demote PARAM of KERNEL (do_not_specialize; with :align, do_not_specialize_on_alignment).")
@click.option("--bucket", "buckets", multiple=True, metavar="KERNEL:PARAM[=STRATEGY]",
              help="Make KERNEL's autotune jitguard.autotune with PARAM's key values bucketed (pow2, align:N, "
                   "le:[...]; default pow2): one tuning per bucket, not per value.")
@click.option("--diff", "show_diff", is_flag=True, help="Print a unified diff and write nothing.")
@click.option("--check", is_flag=True, help="Write nothing; exit 1 if a file would change or a finding is left.")
@click.option("--accept-cost", is_flag=True,
              help="Also apply demotions the report prices as costly (slower code, fewer variants).")
@click.option("--accept-unknown", is_flag=True,
              help="Also apply demotions whose price is unknown (by default they are listed with the reason).")
@click.option("--allow-jitguard-import", is_flag=True,
              help="Also apply the autotune buckets a report or scan advises: the module then imports jitguard.")
@click.option("--price-from", "price_from", multiple=True, type=click.Path(file_okay=False, path_type=str),
              metavar="DIR", help="Also import kernels to price from DIR (repeatable): for a report recorded "
                                  "elsewhere. By default: this environment's import roots and the PATHs fixed.")
@click.option("-j", "--jobs", type=int, default=None, help="Worker processes (default: one per CPU).")
def fix_command(
    paths: tuple[str, ...], report: str | None, params: tuple[str, ...], buckets: tuple[str, ...],
    show_diff: bool, check: bool, accept_cost: bool, accept_unknown: bool, allow_jitguard_import: bool,
    price_from: tuple[str, ...], jobs: int | None,
) -> None:
    """Add parameters to do_not_specialize / do_not_specialize_on_alignment of Triton kernels, and
    make an autotune keyed on a count `jitguard.autotune(..., bucket=...)` (--bucket, or the report).

    With neither --from, --param nor --bucket, scans PATHs (default `.`) and applies the fixes its
    findings ask for, as `ruff check --fix` does. Edits in place by default, changing only the
    decorators that need it. A demotion from --from or a scan is applied when it prices free (a runtime
    report's recorded variants; for a scan, signatures synthesized from the source, each compiled both
    ways); a costly one is skipped with its price and the alternative unless --accept-cost, one of
    unknown price with its reason unless --accept-unknown. --param is always applied, its price said.
    An autotune bucket from --from or a scan makes the module import jitguard: it is listed, with the
    alternative, unless --allow-jitguard-import (--bucket asks for it by name).
    Kernels are imported to price them only from this environment's import roots, the PATHs fixed and
    --price-from, never from the report's folder. Exit 0 when nothing is left, 1 when a file would
    change (--check, --diff) or a finding is left for a hand edit (or, scanning, any warning is left),
    2 for a usage or input error (a bad file, report or --param; a kernel not found) or a crash.

    \b
      jitguard fix kernels/
      jitguard fix --from report.json kernels/
      jitguard scan --json kernels/ | jitguard fix --from - kernels/
      jitguard fix --param fused_moe_kernel:EM --param fused_moe_kernel:num_valid_tokens --diff src/
      jitguard fix --bucket rms_norm_kernel:num_tokens=pow2 src/
    """
    # libcst loads here, not at import: `jitguard scan` (a pre-commit hook) starts faster without it.
    from jitguard.codemod.demotion_prices import PricePolicy, price_requests
    from jitguard.codemod.fix_inputs import hold_buckets
    from jitguard.codemod.fix_tree import fix_paths

    started = time.perf_counter()
    writing = not (show_diff or check)
    requests, files = _fix_requests(paths, report, params, buckets, price_from, jobs)
    kept, held_buckets, bucket_lines = hold_buckets(requests.demotions, allow_jitguard_import)
    priced = price_requests(
        kept, requests.entries, PricePolicy(accept_cost, accept_unknown, writing=writing),
        files=files, price_from=price_from, data_dirs=requests.data_dirs,
        on_compile=lambda: _echo_err("[jitguard] pricing the demotions the report left unpriced: each kernel "
                                     "compiled with and without (sm_90)"),
    )
    run = fix_paths(files, priced.apply, _jobs(jobs), progress_for("Fixing", len(files)),
                    held=[*priced.held, *held_buckets])
    shown = _apply_changes(run, show_diff, writing)
    for line in [*priced.lines, *bucket_lines, *_describe_notes(requests.notes, requests.adviceless)]:
        _echo_err(line)
    _int64_notes(requests.demotions)
    _finish_fix(run, shown, requests, priced, time.perf_counter() - started)


def _fix_requests(paths: tuple[str, ...], report: str | None, params: tuple[str, ...], buckets: tuple[str, ...],
                  price_from: tuple[str, ...], jobs: int | None) -> tuple[FixRequests, list[Path]]:
    """What `fix` is asked (`--param`, `--bucket`, `--from`, else a scan of PATHs), with a scan's demotions
    priced on synthesized signatures, and the files it works on."""
    from jitguard.codemod.fix_inputs import gather_requests, price_scanned, scan_paths, scan_requests

    try:
        requests = gather_requests(report, params, buckets)
    except DemotionInputError as exc:
        raise click.UsageError(str(exc)) from None
    settings = _fix_settings()
    files = _collect_files(paths or (".",), settings)
    if report is None and not params and not buckets:
        enabled = enabled_rules(RULES, settings.select, settings.ignore)
        requests = scan_requests(scan_paths(files, _rules_for(enabled, settings), _jobs(jobs),
                                            progress_for("Scanning", len(files))))
    price_scanned(requests, files, price_from, on_compile=lambda: _echo_err(
        "[jitguard] pricing the scan's demotions on signatures synthesized from the source: each kernel "
        "compiled with and without (sm_90)"), jobs=_jobs(jobs), on_priced=_say_priced)
    return requests, files


def _say_priced(kernel: str, done: int, total: int, demotions: int, seconds: float) -> None:
    _echo_err(f"[jitguard] priced {done}/{total} kernels: {kernel} ({demotions} demotion(s), {seconds:.1f} s)")


def _int64_notes(demotions: list[Demotion]) -> None:
    for demotion in demotions:
        if demotion.advice == "int64":
            _echo_err(f"note: {demotion.kernel}:{demotion.param} took values of 2**31 or more: besides "
                      f"do_not_specialize, annotate it `{demotion.param}: tl.int64` (fix edits decorators only)")


@dataclass
class _Shown:
    """What `fix` wrote or would write: the kernels changed, and what kept a change from being written."""

    changes: list[tuple[Path, Any]]
    writing: bool
    unwritable: dict[Path, str]
    written: set[Path] | None  # files actually replaced (None: nothing is written in this mode)
    write_report: Any = None


def _apply_changes(run: Any, show_diff: bool, writing: bool) -> _Shown:
    """Write the changes (or print the diff), then print one line per kernel changed and the warnings."""
    from jitguard.codemod.file_writes import other_hard_links, write_refusal
    from jitguard.codemod.fix_tree import unified_diff, write_changes

    # --check/--diff write nothing, but a pending change to a file fix could not write is said, not hidden.
    unwritable = {} if writing else {result.path: reason for result in run.results
                                     if result.changed and (reason := write_refusal(result.path))}
    for result in run.results:
        if show_diff and result.changed:
            click.echo(unified_diff(result), nl=False)
    shown = _Shown([], writing, unwritable, None)
    if writing:
        shown.write_report = write_changes(run)
        shown.written = set(shown.write_report.written)
        run.errors += [f"{path}: {reason}" for path, reason in shown.write_report.failed]
    shown.changes = [(path, change) for path, change in run.changes if shown.written is None or path in shown.written]
    for path, change in shown.changes:
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
    links_left = shown.write_report.links_left if shown.write_report else [
        (result.path, links) for result in run.results
        if result.changed and result.path not in unwritable and (links := other_hard_links(result.path))]
    for path, links in links_left:
        keep = "keeps" if links == 1 else "keep"
        _echo_err(f"note: {path}: its {_plural(links, 'other hard link')} {keep if writing else 'would keep'} "
                  f"the old text (fix {'wrote' if writing else 'writes'} a new file under this name only)")
    return shown


def _finish_fix(run: Any, shown: _Shown, requests: FixRequests, priced: Any, elapsed: float) -> None:
    """Print the errors, the hand edits and the summary; exit 2 for bad input, 1 for findings left or
    (--check, --diff) changes pending, 0 otherwise."""
    from jitguard.codemod.fix_inputs import unfixed_warnings

    hand_edits = [f"{result.path}: {edit}" for result in run.results if result.outcome is not None
                  for edit in result.outcome.hand_edits]
    errors = [line for line in run.errors if line not in set(hand_edits)]
    errors += [f"{scan.path}: {scan.error}" for scan in requests.scans if scan.error]
    for line in errors:
        _echo_err(f"error: {line}")
    for line in hand_edits:
        _echo_err(f"hand edit: {line}")
    left = unfixed_warnings(requests, priced.apply) if requests.scans else 0
    summary = _fix_summary(run, shown, priced, elapsed)
    if hand_edits:
        summary += f"; {_plural(len(hand_edits), 'hand edit')} left"
    if left:
        summary += f"; {_plural(left, 'warning')} left (jitguard scan lists them)"
    if errors:
        summary += f"; {_plural(len(errors), 'error')}"
    context = click.get_current_context()
    if shown.write_report is not None and shown.write_report.stopped_by is not None:
        for line in shown.write_report.stop_lines():
            _echo_err(line)
        _echo_err(f"{summary}.")
        context.exit(128 + shown.write_report.stopped_by)
    _echo_err(summary + ".")
    if errors:
        context.exit(2)
    if hand_edits or left or (shown.changes and not shown.writing):
        context.exit(1)


def _fix_summary(run: Any, shown: _Shown, priced: Any, elapsed: float) -> str:
    writing, unwritable = shown.writing, shown.unwritable
    changed_files = len(shown.written) if shown.written is not None else sum(1 for r in run.results if r.changed)
    fixable = [(path, change) for path, change in shown.changes if path not in unwritable]
    parameters = sum(len(names) for _, change in fixable for names in change.added.values())
    failed = shown.write_report is not None and shown.write_report.failed
    if fixable:
        verb = "Fixed" if writing else "Would fix"
        summary = (f"{verb} {_plural(len(fixable), 'kernel')} in {_plural(changed_files - len(unwritable), 'file')} "
                   f"({_plural(parameters, 'parameter')})")
    elif unwritable:
        summary = "Nothing fix could write"
    else:
        summary = "Nothing to fix" if not failed else "Nothing written"
    if unwritable:
        summary += f"; {_plural(len(unwritable), 'file')} would change but cannot be written"
    summary += f"; {_plural(run.files_checked, 'file')} checked in {elapsed:.1f} s"
    if priced.skipped:
        summary += f"; {_plural(priced.skipped, 'costly demotion')} skipped"
    if priced.skipped_unknown:
        summary += f"; {_plural(priced.skipped_unknown, 'unpriced demotion')} skipped"
    return summary


def _fix_settings() -> ScanSettings:
    try:
        return _scan_settings(None, (), (), (), (), None, False)
    except ConfigError as exc:
        _echo_err(f"error: {exc}")
        raise click.exceptions.Exit(2) from None


def _rules_for(enabled: frozenset[str], settings: ScanSettings) -> Callable[[Path | str], frozenset[str]]:
    """The rules that apply to one file: the enabled ones less its per-file-ignores."""
    def rules_for(file: Path | str) -> frozenset[str]:
        return enabled - set(enabled_rules(RULES, ignored_for_file(file, settings) or ("-",), ()))

    return rules_for


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
      JG101 token-count-specialized        (warning) int count (by name or by launch) not demoted
      JG102 size-specialized               (info)    model-dimension int used as a size
      JG103 runtime-size-constexpr         (warning) tl.constexpr named like a token count
      JG104 unknown-name-in-demotion-list  (warning) do_not_specialize names no parameter
      JG105 constexpr-in-demotion-list     (warning) do_not_specialize lists a tl.constexpr
      JG106 derived-stride-specialized     (info)    int computed from a count (a stride) not demoted
      JG107 runtime-bound-specialized      (warning) int bounding a mask/loop not demoted
      JG108 heuristic-from-count           (warning) @triton.heuristics constexpr from a count
      JG109 autotune-key-count             (warning) autotune key holds a count: re-tunes

    JG106 is a warning where a launch in the file shows the int computed from a count.
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
    rules_for = _rules_for(enabled_rules(RULES, settings.select, settings.ignore), settings)
    scans, file_count = _scans(paths, settings, rules_for, stdin_filename, quiet, jobs)
    findings = sorted((f for scan in scans for f in scan.findings), key=lambda f: (f.file, f.line, f.column))
    errors = [(scan.path, scan.error) for scan in scans if scan.error]
    warnings = [finding for finding in findings if finding.severity == "warning"]
    result = ScanResult(findings, errors, file_count, sum(scan.kernels for scan in scans))
    show_info = show_all or bool(select)
    _print_scan(result, output_format, show_info)
    if not quiet:
        _echo_err(_scan_summary(result, warnings, time.perf_counter() - started,
                                hint=not show_info and output_format == "text"))
    if errors:
        context.exit(2)
    if warnings and not exit_zero:
        context.exit(1)


def _scans(paths: tuple[str, ...], settings: ScanSettings, rules_for: Callable[[Path | str], frozenset[str]],
           stdin_filename: str | None, quiet: bool, jobs: int | None) -> tuple[list[FileScan], int]:
    """The scan of each file PATHs select (or of standard input for `-`), and how many files that is."""
    if "-" in paths:
        if len(paths) > 1:
            raise click.UsageError("`-` (stdin) cannot be combined with other paths")
        display = stdin_filename or "-"
        if stdin_filename and settings.selection.force_exclude and is_excluded(Path(stdin_filename),
                                                                              settings.selection):
            return [], 0
        return [_scan_stdin(sys.stdin.buffer.read(), display, rules_for(display))], 1
    try:
        files = select_python_files(paths, settings.selection)
    except SelectionPathError as exc:
        raise click.UsageError(str(exc)) from None
    if not files and not quiet:
        _echo_err(f"warning: no Python files found under {', '.join(paths) or '.'}")
    # A jit function another scanned file's kernels call is a device helper there (scan_paths drops it).
    return scan_paths(files, rules_for, _jobs(jobs), progress_for("Scanning", len(files))), len(files)


def _print_scan(result: ScanResult, output_format: str, show_info: bool) -> None:
    """The findings on stdout in `output_format` (text: warnings, and info with `show_info`), errors on stderr."""
    if output_format == "text":
        color = use_color(sys.stdout, dict(os.environ))
        for finding in result.findings:
            if finding.severity == "warning" or show_info:
                click.echo(text_line(finding, color), color=color)
    else:
        rendered = {"json": render_json, "github": render_github, "junit": render_junit,
                    "sarif": lambda r: render_sarif(r, _version())}[output_format](result)
        if rendered:
            click.echo(rendered)
    if output_format != "github":
        for path, message in result.errors:
            _echo_err(f"error: {path}: {message}")


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
