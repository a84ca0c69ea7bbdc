"""``irlint memory PATH``: the activations each layer keeps for backward, as a table or JSON."""

from __future__ import annotations

import json
import sys

import click

from ..accounts.memory import MEMORY_STAGES, SCOPE_NOTE, MemoryReport, cached_account
from ..diagnostics import UNREADABLE, Diagnostic
from ..reporters.account_lines import (
    AT_STAKE_NOTE,
    AT_STAKE_PIPELINE_NOTE,
    memory_headline,
    rule_codes,
)
from ..reporters.printable import printable_name, printable_text
from ..runner.discover import DumpFile, case_of
from ..units import human_bytes
from .depth import config_json, config_option, config_text, layers_option, project_entries, resolve
from .exits import EXIT_ERROR
from .inputs import final_inputs
from .options import follow_links_option, format_option, output_option, top_option
from .outputs import emit
from .tables import add_layer_rows, by_case, files_line, layer_table, plain_console, projection_table, text_of

JSON_VERSION = 1


def read_finals(chosen: list[DumpFile], problems: list[Diagnostic], statuses: list[dict] | None = None):
    """(file, model) of each chosen file whose figures mean something: one that reads as a graph
    dump of a compile that did not fail; what could not be read goes to ``problems``. ``statuses``
    gets, for every chosen file in order, ``read_status`` (for the JSON reports)."""
    from ..runner.engine import read_dump

    for f in chosen:
        try:
            ir = read_dump(f)
        except OSError as exc:
            d = Diagnostic(f.display, 0, UNREADABLE, f"cannot read: {exc.strerror or exc}")
            problems.append(d)
            if statuses is not None:
                statuses.append(read_status(f, None, [d]))
            continue
        problems += ir.diagnostics
        if statuses is not None:
            statuses.append(read_status(f, ir, ir.diagnostics))
        # a file that is no graph dump has only its diagnostic; an analyze_fail.ir's graphs stop
        # before autodiff: nothing in them is kept for a backward pass or communicated
        if ir.nodes and ir.failure is None:
            yield f, ir


def read_status(f: DumpFile, ir, diagnostics: list[Diagnostic]) -> dict:
    """How much of a file the figures of a JSON report count: ``read`` is "whole", "partly" (input
    problems: a truncated dump, skipped lines; what was read is counted) or "not" (not read, not a
    graph dump, a failed compile: the entry has no figures), with the file's diagnostics."""
    from ..diagnostics import NOTE_CODES

    if ir is None or not ir.nodes or ir.failure is not None:
        read = "not"
    elif any(d.code not in NOTE_CODES for d in diagnostics):
        read = "partly"
    else:
        read = "whole"
    return {
        "file": f.display,
        "stage": ir.stage.label if ir is not None else f.stage.label,
        "rank": f.rank,
        "read": read,
        "diagnostics": [d.to_dict() for d in diagnostics],
    }


def json_files(statuses: list[dict], entries: list[dict]) -> list[dict]:
    """Every chosen file for a JSON report: its figures (if counted) with how it was read."""
    counted = iter(entries)
    return [
        status
        if status["read"] == "not"
        else {**next(counted), "read": status["read"], "diagnostics": status["diagnostics"]}
        for status in statuses
    ]


def findings_at_stake(f: DumpFile, ir, problems: list[Diagnostic]) -> list:
    """What the built-in, default-enabled rules that read this same final file (the recompute
    rules: their stages are memory's) find in ``ir`` and price in kept bytes: the findings a
    default lint gives on it, each occurrence once (a grouped finding's bytes are this sum). A rule
    that fails is reported as the lint reports it (IR011), and the account still comes out."""
    from ..rule import load_rules
    from ..runner.config import Config
    from ..runner.sandbox import run_rule

    timeout = Config().rule_timeout
    found = []
    for cls in load_rules(plugins=False):
        if cls.default_enabled and tuple(cls.stages) == MEMORY_STAGES:
            found += [x for x in run_rule(cls(), ir, f.display, problems, timeout) if x.bytes_at_stake]
    return found


def at_stake_by_layer(found: list) -> tuple[dict[str, dict[str, int]], dict[str, int]]:
    """(layer -> rule code -> bytes, rule code -> bytes) of ``found``, by the layer the graph
    resolved for each finding (its printed scope's when unresolved)."""
    from ..accounts.memory import layer_of

    per_layer: dict[str, dict[str, int]] = {}
    totals: dict[str, int] = {}
    for x in sorted(found, key=lambda x: x.code):
        layer = x.layer or layer_of(x.scope)
        row = per_layer.setdefault(layer, {})
        row[x.code] = row.get(x.code, 0) + x.bytes_at_stake
        totals[x.code] = totals.get(x.code, 0) + x.bytes_at_stake
    return per_layer, totals


def file_entry(f: DumpFile, ir, report: MemoryReport, top: int, found: list | None = None) -> dict:
    """One file of the JSON contract (version 1)."""
    per_layer, at_stake = at_stake_by_layer(found or [])
    return {
        "file": f.display,
        "stage": ir.stage.label,
        "rank": f.rank,
        "total_kept_bytes": report.total_kept_bytes,
        # at_stake_bytes (added to version 1): rule code -> the kept bytes its findings are about
        "layers": [
            {
                "layer": r.layer,
                "kept_bytes": r.kept_bytes,
                "tensors": r.tensors,
                "recompute_saved_bytes": r.recompute_saved_bytes,
                "at_stake_bytes": per_layer.get(r.layer, {}),
            }
            for r in report.layers()
        ],
        "at_stake_bytes": at_stake,
        "top": [
            {
                "node": ir[t.tensor.node].get("id", ""),
                "op": ir[t.tensor.node].get("op", ""),
                "shape": list(t.type.shape) if t.type is not None and t.type.shape is not None else None,
                "dtype": t.type.dtype if t.type is not None else None,
                "bytes": t.nbytes,
                "scope": ir[t.tensor.node].get("scope", ""),
                "read_by": [f"{ir[r].get('id', '')} {ir[r].get('op', '')}" for r in t.readers],
                "line": ir[t.tensor.node].get("line", 0),
            }  # added to version 1
            for t in report.top(top)
        ],
        # added to version 1 (the contract is extended, never renamed)
        "weight_copy_bytes": sum(t.nbytes for t in report.weight_copies),
        "unsized": [
            {
                "node": ir[t.tensor.node].get("id", ""),
                "op": ir[t.tensor.node].get("op", ""),
                "line": ir[t.tensor.node].get("line", 0),
                "type": t.type.raw if t.type is not None else None,
            }
            for t in report.unsized
        ],
        # added to version 1: a pipeline stage (lazy_inline forward half called per micro batch);
        # the other figures are per micro batch
        "micro_batches": report.micro_batches,
        "micro_batches_in_flight": report.in_flight,
        "peak_kept_bytes": report.peak_kept_bytes,
        # added to version 1: each forward half (one per interleave chunk) at the stage's peak
        "chunks": [
            {**c, "layers": sorted(chunk_layers(ir, report, c["graph"]), key=_layer_order)} for c in report.chunks
        ],
    }


def chunk_layers(ir, report: MemoryReport, graph: str) -> set[str]:
    """The layers of the kept tensors of the forward half ``graph``."""
    return {
        t.layer for t in report.kept if t.tensor.node in report.per_micro_batch and ir[t.tensor.node]["graph"] == graph
    }


def _layer_order(layer: str) -> tuple:
    return (not layer.isdigit(), int(layer) if layer.isdigit() else 0, layer)


def spans_text(layers: list[str]) -> str:
    """``0–1, outside`` for a chunk's layers."""
    from ..units import spans

    numbers = [int(x) for x in layers if x.isdigit()]
    rest = [x for x in layers if not x.isdigit()]
    return ", ".join([*spans(numbers), *rest])


PROJECTED_FIELDS = ("kept_bytes", "tensors", "recompute_saved_bytes")


def project_entry(entry: dict, layers: int, first: int = 0) -> dict | None:
    """``entry``'s per-layer figures projected to ``layers`` decoder layers (``irlint.accounts.projection``);
    None when the file has no decoder layer."""
    from ..accounts.projection import project

    found = project(entry["layers"], PROJECTED_FIELDS, layers, first)
    if found is not None:
        found["totals"]["total_kept_bytes"] = found["totals"]["kept_bytes"]
    return found


def stake_cells(at_stake: dict[str, int], codes: list[str]) -> list[str]:
    return [human_bytes(at_stake[code]) if at_stake.get(code) else "" for code in codes]


def in_flight(e: dict) -> str:
    chunks = e.get("chunks") or ()
    if len(chunks) > 1:  # interleave: each chunk's count at the stage's peak
        return "× " + " + ".join(str(c["in_flight_at_peak"]) for c in chunks) + f" of {e['micro_batches']}"
    return f"× {e['micro_batches_in_flight']} of {e['micro_batches']}"


def render_text(entries: list[dict], width: int | None = None, cases: list[str] | None = None) -> str:
    """One table per case (``cases[i]`` names the case of ``entries[i]``; default: one case), its
    ranks side by side."""
    out, buffer = plain_console(width)
    by_case(out, entries, cases, _render_case)
    out.print(SCOPE_NOTE, soft_wrap=True)
    if rule_codes(entries):
        out.print(AT_STAKE_NOTE, soft_wrap=True)
        if any(e.get("micro_batches", 1) > 1 for e in entries):
            out.print(AT_STAKE_PIPELINE_NOTE, soft_wrap=True)
    return text_of(buffer)


def _render_case(out, case: str, entries: list[dict]) -> None:
    from rich.table import Table

    if case:
        out.print(f"== {case}", soft_wrap=True)
    out.print(memory_headline(entries), soft_wrap=True)
    ranks = [e["rank"] for e in entries]
    by_rank = None not in ranks and len(set(ranks)) == len(ranks)
    label = [f"rank {e['rank']}" if by_rank else e["file"] for e in entries]
    layers = list(dict.fromkeys(row["layer"] for e in entries for row in e["layers"]))
    many = len(entries) > 1
    codes = rule_codes(entries)
    blank = ("",) * (2 + len(codes))
    table = layer_table(
        "Activations kept for backward, per layer",
        label,
        ("kept bytes", "tensors", "recompute saved", *[f"{code} at stake" for code in codes]),
    )
    add_layer_rows(
        table,
        entries,
        layers,
        lambda row: [
            human_bytes(row["kept_bytes"]),
            str(row["tensors"]),
            human_bytes(row["recompute_saved_bytes"]),
            *stake_cells(row.get("at_stake_bytes", {}), codes),
        ],
    )
    table.add_row(
        "total",
        *[
            c
            for e in entries
            for c in (human_bytes(e["total_kept_bytes"]), "", "", *stake_cells(e.get("at_stake_bytes", {}), codes))
        ],
    )
    if any(e["micro_batches"] > 1 for e in entries):
        table.add_row(
            "in flight",
            *[c for e in entries for c in ((in_flight(e), *blank) if e["micro_batches"] > 1 else ("", *blank))],
        )
        table.add_row("peak", *[c for e in entries for c in (human_bytes(e["peak_kept_bytes"]), *blank)])
    files_line(out, label, entries)
    out.print(table)
    for name, e in zip(label, entries):
        if not e["layers"]:
            out.print(
                f"{e['file']}: no forward tensor is read by a backward op (no backward pass in this "
                f"graph, or a stage before autodiff): nothing is kept for backward.",
                soft_wrap=True,
            )
            continue
        top = Table(title=f"Largest kept tensors{' (' + name + ')' if many else ''}", title_justify="left")
        for col in ("bytes", "node", "op", "dtype", "shape", "read by (backward)", "scope"):
            top.add_column(col, justify="right" if col == "bytes" else "left", overflow="fold")
        for t in e["top"]:
            shape = "(" + ", ".join(map(str, t["shape"])) + ")" if t["shape"] is not None else "?"
            top.add_row(
                human_bytes(t["bytes"]),
                f"{t['node']} (line {t['line']})",
                t["op"],
                t["dtype"] or "?",
                shape,
                ", ".join(t["read_by"][:3]) + (" …" if len(t["read_by"]) > 3 else ""),
                t["scope"],
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
                f"layers {spans_text(c['layers'])}: {c['in_flight_at_peak']} of {e['micro_batches']}"
                for c in e["chunks"]
            )
            out.print(
                f"{name if many else e['file']}: a pipeline stage with interleave: each chunk's forward half runs "
                f"once per micro batch ({e['micro_batches']}); at the stage's peak (the order of the forward and "
                f"backward calls, weighed by what each chunk keeps) these wait for their backward: {held}; the "
                f"layer figures are per micro batch, the peak counts each chunk's tensors that many times.",
                soft_wrap=True,
            )
        elif e["micro_batches"] > 1:
            out.print(
                f"{name if many else e['file']}: a pipeline stage: the forward half runs once per micro batch "
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
                f"parameters, not the batch.",
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


@click.command("memory")
@click.argument("paths", nargs=-1, required=True)
@format_option
@output_option
@top_option("How many of the largest kept tensors to list per file.")
@layers_option
@config_option
@follow_links_option
def memory_cmd(paths, fmt, output, top, layers, config, follow_links):
    """Activation memory kept for the backward pass, per layer, from a dump file or folder.

    For a folder, the final graph of each rank is read (validate, else cse_after_recomputation,
    add_recomputation, graph_build), as the recompute rules choose it. Counted: outputs of forward
    ops that a backward op (or a recomputed copy) reads, directly or through views that share the
    tensor (Reshape, ExpandDims, Squeeze, Depend, TupleGetItem ...), once per tensor; bytes are
    dtype size x local shape from the type line. A tensor backward reads as a recomputed copy is
    not kept: it shows as "recompute saved". Layers come from the `layers-…/N-` scope path, checked
    against the layer of the weights each op's neighbours read (lazy_inline prints most recomputed
    ops as just `Default/...`). In a pipeline stage (lazy_inline forward half called per micro
    batch) the figures are per micro batch; the peak row counts them once per micro batch in flight.

    Not counted: parameters and graph inputs, optimizer state, gradients, constants, the
    backward pass's own workspace, and tensors computed from weights and constants only (e.g.
    fp16 casts of weights; their total is shown apart).
    """
    depth = resolve(layers, config)
    chosen, problems = final_inputs(paths, output, follow_links, MEMORY_STAGES)
    entries: list[dict] = []
    cases: list[str] = []
    statuses: list[dict] = []
    for f, ir in read_finals(chosen, problems, statuses):
        # the shared account: the recompute rules price their findings from the same one
        entries.append(file_entry(f, ir, cached_account(ir), top, findings_at_stake(f, ir, problems)))
        cases.append(case_of(f))
    note = project_entries(depth, entries, cases, project_entry)
    if fmt == "json":
        text = (
            json.dumps(
                {
                    "version": JSON_VERSION,
                    "counted": SCOPE_NOTE,
                    "files": json_files(statuses, entries),
                    **config_json(depth, note),
                },
                indent=1,
            )
            + "\n"
        )
    elif fmt == "html":
        from ..reporters.html import render_memory

        text = render_memory(entries, problems, SCOPE_NOTE)
    else:
        from ..reporters.printable import printable_data

        text = render_text(printable_data(entries), cases=[printable_name(c) for c in cases]) if entries else ""
    if fmt == "text" and entries:
        text += config_text(depth, note)
    emit(text, output)
    for d in problems:
        click.echo(printable_text(f"{printable_name(d.file)}:{d.line}: {d.kind}: {d.message}"), err=True)
    sys.exit(EXIT_ERROR if problems else 0)
