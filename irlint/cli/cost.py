"""``irlint cost PATH``: the FLOPs of a step per layer (forward, backward, recomputed copies), what
each recompute key re-spends against the bytes it saves, the step's communication beside them,
MC2 candidates (``--mc2``) and the full-depth projection (``--layers N``), as tables, JSON or HTML."""

from __future__ import annotations

import json
import sys

import click

from ..accounts.compute import COST_STAGES, DIRECTIONS, SCOPE_NOTE, CostAccount, account
from ..reporters.cost_text import render_text
from ..runner.discover import DumpFile, case_of
from .depth import config_json, config_option, config_text, layers_option, project_entries, resolve
from .exits import EXIT_ERROR, fail, read_or_fail
from .inputs import final_inputs
from .memory import json_files, mark_same_graphs, read_finals
from .options import (
    account_color_option,
    account_quiet_option,
    follow_links_option,
    format_option,
    output_option,
    top_option,
)
from .outputs import emit, text_color, text_width

JSON_VERSION = 1
LAYER_FIELDS = (
    "forward_flops",
    "backward_flops",
    "recompute_flops",
    "forward_elementwise_flops",
    "backward_elementwise_flops",
    "recompute_elementwise_flops",
)


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
    from ..model.layers import model_path

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
                "model_path": model_path(ir, o.node)[1],  # added to version 1: the cell path
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


# --- the command ----------------------------------------------------------------------------------


@click.command("cost")
@click.argument("paths", nargs=-1, required=True)
@format_option
@output_option
@account_color_option
@account_quiet_option
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
def cost_cmd(paths, fmt, output, top, mc2, device, layers, config, follow_links, color, quiet):
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
    entries, cases, read = [], [], []
    statuses: list[dict] = []
    for f, ir in read_finals(chosen, problems, statuses):
        read.append(f)
        entry = file_entry(f, ir, account(ir), top)
        if profile is not None:
            entry["mc2"] = mc2_entry(ir, profile)
        entries.append(entry)
        cases.append(case_of(f))
    note = project_entries(depth, entries, cases, project_entry)
    if fmt == "json":
        text = (
            json.dumps(
                {
                    "version": JSON_VERSION,
                    "counted": SCOPE_NOTE,
                    # each file with how it was read (whole, partly: a truncated dump; not), as memory and comm
                    "files": json_files(statuses, entries),
                    **config_json(depth, note),
                },
                indent=1,
                ensure_ascii=False,
            )
            + "\n"
        )
    elif fmt == "html":
        from ..reporters.cost_html import render_cost

        text = render_cost(mark_same_graphs(read, entries), problems, SCOPE_NOTE)
    else:
        text = (
            render_text(
                mark_same_graphs(read, entries),
                width=text_width(output),
                color=text_color(color, output),
                quiet=quiet,
                cases=cases,
            )
            if entries
            else ""
        )
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
