"""``irlint check --show-files``: what a lint would read, each file's stage and rules, and why; nothing linted."""

from __future__ import annotations

import os

import click

from ..reporters.printable import printable_name, printable_text
from ..runner.config import Config
from ..runner.discover import Discovery
from ..runner.plan import why_nothing_checked


def show_files(found: Discovery, config: Config) -> bool:
    """What a lint would read: each file with its stage, the rules that read it, and why. False when
    nothing would be checked (said why)."""
    from ..runner.engine import active_rules, plan, same_graphs

    rules = active_rules(config)
    todo = plan(found.files, rules, config.all_stages)
    same = same_graphs(found.files, todo) if config.dedup else {}
    by_path = {f.path: f for f in found.files}
    for f in found.files:
        stage = f.stage.label if f.placed else "stage unknown from the name"
        compressed = f", {f.compression}-compressed" if f.compression else ""
        if f.path not in todo:
            readers = [r.code for r in rules if f.stage.name in r.stages or f.stage.label in r.stages]
            later = [
                g
                for g in found.files
                if g.folder == f.folder and g.path in todo and any(r.code in readers for r in todo[g.path])
            ]
            if readers and later:
                why = (
                    f"{', '.join(readers)} read {', '.join(g.display for g in later)} instead (a stage where "
                    f"their evidence is final, of the same compile)"
                )
            else:
                why = "no selected rule reads this stage"
            click.echo(printable_name(f"skip  {f.display}  ({stage}{compressed}): {why}"))
            continue
        names = ", ".join(r.code for r in todo[f.path])
        if f.explicit:
            why = "named directly: every rule"
        elif not f.placed:
            why = "its name does not say its stage: every rule"
        else:
            why = "the stage where these rules' evidence is final"
        read_as = f"; same graph as {by_path[same[f.path]].display}: its findings" if f.path in same else ""
        click.echo(printable_name(f"read  {f.display}  ({stage}{compressed}): {names}; {why}{read_as}"))
    if same:
        _show_shared(found.files, todo, same)
    for link, target in found.links:
        click.echo(printable_name(f"link  {link} -> {target}  (followed: a folder outside the named one)"))
    for d in found.diagnostics:
        click.echo(f"not read  {printable_name(d.file)}: {d.code} {printable_text(d.message)}")
    nothing = why_nothing_checked(rules, list(todo), found, config)
    if nothing:
        click.echo(f"irlint: nothing would be checked: {nothing}", err=True)
    return not nothing


def _show_shared(files, todo: dict, same: dict[str, str]) -> None:
    """How many graphs a lint reads, and which ranks share each graph that several files hold."""
    from ..reporters import ranks_text
    from ..runner.discover import rank_folder

    checked = [f for f in files if f.path in todo]
    graphs = len(checked) - len(same)
    click.echo(
        f"{len(checked)} files, {graphs} distinct graph{'s' if graphs != 1 else ''} read "
        "(files that differ only in lines naming the process are read once)"
    )
    members: dict[str, list] = {}
    for f in checked:
        members.setdefault(same.get(f.path, f.path), []).append(f)
    shown = {f.path: f.display for f in checked}
    for read, group in members.items():
        if len(group) < 2:
            continue
        ranks = tuple(sorted({f.rank for f in group if f.rank is not None}))
        where = f", {ranks_text(ranks)}" if ranks else ""
        click.echo(printable_name(f"same graph  {shown[read]}: {len(group)} files{where}"))
    # the same stage file of several ranks holding different graphs: expected with sub-groups
    # (group names, rank lists, slice offsets), else a rank-dependent code path
    by_stage: dict[tuple, dict[str, list[int]]] = {}
    for f in checked:
        if f.rank is not None:
            key = (rank_folder(f), os.path.basename(f.path))
            by_stage.setdefault(key, {}).setdefault(same.get(f.path, f.path), []).append(f.rank)
    for (_, name), ranks_of in by_stage.items():
        if len(ranks_of) > 1 and sum(map(len, ranks_of.values())) > len(ranks_of):
            split = "; ".join(ranks_text(tuple(r)) for r in sorted(ranks_of.values()))
            click.echo(f"differs by rank  {name}: {len(ranks_of)} graphs ({split})")
