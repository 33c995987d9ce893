"""torch.compile's generated Triton kernels are counted and explained (GPU: Inductor emits Triton only for a
GPU device). A function compiled for one size, then recompiled with a dynamic size: the report's Inductor
kernels equal torch's own count of generated kernels, and the recompile's reason is torch's."""

from __future__ import annotations

import pytest
import torch

import jitguard
from jitguard.report.build import build_report
from jitguard.report.render_tables import format_text

pytestmark = pytest.mark.gpu


@pytest.fixture
def fresh_inductor(tmp_path, monkeypatch):
    import torch._dynamo
    import torch._dynamo.utils
    import torch._inductor.config
    import torch._inductor.metrics

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    # Compiled in this process (no worker pool), so Dynamo's compile context is there to read.
    monkeypatch.setattr(torch._inductor.config, "compile_threads", 1)
    monkeypatch.setattr(torch._inductor.config, "fx_graph_cache", False)
    torch._dynamo.reset()
    torch._dynamo.utils.clear_compilation_metrics()
    torch._inductor.metrics.reset()
    yield tmp_path / "logs"
    torch._dynamo.reset()


def scaled_gelu(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(x * 2.0 + 1.0).sum(dim=-1)


def test_inductor_kernels_match_torch_counts_and_the_recompile_reason_is_shown(fresh_inductor):
    import torch._dynamo.utils
    import torch._inductor.metrics

    compiled = torch.compile(scaled_gelu)
    with jitguard.watch(dir=str(fresh_inductor)) as rec:
        compiled(torch.randn(7, 64, device="cuda"))
        compiled(torch.randn(9, 64, device="cuda"))  # a new row count: Dynamo recompiles with the size dynamic
        compiled(torch.randn(33, 64, device="cuda"))  # served by the dynamic graph: no compile
    torch.cuda.synchronize()
    inductor = [e for e in rec.events if e.origin == "inductor"]
    generated = {(e.kernel, e.file) for e in inductor}
    assert len(generated) == torch._inductor.metrics.generated_kernel_count > 0
    assert all(e.kernel.startswith("triton_") and e.inductor is not None for e in inductor)
    assert {e.inductor["compile_id"] for e in inductor} == {"0/0", "0/1"}
    reasons = [m.recompile_reason for m in torch._dynamo.utils.get_compilation_metrics() if m.recompile_reason]
    assert reasons, "torch recorded no recompile reason"
    recompiled = {e.inductor["recompile_reason"] for e in inductor if e.inductor["compile_id"] == "0/1"}
    assert recompiled == {reasons[-1]}
    # No check of e.inductor["ops"]: on torch 2.11 the generated kernel's source carries no ATen-ops comment
    # (measured on an H100, benchmarks/results/every_compile.md), so the ops are known only where it does.

    report = build_report(fresh_inductor)
    kernels = [k for k in report["kernels"] if k["origin"] == "inductor"]
    assert len(kernels) == len(generated) and all(k["fix"] is None for k in kernels)
    by_origin = report["totals"]["by_origin"]["inductor"]
    assert by_origin["compiles"] + by_origin["loads"] == len(inductor)
    assert f"recompiled because: {reasons[-1]}" in format_text(report)
    graphs = report["torch_compile"]  # the graph compiles Dynamo logged, with the same reason
    assert graphs["graphs"] == 2 and [r["recompile_reason"] for r in graphs["recompiles"]] == [reasons[-1]]
