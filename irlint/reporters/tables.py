"""What the text reports of the account commands (memory, comm, cost) share: a plain console that
writes to a string, one case after another, the line naming each file, layers in model order."""

from __future__ import annotations

import io
from collections.abc import Callable, Collection, Sequence

from ..accounts.memory import OUTSIDE
from ..units import spans


def plain_console(width: int | None, color: bool = False):
    """(console, buffer): no markup guesses, the width given or unlimited; colour (the tables'
    own styles) only when asked for."""
    from rich.console import Console

    from . import UNLIMITED_WIDTH

    buffer = io.StringIO()
    return Console(
        file=buffer,
        width=width or UNLIMITED_WIDTH,
        no_color=not color,
        force_terminal=color or None,
        color_system="standard" if color else None,
        highlight=False,
        emoji=False,
        soft_wrap=False,
    ), buffer


def text_of(buffer: io.StringIO, width: int | None = None) -> str:
    """The report's lines; a sentence longer than ``width`` (tables fold themselves) folded at its
    spaces, when a width is given."""
    import textwrap

    lines = [line.rstrip() for line in buffer.getvalue().splitlines()]
    if width:  # a coloured line is a table's: it folds itself
        lines = [
            part
            for line in lines
            for part in (
                textwrap.wrap(line, width, break_on_hyphens=False)
                if len(line) > width and "\x1b" not in line
                else [line]
            )
        ]
    return "".join(line + "\n" for line in lines)


def by_case(out, entries: list[dict], cases: list[str] | None, render_case: Callable) -> None:
    """``render_case(out, case, entries)`` for each case in turn (``cases[i]`` names the case of
    ``entries[i]``; default: one case, not named)."""
    groups: dict[str, list[dict]] = {}
    for e, case in zip(entries, cases or [""] * len(entries)):
        groups.setdefault(case, []).append(e)
    for i, (case, group) in enumerate(groups.items()):
        if i:
            out.print()
        render_case(out, case if len(groups) > 1 else "", group)


def list_table(title: str, columns: Sequence[str], right: Collection[str] = (), fold: bool = True):
    """A table of one row per item: ``columns`` in order, those in ``right`` right-justified (figures),
    long cells folded onto more lines (cut with an ellipsis when ``fold`` is False)."""
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for col in columns:
        table.add_column(col, justify="right" if col in right else "left", overflow="fold" if fold else "ellipsis")
    return table


def layer_table(title: str, label: list[str], columns: Sequence[str]):
    """A per-layer table: the layer, then ``columns`` for each file of ``label`` (named when several)."""
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    table.add_column("layer")
    for name in label:
        for col in columns:
            table.add_column(col + (f" ({name})" if len(label) > 1 else ""), justify="right")
    return table


def add_layer_rows(table, entries: list[dict], layers: list[str], cells: Callable[[dict], list[str]]) -> None:
    """A row per layer: ``cells(row)`` of each entry's row for that layer, blanks where it has none."""
    width = (len(table.columns) - 1) // max(len(entries), 1)  # each entry's columns
    for layer in layers:
        row_cells: list[str] = []
        for e in entries:
            row = next((r for r in e["layers"] if r["layer"] == layer), None)
            row_cells += cells(row) if row else [""] * width
        table.add_row(layer, *row_cells)


def projection_table(p: dict, suffix: str, columns: Sequence[str]):
    """The table of a projection to a deeper model (``--layers``): its blocks of layers, then ``columns``."""
    from rich.table import Table

    table = Table(
        title=f"Projected to {p['layers']} decoder layers from {p['dumped_layers']} dumped{suffix} (projected)",
        title_justify="left",
    )
    for col in ("layers", "from dumped layer"):
        table.add_column(col, justify="left")
    for col in columns:
        table.add_column(col, justify="right")
    return table


def layer_order(entries: list[dict]) -> list[str]:
    """The layers of ``entries`` in model order, what lies outside them last."""
    return sorted(
        {row["layer"] for e in entries for row in e["layers"]},
        key=lambda name: (name == OUTSIDE, int(name) if name.isdigit() else 0),
    )


def graph_groups(entries: list[dict]) -> list[list[dict]]:
    """The entries in classes of the same graph, in order of first appearance: an entry's
    ``graph_class`` (set by the command from the lint's same-graph test) names its class; an entry
    without one is a class of its own."""
    groups: dict[object, list[dict]] = {}
    for i, e in enumerate(entries):
        groups.setdefault(e.get("graph_class", ("own", i)), []).append(e)
    return list(groups.values())


def group_label(members: list[dict]) -> str:
    """``ranks 0–255``, ``rank 3``; the file when the entries have no rank."""
    ranks = [e["rank"] for e in members]
    if None not in ranks:
        return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(spans(sorted(ranks)))
    return members[0]["file"] + (f" and {len(members) - 1} more" if len(members) > 1 else "")


def groups_line(out, groups: list[list[dict]]) -> None:
    """The file (and stage) each table is about: ``ranks 0–255: same graph (rank_0/x.ir, validate)``."""
    for g in groups:
        e = g[0]
        if len(groups) == 1 and len(g) == 1:
            out.print(f"{e['file']} ({e['stage']})", soft_wrap=True)
        elif len(g) == 1:
            out.print(f"{group_label(g)}: {e['file']} ({e['stage']})", soft_wrap=True)
        else:
            out.print(f"{group_label(g)}: same graph ({len(g)} files, as {e['file']}, {e['stage']})", soft_wrap=True)


def same_label(group: list[dict]) -> str:
    """``ranks 0–255: same graph (256 files)`` for a class of several files; "" for one."""
    return f"{group_label(group)}: same graph ({len(group)} files)" if len(group) > 1 else ""
