"""The HTML page of ``irlint cost``: per file, bar charts of each layer's FLOPs (forward, backward,
recomputed copies), the recompute keys priced in bytes saved against FLOPs re-spent, the step's
communication, the projection and MC2 candidates; in the style of the ``irlint memory`` page."""

from __future__ import annotations

from .. import __version__
from ..units import human_flops
from . import ranks_text
from .html import environment, markup, per_layer_chart

FORWARD_COLOUR, BACKWARD_COLOUR, RECOMPUTE_COLOUR = "#1971c2", "#adb5bd", "#d9480f"


flops = human_flops  # the one FLOP formatter of every report (irlint.units)


def render_cost(entries: list[dict], problems: list, counted: str) -> str:
    from .tables import graph_groups, same_label

    files = []
    for g in graph_groups(entries):  # one section per distinct graph (ranks that hold it share it)
        e = g[0]
        chart = per_layer_chart(
            e["layers"],
            [
                ("forward", FORWARD_COLOUR, "forward_flops"),
                ("backward", BACKWARD_COLOUR, "backward_flops"),
                ("recompute", RECOMPUTE_COLOUR, "recompute_flops"),
            ],
            flops,
        )
        files.append({"e": e, "same": same_label(g), "chart": markup(chart)})
    env = environment()
    env.filters["flops"] = flops
    env.filters["pct"] = lambda x: f"{100 * x:.1f}%"
    return env.get_template("cost.html.j2").render(
        title="irlint cost",
        version=__version__,
        files=files,
        read=len(entries),
        problems=problems,
        counted=counted,
        total=sum(e["step_flops"] for e in entries),
        # what recompute re-spends in all, as its rows count it: matrix and element-wise FLOPs
        recompute=sum(e["recompute_flops"] + e["elementwise_flops"].get("recompute", 0) for e in entries),
        ranks=ranks_text(tuple(e["rank"] for e in entries if e["rank"] is not None))
        if any(e["rank"] is not None for e in entries)
        else "",
    )
