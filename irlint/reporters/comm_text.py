"""The text report of ``irlint comm``: per distinct graph (the ranks that hold it named once), what
each layer's collectives receive, the share the PC findings name as waste, and the communication
recompute repeats."""

from __future__ import annotations

from ..accounts.comm import SCOPE_NOTE
from ..units import human_bytes as human
from ..units import spans
from .account_lines import comm_headline
from .tables import (
    add_layer_rows,
    graph_groups,
    group_label,
    groups_line,
    layer_order,
    layer_table,
    list_table,
    plain_console,
    text_of,
)


def render_text(
    entries: list[dict], width: int | None = None, top: int = 10, color: bool = False, quiet: bool = False
) -> str:
    """One set of tables per distinct graph (ranks that hold the same graph share theirs)."""
    out, buffer = plain_console(width, color)
    groups = graph_groups(entries)
    many = len(groups) > 1
    out.print(comm_headline(entries), soft_wrap=True)
    groups_line(out, groups)
    for g in groups:
        e, name = g[0], group_label(g)
        columns: tuple[str, ...] = ("received", "scheme", "waste", "forward", "backward")
        if e.get("recompute_bytes"):  # shown where a recompute key re-runs communication
            columns += ("recompute",)
        table = layer_table(
            f"Bytes received per rank and step, per layer{' (' + name + ')' if many else ''}", [name], columns
        )
        add_layer_rows(table, [e], layer_order([e]), _cells(columns))
        table.add_row("total", *[human(e[f"{c}_bytes"]) for c in columns])
        out.print(table)
        if not e["collectives"]:
            out.print(f"{e['file']}: no collective communication in this graph.", soft_wrap=True)
            continue
        kinds = list_table(
            f"By kind{' (' + name + ')' if many else ''}",
            ("kind", "ops", "forward", "backward", "waste"),
            right=("ops", "forward", "backward", "waste"),
            fold=False,
        )
        for k in e["by_kind"]:
            kinds.add_row(
                k["kind"], str(k["ops"]), human(k["forward_bytes"]), human(k["backward_bytes"]), human(k["waste_bytes"])
            )
        out.print(kinds)
        ops = list_table(
            f"Largest collectives{' (' + name + ')' if many else ''}",
            ("bytes", "waste", "node", "op", "group", "dir", "layer", "transposes", "model path"),
            right=("bytes", "waste", "group"),
        )
        largest = sorted(e["collectives"], key=lambda c: (-(c["received_bytes"] or 0), c["line"]))[:top]
        for c in sorted(largest, key=lambda c: c["line"]):
            ops.add_row(
                human(c["received_bytes"]) if c["received_bytes"] is not None else "?",
                human(c["waste_bytes"]) if c["waste_bytes"] else "",
                f"{c['node']} (line {c['line']})",
                c["op"],
                str(c["group_size"] or "?"),
                c["direction"],
                c["layer"],
                c["transposes"] or "",
                c.get("model_path") or c["scope"],
            )
        if top:
            out.print(ops)
        if e.get("recompute"):
            out.print(recompute_table(e, name if many else None))
        for f in e["findings"]:
            out.print(
                f"{e['file']}:{f['line']}: {f['code']} {f['node']}: {human(f['waste_bytes'])} of "
                f"waste, {f['share']} of the step's communication",
                soft_wrap=True,
            )
        for c in e["collectives"]:
            if c["received_bytes"] is None:
                out.print(
                    f"{e['file']}:{c['line']}: collective of unknown size, counted as 0 bytes: {c['node']} {c['op']}",
                    soft_wrap=True,
                )
        estimated = [c["line"] for c in e["collectives"] if c.get("received_estimated")]
        if estimated:
            out.print(
                f"{e['file']}: {len(estimated)} AlltoAllV of data-dependent size counted as (n-1)/n of what the rank sends "
                f"to the n peers of its send list (balanced routing): lines {', '.join(spans(estimated))}",
                soft_wrap=True,
            )
    if not quiet:  # the note on what is counted
        out.print(SCOPE_NOTE, soft_wrap=True)
    return text_of(buffer, width)


def _cells(columns: tuple[str, ...]):
    return lambda row: [human(row[f"{c}_bytes"]) for c in columns]


def recompute_table(e: dict, name: str | None):
    """The communication recompute runs again in backward, per select key."""
    table = list_table(
        f"Re-run in backward by recompute, per key{' (' + name + ')' if name else ''} "
        f"(of the backward bytes): {human(e['recompute_bytes'])}",
        ("key", "via", "ops", "bytes", "layers", "kinds"),
        right=("ops", "bytes"),
    )
    for row in e["recompute"]:
        table.add_row(
            row["key"],
            row["via"],
            str(row["ops"]),
            human(row["received_bytes"]),
            ", ".join(row["layers"]),
            ", ".join(f"{k} {human(v)}" for k, v in row["by_kind"].items()),
        )
    return table
