"""The default format for people: findings grouped by file, each with its dump line, the chain of
related nodes and the fix; then a summary table."""
from __future__ import annotations

import io
from collections import defaultdict
from typing import TYPE_CHECKING

from ..findings import Report
from . import UNLIMITED_WIDTH, RenderContext, ranks_text, rule_classes

if TYPE_CHECKING:   # rich is imported only when there is something to print: 0.02-0.03 s of a start
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def console_for(ctx: RenderContext, buffer: io.StringIO) -> Console:
    from rich.console import Console

    return Console(file=buffer, force_terminal=ctx.color, no_color=not ctx.color, color_system="standard"
                   if ctx.color else None, width=ctx.width or UNLIMITED_WIDTH, highlight=False, emoji=False, soft_wrap=False)


def render(report: Report, ctx: RenderContext) -> str:
    if ctx.quiet and not (report.findings or report.diagnostics or ctx.statistics):
        return ""   # nothing to print
    from rich.text import Text

    buffer = io.StringIO()
    out = console_for(ctx, buffer)
    if ctx.statistics:
        if report.findings:
            out.print(statistics_table(report, ctx))
        else:   # an empty table would not say it
            _summary(out, report, ctx)
        return _trimmed(buffer.getvalue(), ctx)
    ctx.sources.prefetch_findings(report.findings)
    by_file: dict[str, list] = defaultdict(list)
    for f in report.findings:
        by_file[f.file].append(f)
    for path, findings in by_file.items():
        out.print(Text(path, style="bold underline"))
        # costliest first: the activation bytes a finding keeps alive (stable, so line order otherwise)
        for f in sorted(findings, key=lambda f: -(f.bytes_at_stake or 0)):
            _finding(out, f, ctx)
            out.print()
    if report.diagnostics:
        out.print(Text("Input problems (lines skipped or files not read)", style="bold"))
        for d in report.diagnostics:
            line = Text("  ")
            line.append(f"{d.file}:{d.line}", style="bold")
            line.append(f"  {d.code} {d.kind}  ", style="magenta")
            line.append(d.message)
            out.print(line)
        out.print()
    if not ctx.quiet:
        _summary(out, report, ctx)
    return _trimmed(buffer.getvalue(), ctx)


def _trimmed(text: str, ctx: RenderContext) -> str:
    """Without colour, drop the padding rich adds to the ends of table lines."""
    if ctx.color:
        return text
    return "".join(line.rstrip() + "\n" for line in text.splitlines())


def _finding(out: Console, f, ctx: RenderContext) -> None:
    """A grid: labels on the left, text on the right; to a terminal long messages wrap with a hanging
    indent and scope/chain lines are cut with '…', elsewhere every line is printed in full."""
    from rich.table import Table
    from rich.text import Text

    grid = Table.grid(padding=(0, 1))
    grid.add_column(justify="right", no_wrap=True, min_width=9)
    grid.add_column(overflow="fold")
    head = Text()
    head.append(f.code, style="bold " + SEVERITY_STYLE.get(f.severity, ""))
    head.append(f" {f.severity}", style=SEVERITY_STYLE.get(f.severity, ""))
    head.append(f"  {f.message}")
    if f.ranks:
        head.append(f" (on {ranks_text(f.ranks)})", style="dim")
    grid.add_row(Text(f"{f.line}:{f.column}", style="bold"), head)
    source = ctx.sources.line(f.file, f.line)
    if source:
        grid.add_row(Text(f"{f.line} │", style="dim"), _clipped(source))
    if f.scope:
        grid.add_row(Text("scope", style="dim"), _clipped(f.scope, "dim"))
    # node ids restart in every subgraph: name the subgraphs once nodes of several are shown
    several = any(r.graph and r.graph != f.graph for r in f.related)
    if several and f.graph:
        grid.add_row(Text("graph", style="dim"), _clipped(f"{f.node} in {f.graph}", "dim"))
    for i, r in enumerate(f.related):
        row = Text("↳ ")
        where = f"{r.line}" if r.file == f.file else f"{r.file}:{r.line}"
        row.append(f"{where} {r.node} {r.op}", style="bold")
        if r.graph and r.graph != f.graph:
            row.append(f" in {r.graph}")
        if r.note:
            row.append(f"  {r.note}", style="italic")
        row.append(f"  {r.scope}", style="dim")
        row.no_wrap, row.overflow = True, "ellipsis"
        grid.add_row(Text("chain" if i == 0 else "", style="dim"), row)
    if f.hint:
        grid.add_row(Text("fix", style="green"), Text(f.hint))
    out.print(grid)


def _clipped(text: str, style: str = "") -> Text:
    from rich.text import Text

    return Text(text, style=style, no_wrap=True, overflow="ellipsis")


def statistics_table(report: Report, ctx: RenderContext) -> Table:
    from rich.table import Table

    names = {c.code: c.name for c in rule_classes(report, ctx)}
    severities: dict[str, str] = {}
    for f in report.findings:
        severities.setdefault(f.code, f.severity)
    table = Table(title="Findings per rule", title_justify="left")
    table.add_column("count", justify="right")
    table.add_column("code")
    table.add_column("rule")
    table.add_column("severity")
    for code, count in report.by_rule().items():
        table.add_row(str(count), code, names.get(code, ""), severities.get(code, ""))
    return table


def _summary(out: Console, report: Report, ctx: RenderContext) -> None:
    from rich.text import Text

    if report.findings:
        out.print(statistics_table(report, ctx))
    n, files = len(report.findings), len({f.file for f in report.findings})
    if n:
        text = f"Found {n} finding{'s' if n != 1 else ''} in {files} file{'s' if files != 1 else ''}"
    elif report.diagnostics:   # not a clean result: some of the input was not read
        text = "No findings in what could be read"
    else:
        text = "No findings"
    text += f" ({len(report.files)} file{'s' if len(report.files) != 1 else ''} checked"
    if report.shared:
        text += f", {report.graphs_read} distinct graph{'s' if report.graphs_read != 1 else ''} read"
    if not report.files:   # not "No findings": no rule read any file
        text = "Nothing checked (no dump file was read"
    if report.diagnostics:
        text += f", {len(report.diagnostics)} input problem{'s' if len(report.diagnostics) != 1 else ''}"
    if ctx.baseline_written is not None:   # --write-baseline: nothing hidden, all accepted
        n = ctx.baselined
        text = f"Wrote {n} finding{'s' if n != 1 else ''} to the baseline {ctx.baseline_written}" + text[text.index(" ("):]
    elif ctx.baselined:
        text += f", {ctx.baselined} known finding{'s' if ctx.baselined != 1 else ''} hidden by the baseline"
    if report.suppressed:
        n = len(report.suppressed)
        text += f", {n} suppressed by [[suppress]]"
    out.print(Text(text + ").", style="bold"))
