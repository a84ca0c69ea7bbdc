"""GitHub Actions workflow commands: one annotation per finding on the dump line."""

from __future__ import annotations

from ..findings import Report
from . import RenderContext
from .concise import diagnostic_severity, short_text, suppressed_text

LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(level: str, file: str, line: int, col: int, title: str, message: str) -> str:
    props = [f"file={escape_property(file)}"]
    if line > 0:
        props.append(f"line={line}")
        if col > 0:
            props.append(f"col={col}")
    props.append(f"title={escape_property(title)}")
    return f"::{level} {','.join(props)}::{escape_data(message)}"


def render(report: Report, ctx: RenderContext) -> str:
    lines = []
    for f in report.findings:
        message = short_text(f)
        lines.append(command(LEVEL.get(f.severity, "warning"), f.file, f.line, f.column, f"{f.code} {f.rule}", message))
    for d in report.diagnostics:
        lines.append(command(LEVEL[diagnostic_severity(d.code)], d.file, d.line, 1, f"{d.code} {d.kind}", d.message))
    if report.suppressed:
        n = len(report.suppressed)
        lines.append(f"::notice title=irlint::{escape_data(suppressed_text(n))}")
    return "".join(line + "\n" for line in lines)
