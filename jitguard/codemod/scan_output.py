"""`jitguard scan --output-format`: text, json, github, sarif, junit renderings of one run.

Each function takes the run's findings (and errors) and returns the text to print; none prints.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import click

from jitguard.codemod.scan import RULES, Finding
from jitguard.render_text import escape_controls

OUTPUT_FORMATS = ("text", "json", "github", "sarif", "junit")


@dataclass(frozen=True)
class ScanResult:
    """What one `jitguard scan` run found, for the formatters."""

    findings: Sequence[Finding]
    errors: Sequence[tuple[str, str]]  # (file, message)
    files: int
    kernels: int


def _subject(finding: Finding) -> str:
    kernel = finding.qualname or finding.kernel
    subject = f"{kernel}.{finding.param}" if finding.param else kernel
    return f"{subject} ({finding.binding})" if finding.binding else subject


def text_line(finding: Finding, color: bool = False) -> str:
    """`path:line:col: CODE [name] kernel.param: message`, coloured like ruff when `color`; a control
    character in a file or kernel name is shown escaped (it is text for people, not for the terminal)."""
    file = escape_controls(finding.file)
    where = f"{file}:{finding.line}:{finding.column}:"
    code = finding.rule
    if color:
        where = click.style(file, bold=True) + click.style(f":{finding.line}:{finding.column}:", fg="cyan")
        code = click.style(code, fg="red" if finding.severity == "warning" else "yellow", bold=True)
    return f"{where} {code} [{finding.name}] {escape_controls(f'{_subject(finding)}: {finding.message}')}"


def render_json(result: ScanResult) -> str:
    """{findings: [...], files, kernels, errors: [{file, message}]}."""
    payload = {
        "findings": [finding.to_json() for finding in result.findings],
        "files": result.files,
        "kernels": result.kernels,
        "errors": [{"file": file, "message": message} for file, message in result.errors],
    }
    return json.dumps(payload, indent=2)


def _escape_data(text: str) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return escape_controls(text)  # other control characters: shown escaped in the annotation


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render_github(result: ScanResult) -> str:
    """GitHub Actions workflow commands: one `::warning`/`::notice`/`::error` annotation per line."""
    lines = []
    for finding in result.findings:
        level = "warning" if finding.severity == "warning" else "notice"
        properties = (f"file={_escape_property(finding.file)},line={finding.line},col={finding.column},"
                      f"title={_escape_property(f'{finding.rule} {finding.name}')}")
        lines.append(f"::{level} {properties}::{_escape_data(f'{_subject(finding)}: {finding.message}')}")
    for file, message in result.errors:
        lines.append(f"::error file={_escape_property(file)},title=jitguard::{_escape_data(message)}")
    return "\n".join(lines)


def _uri(file: str) -> str:
    path = Path(file)
    return path.as_posix() if not path.is_absolute() else path.as_uri()


def render_sarif(result: ScanResult, version: str = "0") -> str:
    """SARIF 2.1.0, one run, with every rule described (GitHub code scanning reads this)."""
    rules = [
        {
            "id": rule.id,
            "name": rule.name,
            "shortDescription": {"text": rule.summary or rule.name},
            "defaultConfiguration": {"level": "warning" if rule.severity == "warning" else "note"},
        }
        for rule in RULES.values()
    ]
    index = {rule_id: position for position, rule_id in enumerate(RULES)}
    results = [
        {
            "ruleId": finding.rule,
            "ruleIndex": index[finding.rule],
            "level": "warning" if finding.severity == "warning" else "note",
            "message": {"text": f"{_subject(finding)}: {finding.message}"},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": _uri(finding.file)},
                "region": {"startLine": finding.line, "startColumn": finding.column},
            }}],
        }
        for finding in result.findings
    ]
    notifications = [
        {"level": "error", "message": {"text": message},
         "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(file)}}}]}
        for file, message in result.errors
    ]
    run: dict[str, object] = {
        "tool": {"driver": {"name": "jitguard", "version": version, "rules": rules}},
        "results": results,
    }
    if notifications:
        run["invocations"] = [{"executionSuccessful": False, "toolExecutionNotifications": notifications}]
    return json.dumps({"version": "2.1.0", "$schema": "https://json.schemastore.org/sarif-2.1.0.json", "runs": [run]},
                      indent=2)


def render_junit(result: ScanResult) -> str:
    """JUnit XML: a test suite per file with findings or errors, a failing test case per finding.

    XML 1.0 cannot hold most control characters even escaped: a file or kernel name carrying one is
    written with it shown escaped (`\\x01`), so one odd name cannot make the whole document unreadable.
    """
    root = _junit_tree(result)
    ElementTree.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ElementTree.tostring(root, encoding="unicode")


def _junit_tree(result: ScanResult) -> ElementTree.Element:
    by_file: dict[str, list[Finding]] = {}
    for finding in result.findings:
        by_file.setdefault(finding.file, []).append(finding)
    errors_by_file: dict[str, list[str]] = {}
    for file, message in result.errors:
        errors_by_file.setdefault(file, []).append(message)
    root = ElementTree.Element("testsuites", name="jitguard", tests=str(len(result.findings) or 1),
                               failures=str(len(result.findings)), errors=str(len(result.errors)))
    if not by_file and not errors_by_file:
        suite = ElementTree.SubElement(root, "testsuite", name="jitguard", tests="1", failures="0", errors="0")
        ElementTree.SubElement(suite, "testcase", name="No findings", classname="jitguard")
    for file in sorted(set(by_file) | set(errors_by_file)):
        findings = by_file.get(file, [])
        errors = errors_by_file.get(file, [])
        shown = escape_controls(file)
        suite = ElementTree.SubElement(root, "testsuite", name=shown, tests=str(len(findings) + len(errors)),
                                       failures=str(len(findings)), errors=str(len(errors)))
        for finding in findings:
            subject = escape_controls(_subject(finding))
            case = ElementTree.SubElement(suite, "testcase", name=f"{finding.rule} {subject}",
                                          classname=shown, file=shown, line=str(finding.line))
            failure = ElementTree.SubElement(case, "failure", type=finding.rule,
                                             message=f"{finding.rule} [{finding.name}] {subject}")
            failure.text = f"{shown}:{finding.line}:{finding.column}: {escape_controls(finding.message)}"
        for message in errors:
            case = ElementTree.SubElement(suite, "testcase", name="read and parse", classname=shown, file=shown)
            ElementTree.SubElement(case, "error", message=escape_controls(message))
    return root


def use_color(stream: object, environ: dict[str, str]) -> bool:
    """Colour when `stream` is a terminal, unless NO_COLOR is set; FORCE_COLOR forces it (no-color.org)."""
    if environ.get("NO_COLOR"):
        return False
    if environ.get("FORCE_COLOR"):
        return True
    return bool(getattr(stream, "isatty", lambda: False)())
