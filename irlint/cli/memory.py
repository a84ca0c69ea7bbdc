"""``irlint memory PATH``: the activations each layer keeps for backward, as a table or JSON."""

from __future__ import annotations

import json
import sys

import click

from ..accounts.device import device_fields, stage_numbers
from ..accounts.memory import MEMORY_STAGES, SCOPE_NOTE, MemoryReport, cached_account
from ..diagnostics import UNREADABLE, Diagnostic
from ..model.pipeline import pipeline_stage
from ..reporters.memory_text import render_text
from ..reporters.printable import printable_name, printable_text
from ..runner.discover import DumpFile, case_of
from .budget import budget_of, budget_option
from .depth import config_json, config_option, config_text, layers_option, project_entries, resolve
from .exits import EXIT_ERROR
from .inputs import final_inputs
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


def mark_same_graphs(files: list[DumpFile], entries: list[dict]) -> list[dict]:
    """``entries`` (of ``files``, in order) with ``graph_class``: the index of the first entry whose
    file holds the same graph in the same stage, by the lint's test (the text with the values that
    name the process masked). The text and HTML reports show one table per class; JSON keeps
    every file's entry and none of this."""
    from ..runner.same_graph import same_graphs

    index = {f.path: i for i, f in enumerate(files)}
    same = same_graphs(files, {f.path: [] for f in files})
    out = []
    for i, (f, e) in enumerate(zip(files, entries, strict=True)):
        rep = index.get(same.get(f.path, f.path), i)
        out.append({**e, "graph_class": rep if files[rep].stage.label == f.stage.label else i})
    return out


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
    from ..model.layers import model_path

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
                "model_path": model_path(ir, t.tensor.node)[1],  # added to version 1: the cell path
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
        # added to version 1: the whole device's predicted peak (irlint.accounts.device)
        **device_fields(ir, report),
    }


def chunk_layers(ir, report: MemoryReport, graph: str) -> set[str]:
    """The layers of the kept tensors of the forward half ``graph``."""
    return {
        t.layer for t in report.kept if t.tensor.node in report.per_micro_batch and ir[t.tensor.node]["graph"] == graph
    }


def _layer_order(layer: str) -> tuple:
    return (not layer.isdigit(), int(layer) if layer.isdigit() else 0, layer)


PROJECTED_FIELDS = ("kept_bytes", "tensors", "recompute_saved_bytes")


def project_entry(entry: dict, layers: int, first: int = 0) -> dict | None:
    """``entry``'s per-layer figures projected to ``layers`` decoder layers (``irlint.accounts.projection``);
    None when the file has no decoder layer."""
    from ..accounts.projection import project

    found = project(entry["layers"], PROJECTED_FIELDS, layers, first)
    if found is not None:
        found["totals"]["total_kept_bytes"] = found["totals"]["kept_bytes"]
    return found


@click.command("memory")
@click.argument("paths", nargs=-1, required=True)
@format_option
@output_option
@account_color_option
@account_quiet_option
@top_option("How many of the largest kept tensors to list per file.")
@layers_option
@config_option
@budget_option
@follow_links_option
def memory_cmd(paths, fmt, output, top, layers, config, max_device_memory, follow_links, color, quiet):
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

    Not counted as activations: parameters and graph inputs, optimizer state, gradients,
    constants, the backward pass's own workspace, and tensors computed from weights and constants
    only (e.g. fp16 casts of weights; their total is shown apart, and a pipeline stage holds them
    once per micro batch in flight).

    The device peak adds the rest of the device: parameters, optimizer states, accumulation
    buffers, constants, the weight copies and activations of the micro batches in flight, and the
    temporaries alive at the peak (a walk over the execution order), against --max-device-memory
    or the config's context.max_device_memory when given.
    """
    budget = budget_of(max_device_memory, config)
    depth = resolve(layers, config)
    chosen, problems = final_inputs(paths, output, follow_links, MEMORY_STAGES)
    entries: list[dict] = []
    cases: list[str] = []
    statuses: list[dict] = []
    read: list[DumpFile] = []
    assigned: list[int | None] = []
    for f, ir in read_finals(chosen, problems, statuses):
        # the shared account: the recompute rules price their findings from the same one
        entries.append(file_entry(f, ir, cached_account(ir), top, findings_at_stake(f, ir, problems)))
        cases.append(case_of(f))
        read.append(f)
        assigned.append(pipeline_stage(ir))
    note = project_entries(depth, entries, cases, project_entry)
    for e, stage in zip(entries, stage_numbers(entries, cases, assigned)):
        e["pipeline_stage"] = stage
    if fmt == "json":
        text = (
            json.dumps(
                {
                    "version": JSON_VERSION,
                    "counted": SCOPE_NOTE,
                    "files": json_files(statuses, entries),
                    **config_json(depth, note),
                    **({"max_device_memory_bytes": budget} if budget else {}),
                },
                indent=1,
            )
            + "\n"
        )
    elif fmt == "html":
        from ..reporters.html import render_memory

        text = render_memory(mark_same_graphs(read, entries), problems, SCOPE_NOTE, budget)
    else:
        from ..reporters.printable import printable_data

        shown = printable_data(mark_same_graphs(read, entries))
        text = (
            render_text(
                shown,
                width=text_width(output),
                color=text_color(color, output),
                quiet=quiet,
                cases=[printable_name(c) for c in cases],
                budget=budget,
            )
            if entries
            else ""
        )
    if fmt == "text" and entries:
        text += config_text(depth, note)
    emit(text, output)
    for d in problems:
        click.echo(printable_text(f"{printable_name(d.file)}:{d.line}: {d.kind}: {d.message}"), err=True)
    sys.exit(EXIT_ERROR if problems else 0)
