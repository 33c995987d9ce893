"""A report (`jitguard.report.build.build_report`) as text for people: plain tables and markdown.

`format_text` is what `jitguard report` and `jitguard run` print; `format_markdown` is for an issue
or a PR comment, every name from the logs escaped. `summary_line` is the one-line total both (and the
HTML page) open with.

This module imports neither Triton nor torch.
"""

from __future__ import annotations

import os
from typing import Any

from jitguard.render_text import (
    LOADED_FROM,
    cost_lines,
    escape_controls,
    kernel_label,
    kernel_where,
    loads_words,
    markdown_table,
    md_code,
    md_text,
    people_view,
    table,
)
from jitguard.tuning.records import format_autotune_summary


def _role_words(entry: dict[str, Any]) -> str:
    role = entry.get("role") or "-"
    if entry.get("rank") is not None:
        role += f" (rank {entry['rank']})"
    return role


def _argv_words(argv: list[str], width: int = 60) -> str:
    # The script's name, not its directory, is what tells processes apart in a narrow column.
    shown = [os.path.basename(argv[0]) or argv[0], *argv[1:]] if argv else []
    text = " ".join(shown) if shown else "?"
    return text if len(text) <= width else text[: width - 3] + "..."


def _ms(value: float) -> str:
    return f"{value:.0f}"


def _several_nodes(report: dict[str, Any]) -> bool:
    # A node column only where the logs come from more than one node (a one-machine report keeps its columns).
    return len({p.get("node") for p in report["processes"]}) > 1


def _shown_processes(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The process table's entries: a pool of two or more look-alike workers (`process_groups`) is one
    entry of totals, named "Inductor compile workers x16", where its first member stood."""
    groups = {g["name"]: g for g in report.get("process_groups") or [] if g["processes"] > 1}
    shown: list[dict[str, Any]] = []
    for process in report["processes"]:
        group = groups.pop(process.get("group") or "", None)
        if group is not None:
            members = [p for p in report["processes"] if p.get("group") == group["name"]]
            shown.append(dict(process, pid="-", ppid="-", role=f"{group['name']} x{group['processes']}", rank=None,
                              compiles=group["compiles"], recompiles=group["recompiles"],
                              compile_ms=group["compile_ms"],
                              events_not_written=sum(p.get("events_not_written") or 0 for p in members)))
        elif not (process.get("group") and any(e.get("group") == process["group"] for e in shown)):
            shown.append(process)
    return shown


def _process_rows(report: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    header = ["pid", "ppid", "role", "compiles", "recompiles", "compile ms", "argv"]
    processes = _shown_processes(report)
    rows = [[str(p["pid"]), str(p["ppid"] if p["ppid"] is not None else "?"), _role_words(p), str(p["compiles"]),
             str(p["recompiles"]), _ms(p["compile_ms"]), _argv_words(p["argv"])] for p in processes]
    if _several_nodes(report):
        header.insert(2, "node")
        for row, process in zip(rows, processes):
            row.insert(2, process["node"])
    if any(p.get("events_not_written") for p in processes):
        # Only when a process lost events, so the usual table keeps its columns.
        header.insert(-1, "not written")
        for row, process in zip(rows, processes):
            row.insert(-1, str(process.get("events_not_written") or 0))
    return header, rows


def _kernel_rows(report: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    header = ["kernel", "where", "variants", "compiles", "processes", "warmup ms", "serving ms", "fix"]
    rows = []
    for k in report["kernels"]:
        rows.append([kernel_label(k), kernel_where(k["file"], k["line"]), str(k["variants"]), str(k["compiles"]),
                     str(len(k["by_process"])), _ms(k["by_phase"]["warmup"]["compile_ms"]),
                     _ms(k["by_phase"]["serving"]["compile_ms"]), k["fix"] or "-"])
    if any(loaded_count(k) for k in report["kernels"]):
        # Only when something was loaded, so the usual table keeps its columns: loads apart from compiles.
        header.insert(4, "loaded")
        for row, k in zip(rows, report["kernels"]):
            row.insert(4, str(loaded_count(k)))
    return header, rows


def loaded_count(kernel: dict[str, Any]) -> int:
    """How many of a kernel's compiles were loads (disk, bundle, remote cache)."""
    return sum(int(v["count"]) for name, v in (kernel.get("arrivals") or {}).items() if name in LOADED_FROM)


def summary_line(report: dict[str, Any]) -> str:
    """'3 process(es), 1 kernel(s), 9 compile(s) (6 recompile(s), 2 during serving), 0.9 s compiling'."""
    t = report["totals"]
    nodes = f" on {t['nodes']} nodes" if t.get("nodes", 1) > 1 else ""
    arrivals = t.get("arrivals") or {}
    loaded = loads_words(arrivals)
    cold_s = sum(v["ms"] for name, v in arrivals.items() if name not in LOADED_FROM) / 1000
    seconds = f"{cold_s:.1f} s compiling, {loaded}" if loaded else f"{t['compile_ms'] / 1000:.1f} s compiling"
    line = (f"{t['processes']} process(es){nodes}, {t['kernels']} kernel(s), {t['compiles']} compile(s) "
            f"({t['recompiles']} recompile(s), {t['serving_compiles']} during serving), {seconds}")
    if t.get("events_not_written"):
        line += f", {t['events_not_written']} event(s) not written to the logs"
    return line + _origin_words(t.get("by_origin") or {})


ORIGIN_WORDS = {"jit": "@triton.jit", "gluon": "@gluon.jit", "inductor": "torch.compile (Inductor)",
                "compile": "triton.compile calls"}


def _origin_words(by_origin: dict[str, dict[str, int]]) -> str:
    """'; by origin: @triton.jit 3, torch.compile (Inductor) 40 + 12 loads'; "" when every compile was a
    @triton.jit launch (the usual report keeps its line)."""
    if not set(by_origin) - {"jit"}:
        return ""
    parts = []
    for origin in (*ORIGIN_WORDS, *sorted(set(by_origin) - set(ORIGIN_WORDS))):
        counts = by_origin.get(origin)
        if counts:
            loads = f" + {counts['loads']} load(s)" if counts.get("loads") else ""
            parts.append(f"{ORIGIN_WORDS.get(origin, origin)} {counts.get('compiles', 0)}{loads}")
    return "; by origin: " + ", ".join(parts)


def _inductor_lines(kernel: dict[str, Any]) -> list[str]:
    """What torch said about an Inductor kernel: the ops it fuses, its graph compiles, why they recompiled."""
    facts = kernel.get("inductor")
    if kernel.get("origin") != "inductor":
        return []
    lines = ["generated by torch.compile: a codemod never edits it; mark the size's dimension dynamic or warm "
             "the size up before serving"]
    if facts and facts.get("ops"):
        lines.append("ops: " + ", ".join(facts["ops"]))
    if facts and facts.get("compile_ids"):
        lines.append("graph compiles: " + ", ".join(facts["compile_ids"]))
    lines.extend(f"recompiled because: {reason}" for reason in (facts or {}).get("recompile_reasons") or [])
    return lines


_SKIPPED_SHOWN = 10


def _problem_lines(report: dict[str, Any]) -> list[str]:
    """What the report could not use: unreadable files, then skipped lines with file:line and reason."""
    lines = []
    for entry in report.get("unreadable_files") or []:
        lines.append(f"could not read {entry['file']} ({entry['error']}); the report covers the other logs")
    if report["skipped_lines"]:
        files = [p["file"] for p in report["processes"] if p["skipped_lines"]]
        lines.append(f"skipped {report['skipped_lines']} unreadable line(s) in " + ", ".join(files))
        details = report.get("skipped") or []
        lines.extend(f"  {d['file']}:{d['line']}: {d['reason']}" for d in details[:_SKIPPED_SHOWN])
        shown = min(len(details), _SKIPPED_SHOWN)
        if report["skipped_lines"] > shown:  # the JSON names the first 1,000; the count is of them all
            lines.append(f"  ... and {report['skipped_lines'] - shown} more")
    return lines


# What text never shows: the per-compile data the JSON and the HTML page carry.
_NOT_SHOWN = ("variant_list", "timeline")


def format_text(report: dict[str, Any]) -> str:
    """The report as plain-text tables: summary, processes, kernels, then each kernel's causes.

    Every name from the logs is printable: control characters escaped, long names shortened
    (`render_text.for_people`); the JSON keeps them as they were.
    """
    report = people_view(report, skip=_NOT_SHOWN)
    lines = [f"[jitguard] report of {report['directory']}: {summary_line(report)}"]
    lines.extend(f"[jitguard] {line}" for line in _problem_lines(report))
    lines.append("")
    lines.append("Processes")
    lines.extend(table(*_process_rows(report)))
    if report["kernels"]:
        lines.append("")
        lines.append("Kernels")
        lines.extend(table(*_kernel_rows(report)))
    for k in report["kernels"]:
        lines.append("")
        loaded = loads_words(k.get("arrivals") or {})
        lines.append(f"{kernel_label(k)} ({kernel_where(k['file'], k['line'])}): {k['variants']} variant(s), "
                     f"{k['compiles']} compile(s), {_ms(k['compile_ms'])} ms" + (f" ({loaded})" if loaded else ""))
        on_node = _several_nodes(report)
        lines.append(f"  variants per process: {_per_process_words(report, k, on_node)}")
        lines.extend(f"  compiled cold {m['count']} time(s) although the cache held the variant under another key: "
                     + "; ".join(m["differs"]) for m in k.get("cache_misses") or [])
        if k["causes"]:
            # Tile-config and launch-option switches (autotune trying its configs) are expected: one
            # row says how many and which, the table keeps the causes that need a decision.
            expected = [c for c in k["causes"] if c["advice"] == "expected"]
            rows = [[c["param"], f"{c['before']} -> {c['after']}", str(c["count"]), c["advice"] or "-"]
                    for c in k["causes"] if c["advice"] != "expected" or len(expected) <= 3]
            if len(expected) > 3:
                names = ", ".join(dict.fromkeys(c["param"] for c in expected))
                rows.append([names, f"{len(expected)} config/option switches", str(sum(c["count"] for c in expected)),
                             "expected"])
            lines.extend(table(["param", "change", "count", "advice"], rows))
        if k["fix"]:
            lines.append(f"  fix: {k['fix']}")
        lines.extend(f"  {line}" for line in _inductor_lines(k))
        lines.extend(f"  {line}" for line in cost_lines(k))
        if k.get("autotune"):
            lines.append(f"  {format_autotune_summary(k['name'], k['autotune'])}")
            lines.extend(f"  remedy: {line}" for line in k["autotune"]["remedy"])
    lines.extend(_graph_compile_lines(report))
    return escape_controls("\n".join(lines), keep_newlines=True) + "\n"


def _per_process_words(report: dict[str, Any], kernel: dict[str, Any], on_node: bool) -> str:
    """'pid 10: 3, Inductor compile workers (16 processes): 32': a pool's members summed, as its table row."""
    pools = {g["name"] for g in report.get("process_groups") or [] if g["processes"] > 1}
    pool_of = {(p.get("node"), p["pid"]): p.get("group") for p in report["processes"] if p.get("group") in pools}
    words: list[str] = []
    pooled: dict[str, list[int]] = {}  # pool -> [processes, variants]
    for p in kernel["by_process"]:
        pool = pool_of.get((p.get("node"), p["pid"]))
        if pool is not None:
            if pool not in pooled:
                pooled[pool] = [0, 0]
                words.append(pool)  # its place: where its first member stood
            pooled[pool][0] += 1
            pooled[pool][1] += p["variants"]
            continue
        words.append(f"pid {p['pid']}" + (f" rank {p['rank']}" if p["rank"] is not None else "")
                     + (f" {p['role']}" if p["role"] else "") + (f" on {p['node']}" if on_node else "")
                     + f": {p['variants']}")
    return ", ".join(f"{w} ({pooled[w][0]} processes): {pooled[w][1]}" if w in pooled else w for w in words)


def _graph_compile_lines(report: dict[str, Any]) -> list[str]:
    """torch.compile's graph compiles and each recompile with the guard that failed, in torch's words."""
    graphs = report.get("torch_compile") or {}
    if not graphs.get("graphs"):
        return []
    recompiles = graphs.get("recompiles") or []
    lines = ["", f"torch.compile: {graphs['graphs']} graph compile(s), {len(recompiles)} recompile(s) "
                 "(each compiles new Inductor kernels)"]
    unseen = graphs.get("handovers_unseen") or []
    if unseen:
        lines.append("  not seen in pid " + ", ".join(str(pid) for pid in unseen) + ": Inductor kernels torch loads "
                     "from its own caches or gets from its compile workers (this torch has no hook point for them): "
                     "a gap in the counts, not zero")
    for entry in recompiles:
        where = kernel_where(entry["file"], entry["line"]) if entry.get("file") else "?"
        serving = " [serving]" if entry.get("phase") == "serving" else ""
        lines.append(f"  {entry['compile_id']} {entry['function']} ({where}), pid {entry['pid']}{serving}: "
                     f"{entry['recompile_reason']}")
    return lines


def format_markdown(report: dict[str, Any]) -> str:
    """The report as GitHub-flavoured markdown (for an issue or a PR comment).

    Every name from the logs is escaped (md_text) or a code span (md_code): a backtick in argv or a
    `<script>` in a role stays text; control characters are shown escaped and long names shortened.
    """
    report = people_view(report, skip=_NOT_SHOWN)
    lines = ["# jitguard report", "", summary_line(report) + "."]
    problems = _problem_lines(report)
    if problems:
        lines += [""] + [f"> {md_text(line.strip())}  " for line in problems]
    lines += ["", "## Processes", ""]
    header, rows = _process_rows(report)
    lines += markdown_table(header, [[md_text(c) for c in row[:-1]] + [md_code(row[-1], in_table=True)]
                                     for row in rows])
    if report["kernels"]:
        lines += ["", "## Kernels", ""]
        header, rows = _kernel_rows(report)
        lines += markdown_table(header, [[md_text(c) for c in row[:-1]]
                                         + [md_code(row[-1], in_table=True) if row[-1] != "-" else "-"]
                                         for row in rows])
    for k in report["kernels"]:
        lines += ["", f"### {md_code(kernel_label(k))}", "",
                  f"{k['variants']} variant(s), {k['compiles']} compile(s), {_ms(k['compile_ms'])} ms "
                  f"({md_text(kernel_where(k['file'], k['line']))})."]
        lines += ["", *markdown_table(["pid", "role", "variants", "compile ms"],
                                      [[str(p["pid"]), md_text(_role_words(p)), str(p["variants"]),
                                        _ms(p["compile_ms"])] for p in k["by_process"]])]
        if k["causes"]:
            lines += ["", *markdown_table(["param", "before", "after", "count", "advice"],
                                          [[md_text(c["param"]), md_text(c["before"]), md_text(c["after"]),
                                            str(c["count"]), md_text(c["advice"] or "-")] for c in k["causes"]])]
        if k["fix"]:
            lines += ["", f"Fix: {md_code(k['fix'])}"]
        costs = cost_lines(k)
        if costs:
            lines += [""] + [f"- {md_text(line)}" for line in costs]
        if k.get("autotune"):
            lines += ["", md_text(format_autotune_summary(k["name"], k["autotune"])) + "."]
            lines += [f"- remedy: {md_code(line)}" for line in k["autotune"]["remedy"]]
    return escape_controls("\n".join(lines), keep_newlines=True) + "\n"
