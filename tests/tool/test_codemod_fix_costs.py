"""`jitguard fix --from REPORT` knows what each demotion costs: a real run's report, both
kernels compiled with and without the demotion. `add_one_kernel.n` bounds a mask over contiguous
offsets (costly: 128-bit accesses become 32-bit); `sum_rows_kernel.num_rows` bounds a row loop (free).
Free demotions are applied; costly ones are skipped with their price unless --accept-cost, unknown
ones with their reason unless --accept-unknown; --param is applied whatever it costs, its price said."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

import jitguard
from jitguard import triton_compat
from jitguard.codemod.commands import fix_command
from jitguard.report.command import report_command
from tests import kernels_for_tests as k

KERNEL_FILE = Path(k.__file__)
ADD_ONE = "@triton.jit\ndef add_one_kernel("
ADD_ONE_DEMOTED = '@triton.jit(do_not_specialize=["n"])\ndef add_one_kernel('
SUM_ROWS = "@triton.jit\ndef sum_rows_kernel("
SUM_ROWS_DEMOTED = '@triton.jit(do_not_specialize=["num_rows"])\ndef sum_rows_kernel('


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The same run's report priced (`report --json`), unpriced (`--no-cost`), and without variants."""
    root = tmp_path_factory.mktemp("costs")
    logs = root / "logs"
    x, y = torch.zeros(64 * 32), torch.zeros(64 * 32)
    for kernel in (k.add_one_kernel, k.sum_rows_kernel):  # other tests in this worker may have compiled them
        triton_compat.forget_compiled_variants(kernel)
    with jitguard.offline(compile=True), jitguard.watch(dir=str(logs)):
        for n in (16, 17, 1):
            k.add_one_kernel[(1,)](x, y, n, BLOCK=1024)
            k.sum_rows_kernel[(1,)](x, y, n, BLOCK=64)
    paths = {}
    for name, extra in (("priced", []), ("unpriced", ["--no-cost"])):
        result = CliRunner().invoke(report_command, [str(logs), "--json", *extra])
        assert result.exit_code == 0, result.output
        paths[name] = root / f"{name}.json"
        paths[name].write_text(result.stdout)
    data = json.loads(paths["unpriced"].read_text())
    for entry in data["kernels"]:
        entry.pop("variant_list", None)
    paths["no-variants"] = root / "no-variants.json"
    paths["no-variants"].write_text(json.dumps(data))
    return paths


def _fix(tmp_path: Path, args: list[str]) -> tuple[object, str]:
    target = tmp_path / "kernels_for_tests.py"
    shutil.copyfile(KERNEL_FILE, target)
    result = CliRunner().invoke(fix_command, [*args, str(target)])
    return result, target.read_text()


UNKNOWN_SKIPPED = ["(--accept-unknown applies it)", "instead: keep the specialization", "jitguard warmup-plan",
                   "2 unpriced demotions skipped"]
CASES = [
    # (report, extra args, add_one demoted, sum_rows demoted, stderr lines expected)
    ("priced", [], False, True,
     ["skipped: add_one_kernel:n: costly: ", "128-bit", "; instead: ", "(--accept-cost applies it)",
      "1 costly demotion skipped"]),
    ("priced", ["--accept-cost"], True, True, ["accepted cost: add_one_kernel:n: costly: "]),
    ("unpriced", [], False, True, ["skipped: add_one_kernel:n: costly: ", "128-bit"]),
    # unknown is not free: skipped with its reason and the warm-up alternative, unless --accept-unknown
    ("no-triton", [], False, False,
     ["skipped: add_one_kernel:n: price unknown: not priced: Triton is not installed",
      "skipped: sum_rows_kernel:num_rows: price unknown: ", *UNKNOWN_SKIPPED]),
    ("no-triton", ["--accept-unknown"], True, True,
     ["accepted unknown price: add_one_kernel:n: not priced: Triton is not installed"]),
    ("no-variants", [], False, False,
     ["skipped: add_one_kernel:n: price unknown: no recorded variant (use jitguard report --json)",
      *UNKNOWN_SKIPPED]),
    ("no-variants", ["--accept-unknown"], True, True,
     ["accepted unknown price: add_one_kernel:n: no recorded variant (use jitguard report --json); applied"]),
    ("priced", ["--param", "add_one_kernel:n"], True, True, ["--param add_one_kernel:n: costly: "]),
    ("unpriced", ["--param", "add_one_kernel:n"], True, True, ["--param add_one_kernel:n: costly: "]),
    (None, ["--param", "add_one_kernel:n"], True, False, []),
    (None, ["--param", "sum_rows_kernel:num_rows"], False, True, []),
]


@pytest.mark.parametrize("report, extra, add_one_demoted, sum_rows_demoted, said", CASES,
                         ids=[f"{c[0]}-{'-'.join(c[1]) or 'plain'}" for c in CASES])
def test_fix_applies_free_only_unless_told(
    reports: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, report: str | None,
    extra: list[str], add_one_demoted: bool, sum_rows_demoted: bool, said: list[str],
) -> None:
    args = list(extra)
    if report == "no-triton":
        monkeypatch.setattr("jitguard.codemod.demotion_prices.triton_importable", lambda: False)
        report = "unpriced"
    if report is not None:
        args = ["--from", str(reports[report]), *args]
    result, text = _fix(tmp_path, args)
    assert result.exit_code == 0, result.output
    expected = KERNEL_FILE.read_text()
    if add_one_demoted:
        expected = expected.replace(ADD_ONE, ADD_ONE_DEMOTED)
    if sum_rows_demoted:
        expected = expected.replace(SUM_ROWS, SUM_ROWS_DEMOTED)
    assert text == expected  # every other byte of the file kept
    for line in said:
        assert line in result.stderr, result.stderr
    if report is None:  # no report, no price to say: the user chose the demotion
        assert "price" not in result.stderr, result.stderr
    if not add_one_demoted:
        assert "add_one_kernel: do_not_specialize" not in result.stdout


def test_free_demotion_says_nothing_extra_and_check_skips_costly(reports: dict[str, Path], tmp_path: Path) -> None:
    result, text = _fix(tmp_path, ["--check", "--from", str(reports["priced"])])
    assert result.exit_code == 1, result.output  # sum_rows_kernel would change: the ruff contract holds
    assert text == KERNEL_FILE.read_text()
    assert "sum_rows_kernel: would add do_not_specialize += num_rows" in result.stdout
    assert "add_one_kernel" not in result.stdout
    assert "sum_rows_kernel:num_rows" not in result.stderr  # free: applied without a note


def test_only_costly_advice_leaves_nothing_to_fix(reports: dict[str, Path], tmp_path: Path) -> None:
    data = json.loads(reports["priced"].read_text())
    data["kernels"] = [entry for entry in data["kernels"] if entry["name"] == "add_one_kernel"]
    only_costly = tmp_path / "costly.json"
    only_costly.write_text(json.dumps(data))
    result, text = _fix(tmp_path, ["--check", "--from", str(only_costly)])
    assert result.exit_code == 0, result.output
    assert text == KERNEL_FILE.read_text()
    assert "Nothing to fix" in result.stderr and "skipped: add_one_kernel:n: costly" in result.stderr


@pytest.mark.parametrize("extra, applied", [([], 2), (["--accept-unknown"], 4), (["--accept-unknown", "--diff"], 0)])
def test_scan_json_demotions_are_priced_on_synthesized_signatures(tmp_path: Path, extra: list[str],
                                                                  applied: int) -> None:
    """A scan records no variants: its demotions are priced on signatures synthesized from the source, the
    free ones applied; one whose kernel does not compile in any synthesized signature is unknown, skipped
    with the compiler's reason unless --accept-unknown ("would be applied" when nothing is written)."""
    from jitguard.codemod.commands import scan_command

    source = ("import triton\nimport triton.language as tl\n\n"
              + "".join(f"@triton.jit\ndef rows{i}(x_ptr, num_tokens, BLOCK: tl.constexpr):\n"
                        f"    tl.store(x_ptr + tl.arange(0, BLOCK), 0.0, mask=tl.program_id(0) < num_tokens)\n\n"
                        for i in range(2))
              + "".join(f"@triton.jit\ndef shifted{i}(x_ptr, num_tokens, SHIFT: tl.constexpr):\n"
                        f'    tl.static_assert(SHIFT < 0, "SHIFT must be negative")\n'
                        f"    tl.store(x_ptr + SHIFT, 0.0, mask=tl.program_id(0) < num_tokens)\n\n"
                        for i in range(2)))
    target = tmp_path / "rows.py"
    target.write_text(source)
    scan = CliRunner().invoke(scan_command, ["--json", str(target)])
    (tmp_path / "scan.json").write_text(scan.stdout)
    result = CliRunner().invoke(fix_command, ["--from", str(tmp_path / "scan.json"), *extra, str(target)])
    assert result.exit_code == (1 if "--diff" in extra else 0), result.output
    assert target.read_text().count('@triton.jit(do_not_specialize=["num_tokens"])') == applied
    unknown = [line for line in result.stderr.splitlines() if "shifted0:num_tokens" in line]
    assert len(unknown) == 1 and "SHIFT must be negative" in unknown[0], result.stderr
    verb = "would be applied" if "--diff" in extra else "applied"
    assert unknown[0].startswith("accepted unknown price" if extra else "skipped"), unknown[0]
    assert (verb in unknown[0]) if extra else ("--accept-unknown applies it" in unknown[0])
    assert "rows0:num_tokens" not in result.stderr  # a free demotion is applied without a word


def test_report_module_is_imported_from_the_tree_being_fixed(reports: dict[str, Path], tmp_path: Path) -> None:
    """`jitguard fix` run from elsewhere: the report's module (`jgproj.kernels_for_tests`) is found
    through the file it edits (`<root>/jgproj/kernels_for_tests.py`), so the unpriced report is priced."""
    import subprocess
    import sys

    package = tmp_path / "proj" / "jgproj"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    shutil.copyfile(KERNEL_FILE, package / "kernels_for_tests.py")
    data = json.loads(reports["unpriced"].read_text())
    for entry in data["kernels"]:
        entry["module"] = "jgproj.kernels_for_tests"
    (tmp_path / "unpriced.json").write_text(json.dumps(data))
    result = subprocess.run([sys.executable, "-m", "jitguard", "fix", "--check", "--from", "unpriced.json",
                             str(package)], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 1, result.stderr
    assert "skipped: add_one_kernel:n: costly: " in result.stderr, result.stderr
    assert "sum_rows_kernel: would add do_not_specialize += num_rows" in result.stdout


def test_param_asking_another_demotion_than_the_report_is_priced_anew(reports: dict[str, Path], tmp_path: Path) -> None:
    """The report priced `do_not_specialize` on n; `--param add_one_kernel:n:align` is compiled both ways
    itself: dropping `% 16 == 0` also costs the 128-bit accesses."""
    result, text = _fix(tmp_path, ["--from", str(reports["priced"]), "--param", "add_one_kernel:n:align"])
    assert result.exit_code == 0, result.output
    assert "--param add_one_kernel:n:align: costly: " in result.stderr and "128-bit" in result.stderr
    assert "skipped: add_one_kernel:n: costly: " in result.stderr  # the report's own advice is still skipped
    assert text == KERNEL_FILE.read_text().replace(SUM_ROWS, SUM_ROWS_DEMOTED).replace(
        ADD_ONE, '@triton.jit(do_not_specialize_on_alignment=["n"])\ndef add_one_kernel(')
