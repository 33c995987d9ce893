"""How each kernel arrived: every compile event says cold / disk / bundle / remote, on every Triton from
3.2, and the report, the guard's failure and the run summary count cold compiles apart from loads."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

import jitguard
from jitguard import triton_compat
from jitguard.events import CompileEvent, ParamSpec, ProcessRecord, to_json_line
from jitguard.report.build import build_report
from jitguard.report.render_html import render_html
from jitguard.report.render_tables import format_text
from jitguard.runtime.monitor import current
from tests import kernels_for_tests as K

torch = pytest.importorskip("torch")


def _call(n: int) -> None:
    K.scale_elements_kernel[(1,)](torch.zeros(64), torch.zeros(64), n, BLOCK=64)


def test_a_kernel_compiled_then_forgotten_arrives_from_disk_the_second_time() -> None:
    with jitguard.offline(compile=True), jitguard.watch() as rec:
        _call(7)
        triton_compat.forget_compiled_variants(K.scale_elements_kernel)
        _call(7)
    assert [e.arrived for e in rec.events] == ["cold", "disk"]
    assert [e.disk_cache_hit for e in rec.events] == [False, True]  # known on 3.2 too, from the entry's age


def test_a_disk_load_after_warm_up_fails_the_guard_as_any_new_variant() -> None:
    with jitguard.offline(compile=True):
        _call(5)  # on disk now, then gone from memory: the guard's late variant is a disk load
        triton_compat.forget_compiled_variants(K.scale_elements_kernel)
        with pytest.raises(jitguard.RecompileError) as failure, jitguard.no_recompiles(warmup=1):
            _call(32)
            _call(5)
    assert failure.value.events[-1].arrived == "disk"
    # What this machine cached before does not change the failure's words (bundle loads are named: test_bundle).
    assert str(failure.value).splitlines()[0].endswith("but 1 was compiled:")


def _log(tmp_path: Path, arrivals: list[str | None]) -> Path:
    logs = tmp_path / "logs"
    logs.mkdir()
    lines = [to_json_line(ProcessRecord(pid=7, ppid=1, argv=["serve"], triton_version="3.6.0"))]
    for i, arrived in enumerate(arrivals):
        lines.append(to_json_line(CompileEvent(
            kernel="k", module="m", file="/srv/k.py", line=3, pid=7, variant=i + 1, key=f"key{i}",
            params={"n": ParamSpec("int", "i32", "plain")}, compile_ms=400.0 if arrived == "cold" else 2.0,
            disk_cache_hit=None if arrived is None else arrived != "cold", arrived=arrived, time=float(i))))
    (logs / "host-7.ndjson").write_text("\n".join(lines) + "\n")
    return logs


def test_the_report_splits_cold_compile_seconds_from_load_seconds(tmp_path: Path) -> None:
    report = build_report(_log(tmp_path, ["cold", "bundle", "bundle", "disk", None]))
    assert report["totals"]["arrivals"] == {"cold": {"count": 1, "ms": 400.0}, "disk": {"count": 1, "ms": 2.0},
                                            "bundle": {"count": 2, "ms": 4.0}, "unknown": {"count": 1, "ms": 2.0}}
    text = format_text(report)
    assert text.splitlines()[0].endswith(
        "5 compile(s) (4 recompile(s), 0 during serving), 0.4 s compiling, 3 loaded (1 from disk, 2 from a bundle) "
        "in 0.01 s")
    kernel_table = text.split("Kernels\n", 1)[1].splitlines()
    assert kernel_table[0].split()[:5] == ["kernel", "where", "variants", "compiles", "loaded"]
    assert kernel_table[1].split()[2:5] == ["5", "5", "3"]
    assert "<th>loaded</th>" in render_html(report)
    assert json.loads(json.dumps(report))["kernels"][0]["arrivals"]["bundle"] == {"count": 2, "ms": 4.0}


def test_a_report_without_loads_keeps_its_words(tmp_path: Path) -> None:
    text = format_text(build_report(_log(tmp_path, ["cold", "cold"])))
    assert text.splitlines()[0].endswith("2 compile(s) (1 recompile(s), 0 during serving), 0.8 s compiling")
    assert "loaded" not in text


def test_a_log_with_an_unknown_arrival_skips_that_line_naming_the_field(tmp_path: Path) -> None:
    logs = _log(tmp_path, ["cold"])
    path = logs / "host-7.ndjson"
    record = json.loads(path.read_text().splitlines()[1])
    record["arrived"] = "teleported"
    path.write_text(path.read_text() + json.dumps(record) + "\n")
    assert [s["reason"] for s in build_report(logs)["skipped"]] == [
        'arrived is "teleported", expected "cold", "disk", "bundle", "remote", "worker" or null']


def test_a_cold_compile_of_a_cached_variant_names_the_knob_that_differs(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from jitguard import triton_cache

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "1")
    before = triton_cache.cache_key_env().get("TRITON_DEFAULT_FP_FUSION")
    with jitguard.offline(compile=True):
        triton_compat.forget_compiled_variants(K.scale_elements_kernel)
        with jitguard.watch() as rec:
            _call(9)
        monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "0")  # what a launcher's environment may change
        after = triton_cache.cache_key_env().get("TRITON_DEFAULT_FP_FUSION")
        triton_compat.forget_compiled_variants(K.scale_elements_kernel)
        with jitguard.watch() as rec2:
            monitor = current()
            assert monitor is not None
            previous, monitor.stream = monitor.stream, io.StringIO()
            try:
                _call(9)
            finally:
                lines, monitor.stream = monitor.stream.getvalue().splitlines(), previous
        triton_compat.forget_compiled_variants(K.scale_elements_kernel)
    assert [e.arrived for e in rec.events + rec2.events] == ["cold", "cold"]
    assert rec.events[0].cache_miss is None  # nothing of it was cached: a first compile, not a miss
    assert rec2.events[0].cache_miss == {"entries": 1, "differs": [
        f"knob TRITON_DEFAULT_FP_FUSION ({before!r} there, {after!r} here)"]}
    assert any("(compiled cold: the cache held it under another key (1 entry): knob TRITON_DEFAULT_FP_FUSION"
               in line for line in lines)
