"""``irlint cost PATH``: the FLOPs of a step per layer (forward, backward, recomputed copies), what
each recompute key re-spends against the bytes it saves, the step's communication beside them,
MC2 candidates (``--mc2``) and the full-depth projection (``--layers N``), as tables, JSON or HTML."""

from __future__ import annotations

import json
import sys

import click

from ..accounts.compute import COST_STAGES, DIRECTIONS, SCOPE_NOTE, CostAccount, account
from ..runner.discover import DumpFile, case_of
from ..units import human_bytes
from ..units import human_flops as flops
from .depth import config_json, config_option, config_text, layers_option, project_entries, resolve
from .exits import EXIT_ERROR, fail, read_or_fail
from .inputs import final_inputs
from .memory import read_finals
from .options import follow_links_option, format_option, output_option, top_option
from .outputs import emit
from .tables import (
    add_layer_rows,
    by_case,
    files_line,
    layer_order,
    layer_table,
    plain_console,
    projection_table,
    text_of,
)

JSON_VERSION = 1
LAYER_FIELDS = (
    "forward_flops",
    "backward_flops",
    "recompute_flops",
    "forward_elementwise_flops",
    "backward_elementwise_flops",
    "recompute_elementwise_flops",
)
PROJECTED_NOTE = (
    "Projected figures (marked projected) repeat the dumped decoder layers in order to the given depth; "
    "rows outside the layers (embedding, head, loss) count once."
)


def share(part: int, whole: int) -> str:
    if not whole or not part:
        return "0%"
    pct = 100 * part / whole
    return f"{pct:.1f}%" if pct >= 0.1 else "<0.1%"


def communication(ir) -> dict | None:
    """The step's communication as ``irlint comm`` counts it (received per rank), without the PC rules'
    waste split; None for a graph without collectives."""
    from ..accounts.comm import account as comm_account

    acc = comm_account(ir, findings=[])
    if not acc.collectives:
        return None
    return {
        "received_bytes": acc.received_bytes,
        "forward_bytes": sum(c.received_bytes or 0 for c in acc.collectives if not c.backward),
        "backward_bytes": sum(c.received_bytes or 0 for c in acc.collectives if c.backward),
        "collectives": len(acc.collectives),
    }


def file_entry(f: DumpFile, ir, acc: CostAccount, top: int = 10) -> dict:
    """One file of the JSON contract (version 1)."""

    def node(k: int | None) -> str | None:
        return None if k is None else ir[k].get("id", "")

    step = acc.step_flops
    matrix = sorted((o for o in acc.ops if o.matrix), key=lambda o: (-(o.flops or 0), ir[o.node].get("line", 0)))
    return {
        "file": f.display,
        "stage": ir.stage.label,
        "rank": f.rank,
        "micro_batches": acc.micro_batches,
        "step_flops": step,
        **{f"{d}_flops": acc.total(d) for d in DIRECTIONS},
        "recompute_share": acc.recompute_share,
        "elementwise_flops": {d: acc.total(d, matrix=False) for d in DIRECTIONS},
        "layers": [
            {
                "layer": r.layer,
                **{name: getattr(r, name) for name in LAYER_FIELDS},
                "step_flops": r.step_flops,
                "by_kind": r.by_kind,
            }
            for r in acc.layers()
        ],
        "recompute": [
            {
                "key": r.key,
                "layers": r.layers,
                "copies": r.copies,
                "flops": r.flops,
                "matrix_flops": r.matrix_flops,
                "saved_bytes": r.saved_bytes,
                "bytes_per_gflop": r.bytes_per_gflop,
                "step_share": r.matrix_flops / step if step else 0.0,
            }
            for r in acc.recompute
        ],
        "top": [
            {
                "node": node(o.node),
                "graph": ir[o.node].get("graph", ""),
                "op": ir[o.node].get("op", ""),
                "kind": o.kind,
                "direction": o.direction,
                "layer": o.layer,
                "flops": o.flops,
                "inputs": [str(t) for t in (ir[o.node].get("in_types") or ()) if t is not None and t.dtype],
                "copy_of": node(o.original) if o.direction == "recompute" else None,
                "scope": ir[o.node].get("scope", ""),
                "line": ir[o.node].get("line", 0),
            }
            for o in matrix[:top]
        ],
        "unsized": [
            {"node": node(o.node), "op": ir[o.node].get("op", ""), "line": ir[o.node].get("line", 0)}
            for o in acc.unsized
        ],
        "communication": communication(ir),
    }


def project_entry(entry: dict, layers: int, first: int = 0) -> dict | None:
    from ..accounts.projection import project

    found = project(entry["layers"], LAYER_FIELDS, layers, first)
    if found is None:
        return None
    t = found["totals"]
    step = t["forward_flops"] + t["backward_flops"] + t["recompute_flops"]
    found["totals"].update(step_flops=step, recompute_share=t["recompute_flops"] / step if step else 0.0)
    for row in found["blocks"]:
        row["step_flops"] = row["forward_flops"] + row["backward_flops"] + row["recompute_flops"]
    return found


def mc2_entry(ir, profile) -> dict:
    from ..accounts import mc2

    state = mc2.fusion_state(ir)
    return {
        "device": profile.name,
        "fusion": state,
        "note": mc2.FUSION_NOTE[state],
        "candidates": mc2.as_dict(ir, mc2.candidates(ir, profile)),
    }


# --- text -------------------------------------------------------------------------------------


def render_text(entries: list[dict], width: int | None = None, cases: list[str] | None = None) -> str:
    out, buffer = plain_console(width)
    by_case(out, entries, cases, _render_case)
    out.print(SCOPE_NOTE, soft_wrap=True)
    if any(e.get("projected") for e in entries):
        out.print(PROJECTED_NOTE, soft_wrap=True)
    return text_of(buffer)


def _render_case(out, case: str, entries: list[dict]) -> None:

    if case:
        out.print(f"== {case}", soft_wrap=True)
    ranks = [e["rank"] for e in entries]
    by_rank = None not in ranks and len(set(ranks)) == len(ranks)
    label = [f"rank {e['rank']}" if by_rank else e["file"] for e in entries]
    many = len(entries) > 1
    files_line(out, label, entries)
    layers = layer_order(entries)
    table = layer_table(
        "FLOPs per rank and step, per layer", label, ("forward", "backward", "recompute", "element-wise")
    )
    # each direction's matrix FLOPs, then the element-wise ones of all directions
    add_layer_rows(
        table,
        entries,
        layers,
        lambda row: [
            *[flops(row[f"{d}_flops"]) for d in DIRECTIONS],
            flops(sum(row[f"{d}_elementwise_flops"] for d in DIRECTIONS)),
        ],
    )
    table.add_row(
        "total",
        *[
            c
            for e in entries
            for c in (
                flops(e["forward_flops"]),
                flops(e["backward_flops"]),
                flops(e["recompute_flops"]),
                flops(sum(e["elementwise_flops"].values())),
            )
        ],
    )
    out.print(table)
    for name, e in zip(label, entries):
        who = f"{name}: " if many else ""
        out.print(
            f"{who}step {flops(e['step_flops'])} in matrix ops; recompute re-spends "
            f"{flops(e['recompute_flops'])} ({share(e['recompute_flops'], e['step_flops'])} of the step); "
            f"element-wise {flops(sum(e['elementwise_flops'].values()))}",
            soft_wrap=True,
        )
        c = e["communication"]
        if c is not None:
            out.print(
                f"{who}communication {human_bytes(c['received_bytes'])} received per rank and step "
                f"(forward {human_bytes(c['forward_bytes'])}, backward {human_bytes(c['backward_bytes'])}; "
                f"{c['collectives']} collectives, as irlint comm counts them)",
                soft_wrap=True,
            )
        if e["micro_batches"] > 1:
            out.print(
                f"{who}a pipeline stage: the forward half runs once per micro batch ({e['micro_batches']}); "
                f"the figures count its graph once.",
                soft_wrap=True,
            )
        for u in e["unsized"]:
            out.print(
                f"{e['file']}:{u['line']}: op of unknown shape, counted as 0 FLOPs: {u['node']} {u['op']}",
                soft_wrap=True,
            )
    for name, e in zip(label, entries):
        if e["recompute"]:
            _recompute_table(out, e, f" ({name})" if many else "")
        if e.get("projected"):
            _projection_table(out, e["projected"], f" ({name})" if many else "")
        if e.get("mc2") is not None:
            _mc2_table(out, e["mc2"], f" ({name})" if many else "")


def _recompute_table(out, e: dict, suffix: str) -> None:
    from rich.table import Table

    table = Table(title=f"What each recompute buys: bytes saved against FLOPs re-spent{suffix}", title_justify="left")
    for col in (
        "key or cell",
        "layers",
        "copies",
        "matrix FLOPs",
        "element-wise",
        "share of step",
        "bytes saved",
        "bytes per GFLOP",
    ):
        table.add_column(col, justify="left" if col in ("key or cell", "layers") else "right", overflow="fold")
    for r in e["recompute"]:
        per = r["bytes_per_gflop"]
        table.add_row(
            r["key"],
            _layers_text(r["layers"]),
            str(r["copies"]),
            flops(r["matrix_flops"]),
            flops(r["flops"] - r["matrix_flops"]),
            share(r["matrix_flops"], e["step_flops"]),
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
        f"Projected: recompute re-spends {share(t['recompute_flops'], t['step_flops'])} of the step "
        f"at {p['layers']} layers.",
        soft_wrap=True,
    )


def _mc2_table(out, m: dict, suffix: str) -> None:
    from rich.table import Table

    table = Table(title=f"MC2 candidates under {m['device']}{suffix}", title_justify="left")
    for col in (
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
    ):
        table.add_column(
            col,
            justify="right" if col in ("M", "K", "N", "bytes", "FLOPs", "K at balance", "m0", "long") else "left",
            overflow="fold",
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


def _layers_text(layers: list[str]) -> str:
    numeric = sorted(int(x) for x in layers if x.isdigit())
    parts = []
    i = 0
    while i < len(numeric):
        j = i
        while j + 1 < len(numeric) and numeric[j + 1] == numeric[j] + 1:
            j += 1
        parts.append(str(numeric[i]) if i == j else f"{numeric[i]}-{numeric[j]}")
        i = j + 1
    parts += [x for x in layers if not x.isdigit()]
    return ", ".join(parts)


# --- the command ----------------------------------------------------------------------------------


@click.command("cost")
@click.argument("paths", nargs=-1, required=True)
@format_option
@output_option
@top_option("How many of the costliest matrix ops to list per file (JSON and HTML).")
@click.option("--mc2", "mc2", is_flag=True, help="List the MatMul + collective pairs MC2 kernels could fuse.")
@click.option(
    "--device",
    "device",
    type=click.Path(dir_okay=False),
    help="A device profile (TOML) for --mc2 instead of the default Atlas A2 one.",
)
@layers_option
@config_option
@follow_links_option
def cost_cmd(paths, fmt, output, top, mc2, device, layers, config, follow_links):
    """FLOPs of a step per layer, from a dump file or folder: forward, backward, recomputed copies.

    For a folder, the final graph of each rank is read (validate, else cse_after_recomputation,
    add_recomputation, graph_build), as the memory account chooses it. Counted per rank and
    execution of the graph, from the local shapes on the type lines: MatMul and BatchMatMul
    2·M·K·N, flash attention 4·B·N·Sq·Skv·D (its backward twice that), convolutions
    2·out·(kernel elements); element-wise ops and reductions one per element, apart. Each
    recompute key or cell is priced: the FLOPs its copies re-spend against the bytes the memory
    account says they save. With collectives, the step's communication (irlint comm) is shown
    beside the FLOPs.

    Not counted: data movement, communication time, the optimizer, what the backend fuses after
    the front-end graph, repeated micro-batches (a graph is counted once).
    """
    depth = resolve(layers, config)
    profile = _profile(device) if mc2 or device else None  # a device file the run cannot use: before anything
    chosen, problems = final_inputs(paths, output, follow_links, COST_STAGES)
    entries, cases = [], []
    for f, ir in read_finals(chosen, problems):
        entry = file_entry(f, ir, account(ir), top)
        if profile is not None:
            entry["mc2"] = mc2_entry(ir, profile)
        entries.append(entry)
        cases.append(case_of(f))
    note = project_entries(depth, entries, cases, project_entry)
    if fmt == "json":
        text = (
            json.dumps(
                {"version": JSON_VERSION, "counted": SCOPE_NOTE, "files": entries, **config_json(depth, note)},
                indent=1,
                ensure_ascii=False,
            )
            + "\n"
        )
    elif fmt == "html":
        from ..reporters.cost_html import render_cost

        text = render_cost(entries, problems, SCOPE_NOTE)
    else:
        text = render_text(entries, cases=cases) if entries else ""
    if fmt == "text" and entries:
        text += config_text(depth, note)
    emit(text, output)
    for d in problems:
        click.echo(f"{d.file}:{d.line}: {d.kind}: {d.message}", err=True)
    sys.exit(EXIT_ERROR if problems else 0)


def _profile(path: str | None):
    from ..accounts.mc2 import ProfileError, load_profile

    text = read_or_fail(path, "the device profile") if path is not None else None
    try:
        return load_profile(text)
    except ProfileError as exc:
        fail(f"{path or 'default device profile'}: {exc}")
