"""`sweep(fn, values)`: which values make which kernels compile a new variant, and why.

    >>> import jitguard
    >>> with jitguard.offline(compile=False):                       # doctest: +SKIP
    ...     table = jitguard.sweep(lambda n: add[(1,)](x, y, n, BLOCK=128), [1, 2, 16, 17, 32])
    >>> print(table)                                                 # doctest: +SKIP
    jitguard sweep over 5 values: 1, 2, 16, 17, 32
    kernel  variants  new variant at values  causes  fix
    add     3         1, 2, 16               n x2    do_not_specialize=["n"]
    ...
    >>> jitguard.assert_max_variants(table, "add", 1)                # doctest: +SKIP
    RecompileError: Expected at most 1 variant of add over the sweep, but 3 were compiled: ...

`fn(v)` runs for each value under whatever backend is active (a GPU, or `jitguard.offline()`).
Like `no_recompiles`, the sweep is isolated: each kernel starts it with an empty in-memory cache
(restored afterwards), so the counts do not depend on what ran earlier in the process. Enclosing
`no_recompiles` blocks do not judge the sweep's compiles: the table reports them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from jitguard.events import Cause, CompileEvent
from jitguard.explain import fix_hint, short_path, without_weaker_advice
from jitguard.render_text import event_kernel_names
from jitguard.runtime.call_capture import CallScope, KernelCall, KernelId, kernel_id_of, open_scopes


@dataclass
class SweepVariant:
    """One new variant compiled during a sweep: the value whose call compiled it and why."""

    kernel: str
    variant: int  # 1-based, per kernel, in the order the sweep compiled them
    value: Any
    value_index: int
    causes: list[Cause]
    call_site: str
    autotuning: bool
    compile_ms: float | None
    event: CompileEvent


@dataclass
class SweepTable:
    """What `sweep` returns: every new variant per kernel with the value that caused it.

    `print(table)` shows one row per kernel, then each variant with its causes.
    """

    values: list[Any]
    rows: list[SweepVariant] = field(default_factory=list)

    def kernels(self) -> dict[str, int]:
        """{kernel name: new variants over the sweep}, in the order kernels first compiled. Kernels of one
        name in different files (two attention files' `_fwd_kernel`) are named with their file."""
        counts: dict[str, int] = {}
        for name in self._table_names():
            counts[name] = counts.get(name, 0) + 1
        return counts

    def _table_names(self) -> list[str]:
        """Each row's kernel as the table names it (`render_text.event_kernel_names`)."""
        return event_kernel_names([row.event for row in self.rows])

    def variants(self, kernel: Any) -> int:
        """New variants of `kernel` (a name or a kernel object) over the sweep; a function's name counts
        every kernel jitted from it, a bound name (`fast = triton.jit(body)`) or object its own."""
        return len(self._rows_of(kernel))

    def values_compiling(self, kernel: Any) -> list[Any]:
        """The values whose call compiled at least one new variant of `kernel`."""
        out: list[Any] = []
        indices: list[int] = []
        for row in self._rows_of(kernel):
            if row.value_index not in indices:
                indices.append(row.value_index)
                out.append(row.value)
        return out

    def to_dict(self) -> dict:
        """JSON-ready: {"values": [...], "kernels": {name: {"variants", "values", "fix", "rows": [...]}}}."""
        kernels: dict[str, dict] = {}
        for name in self.kernels():
            rows = self._rows_of(name)
            kernels[name] = {
                "variants": len(rows),
                "values": [_json_value(v) for v in self.values_compiling(name)],
                "fix": fix_hint(without_weaker_advice([c for r in rows for c in r.causes])) or None,
                "rows": [{"variant": r.variant, "value": _json_value(r.value), "autotuning": r.autotuning,
                          "call_site": r.call_site, "causes": [c.to_dict() for c in r.causes]} for r in rows],
            }
        return {"values": [_json_value(v) for v in self.values], "kernels": kernels}

    def _rows_of(self, kernel: Any) -> list[SweepVariant]:
        """The rows of `kernel`: a name as the table shows it, a function's or a bound name (all the
        kernels it names), or a kernel object (that one kernel)."""
        if isinstance(kernel, str):
            return [r for r, name in zip(self.rows, self._table_names())
                    if kernel == name or r.event.answers_to(kernel)]
        kid = kernel_id_of(_jit_function(kernel))
        return [r for r in self.rows if (r.kernel, r.event.file, r.event.line) == (kid.label, kid.file, kid.line)]

    def __str__(self) -> str:
        return "\n".join(self._lines())

    def _lines(self) -> list[str]:
        lines = [f"jitguard sweep over {len(self.values)} values: {_short_values(self.values)}"]
        if not self.rows:
            lines.append("no kernel compiled a new variant")
            return lines
        header = ("kernel", "variants", "new variant at values", "causes", "fix")
        table = []
        for name, count in self.kernels().items():
            rows = self._rows_of(name)
            causes = [c for r in rows for c in r.causes]
            per_param: dict[str, int] = {}
            for cause in causes:
                per_param[cause.param] = per_param.get(cause.param, 0) + 1
            cause_words = ", ".join(f"{p} x{n}" for p, n in sorted(per_param.items(), key=lambda kv: -kv[1]))
            table.append((name, str(count), _short_values(self.values_compiling(name), 8), cause_words or "-",
                          fix_hint(without_weaker_advice(causes)) or "-"))
        widths = [max(len(r[i]) for r in table + [header]) for i in range(4)]
        for row in [header] + table:
            lines.append("  ".join(c.ljust(w) for c, w in zip(row[:4], widths)) + "  " + row[4])
        for name in self.kernels():
            lines.append("")
            lines.append(f"{name}:")
            for variant in self._rows_of(name):
                tag = " [autotune config]" if variant.autotuning else ""
                head = f"  #{variant.variant} at value {variant.value!r}{tag}"
                if not variant.causes:
                    lines.append(f"{head}: first variant")
                    continue
                reasons = "; ".join(f"{c.param}: {c.before} -> {c.after}" for c in variant.causes)
                lines.append(f"{head}: {reasons}")
        return lines

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # IPython
        printer.text(str(self))


class _SweepScope(CallScope):
    def __init__(self, table: SweepTable) -> None:
        super().__init__(isolate=True)
        self.table = table
        self.value_index = -1

    def compile_seen(self, event: CompileEvent, call: KernelCall | None) -> None:
        kernel = KernelId.of_event(event)
        if not self.first_compile_of_key(kernel, event.key):
            return
        index = self.value_index
        self.table.rows.append(SweepVariant(
            kernel=event.label, variant=self.keys_seen(kernel),
            value=self.table.values[index] if index >= 0 else None, value_index=index, causes=list(event.causes),
            call_site=short_path(event.call_site) if event.call_site else "",
            autotuning=event.autotuning, compile_ms=event.compile_ms, event=event))


def sweep(fn: Callable[[Any], Any], values: Iterable[Any]) -> SweepTable:
    """Call `fn(v)` for each value and return a `SweepTable` of the new variants each kernel compiled.

    Runs under the active backend; isolated from earlier compiles (see the module docstring).
    """
    if not callable(fn):
        raise TypeError(f"jitguard.sweep: fn must be callable, got {type(fn).__name__}")
    table = SweepTable(values=list(values))
    scope = _SweepScope(table)
    enclosing = [s for s in open_scopes() if not s.paused]
    for outer in enclosing:
        outer.paused = True
    try:
        with scope:
            for index, value in enumerate(table.values):
                scope.value_index = index
                try:
                    fn(value)
                except Exception as exc:
                    if hasattr(exc, "add_note"):
                        exc.add_note(f"jitguard.sweep: raised by fn({value!r}), "
                                     f"value {index + 1} of {len(table.values)}")
                    raise
    finally:
        for outer in enclosing:
            outer.paused = False
    if scope.internal_errors:
        first = scope.internal_errors[0]
        raise RuntimeError(f"jitguard.sweep could not attribute compiles: {type(first).__name__}: {first}") from first
    return table


def assert_max_variants(table: SweepTable, kernel: Any, n: int) -> None:
    """Raise `RecompileError` if `kernel` (a name or kernel object) compiled more than `n` variants in the sweep.

    A kernel that never compiled in the sweep is an error too (a misspelled name would pass silently).
    """
    from jitguard.runtime.monitor import RecompileError
    if not isinstance(table, SweepTable):
        raise TypeError("jitguard.assert_max_variants: expected the table jitguard.sweep returns, "
                        f"got {type(table).__name__}")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"jitguard.assert_max_variants: n must be an int >= 1, not {n!r}")
    name = kernel if isinstance(kernel, str) else kernel_id_of(_jit_function(kernel)).label
    rows = table._rows_of(kernel)
    if not rows:
        seen = ", ".join(table.kernels()) or "none"
        raise ValueError(f"jitguard.assert_max_variants: kernel {name!r} compiled nothing in this sweep "
                         f"(kernels that compiled: {seen}); misspelled, or not called by fn?")
    if len(rows) <= n:
        return
    were = "was" if len(rows) == 1 else "were"
    lines = [f"Expected at most {n} variant{'s' if n != 1 else ''} of {name} over the sweep of "
             f"{len(table.values)} values, but {len(rows)} {were} compiled:"]
    for row in rows:
        tag = " [autotune config]" if row.autotuning else ""
        where = f", called from {row.call_site}" if row.call_site else ""
        lines.append(f"  #{row.variant} at value {row.value!r}{tag}{where}")
        for cause in row.causes:
            lines.append(f"    {cause.param}: {cause.before} -> {cause.after}")
    causes = without_weaker_advice([c for r in rows for c in r.causes])
    hint = fix_hint(causes)
    if hint:
        lines.append(f"fix: {hint}")
    for message in dict.fromkeys(c.message for c in causes if c.advice not in (None, "expected") and c.message):
        lines.append(f"  {message}")
    raise RecompileError("\n".join(lines), [r.event for r in rows])


def _jit_function(kernel: Any) -> Any:
    """The JITFunction of a kernel object (autotune and heuristics wrappers included); TypeError else."""
    from jitguard.triton_compat import unwrap_jit_function
    jit_fn = unwrap_jit_function(kernel)
    if jit_fn is None:
        raise TypeError(f"jitguard: {kernel!r} is neither a kernel name nor a @triton.jit kernel")
    return jit_fn


def _json_value(value: Any) -> Any:
    return value if isinstance(value, (int, float, str, bool)) or value is None else repr(value)


def _short_values(values: list[Any], limit: int = 12) -> str:
    shown = [repr(v) for v in values[:limit]]
    if len(values) > limit:
        shown.append(f"... ({len(values) - limit} more)")
    return ", ".join(shown)
