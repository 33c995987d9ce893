"""jitguard as a user installs it, in fresh virtual environments with neither torch nor Triton.

- `python -m build`: an sdist and a wheel built from it, with no setuptools warning, the SPDX
  license, LICENSE, classifiers PyPI accepts, a base install of click, libcst and pathspec only.
- The wheel in a fresh venv: `scan`, `fix`, `report` and `warmup-plan` work; `run` and `demo` say
  in one line which extra to install and exit 2; the pytest plugin loads and stays inert.
- The pre-commit hooks through `pre-commit try-repo` (the base install only).

These tests build and install jitguard, whatever Triton the session runs on: marker `packaging`
(tests/run.sh runs them once, in a step of their own, and prints the sizes).
"""

from __future__ import annotations

import email.parser
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.packaging]

REPO = Path(__file__).resolve().parents[2]
BASE_REQUIREMENTS = {"click", "libcst", "pathspec", "tomli"}  # tomli on Python < 3.11 only

KERNEL = '''import triton
import triton.language as tl


@triton.jit
def add_one_kernel(x_ptr, num_tokens, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    mask = offsets < num_tokens
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1, mask=mask)
'''
FIXED_DECORATOR = '@triton.jit(do_not_specialize=["num_tokens"])'


def user_env(venv: Path | None = None) -> dict[str, str]:
    """The environment of a user's shell: no PYTHONPATH (tests/run.sh puts older Tritons there)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    if venv is not None:
        env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env["VIRTUAL_ENV"] = str(venv)
    return env


def sh(args: list[str | Path], cwd: Path | None = None, venv: Path | None = None,
       env: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in args], cwd=cwd, env=env or user_env(venv), capture_output=True,
                          text=True, timeout=timeout)


def megabytes(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink()) / 1e6


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> tuple[Path, str]:
    """(folder with the sdist and the wheel, the build's output), built as `python -m build` does."""
    out = tmp_path_factory.mktemp("dist")
    # a copy of the source tree, so the build's egg-info and build/ never land in the checkout
    source = out / "source"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(
        ".git", ".venv*", ".ci", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".hypothesis",
        ".mypy_cache", ".ruff_cache", "jitguard-logs"))
    proc = sh([sys.executable, "-m", "build", "--outdir", out, source])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def wheel(dist) -> Path:
    return next(dist[0].glob("jitguard-*.whl"))


@pytest.fixture(scope="module")
def base_venv(wheel, tmp_path_factory) -> Path:
    """A fresh venv with the wheel (no extra) and pytest, as a project that only scans would have."""
    venv = tmp_path_factory.mktemp("base") / "venv"
    created = sh([sys.executable, "-m", "venv", venv])
    assert created.returncode == 0, created.stderr
    installed = sh([venv / "bin" / "python", "-m", "pip", "install", "-q", wheel, "pytest"], venv=venv)
    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
    return venv


def wheel_metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        return email.parser.Parser().parsestr(archive.read(name).decode())


# --- the build ---------------------------------------------------------------------------------------

def test_the_build_warns_about_nothing(dist):
    _, output = dist
    for word in ("Deprecat", "SetuptoolsWarning", "License classifiers", "will be removed"):
        assert word not in output, output[-3000:]


def test_the_wheel_declares_the_license_and_a_light_base_install(wheel):
    import trove_classifiers

    meta = wheel_metadata(wheel)
    assert meta["License-Expression"] == "Apache-2.0"
    assert meta.get_all("License-File") == ["LICENSE"]
    classifiers = meta.get_all("Classifier")
    assert classifiers and not [c for c in classifiers if c not in trove_classifiers.classifiers]
    assert not [c for c in classifiers if c.startswith("License ::")]  # the SPDX expression says it
    requires = meta.get_all("Requires-Dist")
    base = {re.split(r"[<>=;\[ ]", r, maxsplit=1)[0] for r in requires if "extra ==" not in r}
    assert base == BASE_REQUIREMENTS
    extras = set(meta.get_all("Provides-Extra"))
    assert {"monitor", "kernels", "pytest"} <= extras
    for extra, needs in {"monitor": {"triton"}, "kernels": {"triton", "torch", "numpy"},
                         "pytest": {"triton", "torch", "pytest"}}.items():
        brought = {re.split(r"[<>=;\[ ]", r, maxsplit=1)[0] for r in requires if f'extra == "{extra}"' in r}
        assert needs <= brought, (extra, brought)


def test_the_wheel_and_the_sdist_carry_every_file_an_install_needs(dist, wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    # every module of the checkout, kernels/ as jitguard.kernels (a new subpackage must be listed in pyproject)
    sources = {p.relative_to(REPO).as_posix() for p in (REPO / "jitguard").rglob("*.py")}
    sources |= {f"jitguard/kernels/{p.name}" for p in (REPO / "kernels").glob("*.py")}
    assert sorted(sources - names) == []
    for needed in ("jitguard/py.typed", "jitguard-0.1.0.dist-info/licenses/LICENSE",
                   "jitguard-0.1.0.dist-info/entry_points.txt"):
        assert needed in names, needed
    assert not [n for n in names if n.startswith("kernels/")]  # installed as jitguard.kernels only
    sdist = next(dist[0].glob("jitguard-*.tar.gz"))
    with tarfile.open(sdist) as archive:
        members = {m.split("/", 1)[1] for m in archive.getnames() if "/" in m}
    assert {"LICENSE", "pyproject.toml", "README.md", "jitguard/runtime/bootstrap/sitecustomize.py"} <= members
    assert sorted({f"kernels/{p.name}" for p in (REPO / "kernels").glob("*.py")} - members) == []


# --- the base install -------------------------------------------------------------------------------

def test_the_base_install_has_neither_torch_nor_triton(base_venv):
    code = "import importlib.util as u; print([m for m in ('torch', 'triton', 'numpy') if u.find_spec(m)])"
    proc = sh([base_venv / "bin" / "python", "-c", code], venv=base_venv)
    assert proc.stdout.strip() == "[]", proc.stdout + proc.stderr
    print(f"\nbase install venv: {megabytes(base_venv):.0f} MB (click, libcst, pathspec, pytest, pip)")


def test_help_lists_every_command(base_venv):
    proc = sh(["jitguard", "--help"], venv=base_venv)
    assert proc.returncode == 0, proc.stderr
    for command in ("demo", "fix", "report", "run", "scan", "warmup-plan"):
        assert f"  {command} " in proc.stdout


def test_scan_then_fix_on_the_base_install(base_venv, tmp_path):
    (tmp_path / "ops").mkdir()
    source = tmp_path / "ops" / "kern.py"
    source.write_text(KERNEL)
    scan = sh(["jitguard", "scan", "ops"], cwd=tmp_path, venv=base_venv)
    assert scan.returncode == 1 and "JG101" in scan.stdout and "kern.py" in scan.stdout, scan.stdout + scan.stderr
    check = sh(["jitguard", "fix", "--check", "--param", "add_one_kernel:num_tokens", "ops/kern.py"],
               cwd=tmp_path, venv=base_venv)
    assert check.returncode == 1, check.stdout + check.stderr
    assert source.read_text() == KERNEL  # --check writes nothing
    fixed = sh(["jitguard", "fix", "--param", "add_one_kernel:num_tokens", "ops/kern.py"], cwd=tmp_path,
               venv=base_venv)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert FIXED_DECORATOR in source.read_text()
    again = sh(["jitguard", "fix", "--check", "--param", "add_one_kernel:num_tokens", "ops/kern.py"],
               cwd=tmp_path, venv=base_venv)
    assert again.returncode == 0, again.stdout + again.stderr
    rescan = sh(["jitguard", "scan", "ops"], cwd=tmp_path, venv=base_venv)
    assert rescan.returncode == 0, rescan.stdout + rescan.stderr


def write_log(folder: Path) -> None:
    """One process's NDJSON log (the record format of DESIGN.md): a kernel compiled for n == 1, then n % 16 == 0."""
    import json

    folder.mkdir()
    records: list[dict] = [{"type": "process", "pid": 10, "ppid": 1, "argv": ["serve.py"], "role": None,
                            "rank": None, "triton_version": "3.6.0"}]
    for variant, spec in ((1, "one"), (2, "div16")):
        records.append({
            "type": "compile", "kernel": "add_one_kernel", "module": "ops.kern", "file": "ops/kern.py", "line": 5,
            "call_site": "serve.py:3", "pid": 10, "ppid": 1, "device": 0, "phase": "warmup", "variant": variant,
            "key": f"key{variant}", "options": {"num_warps": 4, "num_stages": 3}, "compile_ms": 50.0,
            "disk_cache_hit": False, "triton_version": "3.6.0", "time": float(variant),
            "params": {"x_ptr": {"kind": "ptr", "type": "*fp32", "spec": "aligned16", "value": None},
                       "num_tokens": {"kind": "int", "type": "i32", "spec": spec, "value": None},
                       "BLOCK": {"kind": "constexpr", "type": None, "spec": None, "value": 128}},
            "causes": [] if variant == 1 else [{"param": "num_tokens", "before": "the constant 1",
                                                "after": "int32 divisible by 16", "advice": "do_not_specialize"}],
        })
    (folder / "host-10.ndjson").write_text("".join(json.dumps(r) + "\n" for r in records))


def test_report_and_warmup_plan_need_no_extra(base_venv, tmp_path):
    import json

    write_log(tmp_path / "logs")
    report = sh(["jitguard", "report", "logs", "--json"], cwd=tmp_path, venv=base_venv)
    assert report.returncode == 0, report.stderr
    kernels = json.loads(report.stdout)["kernels"]
    assert [(k["name"], k["variants"]) for k in kernels] == [("add_one_kernel", 2)]
    plan = sh(["jitguard", "warmup-plan", "logs", "-o", "plan.json"], cwd=tmp_path, venv=base_venv)
    assert plan.returncode == 0, plan.stderr
    assert [k["name"] for k in json.loads((tmp_path / "plan.json").read_text())["kernels"]] == ["add_one_kernel"]


MISSING_EXTRAS = [
    # (command line, the extra its one line names)
    (["run", "--", "python", "-c", "pass"], "monitor"),
    (["run", "--offline", "--dir", "logs", "--", "python", "-c", "pass"], "monitor"),
    (["demo"], "kernels"),
]


@pytest.mark.parametrize("args,extra", MISSING_EXTRAS, ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_a_command_that_needs_an_extra_says_which_in_one_line(base_venv, tmp_path, args, extra):
    proc = sh(["jitguard", *args], cwd=tmp_path, venv=base_venv)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.endswith(f"pip install 'jitguard[{extra}]'\n") and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(f"jitguard {args[0]} needs ")
    assert not (tmp_path / "logs").exists()  # nothing started, nothing written


PLAIN_TESTS = '''
import pytest


def test_plain():
    assert 1 + 1 == 2


@pytest.mark.no_recompiles
def test_guarded():
    pass
'''


def test_the_pytest_plugin_stays_inert_without_triton(base_venv, tmp_path):
    (tmp_path / "test_plain.py").write_text(PLAIN_TESTS)
    proc = sh(["python", "-m", "pytest", "-rA", "-p", "no:cacheprovider", "-W", "error::pytest.PytestConfigWarning"],
              cwd=tmp_path, venv=base_venv)
    out = proc.stdout + proc.stderr
    assert "plugins: jitguard" in out  # the entry point loaded the plugin: it is inert, not absent
    assert "PASSED test_plain.py::test_plain" in out
    # a guarded test cannot be judged without Triton: its fixture errors with the install line, no traceback
    assert "ERROR test_plain.py::test_guarded" in out
    assert "pip install 'jitguard[pytest]'" in out and "Traceback" not in out and "INTERNALERROR" not in out, out
    strict = sh(["python", "-m", "pytest", "-p", "no:cacheprovider", "--jitguard-strict"], cwd=tmp_path,
                venv=base_venv)
    assert strict.returncode == pytest.ExitCode.USAGE_ERROR
    assert strict.stderr.strip() == ("ERROR: jitguard's pytest plugin (--jitguard-strict) needs Triton, "
                                     "which is not installed here: pip install 'jitguard[pytest]'"), strict.stderr


# --- pre-commit ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A user's git project with one kernel file."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("pre-commit needs git and a git checkout of jitguard")
    path = tmp_path_factory.mktemp("project")
    (path / "ops").mkdir()
    (path / "ops" / "kern.py").write_text(KERNEL)
    for args in (["init", "-q"], ["add", "-A"]):
        assert sh(["git", *args], cwd=path).returncode == 0
    return path


def pre_commit(args: list[str], project: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = user_env()
    env["PRE_COMMIT_HOME"] = str(home)  # its own cache: the hook environment is built afresh and measured
    env.pop("PRE_COMMIT", None)
    return sh([sys.executable, "-m", "pre_commit", *args], cwd=project, env=env)


def test_the_pre_commit_hooks_run_on_the_base_install(project, tmp_path_factory):
    home = tmp_path_factory.mktemp("pre-commit-home")
    # try-repo builds the hook's environment in a temporary store, the way a hook author tries a change
    caught = pre_commit(["try-repo", str(REPO), "jitguard-check", "--all-files"], project, home)
    out = caught.stdout + caught.stderr
    assert caught.returncode == 1, out
    assert "jitguard: Triton recompile risks" in out and "Failed" in out and "JG101" in out, out

    # a user's config, with the fix hook's args: the environment lands in PRE_COMMIT_HOME, to be measured
    rev = sh(["git", "rev-parse", "HEAD"], cwd=REPO).stdout.strip()
    (project / ".pre-commit-config.yaml").write_text(
        f"repos:\n- repo: {REPO}\n  rev: {rev}\n  hooks:\n  - id: jitguard-fix-check\n"
        f"    args: [--param, 'add_one_kernel:num_tokens']\n  - id: jitguard-check\n")
    assert sh(["git", "add", ".pre-commit-config.yaml"], cwd=project).returncode == 0
    pending = pre_commit(["run", "--all-files", "jitguard-fix-check"], project, home)
    assert pending.returncode == 1, pending.stdout + pending.stderr
    assert (project / "ops" / "kern.py").read_text() == KERNEL  # --check wrote nothing
    (project / "ops" / "kern.py").write_text(KERNEL.replace("@triton.jit", FIXED_DECORATOR))
    clean = pre_commit(["run", "--all-files"], project, home)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert clean.stdout.count("Passed") == 2, clean.stdout

    # the hook environment is the base install: no torch, no Triton
    site_packages = list(home.glob("repo*/py_env-*/lib/python*/site-packages"))
    assert len(site_packages) == 1, sorted(str(p) for p in home.rglob("*"))[:50]
    installed = {p.name.split("-")[0].lower() for p in site_packages[0].glob("*.dist-info")}
    assert {"jitguard", "click", "libcst", "pathspec"} <= installed and not {"torch", "triton"} & installed
    print(f"\npre-commit hook environment: {megabytes(site_packages[0].parents[2]):.0f} MB "
          f"(PRE_COMMIT_HOME {megabytes(home):.0f} MB)")
