"""Hostile source trees for `scan` and `fix`: sources no parser survives fail alone (the files beside
them are still scanned and fixed), links out of the given tree are never rewritten, and odd file names
keep every output format readable and inert."""

from __future__ import annotations

import os
import re
import xml.dom.minidom
from pathlib import Path

import pytest
from click.testing import CliRunner

from jitguard.codemod.commands import fix_command, scan_command

KERNEL = """import triton
import triton.language as tl


@triton.jit
def scale_rows(x_ptr, n_rows, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), tl.load(x_ptr + tl.arange(0, BLOCK)) * n_rows)
"""

# Each appended to a file that also defines the kernel, so the file must be parsed.
TOO_DEEP = {
    "8,000 unary minuses": "x = " + "-" * 8000 + "1\n",
    "3,000 nested parentheses": "x = " + "(" * 3000 + "1" + ")" * 3000 + "\n",
    "100,000 additions": "y = 1" + " + 1" * 100_000 + "\n",
    "20,000 nots": "y = " + "not " * 20_000 + "1\n",
    "30,000 attribute accesses": "y = " + "a." * 30_000 + "b\n",
    "5,000 nested lists": "y = " + "[" * 5000 + "]" * 5000 + "\n",
}
CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")


def _tree(tmp_path: Path, hostile: str) -> tuple[Path, Path, Path]:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "deep.py").write_text(KERNEL + hostile)
    normal = tree / "normal.py"
    normal.write_text(KERNEL)
    return tree, tree / "deep.py", normal


@pytest.mark.parametrize("name", list(TOO_DEEP))
def test_a_source_too_deep_to_parse_fails_alone_in_scan(tmp_path: Path, name: str) -> None:
    tree, deep, normal = _tree(tmp_path, TOO_DEEP[name])
    result = CliRunner().invoke(scan_command, [str(tree)])
    assert not isinstance(result.exception, (MemoryError, RecursionError)), result.exception
    assert result.exit_code == 2, result.output  # a file that cannot be read is an input error, as in ruff
    assert f"{normal}:6:" in result.output  # the normal file's finding is kept
    assert f"{deep}:" in result.output and ("nested" in result.output or "syntax error" in result.output)


@pytest.mark.parametrize("name", ["8,000 unary minuses", "100,000 additions"])
def test_a_source_too_deep_to_parse_fails_alone_in_fix(tmp_path: Path, name: str) -> None:
    tree, deep, normal = _tree(tmp_path, TOO_DEEP[name])
    result = CliRunner().invoke(fix_command, ["--param", "scale_rows:n_rows", str(tree)])
    assert not isinstance(result.exception, (MemoryError, RecursionError)), result.exception
    assert '@triton.jit(do_not_specialize=["n_rows"])' in normal.read_text()
    assert deep.read_text() == KERNEL + TOO_DEEP[name]
    assert f"{deep}: nested too deeply" in result.output


def test_fix_never_follows_a_link_out_of_the_given_tree(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "vendored.py"
    outside.parent.mkdir()
    outside.write_text(KERNEL)
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "link.py").symlink_to(outside)
    (tree / "own.py").write_text(KERNEL)
    result = CliRunner().invoke(fix_command, ["--param", "scale_rows:n_rows", str(tree)])
    assert result.exit_code == 0, result.output
    assert outside.read_text() == KERNEL
    assert "do_not_specialize" in (tree / "own.py").read_text()
    # Named on purpose, the link is followed (and stays a link).
    result = CliRunner().invoke(fix_command, ["--param", "scale_rows:n_rows", str(tree / "link.py")])
    assert result.exit_code == 0, result.output
    assert "do_not_specialize" in outside.read_text() and (tree / "link.py").is_symlink()


def test_a_link_inside_the_tree_is_one_file_edited_once(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "real.py").write_text(KERNEL)
    (tree / "sub" / "alias.py").symlink_to(tree / "real.py")
    result = CliRunner().invoke(fix_command, ["--param", "scale_rows:n_rows", str(tree)])
    assert result.exit_code == 0, result.output
    assert (tree / "real.py").read_text().count("do_not_specialize") == 1
    assert (tree / "sub" / "alias.py").is_symlink()


ODD_NAMES = {
    "SOH and BEL": "a\x01\x07b.py",
    "ESC clear screen": "c\x1b[2Jd.py",
    "OSC 52": "e\x1b]52;c;eA==\x07f.py",
    "C1 CSI": "g\u009b2Jh.py",
    "DEL": "i\x7fj.py",
    "newline": "k\nl.py",
    "bidi override": "m\u202en.py",
}


@pytest.fixture
def odd_tree(tmp_path: Path) -> Path:
    tree = tmp_path / "odd"
    tree.mkdir()
    for name in ODD_NAMES.values():
        (tree / name).write_text(KERNEL)
    (tree / "plain.py").write_text(KERNEL)
    return tree


def test_junit_stays_valid_xml_with_every_file_when_names_hold_control_characters(odd_tree: Path) -> None:
    result = CliRunner().invoke(scan_command, [str(odd_tree), "--output-format", "junit"])
    document = xml.dom.minidom.parseString(result.stdout[result.stdout.index("<?xml"):])
    assert len(document.getElementsByTagName("failure")) == len(ODD_NAMES) + 1


@pytest.mark.parametrize("output_format", ["text", "github"])
def test_scan_output_shows_control_characters_in_names_escaped(odd_tree: Path, output_format: str) -> None:
    result = CliRunner().invoke(scan_command, [str(odd_tree), "--output-format", output_format])
    assert result.exit_code == 1
    assert not CONTROL.search(result.stdout.replace("\n", "")), repr(CONTROL.search(result.stdout))
    assert "\u202e" not in result.stdout and "\\x1b" in result.stdout
    assert result.stdout.count("scale_rows") >= len(ODD_NAMES) + 1


def test_a_dangling_link_and_a_fifo_in_the_tree_are_not_sources(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "gone.py").symlink_to(tmp_path / "missing.py")
    os.mkfifo(tree / "pipe.py")
    (tree / "own.py").write_text(KERNEL)
    result = CliRunner().invoke(fix_command, ["--param", "scale_rows:n_rows", str(tree)])
    assert "do_not_specialize" in (tree / "own.py").read_text(), result.output


def test_fix_output_shows_control_characters_in_names_escaped(odd_tree: Path) -> None:
    (odd_tree / "broken\x1b]0;t\x07.py").write_text("import triton\n@triton.jit\ndef scale_rows(:\n")
    result = CliRunner().invoke(fix_command, ["--param", "scale_rows:n_rows", str(odd_tree)])
    assert result.stdout.count("do_not_specialize += n_rows") == len(ODD_NAMES) + 1, result.output
    assert not CONTROL.search(result.output.replace("\n", "")), repr(CONTROL.search(result.output))
    assert "\\x1b]0;t\\x07" in result.output  # the broken file's error names it, escaped
