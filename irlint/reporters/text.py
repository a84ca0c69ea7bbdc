"""The default format for people: findings grouped by file, each with its dump line, the chain of
related nodes and the fix; then a summary table."""

from __future__ import annotations

import io
import re
from collections import defaultdict
from typing import TYPE_CHECKING

from ..findings import Report
from . import UNLIMITED_WIDTH, RenderContext, rule_classes

if TYPE_CHECKING:  # rich is imported only for colour or a terminal's width: it is a large share of a start
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def console_for(ctx: RenderContext, buffer: io.StringIO) -> Console:
    from rich.console import Console

    return Console(
        file=buffer,
        force_terminal=ctx.color,
        no_color=not ctx.color,
        color_system="standard" if ctx.color else None,
        width=ctx.width or UNLIMITED_WIDTH,
        highlight=False,
        emoji=False,
        soft_wrap=False,
    )


class Cell:
    """Text as rich's ``Text`` is built (a base style, then parts each with its style), kept apart
    from rich: a report to a file or pipe (no colour, no width) is written without it."""

    __slots__ = ("parts", "style", "clip")

    def __init__(self, text: str = "", style: str = "", clip: bool = False) -> None:
        self.parts: list[tuple[str, str]] = [(text, "")] if text else []
        self.style = style
        self.clip = clip  # one line, cut with '…' where it does not fit (else it wraps)

    def append(self, text: str, style: str = "") -> Cell:
        self.parts.append((text, style))
        return self

    @property
    def plain(self) -> str:
        return "".join(text for text, _ in self.parts)

    def rich(self) -> Text:
        from rich.text import Text

        text = Text(style=self.style, no_wrap=True if self.clip else None, overflow="ellipsis" if self.clip else None)
        for part, style in self.parts:
            text.append(part, style)
        return text


class Grid(list):
    """A finding: rows of (label, text); labels right-aligned in a column at least 9 wide."""


class StatisticsTable(list):
    """Findings per rule: rows of (count, code, rule, severity)."""

    title = "Findings per rule"
    columns = ("count", "code", "rule", "severity")


def render(report: Report, ctx: RenderContext) -> str:
    if ctx.quiet and not (report.findings or report.diagnostics or ctx.statistics):
        return ""  # nothing to print
    blocks = _blocks(report, ctx)
    if not ctx.color and ctx.width is None:
        text = plain_text(blocks)
        if text is not None:
            return _trimmed(text, ctx)
    return _trimmed(rich_text(blocks, ctx), ctx)


def _blocks(report: Report, ctx: RenderContext) -> list:
    """What the report prints, in order: a Cell is a line, None an empty line, then Grid and
    StatisticsTable."""
    blocks: list = []
    if ctx.statistics:
        if report.findings:
            blocks.append(statistics_table(report, ctx))
        else:  # an empty table would not say it
            blocks += _summary(report, ctx)
        return blocks
    ctx.sources.prefetch_findings(report.findings)
    blocks += _plan(report)
    by_file: dict[str, list] = defaultdict(list)
    for f in report.findings:
        by_file[f.file].append(f)
    for path, findings in by_file.items():
        blocks.append(Cell(path, style="bold underline"))
        # costliest first: the activation bytes a finding keeps alive (stable, so line order otherwise)
        for f in sorted(findings, key=lambda f: -(f.bytes_at_stake or 0)):
            blocks += [_finding(f, ctx), None]
    if report.diagnostics:
        blocks.append(Cell("Input problems (lines skipped or files not read)", style="bold"))
        for d in report.diagnostics:
            line = Cell("  ")
            line.append(f"{d.file}:{d.line}", style="bold")
            line.append(f"  {d.code} {d.kind}  ", style="magenta")
            line.append(d.message)
            blocks.append(line)
        blocks.append(None)
    if not ctx.quiet:
        blocks += _summary(report, ctx)
    return blocks


def _plan(report: Report) -> list:
    """The run's fix plan, once, above the findings (``irlint.fixplan``)."""
    from ..fixplan import fix_plan, is_empty, plan_text

    plan = fix_plan(report.findings, fingerprints=False)
    if is_empty(plan):
        return []
    blocks: list = [Cell("Fix plan (every finding at once)", style="bold")]
    blocks += [Cell("  " + ln) for ln in plan_text(plan).splitlines()]
    return blocks + [None]


def _trimmed(text: str, ctx: RenderContext) -> str:
    """Without colour, drop the padding rich adds to the ends of table lines."""
    if ctx.color:
        return text
    return "".join(line.rstrip() + "\n" for line in text.splitlines())


def _finding(f, ctx: RenderContext) -> Grid:
    """The headline, then the evidence on labelled lines: labels on the left, text on the right;
    to a terminal long lines wrap with a hanging indent and source/scope/context lines are cut
    with '…', elsewhere every line is printed in full."""
    grid = Grid()
    head = Cell()
    head.append(f.code, style="bold " + SEVERITY_STYLE.get(f.severity, ""))
    head.append(f" {f.severity}", style=SEVERITY_STYLE.get(f.severity, ""))
    head.append(f"  {f.headline}")
    grid.append((Cell(f"{f.line}:{f.column}", style="bold"), head))
    source = ctx.sources.line(f.file, f.line)
    if source:
        grid.append((Cell(f"{f.line} │", style="dim"), Cell(source, clip=True)))
    if f.message:
        grid.append((Cell("why", style="dim"), Cell(f.message)))
    if f.scope:
        grid.append((Cell("scope", style="dim"), Cell(f.scope, "dim", clip=True)))
    if f.source:
        grid.append((Cell("code", style="dim"), Cell(f"{f.source[0]}:{f.source[1]}", clip=True)))
    # node ids restart in every subgraph: name the subgraphs once nodes of several are shown
    several = any(r.graph and r.graph != f.graph for r in f.related)
    if several and f.graph:
        grid.append((Cell("graph", style="dim"), Cell(f"{f.node} in {short_graph(f.graph, ctx)}", "dim", clip=True)))
    if f.members:
        grid.append((Cell("seen", style="dim"), Cell(occurrences_text(f), "dim", clip=True)))
    # the nodes around the finding: context, not a path through the graph; its first chain only
    # (a root cause's chains are alike), the rest counted for the formats that keep them all
    shown = first_chain(f.related)
    for i, r in enumerate(shown):
        row = Cell("", clip=True)
        where = f"{r.line}" if r.file == f.file else f"{r.file}:{r.line}"
        row.append(f"{where} {r.node} {r.op}", style="bold")
        if r.graph and r.graph != f.graph:
            row.append(f" in {short_graph(r.graph, ctx)}")
        if r.note:
            row.append(f"  {r.note}", style="italic")
        row.append(f"  {r.scope}", style="dim")
        grid.append((Cell("context" if i == 0 else "", style="dim"), row))
    if len(shown) < len(f.related):
        grid.append((Cell("", style="dim"), Cell(more_text(f.related, len(shown)), "dim")))
    if f.hint:
        grid.append((Cell("fix", style="green"), Cell(f.hint)))
    return grid


GRAPH_NAME_MAX = 40
CONTEXT_MAX = 24  # nodes of context a text report shows of one finding
CHAIN_HEAD = re.compile(r"chain \d+ of \d+\b")


def first_chain(related: tuple) -> tuple:
    """The context of a finding's first chain: up to the node that heads its second (a root
    cause's related nodes are its chains one after another, each headed ``chain N of M``), at
    most ``CONTEXT_MAX`` nodes."""
    heads = [i for i, r in enumerate(related) if CHAIN_HEAD.match(r.note)]
    end = heads[1] if len(heads) > 1 else len(related)
    return related[: min(end, CONTEXT_MAX)]


def more_text(related: tuple, shown: int) -> str:
    """``+181 more (20 more chains) in --format json or html``."""
    chains = sum(1 for r in related[shown:] if CHAIN_HEAD.match(r.note))
    what = f" ({chains} more chain{'s' if chains != 1 else ''})" if chains else ""
    return f"+{len(related) - shown} more context nodes{what}: every one in --format json or html"


def short_graph(name: str, ctx: RenderContext) -> str:
    """A graph name a terminal line has room for (long generated names keep their ends); whole
    in a file or pipe, where it can be searched for."""
    if ctx.width is None or len(name) <= GRAPH_NAME_MAX:
        return name
    keep = (GRAPH_NAME_MAX - 1) // 2
    return f"{name[:keep]}…{name[-keep:]}"


def occurrences_text(f) -> str:
    """Where the occurrences of a grouped finding are, in a line (each one is in JSON, SARIF and
    ``--no-group``)."""
    files: dict[str, list[int]] = {}
    for o in f.members:
        files.setdefault(o.file, []).append(o.line)
    where = "; ".join(
        ("" if path == f.file else f"{path} ") + f"line{'s' if len(lines) > 1 else ''} " + _lines_text(lines)
        for path, lines in files.items()
    )
    return f"{len(f.members)} occurrences: {where} (each in --format json, or --no-group)"


def _lines_text(lines: list[int]) -> str:
    lines = sorted(set(lines))
    return ", ".join(map(str, lines)) if len(lines) <= 4 else f"{lines[0]}, {lines[1]} … {lines[-1]}"


def statistics_table(report: Report, ctx: RenderContext) -> StatisticsTable:
    names = {c.code: c.name for c in rule_classes(report, ctx)}
    severities: dict[str, str] = {}
    for f in report.findings:
        severities.setdefault(f.code, f.severity)
    return StatisticsTable(
        (str(count), code, names.get(code, ""), severities.get(code, "")) for code, count in report.by_rule().items()
    )


def _summary(report: Report, ctx: RenderContext) -> list:
    blocks: list = []
    if report.findings:
        blocks.append(statistics_table(report, ctx))
    n, files = len(report.findings), len({f.file for f in report.findings})
    if n:
        text = f"Found {n} finding{'s' if n != 1 else ''}"
        seen = sum(len(f.occurrences) for f in report.findings)
        if seen != n:  # grouped by root cause
            text += f" ({seen} occurrences)"
        text += f" in {files} file{'s' if files != 1 else ''}"
    elif report.diagnostics:  # not a clean result: some of the input was not read
        text = "No findings in what could be read"
    else:
        text = "No findings"
    text += f" ({len(report.files)} file{'s' if len(report.files) != 1 else ''} checked"
    if report.shared:
        text += f", {report.graphs_read} distinct graph{'s' if report.graphs_read != 1 else ''} read"
    if not report.files:  # not "No findings": no rule read any file
        text = "Nothing checked (no dump file was read"
    if report.diagnostics:
        text += f", {len(report.diagnostics)} input problem{'s' if len(report.diagnostics) != 1 else ''}"
    if ctx.baseline_written is not None:  # --write-baseline: nothing hidden, all accepted
        n = ctx.baselined
        text = (
            f"Wrote {n} finding{'s' if n != 1 else ''} to the baseline {ctx.baseline_written}"
            + text[text.index(" (") :]
        )
    elif ctx.baselined:
        text += f", {ctx.baselined} known finding{'s' if ctx.baselined != 1 else ''} hidden by the baseline"
    if ctx.baselined_occurrences and ctx.baseline_written is None:
        n = ctx.baselined_occurrences
        text += f", {n} known occurrence{'s' if n != 1 else ''} of the findings shown hidden by the baseline"
    if report.suppressed:
        n = len(report.suppressed)
        text += f", {n} suppressed by [[suppress]]"
    blocks.append(Cell(text + ").", style="bold"))
    return blocks


# --- with rich: colour, or a terminal's width to wrap and cut to ------------------------------------
def rich_text(blocks: list, ctx: RenderContext) -> str:
    buffer = io.StringIO()
    out = console_for(ctx, buffer)
    for block in blocks:
        if block is None:
            out.print()
        elif isinstance(block, Cell):
            out.print(block.rich())
        elif isinstance(block, Grid):
            out.print(_rich_grid(block))
        else:
            out.print(_rich_table(block))
    return buffer.getvalue()


def _rich_grid(grid: Grid) -> Table:
    from rich.table import Table

    table = Table.grid(padding=(0, 1))
    table.add_column(justify="right", no_wrap=True, min_width=9)
    table.add_column(overflow="fold")
    for label, text in grid:
        table.add_row(label.rich(), text.rich())
    return table


def _rich_table(stats: StatisticsTable) -> Table:
    from rich.table import Table

    table = Table(title=stats.title, title_justify="left")
    table.add_column(stats.columns[0], justify="right")
    for name in stats.columns[1:]:
        table.add_column(name)
    for row in stats:
        table.add_row(*row)
    return table


# --- without rich: what it prints with no colour and no width limit, for text it prints as it is ----
class _NeedsRich(Exception):
    """Text whose rendering rich decides (tabs, lines near its width limit, markup)."""


# the control characters rich's Text drops (rich.control.STRIP_CONTROL_CODES)
_DROPPED = dict.fromkeys((7, 8, 11, 12, 13))
_LABEL_CHARS = frozenset(map(chr, range(32, 127))) | {"│"}  # one cell each


def plain_text(blocks: list) -> str | None:
    """The blocks as rich prints them without colour to UNLIMITED_WIDTH columns (before
    ``_trimmed``), or None when some text is rich's to lay out."""
    lines: list[str] = []
    try:
        for block in blocks:
            if block is None:
                lines.append("")
            elif isinstance(block, Cell):
                lines += _lines(block.plain, UNLIMITED_WIDTH)
            elif isinstance(block, Grid):
                _plain_grid(block, lines)
            else:
                _plain_table(block, lines)
    except _NeedsRich:
        return None
    lines.append("")
    return "\n".join(lines)


# line breaks to str.splitlines but not to rich's Text, which measures a cell by the one and prints
# it by the other
_OTHER_BREAKS = re.compile("[\x1c\x1d\x1e\x85\u2028\u2029]")


def _lines(text: str, room: int) -> list[str]:
    """The lines rich prints of ``text`` in ``room`` columns, when that is the text as it is."""
    text = text.translate(_DROPPED)
    # a tab expands to the next stop; a line near the room wraps or is cut (a cell is at most 2 columns)
    if "\t" in text or 2 * len(text) > room or _OTHER_BREAKS.search(text):
        raise _NeedsRich
    return text.split("\n")


def _plain_grid(grid: Grid, lines: list[str]) -> None:
    labels = [label.plain for label, _ in grid]
    if not all(_LABEL_CHARS.issuperset(label) for label in labels):
        raise _NeedsRich
    width = max(9, *map(len, labels))
    room = UNLIMITED_WIDTH - width - 1
    for label, (_, text) in zip(labels, grid):
        first, *rest = _lines(text.plain, room)
        lines.append(f"{label:>{width}} {first}")
        lines += [f"{'':{width}} {line}" for line in rest]


def _plain_table(stats: StatisticsTable, lines: list[str]) -> None:
    rows = [stats.columns, *stats]
    # cells are printed through rich's markup ("[" opens a tag); other characters have other widths
    if any("[" in cell or not cell.isascii() or not cell.isprintable() for row in rows for cell in row):
        raise _NeedsRich
    widths = [max(len(row[i]) for row in rows) for i in range(len(stats.columns))]
    if sum(widths) + 3 * len(widths) + 1 > UNLIMITED_WIDTH:
        raise _NeedsRich

    def row_line(row: tuple[str, ...], bar: str) -> str:
        cells = [f" {cell:>{w}} " if i == 0 else f" {cell:<{w}} " for i, (cell, w) in enumerate(zip(row, widths))]
        return bar + bar.join(cells) + bar

    lines.append(stats.title)
    lines.append("┏" + "┳".join("━" * (w + 2) for w in widths) + "┓")
    lines.append(row_line(stats.columns, "┃"))
    lines.append("┡" + "╇".join("━" * (w + 2) for w in widths) + "┩")
    lines += [row_line(row, "│") for row in stats]
    lines.append("└" + "┴".join("─" * (w + 2) for w in widths) + "┘")
