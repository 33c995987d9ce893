"""`jitguard scan` with ruff's conventions: file selection, config, rule selection, output formats."""

from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest
from click.testing import CliRunner

from jitguard.codemod.commands import scan_command

# One warning (JG101 num_tokens, line 5) and one info (JG102 hidden, line 5).
KERNEL = textwrap.dedent("""\
    import triton
    import triton.language as tl

    @triton.jit
    def k(x_ptr, num_tokens, hidden, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, 0.0, mask=(offs < hidden) & (offs < num_tokens))
""")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """src/ops.py and generated/gen.py (git-ignored) and .venv/lib.py, each with one kernel; cwd is the project."""
    for relative in ("src/ops.py", "generated/gen.py", ".venv/lib.py", "src/ops_pb2.py"):
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(KERNEL)
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("generated/\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    return tmp_path


def _run(args: list[str], stdin: str | None = None, env: dict[str, str] | None = None):
    return CliRunner().invoke(scan_command, args, input=stdin, env=env)


def _files(result) -> set[str]:
    return {line.split(":", 1)[0] for line in result.stdout.splitlines() if ": JG" in line}


SELECTION_CASES = [
    ("default-is-dot", [], None, {"src/ops.py", "src/ops_pb2.py"}),
    ("gitignore-off", ["--no-respect-gitignore"], None, {"src/ops.py", "src/ops_pb2.py", "generated/gen.py"}),
    ("extend-exclude-glob", ["--extend-exclude", "*_pb2.py"], None, {"src/ops.py"}),
    ("exclude-replaces-defaults", ["--exclude", "src"], None, {".venv/lib.py"}),
    ("config-extend-exclude", [], '[tool.jitguard]\nextend-exclude = ["src/*_pb2.py"]\n', {"src/ops.py"}),
    ("config-exclude", [], '[tool.jitguard]\nexclude = ["src/", ".venv"]\n', set()),
    ("named-file-beats-exclude", ["--extend-exclude", "src", "src/ops.py"], None, {"src/ops.py"}),
    ("force-exclude", ["--force-exclude", "--extend-exclude", "src", "src/ops.py"], None, set()),
]


@pytest.mark.parametrize(("args", "pyproject", "expected"), [c[1:] for c in SELECTION_CASES],
                         ids=[c[0] for c in SELECTION_CASES])
def test_file_selection(project: Path, args: list[str], pyproject: str | None, expected: set[str]) -> None:
    if pyproject:
        (project / "pyproject.toml").write_text(pyproject)
    result = _run(args)
    assert result.exit_code in (0, 1), result.output
    assert {name.replace("./", "", 1) for name in _files(result)} == expected


RULE_CASES = [
    ("default-warnings-only", [], None, {"JG101"}, 1),
    ("all-shows-info", ["--all"], None, {"JG101", "JG102"}, 1),
    ("select-info-rule-shows-it", ["--select", "JG102"], None, {"JG102"}, 0),
    ("ignore", ["--ignore", "JG101"], None, set(), 0),
    ("select-prefix", ["--select", "JG10", "--ignore", "JG102"], None, {"JG101"}, 1),
    ("exit-zero", ["--exit-zero"], None, {"JG101"}, 0),
    ("config-ignore", [], '[tool.jitguard]\nignore = ["JG101"]\n', set(), 0),
    ("config-select", ["--all"], '[tool.jitguard]\nselect = ["JG102"]\n', {"JG102"}, 0),
    ("per-file-ignores", [], '[tool.jitguard]\nper-file-ignores = { "src/**" = ["JG1"] }\n', set(), 0),
]


@pytest.mark.parametrize(("args", "pyproject", "rules", "exit_code"), [c[1:] for c in RULE_CASES],
                         ids=[c[0] for c in RULE_CASES])
def test_rule_selection(project: Path, args: list[str], pyproject: str | None, rules: set[str], exit_code: int) -> None:
    if pyproject:
        (project / "pyproject.toml").write_text(pyproject)
    result = _run([*args, "src/ops.py"])
    found = {line.split(": ", 1)[1].split(" ", 1)[0] for line in result.stdout.splitlines() if ": JG" in line}
    assert (found, result.exit_code) == (rules, exit_code), result.output


def test_cli_select_overrides_config_ignore(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.jitguard]\nignore = ["JG101"]\n')
    assert _run(["src/ops.py"]).exit_code == 0
    result = _run(["--select", "JG101", "src/ops.py"])
    assert result.exit_code == 1 and ": JG101 " in result.stdout


@pytest.mark.parametrize(
    ("pyproject", "args", "message"),
    [
        ('[tool.jitguard]\nexclud = ["x"]\n', [], "unknown key `exclud`"),
        ('[tool.jitguard]\nselect = "JG101"\n', [], "`select` must be a list of strings"),
        ('[tool.jitguard]\nignore = ["JG999"]\n', [], "unknown rule code `JG999`"),
        ("[tool.jitguard\n", ["--config", "pyproject.toml"], "not valid TOML"),
        (None, ["--select", "XX1"], "unknown rule code `XX1`"),
    ],
    ids=["unknown-key", "wrong-type", "unknown-code", "bad-toml", "bad-cli-code"],
)
def test_bad_settings_are_one_error_line(project: Path, pyproject: str | None, args: list[str], message: str) -> None:
    if pyproject:
        (project / "pyproject.toml").write_text(pyproject)
    result = _run(args)
    assert result.exit_code == 2
    assert message in result.stderr
    if pyproject and "--config" not in args:
        assert "pyproject.toml" in result.stderr  # names the file


def test_text_lines_carry_a_column_and_the_summary_goes_to_stderr(project: Path) -> None:
    result = _run(["src/ops.py"])
    assert result.stdout.splitlines() == [
        "src/ops.py:5:14: JG101 [token-count-specialized] k.num_tokens: "
        + result.stdout.split("k.num_tokens: ", 1)[1].strip()
    ]
    assert "1 warning, 1 info in 1 kernel; 1 file scanned" in result.stderr
    quiet = _run(["--quiet", "src/ops.py"])
    assert quiet.stdout == result.stdout and quiet.stderr == ""


@pytest.mark.parametrize(
    ("env", "colored"),
    [({}, False), ({"FORCE_COLOR": "1"}, True), ({"FORCE_COLOR": "1", "NO_COLOR": "1"}, False)],
    ids=["not-a-tty", "force-color", "no-color-wins"],
)
def test_colour(project: Path, env: dict[str, str], colored: bool) -> None:
    result = _run(["src/ops.py"], env=env)
    assert ("\x1b[" in result.stdout) is colored


def test_json_alias_and_format_agree(project: Path) -> None:
    alias = json.loads(_run(["--json", "src/ops.py"]).stdout)
    named = json.loads(_run(["--output-format", "json", "src/ops.py"]).stdout)
    for payload in (alias, named):
        (finding,) = [f for f in payload["findings"] if f["rule"] == "JG101"]
        where = (finding["file"], finding["line"], finding["column"], finding["param"])
        assert where == ("src/ops.py", 5, 14, "num_tokens")
    assert alias["findings"] == named["findings"]


def test_github_annotations(project: Path) -> None:
    lines = _run(["--output-format", "github", "src/ops.py"]).stdout.splitlines()
    assert lines[0].startswith("::warning file=src/ops.py,line=5,col=14,title=JG101 token-count-specialized::")
    assert lines[1].startswith("::notice file=src/ops.py,line=5,col=26,title=JG102 size-specialized::k.hidden: ")


def test_sarif(project: Path) -> None:
    sarif = json.loads(_run(["--output-format", "sarif", "src/ops.py"]).stdout)
    assert sarif["version"] == "2.1.0"
    run = sarif["runs"][0]
    rules = [rule["id"] for rule in run["tool"]["driver"]["rules"]]
    assert "JG109" in rules
    by_rule = {result["ruleId"]: result for result in run["results"]}
    assert by_rule["JG101"]["level"] == "warning" and by_rule["JG102"]["level"] == "note"
    location = by_rule["JG101"]["locations"][0]["physicalLocation"]
    assert location == {"artifactLocation": {"uri": "src/ops.py"}, "region": {"startLine": 5, "startColumn": 14}}
    assert rules[by_rule["JG101"]["ruleIndex"]] == "JG101"


def test_junit(project: Path) -> None:
    root = ElementTree.fromstring(_run(["--output-format", "junit", "src/ops.py"]).stdout)
    (suite,) = root.findall("testsuite")
    assert suite.get("name") == "src/ops.py" and suite.get("failures") == "2"
    failures = [case.find("failure").get("type") for case in suite.findall("testcase")]
    assert sorted(failures) == ["JG101", "JG102"]
    clean = ElementTree.fromstring(_run(["--output-format", "junit", "--select", "JG105", "src/ops.py"]).stdout)
    assert clean.get("failures") == "0" and clean.find("testsuite/testcase").get("name") == "No findings"


def test_stdin_with_a_filename_and_per_file_ignores(project: Path) -> None:
    result = _run(["-", "--stdin-filename", "src/new.py"], stdin=KERNEL)
    assert result.exit_code == 1 and result.stdout.startswith("src/new.py:5:14: JG101 ")
    anonymous = _run(["-"], stdin=KERNEL)
    assert anonymous.stdout.startswith("-:5:14: JG101 ")
    (project / "pyproject.toml").write_text('[tool.jitguard]\nper-file-ignores = { "src/*" = ["JG101"] }\n')
    assert _run(["-", "--stdin-filename", "src/new.py"], stdin=KERNEL).exit_code == 0
    broken = _run(["-", "--stdin-filename", "x.py"], stdin="import triton\n@triton.jit\ndef k(:\n")
    assert broken.exit_code == 2 and "error: x.py: syntax error at line 3" in broken.stderr


def test_missing_path_is_a_usage_error(project: Path) -> None:
    result = _run(["nope"])
    assert result.exit_code == 2 and "nope: no such file or directory" in result.output


def test_nested_gitignore_and_negation(project: Path) -> None:
    (project / "src" / ".gitignore").write_text("*_pb2.py\n")
    assert _files(_run([])) == {"src/ops.py"}
    (project / ".gitignore").write_text("generated/*\n!generated/gen.py\n")
    assert _files(_run([])) == {"src/ops.py", "generated/gen.py"}


def test_a_named_directory_inside_an_excluded_one_is_scanned(project: Path) -> None:
    (project / ".venv" / "pkg").mkdir()
    (project / ".venv" / "pkg" / "k.py").write_text(KERNEL)
    (project / ".venv" / "pkg" / "skip_pb2.py").write_text(KERNEL)
    (project / ".gitignore").write_text(".venv/\ngenerated/\n")
    args = ["--extend-exclude", "*_pb2.py", ".venv/pkg"]
    assert _files(_run(args)) == {".venv/pkg/k.py"}  # the excluded parent does not hide it; its own patterns apply
    assert _files(_run(["--force-exclude", *args])) == set()
