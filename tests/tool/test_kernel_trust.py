"""Logs and reports are data: reading them imports a recorded kernel's module only from this
environment's import roots (or `--price-from`), never from the folder being read, and only a file that
defines that Triton kernel (checked by parsing, never by running). A module whose parent package's
`__init__` fails is still loaded from its file, as the watched process had it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from jitguard.codemod.commands import fix_command
from jitguard.events import Cause, CompileEvent, ParamSpec, to_json_line
from jitguard.replay.kernel_loading import KernelLoadError, KernelTrust, defines_jit_kernel, load_module
from jitguard.report.command import report_command
from jitguard.startup.plan_command import warmup_plan_command

REPO = Path(__file__).resolve().parents[2]

KERNEL_SOURCE = textwrap.dedent('''
    import triton
    import triton.language as tl


    @triton.jit
    def scale_elements(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2, mask=mask)
''')


@pytest.mark.parametrize("source, found", [
    ("@triton.jit\ndef k(x): pass\n", True),
    ("@jit\ndef k(x): pass\n", True),
    ("@gluon.jit\ndef k(x): pass\n", True),
    ("@triton.jit(do_not_specialize=['n'])\ndef k(x, n): pass\n", True),
    ("@triton.autotune(configs=[], key=['n'])\n@triton.jit\ndef k(x, n): pass\n", True),
    ("@triton.heuristics({'B': lambda a: 4})\n@triton.jit\ndef k(x, B): pass\n", True),
    ("class Ops:\n    @staticmethod\n    @triton.jit\n    def k(x): pass\n", True),
    ("def k(x): pass\nfast = triton.jit(k)\n", True),
    ("def k(x, n): pass\nfast = triton.jit(do_not_specialize=['n'])(k)\n", True),
    ("from triton import jit as tjit\n@tjit(do_not_specialize=['x'])\ndef k(x): pass\n", True),
    ("from triton.experimental.gluon import jit as gjit\n@gjit\ndef k(x): pass\n", True),
    ("from somewhere import jit as tjit\n@tjit\ndef k(x): pass\n", False),
    ("def k(x): pass\n", False),
    ("@functools.cache\ndef k(x): pass\n", False),
    ("@triton.jit\ndef other(x): pass\n", False),
    ("print('hello')\n", False),
    ("def broken(:\n", False),
])
def test_a_kernel_is_recognised_by_parsing_its_file(tmp_path: Path, source: str, found: bool) -> None:
    (tmp_path / "m.py").write_text(source)
    assert defines_jit_kernel(str(tmp_path / "m.py"), "k") is found


def test_the_trust_check_says_why_a_file_is_not_imported(tmp_path: Path) -> None:
    outside = tmp_path / "outside" / "ops.py"
    outside.parent.mkdir()
    outside.write_text(KERNEL_SOURCE)
    logs = REPO / "tests"  # inside the working directory's tree, but the folder being read
    cases = [
        (KernelTrust(), str(outside), "outside this environment's import roots"),
        (KernelTrust(data_dirs=(str(outside.parent),), extra_roots=()), str(outside), "lies in the folder being read"),
        (KernelTrust(data_dirs=(str(logs),)), str(logs / "kernels_for_tests.py"), "lies in the folder being read"),
        (KernelTrust(extra_roots=(str(outside.parent),)), str(outside), None),
        (KernelTrust(extra_roots=(str(outside.parent),)), str(tmp_path / "outside" / "gone.py"), "no such file"),
        (KernelTrust(check_roots=False), str(outside), None),
        (KernelTrust(check_roots=False), sysconfig.get_paths()["stdlib"] + "/this.py",
         "defines no Triton kernel named scale_elements"),
    ]
    for trust, file, why in cases:
        problem = trust.problem(file, "scale_elements")
        assert (problem is None) if why is None else (why in (problem or "")), (file, problem)


def _write_log(logs: Path, module: str, file: str, kernel: str = "scale_elements") -> None:
    """Two variants of `kernel`, `n` flipping 16/17: the report advises a demotion and prices it."""
    params = {"x_ptr": ParamSpec("ptr", "*fp32", "aligned16"), "y_ptr": ParamSpec("ptr", "*fp32", "aligned16"),
              "BLOCK": ParamSpec("constexpr", "constexpr", value=1024)}
    events = [CompileEvent(kernel=kernel, module=module, file=file, line=6, key=f"k{i}", variant=i, pid=1,
                           params={**params, "n": ParamSpec("int", "i32", spec)})
              for i, spec in ((1, "div16"), (2, "plain"))]
    events[1].causes = [Cause("n", "int32 divisible by 16", "int32", "do_not_specialize_on_alignment")]
    logs.mkdir(parents=True, exist_ok=True)
    (logs / "host-1.ndjson").write_text("".join(to_json_line(e) + "\n" for e in events))


def _planted_package(logs: Path, marker: Path) -> Path:
    package = logs / "evilpkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(f"open({str(marker)!r}, 'w').write('init ran')\n")
    (package / "k.py").write_text(f"open({str(marker)!r}, 'w').write('k ran')\n" + KERNEL_SOURCE)
    return package / "k.py"


def test_a_log_dir_s_own_package_is_never_imported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    logs, marker = tmp_path / "logs", tmp_path / "ran.txt"
    planted = _planted_package(logs, marker)
    _write_log(logs, "evilpkg.k", str(planted))
    monkeypatch.chdir(logs)  # the planted package is even importable from the working directory
    report = CliRunner().invoke(report_command, [str(logs), "--json"])
    assert report.exit_code == 0, report.output
    cost = json.loads(report.stdout)["kernels"][0]["params"]["n"]["cost"]
    assert cost["verdict"] == "unknown" and "lies in the folder being read" in cost["detail"], cost
    (logs / "report.json").write_text(report.stdout)
    elsewhere = tmp_path / "src"
    elsewhere.mkdir()
    (elsewhere / "ops.py").write_text(KERNEL_SOURCE)
    fixed = CliRunner().invoke(fix_command, ["--check", "--from", str(logs / "report.json"), str(elsewhere)])
    assert "(--accept-unknown applies it)" in fixed.stderr, fixed.stderr
    plan = CliRunner().invoke(warmup_plan_command, [str(logs), "-o", str(tmp_path / "plan.json")])
    assert plan.exit_code == 0, plan.output
    assert not marker.exists() and "evilpkg" not in sys.modules


def test_a_report_naming_module_this_prints_no_zen(tmp_path: Path) -> None:
    stdlib_this = os.path.join(sysconfig.get_paths()["stdlib"], "this.py")
    logs = tmp_path / "logs"
    _write_log(logs, "this", stdlib_this, kernel="s")
    report = subprocess.run([sys.executable, "-m", "jitguard", "report", str(logs), "--json"], cwd=tmp_path,
                            capture_output=True, text=True)
    assert "Beautiful is better than ugly" not in report.stdout + report.stderr
    cost = json.loads(report.stdout)["kernels"][0]["params"]["n"]["cost"]
    assert cost["verdict"] == "unknown" and "outside this environment's import roots" in cost["detail"], cost
    (tmp_path / "report.json").write_text(report.stdout)
    (tmp_path / "s.py").write_text(KERNEL_SOURCE.replace("scale_elements", "s"))
    fixed = subprocess.run([sys.executable, "-m", "jitguard", "fix", "--check", "--from", "report.json", "s.py"],
                           cwd=tmp_path, capture_output=True, text=True)
    assert "Beautiful is better than ugly" not in fixed.stdout + fixed.stderr
    plan = {"jitguard_warmup_plan": 1, "kernels": [{
        "name": "s", "module": "this", "qualname": "s", "file": "", "line": 1,
        "variants": [{"params": {}, "options": {}, "launch_kwargs": {}, "key": ""}]}]}
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    warm = subprocess.run([sys.executable, "-c", "import jitguard; jitguard.warmup('plan.json')"], cwd=tmp_path,
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert "Beautiful is better than ugly" not in warm.stdout + warm.stderr
    assert "defines no Triton kernel named s" in warm.stderr, warm.stderr


def test_a_package_whose_parent_init_fails_still_prices_its_kernel(tmp_path: Path) -> None:
    from jitguard.price.demotion_cost import DemotionCostChecker

    root = tmp_path / "proj"
    package = root / "needsdep_pkg" / "ops"
    package.mkdir(parents=True)
    (root / "needsdep_pkg" / "__init__.py").write_text("import no_such_optional_dependency_jg  # noqa\n")
    (package / "__init__.py").write_text("raise ImportError('compiled extension missing')\n")
    (package / "tiles.py").write_text("BLOCK_DEFAULT = 1024\n")
    (package / "kernels.py").write_text("from .tiles import BLOCK_DEFAULT  # a sibling import still resolves\n"
                                        + KERNEL_SOURCE)
    entry = {"name": "scale_elements", "module": "needsdep_pkg.ops.kernels", "file": str(package / "kernels.py"),
             "params": {"n": {"advice": "do_not_specialize_on_alignment"}},
             "variant_list": [{"params": {"x_ptr": {"kind": "ptr", "type": "*fp32", "spec": "aligned16"},
                                          "y_ptr": {"kind": "ptr", "type": "*fp32", "spec": "aligned16"},
                                          "n": {"kind": "int", "type": "i32", "spec": "div16"},
                                          "BLOCK": {"kind": "constexpr", "type": "constexpr", "value": 1024}},
                               "options": {}}]}
    checker = DemotionCostChecker(trust=KernelTrust(extra_roots=(str(root),)))
    try:
        cost = checker.cost_for_report_kernel(entry, "n")
        assert cost.verdict == "costly" and "128-bit" in cost.detail, cost
        assert "needsdep_pkg" not in sys.modules  # the stand-in parents served that load only
    finally:
        for name in [n for n in sys.modules if n.startswith("needsdep_pkg")]:
            del sys.modules[name]


def test_a_module_that_itself_fails_names_both_tries(tmp_path: Path) -> None:
    (tmp_path / "brokenmod_jg.py").write_text("import no_such_module_jg\n" + KERNEL_SOURCE)
    with pytest.raises(KernelLoadError, match=r"brokenmod_jg.*No module named 'no_such_module_jg'"):
        load_module("brokenmod_jg", str(tmp_path / "brokenmod_jg.py"), "scale_elements",
                    KernelTrust(extra_roots=(str(tmp_path),)))


@pytest.mark.parametrize("source, name, found", [
    ("def _k(x): pass\nfast = triton.jit(_k)\n", "fast", True),
    ("def _k(x, n): pass\nfast = triton.jit(do_not_specialize=['n'])(_k)\n", "fast", True),
    ("def _k(x, n): pass\ntuned = triton.autotune(configs=[], key=['n'])(triton.jit(_k))\n", "tuned", True),
    ("def _k(x): pass\nfast = functools.cache(_k)\n", "fast", False),
    ("fast = 3\n", "fast", False),
])
def test_a_binding_to_a_jit_call_is_a_kernel(tmp_path: Path, source: str, name: str, found: bool) -> None:
    (tmp_path / "m.py").write_text(source)
    assert defines_jit_kernel(str(tmp_path / "m.py"), name) is found
