"""Warm-up plans: record real compiles, build a plan, replay it in a fresh process, then the same
traffic compiles nothing new. A variant the plan cannot rebuild is reported by name."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from jitguard.startup.plan import build_plan
from jitguard.startup.plan_command import warmup_plan_command
from jitguard.startup.replay import WarmupError, warmup

REPO = Path(__file__).resolve().parents[2]

# Traffic over the test kernels that covers every class the plan must rebuild: an int that is
# 1, divisible by 16 and other; an unaligned pointer; an explicit num_warps; bf16/fp8 pointers;
# an i64-annotated int above 2**31; a heuristics-wrapped kernel.
PROGRAM = textwrap.dedent('''
    import json, sys
    import torch
    import jitguard
    from tests import kernels_for_tests as K

    def traffic():
        x = torch.zeros(64)
        y = torch.zeros(64)
        for n in (1, 16, 17, 33):
            K.add_one_kernel[(1,)](x, y, n, BLOCK=64)
        K.add_one_kernel[(1,)](x[1:], y, 16, BLOCK=64, num_warps=2)
        K.add_one_kernel[(1,)](x.to(torch.bfloat16), y.to(torch.float8_e4m3fn), 16, BLOCK=64)
        K.add_one_int64[(1,)](x, y, 2**31 + 5, BLOCK=64)
        K.add_one_heuristic[(1,)](x, y, 40)

    mode = sys.argv[1]
    with jitguard.offline(compile=True):
        result = None
        if mode == "replay":
            result = jitguard.warmup(sys.argv[2])
        # "record" writes every compile to NDJSON logs, as `jitguard run` does.
        with jitguard.watch(dir=sys.argv[2] if mode == "record" else None) as rec:
            traffic()
        print(json.dumps({
            "compiled": [o.label for o in result.compiled] if result else [],
            "failures": [o.label for o in result.failures] if result else [],
            "traffic_compiles": [e.kernel for e in rec.events],
        }))
''')


def _python(script: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, str(script), *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=240)


def test_plan_from_real_compiles_makes_the_same_traffic_compile_nothing(tmp_path: Path) -> None:
    script = tmp_path / "program.py"
    script.write_text(PROGRAM)
    logs = tmp_path / "logs"
    recorded = _python(script, "record", str(logs))
    assert recorded.returncode == 0, recorded.stderr
    cold = json.loads(recorded.stdout.strip().splitlines()[-1])

    # The CLI, from the directory of logs.
    plan_path = tmp_path / "plan.json"
    cli = CliRunner().invoke(warmup_plan_command, [str(logs), "-o", str(plan_path)])
    assert cli.exit_code == 0, cli.output
    plan = json.loads(plan_path.read_text())
    variants = {k["name"]: len(k["variants"]) for k in plan["kernels"]}
    # add_one_kernel: n one/div16/plain (33 is plain again), unaligned + num_warps=2, bf16/fp8 dtypes.
    assert variants == {"add_one_kernel": 5, "add_one_int64": 1, "add_one_heuristic": 1}
    assert f"{plan['variants']} variant(s)" in cli.output

    assert len(cold["traffic_compiles"]) == plan["variants"]  # without the plan, the traffic compiles

    replay = _python(script, "replay", str(plan_path))
    assert replay.returncode == 0, replay.stderr
    outcome = json.loads(replay.stdout.strip().splitlines()[-1])
    assert outcome["failures"] == []
    assert len(outcome["compiled"]) == plan["variants"]
    assert outcome["traffic_compiles"] == []
    assert "[jitguard] warm-up 1/7" in replay.stderr
    assert "add_one_kernel: 5 variant(s)" in replay.stderr


def test_report_json_is_a_plan_source_on_its_own(tmp_path: Path) -> None:
    from jitguard.events import CompileEvent, ParamSpec, to_json_line
    from jitguard.report.build import build_report

    logs = tmp_path / "logs"
    logs.mkdir()
    events = [CompileEvent(kernel="add_one_kernel", module="tests.kernels_for_tests", file="k.py", key=key,
                           params={"n": ParamSpec("int", "i32", spec, observed=value)},
                           options={"num_warps": 4, "passed": {}}, triton_version="3.9.0")
              for key, spec, value in (("k1", "div16", 16), ("k2", "plain", 17), ("k1", "div16", 32))]
    (logs / "host-1.ndjson").write_text("".join(to_json_line(e) + "\n" for e in events))
    report = build_report(logs)
    report_path = tmp_path / "report.json"
    report_path.write_text(json.dumps(report))
    from_logs = build_plan(str(logs))
    for file in logs.iterdir():  # the logs are gone: the report alone must do
        file.unlink()
    logs.rmdir()
    from_report = build_plan(str(report_path))
    assert from_report["variants"] == from_logs["variants"] == 2
    assert from_report["kernels"] == from_logs["kernels"]
    result = CliRunner().invoke(warmup_plan_command, [str(report_path), "-o", str(tmp_path / "p.json")])
    assert result.exit_code == 0, result.output


def test_kernels_the_plan_cannot_replay_are_left_out_and_named(tmp_path: Path) -> None:
    from jitguard.events import CompileEvent, ParamSpec, to_json_line

    logs = tmp_path / "logs"
    logs.mkdir()
    jit = CompileEvent(kernel="add_one_kernel", module="tests.kernels_for_tests", file="k.py", key="k1",
                       params={"n": ParamSpec("int", "i32", "div16", observed=16)}, options={"num_warps": 4})
    handed_over = CompileEvent(kernel="triton_poi_fused_add_0", module="", file="/tmp/torchinductor/ab.py",
                               key="k2", params={}, options={"num_warps": 4}, origin="inductor", arrived="worker")
    direct = CompileEvent(kernel="scale", module="", file="s.py", key="k3", params={}, options={}, origin="compile")
    (logs / "host-1.ndjson").write_text("".join(to_json_line(e) + "\n" for e in (jit, handed_over, direct)))
    plan = build_plan(str(logs))
    assert [k["name"] for k in plan["kernels"]] == ["add_one_kernel"]
    assert plan["left_out"] == {"compile": ["scale"], "inductor": ["triton_poi_fused_add_0"]}
    result = CliRunner().invoke(warmup_plan_command, [str(logs), "-o", str(tmp_path / "p.json")])
    assert result.exit_code == 0, result.output
    assert "not in the plan: 1 kernel(s) from torch.compile's generated kernels" in result.output
    assert "not in the plan: 1 kernel(s) from direct triton.compile calls" in result.output


def test_an_older_report_without_variants_needs_its_logs(tmp_path: Path) -> None:
    report = {"directory": str(tmp_path / "gone"), "kernels": [{"name": "k", "variants": 1}]}
    report_path = tmp_path / "old-report.json"
    report_path.write_text(json.dumps(report))
    result = CliRunner().invoke(warmup_plan_command, [str(report_path), "-o", str(tmp_path / "p.json")])
    assert result.exit_code == 2
    assert "pass the directory of NDJSON logs instead" in result.output


def test_cli_input_errors_exit_2_with_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(warmup_plan_command, [str(tmp_path / "missing"), "-o", str(tmp_path / "p.json")])
    assert result.exit_code == 2
    assert "missing: no such directory" in result.output
    assert len(result.output.strip().splitlines()) == 1


def _plan_for(name: str, module: str, file: str, params: dict) -> dict:
    return {"jitguard_warmup_plan": 1, "kernels": [{
        "name": name, "module": module, "qualname": name, "file": file, "line": 1,
        "variants": [{"params": params, "options": {"num_warps": 4}, "launch_kwargs": {}, "key": ""}]}]}


_ADD_ONE_PARAMS = {"x_ptr": {"kind": "ptr", "type": "*fp32", "spec": "aligned16"},
                   "y_ptr": {"kind": "ptr", "type": "*fp32", "spec": "aligned16"},
                   "n": {"kind": "int", "type": "i32", "spec": "plain"},
                   "BLOCK": {"kind": "constexpr", "type": "constexpr", "value": 64}}


def test_a_kernel_that_is_gone_is_a_named_failure() -> None:
    import jitguard

    plan = _plan_for("renamed_kernel", "tests.kernels_for_tests", "", _ADD_ONE_PARAMS)
    plan["kernels"] += _plan_for("k", "no_such_module_xyz", "/nonexistent/k.py", _ADD_ONE_PARAMS)["kernels"]
    stream = io.StringIO()
    with jitguard.offline(compile=False):
        result = warmup(plan, stream=stream)
        with pytest.raises(WarmupError) as raised:
            warmup(plan, stream=io.StringIO(), strict=True)
    assert [o.label for o in result.failures] == ["renamed_kernel#1", "k#1"]
    gone = result.failures[0].reason
    assert "kernel 'renamed_kernel'" in gone and "tests.kernels_for_tests" in gone
    assert "no Triton kernel named renamed_kernel" in gone
    assert "no_such_module_xyz" in result.failures[1].reason
    assert "/nonexistent/k.py: no such file" in result.failures[1].reason
    assert "FAILED renamed_kernel#1" in stream.getvalue()
    assert "renamed_kernel#1" in str(raised.value) and "k#1" in str(raised.value)


def test_variants_that_cannot_be_rebuilt_are_named_not_skipped() -> None:
    import jitguard

    events = [
        {"type": "compile", "kernel": "add_one_kernel", "module": "tests.kernels_for_tests", "key": "a",
         "params": {**_ADD_ONE_PARAMS, "x_ptr": {"kind": "ptr", "type": "*fp4e2m1", "spec": "aligned16"}}},
        {"type": "compile", "kernel": "add_one_kernel", "module": "tests.kernels_for_tests", "key": "b",
         "params": {**_ADD_ONE_PARAMS, "n": {"kind": "tuple", "type": "('i32', 'i32')"}}},
    ]
    plan = build_plan(events)
    with jitguard.offline(compile=False):
        result = warmup(plan, stream=io.StringIO())
    assert [o.label for o in result.failures] == ["add_one_kernel#1", "add_one_kernel#2"]
    assert "unknown pointer dtype '*fp4e2m1'" in result.failures[0].reason
    assert "'n' is a tuple" in result.failures[1].reason


# A copy of the test kernels whose top level leaves a mark when it runs: a script must never run.
_MARKING_KERNELS = (REPO / "tests" / "kernels_for_tests.py").read_text() + textwrap.dedent("""
    import os as _os
    open(_os.environ["JG_TOP_LEVEL_MARK"], "a").write("ran\\n")
""")


def _where_recorded_case(case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """(module, file) a plan records for the kernel, set up for one case."""
    unique = f"jg_moved_{abs(hash(case))}_{os.getpid()}"
    if case == "renamed package, file importable under another name":
        (tmp_path / "pkg_now").mkdir()
        (tmp_path / "pkg_now" / "__init__.py").write_text("")
        file = tmp_path / "pkg_now" / f"{unique}.py"
        file.write_text(_MARKING_KERNELS)
        monkeypatch.syspath_prepend(str(tmp_path))
        return "a_package_that_was_renamed.kernels", str(file)
    file = tmp_path / f"{unique}.py"
    file.write_text(_MARKING_KERNELS)
    if case == "module gone, file on no sys.path entry":
        return "a_package_that_was_renamed.kernels", str(file)
    assert case == "recorded in __main__ (python server.py)"
    monkeypatch.syspath_prepend(str(tmp_path))  # even importable, a script is never run
    return "__main__", str(file)


@pytest.mark.parametrize("case, compiled, reason", [
    ("renamed package, file importable under another name", True, ""),
    ("module gone, file on no sys.path entry", False, "is not importable as a module"),
    ("recorded in __main__ (python server.py)", False, "jitguard does not run scripts to find kernels"),
])
def test_kernels_are_found_by_importing_modules_never_by_running_files(
        case: str, compiled: bool, reason: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import jitguard

    mark = tmp_path / "top-level-ran"
    monkeypatch.setenv("JG_TOP_LEVEL_MARK", str(mark))
    module, file = _where_recorded_case(case, tmp_path, monkeypatch)
    before = set(sys.modules)
    plan = _plan_for("add_one_kernel", module, file, _ADD_ONE_PARAMS)
    try:
        with jitguard.offline(compile=False):
            result = warmup(plan, stream=io.StringIO())
    finally:
        for name in set(sys.modules) - before:
            if name.startswith(("pkg_now", "jg_moved_")):
                del sys.modules[name]
    if compiled:
        assert result.ok, result.summary()
        assert mark.read_text() == "ran\n"  # imported once, as a module, like any import
    else:
        assert [o.label for o in result.failures] == ["add_one_kernel#1"]
        assert reason in result.failures[0].reason and file in result.failures[0].reason
        assert not mark.exists()  # the file's top level never ran


def test_a_kernel_of_the_running_script_is_found_without_running_it_again(tmp_path: Path) -> None:
    script = tmp_path / "server.py"
    script.write_text(textwrap.dedent("""
        import io, os, sys
        import jitguard
        import triton, triton.language as tl
        print("server top level ran", file=sys.stderr)

        @triton.jit
        def served_kernel(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

        plan = {"jitguard_warmup_plan": 1, "kernels": [{
            "name": "served_kernel", "module": "__main__", "qualname": "served_kernel", "file": __file__, "line": 1,
            "variants": [{"params": {"x_ptr": {"kind": "ptr", "type": "*fp32", "spec": "aligned16"},
                                     "n": {"kind": "int", "type": "i32", "spec": "div16"},
                                     "BLOCK": {"kind": "constexpr", "type": "constexpr", "value": 16}},
                          "options": {}, "launch_kwargs": {}, "key": ""}]}]}
        with jitguard.offline(compile=False):
            result = jitguard.warmup(plan, stream=io.StringIO())
        print("ok" if result.ok else result.summary())
    """))
    proc = _python(script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
    assert proc.stderr.count("server top level ran") == 1


def test_rebuilt_key_is_checked_against_the_recorded_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import jitguard
    from jitguard import triton_compat

    # A private copy of the kernels: no other test has compiled anything of it in this process.
    file = tmp_path / f"jg_private_kernels_{os.getpid()}.py"
    file.write_text((REPO / "tests" / "kernels_for_tests.py").read_text())
    monkeypatch.syspath_prepend(str(tmp_path))
    plan = _plan_for("add_one_kernel", "", str(file), _ADD_ONE_PARAMS)
    plan["kernels"][0]["variants"][0]["key"] = "a key this Triton never makes"
    plan["triton_versions"] = [triton_compat.TRITON_VERSION]
    with jitguard.offline(compile=False):
        result = warmup(plan, stream=io.StringIO())
    assert [o.label for o in result.failures] == ["add_one_kernel#1"]
    assert "rebuilt a different variant" in result.failures[0].reason

    # A plan from another Triton version cannot be checked key by key: it compiles and says so.
    plan["triton_versions"] = ["0.0.1"]
    stream = io.StringIO()
    with jitguard.offline(compile=False):
        result = warmup(plan, stream=stream)
    assert result.ok and len(result.compiled) == 1
    assert "recorded with Triton 0.0.1" in stream.getvalue()
