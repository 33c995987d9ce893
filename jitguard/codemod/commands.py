"""The `jitguard fix` and `jitguard scan` click commands (loaded lazily by `jitguard.cli`).

Exit codes, like ruff: 0 nothing to do, 1 pending changes (`--check`/`--diff`) or warnings
found (`scan`), 2 a usage or input error (bad file, unknown kernel, bad report).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import click

from jitguard.codemod.demotions import (
    NO_REWRITE_REASON,
    AdviceNote,
    Demotion,
    DemotionInputError,
    load_report,
    parse_param_option,
)
from jitguard.codemod.files import PathInputError, default_jobs, map_files, progress_for, python_files
from jitguard.codemod.scan import FileScan, scan_file


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _echo_err(message: str) -> None:
    click.echo(message, err=True)


def _collect_files(paths: tuple[str, ...]) -> list[Path]:
    try:
        files = python_files(paths)
    except PathInputError as exc:
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
        lines.append(f"note: {_plural(count, 'parameter')} with advice `{advice}` ({examples}): {NO_REWRITE_REASON[advice]}")
    if skipped_findings:
        lines.append(f"note: {_plural(skipped_findings, 'finding')} carry no rewrite advice and were skipped")
    return lines


@click.command("fix")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--from", "report", type=click.Path(), help="A `jitguard report --json` or `jitguard scan --json` file.")
@click.option("--param", "params", multiple=True, metavar="KERNEL:PARAM[:align]",
              help="Demote PARAM of KERNEL (do_not_specialize; with :align, do_not_specialize_on_alignment).")
@click.option("--diff", "show_diff", is_flag=True, help="Print a unified diff and write nothing.")
@click.option("--check", is_flag=True, help="Write nothing; exit 1 if a file would change.")
@click.option("-j", "--jobs", type=int, default=None, help="Worker processes (default: one per CPU).")
def fix_command(
    paths: tuple[str, ...], report: str | None, params: tuple[str, ...], show_diff: bool, check: bool, jobs: int | None
) -> None:
    """Add parameters to do_not_specialize / do_not_specialize_on_alignment of Triton kernels.

    Edits in place by default, changing only the decorators that need it.

    \b
      jitguard fix --from report.json kernels/
      jitguard fix --param fused_moe_kernel:EM --param fused_moe_kernel:num_valid_tokens --diff src/
    """
    # libcst loads here, not at import: `jitguard scan` (a pre-commit hook) starts faster without it.
    from jitguard.codemod.fix_tree import fix_paths, unified_diff, write_changes

    started = time.perf_counter()
    demotions: list[Demotion] = []
    notes: list[AdviceNote] = []
    skipped = 0
    try:
        demotions += [parse_param_option(text) for text in params]
        if report is not None:
            from_report, notes = load_report(report)
            demotions += from_report
            skipped = _count_adviceless_findings(report)
    except DemotionInputError as exc:
        raise click.UsageError(str(exc)) from None
    if report is None and not params:
        raise click.UsageError("nothing to do: give --from REPORT or --param KERNEL:PARAM")
    files = _collect_files(paths)
    run = fix_paths(files, demotions, _jobs(jobs), progress_for("Fixing", len(files)))
    writing = not (show_diff or check)
    for result in run.results:
        if show_diff and result.changed:
            click.echo(unified_diff(result), nl=False)
    written: set[Path] | None = None  # files actually replaced (None: nothing is written in this mode)
    report = None
    if writing:
        report = write_changes(run)
        written = set(report.written)
        run.errors += [f"{path}: {reason}" for path, reason in report.failed]
    changes = [(path, change) for path, change in run.changes if written is None or path in written]
    for path, change in changes:
        if not show_diff:
            verb = "" if writing else "would add "
            added = "; ".join(f"{option} += {', '.join(names)}" for option, names in change.added.items())
            click.echo(f"{path}:{change.line}: {change.qualname or change.kernel}: {verb}{added}")
    for line in run.warnings:
        _echo_err(f"warning: {line}")
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
    parameters = sum(len(names) for _, change in changes for names in change.added.values())
    elapsed = time.perf_counter() - started
    if kernels:
        verb = "Fixed" if writing else "Would fix"
        summary = (f"{verb} {_plural(kernels, 'kernel')} in {_plural(changed_files, 'file')} "
                   f"({_plural(parameters, 'parameter')})")
    else:
        summary = "Nothing to fix" if not (report and report.failed) else "Nothing written"
    summary += f"; {_plural(run.files_checked, 'file')} checked in {elapsed:.1f} s"
    if run.errors:
        summary += f"; {_plural(len(run.errors), 'error')}"
    if report is not None and report.stopped_by is not None:
        for line in report.stop_lines():
            _echo_err(line)
        _echo_err(f"{summary}.")
        click.get_current_context().exit(128 + report.stopped_by)
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


@click.command("scan")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="Print {findings: [...], files: N, ...} as JSON.")
@click.option("--all", "show_all", is_flag=True, help="Also list info findings (JG102, JG106) in text output.")
@click.option("-j", "--jobs", type=int, default=None, help="Worker processes (default: one per CPU).")
def scan_command(paths: tuple[str, ...], as_json: bool, show_all: bool, jobs: int | None) -> None:
    """Find recompile risks in Triton kernels, without running them.

    Exit 1 when a warning is found (info findings do not count), 2 when a file cannot be read
    or parsed. Silence a line with `# jitguard: ignore` or `# jitguard: ignore[JG101]`.

    \b
    Rules:
      JG101 token-count-specialized        (warning) int token/batch count not demoted
      JG102 size-specialized               (info)    int used as a size, not demoted
      JG103 runtime-size-constexpr         (warning) tl.constexpr named like a token count
      JG104 unknown-name-in-demotion-list  (warning) do_not_specialize names no parameter
      JG105 constexpr-in-demotion-list     (warning) do_not_specialize lists a tl.constexpr
      JG106 derived-stride-specialized     (info)    stride left specialized next to a demoted count
    """
    started = time.perf_counter()
    files = _collect_files(paths)
    scans: list[FileScan] = list(map_files(scan_file, files, _jobs(jobs), progress_for("Scanning", len(files))))
    findings = [finding for scan in scans for finding in scan.findings]
    errors = [(scan.path, scan.error) for scan in scans if scan.error]
    warnings = [finding for finding in findings if finding.severity == "warning"]
    kernels = sum(scan.kernels for scan in scans)
    elapsed = time.perf_counter() - started
    if as_json:
        payload = {
            "findings": [finding.to_json() for finding in findings],
            "files": len(files),
            "kernels": kernels,
            "errors": [{"file": path, "message": message} for path, message in errors],
        }
        click.echo(json.dumps(payload, indent=2))
    else:
        for finding in findings:
            if finding.severity == "warning" or show_all:
                kernel = finding.qualname or finding.kernel
                subject = f"{kernel}.{finding.param}" if finding.param else kernel
                click.echo(f"{finding.file}:{finding.line}: {finding.rule} [{finding.name}] {subject}: {finding.message}")
    for path, message in errors:
        _echo_err(f"error: {path}: {message}")
    infos = len(findings) - len(warnings)
    by_rule = ", ".join(f"{rule} {count}" for rule, count in sorted(Counter(f.rule for f in findings).items()))
    summary = (f"{_plural(len(warnings), 'warning')}, {infos} info in {_plural(kernels, 'kernel')}; "
               f"{_plural(len(files), 'file')} scanned in {elapsed:.1f} s")
    if by_rule:
        summary += f" ({by_rule})"
    if infos and not show_all and not as_json:
        summary += "; --all lists the info findings"
    if errors:
        summary += f"; {_plural(len(errors), 'error')}"
    _echo_err(summary + ".")
    if errors:
        click.get_current_context().exit(2)
    if warnings:
        click.get_current_context().exit(1)

