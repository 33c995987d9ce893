"""`jitguard scan` over several files: a jit function that another file's kernels call is a device
helper (inlined, never specialized on its own), judged by its decorator lists only."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from jitguard.codemod.commands import scan_command
from jitguard.codemod.cross_file_helpers import defines, helper_calls, module_stem
from jitguard.codemod.kernels import find_kernels, parse_source

# A helper whose `rows` reads as a token count (JG101 if it were launched), and a bad
# do_not_specialize entry (JG104, which a helper keeps).
HELPER = textwrap.dedent("""\
    import triton
    import triton.language as tl

    @triton.jit(do_not_specialize=["num_row"])
    def topk_rows(x_ptr, rows, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        return tl.load(x_ptr + offs, mask=offs < rows)
""")


def _caller(import_line: str, call: str) -> str:
    return textwrap.dedent(f"""\
        import triton
        import triton.language as tl
        {import_line}

        @triton.jit(do_not_specialize=["num_tokens"])
        def route(x_ptr, num_tokens, BLOCK: tl.constexpr):
            v = {call}(x_ptr, num_tokens, BLOCK)
            tl.store(x_ptr, tl.sum(v, 0))
    """)


def _write(root: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _findings(*paths: str) -> set[tuple[str, str, str | None]]:
    result = CliRunner().invoke(scan_command, ["--output-format", "json", "--select", "JG1", *paths],
                                catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    return {(Path(f["file"]).name, f["rule"], f["param"]) for f in json.loads(result.stdout)["findings"]}


CALLS = [
    ("relative-name", {"pkg/__init__.py": "", "pkg/routing.py": HELPER,
                       "pkg/route.py": _caller("from .routing import topk_rows", "topk_rows")}),
    ("relative-alias", {"pkg/__init__.py": "", "pkg/routing.py": HELPER,
                        "pkg/route.py": _caller("from .routing import topk_rows as rows_of", "rows_of")}),
    ("relative-module", {"pkg/__init__.py": "", "pkg/routing.py": HELPER,
                         "pkg/route.py": _caller("from . import routing", "routing.topk_rows")}),
    ("parent-package", {"pkg/__init__.py": "", "pkg/routing.py": HELPER, "pkg/sub/__init__.py": "",
                        "pkg/sub/route.py": _caller("from ..routing import topk_rows", "topk_rows")}),
    ("absolute-name", {"pkg/__init__.py": "", "pkg/routing.py": HELPER,
                       "pkg/route.py": _caller("from pkg.routing import topk_rows", "topk_rows")}),
    ("absolute-module", {"pkg/__init__.py": "", "pkg/routing.py": HELPER,
                         "pkg/route.py": _caller("import pkg.routing as routing", "routing.topk_rows")}),
    ("absolute-dotted", {"pkg/__init__.py": "", "pkg/routing.py": HELPER,
                         "pkg/route.py": _caller("import pkg.routing", "pkg.routing.topk_rows")}),
    ("package-init", {"pkg/__init__.py": HELPER,
                      "pkg/route.py": _caller("from . import topk_rows", "topk_rows")}),
]


@pytest.mark.parametrize("files", [files for _, files in CALLS], ids=[name for name, _ in CALLS])
def test_a_helper_called_from_another_file_keeps_only_its_decorator_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str]
) -> None:
    _write(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    helper_file = next(name for name, text in files.items() if text == HELPER)
    alone = _findings(helper_file)
    assert (Path(helper_file).name, "JG101", "rows") in alone, "the helper scanned alone reads as a launched kernel"
    together = _findings("pkg")
    assert (Path(helper_file).name, "JG101", "rows") not in together
    assert (Path(helper_file).name, "JG104", "num_row") in together, "a helper keeps its decorator-list findings"


def test_a_launched_kernel_sharing_a_helpers_name_in_another_module_keeps_its_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The call resolves through its import: `pkg/routing.py` is the helper, `other/routing.py`'s
    kernel of the same name is launched and keeps its JG101."""
    _write(tmp_path, {"pkg/__init__.py": "", "pkg/routing.py": HELPER,
                      "pkg/route.py": _caller("from .routing import topk_rows", "topk_rows"),
                      "other/__init__.py": "", "other/routing.py": HELPER})
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(scan_command, ["--output-format", "json", "pkg", "other"], catch_exceptions=False)
    flagged = {f["file"] for f in json.loads(result.stdout)["findings"] if f["rule"] == "JG101"}
    assert flagged == {str(Path("other/routing.py"))}


def test_calls_to_triton_and_unimported_names_are_not_helper_calls(tmp_path: Path) -> None:
    source = textwrap.dedent("""\
        import triton
        import triton.language as tl
        from triton.language.extra import libdevice
        from .math_helpers import fast_exp

        @triton.jit
        def k(x_ptr, n):
            x = tl.load(x_ptr)
            y = libdevice.exp(x) + fast_exp(x) + local_helper(x)
            tl.store(x_ptr, tl.sum(y, 0))
    """).encode()
    path = tmp_path / "pkg" / "k.py"
    kernels = find_kernels(source)
    calls = helper_calls(parse_source(source), (kernel.nodes() for kernel in kernels), path)
    assert calls == {(f"path:{(tmp_path / 'pkg' / 'math_helpers').resolve().as_posix()}", "fast_exp")}


@pytest.mark.parametrize(
    ("file", "ref", "expected"),
    [
        ("pkg/routing.py", "module:pkg.routing", True),
        ("pkg/routing.py", "module:routing", True),
        ("pkg/routing.py", "module:g.routing", False),
        ("pkg/__init__.py", "module:pkg", True),
        ("pkg/routing.py", "module:pkg", False),
    ],
)
def test_an_absolute_import_matches_the_files_dotted_tail(tmp_path: Path, file: str, ref: str, expected: bool) -> None:
    assert defines(module_stem(str(tmp_path / file)), ref) is expected


def test_a_helper_keeps_the_same_findings_whether_its_caller_is_in_its_file_or_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One rule set (cross_file_helpers.HELPER_RULES) decides what a device helper keeps, seen
    called in its own file by scan_kernel or from another file by the cross-file pass."""
    same_file = HELPER + textwrap.dedent("""\


        @triton.jit(do_not_specialize=["num_tokens"])
        def route(x_ptr, num_tokens, BLOCK: tl.constexpr):
            v = topk_rows(x_ptr, num_tokens, BLOCK)
            tl.store(x_ptr, tl.sum(v, 0))
    """)
    _write(tmp_path, {"one/__init__.py": "", "one/routing.py": same_file,
                      "two/__init__.py": "", "two/routing.py": HELPER,
                      "two/route.py": _caller("from .routing import topk_rows", "topk_rows")})
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(scan_command, ["--output-format", "json", "one", "two"], catch_exceptions=False)
    found = json.loads(result.stdout)["findings"]
    kept = {folder: {(f["rule"], f["param"]) for f in found
                     if f["kernel"] == "topk_rows" and f["file"] == str(Path(folder, "routing.py"))}
            for folder in ("one", "two")}
    assert kept["one"] == kept["two"] == {("JG104", "num_row")}, kept
