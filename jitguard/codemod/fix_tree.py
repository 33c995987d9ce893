"""`jitguard fix` over a tree: find the requested kernels, plan each file's edits, apply them.

Two passes: a parallel survey (which file defines which kernel; only files whose text defines a
requested name are parsed), then the edits on the few files that need them, from the kernels the
survey found (a file is parsed once; its hash proves it did not change in between).
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jitguard.codemod.demotions import Demotion
from jitguard.codemod.file_writes import PendingWrite, WriteRefused, WriteReport, write_files
from jitguard.codemod.files import Progress, SourceError, map_files, read_source
from jitguard.codemod.fix import FilePlan, FixOutcome, KernelChange, PlanKey, fix_source
from jitguard.codemod.kernels import TritonKernel, find_kernels, might_contain_kernels, parse_source
from jitguard.codemod.scan import scan_kernel, source_lines
from jitguard.codemod.source_text import declared_encoding


@dataclass(frozen=True)
class KernelSite:
    """Where one kernel is defined."""

    path: Path
    name: str
    qualname: str
    line: int
    first_line: int
    end_line: int
    # The kernel found there (syntax trees dropped): its `bound_as` names are names of the site too.
    kernel: TritonKernel | None = field(default=None, compare=False, repr=False)
    # The line of its jit decorator or call: a function bound by several jit calls is a site per call.
    decorator_line: int = 0


@dataclass
class FileSurvey:
    """Pass one over a file: its kernels, warnings about existing lists, or why it was skipped."""

    path: Path
    digest: str = ""
    kernels: list[KernelSite] = field(default_factory=list)
    found: list[TritonKernel] = field(default_factory=list)  # the same kernels, for pass two (no re-parse)
    warnings: list[str] = field(default_factory=list)
    error: str | None = None


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, SyntaxError):
        return f"syntax error at line {exc.lineno}: {exc.msg}"
    return str(exc)


# TritonKernel fields holding `ast` nodes: costly to send back from a worker, and pass two needs
# only spans, parameters and lists.
_SYNTAX_TREE_FIELDS = ("node", "_nodes")


def _without_syntax_trees(kernel: TritonKernel) -> TritonKernel:
    names = {item.name for item in dataclasses.fields(kernel)}
    cleared: dict[str, Any] = {name: None for name in _SYNTAX_TREE_FIELDS if name in names}
    return dataclasses.replace(kernel, **cleared)


def survey_file(task: tuple[Path, bytes | None]) -> FileSurvey:
    """Read and parse one file if its text may define a requested kernel (`task[1]` a regex)."""
    path, defines = task
    survey = FileSurvey(path)
    if path.is_symlink() and not path.exists():
        return survey  # a dangling link (an editor's `.#name.py` lock) is no source: skip it quietly
    try:
        source = read_source(path)
    except SourceError as exc:
        survey.error = str(exc)
        return survey
    survey.digest = hashlib.sha256(source).hexdigest()
    if not might_contain_kernels(source) or (defines is not None and not re.search(defines, source)):
        return survey
    try:
        tree = parse_source(source)
    except (SyntaxError, ValueError, RecursionError) as exc:
        survey.error = _error_text(exc)
        return survey
    lines: list[str] | None = None
    for kernel in find_kernels(source, tree):
        light = _without_syntax_trees(kernel)
        survey.kernels.append(
            KernelSite(path, kernel.name, kernel.qualname, kernel.line, kernel.first_line, kernel.end_line, light,
                       kernel.decorator_line)
        )
        survey.found.append(light)
        # JG104/JG105 judge an existing list, so only listed kernels are scanned (the scan is the costly part).
        spellings = [f"def {kernel.name}", *(f"{name} =" for name in kernel.bound_as)]
        if kernel.demotions and (defines is None or any(re.search(defines, text.encode()) for text in spellings)):
            lines = source_lines(source) if lines is None else lines
            for finding in scan_kernel(kernel, str(path), lines):
                if finding.rule in ("JG104", "JG105"):
                    survey.warnings.append(f"{path}:{finding.line}: {finding.message}")
    return survey


def definition_pattern(demotions: Sequence[Demotion]) -> bytes:
    """A regex that matches `def NAME` or `NAME =` (`NAME = triton.jit(fn)`) for every kernel the requests name."""
    names = sorted({demotion.kernel.rsplit(".", 1)[-1] for demotion in demotions})
    alternatives = b"|".join(re.escape(name.encode()) for name in names)
    return rb"\bdef[ \t]+(?:" + alternatives + rb")\b|\b(?:" + alternatives + rb")[ \t]*=(?!=)"


def _shared_tail(a: Path, b: Path) -> int:
    count = 0
    for left, right in zip(reversed(a.parts), reversed(b.parts)):
        if left != right:
            break
        count += 1
    return count


def _names_for(site: KernelSite) -> set[str]:
    """Every spec that names `site` (as `TritonKernel.matches` judges): its names, the names it is
    bound to, and each dotted tail of its qualname (`Class.kernel`, `kernel`)."""
    names = {site.name, site.qualname}
    if site.kernel is not None:
        names.update(site.kernel.bound_as)
    # `qualname.endswith("." + spec)` holds exactly for the text after each dot.
    names.update(site.qualname[index + 1:] for index, char in enumerate(site.qualname) if char == ".")
    return names


class KernelSites:
    """The sites of a tree, indexed once by every name a request may use, so each request is a lookup.

    Matching every site per request made `fix` quadratic in the number of kernels (4000 kernels: 16
    million name checks); here a request is one lookup by name and, when many files define that
    name, one more by resolved path (each path resolves once).
    """

    def __init__(self, sites: Sequence[KernelSite]) -> None:
        self._by_name: dict[str, list[KernelSite]] = defaultdict(list)
        for site in sites:
            for name in _names_for(site):
                self._by_name[name].append(site)  # sites stay in survey order within each name
        self._resolved: dict[Path, Path] = {}
        # name -> resolved path parts -> its sites, built for a name the first time a file must pick among them
        self._by_file: dict[str, dict[tuple[str, ...], list[KernelSite]]] = {}

    def _resolve(self, path: Path) -> Path:
        resolved = self._resolved.get(path)
        if resolved is None:
            resolved = self._resolved[path] = path.resolve()
        return resolved

    def _in_file(self, spec: str, candidates: list[KernelSite]) -> dict[tuple[str, ...], list[KernelSite]]:
        """`candidates` (all the sites `spec` names) by their resolved path, so same-named kernels in
        many files cost one lookup per request, not one path comparison per file."""
        by_file = self._by_file.get(spec)
        if by_file is None:
            by_file = self._by_file[spec] = defaultdict(list)
            for site in candidates:
                by_file[self._resolve(site.path).parts].append(site)
        return by_file

    def choose(self, demotion: Demotion) -> list[KernelSite]:
        """The kernels a request means: same name; then the best file-path match; then the line."""
        candidates = self._by_name.get(demotion.kernel, [])
        if demotion.file and len(candidates) > 1:
            wanted = Path(demotion.file)
            exact = self._in_file(demotion.kernel, candidates).get(wanted.parts) if wanted.is_absolute() else None
            if exact:
                candidates = exact  # an absolute path shares its whole tail with itself alone: the best score
            else:
                scores = [_shared_tail(wanted, self._resolve(site.path)) for site in candidates]
                best = max(scores)
                if best > 0:
                    candidates = [site for site, score in zip(candidates, scores) if score == best]
        if demotion.line is not None and len(candidates) > 1:
            around = [site for site in candidates if site.first_line <= demotion.line <= site.end_line]
            candidates = around or candidates
        return list(candidates)  # a copy: callers never reach the index's own lists


@dataclass
class FileResult:
    """Pass two over one file: the outcome, or the error that stopped it."""

    path: Path
    original: bytes = b""
    outcome: FixOutcome | None = None
    error: str | None = None
    plan: FilePlan | None = field(default=None, repr=False)  # what was asked: redone if the file changes

    def redo(self, current: bytes) -> bytes | None:
        """The same edit computed again on `current` (the file changed since it was read): the new
        bytes, None when nothing is left to change; WriteRefused when the edit no longer applies."""
        outcome = fix_source(current, self.plan or {}, None)
        if outcome.errors:
            raise WriteRefused(f"changed since jitguard read it, and the edit no longer applies "
                               f"({outcome.errors[0]}); not written")
        return outcome.source if outcome.source != current else None

    @property
    def changed(self) -> bool:
        """True when the file's bytes would change."""
        return self.outcome is not None and self.outcome.source != self.original


@dataclass
class FixRun:
    """Everything a `fix` run found and did, for the command to print."""

    files_checked: int = 0
    results: list[FileResult] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # one line each, already prefixed with a path
    warnings: list[str] = field(default_factory=list)

    @property
    def changes(self) -> list[tuple[Path, KernelChange]]:
        """Every kernel whose decorator changes, with its file."""
        return [
            (result.path, change)
            for result in self.results
            if result.outcome is not None
            for change in result.outcome.changes
            if change.added
        ]


def fix_paths(
    files: Sequence[Path], demotions: Sequence[Demotion], jobs: int = 1, progress: Progress | None = None,
    held: Sequence[Demotion] = (),
) -> FixRun:
    """Plan and compute the edits that `demotions` ask for in `files` (nothing is written here).

    `held`: requests not applied (their price was not accepted) whose kernels must still exist: a
    report naming a kernel that is gone is an error either way."""
    run = FixRun(files_checked=len(files))
    if not demotions and not held:
        return run
    every = [*demotions, *held]
    surveys = list(map_files(survey_file, [(path, definition_pattern(every)) for path in files], jobs, progress))
    sites: list[KernelSite] = []
    for survey in surveys:
        if survey.error:
            run.errors.append(f"{survey.path}: {survey.error}")
        run.warnings.extend(survey.warnings)
        sites.extend(survey.kernels)
    plans = _plan_files(run, KernelSites(sites), every, {id(demotion) for demotion in held})
    surveyed = {survey.path: survey for survey in surveys}
    for path in sorted(plans):
        run.results.append(_compute_edit(run, path, plans[path], surveyed[path]))
    return run


def _plan_files(run: FixRun, index: KernelSites, demotions: Sequence[Demotion], held_ids: set[int]
                ) -> dict[Path, dict[PlanKey, list[tuple[str, str]]]]:
    """Each file's plan: the requests of `demotions` grouped by kernel; a request whose kernel is not
    found is an error (once), and one held back (`held_ids`) is only looked for."""
    plans: dict[Path, dict[PlanKey, list[tuple[str, str]]]] = defaultdict(lambda: defaultdict(list))
    # Sets beside the lists keep the "once each" checks constant-time when many requests miss.
    errors_seen, warnings_seen = set(run.errors), set(run.warnings)
    for demotion in demotions:
        chosen = index.choose(demotion)
        if not chosen:
            where = f" (reported at {demotion.file}:{demotion.line})" if demotion.file else ""
            line = f"{demotion.origin}: kernel `{demotion.kernel}`{where} not found under the given paths"
            if line not in errors_seen:
                errors_seen.add(line)
                run.errors.append(line)
            continue
        if id(demotion) in held_ids:
            continue  # found, not applied
        # Several jit calls on one function are one kernel each, and a name that is the function's asks for all.
        functions = list(dict.fromkeys((site.path, site.line) for site in chosen))
        if len(functions) > 1 and demotion.origin in ("--param", "--bucket"):
            names = ", ".join(f"{path}:{line}" for path, line in functions)
            line = (f"{demotion.origin} {demotion.kernel}:{demotion.param} matches {len(functions)} kernels ({names}); "
                    "name one as Class.kernel or pass its file alone")
            if line not in warnings_seen:
                warnings_seen.add(line)
                run.warnings.append(line)
        for site in chosen:
            request = (demotion.param, demotion.option)
            planned = plans[site.path][(site.name, site.line, site.decorator_line)]
            if request not in planned:
                planned.append(request)
    return plans


def _compute_edit(run: FixRun, path: Path, plan: FilePlan, survey: FileSurvey) -> FileResult:
    """`plan` applied to what `path` holds now. A file another writer changed since the survey gets the
    plan applied to its new content, or an error when the edit no longer applies there; never a silent skip."""
    result = FileResult(path, plan=plan)
    try:
        result.original = read_source(path)
    except SourceError as exc:
        result.error = str(exc)
        run.errors.append(f"{path}: {exc}")
        return result
    if hashlib.sha256(result.original).hexdigest() == survey.digest:
        result.outcome = fix_source(result.original, plan, survey.found)
        run.errors.extend(f"{path}: {message}" for message in result.outcome.errors)
        return result
    outcome = fix_source(result.original, plan, None)  # the survey's kernels describe the old content
    if outcome.errors:
        result.error = (f"changed while jitguard was running, and the edit no longer applies ({outcome.errors[0]}); "
                        "run it again")
        run.errors.append(f"{path}: {result.error}")
        return result
    result.outcome = outcome
    return result


def write_changes(run: FixRun) -> WriteReport:
    """Write every changed file atomically, stopping between files on SIGINT/SIGTERM.

    Each changed file ends up in exactly one of the report's lists: written, failed (read-only,
    an owner that cannot be kept, an OS error) or not written (the run was stopped first).
    """
    # Compare-and-write: a file another run (or an editor) changed since it was read gets its edit
    # computed again on the new content, never written over it.
    return write_files(
        [PendingWrite(result.path, result.outcome.source, result.original, result.redo) for result in run.results
         if result.changed and result.outcome is not None]
    )


def _python_lines(text: str) -> list[str]:
    """Lines ended as Python ends them (str.splitlines would also split at form feeds)."""
    return re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", text)


def unified_diff(result: FileResult) -> str:
    """The change to one file as a unified diff (a/ and b/ prefixes, like git)."""
    if result.outcome is None:
        return ""
    encoding = declared_encoding(result.original)
    before = _python_lines(result.original.decode(encoding))
    after = _python_lines(result.outcome.source.decode(encoding))
    name = result.path.as_posix().lstrip("/")
    return "".join(difflib.unified_diff(before, after, f"a/{name}", f"b/{name}"))
