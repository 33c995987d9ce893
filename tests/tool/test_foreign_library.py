"""The README's kernel-repo story on a PyPI kernel library nobody here wrote, installed at run time.

The README block marked ``doc-check: test tests/tool/test_foreign_library.py::test_readme_story_on_a_pypi_library``
installs cut-cross-entropy (a pure-Python wheel: its Triton kernels and their wrappers), runs
``examples/foreign_library/drive.py`` under ``jitguard run --offline``, fixes the library from the report
and runs the driver again. This test runs those commands as shown and holds every line the block shows to
the real output, so the before/after variant counts in the README are what the tool does. It needs PyPI
(pip is reachable in CI), which is why the README's own doc-check does not run the block.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tests.tool.test_readme_commands import (
    BLOCKS,
    REPO,
    assert_shown_lines_are_real,
    commands_and_output,
    run_in_one_shell,
)

TEST_ID = "tests/tool/test_foreign_library.py::test_readme_story_on_a_pypi_library"


def with_triton_path(command: str) -> str:
    """The command with PYTHONPATH=lib extended by this run's PYTHONPATH (CI puts an older Triton there)."""
    extra = os.environ.get("PYTHONPATH")
    return command.replace("PYTHONPATH=lib ", f"PYTHONPATH=lib{os.pathsep}{extra} ") if extra else command


def test_readme_story_on_a_pypi_library(tmp_path: Path) -> None:
    (block,) = [b for b in BLOCKS if b.kind == "test" and b.argument == TEST_ID]
    steps = commands_and_output(block)
    assert [command.split()[0] for command, _, _ in steps][:1] == ["pip"], "the block starts by installing the library"
    cwd = tmp_path / "foreign_library"
    shutil.copytree(REPO / "examples" / "foreign_library", cwd, ignore=shutil.ignore_patterns("__pycache__"))
    results = run_in_one_shell([with_triton_path(command) for command, _, _ in steps], cwd, tmp_path / "caches")
    for (command, shown, exit_code), (rc, output) in zip(steps, results):
        where = f"{block.id}: `{command}` (exit {rc})"
        assert rc == exit_code if exit_code is not None else rc in (0, 1), f"{where}\n{output}"
        assert_shown_lines_are_real(shown, output.replace(str(cwd), "/tmp/foreign_library"), where)
    fixed = (cwd / "lib" / "cut_cross_entropy" / "indexed_dot.py").read_text()
    assert 'triton.jit(_indexed_neg_dot_forward_kernel, do_not_specialize=["B"])' in fixed
