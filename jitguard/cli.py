"""The `jitguard` command line. Each command lives next to the code it drives and loads on use,
so `jitguard --help` answers without importing Triton or torch.

Exit codes: 0 ok, 1 findings or pending changes, 2 usage or input error.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

# name -> ("module:attribute" of a click.Command, one-line help shown by `jitguard --help`)
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("jitguard.demo:demo_command", "Show a recompile storm and its fix on an embedded kernel (CPU-only)."),
    "run": ("jitguard.launcher:run_command", "Run a command with every process watched, then print the report."),
    "report": ("jitguard.report_command:report_command", "Merge per-process logs into one report."),
    "fix": ("jitguard.codemod.commands:fix_command", "Add do_not_specialize to kernels, from a report or by name."),
    "scan": ("jitguard.codemod.commands:scan_command", "Find recompile risks in kernel sources, statically."),
    "warmup-plan": ("jitguard.warmup_plan_command:warmup_plan_command", "Turn a report into a warm-up plan (JSON)."),
}


class LazyGroup(click.Group):
    """A click group whose subcommands are imported only when invoked."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        entry = COMMANDS.get(name)
        if entry is None:
            return None
        target, _ = entry
        module_name, attribute = target.split(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name and module_name.startswith(exc.name):
                raise click.UsageError(f"command {name!r} is not available in this build of jitguard") from exc
            raise
        return getattr(module, attribute)

    def format_commands(self, ctx: click.Context, formatter: Any) -> None:
        rows = [(name, COMMANDS[name][1]) for name in sorted(COMMANDS)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="jitguard", prog_name="jitguard")
def main() -> None:
    """Find and fix Triton JIT recompilation in LLM serving stacks."""


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
