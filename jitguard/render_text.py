"""Words and tables for people: every text jitguard prints about compiles is spelled here.

Tables (plain and markdown), tallies, plurals, one cause as `param: before -> after`, the fix (one
spelling, from `explain`'s advice), the per-compile log line, the end-of-process summary and the
`no_recompiles` failure text. Markdown escaping is safe: a backtick cannot end a code span and
`<script>` in a name stays text.

This module imports neither Triton nor torch.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Protocol, Sequence

from jitguard.events import Cause, CompileEvent
from jitguard.explain import fix_hint, short_path, without_weaker_advice


def plural(n: int, word: str) -> str:
    """'1 variant', '3 variants'."""
    return f"{n} {word}" + ("" if n == 1 else "s")


def table(header: Sequence[str], rows: Sequence[Sequence[Any]], indent: str = "  ") -> list[str]:
    """Columns padded to their widest cell, two spaces apart, trailing blanks trimmed."""
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


# --- markdown --------------------------------------------------------------------------------------

# Backslash-escaped: characters that start emphasis, links, code, strikethrough or a table cell.
_MD_PUNCTUATION = re.compile(r"([\\`*_\[\]|~])")


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
