"""The HTML page of ``irlint comm``: the headline share of redistribution waste, then per file a
bar chart of what each layer's collectives receive (scheme and waste), the bytes by collective
kind, the largest collectives and the findings that name the waste; in the style of the
``irlint memory`` page."""

from __future__ import annotations

from .. import __version__
from . import ranks_text
from .html import environment, markup, per_layer_chart

SCHEME_COLOUR, WASTE_COLOUR = "#1971c2", "#d9480f"


def waste_share(e: dict) -> str:
    total = e["received_bytes"] or 0
    return f"{(e['waste_bytes'] or 0) / total:.0%}" if total else ""


def render_comm(entries: list[dict], problems: list, counted: str, top: int = 10) -> str:
    from .account_lines import comm_headline
    from .tables import graph_groups, same_label

    files = []
    for g in graph_groups(entries):  # one section per distinct graph (ranks that hold it share it)
        e = g[0]
        chart = per_layer_chart(
            e["layers"], [("scheme", SCHEME_COLOUR, "scheme_bytes"), ("waste", WASTE_COLOUR, "waste_bytes")]
        )
        largest = sorted(e["collectives"], key=lambda c: (-(c["received_bytes"] or 0), c["line"]))[:top]
        files.append(
            {
                "e": e,
                "same": same_label(g),
                "chart": markup(chart),
                "share": waste_share(e),
                "largest": sorted(largest, key=lambda c: c["line"]),
            }
        )
    busiest = max(entries, key=lambda e: e["received_bytes"] or 0, default=None)
    return (
        environment()
        .get_template("comm.html.j2")
        .render(
            title="irlint comm",
            version=__version__,
            files=files,
            read=len(entries),
            problems=problems,
            counted=counted,
            busiest=busiest,
            share=waste_share(busiest) if busiest else "",
            headline=comm_headline(entries) if entries else "",
            ranks=ranks_label(entries),
        )
    )


def ranks_label(entries: list[dict]) -> str:
    """``ranks 0–3``, ``rank 0`` for one, nothing for files outside rank folders."""
    ranks = tuple(sorted({e["rank"] for e in entries if e["rank"] is not None}))
    return ranks_text(ranks) if len(ranks) > 1 else f"rank {ranks[0]}" if ranks else ""
