"""``irlint rules``: the rules, their severity and whether they are on, as a table or JSON."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from .. import rule as rule_module
from ..runner.config import ConfigError, load_config
from .exits import EXIT_ERROR, fail
from .options import debug_option
from .terminal import console


@click.command("rules")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option("--config", "config_file", type=click.Path(dir_okay=False))
@debug_option
def rules_cmd(fmt, config_file):
    """List the rules: code, name, severity, whether on by default, summary. Exit 2 when a rule
    plugin could not be loaded (it is named on stderr)."""
    try:
        config, _ = load_config(config_file, starts=[os.getcwd()])
    except ConfigError as exc:
        fail(str(exc))
    rows: list[dict[str, Any]] = []
    for cls in rule_module.load_rules(plugins=config.plugins):
        rows.append(
            {
                "code": cls.code,
                "name": cls.name,
                "severity": config.severity_for(cls.code, cls.name, cls.severity),
                "default": bool(cls.default_enabled),
                "enabled": config.rule_enabled(cls.code, cls.name, cls.default_enabled),
                "summary": cls.summary,
                "stages": list(cls.stages),
            }
        )
    if fmt == "json":
        import json

        click.echo(json.dumps(rows, indent=2, ensure_ascii=False))
    else:
        from ..reporters.tables import list_table

        table = list_table("irlint rules", ("code", "name", "severity", "default", "summary"))
        for r in rows:
            table.add_row(r["code"], r["name"], r["severity"], "on" if r["default"] else "off", r["summary"])
        console().print(table)
    problems = rule_module.plugin_problems(config.plugins) if config.plugins else []
    for problem in problems:
        click.echo(f"irlint: IR012 {problem}", err=True)
    if problems:
        sys.exit(EXIT_ERROR)
