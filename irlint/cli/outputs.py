"""The files a command writes (a report, a baseline): one guard for every command that writes, run
before any dump is read. A file is never written onto a dump the run reads (named, through a link,
a hard link, or another stage file of a folder read), onto a file the run reads (``--baseline``),
or by two options at once."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable

import click

from ..runner.discover import STDIN, DumpFile, InputError
from .exits import fail

# a file an option reads -> the option that may replace it (a baseline updated in place)
UPDATED_BY = {"baseline": "write_baseline"}


def _option(name: str) -> str:
    return "--" + name.replace("_", "-")


def _identity(path: str) -> tuple | None:
    """What makes two names one file: its device and inode when it exists (through links), else
    its real path (a file still to be written). None for a stream (device, FIFO, /dev/stdout):
    written to by appending, it replaces nothing."""
    try:
        st = os.stat(path)
    except OSError:
        return ("path", os.path.realpath(path))
    if not stat.S_ISREG(st.st_mode):
        return None
    return ("inode", st.st_dev, st.st_ino)


def check_targets(
    targets: dict[str, str | None],
    files: Iterable[DumpFile] = (),
    named: Iterable[str] = (),
    reads: dict[str, str | None] | None = None,
) -> None:
    """Raise InputError when a file to write (option name -> path) is one of the dump ``files``
    read, a file ``named`` on the command line, a file another option reads (``reads``: option
    name -> path), or the file another option writes. Call it with the targets alone before
    discovery (nothing is created for a run that is refused), then with what discovery found."""
    written: dict[tuple | None, str] = {}
    for option, target in targets.items():
        if not target:
            continue
        where = _identity(target)
        if where is None:
            continue
        if where in written:
            raise InputError(
                f"{target}: named by both {_option(written[where])} and {_option(option)}: "
                f"one would overwrite the other; name two files"
            )
        written[where] = option
    if not written:
        return
    for option, path in (reads or {}).items():
        read_at = _identity(path) if path else None
        writer = written.get(read_at) if read_at is not None else None
        if writer is not None and writer != UPDATED_BY.get(option):
            raise InputError(f"{path}: is the {_option(option)} file; {_option(writer)} would overwrite it")
    inputs: dict[tuple, str] = {}
    for path, shown in [(f.path, f.display) for f in files] + [(p, p) for p in named if os.path.isfile(p)]:
        at = _identity(path) if path != STDIN else None
        if at is not None:  # a stream is never an input a report could overwrite
            inputs.setdefault(at, shown)
    for where, option in written.items():
        if where in inputs:
            target = targets[option]
            raise InputError(
                f"{target}: is an input of this run ({inputs[where]}); {_option(option)} would overwrite it"
            )


def prepare_output(target: str) -> None:
    """Create the folder of an output file (as ruff does) and fail now if it cannot be."""
    if os.path.exists(target) and not os.path.isfile(target) and not os.path.isdir(target):
        if not os.access(target, os.W_OK):  # a device or FIFO: written to as it is
            raise InputError(f"{target}: cannot write: permission denied")
        return
    folder = os.path.dirname(os.path.realpath(target))
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{target}: cannot create its folder: {exc.strerror or exc}") from None
    if _is_dir(target):
        raise InputError(f"{target}: is a folder")
    if not os.access(folder, os.W_OK):
        raise InputError(f"{target}: cannot write: permission denied")


def _is_dir(path: str) -> bool:
    """``pathlib.Path(path).is_dir()``: False where nothing is, an error where it cannot be looked at."""
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP):
            return False
        raise
    except ValueError:
        return False


def emit(text: str, output: str | None) -> None:
    """The report to standard output, or written to ``output`` (through a link, never onto a dump)."""
    if output is None:
        click.echo(text, nl=False, color=True if "\x1b[" in text else None)  # colour asked for: kept on a pipe
        return
    from ..reporters import write_output

    try:
        write_output(output, text)
    except OSError as exc:
        fail(f"{output}: cannot write: {exc.strerror or exc}")


def text_width(output: str | None) -> int | None:
    """The width an account's text tables fold to: the terminal's (``COLUMNS`` when set, as
    terminals set it) when the report goes to one, ``COLUMNS`` when it is set for a pipe; none for
    a file named with -o, or without COLUMNS (whole lines, to be read with grep)."""
    import shutil
    import sys

    from .terminal import on_terminal

    if output is not None:
        return None
    if on_terminal(sys.stdout):
        return shutil.get_terminal_size((120, 24)).columns
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) > 0 else None


def text_color(choice: str, output: str | None) -> bool:
    """Whether an account's text tables are coloured (``--color``; auto: on a terminal)."""
    import sys

    from .terminal import on_terminal, use_color

    return use_color(choice, tty=output is None and on_terminal(sys.stdout))
