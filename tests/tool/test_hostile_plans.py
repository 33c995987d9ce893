"""Hostile plans and reports: every field of a real warm-up plan and report, replaced by each wrong type,
gives the documented error naming the field's path (PlanInputError) or a normal outcome: never an
AttributeError, TypeError or ValueError from deep inside. JSON no parser survives is one line too."""

from __future__ import annotations

import copy
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import jitguard
from jitguard.report.build import build_report
from jitguard.startup.plan import PlanInputError, build_plan, load_plan
from jitguard.startup.plan_command import warmup_plan_command
from tests.tool.test_report import compiles_for, write_log

WRONG_VALUES: list[Any] = [None, 1, -1, 2.5, True, "x", "", [], [None], {}, {"a": None}, 10**30]
# For the warm-up, which tries every plan that passes its checks: one value of each JSON type.
WRONG_TYPES: list[Any] = [None, -1, 2.5, True, "x", [None], {"a": None}]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict:
    logs = tmp_path_factory.mktemp("logs")
    write_log(logs, 20, compiles_for(20, [16, 17, 1]), role="worker", rank=0)
    return build_report(logs)


def paths_of(value: Any, path: tuple = ()) -> Iterator[tuple]:
    """Every path into a JSON value (object keys and list indexes), the value's own path first."""
    yield path
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from paths_of(inner, (*path, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value[:1]):
            yield from paths_of(inner, (*path, index))


def replaced(value: Any, path: tuple, new: Any) -> Any:
    out = copy.deepcopy(value)
    target = out
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = new
    return out


def mutations(value: Any, values: list[Any] = WRONG_VALUES) -> Iterator[tuple[str, Any]]:
    for path in paths_of(value):
        if not path:
            continue
        for new in values:
            yield ".".join(map(str, path)) + f"={new!r}"[:30], replaced(value, path, new)


def test_every_type_confused_plan_is_a_plan_input_error_or_a_warmup(report: dict) -> None:
    plan = build_plan(report)
    tried = failures = 0
    for name, mutated in mutations(plan, WRONG_TYPES):
        tried += 1
        try:
            result = jitguard.warmup(mutated, stream=io.StringIO(), quiet=True)
        except PlanInputError as exc:
            assert "\n" not in str(exc), name
            continue
        except Exception as exc:  # the failure names what escaped
            failures += 1
            pytest.fail(f"{name}: {type(exc).__name__}: {exc}")
        assert result is not None
    assert tried > 150 and failures == 0


def test_a_wrong_type_is_named_by_its_path(report: dict) -> None:
    plan = build_plan(report)
    plan["kernels"][0]["variants"][1]["params"] = 7
    with pytest.raises(PlanInputError, match=r"plan: kernels\[0\]\.variants\[1\]\.params: 7, expected an object"):
        load_plan(plan)
    plan = build_plan(report)
    plan["kernels"][0]["qualname"] = 1
    with pytest.raises(PlanInputError, match=r"kernels\[0\]\.qualname: 1, expected a string"):
        jitguard.warmup(plan, stream=io.StringIO())


def test_every_type_confused_report_is_a_plan_input_error_or_a_plan(report: dict) -> None:
    tried = 0
    for name, mutated in mutations({"kernels": report["kernels"], "directory": report["directory"],
                                    "jitguard_report": 1}):
        tried += 1
        try:
            build_plan(mutated)
        except PlanInputError as exc:
            assert "\n" not in str(exc), name
        except Exception as exc:  # the failure names what escaped
            pytest.fail(f"{name}: {type(exc).__name__}: {exc}")
    assert tried > 300


UNREADABLE_JSON = {
    "nested 1,000 levels": "[" * 1000 + "]" * 1000,
    "nested 100,000 levels": '{"kernels": ' + "[" * 100_000 + "]" * 100_000 + "}",
    "5,000-digit integer": '{"jitguard_warmup_plan": 1, "kernels": [], "variants": ' + "7" * 5000 + "}",
    "truncated": '{"jitguard_warmup_plan": 1, "kern',
    "not UTF-8": "\udcff\udcfe{}",
}


@pytest.mark.parametrize("name", list(UNREADABLE_JSON))
def test_a_plan_file_no_parser_survives_is_one_plan_input_error(tmp_path: Path, name: str) -> None:
    path = tmp_path / "plan.json"
    path.write_text(UNREADABLE_JSON[name], encoding="utf-8", errors="surrogateescape")
    with pytest.raises(PlanInputError) as caught:
        jitguard.warmup(str(path), stream=io.StringIO())
    assert str(caught.value).startswith(str(path)) and "\n" not in str(caught.value)


@pytest.mark.parametrize("name", ["nested 1,000 levels", "5,000-digit integer"])
def test_warmup_plan_on_a_report_no_parser_survives_exits_2_with_one_line(tmp_path: Path, name: str) -> None:
    path = tmp_path / "report.json"
    path.write_text(UNREADABLE_JSON[name].replace("jitguard_warmup_plan", "jitguard_report"))
    result = CliRunner().invoke(warmup_plan_command, [str(path), "-o", str(tmp_path / "plan.json")])
    assert result.exit_code == 2
    assert str(path) in result.output and len(result.output.strip().splitlines()) == 1


def test_a_report_whose_autotune_keys_are_not_a_list_names_the_field(tmp_path: Path, report: dict) -> None:
    bad = json.loads(json.dumps(report))
    bad["kernels"][0]["autotune"] = {"key": ["n"], "keys_tuned": 5}
    path = tmp_path / "report.json"
    path.write_text(json.dumps(bad))
    result = CliRunner().invoke(warmup_plan_command, [str(path), "-o", str(tmp_path / "plan.json")])
    assert result.exit_code == 2
    assert "kernels[0].autotune.keys_tuned: 5, expected a list" in result.output


@pytest.mark.parametrize("module", ["this", "antigravity", "os"])
def test_a_plan_naming_a_module_that_defines_no_kernel_imports_nothing(module: str) -> None:
    import sys

    already = module in sys.modules
    plan = {"jitguard_warmup_plan": 1, "kernels": [
        {"name": "system", "module": module, "qualname": "system", "binding": "", "file": "", "line": 1,
         "variants": [{"params": {}, "options": {}, "key": "k"}]}]}
    out = io.StringIO()
    result = jitguard.warmup(plan, stream=out)
    assert (module in sys.modules) == already
    assert result.failures and "no Triton kernel named system" in out.getvalue()


@pytest.mark.parametrize("name", ["nested 100,000 levels", "5,000-digit integer"])
def test_fix_from_a_report_no_parser_survives_exits_2_naming_the_file(tmp_path: Path, name: str) -> None:
    from jitguard.codemod.commands import fix_command

    path = tmp_path / "report.json"
    path.write_text(UNREADABLE_JSON[name].replace("jitguard_warmup_plan", "jitguard_report"))
    source = tmp_path / "k.py"
    source.write_text("x = 1\n")
    result = CliRunner().invoke(fix_command, ["--from", str(path), str(source)])
    assert result.exit_code == 2  # not 1, which reads as "pending changes"
    assert str(path) in result.output and "Traceback" not in result.output
