"""The `jitguard` command line. Each command lives next to the code it drives and loads on use,
so `jitguard --help` answers without importing Triton or torch.

Exit codes: 0 ok, 1 findings or pending changes, 2 usage or input error, or a crash.
"""

from __future__ import annotations

import importlib
import sys
import traceback
from typing import Any, NoReturn

import click

from jitguard.extras import extra_for_missing_module, missing_extra_message

# name -> ("module:attribute" of a click.Command, one-line help shown by `jitguard --help`)
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("jitguard.demo:demo_command", "Show a recompile storm and its fix on an embedded kernel (CPU-only)."),
    "run": ("jitguard.launcher:run_command", "Run a command with every process watched, then print the report."),
    "report": ("jitguard.report.command:report_command", "Merge per-process logs into one report."),
    "fix": ("jitguard.codemod.commands:fix_command",
            "Apply the fixes priced free: from a scan of PATHs, a report or scan (--from), or by name."),
    "scan": ("jitguard.codemod.commands:scan_command", "Find recompile risks in kernel sources, statically."),
    "warmup-plan": ("jitguard.startup.plan_command:warmup_plan_command", "Turn a report into a warm-up plan (JSON)."),
    "bundle": ("jitguard.startup.bundle_command:bundle_command",
               "Compile a plan's kernels for a target once; pack them into one file to load anywhere."),
}

# command -> the extra it needs beyond the base install (jitguard/extras.py); the others run on the base
COMMAND_EXTRAS: dict[str, str] = {"run": "monitor", "demo": "kernels", "bundle": "monitor"}


def _missing_extra_line(what: str, exc: ModuleNotFoundError) -> str | None:
    """One line naming the extra that brings the module `exc` did not find, or None if no extra does."""
    extra = extra_for_missing_module(exc.name)
    if extra is None:
        return None
    return missing_extra_message(what, extra, [(exc.name or "").split(".")[0]])


def _exit_missing_extra(ctx: click.Context, line: str) -> NoReturn:
    click.echo(line, err=True)
    ctx.exit(2)


def _exit_crashed(ctx: click.Context) -> NoReturn:
    """An error no command expected: its traceback, one line saying so, and exit 2 (as ruff does), so that
    a crash never reads as exit 1, "findings left"."""
    traceback.print_exc()
    name = f"jitguard {ctx.invoked_subcommand or ''}".rstrip()
    click.echo(f"error: {name} crashed: {sys.exc_info()[1]!r} (traceback above)", err=True)
    ctx.exit(2)


class LazyGroup(click.Group):
    """A click group whose subcommands are imported only when invoked."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        entry = COMMANDS.get(name)
        if entry is None:
            return None
        target, _ = entry
        extra = COMMAND_EXTRAS.get(name)
        missing = missing_extra_message(f"jitguard {name}", extra) if extra else None
        if missing:
            _exit_missing_extra(ctx, missing)
        module_name, attribute = target.split(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            line = _missing_extra_line(f"jitguard {name}", exc)  # the module imports torch or Triton at its top
            if line:
                _exit_missing_extra(ctx, line)
            if exc.name and module_name.startswith(exc.name):
                raise click.UsageError(f"command {name!r} is not available in this build of jitguard") from exc
            raise
        return getattr(module, attribute)

    def invoke(self, ctx: click.Context) -> Any:
        # A command that imports torch or Triton only when it runs still gets one line, not a traceback.
        try:
            return super().invoke(ctx)
        except ModuleNotFoundError as exc:
            line = _missing_extra_line(f"jitguard {ctx.invoked_subcommand or ''}".rstrip(), exc)
            if line is None:
                _exit_crashed(ctx)
            _exit_missing_extra(ctx, line)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception:
            _exit_crashed(ctx)

    def format_commands(self, ctx: click.Context, formatter: Any) -> None:
        rows = [(name, COMMANDS[name][1]) for name in sorted(COMMANDS)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


TRUST_EPILOG = (
    "Trust: logs, reports and scan results are data: reading them never imports or runs what they name, "
    "except the price check, which imports a kernel's module only when its file lies in this "
    "environment's import roots (cwd, PYTHONPATH, sys.path, site-packages, and for fix the PATHs it fixes; "
    "not the folder being read) and parses as defining that Triton kernel; --price-from DIR trusts more. "
    "A warm-up plan and a bundle are code: load only ones you trust. README: 'Trust'."
)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]}, epilog=TRUST_EPILOG)
@click.version_option(package_name="jitguard", prog_name="jitguard")
def main() -> None:
    """Find and fix Triton JIT recompilation in LLM serving stacks."""


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
