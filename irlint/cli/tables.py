"""What the text reports of the account commands (memory, comm, cost) share: a plain console that
writes to a string, one case after another, the line naming each file, layers in model order."""

from __future__ import annotations

import io
from collections.abc import Callable

from ..accounts.memory import OUTSIDE


def plain_console(width: int | None):
    """(console, buffer): no colour, no markup guesses, the width given or unlimited."""
    from rich.console import Console

    from ..reporters import UNLIMITED_WIDTH

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


def layer_order(entries: list[dict]) -> list[str]:
    """The layers of ``entries`` in model order, what lies outside them last."""
    return sorted(
        {row["layer"] for e in entries for row in e["layers"]},
        key=lambda name: (name == OUTSIDE, int(name) if name.isdigit() else 0),
    )
