"""`jitguard report --markdown`: names and argv from logs cannot break out of text or code spans."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from jitguard.render_text import md_code, md_text
from jitguard.report.build import build_report
from jitguard.report.render_tables import format_markdown
from tests.tool.test_report import compiles_for, write_log

HOSTILE = [
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>",
    "a`b",
    "``double``",
    "`",
    "ends with `",
    "x | y",
    "line\nbreak",
    "crlf\r\nbreak",
    "[click](javascript:alert(1))",
    "**bold** _em_ ~~gone~~",
    "&lt;already escaped&gt;",
    "back\\slash`|",
]


def code_span_content(span: str) -> str:
    """What a CommonMark reader shows for one code span (fence, then one pad space, stripped)."""
    fence = re.match(r"`+", span).group(0)
    assert span.endswith(fence) and not span[len(fence):len(span) - len(fence)].startswith("`")
    inner = span[len(fence):len(span) - len(fence)]
    # No run of exactly the fence's length inside: it would end the span early.
    assert all(len(run) != len(fence) for run in re.findall(r"`+", inner))
    if inner.startswith(" ") and inner.endswith(" ") and inner.strip():
        inner = inner[1:-1]
    return inner


@pytest.mark.parametrize("text", HOSTILE)
def test_code_span_keeps_the_text_exactly_on_one_line(text: str) -> None:
    span = md_code(text)
    assert code_span_content(span) == re.sub(r"\r\n|[\r\n]", " ", text)
    assert "\n" not in span and "\r" not in span


@pytest.mark.parametrize("text", HOSTILE)
def test_text_has_no_live_html_or_markup(text: str) -> None:
    escaped = md_text(text)
    assert "<" not in escaped and ">" not in escaped and "\n" not in escaped and "\r" not in escaped
    # Every markdown punctuation character left is escaped by a backslash (an underscore inside a
    # word cannot start emphasis in GFM, so fused_moe_kernel stays as it is).
    unescaped = re.sub(r"\\.", "", escaped)
    assert not re.search(r"[`*\[\]|~\\]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])", unescaped), escaped


@pytest.mark.parametrize("text, in_table, expected", [
    ("--model m", False, "`--model m`"),
    ("a`b", False, "``a`b``"),
    ("`start", False, "`` `start ``"),
    ("a | b", True, "`a \\| b`"),
    ("a | b", False, "`a | b`"),
])

def test_code_span_forms(text: str, in_table: bool, expected: str) -> None:
    assert md_code(text, in_table=in_table) == expected

@pytest.mark.parametrize("text, expected", [
    ("fused_moe_kernel", "fused_moe_kernel"),
    ("_private", "\\_private"),
    ("<b>", "&lt;b&gt;"),
    ("a*b", "a\\*b"),
])
def test_text_forms(text: str, expected: str) -> None:
    assert md_text(text) == expected


def table_cells(line: str) -> list[str]:
    """A GFM row's cells: split on pipes that are not backslash-escaped."""
    return re.split(r"(?<!\\)\|", line.strip())[1:-1]


def test_a_hostile_report_renders_inert_markdown(tmp_path: Path) -> None:
    kernel = "<script>alert(1)</script>"
    write_log(tmp_path, 40, compiles_for(40, [1, 16], kernel=kernel, role="<img src=x onerror=alert(2)>"),
              role="<img src=x onerror=alert(2)>", argv=["python", "serve.py", "--name", "a`b|c\nd", "``"])
    markdown = format_markdown(build_report(tmp_path))
    outside_code = re.sub(r"(`+).*?\1", "", markdown)
    assert "<script" not in outside_code and "<img" not in outside_code
    for line in markdown.splitlines():
        if line.startswith("|"):
            header_cells = len(table_cells(line))
            assert header_cells in (4, 5, 7, 8), line  # every row keeps its table's column count
    row = next(line for line in markdown.splitlines() if line.startswith("| 40 "))
    argv_cell = table_cells(row)[-1].strip()
    # The newline is shown escaped, as every control character in text for people.
    assert code_span_content(argv_cell.replace("\\|", "|")) == "python serve.py --name a`b|c\\nd ``"
    assert "### `<script>alert(1)</script>`" in markdown
