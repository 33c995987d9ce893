"""Every Triton compile is counted whatever made it (`CompileEvent.origin`): a @triton.jit launch, a
@gluon.jit launch, a direct `triton.compile` call, and Inductor's generated kernels (here: a module
written as Inductor writes one, compiled from a frame of `torch/_inductor/`; the GPU test in
test_inductor_gpu.py runs torch.compile itself). Real sm_90 compiles on the CPU (jitguard.offline)."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest
import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

import jitguard
from jitguard import triton_compat
from jitguard.render_text import format_event_line
from tests import kernels_for_tests as k

pytest_plugins = ["pytester"]

TARGET = GPUTarget("cuda", 90, 32)


@pytest.fixture(autouse=True)
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))


def source_of(kernel, n_divisible: bool, block: int = 64) -> ASTSource:
    """What a caller of `triton.compile` builds for a kernel (in, out, n, BLOCK): n divisible by 16 or not."""
    x, y, n, block_name = triton_compat.param_names(kernel)
    signature = {x: "*fp32", y: "*fp32", n: "i32"}
    if triton_compat.VERSION >= (3, 3):
        attrs = {(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]]}
        if n_divisible:
            attrs[(2,)] = [["tt.divisibility", 16]]
        return ASTSource(kernel, dict(signature, **{block_name: "constexpr"}), {(3,): block}, attrs)
    from triton.backends.compiler import AttrsDescriptor  # 3.2: attributes from value hints
    hints = AttrsDescriptor.from_hints({0: 16, 1: 16, 2: 16 if n_divisible else 3})
    return ASTSource(kernel, signature, {block_name: block}, hints)


def test_direct_triton_compile_calls_are_counted_as_compile_with_their_variants_and_loads():
    with jitguard.watch() as rec:
        triton.compile(source_of(k.add_one_kernel, True), target=TARGET)
        triton.compile(source_of(k.add_one_kernel, False), target=TARGET)
        triton.compile(source_of(k.add_one_kernel, True), target=TARGET)  # the first again: from the disk cache
    events = [e for e in rec.events if e.kernel == "add_one_kernel"]
    assert [(e.origin, e.variant) for e in events] == [("compile", 1), ("compile", 2), ("compile", 1)]
    assert [e.arrived for e in events] == ["cold", "cold", "disk"]
    cause, = events[1].causes
    assert (cause.param, cause.advice) == ("n", "compile_call")  # the caller chose it: no decorator edit
    line = format_event_line(events[1])
    assert "[triton.compile]" in line and "fix:" not in line
    assert events[0].call_site.endswith(f"{Path(__file__).name}:{_line_of('target=TARGET)', 1)}")


def _line_of(text: str, occurrence: int) -> int:
    lines = Path(__file__).read_text().splitlines()
    return [i for i, line in enumerate(lines, start=1) if text in line and "triton.compile(" in line][occurrence - 1]


def test_a_jit_launch_is_counted_once_with_origin_jit():
    x, y = torch.zeros(64), torch.zeros(64)
    for cache in triton_compat.all_kernel_caches(k.add_one_kernel):
        cache.clear()
    with jitguard.offline(), jitguard.watch() as rec:
        for n in (16, 17, 1):
            k.add_one_kernel[(1,)](x, y, n, BLOCK=64)
    events = [e for e in rec.events if e.kernel == "add_one_kernel"]
    # The listener hears the JIT's own triton.compile too: still one event per variant, not two.
    assert [(e.origin, e.variant) for e in events] == [("jit", 1), ("jit", 2), ("jit", 3)]


def test_gluon_kernels_are_counted_with_origin_gluon_and_decorator_advice():
    if triton_compat.VERSION < (3, 5):
        pytest.skip(f"Triton {triton_compat.TRITON_VERSION} has no Gluon (triton.experimental.gluon, 3.5+)")
    from tests import kernels_gluon_for_tests as g

    x, y = torch.zeros(64), torch.zeros(64)
    with jitguard.offline(), jitguard.watch() as rec:
        for n in (16, 17, 1):
            g.gluon_add_one[(1,)](x, y, n, BLOCK=64, num_warps=4)
    events = [e for e in rec.events if e.kernel == "gluon_add_one"]
    assert [(e.origin, e.variant) for e in events] == [("gluon", 1), ("gluon", 2), ("gluon", 3)]
    assert events[2].causes[0].advice == "do_not_specialize"  # its decorator decides: a decorator fix
    assert "[gluon]" in format_event_line(events[2]) and 'fix: do_not_specialize=["n"]' in format_event_line(events[2])


def test_no_recompiles_fails_on_a_new_variant_from_a_direct_compile_naming_its_origin():
    with pytest.raises(jitguard.RecompileError) as failure, jitguard.no_recompiles(warmup=1):
        triton.compile(source_of(k.add_one_kernel, True), target=TARGET)
        triton.compile(source_of(k.add_one_kernel, False), target=TARGET)
    message = str(failure.value)
    assert "add_one_kernel" in message and "[triton.compile]" in message and "1 new after it" in message


def test_one_direct_compile_per_kernel_passes_no_recompiles():
    with jitguard.no_recompiles(warmup=1) as guard:
        triton.compile(source_of(k.add_one_kernel, True), target=TARGET)
    assert len(guard.compiles) == 1 and not guard.new_variants


GENERATED = '''
import triton
import triton.language as tl


# kernel path: {path}
# Topologically Sorted Source Nodes: [add, mul], Original ATen: [aten.add, aten.mul]
# Source node to ATen node mapping:
@triton.jit
def triton_poi_fused_add_mul_0(in_ptr0, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
    xmask = xindex < xnumel
    tl.store(out_ptr0 + xindex, (tl.load(in_ptr0 + xindex, xmask) + 1) * 2, xmask)
'''

# Inductor's own frame, as torch/_inductor/runtime/triton_heuristics.py calls triton.compile for a config.
INDUCTOR_CALLER = '''
def _precompile_config(kernel, source, target, cfg):
    return triton.compile(source, target=target)
'''


def _load_generated(tmp_path: Path):
    path = tmp_path / "cx" / "cxgenerated.py"
    path.parent.mkdir()
    path.write_text(GENERATED.format(path=path))
    spec = importlib.util.spec_from_file_location("cxgenerated", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["cxgenerated"] = module
    spec.loader.exec_module(module)
    return module


def _inductor_caller(tmp_path: Path):
    """A function whose code lives at .../torch/_inductor/runtime/triton_heuristics.py (the path Inductor's
    compile is known by), calling Triton's real triton.compile."""
    filename = str(tmp_path / "site" / "torch" / "_inductor" / "runtime" / "triton_heuristics.py")
    scope = {"triton": triton}
    exec(compile(INDUCTOR_CALLER, filename, "exec"), scope)
    return scope["_precompile_config"]


def test_an_inductor_kernel_is_named_with_its_ops_and_advised_without_a_codemod(tmp_path):
    generated = _load_generated(tmp_path)
    precompile = _inductor_caller(tmp_path)

    config = triton.Config({"XBLOCK": 64}, num_warps=4, num_stages=1)  # Inductor's precompile holds it as `cfg`
    with jitguard.watch() as rec:
        for divisible in (True, False):
            precompile(None, source_of(generated.triton_poi_fused_add_mul_0, divisible), TARGET, config)
    events = [e for e in rec.events if e.kernel == "triton_poi_fused_add_mul_0"]
    assert [(e.origin, e.variant) for e in events] == [("inductor", 1), ("inductor", 2)]
    assert events[0].inductor["ops"] == ["aten.add", "aten.mul"] and events[0].inductor["nodes"] == ["add", "mul"]
    cause, = events[1].causes
    assert cause.advice == "inductor_sizes" and "mark the dimension dynamic" in cause.message
    line = format_event_line(events[1])
    assert "[torch.compile]" in line and "fix:" not in line


PLUGIN_SUITE = '''
import pytest
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n)


def compile_copy(n_divisible):
    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"}
    if tuple(int(p) for p in triton.__version__.split(".")[:2]) >= (3, 3):
        attrs = {(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]]}
        if n_divisible:
            attrs[(2,)] = [["tt.divisibility", 16]]
        source = ASTSource(copy_kernel, dict(signature, BLOCK="constexpr"), {(3,): 64}, attrs)
    else:
        from triton.backends.compiler import AttrsDescriptor
        hints = AttrsDescriptor.from_hints({0: 16, 1: 16, 2: 16 if n_divisible else 3})
        source = ASTSource(copy_kernel, signature, {"BLOCK": 64}, hints)
    return triton.compile(source, target=GPUTarget("cuda", 90, 32))


@pytest.mark.no_recompiles
def test_compiles_one_variant():
    compile_copy(True)


@pytest.mark.no_recompiles
def test_compiles_a_second_variant():
    compile_copy(True)
    compile_copy(False)
'''


def test_the_pytest_marker_fails_a_test_whose_direct_compile_makes_a_new_variant(pytester, tmp_path):
    pytester.makepyfile(test_direct_suite=PLUGIN_SUITE)
    result = pytester.runpytest_subprocess("-rA", "-p", "no:cacheprovider")
    outcomes = {m.group(2): m.group(1) for line in result.outlines
                if (m := re.match(r"^(PASSED|FAILED|ERROR) \S*::(\w+)", line))}
    assert outcomes == {"test_compiles_one_variant": "PASSED", "test_compiles_a_second_variant": "FAILED"}
    failure = "\n".join(result.outlines)
    assert "copy_kernel" in failure and "[triton.compile]" in failure


# --- Inductor kernels made launchable without a Triton compile in this process -------------------------------
# Torch's real CachingAutotuner runs its real precompile(); the stand-in is only the compiled result, whose
# launcher torch would load onto a GPU (a cubin through its static launcher, or Triton's launcher).

def _compiled_result(kernel_hash: str, static: bool):
    from torch._inductor.runtime import triton_heuristics as heuristics

    base = heuristics.StaticTritonCompileResult if static else heuristics.TritonCompileResult

    class CompiledForAnotherProcess(base):
        def make_launcher(self):
            def launch(*args, **kwargs):
                return None
            launch.config, launch.n_regs, launch.n_spills = self.config, 0, 0
            return launch

    kernel = type("Compiled", (), {"hash": kernel_hash, "name": "triton_poi_fused_add_mul_0"})()
    config = triton.Config({"XBLOCK": 128}, num_warps=4, num_stages=1)
    return CompiledForAnotherProcess(kernel, config, {}, {})


def _arrived_autotuner(generated, *results):
    """An autotuner as Inductor's parent process gets one back: its configs compiled elsewhere."""
    from torch._inductor.runtime.hints import DeviceProperties, HeuristicType
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

    autotuner = CachingAutotuner(generated.triton_poi_fused_add_mul_0,
                                 {"device": DeviceProperties.create(torch.device("cpu")), "signature": {}},
                                 [result.config for result in results], None, [], False, HeuristicType.POINTWISE,
                                 filename=generated.__file__)
    autotuner.compile_results = list(results)
    return autotuner


def test_a_kernel_a_compile_worker_hands_over_is_one_event_tied_to_the_graph_that_asked(tmp_path):
    autotuner = _arrived_autotuner(_load_generated(tmp_path), _compiled_result("a1b2", static=False))
    autotuner.set_compile_info("0/1", False)  # as Inductor does before making a worker's kernel launchable
    with jitguard.watch() as rec:
        autotuner.precompile(warm_cache_only=False, reload_kernel=lambda: None, static_triton_bundle_key="k")
        autotuner.precompile()  # launchable already: nothing arrives
    event, = rec.events
    assert (event.kernel, event.origin, event.arrived, event.key) == ("triton_poi_fused_add_mul_0", "inductor",
                                                                      "worker", "a1b2")
    assert event.inductor["compile_id"] == "0/1" and event.options["num_warps"] == 4
    assert event.file.endswith("cxgenerated.py") and not event.loaded
    assert "(handed over by a compile worker)" in format_event_line(event)


def test_a_hand_over_without_its_function_is_located_by_reading_the_generated_module(tmp_path):
    generated = _load_generated(tmp_path)
    autotuner = _arrived_autotuner(generated, _compiled_result("c3d4", static=True))
    autotuner.fn = None  # what a cached or worker-compiled kernel carries: no function object to ask
    with jitguard.watch() as rec:
        autotuner.precompile(warm_cache_only=False, reload_kernel=lambda: None, static_triton_bundle_key="k")
    event, = rec.events
    source_lines = Path(generated.__file__).read_text().splitlines()
    assert event.line > 0 and source_lines[event.line - 1].startswith("def triton_poi_fused_add_mul_0(")


def test_a_kernel_from_torchs_own_cache_is_a_disk_load(tmp_path):
    from torch._inductor.codecache import StaticAutotunerFuture

    autotuner = _arrived_autotuner(_load_generated(tmp_path), _compiled_result("c3d4", static=True))
    future = StaticAutotunerFuture(autotuner)  # what torch's FX graph cache hit hands Inductor
    future.reload_kernel_from_src = lambda: autotuner
    with jitguard.watch() as rec:
        future.result()
    event, = rec.events
    assert (event.origin, event.arrived, event.key, event.loaded) == ("inductor", "disk", "c3d4", True)


def test_a_kernel_this_process_compiled_is_not_recorded_again_when_it_becomes_launchable(tmp_path):
    generated = _load_generated(tmp_path)
    precompile_config = _inductor_caller(tmp_path)
    with jitguard.watch() as rec:
        compiled = precompile_config(None, source_of(generated.triton_poi_fused_add_mul_0, True), TARGET, None)
        autotuner = _arrived_autotuner(generated, _compiled_result(compiled.hash, static=False))
        autotuner.precompile()
    assert [(e.origin, e.arrived) for e in rec.events] == [("inductor", "cold")]


def test_no_recompiles_fails_on_a_kernel_handed_over_after_warm_up_naming_its_origin(tmp_path):
    generated = _load_generated(tmp_path)
    first = _arrived_autotuner(generated, _compiled_result("e5f6", static=False))
    second = _arrived_autotuner(generated, _compiled_result("a7b8", static=False))
    with pytest.raises(jitguard.RecompileError) as failure, jitguard.no_recompiles(warmup=1):
        first.precompile()
        second.precompile()
    message = str(failure.value)
    assert "triton_poi_fused_add_mul_0" in message and "[torch.compile]" in message


def test_a_monitor_started_before_inductor_is_imported_wraps_its_hand_over_point_when_it_is():
    import subprocess

    program = ("import sys, jitguard; monitor = jitguard.install(summary=False); "
               "assert 'torch._inductor.runtime.triton_heuristics' not in sys.modules; "
               "was = monitor.handover_hook.active; "
               "from torch._inductor.runtime.triton_heuristics import CachingAutotuner; "
               "wrapped = hasattr(CachingAutotuner.precompile, '__jitguard_handover__'); "
               "print(was, monitor.handover_hook.active, wrapped)")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True", "True"]


def test_a_hand_over_point_whose_module_was_mid_import_when_the_monitor_started_is_wrapped_once_it_completes(
        tmp_path, monkeypatch):
    """Triton is often first imported from inside Inductor's modules: the monitor then starts while the module
    that defines the hand-over point is half executed (in sys.modules, its class not defined yet)."""
    import types

    from jitguard.runtime.inductor_launchers import HandoverHook

    half_done = types.ModuleType("jg_half_imported_heuristics")
    monkeypatch.setitem(sys.modules, half_done.__name__, half_done)
    hook = HandoverHook(lambda *args: None, module_name=half_done.__name__, class_name="Autotuner")
    hook.install()
    try:
        assert not hook.active

        class Autotuner:
            def precompile(self):
                return "launchable"

        half_done.Autotuner = Autotuner  # the rest of the module runs
        (tmp_path / "jg_later_module.py").write_text("")
        monkeypatch.syspath_prepend(str(tmp_path))
        importlib.import_module("jg_later_module")  # any later import finds the module complete
        assert hook.active and hasattr(Autotuner.precompile, "__jitguard_handover__")
        assert Autotuner().precompile() == "launchable"
    finally:
        hook.remove()
    assert not hasattr(Autotuner.precompile, "__jitguard_handover__")
