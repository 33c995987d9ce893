"""One function jitted under other names, maybe twice: each jit call is a kernel of its own.

`tests/kernels_bound_twice.py` binds `_scale_rows` as `scale_rows_specialized` and, with
`do_not_specialize=["n_rows"]`, as `scale_rows_any_count`. Triton keeps a cache per binding, so the
monitor, the guard, the report, the warm-up plan and the cost check must keep them apart and import
each by the name the program calls it by.
"""

import json
import re
from pathlib import Path

import pytest
import torch

import jitguard
from jitguard import triton_compat
from jitguard.report.build import build_report
from jitguard.report.render_tables import format_text
from jitguard.startup.plan import build_plan
from tests import kernels_bound_twice as bound

SPECIALIZED = "_scale_rows (as scale_rows_specialized)"
ANY_COUNT = "_scale_rows (as scale_rows_any_count)"


def forget(*kernels):
    """Empty the in-memory caches of `kernels` (an autotuner's chosen configs too)."""
    for kernel in kernels:
        for cache in triton_compat.all_kernel_caches(triton_compat.unwrap_jit_function(kernel)):
            cache.clear()
        if hasattr(kernel, "configs"):
            kernel.cache.clear()


def replay_then(plan_path, traffic):
    """Warm up from the plan, then run the traffic: (each variant's warm-up status, what it compiled)."""
    with jitguard.offline(compile=False):
        result = jitguard.warmup(str(plan_path))
        with jitguard.watch() as rec:
            traffic()
    return [o.status for o in result.outcomes], rec.events


@pytest.fixture(autouse=True)
def empty_caches():
    forget(bound.scale_rows_specialized, bound.scale_rows_any_count)
    yield


def _traffic(counts=(16, 17)):
    x = torch.zeros(64)
    for n in counts:
        bound.scale_rows_specialized[(1,)](x, n, BLOCK=64)
        bound.scale_rows_any_count[(1,)](x, n, BLOCK=64)


def test_binding_name_is_the_module_name_only_when_it_is_not_the_functions():
    assert triton_compat.binding_name(bound.scale_rows_specialized) == "scale_rows_specialized"
    assert triton_compat.binding_name(bound.scale_rows_any_count) == "scale_rows_any_count"
    from tests import kernels_for_tests
    assert triton_compat.binding_name(kernels_for_tests.add_one_kernel) == ""  # @triton.jit def: its own name


def test_the_monitor_counts_each_binding_apart_and_names_it(capsys):
    with jitguard.offline(compile=False), jitguard.watch() as rec:
        _traffic()
    # Before: one kernel `_scale_rows` with 3 variants, the specialized one's recompile hidden among them.
    assert rec.kernels() == {SPECIALIZED: 2, ANY_COUNT: 1}
    assert rec.variants("scale_rows_any_count") == 1
    assert rec.variants(SPECIALIZED) == 2
    assert rec.variants("_scale_rows") == 3  # the function's name counts every kernel made from it
    assert [(e.binding, e.variant) for e in rec.events] == [
        ("scale_rows_specialized", 1), ("scale_rows_any_count", 1), ("scale_rows_specialized", 2)]
    assert f"recompile {SPECIALIZED}#2" in capsys.readouterr().err


def test_a_budget_may_name_the_binding():
    with jitguard.offline(compile=False), jitguard.watch(budget={"scale_rows_any_count": 1}, mode="error"):
        _traffic((16, 17, 33))  # the specialized binding is not budgeted; the other compiles once
    over_budget = re.escape(f"{SPECIALIZED} compiled variant #2")
    with jitguard.offline(compile=False), pytest.raises(jitguard.RecompileError, match=over_budget):
        with jitguard.watch(budget={"scale_rows_specialized": 1}, mode="error"):
            _traffic()


def test_the_guard_does_not_take_the_other_binding_for_a_recompile():
    x = torch.zeros(64)
    with jitguard.offline(compile=False):
        # One call each: with one identity for both, the second binding's first compile was call 2
        # of "the" kernel, after its warm-up call, and failed the block.
        with jitguard.no_recompiles(warmup=1):
            bound.scale_rows_specialized[(1,)](x, 16, BLOCK=64)
            bound.scale_rows_any_count[(1,)](x, 16, BLOCK=64)
        with jitguard.no_recompiles(warmup=1, kernels=["scale_rows_any_count"]) as guard:
            bound.scale_rows_specialized[(1,)](x, 16, BLOCK=64)
            bound.scale_rows_specialized[(1,)](x, 17, BLOCK=64)  # not judged: another kernel
            bound.scale_rows_any_count[(1,)](x, 17, BLOCK=64)
        assert [c.event.binding for c in guard.compiles] == ["scale_rows_any_count"]


def test_a_failing_guard_names_the_binding_and_prices_its_fix():
    x = torch.zeros(64)
    with jitguard.offline(compile=False), pytest.raises(jitguard.RecompileError) as failure:
        with jitguard.no_recompiles(warmup=1):
            bound.scale_rows_specialized[(1,)](x, 16, BLOCK=64)
            bound.scale_rows_specialized[(1,)](x, 17, BLOCK=64)
    text = str(failure.value)
    assert f"{SPECIALIZED} (" in text
    # The cost check imports `scale_rows_specialized`; the function's own name is no kernel.
    (price,) = [line for line in text.splitlines() if "price" in line]
    assert price.startswith("  price: n_rows: free"), price
    assert failure.value.prices[SPECIALIZED]["n_rows"]["verdict"] == "free"


def test_report_and_warmup_plan_keep_the_bindings_apart(tmp_path: Path):
    logs = tmp_path / "logs"
    with jitguard.offline(compile=False), jitguard.watch(dir=str(logs)):
        _traffic()
    report = build_report(str(logs))
    by_binding = {k["binding"]: (k["name"], k["variants"]) for k in report["kernels"]}
    assert by_binding == {"scale_rows_specialized": ("_scale_rows", 2), "scale_rows_any_count": ("_scale_rows", 1)}
    text = format_text(report)
    assert f"{SPECIALIZED} (" in text and f"{ANY_COUNT} (" in text

    plan = build_plan(str(logs))
    assert sorted((k["qualname"], len(k["variants"])) for k in plan["kernels"]) == [
        ("scale_rows_any_count", 1), ("scale_rows_specialized", 2)]
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(json.dumps(plan))
    forget(bound.scale_rows_specialized, bound.scale_rows_any_count)
    # Each variant rebuilt on its own binding (a rebuilt key unlike the recorded one fails), so the
    # same traffic compiles nothing.
    assert replay_then(plan_path, _traffic) == (["compiled"] * 3, [])


def test_a_sweep_tables_each_binding_and_asserts_on_either_name():
    x = torch.zeros(64)

    def layer(n):
        bound.scale_rows_specialized[(1,)](x, n, BLOCK=64)
        bound.scale_rows_any_count[(1,)](x, n, BLOCK=64)

    with jitguard.offline(compile=False):
        table = jitguard.sweep(layer, [1, 16, 17])
    assert table.kernels() == {SPECIALIZED: 3, ANY_COUNT: 1}
    assert table.variants(bound.scale_rows_any_count) == 1
    assert table.variants("scale_rows_specialized") == 3
    jitguard.assert_max_variants(table, bound.scale_rows_any_count, 1)
    with pytest.raises(jitguard.RecompileError, match=re.escape(f"at most 1 variant of {SPECIALIZED}")):
        jitguard.assert_max_variants(table, bound.scale_rows_specialized, 1)


TWO_CALLS = '''import triton
import triton.language as tl


def _scale_rows(x_ptr, n_rows, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n_rows), mask=offsets < n_rows)


fast = triton.jit(_scale_rows)
wide = triton.jit(_scale_rows)
'''


def test_fix_from_a_report_edits_only_the_binding_that_recompiled(tmp_path: Path):
    from click.testing import CliRunner

    from jitguard.codemod.commands import fix_command
    from jitguard.events import Cause, CompileEvent, ParamSpec, to_json_line

    ops = tmp_path / "ops.py"
    ops.write_text(TWO_CALLS)
    logs = tmp_path / "logs"
    logs.mkdir()
    fast = [CompileEvent(kernel="_scale_rows", binding="fast", module="ops", file=str(ops), line=5, key=key,
                         variant=variant, params={"n_rows": ParamSpec("int", "i32", spec)})
            for variant, key, spec in ((1, "k1", "div16"), (2, "k2", "plain"))]
    fast[1].causes = [Cause("n_rows", "int32 divisible by 16", "int32", "do_not_specialize_on_alignment")]
    wide = CompileEvent(kernel="_scale_rows", binding="wide", module="ops", file=str(ops), line=5, key="k1",
                        params={"n_rows": ParamSpec("int", "i32", "div16")})
    (logs / "host-1.ndjson").write_text("".join(to_json_line(e) + "\n" for e in [*fast, wide]))
    report = tmp_path / "report.json"
    report.write_text(json.dumps(build_report(str(logs))))

    result = CliRunner().invoke(fix_command, ["--accept-unknown", "--from", str(report), str(ops)])
    assert result.exit_code == 0, result.output
    # By the function's name both jit calls were edited, `wide` demoted for what only `fast` compiled.
    assert ops.read_text().endswith(
        'fast = triton.jit(_scale_rows, do_not_specialize_on_alignment=["n_rows"])\nwide = triton.jit(_scale_rows)\n')


def test_the_pytest_plugins_fix_command_names_the_binding():
    from jitguard.events import Cause, CompileEvent
    from jitguard.guard.pytest_plugin import fix_command_line

    event = CompileEvent(kernel="_scale_rows", binding="fast", file="ops.py", line=5, variant=2, causes=[
        Cause("n_rows", "int32 divisible by 16", "int32", "do_not_specialize_on_alignment")])
    assert fix_command_line([event]) == "jitguard fix --param fast:n_rows:align ops.py"


def test_an_autotuned_binding_is_judged_with_its_tunings():
    x = torch.zeros(256)
    with jitguard.offline(compile=False):
        tuned = bound.make_tuned_binding()
        forget(tuned)
        with pytest.raises(jitguard.RecompileError) as failure, jitguard.watch() as rec:
            with jitguard.no_recompiles(warmup=1, kernels=[tuned]):
                tuned[(1,)](x, 17)
                tuned[(1,)](x, 33)  # the same specialization class: a tuning for the new key, no compile
    # The tuning carries the binding its compiles carry: a guard naming the kernel by object judges it.
    assert "but 1 autotune tuning ran:" in str(failure.value)
    assert "_scale_rows (as scale_rows_tuned) (" in str(failure.value)
    assert {t.label for t in rec.tunings} == {"_scale_rows (as scale_rows_tuned)"}


def test_an_autotuned_binding_is_pretuned_from_the_plan(tmp_path: Path):
    x = torch.zeros(256)
    logs = tmp_path / "logs"
    with jitguard.offline(compile=False):
        tuned = bound.make_tuned_binding()

        def traffic():
            for n in (17, 33):
                tuned[(1,)](x, n)

        forget(tuned)
        with jitguard.watch(dir=str(logs)):
            traffic()
        plan = build_plan(str(logs))
        (entry,) = plan["kernels"]
        assert entry["qualname"] == "scale_rows_tuned"
        assert [key["n_rows"] for key in entry["autotune"]["keys_tuned"]] == [17, 33]
        plan_path = tmp_path / "plan.json"
        plan_path.write_text(json.dumps(plan))
        forget(tuned)
        result = jitguard.warmup(str(plan_path))
        assert result.failures == [] and result.pretune_failures == []
        with jitguard.watch() as rec:
            traffic()
    assert (rec.events, rec.tunings) == ([], [])


# --- kernels of one name in several classes -------------------------------------------------------


def test_kernels_of_one_name_in_two_classes_are_two_kernels_end_to_end(tmp_path: Path):
    from tests import kernels_in_classes as classes

    pack, unpack = classes.PackRows.kernel, classes.UnpackRows.kernel
    assert (triton_compat.binding_name(pack), triton_compat.binding_name(unpack)) == (
        "PackRows.kernel", "UnpackRows.kernel")
    x = torch.zeros(64)

    def traffic():
        for n in (16, 17):
            pack[(1,)](x, n, BLOCK=64)
        unpack[(1,)](x, 16, BLOCK=64)

    logs = tmp_path / "logs"
    forget(pack, unpack)
    with jitguard.offline(compile=False), jitguard.watch(dir=str(logs)) as rec:
        traffic()
    # Before: one kernel `kernel` of kernels_in_classes.py with 3 variants.
    assert rec.kernels() == {"PackRows.kernel": 2, "UnpackRows.kernel": 1}
    report = build_report(str(logs))
    assert sorted((k["binding"], k["variants"]) for k in report["kernels"]) == [
        ("PackRows.kernel", 2), ("UnpackRows.kernel", 1)]
    (packed,) = [k for k in report["kernels"] if k["binding"] == "PackRows.kernel"]
    assert packed["params"]["n_rows"]["advice"] == "do_not_specialize_on_alignment"
    assert "PackRows.kernel (" in format_text(report)

    plan_path = tmp_path / "plan.json"
    plan_path.write_text(json.dumps(build_plan(str(logs))))
    forget(pack, unpack)
    assert replay_then(plan_path, traffic) == (["compiled"] * 3, [])  # each on its own class's kernel


def test_a_class_kernels_fix_is_priced_through_its_class():
    from tests import kernels_in_classes as classes

    x = torch.zeros(64)
    forget(classes.PackRows.kernel)
    with jitguard.offline(compile=False), pytest.raises(jitguard.RecompileError) as failure:
        with jitguard.no_recompiles(warmup=1):
            classes.PackRows.kernel[(1,)](x, 16, BLOCK=64)
            classes.PackRows.kernel[(1,)](x, 17, BLOCK=64)
    (price,) = [line for line in str(failure.value).splitlines() if "price" in line]
    assert price.startswith("  price: n_rows: free"), price


def test_fix_from_a_report_edits_the_class_kernel_that_recompiled(tmp_path: Path):
    from click.testing import CliRunner

    from jitguard.codemod.commands import fix_command
    from tests import kernels_in_classes as classes

    ops = tmp_path / "ops.py"
    ops.write_text(Path(classes.__file__).read_text())
    x = torch.zeros(64)
    logs = tmp_path / "logs"
    forget(classes.PackRows.kernel, classes.UnpackRows.kernel)
    with jitguard.offline(compile=False), jitguard.watch(dir=str(logs)):
        for n in (16, 17):
            classes.PackRows.kernel[(1,)](x, n, BLOCK=64)
            classes.UnpackRows.kernel[(1,)](x, 16, BLOCK=64)
    report = build_report(str(logs))
    for kernel in report["kernels"]:
        kernel["file"] = str(ops)  # the report names the test module; fix its copy
    report_path = tmp_path / "report.json"
    report_path.write_text(json.dumps(report))
    result = CliRunner().invoke(fix_command, ["--accept-unknown", "--from", str(report_path), str(ops)])
    assert result.exit_code == 0, result.output
    # The request names `PackRows.kernel` (its binding); the other class's `kernel` is left as it was.
    text = ops.read_text()
    assert text.count('@triton.jit(do_not_specialize_on_alignment=["n_rows"])') == 1
    assert text.index("do_not_specialize_on_alignment") < text.index("class UnpackRows")
