"""What the text reports of the account commands (memory, comm, cost) share: a plain console that
writes to a string, one case after another, the line naming each file, layers in model order."""

from __future__ import annotations

import io
from collections.abc import Callable, Collection, Sequence

from ..accounts.memory import OUTSIDE


def plain_console(width: int | None):
    """(console, buffer): no colour, no markup guesses, the width given or unlimited."""
    from rich.console import Console

    from . import UNLIMITED_WIDTH

    buffer = io.StringIO()
    return Console(
        file=buffer, width=width or UNLIMITED_WIDTH, no_color=True, highlight=False, emoji=False, soft_wrap=False
    ), buffer


def text_of(buffer: io.StringIO) -> str:
    return "".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines())


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


def files_line(out, label: list[str], entries: list[dict]) -> None:
    """The file (and stage) each column is about."""
    if len(entries) == 1:
        out.print(f"{entries[0]['file']} ({entries[0]['stage']})")
    else:
        for name, e in zip(label, entries):
            out.print(f"{name}: {e['file']} ({e['stage']})")


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
