"""The text report of ``irlint cost``: per case and distinct graph, the FLOPs of a step by layer, what
recompute re-spends, a projection to more layers and the MatMul + collective pairs MC2 kernels could
fuse."""

from __future__ import annotations

from ..accounts.compute import DIRECTIONS, SCOPE_NOTE
from ..units import human_bytes, human_share, layer_spans
from ..units import human_flops as flops
from .tables import (
    add_layer_rows,
    by_case,
    graph_groups,
    group_label,
    groups_line,
    layer_order,
    layer_table,
    list_table,
    plain_console,
    projection_table,
    text_of,
)

PROJECTED_NOTE = (
    "Projected figures (marked projected) repeat the dumped decoder layers in order to the given depth; "
    "rows outside the layers (embedding, head, loss) count once."
)


def render_text(
    entries: list[dict],
    width: int | None = None,
    cases: list[str] | None = None,
    color: bool = False,
    quiet: bool = False,
) -> str:
    out, buffer = plain_console(width, color)
    by_case(out, entries, cases, _render_case)
    if quiet:  # without the notes on what is counted
        return text_of(buffer, width)
    out.print(SCOPE_NOTE, soft_wrap=True)
    if any(e.get("projected") for e in entries):
        out.print(PROJECTED_NOTE, soft_wrap=True)
    return text_of(buffer, width)


def _render_case(out, case: str, entries: list[dict]) -> None:
    if case:
        out.print(f"== {case}", soft_wrap=True)
    groups = graph_groups(entries)  # one set of tables per distinct graph, never a column per rank
    many = len(groups) > 1
    groups_line(out, groups)
    for g in groups:
        e, name = g[0], group_label(g)
        suffix = f" ({name})" if many else ""
        table = layer_table(
            f"FLOPs per rank and step, per layer{suffix}", [name], ("forward", "backward", "recompute", "element-wise")
        )
        # each direction's matrix FLOPs, then the element-wise ones of all directions
        add_layer_rows(
            table,
            [e],
            layer_order([e]),
            lambda row: [
                *[flops(row[f"{d}_flops"]) for d in DIRECTIONS],
                flops(sum(row[f"{d}_elementwise_flops"] for d in DIRECTIONS)),
            ],
        )
        table.add_row(
            "total",
            flops(e["forward_flops"]),
            flops(e["backward_flops"]),
            flops(e["recompute_flops"]),
            flops(sum(e["elementwise_flops"].values())),
        )
        out.print(table)
        out.print(
            f"step {flops(e['step_flops'])} in matrix ops; recompute re-spends "
            f"{flops(e['recompute_flops'])} ({human_share(e['recompute_flops'], e['step_flops'])} of the step); "
            f"element-wise {flops(sum(e['elementwise_flops'].values()))}",
            soft_wrap=True,
        )
        c = e["communication"]
        if c is not None:
            out.print(
                f"communication {human_bytes(c['received_bytes'])} received per rank and step "
                f"(forward {human_bytes(c['forward_bytes'])}, backward {human_bytes(c['backward_bytes'])}; "
                f"{c['collectives']} collectives, as irlint comm counts them)",
                soft_wrap=True,
            )
        if e["micro_batches"] > 1:
            out.print(
                f"a pipeline stage: the forward half runs once per micro batch ({e['micro_batches']}); "
                f"the figures count its graph once.",
                soft_wrap=True,
            )
        for u in e["unsized"]:
            out.print(
                f"{e['file']}:{u['line']}: op of unknown shape, counted as 0 FLOPs: {u['node']} {u['op']}",
                soft_wrap=True,
            )
        if e["recompute"]:
            _recompute_table(out, e, suffix)
        if e.get("projected"):
            _projection_table(out, e["projected"], suffix)
        if e.get("mc2") is not None:
            _mc2_table(out, e["mc2"], suffix)


def _recompute_table(out, e: dict, suffix: str) -> None:
    figures = ("copies", "matrix FLOPs", "element-wise", "share of step", "bytes saved", "bytes per GFLOP")
    table = list_table(
        f"What each recompute buys: bytes saved against FLOPs re-spent{suffix}",
        ("key or cell", "layers", *figures),
        right=figures,
    )
    for r in e["recompute"]:
        per = r["bytes_per_gflop"]
        table.add_row(
            r["key"],
            layer_spans(r["layers"], "-"),
            str(r["copies"]),
            flops(r["matrix_flops"]),
            flops(r["flops"] - r["matrix_flops"]),
            human_share(r["matrix_flops"], e["step_flops"]),
            human_bytes(r["saved_bytes"]),
            "-" if per is None else f"{per:,.0f}",
        )
    out.print(table)
    idle = [r["key"] for r in e["recompute"] if r["flops"] and not r["saved_bytes"]]
    if idle:
        out.print(
            f"Re-spent without saving a byte of their own (needed by the copies after them, or nothing): "
            f"{', '.join(idle)}",
            soft_wrap=True,
        )


def _projection_table(out, p: dict, suffix: str) -> None:

    table = projection_table(p, suffix, ("forward", "backward", "recompute", "step"))
    for row in p["blocks"]:
        table.add_row(
            row["layers"],
            row["from_layer"],
            flops(row["forward_flops"]),
            flops(row["backward_flops"]),
            flops(row["recompute_flops"]),
            flops(row["step_flops"]) + " per layer",
        )
    once = p["once"]
    table.add_row(
        "outside",
        "(once)",
        flops(once["forward_flops"]),
        flops(once["backward_flops"]),
        flops(once["recompute_flops"]),
        flops(once["forward_flops"] + once["backward_flops"] + once["recompute_flops"]),
    )
    t = p["totals"]
    table.add_row(
        "total (projected)",
        "",
        flops(t["forward_flops"]),
        flops(t["backward_flops"]),
        flops(t["recompute_flops"]),
        flops(t["step_flops"]),
    )
    out.print(table)
    out.print(
        f"Projected: recompute re-spends {human_share(t['recompute_flops'], t['step_flops'])} of the step "
        f"at {p['layers']} layers.",
        soft_wrap=True,
    )


def _mc2_table(out, m: dict, suffix: str) -> None:
    table = list_table(
        f"MC2 candidates under {m['device']}{suffix}",
        (
            "matmul",
            "collective",
            "fused kernel",
            "dir",
            "M",
            "K",
            "N",
            "dtype",
            "bytes",
            "FLOPs",
            "bound",
            "K at balance",
            "m0",
            "long",
            "MindSpore's pass would skip it",
        ),
        right=("M", "K", "N", "bytes", "FLOPs", "K at balance", "m0", "long"),
    )
    for c in m["candidates"]:
        long = "" if c["long_block"] is None else f"{c['long_block']} x {c['long_blocks']}"
        table.add_row(
            f"{c['matmul']} {c['matmul_op']} (line {c['line']})",
            f"{c['collective']} {c['collective_op']}",
            c["pattern"],
            c["direction"],
            str(c["m"]),
            str(c["k"]),
            str(c["n"]),
            c["dtype"] or "?",
            human_bytes(c["bytes"]) if c["bytes"] is not None else "?",
            flops(c["flops"]) if c["flops"] is not None else "?",
            c["bound"] or "?",
            f"{c['balance_k']:,.0f}" if c["balance_k"] is not None else "?",
            str(c["m0"]),
            long,
            "; ".join(c["not_fusible"]),
        )
    if m["candidates"]:
        out.print(table)
    else:
        out.print(f"No MC2 candidate{suffix}: no MatMul feeds an AllReduce or ReduceScatter, or reads an AllGather.")
    out.print(m["note"], soft_wrap=True)
