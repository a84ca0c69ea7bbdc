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


# GitHub shows at most this many annotations of each level (error, warning, notice) per step
ANNOTATIONS_PER_STEP = 10


def over_limit(report: Report) -> dict[str, int]:
    """level -> annotations of that level past what GitHub shows of one step."""
    counts: dict[str, int] = {}
    for f in report.findings:
        level = LEVEL.get(f.severity, "warning")
        counts[level] = counts.get(level, 0) + 1
    for d in report.diagnostics:
        level = LEVEL[diagnostic_severity(d.code)]
        counts[level] = counts.get(level, 0) + 1
    return {level: n for level, n in counts.items() if n > ANNOTATIONS_PER_STEP}


def limit_text(report: Report) -> str:
    """What GitHub will not show, in a sentence ("" when it shows every annotation)."""
    over = over_limit(report)
    if not over:
        return ""
    counts = ", ".join(f"{n} {level}s" for level, n in sorted(over.items()))
    return (
        f"{counts}: GitHub shows {ANNOTATIONS_PER_STEP} annotations of each level per step; "
        f"every finding is in the step's log, and in --format sarif for code scanning"
    )


def render(report: Report, ctx: RenderContext) -> str:
    lines = []
    summary = limit_text(report)
    if summary:  # first, so it is one of those shown
        n = len(report.findings)
        text = f"{n} finding{'s' if n != 1 else ''}; {summary}"
        lines.append(f"::notice title=irlint::{escape_data(text)}")
    for f in report.findings:
        message = short_text(f)
        lines.append(command(LEVEL.get(f.severity, "warning"), f.file, f.line, f.column, f"{f.code} {f.rule}", message))
    for d in report.diagnostics:
        lines.append(command(LEVEL[diagnostic_severity(d.code)], d.file, d.line, 1, f"{d.code} {d.kind}", d.message))
    if report.suppressed:
        n = len(report.suppressed)
        lines.append(f"::notice title=irlint::{escape_data(suppressed_text(n))}")
    return "".join(line + "\n" for line in lines)
