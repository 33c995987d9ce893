"""Where a Triton compile came from (`CompileEvent.origin`), and what torch says about an Inductor kernel.

- "jit" / "gluon": a `@triton.jit` / `@gluon.jit` kernel's launch or warm-up (Triton's JIT hooks fired);
- "inductor": torch.compile's generated code asked for it (a frame of `torch/_inductor/` is on the stack:
  Inductor's compile workers and its in-process compiles alike);
- "compile": any other direct `triton.compile(...)` call.

An Inductor kernel is named by its generated name (`triton_poi_fused_add_mul_0`); its provenance comes
from torch where torch keeps it: the ATen ops and graph nodes from the comment Inductor writes above
each kernel in the generated module, the graph's compile id ("0/1": frame 0, its second compile) and
the recompile's reason (the guard that failed) from Dynamo while it compiles in this process. The
generated file is only read as text, never imported or run.

Called on the compile path only, never on a launch. Imports neither Triton nor torch (reads the torch
modules the host has already imported).
"""

from __future__ import annotations

import linecache
import os
import re
import sys
from dataclasses import asdict, dataclass, field
from typing import Any

from jitguard.events import DECORATOR_ORIGINS, Cause
from jitguard.internal_frames import callers

_INDUCTOR_DIR = os.sep + os.path.join("torch", "_inductor") + os.sep
_STACK_DEPTH = 64  # Inductor's compile sits a few frames under triton.compile; a deeper caller is not it
_COMMENT_LINES = 12  # lines read above a generated kernel's decorator for Inductor's provenance comment
_LIST_AFTER = r"\s*\[([^\]]*)\]"


@dataclass
class InductorFacts:
    """What torch says about one Inductor kernel; empty fields where it says nothing."""

    ops: list[str] = field(default_factory=list)  # ATen ops fused into it ("aten.add")
    nodes: list[str] = field(default_factory=list)  # the graph's nodes it computes
    compile_id: str | None = None  # Dynamo's id of the graph compile that asked for it ("0/1")
    recompile_reason: str | None = None  # the guard that failed, when that compile was a recompile

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def origin_of_jit_kernel(is_gluon: bool) -> str:
    """The origin of a compile Triton's JIT hooks reported."""
    return "gluon" if is_gluon else "jit"


def inductor_on_stack(frame: Any) -> bool:
    """Whether a frame of torch's Inductor is among the callers of `frame`."""
    return any(_INDUCTOR_DIR in caller.f_code.co_filename for caller in callers(frame, _STACK_DEPTH))


def origin_of_direct_compile(is_gluon: bool, frame: Any) -> str:
    """The origin of a `triton.compile` call that no JIT launch made."""
    if inductor_on_stack(frame):
        return "inductor"
    return "gluon" if is_gluon else "compile"


def _bracketed(text: str, label: str) -> list[str]:
    match = re.search(re.escape(label) + _LIST_AFTER, text)
    if match is None:
        return []
    return [item.strip() for item in match.group(1).split(",") if item.strip()]


def provenance_comment(file: str, def_line: int) -> tuple[list[str], list[str]]:
    """(ATen ops, graph nodes) from the comment Inductor writes above a generated kernel
    (`# ... Source Nodes: [add, mul], Original ATen: [aten.add, aten.mul]`); empty when absent."""
    if not file or def_line <= 1:
        return [], []
    first = max(1, def_line - _COMMENT_LINES)
    lines = [linecache.getline(file, number) for number in range(first, def_line)]
    comments = " ".join(line.strip() for line in lines if line.lstrip().startswith("#"))
    return _bracketed(comments, "Original ATen:"), _bracketed(comments, "Source Nodes:")


def dynamo_compile_id() -> str | None:
    """Dynamo's id of the graph compile running in this thread now ("0/1"); None outside a compile or where
    torch is not loaded (Inductor's compile workers)."""
    guards = sys.modules.get("torch._guards")
    compile_context = getattr(guards, "CompileContext", None)
    try:
        compile_id = compile_context.current_compile_id() if compile_context is not None else None
    except Exception:  # torch's internals moved: the kernel is still counted, without its graph
        compile_id = None
    return str(compile_id) if compile_id is not None else None


def _dynamo_compile_facts() -> tuple[str | None, str | None]:
    """(compile id, recompile reason) of the graph Dynamo compiles in this thread now; (None, None)
    outside a compile or where torch is not loaded (Inductor's compile workers)."""
    compile_id = dynamo_compile_id()
    reason = None
    utils = sys.modules.get("torch._dynamo.utils")
    get_metrics_context = getattr(utils, "get_metrics_context", None)
    if compile_id is not None and get_metrics_context is not None:
        try:
            context = get_metrics_context()
            if context.in_progress():
                reason = (getattr(context, "_metrics", None) or {}).get("recompile_reason")
        except Exception:
            reason = None
    return compile_id, (str(reason) if reason else None)


def inductor_facts(file: str, def_line: int) -> InductorFacts:
    """What torch says about the Inductor kernel defined at `file:def_line`, compiling now."""
    ops, nodes = provenance_comment(file, def_line)
    compile_id, reason = _dynamo_compile_facts()
    return InductorFacts(ops=ops, nodes=nodes, compile_id=compile_id, recompile_reason=reason)


def _inductor_advice(facts: InductorFacts | None) -> str:
    trigger = ""
    if facts is not None and facts.recompile_reason:
        trigger = (f"torch.compile recompiled graph {facts.compile_id} because a guard failed: "
                   f"{facts.recompile_reason}; ")
    elif facts is not None and facts.compile_id:
        trigger = f"compiled for graph {facts.compile_id}; "
    return (f"{trigger}generated by torch.compile (never edit generated code): mark the dimension dynamic "
            "(torch._dynamo.mark_dynamic or dynamic=True), warm this size up before serving, or make the size "
            "a compile-time constant")


def advise_for_origin(causes: list[Cause], origin: str, facts: InductorFacts | None = None) -> list[Cause]:
    """The causes of a variant with advice that fits who made the compile: a decorator edit only for a
    kernel whose decorator decides its specialization (`DECORATOR_ORIGINS`)."""
    if origin in DECORATOR_ORIGINS:
        return causes
    for cause in causes:
        if cause.advice == "expected":
            continue
        if origin == "inductor":
            cause.advice, cause.message = "inductor_sizes", f"{cause.param}: {_inductor_advice(facts)}"
        else:
            cause.advice = "compile_call"
            cause.message = (f"{cause.param}: the triton.compile caller chose this signature; pass the same "
                             "signature and attributes for every call, or compile each variant once at start-up")
    return causes
