"""The ``irlint`` command line: ``irlint [OPTIONS] PATH...`` and the rules/explain/inspect/config/clean commands.

Exit codes: 0 no findings (or only info ones), 1 warning or error findings, 2 usage error, nothing
checked, any input problem (IR0xx), unusable input or internal error, 130 interrupted (Ctrl-C), 143
terminated (SIGTERM).
"""
from __future__ import annotations

import atexit
import os
import signal
import sys
from pathlib import Path

import click

from .. import __version__
from .. import rule as rule_module
from ..findings import FAILING_SEVERITIES
from ..runner.baseline import BaselineError, new_findings, read_baseline, write_baseline
from ..runner.config import Config, ConfigError, check_selectors, load_config, shown, to_toml
from ..runner.discover import STDIN, Discovery, InputError, discover_inputs, forget_buffers, read_stdin
from ..runner.engine import lint_files
from ..reporters import FORMATS, UNLIMITED_WIDTH, RenderContext, render, write_output
from ..reporters.printable import printable_data, printable_name, printable_text
from .outputs import check_targets, prepare_output

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
EXIT_INTERRUPTED = 130               # 128 + SIGINT, as shells report Ctrl-C
EXIT_TERMINATED = 128 + 15           # SIGTERM
PROGRESS_MIN_BYTES = 50 * 1024 * 1024   # about a second of reading; smaller runs need no bar
EXIT_CODES_HELP = ("Exit codes: 0 no findings (or only info ones), 1 findings, 2 usage error, nothing checked, "
                   "any input problem (IR0xx), unusable input or internal error, 130 interrupted (Ctrl-C), "
                   "143 terminated (SIGTERM).")
_debug = False


class _Terminated(BaseException):
    """SIGTERM: unwinds like Ctrl-C, so that worker processes are ended on the way out."""


def _on_sigterm(signum, frame):
    raise _Terminated()


class _DefaultGroup(click.Group):
    """``irlint PATH...`` lints; ``irlint rules|explain|inspect|config|clean ...`` run subcommands. Every
    error ends as a one-line message and exit code 2, never a traceback (``--debug`` shows it)."""

    default_command = "check"
    # name -> (module, command object): imported only when that command is used, never by a lint
    lazy_commands = {"memory": ("irlint.cli.memory", "memory_cmd"), "comm": ("irlint.cli.comm", "comm_cmd"),
                     "diff": ("irlint.cli.diff", "diff_cmd"), "cost": ("irlint.cli.cost", "cost_cmd"),
                     "fix": ("irlint.cli.fix", "fix_cmd")}

    def list_commands(self, ctx):
        return sorted({*self.commands, *self.lazy_commands})

    def get_command(self, ctx, name):
        if name not in self.commands and name in self.lazy_commands:
            from importlib import import_module

            module, attr = self.lazy_commands[name]
            self.add_command(getattr(import_module(module), attr), name)
        return super().get_command(ctx, name)

    def parse_args(self, ctx, args):
        if (args and args[0] not in self.commands and args[0] not in self.lazy_commands
                and args[0] not in ("--help", "-h", "--version", "-V")):
            self._refuse_mistyped_command(ctx, args[0])
            args = [self.default_command, *args]
        elif not args:
            args = [self.default_command]
        return super().parse_args(ctx, args)

    def _refuse_mistyped_command(self, ctx, word: str) -> None:
        """``irlint memroy x``: a first word that names no path but is close to a command is a
        typo of the command, not a dump to lint (exit 2, with the command suggested)."""
        import difflib

        if word.startswith("-") or os.path.exists(word) or word == "-":
            return
        close = difflib.get_close_matches(word, [c for c in self.list_commands(ctx) if c != self.default_command],
                                          n=1, cutoff=0.7)
        if close:
            _fail(f"{word}: no such file or folder, nor a command; did you mean `irlint {close[0]}`?")

    def format_usage(self, ctx, formatter):
        formatter.write_usage(ctx.command_path, "[OPTIONS] PATH...")
        formatter.write_usage(ctx.command_path, "COMMAND [ARGS]...", prefix="   or: ")

    def format_options(self, ctx, formatter):
        super().format_options(ctx, formatter)
        # the lint options live on `check`; list them here too, where a new user looks first
        check_cmd = self.commands[self.default_command]
        with click.Context(check_cmd, info_name=f"{ctx.command_path} {self.default_command}", parent=ctx) as sub:
            rows = [p.get_help_record(sub) for p in check_cmd.get_params(sub)
                    if isinstance(p, click.Option) and p.name != "help"]
        with formatter.section(f"Options of `{ctx.command_path} PATH...` (details: "
                               f"`{ctx.command_path} {self.default_command} --help`)"):
            formatter.write_dl(rows)

    def format_epilog(self, ctx, formatter):
        formatter.write_paragraph()
        formatter.write_text(EXIT_CODES_HELP)

    def invoke(self, ctx):
        global _debug
        _debug = False  # --debug of one run must not outlive it (tests, API users run several)
        _tolerant_output()
        previous = _install_sigterm()
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort, SystemExit):
            raise
        except KeyboardInterrupt:
            click.echo("irlint: interrupted", err=True)
            ctx.exit(EXIT_INTERRUPTED)
        except _Terminated:
            click.echo("irlint: terminated", err=True)
            ctx.exit(EXIT_TERMINATED)
        except BrokenPipeError:  # e.g. `irlint ... | head`
            sys.stderr.close()
            ctx.exit(EXIT_ERROR)
        except ModuleNotFoundError as exc:  # run from a checkout, or an install missing a dependency
            if _debug:
                import traceback

                traceback.print_exc()
            click.echo(f"irlint: the Python package {exc.name!r} is missing: install irlint with its "
                       f"dependencies (`pip install .` in a checkout of irlint)", err=True)
            ctx.exit(EXIT_ERROR)
        except Exception as exc:  # noqa: BLE001 - the last line of defence
            if _debug:
                import traceback

                traceback.print_exc()
            click.echo(f"irlint: internal error: {type(exc).__name__}: {exc}", err=True)
            if not _debug:
                click.echo("irlint: run again with --debug to see the traceback, and please report it", err=True)
            ctx.exit(EXIT_ERROR)
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)


def _tolerant_output() -> None:
    """A character the output's encoding lacks (PYTHONIOENCODING=latin-1, an ASCII locale) is
    written as a backslash escape instead of ending the run."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, OSError):   # closed (None), not a text stream, or unusable
            pass


def _on_terminal(stream) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (ValueError, OSError):   # closed
        return False


def _install_sigterm():
    """SIGTERM ends the run through the same clean-up as Ctrl-C (main thread only: tests and API
    users may call the CLI from another thread)."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, _on_sigterm)


def _set_debug(ctx, param, value):
    global _debug
    _debug = _debug or bool(value)
    return value


debug_option = click.option("--debug", is_flag=True, expose_value=False, callback=_set_debug, is_eager=True,
                            help="Show tracebacks of internal errors.")
follow_links_option = click.option(
    "-L", "--follow-links", is_flag=True,
    help="Follow every link to a folder (as find -L). Without it, a link out of the named folder is followed "
         "only when its target holds graph IR dumps or rank_N/ folders.")


def _split(ctx, param, values) -> list[str] | None:
    """Repeated and comma-separated values: --select RC001,RC002 --select PC. An option given
    with nothing in it (`--select ""`) is a usage error, as in ruff: it must not mean "the defaults"."""
    if not values:
        return []
    out = [v.strip() for value in values for v in value.split(",") if v.strip()]
    if not out:
        raise click.BadParameter("empty rule selector (give a rule code, prefix, name or ALL)")
    return out


def _fail(message: str) -> None:
    click.echo(f"irlint: {message}", err=True)
    sys.exit(EXIT_ERROR)


@click.group(cls=_DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="irlint")
def main() -> None:
    """Lint MindSpore IR graph dumps (the graph/ folder written with save_graphs).

    `irlint PATH...` runs the `check` command on PATH (a .ir file, a compressed .ir.gz/.bz2/.xz, a
    folder, or - for standard input). For a path named like a command (e.g. a folder called `rules`),
    write `irlint check rules`.
    """


@main.command("check", epilog=EXIT_CODES_HELP)
@click.argument("paths", nargs=-1, required=True)
@click.option("--output-format", "--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True,
              help="Output format (--format is the same option).")
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="Write the report to this file instead of standard output (its folder is created).")
@click.option("--config", "config_file", type=click.Path(dir_okay=False),
              help="Use this irlint.toml or pyproject.toml instead of the one found upward from PATH.")
@click.option("--select", multiple=True, callback=_split, help="Only these rules (code, code prefix or name; "
              "comma-separated or repeated). Replaces the whole selection of the config file.")
@click.option("--extend-select", multiple=True, callback=_split, help="Rules to add to the selection.")
@click.option("--ignore", multiple=True, callback=_split, help="Rules to leave out.")
@click.option("--statistics", is_flag=True, help="Show counts per rule instead of the findings (text, concise).")
@click.option("-q", "--quiet", is_flag=True, help="Only the findings: no summary, no progress.")
@click.option("--all-stages", is_flag=True, default=None, help="Read every stage file, not only those each rule needs.")
@click.option("--show-files", is_flag=True,
              help="List the files that would be read, their stage and rules, and why; lint nothing.")
@click.option("-j", "--jobs", type=click.IntRange(min=0), default=None,
              help="Files read in parallel (0: one per core; never more than the cores or the files).")
@click.option("-n", "--no-cache", is_flag=True, help="Do not read or write the cache of lint results.")
@click.option("--no-dedup", is_flag=True, help="Read every file, even one that holds the same graph as another "
              "(another rank's, a repeated stage's) apart from lines naming the process.")
@click.option("--cache-dir", type=click.Path(file_okay=False),
              help="Cache folder (default: cache-dir of the config, $IRLINT_CACHE_DIR, or the user cache folder).")
@click.option("--rule-timeout", type=click.FloatRange(min=0), default=None,
              help="Seconds one rule may run on one file before it is stopped (IR011); 0: no limit. [default: 300]")
@click.option("--no-group", is_flag=True, help="One finding per occurrence (per layer, stage file, recomputed "
              "copy), not one per root cause.")
@click.option("--stdin-filename", help="The name to report standard input (PATH -) under; its stage is read "
              "from it.")
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True,
              help="Colour the text report (auto: on a terminal, unless NO_COLOR; FORCE_COLOR forces it).")
@click.option("--baseline", "baseline_file", type=click.Path(dir_okay=False),
              help="Report only findings not recorded in this baseline file.")
@click.option("--write-baseline", "write_baseline_file", type=click.Path(dir_okay=False),
              help="Record the current findings in this file (they are then accepted: exit 0).")
@click.option("-e", "--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@follow_links_option
@debug_option
def check(paths, fmt, output, config_file, select, extend_select, ignore, statistics, quiet, all_stages, show_files,
          jobs, no_cache, no_dedup, cache_dir, rule_timeout, no_group, stdin_filename, color, baseline_file,
          write_baseline_file, exit_zero, follow_links):
    """Lint PATHS: .ir dump files, or folders searched recursively (rank_N/ subfolders included).

    A cache of lint results (per dump file, keyed by its content, the rules and irlint's version)
    makes a second run on unchanged dumps instant; see --no-cache and --cache-dir.
    """
    try:
        forget_buffers()
        if STDIN in paths:
            read_stdin()
        config, source = _load_config_for(config_file, paths[0] if paths[0] != STDIN else None)
        known = rule_module.load_rules(plugins=config.plugins)
        check_selectors(config, known, config_file or (shown(source) if source else None))
        _check_option_selectors(known, select=select, extend_select=extend_select, ignore=ignore)
        _apply_options(config, select, extend_select, ignore, all_stages, jobs, no_cache, cache_dir, rule_timeout)
        if no_dedup:
            config.dedup = False
        if no_group:
            config.group = False
        if output is None and sys.stdout is None and not show_files:   # `irlint ... >&-`
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
            something = _show_files(found, config)
            sys.exit(EXIT_ERROR if found.empty or found.diagnostics or not something else EXIT_CLEAN)
        # a path that cannot be used is an input problem of the report: the other paths are linted
        _note_jobs(config, found, quiet)
        report = _lint_with_progress(found, config, show=not quiet)
    except (ConfigError, InputError, BaselineError) as exc:
        _fail(str(exc))
    for note in report.notes:
        click.echo(f"irlint: {printable_text(note)}", err=True)
    total = len(report.findings)
    if write_baseline_file:
        try:
            n = write_baseline(write_baseline_file, report.findings)
        except BaselineError as exc:
            _fail(str(exc))
        if not quiet and fmt != "text":   # the text summary says it
            click.echo(f"irlint: wrote {n} finding{'s' if n != 1 else ''} to baseline {write_baseline_file}", err=True)
        report.findings = []
    elif accepted is not None:
        report.findings = new_findings(report.findings, accepted)
    ctx = RenderContext(rules=known, quiet=quiet, statistics=statistics, baselined=total - len(report.findings),
                        baseline_written=write_baseline_file or None)
    ctx.sources.streams = {f.display: (f.path, f.compression) for f in found.files}
    if output is None and _on_terminal(sys.stdout):
        import shutil

        ctx.width = shutil.get_terminal_size((120, 24)).columns
    # else (a file or a pipe): full lines, so a scope can be copied into a suppression whole
    ctx.color = use_color(color, tty=output is None and _on_terminal(sys.stdout))
    text = render(report, fmt, ctx)
    if output is None:
        click.echo(text, nl=False, color=ctx.color)   # click would strip the colours off a pipe
    else:
        try:
            write_output(output, text)
        except OSError as exc:
            _fail(f"{output}: cannot write: {exc.strerror or exc}")
    nothing = _why_nothing_checked(report.rules, report.files, found, config)
    if nothing:
        click.echo(f"irlint: nothing checked: {nothing}", err=True)
        sys.exit(EXIT_ERROR)
    if report.diagnostics:
        # bad input (truncated, junk, invalid UTF-8, over-long lines) must not pass as clean
        sys.exit(EXIT_ERROR)
    # like eslint: info findings are reported but do not fail the run
    failing = any(f.severity in FAILING_SEVERITIES for f in report.findings)
    sys.exit(EXIT_FINDINGS if failing and not exit_zero else EXIT_CLEAN)


def run() -> None:
    """The ``irlint`` program (console script, ``python -m irlint``): ``main``, then the process ends
    at once. Tearing down what a lint leaves behind (hundreds of modules, the parser's caches) costs
    a tenth of a second after the work is done; once the report is flushed and every exit handler
    has run, nothing in it is still needed."""
    import gc

    # A lint allocates far more than it frees (the model, the rule modules): the young-generation
    # collections of the default thresholds find next to nothing and cost time (mypy does the same).
    gc.set_threshold(200_000, 30, 30)
    try:
        main()
    except SystemExit as done:
        code = 0 if done.code is None else done.code
        if isinstance(code, int) and _may_end_now():
            os._exit(code)
        raise


def _may_end_now() -> bool:
    """Whether ending without the interpreter's teardown loses nothing: irlint is the program
    (no profiler, debugger or test runner around it with work left), no other thread is running,
    standard output and error are flushed, and the exit handlers have run."""
    import threading

    if sys.gettrace() is not None or sys.getprofile() is not None or sys.flags.inspect:
        return False
    frame = sys._getframe(2)   # the caller of run()
    while frame is not None:
        if frame.f_code.co_name not in ("<module>", "_run_code", "_run_module_as_main"):
            return False
        frame = frame.f_back
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        return False   # Python waits for it
    if not _flushed():
        return False   # a closed pipe: the usual exit reports it, with its usual status
    atexit._run_exitfuncs()   # e.g. a plugin's, or coverage's
    return _flushed()


def _flushed() -> bool:
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        return False
    return True


def use_color(choice: str, tty: bool) -> bool:
    if choice != "auto":
        return choice == "always"
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return tty


def _load_config_for(config_file, path):
    """The config a lint of PATH uses: --config, else the first found upward from PATH, then from the
    working directory (`irlint config PATH` shows the same)."""
    return load_config(config_file, starts=[path, os.getcwd()] if path else [os.getcwd()])


def _apply_options(config: Config, select, extend_select, ignore, all_stages, jobs, no_cache, cache_dir=None,
                   rule_timeout=None) -> None:
    """Command-line options over the config file: --select replaces the file's whole selection (as in
    ruff), then --extend-select/--ignore add."""
    if select:
        config.select, config.extend_select, config.ignore = list(select), [], []
    config.extend_select += list(extend_select)
    config.ignore += list(ignore)
    if all_stages:
        config.all_stages = True
    if jobs is not None:
        config.jobs = jobs
    if no_cache:
        config.cache = False
    if cache_dir:
        config.cache_dir = cache_dir
    if rule_timeout is not None:
        config.rule_timeout = rule_timeout


def _check_option_selectors(known: list, **options) -> None:
    for key, values in options.items():
        try:
            check_selectors(Config(select=list(values)), known)
        except ConfigError as exc:   # name the option, not the config key
            raise ConfigError(f"--{key.replace('_', '-')}{str(exc)[len('select'):]}") from None


def _note_jobs(config: Config, found: Discovery, quiet: bool) -> None:
    """Say so when --jobs asks for more processes than can help."""
    from ..runner.engine import capped_jobs

    if config.jobs <= 1 or quiet:
        return
    cores = capped_jobs(config.jobs)
    if config.jobs > cores:
        click.echo(f"irlint: jobs = {config.jobs} capped to {cores} (one process per core; never more "
                   f"than the files to read)", err=True)


def _why_nothing_checked(rules, checked, found: Discovery, config: Config) -> str:
    """Why a run checked nothing ('' when it checked something): it must not pass as clean."""
    if not rules:
        return ("no rule is selected (the --select, --extend-select and --ignore options and the config's "
                "select/ignore leave none; `irlint rules` lists them)")
    if checked:
        return ""
    if not found.files:
        return "no graph IR dump was read"
    stages = sorted({f.stage.label for f in found.files})
    wanted = list(dict.fromkeys(s for r in rules for s in r.stages))
    return (f"no selected rule reads the stage{'s' if len(stages) != 1 else ''} of the {len(found.files)} dump "
            f"file{'s' if len(found.files) != 1 else ''} found ({', '.join(stages)}); the rules read "
            f"{', '.join(wanted) or 'any stage'}. Name a file to run every rule on it, or use --all-stages")


def _show_files(found: Discovery, config: Config) -> bool:
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
            later = [g for g in found.files if g.folder == f.folder and g.path in todo
                     and any(r.code in readers for r in todo[g.path])]
            if readers and later:
                why = (f"{', '.join(readers)} read {', '.join(g.display for g in later)} instead (a stage where "
                       f"their evidence is final, of the same compile)")
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
    nothing = _why_nothing_checked(rules, list(todo), found, config)
    if nothing:
        click.echo(f"irlint: nothing would be checked: {nothing}", err=True)
    return not nothing


def _show_shared(files, todo: dict, same: dict[str, str]) -> None:
    """How many graphs a lint reads, and which ranks share each graph that several files hold."""
    from ..runner.engine import _RANK_DIR
    from ..reporters import ranks_text

    checked = [f for f in files if f.path in todo]
    graphs = len(checked) - len(same)
    click.echo(f"{len(checked)} files, {graphs} distinct graph{'s' if graphs != 1 else ''} read "
               "(files that differ only in lines naming the process are read once)")
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
            key = (_RANK_DIR.sub(r"\1rank_*", f.folder), os.path.basename(f.path))
            by_stage.setdefault(key, {}).setdefault(same.get(f.path, f.path), []).append(f.rank)
    for (_, name), graphs in by_stage.items():
        if len(graphs) > 1 and sum(map(len, graphs.values())) > len(graphs):
            split = "; ".join(ranks_text(tuple(r)) for r in sorted(graphs.values()))
            click.echo(f"differs by rank  {name}: {len(graphs)} graphs ({split})")


def _lint_with_progress(found: Discovery, config: Config, show: bool):
    """Lint; a progress bar on stderr for large inputs on a terminal."""
    if not (show and _on_terminal(sys.stderr)):
        return lint_files(found.files, found.diagnostics, config)
    from ..runner.engine import active_rules, plan

    todo = plan(found.files, active_rules(config), config.all_stages)
    sizes = {f.display: f.size for f in found.files if f.path in todo}
    total = sum(sizes.values())
    if total < PROGRESS_MIN_BYTES:
        return lint_files(found.files, found.diagnostics, config)
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(TextColumn("irlint"), BarColumn(), DownloadColumn(), TimeRemainingColumn(),
                  TextColumn("{task.description}"), console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(f"{len(sizes)} file{'s' if len(sizes) != 1 else ''}", total=total)

        def advance(display: str, size: int) -> None:
            bar.update(task, advance=size, description=Path(display).name)

        config.progress = advance
        return lint_files(found.files, found.diagnostics, config)


@main.command("rules")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option("--config", "config_file", type=click.Path(dir_okay=False))
@debug_option
def rules_cmd(fmt, config_file):
    """List the rules: code, name, severity, whether on by default, summary. Exit 2 when a rule
    plugin could not be loaded (it is named on stderr)."""
    try:
        config, _ = load_config(config_file, starts=[os.getcwd()])
    except ConfigError as exc:
        _fail(str(exc))
    rows = []
    for cls in rule_module.load_rules(plugins=config.plugins):
        rows.append({"code": cls.code, "name": cls.name,
                     "severity": config.severity_for(cls.code, cls.name, cls.severity),
                     "default": bool(cls.default_enabled),
                     "enabled": config.rule_enabled(cls.code, cls.name, cls.default_enabled),
                     "summary": cls.summary, "stages": list(cls.stages)})
    if fmt == "json":
        import json

        click.echo(json.dumps(rows, indent=2, ensure_ascii=False))
    else:
        from rich.table import Table

        table = Table(title="irlint rules", title_justify="left")
        for col in ("code", "name", "severity", "default", "summary"):
            table.add_column(col, overflow="fold")
        for r in rows:
            table.add_row(r["code"], r["name"], r["severity"], "on" if r["default"] else "off", r["summary"])
        _console().print(table)
    problems = rule_module.plugin_problems(config.plugins) if config.plugins else []
    for problem in problems:
        click.echo(f"irlint: IR012 {problem}", err=True)
    if problems:
        sys.exit(EXIT_ERROR)


def _console():
    from rich.console import Console

    tty = _on_terminal(sys.stdout)
    color = use_color("auto", tty)
    # not a terminal: tables as wide as their content, nothing cut
    return Console(force_terminal=color, no_color=not color, width=None if tty else UNLIMITED_WIDTH, highlight=False)


@main.command("explain")
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
    _fail(f"unknown rule {rule!r}; `irlint rules` lists them")


@main.command("config")
@click.option("--show", is_flag=True, help="Print the effective settings as TOML.")
@click.option("--config", "config_file", type=click.Path(dir_okay=False))
@click.argument("path", required=False)
@debug_option
def config_cmd(show, config_file, path):
    """Which config file a lint of PATH uses (found upward from PATH, then from the working directory);
    --show prints its settings, in the layout of that file, and the cache folder and jobs in effect."""
    if path is not None and not os.path.lexists(path):
        _fail(f"{path}: no such file or folder")
    try:
        config, source = _load_config_for(config_file, path)
    except ConfigError as exc:
        _fail(str(exc))
    where = f"# from {source}" if source else "# no irlint.toml or [tool.irlint] found: defaults"
    if show:
        from ..runner.cache import default_dir
        from ..runner.engine import capped_jobs

        table = "tool.irlint" if source is not None and Path(source).name == "pyproject.toml" else ""
        cache = str(default_dir(config.cache_dir)) if config.cache else "off"
        jobs = capped_jobs(config.effective_jobs())
        click.echo(f"{where}\n# in effect: cache folder {cache}; up to {jobs} worker process"
                   f"{'es' if jobs != 1 else ''}\n{to_toml(config, table)}", nl=False)
    else:
        click.echo(where[2:])


@main.command("clean")
@click.option("--config", "config_file", type=click.Path(dir_okay=False))
@click.option("--cache-dir", type=click.Path(file_okay=False), help="The cache folder to empty.")
@debug_option
def clean_cmd(config_file, cache_dir):
    """Empty the cache of lint results (the folder of --cache-dir, cache-dir, $IRLINT_CACHE_DIR or the
    user cache folder)."""
    from ..runner.cache import TAG_NAME, LintCache, default_dir

    try:
        config, _ = load_config(config_file, starts=[os.getcwd()])
    except ConfigError as exc:
        _fail(str(exc))
    folder = default_dir(cache_dir or config.cache_dir)
    if not os.path.lexists(folder):
        click.echo(f"irlint: no cache at {folder}: nothing to remove", err=True)
        return
    if not folder.is_dir():
        _fail(f"{folder}: not a folder; left alone")
    store = LintCache(folder)
    if not store.looks_like_cache():
        if any(folder.iterdir()):
            _fail(f"{folder} does not look like irlint's cache (no {TAG_NAME} written by irlint, no cache "
                  f"entries): left alone")
        click.echo(f"irlint: {folder} is empty: nothing to remove", err=True)
        return
    removed, others = store.clear()
    left = f"; {others} other file{'s' if others != 1 else ''} left alone" if others else ""
    click.echo(f"irlint: removed {removed} cache entr{'ies' if removed != 1 else 'y'} from {folder}{left}", err=True)


@main.command("inspect")
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
        _fail(str(exc))
    from ..runner.engine import read_dump

    rows = []
    for f in found.files:
        try:
            ir = read_dump(f)
        except OSError as exc:   # the reader reports what it meets while reading; this is opening
            from ..diagnostics import UNREADABLE, Diagnostic

            found.diagnostics.append(Diagnostic(f.display, 0, UNREADABLE, f"cannot read: {exc.strerror or exc}"))
            continue
        rows.append(inspect_row(ir))
    # files found but not read are listed too: an unreadable .ir must not vanish from the table
    others = [{"file": d.file, "stage": "", "subgraphs": 0, "cnodes": 0, "params": 0, "edges": 0,
               "diagnostics": [d.to_dict()]} for d in found.diagnostics]
    if fmt == "json":
        import json

        for row in rows + others:
            click.echo(json.dumps(row, ensure_ascii=False))
    else:
        from rich.table import Table

        rows, others = printable_data(rows), printable_data(others)   # shown: escaped
        table = Table(title="irlint inspect", title_justify="left")
        for col in ("file", "stage"):   # on a narrow terminal these fold onto more lines, never cut
            table.add_column(col, overflow="fold")
        for col in ("subgraphs", "cnodes", "params", "edges", "diagnostics"):
            table.add_column(col, justify="right", no_wrap=True)
        for row in rows + others:
            table.add_row(row["file"], row["stage"] or "(not read)", str(row["subgraphs"]), str(row["cnodes"]),
                          str(row["params"]), str(row["edges"]), str(len(row["diagnostics"])))
        _console().print(table)
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
    if ir.failure is not None:   # an analyze_fail.ir: what MindSpore said, and where evaluation stopped
        nodes = ir.nodes
        row["failure"] = {
            "message": ir.failure.message, "line": ir.failure.line, "stack": ir.failure.stack_depth,
            "evaluation_stack": [{"line": nodes[k]["line"], "graph": nodes[k]["graph"], "node": nodes[k]["id"],
                                  "op": nodes[k]["op"]} for k in ir.failure.failed_at],
        }
    return row
