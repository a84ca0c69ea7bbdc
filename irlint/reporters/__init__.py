"""Reporters: turn a Report into text for people, editors, CI and tools. One module per format;
each has ``render(report, ctx) -> str`` and never reads dumps except node lines by number."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..findings import Report
from .source import SourceLines

FORMATS = ("text", "concise", "json", "json-lines", "sarif", "github", "gitlab", "junit", "html")
UNLIMITED_WIDTH = 100_000  # rich needs a width; tables are sized to their content, so this is "no limit"


@dataclass
class RenderContext:
    """What a reporter needs besides the report: the rules, colour, width, sources."""

    rules: list = field(default_factory=list)  # rule classes known to this run (SARIF metadata)
    color: bool = False
    # columns to wrap to (a terminal); None: full lines, nothing cut or wrapped (files, pipes)
    width: int | None = None
    quiet: bool = False
    statistics: bool = False
    sources: SourceLines = field(default_factory=SourceLines)
    # findings hidden by --baseline (shown in the text summary so nobody wonders where they went)
    baselined: int = 0
    baselined_occurrences: int = 0  # occurrences the baseline hid of findings still shown (part of a group)
    # --write-baseline FILE: the findings were written there (and are not shown)
    baseline_written: str | None = None


def renderer(fmt: str) -> Callable[[Report, RenderContext], str]:
    from importlib import import_module

    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}")
    return import_module(f"{__name__}.{fmt.replace('-', '_')}").render


# formats that print text as it is (HTML: as markup escaping leaves it): what came from a dump or
# a file name is escaped first
_PRINTED = frozenset({"text", "concise", "github", "junit", "html"})


def render(report: Report, fmt: str, ctx: RenderContext | None = None) -> str:
    ctx = ctx or RenderContext()
    if fmt in _PRINTED:
        from dataclasses import replace

        from .printable import PrintableSources, printable_report

        report = printable_report(report)
        ctx = replace(ctx, sources=PrintableSources(ctx.sources))  # type: ignore[arg-type]  # same interface as SourceLines
    return renderer(fmt)(report, ctx)


def rule_classes(report: Report, ctx: RenderContext) -> list:
    """The rules to describe: those that ran plus any other the context knows, by code."""
    seen: dict[str, Any] = {}
    for r in list(report.rules) + list(ctx.rules):
        cls: Any = r if isinstance(r, type) else type(r)
        seen.setdefault(cls.code, cls)
    return sorted(seen.values(), key=lambda c: c.code)


def ranks_text(ranks: tuple[int, ...]) -> str:
    """(0, 1, 2, 3, 6) -> 'ranks 0-3,6'."""
    from ..units import spans

    return "ranks " + ",".join(spans(ranks, "-"))


def write_atomically(path: str | os.PathLike, text: str, durable: bool = True, mode: int | None = None) -> None:
    """Write a report, baseline or cache entry to a temporary file in the same folder, then rename
    it over ``path``: on a full disk or a crash the previous file stays whole. ``durable``: on disk
    before the rename (a cache entry need not be); ``mode``: the new file's permissions (default:
    those of the file replaced, or as the umask allows)."""
    target = os.fspath(path)
    folder, name = os.path.split(target)
    fd, tmp = new_temporary(folder or ".", prefix=f".{name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        else:
            try:  # keep the mode an existing file had (mkstemp makes 0600)
                os.chmod(tmp, os.stat(target).st_mode & 0o777)
            except FileNotFoundError:
                os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def new_temporary(folder: str, prefix: str, suffix: str) -> tuple[int, str]:
    """A new file, as ``tempfile.mkstemp`` makes it (mode 0600, created exclusively, no symbolic link
    followed), without importing tempfile (and with it shutil, random, bz2, lzma: a share of a lint's start)."""
    flags = (
        os.O_RDWR
        | os.O_CREAT
        | os.O_EXCL
        | getattr(os, "O_NOFOLLOW", 0)
        | getattr(os, "O_CLOEXEC", 0)
        | getattr(os, "O_BINARY", 0)
    )
    for _ in range(100):
        name = os.path.join(folder, f"{prefix}{os.urandom(6).hex()}{suffix}")
        try:
            return os.open(name, flags, 0o600), name
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary file name in {folder}")


def write_output(path: str | os.PathLike, text: str) -> None:
    """Write a report or baseline the user named. A regular file (also through a symbolic link, whose
    target is written) is replaced atomically; a device, FIFO or ``/dev/stdout`` is written to
    directly, appending, as a shell's ``>>`` would (renaming over it would replace it)."""
    import stat

    name = os.fspath(path)
    try:
        st = os.stat(name)
    except FileNotFoundError:
        st = None
    real = os.path.realpath(name)
    if (st is not None and not stat.S_ISREG(st.st_mode)) or _special(name) or _special(real):
        with open(name, "a", encoding="utf-8") as f:
            f.write(text)
        return
    write_atomically(real, text)


def _special(path: str) -> bool:
    """/dev/stdout, /dev/fd/N, /proc/self/fd/N …: a stream of this process, not a file to replace."""
    return os.path.abspath(path).startswith(("/dev/", "/proc/"))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
