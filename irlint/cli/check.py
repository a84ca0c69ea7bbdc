"""``irlint check PATH...`` (also ``irlint PATH...``): lint dumps and report the findings."""

from __future__ import annotations

import sys

import click

from .. import rule as rule_module
from ..findings import FAILING_SEVERITIES
from ..reporters import FORMATS, RenderContext, render, write_output
from ..reporters.printable import printable_text
from ..runner.baseline import BaselineError, hidden_counts, new_findings, read_baseline, write_baseline
from ..runner.config import Config, ConfigError, check_selectors, shown
from ..runner.discover import STDIN, Discovery, InputError, discover_inputs, forget_buffers, read_stdin
from ..runner.engine import lint_files
from ..runner.plan import why_nothing_checked
from .budget import budget_of, budget_option
from .exits import EXIT_CLEAN, EXIT_CODES_HELP, EXIT_ERROR, EXIT_FINDINGS, fail
from .options import (
    Command,
    apply_options,
    check_option_selectors,
    config_file_option,
    debug_option,
    extend_select_option,
    follow_links_option,
    ignore_option,
    load_config_for,
    no_cache_option,
    output_option,
    split_values,
)
from .outputs import check_targets, prepare_output, text_color
from .terminal import on_terminal

PROGRESS_MIN_BYTES = 50 * 1024 * 1024  # about a second of reading; smaller runs need no bar


@click.command("check", cls=Command, epilog=EXIT_CODES_HELP)
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "--output-format",
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="text",
    show_default=True,
    help="Output format (--format is the same option).",
)
@output_option
@config_file_option("PATH")
@click.option(
    "--select",
    multiple=True,
    callback=split_values,
    help="Only these rules (code, code prefix or name; "
    "comma-separated or repeated). Replaces the whole selection of the config file.",
)
@extend_select_option
@ignore_option
@click.option("--statistics", is_flag=True, help="Show counts per rule instead of the findings (text, concise).")
@click.option("-q", "--quiet", is_flag=True, help="Only the findings: no summary, no progress.")
@click.option("--all-stages", is_flag=True, default=None, help="Read every stage file, not only those each rule needs.")
@click.option(
    "--show-files",
    is_flag=True,
    help="List the files that would be read, their stage and rules, and why; lint nothing.",
)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=0),
    default=None,
    help="Files read in parallel (0: one per core; never more than the cores or the files).",
)
@no_cache_option
@click.option(
    "--no-dedup",
    is_flag=True,
    help="Read every file, even one that holds the same graph as another "
    "(another rank's, a repeated stage's) apart from lines naming the process.",
)
@click.option(
    "--cache-dir",
    type=click.Path(file_okay=False),
    help="Cache folder (default: cache-dir of the config, $IRLINT_CACHE_DIR, or the user cache folder).",
)
@click.option(
    "--rule-timeout",
    type=click.FloatRange(min=0),
    default=None,
    help="Seconds one rule may run on one file before it is stopped (IR011); 0: no limit. [default: 300]",
)
@click.option(
    "--no-group",
    is_flag=True,
    help="One finding per occurrence (per layer, stage file, recomputed copy), not one per root cause.",
)
@click.option("--stdin-filename", help="The name to report standard input (PATH -) under; its stage is read from it.")
@click.option(
    "--color",
    type=click.Choice(["auto", "always", "never"]),
    default="auto",
    show_default=True,
    help="Colour the text report (auto: on a terminal, unless NO_COLOR; FORCE_COLOR forces it).",
)
@click.option(
    "--baseline",
    "baseline_file",
    type=click.Path(dir_okay=False),
    help="Report only findings not recorded in this baseline file.",
)
@click.option(
    "--write-baseline",
    "write_baseline_file",
    type=click.Path(dir_okay=False),
    help="Record the current findings in this file (they are then accepted: exit 0).",
)
@click.option("-e", "--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@budget_option
@follow_links_option
@debug_option
def check_cmd(
    paths,
    fmt,
    output,
    config_file,
    select,
    extend_select,
    ignore,
    statistics,
    quiet,
    all_stages,
    show_files,
    jobs,
    no_cache,
    no_dedup,
    cache_dir,
    rule_timeout,
    no_group,
    stdin_filename,
    color,
    baseline_file,
    write_baseline_file,
    exit_zero,
    max_device_memory,
    follow_links,
):
    """Lint PATHS: .ir dump files, or folders searched recursively (rank_N/ subfolders included).

    A cache of lint results (per dump file, keyed by its content, the rules and irlint's version)
    makes a second run on unchanged dumps instant; see --no-cache and --cache-dir.
    """
    try:
        forget_buffers()
        if STDIN in paths:
            read_stdin()
        config, source = load_config_for(config_file, paths[0] if paths[0] != STDIN else None)
        known = rule_module.load_rules(plugins=config.plugins)
        check_selectors(config, known, config_file or (shown(source) if source else None))
        check_option_selectors(known, select=select, extend_select=extend_select, ignore=ignore)
        apply_options(config, select, extend_select, ignore, all_stages, jobs, no_cache, cache_dir, rule_timeout)
        if max_device_memory is not None:
            config.max_device_memory = budget_of(max_device_memory, None)
        if no_dedup:
            config.dedup = False
        if no_group:
            config.group = False
        if output is None and sys.stdout is None and not show_files:  # `irlint ... >&-`
            raise InputError("standard output is closed: the report cannot be written (use -o FILE)")
        accepted = read_baseline(baseline_file) if baseline_file else None
        # before the lint, not after it: a bad path must not cost a whole run
        targets, reads = {"output": output, "write_baseline": write_baseline_file}, {"baseline": baseline_file}
        check_targets(targets, reads=reads)
        for target in targets.values():
            if target:
                prepare_output(target)
        found = discover_inputs(list(paths), stdin_filename, follow_links)
        check_targets(targets, found.files, paths, reads)
        if show_files:
            from .show_files import show_files as show

            something = show(found, config)
            sys.exit(EXIT_ERROR if found.empty or found.diagnostics or not something else EXIT_CLEAN)
        # a path that cannot be used is an input problem of the report: the other paths are linted
        _note_jobs(config, found, quiet)
        report = _lint_with_progress(found, config, show=not quiet)
    except (ConfigError, InputError, BaselineError) as exc:
        fail(str(exc))
    for note in report.notes:
        click.echo(f"irlint: {printable_text(note)}", err=True)
    total = len(report.findings)
    if write_baseline_file:
        try:
            n = write_baseline(write_baseline_file, report.findings)
        except BaselineError as exc:
            fail(str(exc))
        if not quiet and fmt != "text":  # the text summary says it
            click.echo(f"irlint: wrote {n} finding{'s' if n != 1 else ''} to baseline {write_baseline_file}", err=True)
        report.findings = []
    hidden = (total - len(report.findings), 0)
    if accepted is not None and not write_baseline_file:
        before, report.findings = report.findings, new_findings(report.findings, accepted)
        hidden = hidden_counts(before, report.findings)
    ctx = RenderContext(
        rules=known,
        quiet=quiet,
        statistics=statistics,
        baselined=hidden[0],
        baselined_occurrences=hidden[1],
        baseline_written=write_baseline_file or None,
    )
    ctx.sources.streams = {f.display: (f.path, f.compression) for f in found.files}
    if output is None and on_terminal(sys.stdout):
        import shutil

        ctx.width = shutil.get_terminal_size((120, 24)).columns
    # else (a file or a pipe): full lines, so a scope can be copied into a suppression whole
    ctx.color = text_color(color, output)
    text = render(report, fmt, ctx)
    if fmt == "github" and not quiet:
        from ..reporters.github import limit_text

        limit = limit_text(report)
        if limit:
            click.echo(f"irlint: warning: {limit}", err=True)
    if output is None:
        click.echo(text, nl=False, color=ctx.color)  # click would strip the colours off a pipe
    else:
        try:
            write_output(output, text)
        except OSError as exc:
            fail(f"{output}: cannot write: {exc.strerror or exc}")
    nothing = why_nothing_checked(report.rules, report.files, found, config)
    if nothing:
        click.echo(f"irlint: nothing checked: {nothing}", err=True)
        sys.exit(EXIT_ERROR)
    if report.diagnostics:
        # bad input (truncated, junk, invalid UTF-8, over-long lines) must not pass as clean
        sys.exit(EXIT_ERROR)
    # like eslint: info findings are reported but do not fail the run
    failing = any(f.severity in FAILING_SEVERITIES for f in report.findings)
    sys.exit(EXIT_FINDINGS if failing and not exit_zero else EXIT_CLEAN)


def _note_jobs(config: Config, found: Discovery, quiet: bool) -> None:
    """Say so when --jobs asks for more processes than can help."""
    from ..runner.engine import capped_jobs

    if config.jobs <= 1 or quiet:
        return
    cores = capped_jobs(config.jobs)
    if config.jobs > cores:
        click.echo(
            f"irlint: jobs = {config.jobs} capped to {cores} (one process per core; never more than the files to read)",
            err=True,
        )


def _lint_with_progress(found: Discovery, config: Config, show: bool):
    """Lint; a progress bar on stderr for large inputs on a terminal."""
    if not (show and on_terminal(sys.stderr)):
        return lint_files(found.files, found.diagnostics, config)
    from ..runner.engine import active_rules, plan

    todo = plan(found.files, active_rules(config), config.all_stages)
    sizes = {f.display: f.size for f in found.files if f.path in todo}
    total = sum(sizes.values())
    if total < PROGRESS_MIN_BYTES:
        return lint_files(found.files, found.diagnostics, config)
    from pathlib import Path

    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(
        TextColumn("irlint"),
        BarColumn(),
        DownloadColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.description}"),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task(f"{len(sizes)} file{'s' if len(sizes) != 1 else ''}", total=total)

        def advance(display: str, size: int) -> None:
            bar.update(task, advance=size, description=Path(display).name)

        config.progress = advance
        return lint_files(found.files, found.diagnostics, config)
