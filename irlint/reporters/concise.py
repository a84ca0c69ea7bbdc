"""One line per finding, ``path:line:col: CODE [severity] message``, for editors and grep."""

from __future__ import annotations

from ..findings import Report
from ..headline import headline
from . import RenderContext, ranks_text, rule_classes

# Input problems: a file not read at all is an error, a skipped line a warning.
FILE_LEVEL = {"IR001", "IR002", "IR009", "IR015"}


def diagnostic_severity(code: str) -> str:
    return "error" if code in FILE_LEVEL else "warning"


def suppressed_text(n: int) -> str:
    return f"{n} finding{'s' if n != 1 else ''} suppressed by [[suppress]] entries of the configuration"


def ranks_note(f) -> str:
    """' (on ranks 0-1)' for a finding merged across rank folders, as the text format shows it."""
    return f" (on {ranks_text(f.ranks)})" if f.ranks else ""


# a concise line fits an editor's problem list: the headline takes its shorter forms beside a
# long path (irlint.headline), and a one-line message never passes LINE_MAX
LINE_MAX = 200


def short_text(f) -> str:
    """What a one-line format carries of a finding: its headline (which names the fix when the rule
    states one in a few words), else the first line of the hint after it when the two fit in
    LINE_MAX; never the evidence."""
    text = f.headline
    if not f.fix and f.hint:
        hint = " Fix: " + f.hint.split("\n", 1)[0].rstrip(":")
        text += hint if len(text) + len(hint) <= LINE_MAX else ""
    return text


def render(report: Report, ctx: RenderContext) -> str:
    if ctx.statistics:
        names = {c.code: c.name for c in rule_classes(report, ctx)}
        return "".join(f"{count:>5}\t{code}\t{names.get(code, '')}\n" for code, count in report.by_rule().items())
    lines = []
    for f in report.findings:
        prefix = f"{f.file}:{max(f.line, 1)}:{max(f.column, 1)}: {f.code} [{f.severity}] "
        lines.append(prefix + headline(f, LINE_MAX - len(prefix)))
    for d in report.diagnostics:
        lines.append(
            f"{d.file}:{max(d.line, 1)}:1: {d.code} [{diagnostic_severity(d.code)}] {d.message.replace(chr(10), ' ')}"
        )
    if report.suppressed and not ctx.quiet:  # not a finding line: editors' problem matchers skip it
        lines.append(f"# {suppressed_text(len(report.suppressed))}")
    return "".join(line + "\n" for line in lines)
