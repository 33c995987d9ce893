"""`jitguard run [--dir D] [--mode M] [--offline] -- CMD ...`: watch every process of a command.

The command runs with jitguard's bootstrap `sitecustomize` first on PYTHONPATH and JITGUARD=1,
so every Python process it starts (subprocess, multiprocessing spawn / forkserver / fork,
torch.multiprocessing) starts the monitor on its first `import triton` and logs each compile to
`D/<host>-<pid>.ndjson`. Signals are forwarded to the command; when it ends (killed or not) the
merged report is printed on stderr and `jitguard run` exits with the command's exit code.

A log directory that cannot be created or written stops neither the command nor the watch: the
command runs watched all the same (log lines, modes and budgets work), each process prints its own
compile summary at exit from memory, and the end says that no events were written and where.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import Any

import click

from jitguard.render_text import escape_controls

BOOTSTRAP_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "runtime", "bootstrap")

_FORWARDED_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2",
                                                              "SIGINT", "SIGWINCH", "SIGCONT") if hasattr(signal, name))


class LaunchError(RuntimeError):
    """The command could not be started (not found, not executable)."""


def default_log_dir() -> str:
    """A fresh directory under ./jitguard-logs, named by the start time."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return os.path.join("jitguard-logs", f"run-{stamp}-{os.getpid()}")


def log_dir_problem(log_dir: str) -> str | None:
    """Why no process could write its log in `log_dir` (creating it if needed), or None if one can.

    Probed with a real file, not permission bits: root, read-only mounts and full quotas all answer.
    """
    try:
        os.makedirs(log_dir, exist_ok=True)
    except OSError as exc:
        return f"cannot create it ({exc.strerror or exc})"
    try:
        handle, probe = tempfile.mkstemp(prefix=".jitguard-probe-", dir=log_dir)
    except OSError as exc:
        return f"cannot write in it ({exc.strerror or exc})"
    os.close(handle)
    try:
        os.unlink(probe)
    except OSError:
        pass
    return None


def child_environment(log_dir: str, mode: str, offline_arch: str | None,
                      base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for the watched command: bootstrap first on PYTHONPATH, JITGUARD_* set."""
    env = dict(os.environ if base is None else base)
    old_path = env.get("PYTHONPATH", "")
    parts = [p for p in old_path.split(os.pathsep) if p and os.path.abspath(p) != BOOTSTRAP_DIR]
    env["PYTHONPATH"] = os.pathsep.join([BOOTSTRAP_DIR] + parts)
    env["JITGUARD"] = "1"
    env["JITGUARD_DIR"] = os.path.abspath(log_dir)
    env["JITGUARD_MODE"] = mode
    env["JITGUARD_SUMMARY"] = "0"  # one merged report at the end instead of a table per process
    if offline_arch:
        env["JITGUARD_OFFLINE"] = offline_arch
    else:
        env.pop("JITGUARD_OFFLINE", None)
    # Ray workers are started by each node's raylet, not by this command: Ray's runtime_env reaches them.
    from jitguard.integrations.ray import set_runtime_env_hook
    set_runtime_env_hook(env)
    return env


def _tty_delivers_sigint_to_child() -> bool:
    # Ctrl-C on a terminal reaches the whole foreground process group, the child included:
    # forwarding it as well would interrupt the child twice.
    try:
        return os.tcgetpgrp(sys.stdin.fileno()) == os.getpgrp()
    except (OSError, ValueError, AttributeError):
        return False


def run_watched(command: Sequence[str], env: dict[str, str]) -> int:
    """Run `command` with `env`, forwarding signals; return its exit code (128+N if killed by signal N)."""
    try:
        child = subprocess.Popen(list(command), env=env)
    except FileNotFoundError as exc:
        raise LaunchError(f"{command[0]}: command not found") from exc
    except PermissionError as exc:
        raise LaunchError(f"{command[0]}: permission denied") from exc

    def forward(signum: int, frame: Any) -> None:
        if signum == signal.SIGINT and _tty_delivers_sigint_to_child():
            return
        try:
            child.send_signal(signum)
        except ProcessLookupError:
            pass

    previous = {}
    for signum in _FORWARDED_SIGNALS:
        try:
            previous[signum] = signal.signal(signum, forward)
        except (ValueError, OSError):  # not the main thread, or not catchable here
            pass
    try:
        while True:
            try:
                returncode = child.wait()
                break
            except InterruptedError:
                continue
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 128 - returncode if returncode < 0 else returncode


# Interpreter flags that leave jitguard's bootstrap out: -I and -E ignore PYTHONPATH (and JITGUARD=1),
# -S skips the site module that imports sitecustomize.
_UNWATCHED_FLAGS = {"I": "ignores PYTHONPATH", "E": "ignores PYTHONPATH", "S": "skips sitecustomize"}
_PYTHON_NAME = re.compile(r"(python|pypy)[0-9.]*(\.exe)?$")


def unwatched_python_flag(command: Sequence[str]) -> str | None:
    """'-I ignores PYTHONPATH' when `command` starts a Python whose flags keep jitguard's bootstrap
    out (its compiles would run unwatched); None otherwise."""
    if not command or not _PYTHON_NAME.match(os.path.basename(command[0])):
        return None
    arguments = iter(command[1:])
    for argument in arguments:
        if argument in ("-", "--") or not argument.startswith("-") or argument.startswith("--"):
            return None  # the script, stdin, or a long option (none of which isolates)
        letters = argument[1:]
        for index, letter in enumerate(letters):
            if letter in _UNWATCHED_FLAGS:
                return f"-{letter} {_UNWATCHED_FLAGS[letter]}"
            if letter in "cm":
                return None  # -c CODE / -m MODULE: the rest is the program's
            if letter in "WX":
                if index == len(letters) - 1:
                    next(arguments, None)  # -W ARG / -X ARG
                break
    return None


def _unwatched_words(flag: str, log_dir: str) -> str:
    return (f"python {flag}, where jitguard's bootstrap is: its compiles run unwatched. Drop the flag, or "
            f"start the watch in the program itself (jitguard.install(dir={log_dir!r}) before its first kernel)")


def print_run_report(log_dir: str, stream: Any = None, log_problem: str | None = None,
                     unwatched_flag: str | None = None) -> None:
    """Print the merged report of `log_dir` (or why there is none) to `stream` (stderr by default).

    With `log_problem` (from `log_dir_problem`) no report is read: the directory held none of this run's events.
    """
    from jitguard.report.build import ReportInputError, build_report
    from jitguard.report.render_tables import format_text

    stream = stream or sys.stderr
    if log_problem:
        stream.write(f"[jitguard] no report: compile events were not written: log directory "
                     f"{os.path.abspath(log_dir)}: {log_problem}; each watched process that imported Triton printed "
                     "its own compile summary above\n")
        stream.flush()
        return
    try:
        report = build_report(log_dir)
    except ReportInputError as exc:
        if unwatched_flag:
            stream.write(f"[jitguard] no report: {exc}: {_unwatched_words(unwatched_flag, log_dir)}\n")
        else:
            # No log at all: nothing imported Triton, the watch never started, or no process could write here.
            stream.write(f"[jitguard] no report: {exc} (no process imported Triton; or the watch never started "
                         "in them: a python run with -I, -E or -S, or a PYTHONPATH the program replaced, leaves "
                         "out jitguard's bootstrap, then call jitguard.install() in the program; or none could "
                         "write there, which each such process says on stderr)\n")
        return
    stream.write("\n" + format_text(report))
    stream.write(f"[jitguard] logs: {log_dir}  (jitguard report {log_dir} --json > report.json)\n")
    stream.flush()


@click.command("run", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
# A plain path: a --dir that names a file is one more unusable directory, not a reason to stop the command.
@click.option("--dir", "log_dir", type=click.Path(path_type=str), metavar="DIRECTORY", default=None,
              help="Where each process writes <host>-<pid>.ndjson (default: ./jitguard-logs/run-<time>-<pid>).")
@click.option("--mode", type=click.Choice(["log", "warn", "error"]), default="log", show_default=True,
              help="What a compile during serving does: log it, warn, or raise RecompileError.")
@click.option("--offline", "offline_arch", flag_value="sm90", default=None,
              help="Use the compile-only sm_90 backend in every process (real compiles, no GPU).")
@click.option("--bundle", type=click.Path(exists=True, dir_okay=False, path_type=str), default=None,
              help="A compile bundle (jitguard bundle) each process installs into its Triton cache first.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def run_command(log_dir: str | None, mode: str, offline_arch: str | None, bundle: str | None,
                command: tuple[str, ...]) -> None:
    """Run COMMAND with every Python process watched, then print the merged report.

    Example: jitguard run -- python -m vllm.entrypoints.openai.api_server --model M
    """
    log_dir = log_dir or default_log_dir()
    if os.path.isdir(log_dir) and any(name.endswith(".ndjson") for name in os.listdir(log_dir)):
        click.echo(f"[jitguard] note: {log_dir} already holds logs; the report will include them", err=True)
    problem = log_dir_problem(log_dir)
    env = child_environment(log_dir, mode, offline_arch)
    if bundle:
        env["JITGUARD_BUNDLE"] = os.path.abspath(bundle)
    if problem:
        # Never a reason to stop the command or its watch; the processes keep their events in memory.
        click.echo(f"[jitguard] warning: log directory {os.path.abspath(log_dir)}: {problem}; the command runs "
                   "watched all the same (compile lines, modes, budgets), each process prints its compile "
                   "summary at exit, and no events are written", err=True)
        env["JITGUARD_SUMMARY"] = "1"
    unwatched = unwatched_python_flag(command)
    if unwatched:
        click.echo(f"[jitguard] warning: {_unwatched_words(unwatched, log_dir)}", err=True)
    try:
        returncode = run_watched(command, env)
    except LaunchError as exc:
        click.echo(f"jitguard run: {exc}", err=True)
        sys.exit(2)
    try:
        print_run_report(log_dir, log_problem=problem, unwatched_flag=unwatched)
    except Exception as exc:  # the command's exit code is the run's result, whatever its logs hold
        click.echo(f"[jitguard] no report: reading {log_dir} failed ({type(exc).__name__}: "
                   f"{escape_controls(str(exc))[:200]}); `jitguard report {log_dir}` says more", err=True)
    sys.exit(returncode)
