"""The READMEs cannot drift: every command and output block in README.md and examples/*/README.md says,
in an HTML comment on the line above its fence, how it is kept true, and this file holds it to that:

- ``<!-- doc-check: run [cwd=DIR] [as=PATH] [cmd="COMMAND"] [triton=X.Y] -->``: run here. Each ``$ `` line
  is a command (bash, in a temporary copy of DIR, whose path the output shows as PATH, or the checkout
  itself when DIR is ``.``); every line shown
  after it must come out of that command (timings, temp names and pids normalized), ``...`` stands for
  lines left out, ``[exit N]`` is its exit code (otherwise 0 or 1), ``# `` lines are comments; the
  commands run in one bash session, so a ``cd`` carries to the next. With
  ``cmd``, the whole block is what COMMAND prints. ``triton=X.Y``: the output shown is that Triton's.
- ``<!-- doc-check: test FILE::NAME -->``: a test elsewhere runs it (too slow, or needs a GPU or a
  download); FILE must define NAME.
- ``<!-- doc-check: illustrative: WHERE, WHEN -->``: measured elsewhere (a GPU, a downloaded tree); the
  note names the machine and the date (YYYY-MM-DD), and so does the text around the block.

Code blocks (python, toml, yaml, json, text) are examples of code or drawings, not commands, and need no marker;
``<!-- doc-check: file PATH -->`` above one says it is PATH's code, and its lines must stand in PATH in that order.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "examples").glob("*/README.md"))]
CODE_LANGUAGES = {"python", "toml", "yaml", "json", "text"}
MARKER = re.compile(r"^<!-- doc-check: (run|test|illustrative|file)(?::? (.*?))? -->$")


@dataclass
class Block:
    """One fenced block of a README: where it is, its marker (kind, argument text) and its lines."""

    doc: Path
    line: int
    language: str
    kind: str
    argument: str
    lines: list[str]

    @property
    def id(self) -> str:
        return f"{self.doc.relative_to(REPO)}:{self.line}"


def fenced_blocks(doc: Path) -> list[Block]:
    """Every fenced block of ``doc`` with the doc-check marker on the line above it (kind "" when none)."""
    text = doc.read_text().splitlines()
    blocks, i = [], 0
    while i < len(text):
        if text[i].startswith("```"):
            end = next(j for j in range(i + 1, len(text)) if text[j].startswith("```"))
            marker = MARKER.match(text[i - 1].strip()) if i else None
            kind, argument = (marker.group(1), marker.group(2) or "") if marker else ("", "")
            blocks.append(Block(doc, i + 1, text[i][3:].strip(), kind, argument, text[i + 1:end]))
            i = end
        i += 1
    return blocks


ALL_BLOCKS = [block for doc in DOCS for block in fenced_blocks(doc)]
BLOCKS = [block for block in ALL_BLOCKS if block.language not in CODE_LANGUAGES]


def normalized(text: str) -> str:
    """Numbers that change between runs (ms, seconds, pids, temp folder names) as placeholders."""
    text = re.sub(r"jitguard-(demo|moe)-\w+", r"jitguard-\1-X", text)
    text = re.sub(r"/tmp/pytest-of-[^/\s]+/pytest-\d+/[^/\s]+", "TMP", text)
    text = re.sub(r"\d+(\.\d+)? ms\b", "N ms", text)
    text = re.sub(r"\d+\.\d+( s)?\b", r"N\1", text)
    text = re.sub(r"\bpid \d+", "pid PID", text)
    # a process table row: pid, ppid, role, compiles, recompiles, compile ms
    text = re.sub(r"^(\s+)\d+(\s+)\d+(\s+\S+\s+\d+\s+\d+\s+)\d+(?=\s)", r"\1PID\2PPID\3N", text)
    # a kernel table row: kernel, where, variants, compiles, processes, warmup ms, serving ms
    text = re.sub(r"^(\s+\S+\s+\S+:\d+\s+\d+\s+\d+\s+\d+\s+)\d+(\s+)\d+(?=\s)", r"\1N\2N", text)
    text = re.sub(r" \(disk cache hit\)|, \d+ from disk cache", "", text)  # depends on what the cache holds
    text = re.sub(r"^=+ (.*) in \d+\.\d+s( \([\d:]+\))? =+$", r"== \1 in Ns ==", text)  # pytest's last line
    # pytest --jitguard's per-kernel row: kernel, defined at, compiles, ms, tests, after warm-up
    text = re.sub(r"^(\s+\S+\s+\S+:\d+\s+\d+\s+)\d+(?=\s+\d+\s+\d+\s)", r"\1N", text)
    # the compile ms column of a compile summary row: `  kernel  variants  compile ms  causes  fix`
    text = re.sub(r"^(\s+\w+\s+\d+\s+)\d+(\s{2,}\S)", r"\1N\2", text)
    # a price's detail (instruction and register counts) depends on the Triton version; its verdict does not
    text = re.sub(r"^(\s*price: \w+: \w+) \(.*\)$", r"\1", text)
    return re.sub(r"(?<=\S)\s{2,}", "  ", text)  # table padding follows the widest number


def options(argument: str) -> dict[str, str]:
    """``key=value`` words of a marker (values may be quoted)."""
    return dict(word.split("=", 1) for word in shlex.split(argument))


def commands_and_output(block: Block) -> list[tuple[str, list[str], int | None]]:
    """(command, lines shown after it, exit code shown or None) for each ``$ `` line of a block."""
    steps: list[tuple[str, list[str], int | None]] = []
    for line in block.lines:
        if line.startswith("$ "):
            steps.append((line[2:], [], None))
        elif not steps or not line.strip() or line.strip() == "..." or line.startswith("# "):
            continue
        elif re.fullmatch(r"\[exit \d+\]", line.strip()):
            command, shown, _ = steps[-1]
            steps[-1] = (command, shown, int(line.strip()[6:-1]))
        else:
            steps[-1][1].append(line)
    return steps


def run_in_one_shell(commands: list[str], cwd: Path, caches: Path) -> list[tuple[int, str]]:
    """(exit code, stdout and stderr) of each command, run one after the other in one bash session (a `cd`
    or a variable carries to the next command, as in a terminal)."""
    env = {name: value for name, value in os.environ.items() if not name.startswith(("PYTEST_", "JITGUARD"))}
    env.pop("TRITON_DEFAULT_FP_FUSION", None)  # what a user's shell has: the outputs shown are a plain run's
    env.pop("CI", None)  # under CI=true pytest prints each summary line whole; a terminal shows the test id alone
    # A cold Triton cache and price cache of the block's own, as on a first run: what the cache answers
    # changes the output, and blocks run side by side under xdist.
    env.update(NO_COLOR="1", PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               TRITON_CACHE_DIR=str(caches / "triton"), JITGUARD_CACHE_DIR=str(caches / "jitguard"))
    script = ["exec 2>&1"]
    for i, command in enumerate(commands):
        script += [f"echo '@@doc-check start {i}@@'", command, f"echo \"@@doc-check end {i} $?@@\""]
    done = subprocess.run(["bash", "-c", "\n".join(script)], cwd=cwd, capture_output=True, text=True, timeout=900,
                          stdin=subprocess.DEVNULL,
                          env=env)
    results = []
    for i in range(len(commands)):
        match = re.search(rf"@@doc-check start {i}@@\n(.*?)@@doc-check end {i} (\d+)@@", done.stdout, re.S)
        assert match, f"`{commands[i]}` did not finish:\n{done.stdout[-3000:]}"
        results.append((int(match.group(2)), match.group(1)))
    return results


def without_loads(output: str) -> str:
    """The report with what Triton's disk cache answered left out (the "loaded" words and column): how
    many variants a process loads rather than compiles depends on which process got there first."""
    lines, out, drop_column = output.splitlines(), [], None
    for line in lines:
        line = re.sub(r",? \(?\d+ loaded \(\d+ from \w+(, \d+ from \w+)*\) in \d+\.\d+ s\)?", "", line)
        if re.match(r"^\s+kernel\s+where\s+variants\s+compiles\s+loaded\s", line):
            drop_column = 4
        elif not line.strip():
            drop_column = None
        if drop_column is not None:
            cells = re.split(r"(\s{2,})", line.strip())  # cells and the padding between them
            if len(cells) > 2 * drop_column:
                del cells[2 * drop_column - 1:2 * drop_column + 1]
            line = "  " + "".join(cells)
        out.append(line)
    return "\n".join(out)


def assert_shown_lines_are_real(shown: list[str], output: str, where: str) -> None:
    real = {normalized(line).rstrip() for line in without_loads(output).splitlines()}
    for line in shown:
        assert normalized(line).rstrip() in real, f"{where}: shown line not in the real output:\n{line}\n---\n{output}"


def triton_minor() -> str:
    import triton
    return ".".join(triton.__version__.split(".")[:2])


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.kind == "run"], ids=lambda b: b.id)
def test_run_blocks_print_what_they_show(block: Block, tmp_path: Path) -> None:
    opts = options(block.argument)
    if "triton" in opts and opts["triton"] != triton_minor():
        pytest.skip(f"{block.id} shows Triton {opts['triton']}'s output")
    cwd_name = opts.get("cwd", ".")
    cwd = REPO
    if cwd_name != ".":
        cwd = tmp_path / "copy" / Path(cwd_name).name
        shutil.copytree(REPO / cwd_name, cwd, ignore=shutil.ignore_patterns("__pycache__"))
    if "cmd" in opts:
        steps = [(opts["cmd"], [line for line in block.lines if line.strip() and line.strip() != "..."], None)]
    else:
        steps = commands_and_output(block)
    assert steps, f"{block.id}: a run block with no `$ ` command and no cmd="
    results = run_in_one_shell([command for command, _, _ in steps], cwd, tmp_path / "caches")
    for (command, shown, exit_code), (rc, output) in zip(steps, results):
        if "as" in opts:  # the copy's folder, named as the README names it
            output = output.replace(str(cwd), opts["as"])
        where = f"{block.id}: `{command}` (exit {rc})"
        assert rc == exit_code if exit_code is not None else rc in (0, 1), f"{where}\n{output}"
        assert_shown_lines_are_real(shown, output, where)


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.kind == "test"], ids=lambda b: b.id)
def test_blocks_checked_elsewhere_name_a_real_test(block: Block) -> None:
    file, _, name = block.argument.partition("::")
    assert name and (REPO / file).is_file(), f"{block.id}: `{block.argument}` is not FILE::NAME"
    assert re.search(rf"^(async )?def {re.escape(name)}\(", (REPO / file).read_text(), re.M), \
        f"{block.id}: {file} defines no {name}"


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.kind == "illustrative"], ids=lambda b: b.id)
def test_illustrative_blocks_say_where_and_when(block: Block) -> None:
    assert re.search(r"\b20\d\d-\d\d-\d\d\b", block.argument), f"{block.id}: no date (YYYY-MM-DD) in its note"
    assert len(block.argument.split(",")) >= 2, f"{block.id}: the note names no machine: {block.argument!r}"


@pytest.mark.parametrize("block", [b for b in ALL_BLOCKS if b.kind == "file"], ids=lambda b: b.id)
def test_code_shown_from_a_file_is_that_files_code(block: Block) -> None:
    source = (REPO / block.argument).read_text().splitlines()
    shown = [line for line in block.lines if line.strip()]
    at = 0
    for line in shown:  # each shown line, in order, in the file (the file may hold more: a docstring, comments)
        assert line in source[at:], f"{block.id}: not in {block.argument} (after line {at}): {line!r}"
        at = source.index(line, at) + 1


def test_every_command_and_output_block_says_how_it_is_kept_true() -> None:
    unmarked = [block.id for block in BLOCKS if not block.kind]
    assert not unmarked, "blocks with no <!-- doc-check: run|test|illustrative --> above them: " + ", ".join(unmarked)


def test_the_block_parser_reads_commands_exit_codes_and_elisions() -> None:
    block = Block(REPO / "README.md", 1, "console", "run", "", [
        "$ jitguard scan k", "k.py:1:2: JG101 x", "...", "[exit 1]", "# a comment", "$ echo hi", "hi"])
    assert commands_and_output(block) == [("jitguard scan k", ["k.py:1:2: JG101 x"], 1), ("echo hi", ["hi"], None)]
    assert normalized("  5200  5199  -  3  2  649  prog.py") == normalized("  11  10  -  3  2  7  prog.py")
    assert normalized("  k  t.py:50  3  8  4  7811  0  fix") == normalized("  k  t.py:50  3  8  4  12  0  fix")
    assert normalized("took 76 ms") == normalized("took 1871 ms") and normalized("x 0.2 s") == "x N s"
    assert normalized("===== 1 failed, 1 passed in 3.32s =====") == normalized("== 1 failed, 1 passed in 12.5s ==")
    loaded = without_loads("r: 2 kernel(s), 6 compile(s), 0.9 s compiling, 2 loaded (2 from disk) in 0.01 s\n"
                           "  kernel  where  variants  compiles  loaded  processes  fix\n"
                           "  k       a.py:3  3         3         2       1          -\n\n"
                           "k (a.py:3): 3 variant(s), 3 compile(s), 12 ms (2 loaded (2 from disk) in 0.01 s)")
    assert loaded.splitlines() == ["r: 2 kernel(s), 6 compile(s), 0.9 s compiling",
                                   "  kernel  where  variants  compiles  processes  fix",
                                   "  k       a.py:3  3         3       1          -", "",
                                   "k (a.py:3): 3 variant(s), 3 compile(s), 12 ms"]


def test_the_layout_names_every_package_folder_and_only_real_files() -> None:
    readme = (REPO / "README.md").read_text()
    block = readme[readme.index("```text", readme.index("## Layout")):]
    block = block[:block.index("```", 3)].splitlines()[1:]
    named = {line.split()[0] for line in block if line.startswith("  ") and not line.startswith("   ")}
    folders = {p.parent.name + "/" for p in (REPO / "jitguard").glob("*/__init__.py")}
    assert folders <= named, f"packages the Layout leaves out: {sorted(folders - named)}"
    files = {name.rstrip(",") for line in block if line.startswith("  ") and not line.startswith("   ")
             for name in line.split("  ")[1].split() if name.rstrip(",").endswith(".py")}
    assert files and all((REPO / "jitguard" / f).is_file() for f in files), sorted(files)
    assert all((REPO / "jitguard" / n).is_dir() for n in named if n.endswith("/")), sorted(named)
