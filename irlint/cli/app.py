"""The ``irlint`` program: the command group (``irlint PATH...`` runs ``check``; every other command is
imported only when used), the handling of signals and of errors no command caught, and the exit
codes they end with (``irlint.cli.exits``)."""

from __future__ import annotations

import atexit
import os
import signal
import sys
from typing import TYPE_CHECKING

import click

from .. import __version__
from . import options
from .check import check_cmd
from .exits import EXIT_CODES_HELP, EXIT_ERROR, EXIT_INTERRUPTED, EXIT_TERMINATED, fail

if TYPE_CHECKING:
    from types import FrameType


class _Terminated(BaseException):
    """SIGTERM: unwinds like Ctrl-C, so that worker processes are ended on the way out."""


def _on_sigterm(signum, frame):
    raise _Terminated()


class _DefaultGroup(click.Group):
    """``irlint PATH...`` lints; ``irlint rules|explain|inspect|config|clean ...`` run subcommands. Every
    error ends as a one-line message and exit code 2, never a traceback (``--debug`` shows it)."""

    default_command = "check"
    # name -> (module, command object): imported only when that command is used, never by a lint
    lazy_commands = {
        name: (f"irlint.cli.{name}", f"{name}_cmd")
        for name in ("rules", "explain", "config", "clean", "inspect", "memory", "comm", "diff", "cost", "fix")
    }

    def list_commands(self, ctx):
        return sorted({*self.commands, *self.lazy_commands})

    def get_command(self, ctx, name):
        if name not in self.commands and name in self.lazy_commands:
            from importlib import import_module

            module, attr = self.lazy_commands[name]
            self.add_command(getattr(import_module(module), attr), name)
        return super().get_command(ctx, name)

    def parse_args(self, ctx, args):
        if (
            args
            and args[0] not in self.commands
            and args[0] not in self.lazy_commands
            and args[0] not in ("--help", "-h", "--version", "-V")
        ):
            self._refuse_mistyped_command(ctx, args[0])
            args = [self.default_command, *args]
        elif not args:
            args = [self.default_command]
        if args[0] == self.default_command and "--fix" in args[1 : args.index("--") if "--" in args else None]:
            # ruff's and eslint's flag: irlint applies its fixes to the config, a command of its own
            fail("no such option: --fix; to apply the fix plan to a MindFormers config: irlint fix CONFIG DUMP...")
        return super().parse_args(ctx, args)

    def _refuse_mistyped_command(self, ctx, word: str) -> None:
        """``irlint memroy x``: a first word that names no path but is close to a command is a
        typo of the command, not a dump to lint (exit 2, with the command suggested)."""
        if word.startswith("-") or os.path.exists(word) or word == "-":
            return
        import difflib  # here, not on every lint of a path

        close = difflib.get_close_matches(
            word, [c for c in self.list_commands(ctx) if c != self.default_command], n=1, cutoff=0.7
        )
        if close:
            fail(f"{word}: no such file or folder, nor a command; did you mean `irlint {close[0]}`?")

    def format_usage(self, ctx, formatter):
        formatter.write_usage(ctx.command_path, "[OPTIONS] PATH...")
        formatter.write_usage(ctx.command_path, "COMMAND [ARGS]...", prefix="   or: ")

    def format_options(self, ctx, formatter):
        super().format_options(ctx, formatter)
        # the lint options live on `check`; list them here too, where a new user looks first
        check_cmd = self.commands[self.default_command]
        with click.Context(check_cmd, info_name=f"{ctx.command_path} {self.default_command}", parent=ctx) as sub:
            rows = [
                p.get_help_record(sub)
                for p in check_cmd.get_params(sub)
                if isinstance(p, click.Option) and p.name != "help"
            ]
        with formatter.section(
            f"Options of `{ctx.command_path} PATH...` (details: `{ctx.command_path} {self.default_command} --help`)"
        ):
            formatter.write_dl(rows)

    def format_epilog(self, ctx, formatter):
        formatter.write_paragraph()
        formatter.write_text(EXIT_CODES_HELP)

    def invoke(self, ctx):
        options.reset_debug()
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
            if options.debugging():
                import traceback

                traceback.print_exc()
            click.echo(
                f"irlint: the Python package {exc.name!r} is missing: install irlint with its "
                f"dependencies (`pip install .` in a checkout of irlint)",
                err=True,
            )
            ctx.exit(EXIT_ERROR)
        except Exception as exc:  # noqa: BLE001 - the last line of defence
            if options.debugging():
                import traceback

                traceback.print_exc()
            click.echo(f"irlint: internal error: {type(exc).__name__}: {exc}", err=True)
            if not options.debugging():
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
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]  # a TextIOWrapper's
        except (AttributeError, ValueError, OSError):  # closed (None), not a text stream, or unusable
            pass


def _install_sigterm():
    """SIGTERM ends the run through the same clean-up as Ctrl-C (main thread only: tests and API
    users may call the CLI from another thread)."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, _on_sigterm)


@click.group(cls=_DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="irlint")
def main() -> None:
    """Lint MindSpore IR graph dumps (the graph/ folder written with save_graphs).

    `irlint PATH...` runs the `check` command on PATH (a .ir file, a compressed .ir.gz/.bz2/.xz, a
    folder, or - for standard input). For a path named like a command (e.g. a folder called `rules`),
    write `irlint check rules`.
    """


main.add_command(check_cmd)


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
    frame: FrameType | None = sys._getframe(2)  # the caller of run()
    while frame is not None:
        if frame.f_code.co_name not in ("<module>", "_run_code", "_run_module_as_main"):
            return False
        frame = frame.f_back
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        return False  # Python waits for it
    if not _flushed():
        return False  # a closed pipe: the usual exit reports it, with its usual status
    atexit._run_exitfuncs()  # e.g. a plugin's, or coverage's
    return _flushed()


def _flushed() -> bool:
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        return False
    return True
