"""`jitguard run`: exit codes, signals, a killed child, the user's sitecustomize, cheap non-Triton processes."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from jitguard.launcher import BOOTSTRAP_DIR
from jitguard.report.build import build_report

TINY_KERNEL = textwrap.dedent("""
    import triton, triton.language as tl

    class DevicePointer:
        dtype = "float32"
        def data_ptr(self):
            return 1 << 20

    @triton.jit
    def tiny_kernel(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
""")


@pytest.fixture(scope="module")
def triton_cache(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("triton-cache"))


def jitguard_run(args: list[str], tmp_path: Path, triton_cache: str, extra_env: dict | None = None,
                 log_dir: Path | None = None, **kwargs) -> subprocess.CompletedProcess:
    env = dict(os.environ, TRITON_CACHE_DIR=triton_cache, **(extra_env or {}))
    for name in ("JITGUARD", "JITGUARD_DIR", "JITGUARD_OFFLINE"):
        env.pop(name, None)
    log_dir = log_dir or tmp_path / "logs"
    return subprocess.run([sys.executable, "-m", "jitguard", "run", "--dir", str(log_dir), *args],
                          env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path, **kwargs)


def write_script(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return str(path)


def test_exit_code_of_the_command_is_returned(tmp_path: Path, triton_cache: str) -> None:
    proc = jitguard_run(["--", sys.executable, "-c", "raise SystemExit(5)"], tmp_path, triton_cache)
    assert proc.returncode == 5
    assert "no process imported Triton" in proc.stderr


def test_command_not_found_is_a_one_line_input_error(tmp_path: Path, triton_cache: str) -> None:
    proc = jitguard_run(["--", "no-such-program-jitguard"], tmp_path, triton_cache)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "jitguard run: no-such-program-jitguard: command not found"


def test_missing_command_is_a_usage_error(tmp_path: Path, triton_cache: str) -> None:
    proc = jitguard_run([], tmp_path, triton_cache)
    assert proc.returncode == 2 and "COMMAND" in proc.stderr


def test_environment_reaches_the_command(tmp_path: Path, triton_cache: str) -> None:
    code = ("import os, json; print(json.dumps({k: os.environ.get(k) for k in "
            "('JITGUARD', 'JITGUARD_DIR', 'JITGUARD_MODE', 'JITGUARD_OFFLINE', 'JITGUARD_SUMMARY', 'PYTHONPATH')}))")
    proc = jitguard_run(["--mode", "error", "--offline", "--", sys.executable, "-c", code], tmp_path, triton_cache,
                        extra_env={"PYTHONPATH": "/somewhere/else"})
    env = json.loads(proc.stdout)
    assert env["JITGUARD"] == "1" and env["JITGUARD_MODE"] == "error" and env["JITGUARD_OFFLINE"] == "sm90"
    assert env["JITGUARD_DIR"] == str(tmp_path / "logs") and env["JITGUARD_SUMMARY"] == "0"
    assert env["PYTHONPATH"].split(os.pathsep) == [BOOTSTRAP_DIR, "/somewhere/else"]


def test_process_without_triton_stays_unwatched_and_cheap(tmp_path: Path, triton_cache: str) -> None:
    code = "import sys, json; print(json.dumps(sorted(sys.modules)))"
    plain = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    watched = jitguard_run(["--", sys.executable, "-c", code], tmp_path, triton_cache)
    extra = set(json.loads(watched.stdout)) - set(json.loads(plain.stdout))
    # The bootstrap loads its import watcher and a little of importlib; never jitguard, Triton or torch.
    assert "jitguard.runtime.bootstrap.triton_hook" in extra
    assert not {m for m in extra if m.split(".")[0] in ("triton", "torch")}
    assert "jitguard.runtime.monitor" not in extra and "jitguard" not in extra
    assert not list((tmp_path / "logs").glob("*.ndjson"))


def test_import_triton_starts_the_monitor_with_the_real_loader(tmp_path: Path, triton_cache: str) -> None:
    code = ("import triton, jitguard.runtime.monitor as m; "
            "print(type(triton.__spec__.loader).__name__, type(triton.__loader__).__name__, m.current() is not None)")
    proc = jitguard_run(["--", sys.executable, "-c", code], tmp_path, triton_cache)
    assert proc.returncode == 0, proc.stderr
    loader, loader_attr, running = proc.stdout.split()
    assert loader == loader_attr == "SourceFileLoader" and running == "True"
    report = build_report(tmp_path / "logs")
    assert [p["compiles"] for p in report["processes"]] == [0]  # listed, with no compiles


def test_users_own_sitecustomize_still_runs(tmp_path: Path, triton_cache: str) -> None:
    user_dir = tmp_path / "user_site"
    user_dir.mkdir()
    (user_dir / "sitecustomize.py").write_text("import os\nos.environ['USER_SITECUSTOMIZE_RAN'] = 'yes'\nMARK = 42\n")
    code = "import os, sitecustomize; print(os.environ.get('USER_SITECUSTOMIZE_RAN'), sitecustomize.MARK)"
    proc = jitguard_run(["--", sys.executable, "-c", code], tmp_path, triton_cache,
                        extra_env={"PYTHONPATH": str(user_dir)})
    assert proc.stdout.split() == ["yes", "42"], proc.stderr


def test_failing_user_sitecustomize_is_reported_and_the_program_runs(tmp_path: Path, triton_cache: str) -> None:
    user_dir = tmp_path / "user_site"
    user_dir.mkdir()
    (user_dir / "sitecustomize.py").write_text("raise RuntimeError('broken user sitecustomize')\n")
    proc = jitguard_run(["--", sys.executable, "-c", "print('still ran')"], tmp_path, triton_cache,
                        extra_env={"PYTHONPATH": str(user_dir)})
    assert proc.returncode == 0 and proc.stdout.strip() == "still ran"
    assert "Error in sitecustomize" in proc.stderr and "broken user sitecustomize" in proc.stderr


def test_child_killed_by_sigkill_still_gets_a_report(tmp_path: Path, triton_cache: str) -> None:
    script = write_script(tmp_path, "killed.py", TINY_KERNEL + textwrap.dedent("""
        import os, signal
        x = DevicePointer()
        for n in (1, 16, 17):
            tiny_kernel[(1,)](x, n, BLOCK=16)
        os.kill(os.getpid(), signal.SIGKILL)
    """))
    proc = jitguard_run(["--offline", "--", sys.executable, script, "--api-key", "sk-secret-1",
                         "--hf-token=hf-secret-2"], tmp_path, triton_cache)
    assert proc.returncode == 128 + signal.SIGKILL, proc.stderr
    assert "1 process(es), 1 kernel(s), 3 compile(s) (2 recompile(s)" in proc.stderr
    assert 'do_not_specialize=["n"]' in proc.stderr
    logs = "".join(p.read_text() for p in (tmp_path / "logs").glob("*.ndjson"))
    assert "sk-secret-1" not in logs and "hf-secret-2" not in logs
    assert build_report(tmp_path / "logs")["processes"][0]["argv"][1:] == ["--api-key", "***", "--hf-token=***"]


def _file_in_the_way(tmp_path: Path) -> Path:
    (tmp_path / "a-file").write_text("")
    return tmp_path / "a-file" / "logs"


def _a_file_itself(tmp_path: Path) -> Path:
    (tmp_path / "a-file").write_text("")
    return tmp_path / "a-file"


def _dangling_symlink(tmp_path: Path) -> Path:
    (tmp_path / "logs-link").symlink_to(tmp_path / "gone")
    return tmp_path / "logs-link"


def _read_only_directory(tmp_path: Path) -> Path:
    (tmp_path / "locked").mkdir(mode=0o555)
    return tmp_path / "locked"


needs_non_root = pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes anywhere")

# (how --dir is made unusable, the reason jitguard gives)
UNUSABLE_LOG_DIRS = [
    pytest.param(_file_in_the_way, "cannot create it (Not a directory)", id="a-file-in-its-path"),
    pytest.param(_a_file_itself, "cannot create it (File exists)", id="a-file"),
    pytest.param(_dangling_symlink, "cannot create it (File exists)", id="a-dangling-symlink"),
    pytest.param(_read_only_directory, "cannot write in it (Permission denied)", marks=needs_non_root,
                 id="a-read-only-directory"),
]


@pytest.mark.parametrize("unusable, reason", UNUSABLE_LOG_DIRS)
def test_an_unusable_log_dir_neither_stops_the_command_nor_silences_the_watch(
    tmp_path: Path, triton_cache: str, unusable: Callable[[Path], Path], reason: str,
) -> None:
    log_dir = unusable(tmp_path)
    script = write_script(tmp_path, "storm.py", TINY_KERNEL + textwrap.dedent("""
        x = DevicePointer()
        for n in (1, 16, 17):
            tiny_kernel[(1,)](x, n, BLOCK=16)
        print("the program ran")
        raise SystemExit(3)
    """))
    proc = jitguard_run(["--offline", "--", sys.executable, script], tmp_path, triton_cache, log_dir=log_dir)
    assert proc.returncode == 3, proc.stderr  # the command's own exit code, not a jitguard input error
    assert proc.stdout.strip() == "the program ran"
    where = f"log directory {log_dir}: {reason}"
    assert f"[jitguard] warning: {where}; the command runs watched" in proc.stderr
    assert proc.stderr.count('fix: do_not_specialize=["n"]') == 2  # each recompile's line, as it happens
    assert re.search(r"^  tiny_kernel +3 ", proc.stderr, re.MULTILINE), proc.stderr  # the summary, from memory
    assert proc.stderr.rstrip().splitlines()[-1] == (
        f"[jitguard] no report: compile events were not written: {where}; each watched process that "
        "imported Triton printed its own compile summary above")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_is_forwarded_and_its_exit_code_returned(tmp_path: Path, triton_cache: str, signum: int) -> None:
    ready = tmp_path / "ready"
    script = write_script(tmp_path, "sleeper.py", f"""
        import signal, sys, time
        def on_signal(signum, frame):
            print(f"child got {{signal.Signals(signum).name}}", flush=True)
            sys.exit(3)
        signal.signal({int(signum)}, on_signal)
        open({str(ready)!r}, "w").close()
        time.sleep(60)
    """)
    env = dict(os.environ, TRITON_CACHE_DIR=triton_cache)
    launcher = subprocess.Popen([sys.executable, "-m", "jitguard", "run", "--dir", str(tmp_path / "logs"), "--",
                                 sys.executable, script], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    launcher.send_signal(signum)
    out, err = launcher.communicate(timeout=30)
    assert launcher.returncode == 3, err
    assert f"child got {signal.Signals(signum).name}" in out
    assert "no process imported Triton" in err


def _modules_at_start(env: dict) -> set[str]:
    """The modules a bare `python -c` process has imported once site (and sitecustomize) ran."""
    proc = subprocess.run([sys.executable, "-c", "import sys; print(' '.join(sys.modules))"], env=env,
                          capture_output=True, text=True, check=True)
    return set(proc.stdout.split())


def test_bootstrap_imports_only_its_hook_in_a_process_without_triton(tmp_path: Path) -> None:
    """What the bootstrap adds to every Python process `jitguard run` starts, before any of them imports
    Triton: its import hook alone, plus standard-library modules; never Triton, torch or the monitor (which
    load on the first `import triton`). Its cost is this import set, not a timing (about 5 ms on the CI
    machine, 2026-12-03)."""
    bare = _modules_at_start(dict(os.environ))
    with_bootstrap = _modules_at_start(dict(os.environ, PYTHONPATH=BOOTSTRAP_DIR, JITGUARD="1",
                                            JITGUARD_DIR=str(tmp_path)))
    added = with_bootstrap - bare
    foreign = {m for m in added if m.split(".")[0] not in sys.stdlib_module_names}
    expected = {"sitecustomize", "jitguard.runtime.bootstrap", "jitguard.runtime.bootstrap.triton_hook"}
    assert foreign <= expected, sorted(foreign)
    assert "jitguard.runtime.bootstrap.triton_hook" in with_bootstrap  # the hook is armed
    assert not {m for m in with_bootstrap if m.split(".")[0] in ("triton", "torch", "numpy")}
