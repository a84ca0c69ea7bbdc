"""``irlint explain RULE``: a rule's documentation, or an input problem's (IR0xx)."""

from __future__ import annotations

import click

from .. import rule as rule_module
from .exits import fail
from .options import debug_option


@click.command("explain")
@click.argument("rule")
@debug_option
def explain_cmd(rule):
    """Explain RULE (a code such as RC001 or a name): what it finds, why, how to fix, an example."""
    for cls in rule_module.load_rules():
        if rule.upper() == cls.code.upper() or rule == cls.name:
            state = "on" if cls.default_enabled else "off"
            click.echo(f"{cls.code} {cls.name} ({cls.severity}, {state} by default)")
            click.echo(f"{cls.summary}\n" if cls.summary else "")
            click.echo(cls.doc().replace("``", "`"))  # reStructuredText literals read better as `x` in a terminal
            stages = ", ".join(cls.stages) if cls.stages else "every dump file"
            click.echo(f"\nReads stages (best first): {stages}")
            return
    from ..diagnostics import EXPLANATIONS, KINDS

    code = rule.upper()
    if code in EXPLANATIONS:
        click.echo(f"{code} {KINDS[code]} (input problem: reported with file and line; exit code 2)\n")
        click.echo(EXPLANATIONS[code])
        return
    fail(f"unknown rule {rule!r}; `irlint rules` lists them")
