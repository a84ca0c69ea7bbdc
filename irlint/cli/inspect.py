"""``irlint inspect PATH...``: what irlint reads in each dump (subgraphs, cnodes, parameters, edges, diagnostics)."""

from __future__ import annotations

import sys

import click

from ..reporters.printable import printable_data
from ..runner.discover import STDIN, InputError, discover_inputs, forget_buffers, read_stdin
from .exits import EXIT_CLEAN, EXIT_ERROR, fail
from .options import debug_option, follow_links_option
from .terminal import console


@click.command("inspect")
@click.argument("paths", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@follow_links_option
@debug_option
def inspect_cmd(paths, fmt, follow_links):
    """Show what irlint reads in each dump: subgraphs, cnodes, parameters, edges, diagnostics."""
    try:
        forget_buffers()
        if STDIN in paths:
            read_stdin()
        found = discover_inputs(list(paths), follow_links=follow_links)
    except InputError as exc:
        fail(str(exc))
    from ..runner.engine import read_dump

    rows = []
    for f in found.files:
        try:
            ir = read_dump(f)
        except OSError as exc:  # the reader reports what it meets while reading; this is opening
            from ..diagnostics import UNREADABLE, Diagnostic

            found.diagnostics.append(Diagnostic(f.display, 0, UNREADABLE, f"cannot read: {exc.strerror or exc}"))
            continue
        rows.append(inspect_row(ir))
    # files found but not read are listed too: an unreadable .ir must not vanish from the table
    others = [
        {
            "file": d.file,
            "stage": "",
            "subgraphs": 0,
            "cnodes": 0,
            "params": 0,
            "edges": 0,
            "diagnostics": [d.to_dict()],
        }
        for d in found.diagnostics
    ]
    if fmt == "json":
        import json

        for row in rows + others:
            click.echo(json.dumps(row, ensure_ascii=False))
    else:
        from rich.table import Table

        rows, others = printable_data(rows), printable_data(others)  # shown: escaped
        table = Table(title="irlint inspect", title_justify="left")
        for col in ("file", "stage"):  # on a narrow terminal these fold onto more lines, never cut
            table.add_column(col, overflow="fold")
        for col in ("subgraphs", "cnodes", "params", "edges", "diagnostics"):
            table.add_column(col, justify="right", no_wrap=True)
        for row in rows + others:
            table.add_row(
                row["file"],
                row["stage"] or "(not read)",
                str(row["subgraphs"]),
                str(row["cnodes"]),
                str(row["params"]),
                str(row["edges"]),
                str(len(row["diagnostics"])),
            )
        console().print(table)
        for row in rows + others:
            for d in row["diagnostics"]:
                click.echo(f"{d['file']}:{d['line']}: {d['kind']}: {d['message']}")
            failure = row.get("failure")
            if failure and failure["message"]:
                import textwrap

                click.echo(f"{row['file']}:{failure['line']}: MindSpore's message:")
                click.echo(textwrap.indent(failure["message"], "    ", lambda _: True))
    bad = any(r["diagnostics"] for r in rows) or found.diagnostics
    sys.exit(EXIT_ERROR if bad else EXIT_CLEAN)


def inspect_row(ir) -> dict:
    row = {
        "file": ir.path,
        "stage": ir.stage.label,
        "subgraphs": len(ir.subgraphs),
        "cnodes": ir.cnode_count,
        "params": ir.param_count,
        "edges": ir.edge_count,
        "diagnostics": [d.to_dict() for d in ir.diagnostics],
    }
    if ir.failure is not None:  # an analyze_fail.ir: what MindSpore said, and where evaluation stopped
        nodes = ir.nodes
        row["failure"] = {
            "message": ir.failure.message,
            "line": ir.failure.line,
            "stack": ir.failure.stack_depth,
            "evaluation_stack": [
                {"line": nodes[k]["line"], "graph": nodes[k]["graph"], "node": nodes[k]["id"], "op": nodes[k]["op"]}
                for k in ir.failure.failed_at
            ],
        }
    return row
