"""`jitguard fix` / `jitguard scan` as a user runs them: files on disk, exit codes, messages."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from jitguard.codemod.commands import fix_command, scan_command
from jitguard.codemod.files import progress_for

KERNEL = textwrap.dedent("""\
    import triton
    import triton.language as tl


    @triton.jit
    def scale_rows(x_ptr, out_ptr, num_tokens, stride_x, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        mask = pid < num_tokens
        tl.store(out_ptr + pid * stride_x + offs, tl.load(x_ptr + pid * stride_x + offs, mask=mask), mask=mask)
""")
FIXED_DECORATOR = '@triton.jit(do_not_specialize=["num_tokens"])'


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "rows.py").write_text(KERNEL)
    (tmp_path / "pkg" / "plain.py").write_text("def f(x):\n    return x\n")
    return tmp_path


def _run(command, args: list[str]):
    return CliRunner().invoke(command, [str(a) for a in args])


def _report(path: Path, kernel: str = "scale_rows", file: str = "/srv/app/pkg/rows.py", **params: str) -> Path:
    report = {
        "processes": [],
        "kernels": [
            {
                "name": kernel, "module": "pkg.rows", "file": file, "line": 5, "variants": 3, "compile_ms": 120.0,
                "by_phase": {}, "params": {name: {"specs_seen": [], "recompiles_caused": 2, "advice": advice}
                                           for name, advice in params.items()},
            }
        ],
    }
    path.write_text(json.dumps(report))
    return path


def test_fix_in_place_writes_only_the_decorator_and_exits_0(tree: Path) -> None:
    target = tree / "pkg" / "rows.py"
    result = _run(fix_command, ["--param", "scale_rows:num_tokens", tree])
    assert result.exit_code == 0, result.output
    assert target.read_text() == KERNEL.replace("@triton.jit", FIXED_DECORATOR)
    assert "Fixed 1 kernel in 1 file (1 parameter)" in result.stderr
    again = _run(fix_command, ["--param", "scale_rows:num_tokens", tree])
    assert again.exit_code == 0 and "Nothing to fix" in again.stderr


def test_check_exits_1_and_diff_prints_without_writing(tree: Path) -> None:
    target = tree / "pkg" / "rows.py"
    check = _run(fix_command, ["--check", "--param", "scale_rows:num_tokens", tree])
    assert check.exit_code == 1
    assert "would add do_not_specialize += num_tokens" in check.stdout
    diff = _run(fix_command, ["--diff", "--param", "scale_rows:stride_x:align", tree])
    assert diff.exit_code == 1
    assert f"+++ b/{target.as_posix().lstrip('/')}" in diff.stdout
    assert '+@triton.jit(do_not_specialize_on_alignment=["stride_x"])' in diff.stdout
    assert target.read_text() == KERNEL


def test_fix_from_runtime_report_maps_advice_codes(tree: Path) -> None:
    report = _report(tree / "report.json", num_tokens="int64", stride_x="caller_alignment",
                     BLOCK="constexpr_values", x_ptr="expected")
    result = _run(fix_command, ["--accept-unknown", "--from", report, tree / "pkg"])
    assert result.exit_code == 0, result.output
    assert ('@triton.jit(do_not_specialize=["num_tokens"], do_not_specialize_on_alignment=["stride_x"])'
            in (tree / "pkg" / "rows.py").read_text())
    assert "advice `constexpr_values`" in result.stderr and "advice `expected`" in result.stderr
    assert "annotate it `num_tokens: tl.int64`" in result.stderr


def test_report_kernel_that_no_longer_exists_is_an_input_error(tree: Path) -> None:
    report = _report(tree / "report.json", kernel="gone_kernel", num_tokens="do_not_specialize")
    result = _run(fix_command, ["--from", report, tree])
    assert result.exit_code == 2
    assert "kernel `gone_kernel` (reported at /srv/app/pkg/rows.py:5) not found under the given paths" in result.stderr


def test_report_file_path_picks_among_same_named_kernels(tree: Path) -> None:
    (tree / "other").mkdir()
    (tree / "other" / "rows.py").write_text(KERNEL)
    (tree / "other" / "copy.py").write_text(KERNEL)
    report = _report(tree / "report.json", file="/srv/app/other/rows.py", num_tokens="do_not_specialize")
    result = _run(fix_command, ["--accept-unknown", "--from", report, tree])
    assert result.exit_code == 0, result.output
    assert FIXED_DECORATOR in (tree / "other" / "rows.py").read_text()
    assert (tree / "other" / "copy.py").read_text() == KERNEL
    assert (tree / "pkg" / "rows.py").read_text() == KERNEL


def test_fix_from_scan_json_round_trip(tree: Path) -> None:
    scan = _run(scan_command, ["--json", tree])
    assert scan.exit_code == 1  # num_tokens is a warning
    payload = json.loads(scan.stdout)
    assert payload["files"] == 2
    expected = {"rule": "JG101", "param": "num_tokens", "advice": "do_not_specialize"}
    assert expected.items() <= payload["findings"][0].items()
    (tree / "scan.json").write_text(scan.stdout)
    fixed = _run(fix_command, ["--accept-unknown", "--from", tree / "scan.json", tree / "pkg"])
    assert fixed.exit_code == 0, fixed.output
    assert FIXED_DECORATOR in (tree / "pkg" / "rows.py").read_text()
    rescan = _run(scan_command, [tree / "pkg"])
    assert rescan.exit_code == 0, rescan.output


def test_bad_files_get_one_line_each_and_the_run_goes_on(tree: Path) -> None:
    pkg = tree / "pkg"
    (pkg / "broken.py").write_text("import triton\n@triton.jit\ndef scale_rows(x_ptr, num_tokens:\n")
    (pkg / "binary.py").write_bytes(b"\x00\x01@triton.jit\x00")
    (pkg / "latin.py").write_bytes("import triton\n# caf\xe9\n".encode("latin-1"))
    for command, args in ((fix_command, ["--param", "scale_rows:num_tokens"]), (scan_command, [])):
        result = _run(command, [*args, tree])
        assert result.exit_code == 2, result.output
        errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
        assert f"error: {pkg / 'broken.py'}: syntax error at line 3" in "\n".join(errors)
        assert f"error: {pkg / 'binary.py'}: binary file" in "\n".join(errors)
        assert f"error: {pkg / 'latin.py'}: not UTF-8" in "\n".join(errors)
        assert len(errors) == 3
    # the good file was still fixed
    assert FIXED_DECORATOR in (pkg / "rows.py").read_text()


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_unreadable_file_is_reported(tree: Path) -> None:
    bad = tree / "pkg" / "secret.py"
    bad.write_text(KERNEL)
    bad.chmod(0)
    try:
        result = _run(scan_command, [tree])
    finally:
        bad.chmod(0o644)
    assert result.exit_code == 2
    assert f"error: {bad}: cannot read" in result.stderr


def test_unreadable_file_is_reported_even_as_root(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = tree / "pkg" / "rows.py"
    real = Path.read_bytes

    def deny(self: Path) -> bytes:
        if self == bad:
            raise PermissionError(13, "Permission denied")
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", deny)
    result = _run(scan_command, ["-j", "1", tree])
    assert result.exit_code == 2
    assert f"error: {bad}: cannot read (Permission denied)" in result.stderr


def test_directory_without_python_files_and_missing_path(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("nothing")
    result = _run(scan_command, [tmp_path / "empty"])
    assert result.exit_code == 0
    assert f"warning: no Python files found under {tmp_path / 'empty'}" in result.stderr
    missing = _run(scan_command, [tmp_path / "nope"])
    assert missing.exit_code == 2
    assert "no such file or directory" in missing.output


def test_bad_param_and_bad_report_are_usage_errors(tree: Path) -> None:
    assert _run(fix_command, ["--param", "scale_rows", tree]).exit_code == 2
    assert _run(fix_command, [tree / "missing.py"]).exit_code == 2
    (tree / "junk.json").write_text("{not json")
    result = _run(fix_command, ["--from", tree / "junk.json", tree])
    assert result.exit_code == 2 and "junk.json: not JSON" in result.output
    (tree / "other.json").write_text('{"hello": 1}')
    result = _run(fix_command, ["--from", tree / "other.json", tree])
    assert result.exit_code == 2 and "not a jitguard report or scan" in result.output


def test_constexpr_and_unknown_parameter_are_errors_naming_the_kernel(tree: Path) -> None:
    result = _run(fix_command, ["--param", "scale_rows:BLOCK", "--param", "scale_rows:nope", tree])
    assert result.exit_code == 2
    assert "`BLOCK` is tl.constexpr" in result.stderr
    assert "has no parameter `nope`" in result.stderr


def test_interrupted_write_leaves_the_original_file(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tree / "pkg" / "rows.py"

    def crash(source: str, destination: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("jitguard.codemod.file_writes.os.replace", crash)
    result = _run(fix_command, ["--param", "scale_rows:num_tokens", tree])
    assert result.exit_code != 0
    assert target.read_text() == KERNEL
    assert sorted(p.name for p in (tree / "pkg").iterdir()) == ["plain.py", "rows.py"]  # no temp file left


def test_parallel_run_matches_serial_run(tmp_path: Path) -> None:
    for index in range(40):
        (tmp_path / f"k{index:02d}.py").write_text(KERNEL.replace("scale_rows", f"scale_rows_{index}"))
    serial = _run(scan_command, ["--json", "-j", "1", tmp_path])
    parallel = _run(scan_command, ["--json", "-j", "2", tmp_path])
    assert json.loads(serial.stdout) == json.loads(parallel.stdout)
    params = [arg for index in range(40) for arg in ("--param", f"scale_rows_{index}:num_tokens")]
    fixed = _run(fix_command, ["-j", "2", *params, tmp_path])
    assert fixed.exit_code == 0, fixed.output
    assert "Fixed 40 kernels in 40 files" in fixed.stderr
    assert all(FIXED_DECORATOR in path.read_text() for path in tmp_path.glob("k*.py"))


def test_python_dash_m_jitguard_runs_both_commands(tree: Path) -> None:
    scan = subprocess.run([sys.executable, "-m", "jitguard", "scan", str(tree)], capture_output=True, text=True)
    assert scan.returncode == 1, scan.stderr
    assert "JG101 [token-count-specialized] scale_rows.num_tokens" in scan.stdout
    fix = subprocess.run([sys.executable, "-m", "jitguard", "fix", "--check", "--param", "scale_rows:num_tokens",
                          str(tree)], capture_output=True, text=True)
    assert fix.returncode == 1, fix.stderr
    assert "Would fix 1 kernel in 1 file" in fix.stderr


def test_pre_commit_hook_runs_the_scan() -> None:
    yaml = pytest.importorskip("yaml")
    hooks = yaml.safe_load((Path(__file__).parents[2] / ".pre-commit-hooks.yaml").read_text())
    check = {hook["id"]: hook for hook in hooks}["jitguard-check"]
    assert check["entry"] == "jitguard scan --force-exclude"  # excludes apply to the staged files it is given
    assert check["language"] == "python" and check["types"] == ["python"]


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("JITGUARD_VLLM_TREE"), reason="set JITGUARD_VLLM_TREE to an unpacked vLLM tree")
def test_real_vllm_tree_scan_and_fix_check() -> None:
    """Opt-in: a whole vLLM tree scans without errors, and `fix --from scan` changes only decorators."""
    import ast
    import difflib

    from jitguard.codemod.demotions import load_report
    from jitguard.codemod.file_selection import select_python_files
    from jitguard.codemod.fix_tree import fix_paths
    from jitguard.codemod.kernels import find_kernels

    root = Path(os.environ["JITGUARD_VLLM_TREE"])
    scan = _run(scan_command, ["--json", root])
    assert scan.exit_code == 1, scan.stderr  # vLLM has warnings, and no unreadable file
    payload = json.loads(scan.stdout)
    assert payload["errors"] == [] and payload["kernels"] > 100
    scan_file = Path(os.environ.get("TMPDIR", "/tmp")) / "jitguard-vllm-scan.json"
    scan_file.write_text(scan.stdout)
    demotions, _ = load_report(scan_file)
    run = fix_paths(select_python_files([root]), demotions, jobs=2)
    assert run.errors == []
    changed = [result for result in run.results if result.changed]
    assert changed
    for result in changed:
        assert result.outcome is not None
        ast.parse(result.outcome.source)
        decorator_lines = set()
        for kernel in find_kernels(result.original):
            line, _, end_line, _ = kernel.decorator_span
            decorator_lines.update(range(line, end_line + 1))
        before = result.original.decode().splitlines()
        after = result.outcome.source.decode().splitlines()
        for tag, i1, i2, _, _ in difflib.SequenceMatcher(a=before, b=after, autojunk=False).get_opcodes():
            if tag != "equal":
                assert set(range(i1 + 1, max(i2, i1 + 1) + 1)) <= decorator_lines, (result.path, tag, i1, i2)


def test_ambiguous_param_and_symlinked_file(tree: Path) -> None:
    (tree / "pkg" / "again.py").write_text(KERNEL)
    (tree / "link.py").symlink_to(tree / "pkg" / "rows.py")
    result = _run(fix_command, ["--param", "scale_rows:num_tokens", tree / "pkg", tree / "link.py"])
    assert result.exit_code == 0, result.output
    assert "matches 2 kernels" in result.stderr
    assert (tree / "link.py").is_symlink()
    assert FIXED_DECORATOR in (tree / "pkg" / "rows.py").read_text()
    assert FIXED_DECORATOR in (tree / "pkg" / "again.py").read_text()


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_only_on_a_terminal_for_large_trees() -> None:
    assert progress_for("Scanning", 5000, _Terminal()).enabled
    assert not progress_for("Scanning", 10, _Terminal()).enabled
    assert not progress_for("Scanning", 5000, io.StringIO()).enabled


ROWS_KERNEL = textwrap.dedent("""\
    import triton
    import triton.language as tl


    @triton.jit
    def zero_rows(x_ptr, num_tokens, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + row * BLOCK + offs, 0.0, mask=row < num_tokens)
""")


def _variants_over_token_counts(kernel_file: Path, log_dir: Path | None = None) -> int:
    import contextlib
    import importlib.util

    torch = pytest.importorskip("torch")
    import jitguard

    spec = importlib.util.spec_from_file_location(f"rows_{abs(hash(kernel_file.read_text()))}", kernel_file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x = torch.zeros(64 * 16)
    with jitguard.offline(compile=False), jitguard.watch(dir=str(log_dir) if log_dir else None) as recorder, \
            contextlib.redirect_stderr(io.StringIO()):
        for n in (1, 2, 3, 16, 17, 32):
            module.zero_rows[(n,)](x, n, BLOCK=16)
    return recorder.variants("zero_rows")


def test_runtime_report_drives_the_fix_end_to_end(tmp_path: Path) -> None:
    kernel_file = tmp_path / "rows_kernel.py"
    kernel_file.write_text(ROWS_KERNEL)
    assert _variants_over_token_counts(kernel_file, tmp_path / "logs") == 3
    report = subprocess.run([sys.executable, "-m", "jitguard", "report", str(tmp_path / "logs"), "--json"],
                            capture_output=True, text=True)
    assert report.returncode in (0, 1), report.stderr
    (tmp_path / "report.json").write_text(report.stdout)
    result = _run(fix_command, ["--accept-unknown", "--from", tmp_path / "report.json", kernel_file])
    assert result.exit_code == 0, result.output
    fixed = ROWS_KERNEL.replace("@triton.jit", '@triton.jit(do_not_specialize=["num_tokens"])')
    assert kernel_file.read_text() == fixed
    assert _variants_over_token_counts(kernel_file) == 1


def test_scan_json_qualname_picks_the_class_kernel(tmp_path: Path) -> None:
    source = textwrap.dedent("""\
        import triton


        class First:
            @staticmethod
            @triton.jit
            def kernel(x_ptr, num_tokens, hidden):
                tl.store(x_ptr, 0, mask=hidden < num_tokens)


        class Second:
            @staticmethod
            @triton.jit(do_not_specialize=["num_tokens"])
            def kernel(x_ptr, num_tokens, hidden):
                tl.store(x_ptr, 0, mask=hidden < num_tokens)
    """)
    (tmp_path / "two.py").write_text(source)
    scan = _run(scan_command, ["--json", tmp_path])
    findings = json.loads(scan.stdout)["findings"]
    assert [(f["qualname"], f["param"]) for f in findings if f["rule"] == "JG101"] == [("First.kernel", "num_tokens")]
    (tmp_path / "scan.json").write_text(scan.stdout)
    result = _run(fix_command, ["--accept-unknown", "--from", tmp_path / "scan.json", tmp_path / "two.py"])
    assert result.exit_code == 0, result.output
    assert "matches" not in result.stderr
    assert (tmp_path / "two.py").read_text() == source.replace(
        "@triton.jit\n", '@triton.jit(do_not_specialize=["num_tokens"])\n', 1
    )


def test_commands_return_exit_codes_when_embedded(tree: Path) -> None:
    """Other commands (the demo) call fix_command.main(..., standalone_mode=False)."""
    code = fix_command.main(["--check", "--param", "scale_rows:num_tokens", str(tree)], standalone_mode=False)
    assert code == 1
    assert fix_command.main(["--param", "scale_rows:num_tokens", str(tree)], standalone_mode=False) in (0, None)
    assert scan_command.main([str(tree / "pkg" / "plain.py")], standalone_mode=False) in (0, None)
