"""``irlint fix CONFIG.yaml DUMP...``: lint the dumps, and apply the run's fix plan to a MindFormers
YAML config (the recompute keys); strategy changes are printed with the model line, never written
into Python."""

from __future__ import annotations

import difflib
import os
import stat
import sys
import tempfile

import click

from .exits import EXIT_CLEAN, fail
from .options import config_file_option, debug_option, ignore_option, no_cache_option, select_option

EXIT_LEFT = 1  # findings the plan leaves, or --diff with a change


@click.command("fix")
@click.argument("config_yaml", metavar="CONFIG.yaml")
@click.argument("dumps", nargs=-1, required=True, metavar="DUMP...")
@click.option("--diff", "show_diff", is_flag=True, help="Print the change as a unified diff and write nothing.")
@config_file_option("the first DUMP")
@select_option
@ignore_option
@no_cache_option
@debug_option
def fix_cmd(config_yaml, dumps, show_diff, config_file, select, ignore, no_cache):
    """Apply the fix plan of DUMP... (as a lint of them gives it) to CONFIG.yaml, a MindFormers
    config: the select_recompute keys the findings need are added to recompute_config (list,
    dict or per-stage form; a key one of your patterns already matches is not added again;
    per-stage counts are raised where the dump shows a pipeline). Your keys, comments, order
    and quoting are kept, and no other line changes. The file is replaced atomically (a temporary
    file in its folder, renamed over it, its mode kept); never through a symbolic link, never when
    it does not parse. Config keys the plan names (a model option, parallel.enable_alltoall)
    are set where the config has them. Strategy and Layout changes are printed with the model
    file:line, as is every other fix the plan holds but no YAML can (by hand); a key to take out is
    named as your config writes it.

    Exit codes: 0 nothing left to do by hand (with --diff: no change), 1 a change was shown
    (--diff) or something is left (strategy or Layout changes, ops no key can tag, fixes by hand), 2 unusable input
    (nothing written).
    """
    from ..fixplan import fix_plan
    from ..mfyaml import YamlError, apply_plan
    from ..runner.config import ConfigError
    from ..runner.discover import InputError

    text = _read_config(config_yaml, write=not show_diff)
    try:
        report, inputs = _lint(dumps, config_file, select, ignore, no_cache)
    except (ConfigError, InputError) as exc:
        fail(str(exc))
    if _same_file(config_yaml, inputs):
        fail(f"{config_yaml}: is one of the dumps of this run, not a MindFormers config")
    if report.diagnostics:
        for d in report.diagnostics:
            click.echo(f"{d.file}:{max(d.line, 1)}:1: {d.code} {d.message}", err=True)
        fail("some of the dumps could not be read: no fix is applied from a partial lint")
    plan = fix_plan(report.findings)
    try:
        edit = apply_plan(text, plan["recompute"])
        new_text, settings, by_hand = _apply_config(edit.text, plan.get("config") or [])
    except YamlError as exc:
        fail(f"{config_yaml}: {exc}")
    edit = edit._replace(text=new_text)
    changed = edit.text != text
    if show_diff:
        if changed:
            click.echo(
                "".join(
                    difflib.unified_diff(
                        text.splitlines(keepends=True),
                        edit.text.splitlines(keepends=True),
                        fromfile=config_yaml,
                        tofile=config_yaml,
                    )
                ),
                nl=False,
            )
    elif changed:
        _replace(config_yaml, edit.text)
    _say(config_yaml, edit, plan, changed, show_diff)
    for line in settings:
        click.echo(f"{config_yaml}: {'would set' if show_diff else 'set'} {line}", err=True)
    for line in by_hand:
        click.echo(f"{config_yaml}: {line}", err=True)
    left = bool(
        plan["strategies"]
        or plan["layouts"]
        or plan["by_hand"]
        or plan["recompute"]["no_key"]
        or edit.notes
        and not edit.added
        and not edit.raised
        and plan["recompute"]["select_recompute"]
    ) or bool(by_hand)
    sys.exit(EXIT_LEFT if left or (show_diff and changed) else EXIT_CLEAN)


def _apply_config(text: str, changes: list[dict]) -> tuple[str, list[str], list[str]]:
    """The plan's config changes: a model option (use_rope_slice) set where the config has it; the
    rest printed for the user (runner_config.batch_size changes the global batch: the user decides
    how to keep it). (new text, what was set, what is left to do by hand)."""
    from ..fixplan import yaml_value
    from ..mfyaml import set_option

    done, by_hand = [], []
    for c in changes:
        want = f"{c['key']}: {yaml_value(c['value'])}"
        if not c["written_by_fix"]:
            by_hand.append(f"not written, set it yourself: {want} ({c['why']}; {c['note']})")
            continue
        new, said = set_option(text, c["key"], c["value"])
        if new != text:
            done.append(said)
            text = new
        elif not said.endswith("already"):
            by_hand.append(f"not written: {said}")
    return text, done, by_hand


def _read_config(path: str, write: bool) -> str:
    if os.path.islink(path):
        if write:
            fail(
                f"{path}: is a symbolic link; irlint fix replaces only a regular file it is given "
                f"(give the file the link points to: {os.path.realpath(path)})"
            )
    if not os.path.exists(path):
        fail(f"{path}: no such file")
    if not os.path.isfile(path):
        fail(f"{path}: is not a regular file")
    if path.endswith((".ir", ".ir.gz", ".ir.bz2", ".ir.xz")):
        fail(
            f"{path}: is a graph dump, not a MindFormers config; the config comes first: irlint fix CONFIG.yaml DUMP..."
        )
    if write:
        folder = os.path.dirname(os.path.abspath(path))
        if not os.access(path, os.W_OK):
            fail(f"{path}: cannot write: permission denied (the file is read-only)")
        if not os.access(folder, os.W_OK | os.X_OK):
            fail(f"{path}: cannot replace it: its folder {folder} is not writable")
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        fail(f"{path}: cannot read: {exc.strerror or exc}")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        fail(f"{path}: is not UTF-8 text")


def _lint(dumps, config_file, select, ignore, no_cache):
    from .. import rule as rule_module
    from ..runner.config import check_selectors, shown
    from ..runner.discover import discover_inputs, forget_buffers
    from ..runner.engine import lint_files
    from .options import apply_options, check_option_selectors, load_config_for

    forget_buffers()
    config, source = load_config_for(config_file, dumps[0])
    known = rule_module.load_rules(plugins=config.plugins)
    check_selectors(config, known, config_file or (shown(source) if source else None))
    check_option_selectors(known, select=select, extend_select=(), ignore=ignore)
    apply_options(config, select, (), ignore, None, None, no_cache, None)
    found = discover_inputs(list(dumps))
    if found.empty:
        raw, why = next(iter(found.empty.items()))
        from ..runner.discover import InputError

        raise InputError(f"{raw}: no graph IR dumps (*.ir written by save_graphs) found: {why}")
    return lint_files(found.files, found.diagnostics, config), [f.path for f in found.files]


def _same_file(path: str, inputs: list[str]) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return False
    for p in inputs:
        try:
            other = os.stat(p)
        except OSError:
            continue
        if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
            return True
    return False


def _replace(path: str, text: str) -> None:
    """Write ``text`` to a temporary file in ``path``'s folder and rename it over ``path``: a reader
    sees the old file or the new one, never half of one; the mode is kept."""
    folder = os.path.dirname(os.path.abspath(path))
    mode = stat.S_IMODE(os.stat(path).st_mode)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        fail(f"{path}: cannot replace it: {exc.strerror or exc}")


def _say(path: str, edit, plan: dict, changed: bool, show_diff: bool) -> None:
    from ..fixplan import model_line
    from ..mfyaml import keys_to_drop

    verb = "would add" if show_diff else "added"
    if edit.added:
        click.echo(f"{path}: {verb} to select_recompute: " + ", ".join(f"'{k}'" for k in edit.added), err=True)
    for r in edit.raised:
        click.echo(f"{path}: {'would raise' if show_diff else 'raised'} per-stage counts {r}", err=True)
    for c in edit.covered:
        click.echo(f"{path}: already covered: {c}", err=True)
    for n in edit.notes:
        click.echo(f"{path}: note: {n}", err=True)
    if not changed and not plan["recompute"]["select_recompute"]:
        click.echo(f"{path}: no recompute key to add", err=True)
    for op in plan["recompute"]["no_key"]:
        click.echo(
            f"{op['source']}: no select_recompute key can be derived for {op['node']} {op['op']} "
            f"({op['file']}): recompute it in the model code",
            err=True,
        )
    for s in plan["strategies"]:
        click.echo(
            f"{model_line(s)}: {s['shard']}   # {s['node']} {s['op']} ({s['scope']}): not written, change it in the model code",
            err=True,
        )
    for row in plan["layouts"]:
        click.echo(
            f"{model_line(row)}: {row['change']}   # {row['code']}: not written, change it in the model code", err=True
        )
    for row in plan["by_hand"]:
        fix, why = row["fix"], ""
        for key in row.get("drop_select_recompute") or ():
            mine = keys_to_drop(key, edit.user_keys)
            if mine and mine != [key]:  # the dump prints the op under another name than the user's key
                fix = "select_recompute - " + " or ".join(f"'{k}'" for k in mine)
                why = f" ({'your key' if len(mine) == 1 else 'one of your keys'} that tags it; the dump names the op '{key}')"
        click.echo(
            f"{model_line(row)}: {fix}   # {row['code']} {row['node']} {row['op']}{why}: not written, yours to do",
            err=True,
        )
