"""The text report of ``irlint memory``: per case and distinct graph, the activations each layer keeps for backward,
the largest kept tensors, the pipeline in-flight and peak figures, a projection to more layers."""

from __future__ import annotations

from ..accounts.memory import SCOPE_NOTE
from ..units import human_bytes, layer_spans
from .account_lines import AT_STAKE_NOTE, AT_STAKE_PIPELINE_NOTE, memory_headline, rule_codes
from .device_lines import device_lines
from .tables import (
    add_layer_rows,
    by_case,
    graph_groups,
    group_label,
    groups_line,
    layer_table,
    list_table,
    plain_console,
    projection_table,
    text_of,
)


def stake_cells(at_stake: dict[str, int], codes: list[str]) -> list[str]:
    return [human_bytes(at_stake[code]) if at_stake.get(code) else "" for code in codes]


def in_flight(e: dict) -> str:
    chunks = e.get("chunks") or ()
    if len(chunks) > 1:  # interleave: each chunk's count at the stage's peak
        return "× " + " + ".join(str(c["in_flight_at_peak"]) for c in chunks) + f" of {e['micro_batches']}"
    return f"× {e['micro_batches_in_flight']} of {e['micro_batches']}"


def render_text(
    entries: list[dict],
    width: int | None = None,
    cases: list[str] | None = None,
    color: bool = False,
    quiet: bool = False,
    budget: int | None = None,
) -> str:
    """One table per case (``cases[i]`` names the case of ``entries[i]``; default: one case) and
    distinct graph, the device peaks first (``budget``: max_device_memory in bytes, if known);
    ``quiet``: without the notes on what is counted."""
    out, buffer = plain_console(width, color)
    device_lines(out, entries, budget)
    by_case(out, entries, cases, _render_case)
    if quiet:
        return text_of(buffer, width)
    out.print(SCOPE_NOTE, soft_wrap=True)
    if rule_codes(entries):
        out.print(AT_STAKE_NOTE, soft_wrap=True)
        if any(e.get("micro_batches", 1) > 1 for e in entries):
            out.print(AT_STAKE_PIPELINE_NOTE, soft_wrap=True)
    return text_of(buffer, width)


def _render_case(out, case: str, entries: list[dict]) -> None:
    if case:
        out.print(f"== {case}", soft_wrap=True)
    out.print(memory_headline(entries), soft_wrap=True)
    groups = graph_groups(entries)  # one set of tables per distinct graph, never a column per rank
    many = len(groups) > 1
    codes = rule_codes(entries)
    blank = ("",) * (2 + len(codes))
    groups_line(out, groups)
    for g in groups:
        e, name = g[0], group_label(g)
        table = layer_table(
            f"Activations kept for backward, per layer{' (' + name + ')' if many else ''}",
            [name],
            ("kept bytes", "tensors", "recompute saved", *[f"{code} at stake" for code in codes]),
        )
        add_layer_rows(
            table,
            [e],
            [row["layer"] for row in e["layers"]],
            lambda row: [
                human_bytes(row["kept_bytes"]),
                str(row["tensors"]),
                human_bytes(row["recompute_saved_bytes"]),
                *stake_cells(row.get("at_stake_bytes", {}), codes),
            ],
        )
        table.add_row(
            "total", human_bytes(e["total_kept_bytes"]), "", "", *stake_cells(e.get("at_stake_bytes", {}), codes)
        )
        if e["micro_batches"] > 1:
            table.add_row("in flight", in_flight(e), *blank)
            table.add_row("peak", human_bytes(e["peak_kept_bytes"]), *blank)
        out.print(table)
        _render_entry(out, e, name if many else "")


def _render_entry(out, e: dict, name: str) -> None:
    """The tables and notes under one graph's layer table (``name``: its ranks, when several)."""
    many = bool(name)
    if not e["layers"]:
        out.print(
            f"{e['file']}: no forward tensor is read by a backward op (no backward pass in this "
            f"graph, or a stage before autodiff): nothing is kept for backward.",
            soft_wrap=True,
        )
        return
    top = list_table(
        f"Largest kept tensors{' (' + name + ')' if many else ''}",
        ("bytes", "node", "op", "dtype", "shape", "read by (backward)", "model path"),
        right=("bytes",),
    )
    for t in e["top"]:
        shape = "(" + ", ".join(map(str, t["shape"])) + ")" if t["shape"] is not None else "?"
        top.add_row(
            human_bytes(t["bytes"]),
            f"{t['node']} (line {t['line']})",
            t["op"],
            t["dtype"] or "?",
            shape,
            ", ".join(t["read_by"][:3]) + (" …" if len(t["read_by"]) > 3 else ""),
            t.get("model_path") or t["scope"],
        )
    out.print(top)
    for u in e["unsized"]:
        out.print(
            f"{e['file']}:{u['line']}: kept tensor of unknown size, counted as 0 bytes: "
            f"{u['node']} {u['op']} {u['type'] or '(no type line)'}",
            soft_wrap=True,
        )
    if e["micro_batches"] > 1 and len(e.get("chunks") or ()) > 1:
        held = "; ".join(
            f"layers {layer_spans(c['layers'])}: {c['in_flight_at_peak']} of {e['micro_batches']}" for c in e["chunks"]
        )
        out.print(
            f"{name or e['file']}: a pipeline stage with interleave: each chunk's forward half runs "
            f"once per micro batch ({e['micro_batches']}); at the stage's peak (the order of the forward and "
            f"backward calls, weighed by what each chunk keeps) these wait for their backward: {held}; the "
            f"layer figures are per micro batch, the peak counts each chunk's tensors that many times.",
            soft_wrap=True,
        )
    elif e["micro_batches"] > 1:
        out.print(
            f"{name or e['file']}: a pipeline stage: the forward half runs once per micro batch "
            f"({e['micro_batches']}), and up to {e['micro_batches_in_flight']} of them wait for their "
            f"backward at once (the order of the forward and backward calls); the layer figures are per "
            f"micro batch, the peak counts the forward half's tensors once per micro batch in flight.",
            soft_wrap=True,
        )
    if e.get("projected"):
        _render_projection(out, e["projected"], f" ({name})" if many else "")
    if e["weight_copy_bytes"]:
        out.print(
            f"Not counted: {human_bytes(e['weight_copy_bytes'])} that backward reads but that are computed "
            f"from weights and constants only (e.g. fp16 casts of weights): they scale with the "
            f"parameters, and a pipeline stage makes them again for each micro batch in flight "
            f"(the device peak counts them so).",
            soft_wrap=True,
        )


def _render_projection(out, p: dict, suffix: str) -> None:

    table = projection_table(p, suffix, ("kept bytes", "recompute saved"))
    for row in p["blocks"]:
        table.add_row(
            row["layers"],
            row["from_layer"],
            human_bytes(row["kept_bytes"]) + " per layer",
            human_bytes(row["recompute_saved_bytes"]) + " per layer",
        )
    table.add_row(
        "outside", "(once)", human_bytes(p["once"]["kept_bytes"]), human_bytes(p["once"]["recompute_saved_bytes"])
    )
    table.add_row(
        "total (projected)",
        "",
        human_bytes(p["totals"]["kept_bytes"]),
        human_bytes(p["totals"]["recompute_saved_bytes"]),
    )
    out.print(table)
    out.print(
        "Projected figures repeat the dumped decoder layers in order to the given depth; rows outside the "
        "layers (embedding, head, loss) count once.",
        soft_wrap=True,
    )
