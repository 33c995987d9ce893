"""`jitguard report --html`: a self-contained page, rendered in a real headless browser."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest
from click.testing import CliRunner

from jitguard.report.build import build_report
from jitguard.report.command import report_command
from jitguard.report.render_html import render_html
from jitguard.report.render_tables import format_text
from tests.tool.test_report import compiles_for, write_log

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def server_logs(directory: Path, serving: bool) -> Path:
    directory.mkdir()
    write_log(directory, 10, [], role="api server")
    phase = (lambda i: "serving" if i >= 2 else "warmup") if serving else (lambda i: "warmup")
    write_log(directory, 20, compiles_for(20, [16, 17, 1, 2**31 + 16], phase_of=phase, role="worker", rank=0),
              role="worker", rank=0)
    write_log(directory, 30, compiles_for(30, [32, 3, 1], phase_of=phase, role="worker", rank=1), role="worker", rank=1)
    return directory


def test_page_is_self_contained_with_one_mark_per_compile(tmp_path: Path) -> None:
    report = build_report(server_logs(tmp_path / "logs", serving=True))
    page = render_html(report)
    for external in ("http://", "https://", "<script", " src=", "@import", "url("):
        assert external not in page
    assert page.count('<circle class="compile ') == report["totals"]["compiles"]
    assert page.count('<circle class="compile serving"') == report["totals"]["serving_compiles"] > 0
    assert "pid 20 worker r0" in page and "do_not_specialize=[&quot;num_tokens&quot;]" in page


def test_names_from_logs_are_escaped(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    write_log(logs, 40, compiles_for(40, [1, 16], kernel="<img src=x onerror=alert(1)>"),
              argv=["python", "<script>alert(2)</script>"])
    page = render_html(build_report(logs))
    assert "<img src=x" not in page and "<script>alert" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page


def test_cli_writes_the_page_and_still_prints_the_report(tmp_path: Path) -> None:
    logs = server_logs(tmp_path / "logs", serving=False)
    result = CliRunner().invoke(report_command, [str(logs), "--html", str(tmp_path / "report.html")])
    assert result.exit_code == 0, result.output
    assert "Kernels" in result.output and "wrote" in result.output
    assert (tmp_path / "report.html").read_text().startswith("<!DOCTYPE html>")


def test_cli_unwritable_html_path_is_an_input_error(tmp_path: Path) -> None:
    logs = server_logs(tmp_path / "logs", serving=False)
    result = CliRunner().invoke(report_command, [str(logs), "--html", str(tmp_path / "no" / "such" / "r.html")])
    assert result.exit_code == 2 and "cannot write" in result.output


def read_png_rgb(path: Path) -> tuple[int, int, list[bytes]]:
    """Rows of RGB(A) pixels of an 8-bit, non-interlaced PNG (what Chromium writes)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    assert header is not None
    width, height, depth, colour_type, _, _, interlace = header
    assert depth == 8 and colour_type in (2, 6) and interlace == 0
    channels = 4 if colour_type == 6 else 3
    raw = zlib.decompress(idat)
    stride = width * channels
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 0xFF
        rows.append(bytes(line))
        previous = line
    return width, channels, rows


def count_pixels(path: Path, colour: str) -> int:
    width, channels, rows = read_png_rgb(path)
    count = 0
    for row in rows:
        for x in range(0, width * channels, channels):
            r, g, b = row[x], row[x + 1], row[x + 2]
            if colour == "red" and r > 180 and g < 120 and b < 120:
                count += 1
            elif colour == "blue" and b > 200 and r < 120 and g < 160:
                count += 1
    return count


def screenshot(page: Path, png: Path) -> None:
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                    "--disable-extensions", "--hide-scrollbars", "--no-first-run", "--window-size=1200,700",
                    f"--screenshot={png}", page.as_uri()], capture_output=True, timeout=120, check=True)
    assert png.exists() and png.stat().st_size > 10_000


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)")
def test_headless_chromium_draws_serving_compiles_in_red(tmp_path: Path) -> None:
    pages = {}
    for serving in (False, True):
        logs = server_logs(tmp_path / f"logs-{serving}", serving=serving)
        page = tmp_path / f"report-{serving}.html"
        page.write_text(render_html(build_report(logs)))
        png = tmp_path / f"report-{serving}.png"
        screenshot(page, png)
        pages[serving] = png
    red_warmup_only, red_serving = count_pixels(pages[False], "red"), count_pixels(pages[True], "red")
    # The legend's red dot is on both pages; serving marks add many red pixels in the timeline.
    assert red_serving > red_warmup_only + 100, (red_warmup_only, red_serving)
    assert count_pixels(pages[False], "blue") > count_pixels(pages[True], "blue")


def mark_xs(page: str) -> list[float]:
    return [float(x) for x in re.findall(r'<circle class="compile [^"]*" cx="([0-9.]+)"', page)]


def test_where_column_is_relative_as_in_the_text_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    logs = server_logs(tmp_path / "logs", serving=False)
    monkeypatch.chdir("/srv/model" if Path("/srv/model").is_dir() else tmp_path)
    report = build_report(logs)
    page = render_html(report)
    assert "<td>kernels/moe.py:12</td>" in page and "/srv/model/kernels/moe.py" not in page
    assert "kernels/moe.py:12" in format_text(report)


def test_one_process_with_a_long_first_compile_spreads_its_marks(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    events = compiles_for(20, [16, 17, 1, 2**31 + 16])
    events[0].compile_ms = 30_000.0  # a cold first compile; the others follow within a few seconds
    write_log(logs, 20, events)
    xs = mark_xs(render_html(build_report(logs)))
    assert len(xs) == len(events)
    plot_left, plot_right = 230, 1100 - 24
    # Spread over most of the plot, not squeezed at its right end.
    assert max(xs) - min(xs) > 0.8 * (plot_right - plot_left), xs
    assert min(xs) < plot_left + 0.1 * (plot_right - plot_left)


def test_a_single_compile_is_drawn_inside_the_plot(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    write_log(logs, 20, compiles_for(20, [16]))
    (x,) = mark_xs(render_html(build_report(logs)))
    assert 230 < x < 1100 - 24


def test_html_without_file_goes_to_output(tmp_path: Path) -> None:
    logs = server_logs(tmp_path / "logs", serving=False)
    out = tmp_path / "page.html"
    result = CliRunner().invoke(report_command, [str(logs), "--html", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text().startswith("<!DOCTYPE html>")
    assert "Kernels" not in result.stdout  # nothing else printed
    result = CliRunner().invoke(report_command, [str(logs), "--html"])
    assert result.exit_code == 0 and result.stdout.startswith("<!DOCTYPE html>")


@pytest.mark.parametrize("flags, starts", [
    ([], "[jitguard] report of "),
    (["--json"], "{"),
    (["--markdown"], "# jitguard report"),
])
def test_output_option_writes_any_format_to_a_file(tmp_path: Path, flags: list[str], starts: str) -> None:
    logs = server_logs(tmp_path / "logs", serving=False)
    out = tmp_path / "report.out"
    result = CliRunner().invoke(report_command, [str(logs), *flags, "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text().startswith(starts)
    assert result.stdout == ""
    printed = CliRunner().invoke(report_command, [str(logs), *flags]).stdout
    assert out.read_text() == printed
    assert list(tmp_path.glob(".report.out.*")) == []  # no temporary file left


def test_html_file_and_output_together(tmp_path: Path) -> None:
    logs = server_logs(tmp_path / "logs", serving=False)
    result = CliRunner().invoke(report_command, [str(logs), "--html", str(tmp_path / "r.html"), "--json",
                                                 "--output", str(tmp_path / "r.json"), "--no-cost"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")
    assert json.loads((tmp_path / "r.json").read_text()) == json.loads(json.dumps(build_report(logs)))


def test_unwritable_output_is_an_input_error(tmp_path: Path) -> None:
    logs = server_logs(tmp_path / "logs", serving=False)
    result = CliRunner().invoke(report_command, [str(logs), "-o", str(tmp_path / "no" / "such" / "r.txt")])
    assert result.exit_code == 2 and "cannot write" in result.output


def test_two_main_formats_are_a_usage_error(tmp_path: Path) -> None:
    logs = server_logs(tmp_path / "logs", serving=False)
    result = CliRunner().invoke(report_command, [str(logs), "--json", "--html"])
    assert result.exit_code == 2 and "choose one of" in result.output
