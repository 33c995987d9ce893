"""`jitguard fix` under faults: odd line endings and encodings, file permissions, signals, big files."""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys
import textwrap
import tokenize
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from jitguard.codemod.commands import fix_command, scan_command
from jitguard.codemod.demotions import Demotion
from jitguard.codemod.file_writes import TEMPORARY_SUFFIX
from jitguard.codemod.fix import fix_source
from jitguard.codemod.fix_tree import fix_paths
from jitguard.codemod.kernels import find_kernels

FIXED = b'@triton.jit(do_not_specialize=["n"])'
LATIN1_COOKIE = "# -*- coding: latin-1 -*-\n"

# (id, before, after): the kernel `k` gets `n` in do_not_specialize; every other byte stays.
SOURCE_FORMS = [
    (
        "lone-cr-line-endings",
        b"import triton\r@triton.jit\rdef k(x_ptr, n):\r    pass\r",
        b"import triton\r" + FIXED + b"\rdef k(x_ptr, n):\r    pass\r",
    ),
    (
        "lone-cr-inside-a-multiline-decorator",
        b"import triton\r@triton.jit(\r    debug=False,  # keep\r)\rdef k(x_ptr, n):\r    pass\r",
        b'import triton\r@triton.jit(\r    debug=False,  # keep\r    do_not_specialize=["n"],\r)\r'
        b"def k(x_ptr, n):\r    pass\r",
    ),
    (
        "form-feed-before-the-decorator",
        b"import triton\n\x0c@triton.jit\ndef k(x_ptr, n):\n    pass\n",
        b"import triton\n\x0c" + FIXED + b"\ndef k(x_ptr, n):\n    pass\n",
    ),
    (
        "form-feed-line-between-sections",
        b"import triton\n\n\x0c\n@triton.jit\ndef k(x_ptr, n):\n    pass\n",
        b"import triton\n\n\x0c\n" + FIXED + b"\ndef k(x_ptr, n):\n    pass\n",
    ),
    (
        "latin-1-cookie-non-ascii-inside-the-decorator",
        (LATIN1_COOKIE + "import triton\n@triton.jit(\n    debug=False,  # réglé\n)\ndef k(x_ptr, n):\n    pass\n")
        .encode("latin-1"),
        (LATIN1_COOKIE + 'import triton\n@triton.jit(\n    debug=False,  # réglé\n    do_not_specialize=["n"],\n)\n'
         "def k(x_ptr, n):\n    pass\n").encode("latin-1"),
    ),
    (
        "latin-1-cookie-non-ascii-names-in-the-list",
        (LATIN1_COOKIE + "import triton\n@triton.jit(do_not_specialize=['é'])\ndef k(x_ptr, é, n):\n    pass\n")
        .encode("latin-1"),
        (LATIN1_COOKIE + "import triton\n@triton.jit(do_not_specialize=['é', 'n'])\ndef k(x_ptr, é, n):\n    pass\n")
        .encode("latin-1"),
    ),
    (
        # C3 A9 is "é" in UTF-8 and "Ã©" in latin-1: byte offsets differ between the two readings.
        "latin-1-cookie-bytes-that-also-read-as-utf-8",
        (LATIN1_COOKIE + "import triton\n@triton.jit(debug=False)  # Ã©\ndef k(x_ptr, n):  # Ã©\n    pass\n")
        .encode("latin-1")
        .replace(b"@triton.jit(debug=False)  # \xc3\xa9", b"@triton.jit(  # \xc3\xa9\n    debug=False)"),
        (LATIN1_COOKIE + 'import triton\n@triton.jit(  # Ã©\n    debug=False,\n    do_not_specialize=["n"])\n'
         "def k(x_ptr, n):  # Ã©\n    pass\n").encode("latin-1"),
    ),
    (
        "cp1252-cookie-curly-quotes-in-a-comment",
        ("# coding: cp1252\nimport triton\n@triton.jit(\n    debug=False,  # \u201cfast\u201d\n)\ndef k(x_ptr, n):\n"
         "    pass\n").encode("cp1252"),
        ('# coding: cp1252\nimport triton\n@triton.jit(\n    debug=False,  # \u201cfast\u201d\n'
         '    do_not_specialize=["n"],\n)\n'
         "def k(x_ptr, n):\n    pass\n").encode("cp1252"),
    ),
    (
        "utf-8-bom",
        b"\xef\xbb\xbfimport triton\n@triton.jit\ndef k(x_ptr, n):\n    pass\n",
        b"\xef\xbb\xbfimport triton\n" + FIXED + b"\ndef k(x_ptr, n):\n    pass\n",
    ),
]


def _plan(source: bytes) -> dict:
    kernels = [kernel for kernel in find_kernels(source) if kernel.name == "k"]
    assert len(kernels) == 1, "the kernel must be found"
    return {("k", kernels[0].line): [("n", "do_not_specialize")]}


@pytest.mark.parametrize("before, after", [case[1:] for case in SOURCE_FORMS], ids=[c[0] for c in SOURCE_FORMS])
def test_odd_line_endings_and_encodings_are_fixed_byte_exactly(before: bytes, after: bytes) -> None:
    outcome = fix_source(before, _plan(before))
    assert outcome.errors == []
    assert outcome.source == after
    ast.parse(outcome.source)
    again = fix_source(outcome.source, _plan(outcome.source))
    assert again.source == outcome.source and not again.changed


@pytest.mark.parametrize("before, after", [case[1:] for case in SOURCE_FORMS], ids=[c[0] for c in SOURCE_FORMS])
def test_scan_then_fix_on_disk_finds_and_fixes_the_kernel(tmp_path: Path, before: bytes, after: bytes) -> None:
    target = tmp_path / "kernels.py"
    target.write_bytes(before)
    scan = CliRunner().invoke(scan_command, ["--json", str(tmp_path)])
    assert json.loads(scan.stdout)["kernels"] == 1, scan.output
    result = CliRunner().invoke(fix_command, ["--param", "k:n", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert target.read_bytes() == after
    assert "Fixed 1 kernel in 1 file" in result.stderr


def test_diff_of_a_latin_1_file_shows_its_text(tmp_path: Path) -> None:
    before = SOURCE_FORMS[4][1]
    (tmp_path / "kernels.py").write_bytes(before)
    result = CliRunner().invoke(fix_command, ["--diff", "--param", "k:n", str(tmp_path)])
    assert result.exit_code == 1
    assert '+    do_not_specialize=["n"],' in result.stdout
    assert "# réglé" in result.stdout
    assert (tmp_path / "kernels.py").read_bytes() == before


# (id, source, the reason on the one error line)
REFUSED_SOURCES = [
    ("unknown-codec-in-the-cookie",
     b"# coding: no-such-codec\nimport triton\n@triton.jit\ndef k(x_ptr, n):\n    pass\n",
     "bad encoding declaration (unknown encoding: no-such-codec)"),
    ("byte-the-cookie-codec-cannot-read",
     b"# coding: cp1252\nimport triton\n@triton.jit\ndef k(x_ptr, n):  # \x81\n    pass\n",
     "not valid cp1252 (its coding cookie)"),
    ("no-cookie-and-not-utf-8", b"import triton\n@triton.jit\ndef k(x_ptr, n):  # caf\xe9\n    pass\n",
     "not UTF-8 (byte"),
]


@pytest.mark.parametrize("source, reason", [case[1:] for case in REFUSED_SOURCES], ids=[c[0] for c in REFUSED_SOURCES])
def test_undecodable_files_are_refused_with_one_line(tmp_path: Path, source: bytes, reason: str) -> None:
    target = tmp_path / "kernels.py"
    target.write_bytes(source)
    result = CliRunner().invoke(fix_command, ["--param", "k:n", str(tmp_path)])
    assert result.exit_code == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 2, result.stderr  # the file, then the kernel the request could not find
    assert errors[0].startswith(f"error: {target}: {reason}")
    assert "Traceback" not in result.output
    assert target.read_bytes() == source


# ---- linear time: per-file work does not grow with the number of edited kernels ----

def _many_kernels(count: int) -> str:
    parts = ["import triton\nimport triton.language as tl\nNAMES = ['a', 'b']\n"]
    for index in range(count):
        parts.append(f"\n\n@triton.jit\ndef kernel_{index}(x_ptr, num_tokens, BLOCK: tl.constexpr):\n"
                     "    offs = tl.arange(0, BLOCK)\n    tl.store(x_ptr + offs, 0, mask=offs < num_tokens)\n")
    return "".join(parts)


@pytest.mark.parametrize("count", [1, 8, 96])
def test_one_tokenize_pass_and_one_parse_per_file_whatever_the_kernel_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    target = tmp_path / "many.py"
    target.write_text(_many_kernels(count))
    passes = {"tokenize": 0, "parse": 0}
    real_tokens, real_parse = tokenize.generate_tokens, ast.parse

    def counting_tokens(*args, **kwargs):
        passes["tokenize"] += 1
        return real_tokens(*args, **kwargs)

    def counting_parse(source, *args, **kwargs):
        if kwargs.get("mode", args[1] if len(args) > 1 else "exec") == "exec":
            passes["parse"] += 1  # whole-file parses (a rewritten decorator is checked on its own)
        return real_parse(source, *args, **kwargs)

    monkeypatch.setattr(tokenize, "generate_tokens", counting_tokens)
    monkeypatch.setattr(ast, "parse", counting_parse)
    demotions = [Demotion(f"kernel_{index}", "num_tokens", "do_not_specialize", "--param") for index in range(count)]
    run = fix_paths([target], demotions, jobs=1)
    assert len(run.changes) == count and run.errors == []
    assert passes == {"tokenize": 1, "parse": 1}
    # the quote style comes from the file's own strings ('a', 'b'), probed once for all kernels
    assert run.results[0].outcome.source.count(b"@triton.jit(do_not_specialize=['num_tokens'])") == count


# ---- writing: permissions, owners, symlinks, honest summaries ----

KERNEL = "import triton\n\n\n@triton.jit\ndef k(x_ptr, n):\n    pass\n"
KERNEL_FIXED = KERNEL.replace("@triton.jit\n", '@triton.jit(do_not_specialize=["n"])\n')


def _tree(root: Path, names: list[str]) -> list[Path]:
    paths = []
    for name in names:
        path = root / name
        path.write_text(KERNEL.replace("def k(", f"def {path.stem}("))
        paths.append(path)
    return paths


def _leftovers(root: Path) -> list[str]:
    return sorted(p.name for p in root.rglob("*") if p.name.endswith(TEMPORARY_SUFFIX))


def test_read_only_file_is_refused_and_not_counted_as_fixed(tmp_path: Path) -> None:
    locked, free = _tree(tmp_path, ["a.py", "b.py"])
    locked.chmod(0o444)
    result = CliRunner().invoke(fix_command, ["--param", "a:n", "--param", "b:n", str(tmp_path)])
    assert result.exit_code == 2
    assert result.stderr.splitlines().count(f"error: {locked}: read-only file (mode 0444); not written") == 1
    assert f"{free}:5: b: do_not_specialize += n" in result.stdout
    assert str(locked) not in result.stdout  # no "a: do_not_specialize += n" for a file left alone
    assert "Fixed 1 kernel in 1 file (1 parameter)" in result.stderr
    assert locked.read_text() == KERNEL.replace("def k(", "def a(")
    assert free.read_text() == KERNEL_FIXED.replace("def k(", "def b(")
    assert oct(locked.stat().st_mode & 0o777) == oct(0o444)


def test_only_a_read_only_file_says_nothing_was_written(tmp_path: Path) -> None:
    (locked,) = _tree(tmp_path, ["a.py"])
    locked.chmod(0o444)
    result = CliRunner().invoke(fix_command, ["--param", "a:n", str(tmp_path)])
    assert result.exit_code == 2
    assert "Fixed" not in result.output
    assert "Nothing written; 1 file checked" in result.stderr


needs_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown needs root")


@needs_root
@pytest.mark.parametrize("mode", [0o640, 0o664, 0o2775, 0o600])
def test_owner_group_and_mode_survive_the_rewrite(tmp_path: Path, mode: int) -> None:
    (target,) = _tree(tmp_path, ["a.py"])
    os.chown(target, 4242, 4343)
    target.chmod(mode)
    result = CliRunner().invoke(fix_command, ["--param", "a:n", str(tmp_path)])
    assert result.exit_code == 0, result.output
    after = target.stat()
    assert (after.st_uid, after.st_gid, oct(after.st_mode & 0o7777)) == (4242, 4343, oct(mode))
    assert target.read_text() == KERNEL_FIXED.replace("def k(", "def a(")


@needs_root
def test_an_owner_that_cannot_be_kept_refuses_the_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (target,) = _tree(tmp_path, ["a.py"])
    os.chown(target, 4242, 4343)

    def refuse(*args: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "chown", refuse)  # what a non-root user gets for another user's file
    result = CliRunner().invoke(fix_command, ["--param", "a:n", str(tmp_path)])
    assert result.exit_code == 2
    assert f"error: {target}: owned by uid 4242 gid 4343, which this user cannot keep" in result.stderr
    assert target.read_text() == KERNEL.replace("def k(", "def a(")
    assert _leftovers(tmp_path) == []


Prepare = Callable[[Path, Path, pytest.MonkeyPatch], None]  # (file to lock, a writable file, monkeypatch)


def _read_only(mode: int) -> Prepare:
    def prepare(locked: Path, free: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        locked.chmod(mode)
    return prepare


def _owned_by_another_user(locked: Path, free: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    os.chown(locked, 4242, 4343)
    os.chown(free, 1000, os.getegid())
    monkeypatch.setattr(os, "geteuid", lambda: 1000)  # fix runs as user 1000, who cannot give a file to 4242


def _directory_not_writable(locked: Path, free: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_access = os.access

    def access(path: object, mode: int, **kwargs: object) -> bool:
        # what a non-root user gets for a directory of mode 0555 (root is never refused, so it is simulated)
        return False if Path(str(path)) == locked.parent and mode & os.W_OK else real_access(path, mode, **kwargs)
    monkeypatch.setattr(os, "access", access)


# (id, how the file `a.py` is made unwritable, the reason fix gives)
UNWRITABLE = [
    pytest.param(_read_only(0o444), "read-only file (mode 0444)", id="read-only-0444"),
    pytest.param(_read_only(0o555), "read-only file (mode 0555)", id="read-only-0555"),
    pytest.param(_owned_by_another_user, "owned by uid 4242 gid 4343, which this user cannot keep on a rewritten file",
                 marks=needs_root, id="owned-by-another-user"),
    pytest.param(_directory_not_writable,
                 "cannot write (directory {dir} is not writable: no temporary file can be made there)",
                 id="directory-not-writable"),
]


@pytest.mark.parametrize("flag", ["--check", "--diff"])
@pytest.mark.parametrize("prepare, reason", UNWRITABLE)
def test_check_says_a_pending_change_cannot_be_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flag: str,
    prepare: Prepare, reason: str,
) -> None:
    (tmp_path / "locked").mkdir()
    (locked,), (free,) = _tree(tmp_path / "locked", ["a.py"]), _tree(tmp_path, ["b.py"])
    prepare(locked, free, monkeypatch)
    result = CliRunner().invoke(fix_command, [flag, "--param", "a:n", "--param", "b:n", str(tmp_path)])
    assert result.exit_code == 1, result.output  # still "changes needed", not an input error
    expected = f"warning: {locked}: {reason.format(dir=locked.parent)}; would change but cannot be written"
    assert [line for line in result.stderr.splitlines() if str(locked) in line] == [expected]
    assert "Would fix 1 kernel in 1 file (1 parameter); 1 file would change but cannot be written" in result.stderr
    assert locked.read_text() == KERNEL.replace("def k(", "def a(")  # nothing written in either mode
    assert free.read_text() == KERNEL.replace("def k(", "def b(")


@pytest.mark.parametrize("flag", ["--check", "--diff"])
def test_check_on_only_a_read_only_file_says_fix_could_write_nothing(tmp_path: Path, flag: str) -> None:
    (locked,) = _tree(tmp_path, ["a.py"])
    locked.chmod(0o444)
    result = CliRunner().invoke(fix_command, [flag, "--param", "a:n", str(tmp_path)])
    assert result.exit_code == 1, result.output
    assert "Would fix" not in result.output
    assert "Nothing fix could write; 1 file would change but cannot be written; 1 file checked" in result.stderr


def test_check_and_fix_give_a_read_only_file_the_same_reason(tmp_path: Path) -> None:
    (locked,) = _tree(tmp_path, ["a.py"])
    locked.chmod(0o444)
    check = CliRunner().invoke(fix_command, ["--check", "--param", "a:n", str(tmp_path)])
    fix = CliRunner().invoke(fix_command, ["--param", "a:n", str(tmp_path)])
    assert f"warning: {locked}: read-only file (mode 0444); would change" in check.stderr
    assert f"error: {locked}: read-only file (mode 0444); not written" in fix.stderr


@pytest.mark.parametrize("flags, code", [(["--check"], 1), ([], 0)])
def test_dangling_symlink_is_skipped(tmp_path: Path, flags: list[str], code: int) -> None:
    _tree(tmp_path, ["a.py"])
    (tmp_path / ".#a.py").symlink_to("root@host.1234:1700000000")  # an Emacs lock file
    result = CliRunner().invoke(fix_command, [*flags, "--param", "a:n", str(tmp_path)])
    assert result.exit_code == code, result.output
    assert "error" not in result.stderr


def test_symlinked_file_keeps_its_link(tmp_path: Path) -> None:
    (real,) = _tree(tmp_path, ["real.py"])
    (tmp_path / "links").mkdir()
    link = tmp_path / "links" / "link.py"
    link.symlink_to(real)
    result = CliRunner().invoke(fix_command, ["--param", "real:n", str(link)])
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and real.read_text() == KERNEL_FIXED.replace("def k(", "def real(")


# ---- signals during the write phase ----

# The child runs `jitguard fix` and sends itself the signal while the first file is being written
# (after the temporary file is filled, before the rename): the worst moment to be stopped.
CHILD = textwrap.dedent("""
    import os, signal, sys
    signum, times = int(sys.argv[1]), int(sys.argv[2])
    real_fsync = os.fsync
    def fsync_then_signal(fd):
        real_fsync(fd)
        if not getattr(fsync_then_signal, "done", False):
            fsync_then_signal.done = True
            for _ in range(times):
                os.kill(os.getpid(), signum)
    os.fsync = fsync_then_signal
    from jitguard.cli import main
    main(sys.argv[3:], prog_name="jitguard")
""")


def _fix_with_signal(root: Path, signum: int, times: int) -> subprocess.CompletedProcess:
    args = ["fix", "--param", "a:n", "--param", "b:n", "--param", "c:n", str(root)]
    return subprocess.run([sys.executable, "-c", CHILD, str(signum), str(times), *args],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_stops_between_files_and_says_which_were_written(tmp_path: Path, signum: int) -> None:
    a, b, c = _tree(tmp_path, ["a.py", "b.py", "c.py"])
    result = _fix_with_signal(tmp_path, signum, times=1)
    assert result.returncode == 128 + signum, result.stderr
    assert _leftovers(tmp_path) == []
    assert a.read_text() == KERNEL_FIXED.replace("def k(", "def a(")  # the file being written is finished
    assert b.read_text() == KERNEL.replace("def k(", "def b(") and c.read_text() == KERNEL.replace("def k(", "def c(")
    assert f"{a}:5: a: do_not_specialize += n" in result.stdout
    assert str(b) not in result.stdout and str(c) not in result.stdout
    name = signal.Signals(signum).name
    assert (f"not written: {b}\nnot written: {c}\n"
            f"Stopped by {name}: 1 file written, 2 not written (run fix again to finish).") in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_second_signal_stops_at_once_without_a_temporary_file(tmp_path: Path, signum: int) -> None:
    paths = _tree(tmp_path, ["a.py", "b.py", "c.py"])
    result = _fix_with_signal(tmp_path, signum, times=2)
    assert result.returncode != 0
    assert _leftovers(tmp_path) == []
    for path in paths:
        assert path.read_text() == KERNEL.replace("def k(", f"def {path.stem}(")


@pytest.mark.parametrize("flags, code", [([], 0), (["--check"], 1)])
def test_hard_linked_file_is_fixed_under_its_name_and_the_other_links_are_named(
        tmp_path: Path, flags: list[str], code: int) -> None:
    """A rewrite replaces the name, not the file (as black and ruff do): the other hard links (say a
    package manager's shared cache) keep the old text, and fix says so for each file, in both modes."""
    (fixed,) = _tree(tmp_path, ["a.py"])
    (tmp_path / "cache").mkdir()
    cached = tmp_path / "cache" / "a.py"
    os.link(fixed, cached)
    result = CliRunner().invoke(fix_command, [*flags, "--param", "a:n", str(fixed)])
    assert result.exit_code == code, result.output
    verb = "would keep" if flags else "keeps"
    tense = "writes" if flags else "wrote"
    assert (f"note: {fixed}: its 1 other hard link {verb} the old text (fix {tense} a new file under this name only)"
            in result.stderr.splitlines())
    assert cached.read_text() == KERNEL.replace("def k(", "def a(")
    expected = KERNEL if flags else KERNEL_FIXED
    assert fixed.read_text() == expected.replace("def k(", "def a(")
    assert not _leftovers(tmp_path)


def test_a_file_with_no_other_link_gets_no_link_note(tmp_path: Path) -> None:
    _tree(tmp_path, ["a.py"])
    result = CliRunner().invoke(fix_command, ["--param", "a:n", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "hard link" not in result.output
