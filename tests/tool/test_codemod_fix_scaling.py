"""`jitguard fix` over a tree does work linear in its kernels: each request is looked up among the
sites its name can match, not checked against every kernel of the tree, and each path resolves once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from jitguard.codemod import fix_tree
from jitguard.codemod.demotions import Demotion
from jitguard.codemod.file_selection import select_python_files
from jitguard.codemod.fix_tree import KernelSites, fix_paths, survey_file
from jitguard.codemod.kernels import TritonKernel

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


def _counted_run(root: Path, files: int, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, int], fix_tree.FixRun]:
    """Run `fix` on a fresh tree, counting the per-site and per-path work that choosing sites does."""
    demotions = _tree(root, files)
    selected = select_python_files([root])
    counts = {"name checks": 0, "path comparisons": 0, "resolves": 0}

    def counted(key: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            counts[key] += 1
            return function(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(TritonKernel, "matches", counted("name checks", TritonKernel.matches))
    monkeypatch.setattr(fix_tree, "_shared_tail", counted("path comparisons", fix_tree._shared_tail))
    monkeypatch.setattr(Path, "resolve", counted("resolves", Path.resolve))
    run = fix_paths(selected, demotions, jobs=1)
    monkeypatch.undo()
    return counts, run


def test_choosing_sites_does_work_linear_in_the_kernels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for files in (10, 40):
        counts, run = _counted_run(tmp_path / str(files), files, monkeypatch)
        assert run.errors == [] and run.warnings == []
        # Every kernel, `shared` in each file included, changes once: the report's file still picks it.
        changed = sorted((path.parent.name, change.kernel) for path, change in run.changes)
        assert len(changed) == files * (KERNELS_PER_FILE + 1) == len(set(changed))
        # Matching every site per request made files**2 * 36 name checks and files**2 path comparisons
        # (`shared`); the index makes none, and resolves each file once (a few more: the tree's root).
        assert counts["name checks"] == 0, counts
        assert counts["path comparisons"] == 0, counts
        assert files <= counts["resolves"] <= files + 5, counts


def test_a_relative_report_path_still_picks_by_the_longest_shared_tail(tmp_path: Path) -> None:
    demotions = _tree(tmp_path, 3)
    wanted = Path("pkg1") / "kernels.py"
    request = Demotion("shared", "num_tokens", "do_not_specialize", "report", file=str(wanted))
    run = fix_paths(select_python_files([tmp_path]), [request], jobs=1)
    assert [(path.parent.name, change.kernel) for path, change in run.changes] == [("pkg1", "shared")]
    assert len(demotions) == 3 * (KERNELS_PER_FILE + 1)


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

# (requested spec, qualnames chosen): the index accepts exactly what `TritonKernel.matches` accepts.
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
    assert chosen == [site for site in sites if site.kernel is not None and site.kernel.matches(spec)]
