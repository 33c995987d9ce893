"""torch.compile's graph recompiles are logged with torch's own reason and shown in the report, with the
phase they happened in (Dynamo runs on a CPU: the `eager` backend compiles no kernels, the records are
the same as Inductor's)."""

from __future__ import annotations

import torch
import torch._dynamo
import torch._dynamo.utils

import jitguard
from jitguard.report.build import build_report
from jitguard.report.render_tables import format_text
from jitguard.runtime import monitor


def scale_and_shift(x: torch.Tensor) -> torch.Tensor:
    return x * 2.0 + 1.0


def test_graph_recompiles_are_reported_with_torch_reasons_and_phase(tmp_path):
    torch._dynamo.reset()
    torch._dynamo.utils.clear_compilation_metrics()
    compiled = torch.compile(scale_and_shift, backend="eager", dynamic=False)
    logs = tmp_path / "logs"
    with jitguard.watch(dir=str(logs)):
        compiled(torch.randn(7))
        compiled(torch.randn(9))  # a size Dynamo's guard did not accept: graph 0/1
        jitguard.mark_serving()
        compiled(torch.randn(5, dtype=torch.float64))  # a dtype it did not either, while serving: 0/2
        monitor.mark_warmup()
    torch._dynamo.reset()
    torch_reasons = [m.recompile_reason for m in torch._dynamo.utils.get_compilation_metrics() if m.recompile_reason]
    assert len(torch_reasons) == 2

    report = build_report(logs)
    graphs = report["torch_compile"]
    assert graphs["graphs"] == 3
    assert [(r["compile_id"], r["phase"], r["recompile_reason"]) for r in graphs["recompiles"]] == [
        ("0/1", "warmup", torch_reasons[0]), ("0/2", "serving", torch_reasons[1])]
    text = format_text(report)
    assert "torch.compile: 3 graph compile(s), 2 recompile(s)" in text
    assert "0/2 scale_and_shift (" in text and f"[serving]: {torch_reasons[1]}" in text
