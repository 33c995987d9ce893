"""Words and tables for people: every text jitguard prints about compiles is spelled here.

Tables (plain and markdown), tallies, plurals, one cause as `param: before -> after`, the fix (one
spelling, from `explain`'s advice), the per-compile log line, the end-of-process summary and the
`no_recompiles` failure text. Markdown escaping is safe: a backtick cannot end a code span and
`<script>` in a name stays text.

This module imports neither Triton nor torch.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from jitguard.events import Cause, CompileEvent, bound_label
from jitguard.explain import fix_hint, fix_parts, short_path, without_weaker_advice
from jitguard.tuning.records import remedy_lines, summarize_tunings

# --- text from logs, reports and source files, made safe to print ----------------------------------

# C0 and C1 control characters, DEL, and the Unicode line separators and bidirectional overrides that
# reorder what a terminal shows: an ESC in a log's kernel name must not clear a screen, write a
# clipboard (OSC 52) or plant a link (OSC 8). A lone surrogate (JSON's "\\ud800") cannot be encoded to
# print at all.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
                      "\ud800-\udfff]")
_CONTROL_KEEPING_NEWLINES = re.compile(_CONTROL.pattern.replace("\x00-\x1f", "\x00-\x09\x0b-\x1f"))
_NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}

# A name from a log or a source file is shortened past this many characters in text for people
# (JSON keeps it whole): a 50 MB kernel name must not make a 200 MB report.
NAME_WIDTH = 400


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED_ESCAPES:
        return _NAMED_ESCAPES[char]
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def escape_controls(text: str, keep_newlines: bool = False) -> str:
    """`text` with every control character shown escaped (`\\x1b`, `\\n`, `\\u202e`), so printing it
    cannot move the cursor, recolour, retitle or link; `keep_newlines` leaves line breaks (a whole
    page of text whose names were already escaped)."""
    pattern = _CONTROL_KEEPING_NEWLINES if keep_newlines else _CONTROL
    return pattern.sub(_escaped, text)


def shorten(text: str, width: int = NAME_WIDTH) -> str:
    """`text` cut in the middle to at most `width` characters, head and tail kept ('abc...xyz')."""
    if len(text) <= width:
        return text
    head = (width - 3) // 2 + (width - 3) % 2
    return f"{text[:head]}...{text[len(text) - (width - 3 - head):]}"


def for_people(value: Any, width: int = NAME_WIDTH) -> str:
    """One name or value from a log, a report or a source file as text to print: control
    characters escaped, then shortened to `width` (see `escape_controls`, `shorten`)."""
    return shorten(escape_controls("" if value is None else str(value)), width)


def people_view(data: Any, skip: Sequence[str] = ()) -> Any:
    """A copy of a JSON-like report in which every string (keys too) went through `for_people`;
    keys named in `skip` are left out (data no text shows, such as a report's variant list)."""
    if isinstance(data, str):
        return for_people(data)
    if isinstance(data, dict):
        return {for_people(key) if isinstance(key, str) else key: people_view(value, skip)
                for key, value in data.items() if key not in skip}
    if isinstance(data, (list, tuple)):
        return [people_view(item, skip) for item in data]
    return data


def plural(n: int, word: str) -> str:
    """'1 variant', '3 variants'."""
    return f"{n} {word}" + ("" if n == 1 else "s")


def table(header: Sequence[str], rows: Sequence[Sequence[Any]], indent: str = "  ") -> list[str]:
    """Columns padded to their widest cell, two spaces apart, trailing blanks trimmed; a cell's control
    characters are shown escaped (a newline in a name cannot forge a row)."""
    header = [escape_controls(str(cell)) for cell in header]
    rows = [[escape_controls(str(cell)) for cell in row] for row in rows]
    widths = [max(len(str(row[i])) for row in [*rows, header]) for i in range(len(header))]
    lines = [indent + "  ".join(str(h).ljust(w) for h, w in zip(header, widths)).rstrip()]
    for row in rows:
        lines.append(indent + "  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip())
    return lines


def tally(counts: dict[str, int], top: int | None = None) -> str:
    """'n x3, stride x1': names by count, most first (ties keep insertion order)."""
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])
    return ", ".join(f"{name} x{n}" for name, n in ranked[:top])


def cause_line(cause: Cause) -> str:
    """One cause as `param: before -> after`."""
    return f"{cause.param}: {cause.before} -> {cause.after}"


def cost_lines(kernel: dict[str, Any]) -> list[str]:
    """What each advised demotion of a report kernel costs: one line per parameter with a verdict.

    e.g. `cost: num_tokens: free (same code either way)` or `skipped: n_cols: costly: 2 of 2
    128-bit loads become 32-bit; instead: keep the specialization and ... warm-up plan`.
    """
    lines = []
    for param, info in (kernel.get("params") or {}).items():
        cost = info.get("cost") if isinstance(info, dict) else None
        if not cost:
            continue
        detail = f" ({cost['detail']})" if cost.get("detail") else ""
        if cost.get("verdict") == "costly":
            instead = f"; instead: {cost['alternative']}" if cost.get("alternative") else ""
            lines.append(f"skipped: {param}: costly: {cost.get('detail', '')}{instead}")
        else:
            lines.append(f"cost: {param}: {cost.get('verdict', 'unknown')}{detail}")
    return lines


# --- markdown --------------------------------------------------------------------------------------

# Backslash-escaped: characters that start emphasis, links, code, strikethrough or a table cell. An
# underscore between two letters or digits never starts emphasis (GFM), so identifiers stay readable.
# What to do instead of a demotion held back for its price (costly or unknown): keep the variants, compile
# them before serving. `fix` and the pytest failure say it beside each demotion they do not apply.
WARMUP_INSTEAD = ("keep the specialization and compile its variants before serving "
                  "(`jitguard warmup-plan REPORT`, then `jitguard.warmup(plan)` at start-up)")

_MD_PUNCTUATION = re.compile(r"([\\`*\[\]|~]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9]))")


def _one_line(text: Any) -> str:
    return re.sub(r"\r\n|[\r\n]", " ", "" if text is None else str(text))


def md_text(text: Any) -> str:
    """`text` as inert markdown text: no markup, no HTML, no line break, safe in a table cell."""
    escaped = _MD_PUNCTUATION.sub(r"\\\1", _one_line(text))
    return escaped.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def md_code(text: Any, in_table: bool = False) -> str:
    """`text` as one code span: the fence is longer than any run of backticks inside it."""
    body = _one_line(text)
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * (longest + 1)
    # A space on each side keeps a leading or trailing backtick out of the fence (CommonMark strips one).
    pad = " " if body[:1] in ("`", " ") or body[-1:] in ("`", " ") else ""
    span = f"{fence}{pad}{body}{pad}{fence}"
    # In a GFM table a pipe ends the cell even inside a code span; `\|` shows as `|` there.
    return span.replace("|", "\\|") if in_table else span


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A GFM table; cells must already be markdown (md_text / md_code)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return lines


# --- compiles and fixes -----------------------------------------------------------------------------

def kernel_label(entry: Mapping[str, Any]) -> str:
    """A report or plan kernel entry as the tables name it (`events.bound_label`)."""
    return bound_label(str(entry.get("name") or "?"), entry.get("binding"))


def distinct_kernel_names(places: Sequence[tuple[str, str, int]]) -> list[str]:
    """For each (label, file, line), the name a table gives that kernel: its label, with its
    definition's place when another kernel in `places` has the same label (two attention files'
    `_fwd_kernel`), so no row adds up two kernels."""
    seen: dict[str, set[tuple[str, int]]] = {}
    for label, file, line in places:
        seen.setdefault(label, set()).add((file, line))
    return [label if len(seen[label]) == 1 else f"{label} ({kernel_where(file, line)})" for label, file, line in places]


def event_kernel_names(events: Sequence[CompileEvent]) -> list[str]:
    """Each event's kernel as a table names it (`distinct_kernel_names` over the events' kernels)."""
    return distinct_kernel_names([(event.label, event.file, event.line) for event in events])


def kernel_where(file: str, line: int) -> str:
    """A kernel's definition as the reports show it: relative to the working directory when under
    it, else its last two path components ('kernels/moe.py:12')."""
    return f"{short_path(file, keep=2, elided='')}:{line}"


def decorator_fix(causes: Iterable[Cause]) -> str:
    """The fix as code: '@triton.jit(do_not_specialize=["n"]); annotate n: tl.int64'; '' if none."""
    parts = fix_parts(causes)
    steps = parts.other_steps()
    if parts.options:
        steps.insert(0, f"@triton.jit({', '.join(parts.arguments())})")
    return "; ".join(steps)


def price_lines(prices: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One line per advised demotion with its price, e.g. `  price: n: costly: 2 of 2 128-bit loads
    become 32-bit; instead: ...`, `  price: n: free (...)`, `  price unknown: n: <why>`."""
    lines = []
    for param, cost in prices.items():
        verdict = cost.get("verdict", "unknown")
        detail = cost.get("detail") or ""
        if verdict == "costly":
            instead = f"; instead: {cost['alternative']}" if cost.get("alternative") else ""
            lines.append(f"  price: {param}: costly: {detail}{instead}")
        elif verdict == "free":
            lines.append(f"  price: {param}: free" + (f" ({detail})" if detail else ""))
        else:
            lines.append(f"  price unknown: {param}: {detail or 'the cost check gave no reason'}")
    return lines


def fix_block(causes: list[Cause], prices: Mapping[str, Mapping[str, Any]] | None = None) -> list[str]:
    """The fix lines under a failure: each advised demotion's price (when known: a costly one is never
    shown as the fix without it), the decorator (or why there is none), then each advice's reason."""
    causes = without_weaker_advice(causes)
    messages: list[str] = []
    for cause in causes:
        if cause.advice and cause.advice != "expected" and cause.message and cause.message not in messages:
            messages.append(cause.message)
    fix = decorator_fix(causes)
    out = price_lines(prices or {})
    if fix:
        out.append(f"  fix: {fix}")
    else:
        expected = sorted({c.param for c in causes if c.advice == "expected"})
        if expected:
            out.append(f"  no decorator fix: {', '.join(expected)} changed in an expected way (dtype, launch options, "
                       "constexpr or autotune config); call these variants during warm-up, or raise warmup")
        else:
            out.append("  fix: call this kernel during warm-up with the arguments it will see later")
    out.extend(f"    {message}" for message in messages)
    return out


ORIGIN_TAGS = {"gluon": "[gluon]", "inductor": "[torch.compile]", "compile": "[triton.compile]"}
"""How a line names a compile that was not a `@triton.jit` launch (`CompileEvent.origin`)."""


def origin_tag(event: CompileEvent) -> str:
    """' [torch.compile]' for an Inductor kernel's compile, ... ; "" for a `@triton.jit` launch."""
    tag = ORIGIN_TAGS.get(getattr(event, "origin", "jit") or "jit")
    return f" {tag}" if tag else ""


# How a loaded kernel arrived, in words (CompileEvent.arrived); "cold" is a compile.
LOADED_FROM = {"disk": "from disk", "bundle": "from a bundle", "remote": "from the remote cache"}


def loads_words(arrivals: Mapping[str, Mapping[str, Any]]) -> str:
    """`7 loaded (5 from a bundle, 2 from disk) in 0.02 s` from {arrival: {"count", "ms"}}; "" when none loaded."""
    loads = [(words, arrivals[name]) for name, words in LOADED_FROM.items() if arrivals.get(name, {}).get("count")]
    if not loads:
        return ""
    count = sum(int(entry["count"]) for _, entry in loads)
    seconds = sum(float(entry["ms"] or 0.0) for _, entry in loads) / 1000
    detail = ", ".join(f"{entry['count']} {words}" for words, entry in loads)
    return f"{count} loaded ({detail}) in {seconds:.2f} s"


def cache_miss_words(miss: Mapping[str, Any]) -> str:
    """CompileEvent.cache_miss in words: `the cache held it under another key (1 entry): knob TRITON_X (...)`."""
    entries = int(miss.get("entries") or 0)
    return (f"the cache held it under another key ({entries} entr{'y' if entries == 1 else 'ies'}): "
            + "; ".join(str(d) for d in miss.get("differs") or []))


def event_arrivals(events: Sequence[CompileEvent]) -> dict[str, dict[str, Any]]:
    """{arrival: {"count", "ms"}} over `events` ("unknown" where a Triton could not tell)."""
    out: dict[str, dict[str, Any]] = {}
    for event in events:
        entry = out.setdefault(event.arrived or "unknown", {"count": 0, "ms": 0.0})
        entry["count"] += 1
        entry["ms"] += event.compile_ms or 0.0
    return out


def format_event_line(event: CompileEvent) -> str:
    """The grep-able log line for one compile: `[jitguard] recompile kernel#3 (file:line) 412 ms, ...`."""
    if not event.is_recompile:
        what = "compile"
    elif event.causes and all(c.advice == "expected" for c in event.causes):
        what = "new variant (expected)"  # a tile config, dtype or option switch: nothing to fix
    else:
        what = "recompile"
    where = f"{short_path(event.file, keep=3)}:{event.line}" if event.file else "?"
    ms = f"{event.compile_ms:.0f} ms" if event.compile_ms is not None else "? ms"
    if event.arrived in ("bundle", "remote"):
        ms += f" (loaded {LOADED_FROM[event.arrived]})"
    elif event.arrived == "worker":
        ms += " (handed over by a compile worker)"
    elif event.disk_cache_hit:
        ms += " (disk cache hit)"
    if event.cache_miss:
        ms += f" (compiled cold: {cache_miss_words(event.cache_miss)})"
    head = f"[jitguard] {what} {event.label}#{event.variant} ({where}) {ms}"
    if event.call_site:
        head += f", called from {short_path(event.call_site, keep=3)}"
    head += origin_tag(event)
    if event.phase == "serving":
        head += " [serving]"
    if event.autotuning:
        head += " [autotune]"
    if event.is_manual_warmup:
        head += " [warmup()]"
    if not event.causes:
        return escape_controls(head)
    line = f"{head}: " + "; ".join(cause_line(c) for c in event.causes)
    hint = fix_hint(event.causes)
    if hint:
        line += f"; fix: {hint}"
    return escape_controls(line)


def format_summary(events: list[CompileEvent]) -> list[str]:
    """The end-of-process table: per kernel its variants, total compile ms, top causes and the fix.

    (Same output as `monitor.format_summary`, which can call this.)
    """
    if not events:
        return []
    # One row per kernel: kernels that share a name in different files (`_fwd_kernel`) are rows of
    # their own, named with their file, so no row adds up the variants of two kernels.
    by_kernel: dict[tuple[str, str, int], list[CompileEvent]] = {}
    for event in events:
        by_kernel.setdefault((event.label, event.file, event.line), []).append(event)
    names = dict(zip(by_kernel, distinct_kernel_names(list(by_kernel))))
    rows = []
    for place, kernel_events in sorted(by_kernel.items(), key=lambda kv: -len(kv[1])):
        kernel = names[place]
        total_ms = sum(e.compile_ms or 0.0 for e in kernel_events)
        counts: dict[str, int] = {}
        for event in kernel_events:
            for cause in event.causes:
                counts[cause.param] = counts.get(cause.param, 0) + 1
        all_causes = [c for e in kernel_events for c in e.causes]
        rows.append([kernel, str(len(kernel_events)), f"{total_ms:.0f}", tally(counts, top=3) or "-",
                     fix_hint(all_causes) or "-"])
    return ["[jitguard] compile summary (this process)",
            *table(["kernel", "variants", "compile ms", "causes", "fix"], rows)]


def format_tuning_summary(tunings: Sequence[Any]) -> list[str]:
    """The exit lines about autotune: each autotuned kernel's tunings, configs timed, the varying key
    parameters, and the remedy; [] when nothing was tuned. `tunings`: `TuningRecord`s."""
    if not tunings:
        return []
    by_label: dict[str, list[Any]] = {}
    for record in tunings:
        by_label.setdefault(record.label, []).append(record)
    summary = {label: summarize_tunings(group)[group[0].kernel] for label, group in by_label.items()}
    rows = []
    remedies = []
    for kernel, entry in sorted(summary.items(), key=lambda kv: -kv[1]["tunings"]):
        rows.append([kernel, str(entry["tunings"]), str(entry["tunings_during_serving"]), str(entry["configs_timed"]),
                     f"{entry['tuning_s']:.2f}", ", ".join(entry["key_params_varying"]) or "-"])
        remedies.extend(remedy_lines(kernel, entry))
    lines = ["[jitguard] autotune summary (this process)",
             *table(["kernel", "tunings", "in serving", "configs timed", "tuning s", "key varying"], rows)]
    lines.extend(f"  remedy: {line}" for line in remedies)
    return lines


# --- the no_recompiles failure ----------------------------------------------------------------------

class ScopedCompileLike(Protocol):
    """What the failure text needs of one compile seen inside a `no_recompiles` block."""

    @property
    def kernel(self) -> Any: ...  # hashable, with .label (the name messages use) and .where()

    @property
    def event(self) -> CompileEvent: ...

    @property
    def call_number(self) -> int: ...

    @property
    def after_warmup(self) -> bool: ...

    @property
    def block_line(self) -> str: ...


def warmup_words(warmup: int, subject: str) -> str:
    """'the first 2 calls of each kernel', 'no warm-up calls'."""
    if warmup == 0:
        return "no warm-up calls"
    calls = "the first call" if warmup == 1 else f"the first {warmup} calls"
    return f"{calls} of {subject}"


def autotune_block(tunings: Sequence[Any]) -> list[str]:
    """The lines about one kernel's tunings in a failure: each tuning after warm-up (key values, call,
    call site), which key parameter varies, and the remedy (bucket it, or tune it during warm-up).

    `tunings`: objects with `.record` (a `TuningRecord`), `.call_number` and `.after_warmup`.
    """
    late = [t for t in tunings if t.after_warmup]
    if not late:
        return []
    lines = []
    for item in late:
        record = item.record
        values = ", ".join(f"{k}={v}" for k, v in record.key.items()) or "its key"
        site = f", called from {short_path(record.call_site)}" if record.call_site else ""
        lines.append(f"  autotune tuning at call {item.call_number}{site}: {values} "
                     f"({plural(record.configs_timed, 'config')} timed, {record.tuning_s:.3f} s)")
    name = late[0].record.kernel
    entry = summarize_tunings([t.record for t in tunings])[name]
    varying = entry["key_params_varying"] or list(late[0].record.key)
    bucketed = entry.get("bucket") or {}
    for param in varying:
        seen = [k.get(param) for k in entry["keys_tuned"]]
        unit = f"{bucketed[param]} bucket" if param in bucketed else "value"
        lines.append(f"  autotune key {param} took {plural(len(seen), unit)} ({', '.join(map(str, seen))}): each new "
                     f"{unit.split()[-1]} benchmarks every config again")
    remedies = remedy_lines(name, entry)
    unbucketed = [p for p in varying if p not in bucketed]
    if remedies:
        lines.extend(f"  remedy: {line.split('; ', 1)[-1]}" for line in remedies)
    elif unbucketed:  # too few values here to show the saving: name the remedy all the same
        bucket = ", ".join(f'"{p}": "pow2"' for p in unbucketed)
        lines.append(f"  remedy: bucket it: jitguard.autotune(..., bucket={{{bucket}}}) tunes once per bucket, or "
                     "tune these values during warm-up (a warm-up plan from `jitguard warmup-plan` pre-tunes them)")
    else:
        lines.append("  remedy: tune these buckets during warm-up (a warm-up plan from `jitguard warmup-plan` "
                     "pre-tunes them), or raise warmup")
    return lines


def format_new_variants(compiles: Sequence[ScopedCompileLike], warmup: int, subject: str = "each kernel",
                        tunings: Sequence[Any] = (), prices: Mapping[Any, Mapping[str, Any]] | None = None) -> str:
    """The failure text: a headline in the style 'Expected ... but N were compiled', then per kernel
    each new variant with its call, call site and causes by argument name, its autotune tunings after
    warm-up with the varying key and the remedy, each advised demotion's price, then the fix.

    `tunings`: see `autotune_block`; `prices`: {kernel: {param: {"verdict", "detail"[, "alternative"]}}}.
    """
    new = [c for c in compiles if c.after_warmup]
    new_tunings = [t for t in tunings if t.after_warmup]
    happened = [f"{len(new)} {'was' if len(new) == 1 else 'were'} compiled"] if new or not new_tunings else []
    # Loads from a bundle or the remote cache apart from compiles (a load is fast, but still a new variant);
    # a local disk hit is not named here: it depends on what this machine compiled before, not on the code.
    shipped = {a: v for a, v in event_arrivals([c.event for c in new]).items() if a in ("bundle", "remote")}
    loaded = loads_words(shipped)
    if happened and loaded:
        cold = len(new) - sum(int(v["count"]) for v in shipped.values())
        happened[0] += f" ({cold} compiled here, {loaded})"
    if new_tunings:
        happened.append(f"{plural(len(new_tunings), 'autotune tuning')} ran")
    lines = [f"Expected no new Triton variants after warm-up ({warmup_words(warmup, subject)}), "
             f"but {' and '.join(happened)}:"]
    by_kernel: dict[Any, list[ScopedCompileLike]] = {}
    for item in compiles:
        by_kernel.setdefault(item.kernel, []).append(item)
    tunings_by_kernel: dict[Any, list[Any]] = {}
    for tuning in tunings:
        tunings_by_kernel.setdefault(tuning.kernel, []).append(tuning)
    for kernel in [*by_kernel, *(k for k in tunings_by_kernel if k not in by_kernel)]:
        items = by_kernel.get(kernel, [])
        late = [c for c in items if c.after_warmup]
        tuning_lines = autotune_block(tunings_by_kernel.get(kernel, []))
        if not late and not tuning_lines:
            continue
        early = len(items) - len(late)
        lines.append("")
        retuned = sum(1 for t in tunings_by_kernel.get(kernel, []) if t.after_warmup)
        tuned_after = f", {plural(retuned, 'autotune tuning')} after it" if retuned else ""
        lines.append(f"{kernel.label} ({short_path(kernel.where())}): {plural(early, 'variant')} in warm-up, "
                     f"{len(late)} new after it{tuned_after}")
        for item in late:
            event = item.event
            tags = origin_tag(event) + (" [autotune config]" if event.autotuning else "")
            tags += f" (loaded {LOADED_FROM[event.arrived]})" if event.arrived in ("bundle", "remote") else ""
            site = f", called from {short_path(event.call_site)}" if event.call_site else ""
            if item.block_line and item.block_line != event.call_site:
                site += f", reached from {short_path(item.block_line)}"
            lines.append(f"  variant #{event.variant} at call {item.call_number}{tags}{site}")
            for cause in event.causes:
                lines.append(f"    {cause_line(cause)}")
            if not event.causes:
                lines.append("    (first variant of this kernel in the block: it was not called during warm-up)")
        lines.extend(tuning_lines)
        if late:
            lines.extend(fix_block([c for item in late for c in item.event.causes], (prices or {}).get(kernel)))
    if warmup == 0 and any(c.call_number == 1 for c in new):
        lines.append("")
        lines.append("note: with warmup=0 an isolated block compiles on each kernel's first call; use warmup=1, "
                     "call kernel.warmup(...) inside the block, or isolate=False to rely on warm-up done before it")
    return "\n".join(lines)
