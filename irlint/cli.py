"""The ``irlint`` command line."""
from __future__ import annotations

import json
import sys

import click

from . import __version__
from .config import Config
from .discover import InputError, discover
from .engine import lint
from .reader import read_ir

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class _DefaultGroup(click.Group):
    """``irlint PATH...`` lints; ``irlint inspect|rules|explain ...`` run subcommands."""

    default_command = "check"

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h", "--version"):
            args = [self.default_command, *args]
        elif not args:
            args = [self.default_command]
        return super().parse_args(ctx, args)


@click.group(cls=_DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="irlint")
def main() -> None:
    """Lint MindSpore IR graph dumps (the graph/ folder written with save_graphs)."""


@main.command("check")
@click.argument("paths", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(["concise", "json"]), default="concise")
@click.option("--all-stages", is_flag=True, help="Read every stage file, not only those each rule needs.")
@click.option("--exit-zero", is_flag=True)
def check(paths, fmt, all_stages, exit_zero):
    """Lint PATHS (dump files or save_graphs folders)."""
    try:
        report = lint(list(paths), Config(all_stages=all_stages))
    except InputError as exc:
        click.echo(f"irlint: {exc}", err=True)
        sys.exit(EXIT_ERROR)
    if fmt == "json":
        click.echo(json.dumps({"version": __version__, "findings": [f.to_dict() for f in report.findings],
                               "diagnostics": [d.to_dict() for d in report.diagnostics],
                               "summary": {"files": len(report.files), "findings": len(report.findings),
                                           "by_rule": report.by_rule()}}, indent=2, ensure_ascii=False))
    else:
        for f in report.findings:
            click.echo(f"{f.file}:{f.line}:{f.column}: {f.code} [{f.severity}] {f.message}")
        for d in report.diagnostics:
            click.echo(f"{d.file}:{d.line}:1: {d.code} [error] {d.message}")
    sys.exit(EXIT_CLEAN if exit_zero or not report.findings else EXIT_FINDINGS)


@main.command("inspect")
@click.argument("paths", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
def inspect_cmd(paths, fmt):
    """Show what irlint reads in each dump: subgraphs, cnodes, parameters, edges, diagnostics."""
    try:
        files, diags = discover(list(paths))
    except InputError as exc:
        click.echo(f"irlint: {exc}", err=True)
        sys.exit(EXIT_ERROR)
    rows = []
    for f in files:
        ir = read_ir(f.path, f.display)
        rows.append(inspect_row(ir))
    if fmt == "json":
        for row in rows:
            click.echo(json.dumps(row, ensure_ascii=False))
    else:
        from rich.console import Console
        from rich.table import Table

        table = Table(title="irlint inspect")
        for col in ("file", "stage", "subgraphs", "cnodes", "params", "edges", "diagnostics"):
            table.add_column(col, justify="right" if col not in ("file", "stage") else "left")
        for row in rows:
            table.add_row(row["file"], row["stage"], str(row["subgraphs"]), str(row["cnodes"]), str(row["params"]),
                          str(row["edges"]), str(len(row["diagnostics"])))
        Console().print(table)
        for row in rows:
            for d in row["diagnostics"]:
                click.echo(f"{d['file']}:{d['line']}: {d['kind']}: {d['message']}")
    bad = any(r["diagnostics"] for r in rows) or diags
    sys.exit(EXIT_ERROR if bad else EXIT_CLEAN)


def inspect_row(ir) -> dict:
    return {
        "file": ir.path,
        "stage": ir.stage.label,
        "subgraphs": len(ir.subgraphs),
        "cnodes": ir.cnode_count,
        "params": ir.param_count,
        "edges": ir.graph.number_of_edges(),
        "diagnostics": [d.to_dict() for d in ir.diagnostics],
    }
