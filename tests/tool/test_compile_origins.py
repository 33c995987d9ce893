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
