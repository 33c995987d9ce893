"""What one `jitguard fix` run is asked to do: `--param`, `--bucket`, `--from REPORT` (read once, `-` is
standard input) or, with none of them, a scan of the PATHs (ruff's `check --fix` habit).

Requests from a scan (a `scan --json` file, or the PATHs scanned here) carry no recorded variants, so
they are priced on signatures synthesized from the source (`static_prices`) before `fix` decides
which to apply.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from jitguard.codemod.demotions import (
    AdviceNote,
    Demotion,
    finding_request,
    parse_bucket_option,
    parse_param_option,
    read_report,
)
from jitguard.codemod.scan import FileScan, scan_task

SCANNED = "scan"  # the origin of requests from the PATHs scanned by `fix` itself


@dataclass
class FixRequests:
    """The requests of one run, with what the summary and the exit code need to know about them."""

    demotions: list[Demotion] = field(default_factory=list)
    notes: list[AdviceNote] = field(default_factory=list)
    entries: dict[str, Any] = field(default_factory=dict)  # a runtime report's kernel entries by name
    adviceless: int = 0  # scan findings with no rewrite advice (JG104, JG105, JG102 ...)
    data_dirs: list[str] = field(default_factory=list)  # folders read as data (the report's)
    from_scan: bool = False  # requests from a scan: priced on synthesized signatures
    scans: list[FileScan] = field(default_factory=list)  # the PATHs' scans when `fix` scanned them
    warnings_found: int = 0  # warning findings of that scan (what is left unfixed decides the exit)


def gather_requests(
    report: str | None, params: Sequence[str], buckets: Sequence[str], stdin: IO[bytes] | None = None,
) -> FixRequests:
    """The explicit requests: `--param`, `--bucket` and `--from` (DemotionInputError names a bad one)."""
    requests = FixRequests()
    requests.demotions += [parse_param_option(text) for text in params]
    requests.demotions += [parse_bucket_option(text) for text in buckets]
    if report is not None:
        loaded = read_report(report, stdin)
        found, requests.notes = loaded.requests()
        requests.demotions += found
        requests.entries = loaded.kernel_entries()
        requests.adviceless = loaded.adviceless_findings()
        requests.from_scan = loaded.is_scan
        if report != "-":
            requests.data_dirs = [os.path.dirname(os.path.abspath(report))]
    return requests


def scan_requests(scans: list[FileScan]) -> FixRequests:
    """The requests the findings of a scan of the PATHs make (`fix PATH` with nothing else given)."""
    requests = FixRequests(from_scan=True, scans=scans)
    for scan in scans:
        for finding in scan.findings:
            request = finding_request(SCANNED, finding.to_json())
            if isinstance(request, Demotion):
                requests.demotions.append(request)
            elif isinstance(request, AdviceNote):
                requests.notes.append(request)
            elif finding.advice is None:
                requests.adviceless += 1
            requests.warnings_found += finding.severity == "warning"
    return requests


def scan_paths(files: Sequence[Path], rules_for: Callable[[Path], Collection[str]], jobs: int,
               progress: Any = None) -> list[FileScan]:
    """Scan `files` as `jitguard scan` does (per-file rules, kernels launched from other files judged with those
    launches too, device helpers of other files dropped)."""
    from jitguard.codemod.cross_file_helpers import drop_cross_file_helper_findings
    from jitguard.codemod.cross_file_launches import with_launches_elsewhere
    from jitguard.codemod.files import map_files
    from jitguard.codemod.scan import scan_file

    tasks = [(path, rules_for(path), None) for path in files]
    rules = {str(path): enabled for path, enabled, _ in tasks}
    scans = with_launches_elsewhere(
        list(map_files(scan_task, tasks, jobs, progress)),
        lambda scan, elsewhere: scan_file(Path(scan.module_path), rules.get(scan.module_path), scan.path, elsewhere))
    return drop_cross_file_helper_findings(scans)


def price_scanned(requests: FixRequests, files: Sequence[Path], price_from: Sequence[str],
                  on_compile: Callable[[], None] | None, jobs: int = 1,
                  on_priced: Callable[[str, int, int, int, float], None] | None = None) -> None:
    """Price a scan's demotions on synthesized signatures (in place), before `fix` chooses what to apply:
    kernels on `jobs` processes, `on_priced` told as each one's prices arrive."""
    from jitguard.codemod.static_prices import price_scan_demotions

    if requests.from_scan and requests.demotions:
        requests.demotions = price_scan_demotions(requests.demotions, files, price_from, on_compile, jobs, on_priced)


JITGUARD_IMPORT_NOTE = "the module then imports jitguard at run time, so its own users need jitguard installed"


def hold_buckets(demotions: Sequence[Demotion], allow: bool) -> tuple[list[Demotion], list[Demotion], list[str]]:
    """(requests to go on, autotune buckets held, lines saying why): a bucket from `--from` or a scan
    rewrites `triton.autotune` as `jitguard.autotune`, so it is applied only with `--allow-jitguard-import`;
    `--bucket` asks for it by name and is applied, said the same way."""
    kept: list[Demotion] = []
    held: list[Demotion] = []
    lines: list[str] = []
    for demotion in demotions:
        if not demotion.option.startswith("bucket:"):
            kept.append(demotion)
            continue
        label = f"{demotion.kernel}:{demotion.param}"
        if demotion.origin == "--bucket" or allow:
            kept.append(demotion)
            lines.append(f"note: {label}: autotune -> jitguard.autotune: {JITGUARD_IMPORT_NOTE}")
        else:
            held.append(demotion)
            lines.append(f"skipped: {label}: bucketing the autotune key rewrites triton.autotune as "
                         f"jitguard.autotune: {JITGUARD_IMPORT_NOTE} (--allow-jitguard-import applies it); without "
                         f"jitguard: drop `{demotion.param}` from key=[...], or round it to a few values where the "
                         "kernel is launched")
    return kept, held, lines


def unfixed_warnings(requests: FixRequests, applied: Sequence[Demotion]) -> int:
    """Warning findings of `fix`'s own scan that no applied request answers (ruff's `check --fix` exits 1
    while violations remain)."""
    answered = {(d.kernel, d.param, d.option.startswith("bucket:")) for d in applied}
    left = 0
    for scan in requests.scans:
        for finding in scan.findings:
            key = (finding.qualname or finding.kernel, finding.param, finding.advice == "bucket")
            left += finding.severity == "warning" and key not in answered
    return left
