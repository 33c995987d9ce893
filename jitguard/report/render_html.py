"""`jitguard report DIR --html FILE`: one self-contained HTML page (no network, no script).

A timeline of compiles per process (time on x, one row per process, mark area = compile ms,
colour = phase; hover a mark for kernel, variant and causes), then the process and kernel tables
of the text report. Everything is inline: the page opens from a mail attachment or a CI artifact.
"""

from __future__ import annotations

import html
import math
import time
from collections.abc import Collection
from typing import Any

from jitguard.render_text import cost_lines, kernel_label, kernel_where
from jitguard.report.render_tables import loaded_count, summary_line

PHASE_COLOURS = {"warmup": "#2563eb", "serving": "#dc2626"}
OTHER_COLOUR = "#6b7280"

_CSS = """
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px; color: #111827; }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 16px; margin: 28px 0 8px; }
h3 { font-size: 14px; margin: 20px 0 6px; font-family: ui-monospace, monospace; }
.summary { color: #374151; margin-bottom: 12px; } .warning { color: #b45309; }
table { border-collapse: collapse; margin: 6px 0 12px; }
th, td { border: 1px solid #e5e7eb; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f3f4f6; font-weight: 600; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
code, td.code { font-family: ui-monospace, monospace; font-size: 12px; }
.fix { background: #ecfdf5; border: 1px solid #a7f3d0; padding: 4px 8px; display: inline-block; }
.cost { color: #444; margin: 2px 0; }
svg text { font: 11px ui-monospace, monospace; fill: #374151; }
.legend span { display: inline-block; margin-right: 16px; }
.dot { display: inline-block; width: 10px; height: 10px; border-radius: 50%; margin-right: 4px;
       vertical-align: middle; }
"""


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _process_label(process: dict[str, Any]) -> str:
    label = f"pid {process['pid']}"
    if process.get("role"):
        label += f" {process['role']}"
    if process.get("rank") is not None:
        label += f" r{process['rank']}"
    return label


def _nice_step(span: float, ticks: int = 8) -> float:
    raw = span / max(ticks, 1)
    if raw <= 0:
        return 1.0
    magnitude = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10):
        if raw <= factor * magnitude:
            return factor * magnitude
    return 10 * magnitude


def render_timeline(report: dict[str, Any], width: int = 1100) -> str:
    """The SVG timeline: one row per process, one circle per compile (area proportional to ms)."""
    processes = report["processes"]
    points = [p for p in report.get("timeline", []) if p.get("time") and math.isfinite(p["time"])]
    if not points:
        return "<p>No compiles were recorded.</p>"
    label_width, right_pad, row_height, top, bottom = 230, 24, 34, 16, 36
    plot_width = width - label_width - right_pad
    height = top + row_height * len(processes) + bottom
    max_radius = min(row_height / 2 - 2, 15.0)
    # The axis spans the marks themselves (each at the end of its compile). Starting it at the first
    # compile's start instead put one long first compile's duration before every mark: a one-process
    # run showed all its marks in the last few percent of the width.
    start = min(p["time"] for p in points)
    end = max(p["time"] for p in points)
    span = end - start
    max_ms = max((p.get("compile_ms") or 0.0) for p in points) or 1.0
    inner_left, inner_width = label_width + max_radius, plot_width - 2 * max_radius

    def x_of(t: float) -> float:
        if span <= 0:
            return inner_left + inner_width / 2
        return inner_left + (t - start) / span * inner_width

    parts = [f'<svg width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="compile timeline">']
    for row, process in enumerate(processes):
        y = top + row * row_height + row_height / 2
        fill = "#f9fafb" if row % 2 == 0 else "#ffffff"
        parts.append(f'<rect x="{label_width}" y="{y - row_height / 2:.1f}" width="{plot_width}" '
                     f'height="{row_height}" fill="{fill}"/>')
        parts.append(f'<text x="{label_width - 8}" y="{y + 4:.1f}" text-anchor="end">'
                     f'{_e(_process_label(process))}</text>')
    axis_y = top + row_height * len(processes)
    parts.append(f'<line x1="{label_width}" y1="{axis_y}" x2="{label_width + plot_width}" y2="{axis_y}" '
                 f'stroke="#9ca3af"/>')
    step = _nice_step(span) if span > 0 else 1.0
    tick = 0.0
    while tick <= span + 1e-9:
        x = x_of(start + tick)
        parts.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{axis_y + 4}" stroke="#e5e7eb"/>')
        parts.append(f'<text x="{x:.1f}" y="{axis_y + 16}" text-anchor="middle">{tick:g} s</text>')
        tick += step
    # Big marks first, so a small one drawn at the same place stays visible on top.
    for point in sorted(points, key=lambda p: -(p.get("compile_ms") or 0.0)):
        ms = point.get("compile_ms") or 0.0
        radius = max(2.5, max_radius * math.sqrt(ms / max_ms))
        x = x_of(point["time"])
        y = top + point["process"] * row_height + row_height / 2
        colour = PHASE_COLOURS.get(point.get("phase"), OTHER_COLOUR)
        tooltip = f"{point['kernel']} variant {point['variant']}, {ms:.0f} ms, {point.get('phase')}"
        for cause in point.get("causes") or []:
            tooltip += f"\n{cause}"
        parts.append(f'<circle class="compile {_e(point.get("phase"))}" cx="{x:.1f}" cy="{y:.1f}" r="{radius:.1f}" '
                     f'fill="{colour}" fill-opacity="0.75" stroke="{colour}"><title>{_e(tooltip)}</title></circle>')
    parts.append(f'<text x="{label_width}" y="{height - 4}">seconds since the first compile finished</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def _table(header: list[str], rows: list[list[Any]],
           numeric: Collection[int] = frozenset(), code: Collection[int] = frozenset()) -> str:
    out = ["<table><thead><tr>" + "".join(f"<th>{_e(h)}</th>" for h in header) + "</tr></thead><tbody>"]
    for row in rows:
        cells = []
        for index, value in enumerate(row):
            cls = ' class="num"' if index in numeric else ' class="code"' if index in code else ""
            cells.append(f"<td{cls}>{_e(value)}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def _process_table(processes: list[dict[str, Any]]) -> str:
    return _table(["pid", "ppid", "role", "rank", "compiles", "recompiles", "compile ms", "not written", "argv"],
                  [[p["pid"], "?" if p["ppid"] is None else p["ppid"], p["role"] or "-",
                    "-" if p["rank"] is None else p["rank"], p["compiles"], p["recompiles"],
                    f"{p['compile_ms']:.0f}", p.get("events_not_written") or 0, " ".join(p["argv"])]
                   for p in processes],
                  numeric={0, 1, 4, 5, 6, 7}, code={8})


def render_html(report: dict[str, Any]) -> str:
    """The whole page for a report from `jitguard.report.build.build_report`."""
    summary = summary_line(report)
    body = [f"<h1>jitguard report</h1><div class=\"summary\">{_e(report['directory'])}<br>{_e(summary)}</div>"]
    for entry in report.get("unreadable_files") or []:
        body.append(f'<p class="warning">Could not read {_e(entry["file"])} ({_e(entry["error"])}); '
                    "the report covers the other logs.</p>")
    if report.get("skipped_lines"):
        details = "".join(f"<li><code>{_e(d['file'])}:{_e(d['line'])}</code>: {_e(d['reason'])}</li>"
                          for d in (report.get("skipped") or [])[:10])
        body.append(f'<p class="warning">Skipped {report["skipped_lines"]} unreadable line(s):</p><ul>{details}</ul>')
    body.append("<h2>Compiles over time</h2>")
    body.append('<div class="legend">' + "".join(
        f'<span><span class="dot" style="background:{colour}"></span>{phase}</span>'
        for phase, colour in PHASE_COLOURS.items()) + "<span>mark area = compile time</span></div>")
    body.append(render_timeline(report))

    body.append("<h2>Kernels</h2>")
    body.append(_table(["kernel", "where", "variants", "compiles", "loaded", "processes", "warmup ms", "serving ms",
                        "fix"],
                       [[kernel_label(k), kernel_where(k["file"], k["line"]), k["variants"], k["compiles"],
                         loaded_count(k), len(k["by_process"]), f"{k['by_phase']['warmup']['compile_ms']:.0f}",
                         f"{k['by_phase']['serving']['compile_ms']:.0f}", k["fix"] or "-"]
                        for k in report["kernels"]], numeric={2, 3, 4, 5, 6, 7}, code={0, 8}))
    for k in report["kernels"]:
        body.append(f"<h3>{_e(kernel_label(k))}</h3>")
        body.append(_table(["pid", "role", "rank", "variants", "compiles", "compile ms"],
                           [[p["pid"], p["role"] or "-", "-" if p["rank"] is None else p["rank"], p["variants"],
                             p["compiles"], f"{p['compile_ms']:.0f}"] for p in k["by_process"]], numeric={0, 3, 4, 5}))
        if k["causes"]:
            body.append(_table(["param", "before", "after", "count", "advice"],
                               [[c["param"], c["before"], c["after"], c["count"], c["advice"] or "-"]
                                for c in k["causes"]], numeric={3}, code={0}))
        if k["fix"]:
            body.append(f'<div class="fix">fix: <code>{_e(k["fix"])}</code></div>')
        for line in cost_lines(k):
            body.append(f'<div class="cost">{_e(line)}</div>')

    body.append("<h2>Processes</h2>")
    groups = {g["name"]: g for g in report.get("process_groups") or [] if g["processes"] > 1}
    body.append(_process_table([p for p in report["processes"] if p.get("group") not in groups]))
    for name, group in groups.items():  # a pool of workers: one line of totals, its members on a click
        body.append(f"<details><summary>{_e(name)} x{group['processes']}: {group['compiles']} compile(s), "
                    f"{group['recompiles']} recompile(s), {group['compile_ms']:.0f} ms</summary>")
        body.append(_process_table([p for p in report["processes"] if p.get("group") == name]))
        body.append("</details>")
    generated = time.strftime("%Y-%m-%d %H:%M:%S")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>jitguard report</title><style>{_CSS}</style></head>\n<body>\n" + "\n".join(body)
            + f"\n<p class=\"summary\">Generated by jitguard on {generated}.</p>\n</body></html>\n")
