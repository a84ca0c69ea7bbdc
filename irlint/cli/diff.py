"""``irlint diff BEFORE AFTER``: findings fixed / new / unchanged, kept bytes per layer, and the ops
whose recompute state or ``in_strategy`` changed, as text, JSON or HTML."""

from __future__ import annotations

import json
import sys

import click

from ..findings import FAILING_SEVERITIES
from ..reporters.printable import printable_name, printable_text
from ..runner.diff import CompileChoiceError, Diff, pick_compile, rank_groups, rank_label, unmatched_label
from ..units import human_bytes, human_flops, percent_change
from .exits import EXIT_CLEAN, EXIT_ERROR, fail
from .options import (
    config_file_option,
    debug_option,
    extend_select_option,
    follow_links_option,
    format_option,
    ignore_option,
    no_cache_option,
    output_option,
    select_option,
)
from .outputs import emit

EXIT_NEW = 1  # a finding the change brought


def _discover_side(path: str, follow_links: bool = False):
    from ..runner.discover import discover_inputs

    found = discover_inputs([path], follow_links=follow_links)
    for raw, why in found.unusable.items():
        raise _Unusable(f"{raw}: {why}")
    if found.empty:
        raw, why = next(iter(found.empty.items()))
        raise _Unusable(f"{raw}: no graph IR dumps (*.ir written by save_graphs) found in this folder: {why}")
    return found


def _lint_side(found, config):
    from ..runner import engine

    return engine.lint_files(found.files, found.diagnostics, config)


class _Unusable(Exception):
    pass


@click.command("diff")
@click.argument("before")
@click.argument("after")
@format_option
@output_option
@config_file_option("BEFORE")
@select_option
@extend_select_option
@ignore_option
@no_cache_option
@click.option("--cache-dir", type=click.Path(file_okay=False), help="Cache folder.")
@click.option(
    "--compile",
    "which_compile",
    type=int,
    default=-1,
    show_default=True,
    help="Which compile of a folder holding several to compare, on each side: 1 the first, -1 the newest.",
)
@follow_links_option
@debug_option
def diff_cmd(
    before,
    after,
    fmt,
    output,
    config_file,
    select,
    extend_select,
    ignore,
    no_cache,
    cache_dir,
    which_compile,
    follow_links,
):
    """Compare two dumps of one model, BEFORE and AFTER a change of configuration: two .ir files,
    or two save_graphs folders (rank_N folders paired by rank, stage files by stage name).

    Findings are fixed, new or unchanged by fingerprint (as a baseline matches them); a finding
    of one side is only "fixed?" or "new?" where the other could not read its rule's final stage
    file (cut short, missing) or its own file was cut short, and the header says so. A folder holding several compiles is compared by
    one of them on both sides (the newest; --compile). The final
    graph of each rank (validate first, as `irlint memory` reads it) is compared node by node:
    nodes are matched by unique_id where the two dumps number them alike, else by scope path, op,
    instance name and position among equals (never by %N); unmatched nodes are counted. Shown:
    activation bytes kept for backward per layer before -> after, and the ops whose recompute
    state (requested, applied, kept) or in_strategy changed.

    Exit codes: 0 no new finding, 1 AFTER has a warning or error finding BEFORE did not,
    2 unusable input (or input problems in either dump).
    """
    from .. import rule as rule_module
    from ..runner.config import ConfigError, check_selectors, shown
    from ..runner.diff import diff_reports
    from ..runner.discover import InputError, forget_buffers
    from .options import apply_options, check_option_selectors, load_config_for
    from .outputs import check_targets, prepare_output

    try:
        forget_buffers()
        config, source = load_config_for(config_file, before)
        known = rule_module.load_rules(plugins=config.plugins)
        check_selectors(config, known, config_file or (shown(source) if source else None))
        check_option_selectors(known, select=select, extend_select=extend_select, ignore=ignore)
        apply_options(config, select, extend_select, ignore, None, None, no_cache, cache_dir)
        check_targets({"output": output})
        if output:
            prepare_output(output)
        found_b, found_a = _discover_side(before, follow_links), _discover_side(after, follow_links)
        check_targets({"output": output}, found_b.files + found_a.files, [before, after])
        # one compile per folder on each side: findings, nodes and memory from the same graphs
        compiles = []
        for found, side in ((found_b, "before"), (found_a, "after")):
            found.files, chosen = pick_compile(found.files, which_compile)
            compiles += [{"side": side, **c} for c in chosen]
        report_b, report_a = _lint_side(found_b, config), _lint_side(found_a, config)
    except (ConfigError, InputError, _Unusable, CompileChoiceError) as exc:
        fail(str(exc))
    result = diff_reports(report_b, report_a, found_b.files, found_a.files, [before], [after], compiles)
    if not result.ranks:
        for d in result.diagnostics:
            click.echo(f"{printable_name(d.file)}:{max(d.line, 1)}:1: {d.code} {printable_text(d.message)}", err=True)
        fail(
            "no final-stage graph (validate, cse_after_recomputation, add_recomputation, graph_build) "
            "to compare: " + ("; ".join(result.notes) or f"{before} and {after} hold no pair of dumps")
        )
    if fmt == "json":
        text = json.dumps(result.to_dict(), indent=1, ensure_ascii=False) + "\n"
    elif fmt == "html":
        from ..reporters.html import render_diff

        text = render_diff(result)
    else:
        text = render_text(result)
    emit(text, output)
    for d in result.diagnostics:
        click.echo(f"{printable_name(d.file)}:{max(d.line, 1)}:1: {d.code} {printable_text(d.message)}", err=True)
    sys.exit(exit_code(result))


def exit_code(result: Diff) -> int:
    if result.diagnostics:
        return EXIT_ERROR  # a damaged dump must not pass as "nothing new"
    # a finding that may be new fails the gate as a new one does
    return EXIT_NEW if any(f.severity in FAILING_SEVERITIES for f in result.new + result.unverified_new) else EXIT_CLEAN


# --- text ----------------------------------------------------------------------------------------


def _state(s: dict) -> str:
    req = s["requested"] or "not requested"
    kept = f"kept ({human_bytes(s['kept_bytes'])})" if s["kept"] else "not kept"
    return f"{req}, {'applied' if s['applied'] else 'not applied'}, {kept}"


def _change_table(w, label: str, rows: list[dict], extra: tuple | None = None) -> None:
    """Rows of ``label``, before, after and change (and ``extra``: a column's title and its text)."""
    width = max([len(label)] + [len(row[label]) for row in rows])
    w(
        f"    {label:<{width}}  {'before':>10}  {'after':>10}  {'change':>10}  {'%':>6}"
        + (f"  {extra[0]:>7}" if extra else "")
    )
    for row in rows:
        w(
            f"    {row[label]:<{width}}  {human_bytes(row['before']):>10}  {human_bytes(row['after']):>10}  "
            f"{_signed(row['after'] - row['before']):>10}  {percent_change(row['before'], row['after']):>6}"
            + (f"  {extra[1](row):>7}" if extra else "")
        )


def _signed(n: int) -> str:
    return ("+" if n > 0 else "") + human_bytes(n) if n else "0"


def _change(before: int, after: int) -> str:
    """``1.21 GiB -> 1.00 GiB (-212 MiB, -17%)``: bytes for a person, and the change in percent."""
    return f"{human_bytes(before)} -> {human_bytes(after)} ({_signed(after - before)}, {percent_change(before, after)})"


def render_text(result: Diff) -> str:
    out: list[str] = []
    w = out.append
    w(f"irlint diff {' '.join(result.before)} -> {' '.join(result.after)}")
    for c in result.compiles:
        which = "the newest" if c["compared"] == c["compiles"] else f"compile {c['compared']}"
        files = c["first"] if c["first"] == c["last"] else f"{c['first']} … {c['last']}"  # a one-file compile: its file
        w(
            f"Compared in {c['side'].upper()} {c['folder']}: {which} of {c['compiles']} compiles ({files}; "
            f"--compile N picks another)"
        )
    for i in result.incomplete:
        where = f"rank {i['rank']}: " if i["rank"] is not None else ""
        w(
            f"{i['side'].upper()} incomplete: {where}{', '.join(i['rules'])}: {i['why']}"
            + ("; a BEFORE finding it does not show is not called fixed" if i["side"] == "after" else "")
        )
    unsure = "".join(
        f", {len(fs)} {label}"
        for label, fs in (("fixed?", result.unverified_fixed), ("new?", result.unverified_new))
        if fs
    )
    w(
        f"Findings: {len(result.fixed)} fixed, {len(result.new)} new, {len(result.unchanged)} unchanged{unsure} "
        f"({len(result.files_before)} -> {len(result.files_after)} files checked)"
    )
    for label, findings in (
        ("fixed", result.fixed),
        ("new", result.new),
        ("unchanged", result.unchanged),
        ("fixed?", result.unverified_fixed),
        ("new?", result.unverified_new),
    ):
        for f in findings:
            where = f"{f.file}:{f.line}"
            w(f"  {label:<9} {f.code} {f.severity:<7} {where}")
            w(f"            {f.headline}")
    for members, r in rank_groups(result.ranks):
        label = rank_label(members)
        w("")
        w(
            f"{label + ': ' if label else ''}{r.before.display} ({r.before.stage.label}) -> "
            f"{r.after.display} ({r.after.stage.label})"
            + (f" and {len(members) - 1} more ranks alike" if len(members) > 1 else "")
        )
        st = r.stages
        extra = "".join(
            f"; only {side}: {', '.join(st[key])}"
            for side, key in (("before", "before_only"), ("after", "after_only"))
            if st[key]
        )
        w(f"  stage files paired by name: {st['paired']}{extra}")
        n = r.nodes
        how = (
            f", {n['matched_by_unique_id']:,} by unique_id"
            if n["unique_ids_stable"]
            else " (unique_id renumbered: by scope, op, instance name and position)"
        )
        w(f"  nodes: {n['matched']:,} matched{how}; {n['before_only']:,} only before, {n['after_only']:,} only after")
        for side in ("before", "after"):
            listed = n[f"{side}_only_nodes"]
            if listed:
                more = n[f"{side}_only"] - len(listed)
                w(
                    f"    only {side}: "
                    + ", ".join(_unmatched_text(x) for x in listed)
                    + (f", … {more} more" if more > 0 else "")
                )
        m = r.memory
        w(f"  activations kept for backward: {_change(m['before_total'], m['after_total'])}")
        if (m["before_peak"], m["after_peak"]) != (m["before_total"], m["after_total"]):
            w("  at the pipeline stage's peak (micro batches in flight): " + _change(m["before_peak"], m["after_peak"]))
        _change_table(w, "layer", m["layers"])
        fc = r.compute
        if fc:
            fl = human_flops
            step_b, step_a = fc["before_step_flops"], fc["after_step_flops"]
            w(
                f"  matrix FLOPs per step: {fl(step_b)} -> {fl(step_a)} ("
                + (
                    f"{'+' if step_a > step_b else ''}{fl(step_a - step_b)}, {percent_change(step_b, step_a)}"
                    if step_a != step_b
                    else "0"
                )
                + f"); recompute re-spends {fl(fc['before_recompute_flops'])} -> {fl(fc['after_recompute_flops'])} "
                f"({100 * fc['before_recompute_share']:.1f}% -> {100 * fc['after_recompute_share']:.1f}% of the step), "
                f"element-wise {fl(fc['before_recompute_elementwise_flops'])} -> {fl(fc['after_recompute_elementwise_flops'])}"
            )
        c = r.communication
        if c and c["kinds"]:  # a single-device graph has no collective
            w(
                f"  communication received per rank and step: {_change(c['before_total'], c['after_total'])}; "
                f"redistribution waste {human_bytes(c['waste_before'])} -> {human_bytes(c['waste_after'])}"
            )
            _change_table(w, "kind", c["kinds"], ("ops", lambda k: f"{k['ops_before']}->{k['ops_after']}"))
            if c.get("recompute_keys"):
                w(
                    f"  communication recompute runs again in backward: "
                    f"{_change(c['recompute_before'], c['recompute_after'])}"
                )
                _change_table(w, "key", c["recompute_keys"], ("ops", lambda k: f"{k['ops_before']}->{k['ops_after']}"))
        for title, changes, shown in (
            ("recompute state changed (requested, applied, kept)", r.recompute, _state),
            ("in_strategy changed", r.strategies, lambda v: v or "none"),
        ):
            if changes:
                w(f"  {title}:")
            for c in changes:
                w(f"    {c['op']} {c['instance']} line {c['before_line']} -> {c['line']}  {c['scope']}")
                w(f"      {shown(c['before'])} -> {shown(c['after'])}")
    for note in result.notes:
        w(f"note: {note}")
    return "\n".join(out) + "\n"


def _unmatched_text(x: dict) -> str:
    label = unmatched_label(x)
    return f"{x['op']} line {x['line']}" + (f" ({label})" if label else "")
