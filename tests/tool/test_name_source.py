"""A process whose role changes while it runs (a Ray worker runs one task, then another): each compile is
recorded under the role and rank its name source gives at that moment, and so is the process in the log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import jitguard
from jitguard import triton_compat
from jitguard.report.build import build_report
from jitguard.runtime import monitor
from tests import kernels_for_tests as k


@pytest.fixture(autouse=True)
def clean_state():  # type: ignore[no-untyped-def]
    monitor.uninstall()
    for cache in triton_compat.all_kernel_caches(k.add_one_kernel):
        cache.clear()
    with jitguard.offline():
        yield
    monitor.uninstall()


def _compile(n: int) -> None:
    k.add_one_kernel[(1,)](torch.zeros(256), torch.zeros(256), n, BLOCK=32)


def test_each_compile_takes_the_role_its_name_source_gives(tmp_path: Path) -> None:
    monitor.install(dir=str(tmp_path), summary=False)
    current: dict = {"named": None}
    monitor.set_name_source(lambda: current["named"])
    _compile(3)  # no name yet: the process's own (none)
    current["named"] = ("task embed", None)
    _compile(16)
    current["named"] = ("actor Trainer", 2)
    _compile(1)
    _compile(33)  # same class as 3: no compile
    roles = [(e.role, e.rank) for e in monitor.current().events]
    assert roles == [(None, None), ("task embed", None), ("actor Trainer", 2)]
    # The log holds a process record per renaming, and the report names the process by the last.
    (log,) = tmp_path.glob("*.ndjson")
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["role"], r["rank"]) for r in records if r["type"] == "process"][-1] == ("actor Trainer", 2)
    (process,) = build_report(tmp_path)["processes"]
    assert (process["role"], process["rank"], process["compiles"]) == ("actor Trainer", 2, 3)


def test_a_name_source_that_raises_leaves_the_compile_recorded_under_the_names_it_had(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    monitor.install(dir=str(tmp_path), summary=False)
    monitor.set_process_info(role="worker", rank=0)

    def broken() -> tuple[str | None, int | None] | None:
        raise RuntimeError("runtime context gone")

    monitor.set_name_source(broken)
    _compile(3)
    (event,) = monitor.current().events
    assert (event.role, event.rank) == ("worker", 0)
    assert "runtime context gone" in capsys.readouterr().err
