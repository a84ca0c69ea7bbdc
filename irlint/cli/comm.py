"""``irlint comm PATH``: what each layer's collectives receive per rank and step, split into the
parallel scheme and redistribution waste, as tables or JSON."""

from __future__ import annotations

import json
import sys

import click

from ..accounts.comm import COMM_STAGES, SCOPE_NOTE, account, as_dict
from ..reporters.comm_text import render_text
from ..reporters.printable import printable_name, printable_text
from ..runner.discover import DumpFile
from .exits import EXIT_ERROR
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


def file_entry(f: DumpFile, ir) -> dict:
    """One file of the JSON contract (version 1)."""
    return {"file": f.display, "stage": ir.stage.label, "rank": f.rank, **as_dict(ir, account(ir))}


@click.command("comm")
@click.argument("paths", nargs=-1, required=True)
@format_option
@top_option("How many of the largest collectives to list per file (JSON lists them all).")
@output_option
@account_color_option
@account_quiet_option
@follow_links_option
def comm_cmd(paths, fmt, top, output, follow_links, color, quiet):
    """Communication per rank and step, per layer and kind, from a dump file or folder.

    For a folder, the final graph of each rank is read (validate, else optimize,
    cse_after_recomputation, add_recomputation), as the redistribution rules choose it. Counted:
    the bytes each collective receives per rank and execution, from the local shapes on its
    type line (ring AllReduce 2(n-1)/n of its input, AllGather output minus input,
    ReduceScatter input minus output, AlltoAll (n-1)/n of its output, Receive its output),
    forward and backward, by the layer of its `layers-…/N-` scope. Waste is what the
    redistribution findings (PC001, PC002) name; scheme is the rest.

    Not counted: bytes sent, communication the backend adds after the front-end graph, and
    repeated micro-batches (a graph is counted once).
    """
    chosen, problems = final_inputs(paths, output, follow_links, COMM_STAGES)
    statuses: list[dict] = []
    read = list(read_finals(chosen, problems, statuses))
    entries = [file_entry(f, ir) for f, ir in read]
    if fmt == "json":
        emit(
            json.dumps(
                {"version": JSON_VERSION, "counted": SCOPE_NOTE, "files": json_files(statuses, entries)},
                indent=1,
                ensure_ascii=False,
            )
            + "\n",
            output,
        )
    elif fmt == "html":
        from ..reporters.comm_html import render_comm

        emit(render_comm(mark_same_graphs([f for f, _ in read], entries), problems, SCOPE_NOTE, top), output)
    elif entries:
        from ..reporters.printable import printable_data

        shown = printable_data(mark_same_graphs([f for f, _ in read], entries))
        emit(
            render_text(shown, width=text_width(output), color=text_color(color, output), quiet=quiet, top=top), output
        )
    for d in problems:
        click.echo(printable_text(f"{printable_name(d.file)}:{d.line}: {d.kind}: {d.message}"), err=True)
    sys.exit(EXIT_ERROR if problems else 0)
