"""`jitguard fix` over a tree does work linear in its kernels: each request is looked up among the
sites its name can match, not checked against every kernel of the tree, and each path resolves once."""

from __future__ import annotations

from pathlib import Path

import pytest

from jitguard.codemod import fix_tree
from jitguard.codemod.demotions import Demotion
from jitguard.codemod.files import python_files
from jitguard.codemod.fix_tree import KernelSites, fix_paths, survey_file

KERNELS_PER_FILE = 5

KERNEL = '''

@triton.jit
def {name}(x_ptr, num_tokens, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, 1.0, mask=offs < num_tokens)
'''


def _tree(root: Path, files: int) -> list[Demotion]:
    """`files` modules of distinct kernels plus one `shared` kernel each; a request for every kernel."""
    demotions = []
    for index in range(files):
        path = root / f"pkg{index}" / "kernels.py"
        path.parent.mkdir(parents=True)
        names = [f"kernel_{index}_{number}" for number in range(KERNELS_PER_FILE)] + ["shared"]
        path.write_text("import triton\nimport triton.language as tl\n" + "".join(KERNEL.format(name=n) for n in names))
        # `shared` is defined in every file: the report's file picks the one it means.
        demotions += [Demotion(name, "num_tokens", "do_not_specialize", "report", file=str(path)) for name in names]
    return demotions


def _counted_run(root: Path, files: int, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int, fix_tree.FixRun]:
    demotions = _tree(root, files)
    matches = 0
    resolves = 0
    real_matches, real_resolve = fix_tree._matches, Path.resolve

    def counting_matches(spec: str, site: fix_tree.KernelSite) -> bool:
        nonlocal matches
        matches += 1
        return real_matches(spec, site)

    def counting_resolve(path: Path, strict: bool = False) -> Path:
        nonlocal resolves
        resolves += 1
        return real_resolve(path, strict)

    monkeypatch.setattr(fix_tree, "_matches", counting_matches)
    monkeypatch.setattr(Path, "resolve", counting_resolve)
    run = fix_paths(python_files([root]), demotions, jobs=1)
    monkeypatch.undo()
    return matches, resolves, run


def test_name_checks_and_path_resolves_grow_linearly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    counts = {}
    for files in (10, 40):
        matches, resolves, run = _counted_run(tmp_path / str(files), files, monkeypatch)
        assert run.errors == [] and run.warnings == []
        # Every kernel, `shared` in each file included, changes once: the file-path choice still works.
        changed = sorted((path.parent.name, change.kernel) for path, change in run.changes)
        assert len(changed) == files * (KERNELS_PER_FILE + 1) == len(set(changed))
        counts[files] = (matches, resolves)
    for files, (matches, resolves) in counts.items():
        kernels = files * (KERNELS_PER_FILE + 1)
        # A distinct name checks one site; `shared` checks one per file (a scan of all sites: kernels**2).
        assert matches == files * KERNELS_PER_FILE + files * files, (files, matches)
        assert resolves <= files + 5, (files, resolves)  # once per file, whatever the number of requests
        assert matches < kernels * (files + 1)
    # Four times the files: four times the distinct-name checks, not sixteen.
    distinct = {files: matches - files * files for files, (matches, _) in counts.items()}
    assert distinct[40] == 4 * distinct[10]


SOURCE = '''import triton
import triton.language as tl


class Ops:
    class Inner:
        @triton.jit
        def kernel(x_ptr, n):
            tl.store(x_ptr, n)


def _plain(x_ptr, n):
    tl.store(x_ptr, n)


fast = triton.jit(_plain)
'''

# (requested spec, qualnames chosen): the index accepts exactly what `_matches` accepts.
SPEC_CASES = [
    ("kernel", ["Ops.Inner.kernel"]),
    ("Inner.kernel", ["Ops.Inner.kernel"]),
    ("Ops.Inner.kernel", ["Ops.Inner.kernel"]),
    ("nner.kernel", []),
    ("Ops.Inner", []),
    ("fast", ["_plain"]),
    ("_plain", ["_plain"]),
    ("", []),
]


@pytest.mark.parametrize("spec, qualnames", SPEC_CASES, ids=[case[0] or "empty" for case in SPEC_CASES])
def test_index_chooses_what_a_scan_of_every_site_chooses(tmp_path: Path, spec: str, qualnames: list[str]) -> None:
    path = tmp_path / "ops.py"
    path.write_text(SOURCE)
    sites = survey_file((path, None)).kernels
    assert sorted(site.qualname for site in sites) == ["Ops.Inner.kernel", "_plain"]
    chosen = KernelSites(sites).choose(Demotion(spec, "n", "do_not_specialize", "--param"))
    assert [site.qualname for site in chosen] == qualnames
    assert chosen == [site for site in sites if fix_tree._matches(spec, site)]
