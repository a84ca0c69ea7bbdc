"""Which files of the given paths are graph IR dumps, decided by their first bytes (a renamed or
compressed dump is still one): walking folders, links, named paths and standard input; how to open them is
``streams``."""

from __future__ import annotations

import os
import re
import stat as stat_module
from collections import defaultdict
from dataclasses import dataclass, field

from .. import diagnostics as D
from ..diagnostics import Diagnostic
from ..model.stages import BACKEND, Stage, stage_of

# opening, for the modules that import it from here
from ..read.dump_start import is_dump_start
from .streams import (  # noqa: F401
    HEAD_BYTES,
    STDIN,
    InputError,
    Spool,
    buffers,
    can_decompress,
    compression_of,
    damage_of,
    forget_buffers,
    is_buffered,
    kind_of,
    magic_head,
    open_dump,
    read_stdin,
    sniff,
)

# Written next to the dumps, never graph IR: skipped without opening them (a dump saved as .txt is
# still one: those are opened).
NOT_IR_SUFFIXES = {".pb", ".dot", ".dat", ".json", ".npy", ".npz", ".csv", ".log", ".py", ".yaml", ".md"}
SKIP_DIRS = {"actor_set"}
_COMPRESSED = (".gz", ".bz2", ".xz", ".zst")  # stripped from a name before its suffix is judged
_RANK = re.compile(r"rank_(\d+)\Z")

_NOT_A_DUMP = {
    "binary": "binary content (NUL bytes): not a text IR dump",
    "empty": "empty file: not a graph IR dump",
    "text": "not a graph IR dump (it does not start with '# IR entry:')",
}


@dataclass(frozen=True, slots=True)
class DumpFile:
    """A dump file to lint, and where and how it was found."""

    path: str  # as opened ("-": standard input)
    display: str  # as reported (relative to the working directory when possible)
    folder: str  # the save_graphs folder it belongs to ("" for a file named directly)
    rank: int | None
    explicit: bool  # named on the command line: always linted
    stage: Stage
    size: int
    compression: str | None = None  # gzip, bzip2, xz or zstd: decompressed while it is read

    @property
    def placed(self) -> bool:
        """Whether its name says which stage it is; a dump that cannot be placed is read by every rule."""
        return self.stage.known


@dataclass
class Discovery:
    """The dump files found under the paths named, and what stood in the way."""

    files: list[DumpFile] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    # a folder named on the command line in which no dump was found -> what was found instead
    empty: dict[str, str] = field(default_factory=dict)
    # a path named on the command line that cannot be used at all (missing, not listable) -> why
    unusable: dict[str, str] = field(default_factory=dict)
    # links to folders outside the named folder that were followed: (link as shown, its target)
    links: list[tuple[str, str]] = field(default_factory=list)


_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


def _read_head(path: str) -> bytes:
    """The first HEAD_BYTES of a regular file. Without a Python file object: opening thousands of
    files (a folder of ranks) costs half as much."""
    fd = os.open(path, _OPEN_FLAGS)
    try:
        head = os.read(fd, HEAD_BYTES)
        while head and len(head) < HEAD_BYTES:  # a short read before the end (not on a local disk)
            more = os.read(fd, HEAD_BYTES - len(head))
            if not more:
                break
            head += more
        return head
    finally:
        os.close(fd)


def _pure(path: str) -> str:
    """``str(pathlib.Path(path))``, which every path here is written as: no empty or ``.`` part,
    no trailing separator (pathlib and what it imports are a share of a lint's start)."""
    if os.name != "posix":
        from pathlib import Path

        return str(Path(path))
    if path and "//" not in path and "/." not in path and not path.endswith("/") and not path.startswith("."):
        return path  # already so (the usual case)
    root = ""
    if path.startswith("/"):
        root = "//" if path.startswith("//") and not path.startswith("///") else "/"
    parts = [part for part in path.split("/") if part and part != "."]
    return root + "/".join(parts) if root or parts else "."


def _join(folder: str, name: str) -> str:
    """``str(Path(folder) / name)`` for a ``folder`` as ``_pure`` writes it and a file's name."""
    if folder == ".":
        return name
    return folder + name if folder.endswith(os.sep) else folder + os.sep + name


def _under(folder: str, name: str) -> str:
    """``os.path.join(folder, name)`` for a file's name (no separator in it), as plain string work:
    once per file of a folder of thousands."""
    if os.sep != "/" or not folder:
        return os.path.join(folder, name)
    return folder + name if folder.endswith("/") else folder + "/" + name


def _suffix(name: str) -> str:
    """``Path(name).suffix`` of a file's name."""
    i = name.rfind(".")
    return name[i:] if 0 < i < len(name) - 1 else ""


def _display(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return printable(str(path))
    # as ruff does: relative below the working directory, absolute elsewhere
    return printable(str(path) if rel == ".." or rel.startswith(".." + os.sep) else rel)


def printable(name: str) -> str:
    """A file name as reports show it: bytes that are not UTF-8 (``rank_\\xff``, held as lone
    surrogates, which no report could encode) are written as backslash escapes."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(name).decode("utf-8", "backslashreplace")
    return name


_STAGES: dict[str, Stage] = {}


def _stage_named(name: str) -> Stage:
    """``stage_of``, once per file name: every rank repeats the same names."""
    stage = _STAGES.get(name)
    if stage is None:
        if len(_STAGES) > 4096:
            _STAGES.clear()
        stage = _STAGES[name] = stage_of(name)
    return stage


def _rank_of(folder: str) -> int | None:
    """The rank of a folder's files: its own rank_N/ or the nearest above it."""
    for part in reversed(folder.split(os.sep)):
        m = _RANK.match(part)
        if m:
            return int(m.group(1))
    return None


def discover(paths: list[str], follow_links: bool = False) -> tuple[list[DumpFile], list[Diagnostic]]:
    """Files to read, and diagnostics for what was skipped. Raises InputError for a path that
    does not exist or cannot be listed."""
    found = discover_inputs(paths, follow_links=follow_links)
    for raw, why in found.unusable.items():
        raise InputError(f"{raw}: {why}")
    return found.files, found.diagnostics


def discover_inputs(paths: list[str], stdin_name: str | None = None, follow_links: bool = False) -> Discovery:
    """What ``discover`` finds, and for each folder without a dump, why. ``-`` is standard input
    (read with ``read_stdin`` first), reported as ``stdin_name``. A path that cannot be used (missing,
    not listable) and a folder without a dump are diagnostics (and ``unusable``, ``empty``): the
    other paths are still read. A folder named twice, or with a folder inside it, is read once.
    ``follow_links``: follow every link to a folder, not only those within the named folder or
    leading to dumps."""
    out = Discovery()
    files: dict[str, DumpFile] = {}
    seen_dirs: set[tuple[int, int]] = set()  # every real folder is walked once, whatever names it
    for raw in paths:
        if raw == STDIN:
            if STDIN not in buffers:  # an API call: the CLI reads it before the config
                read_stdin()
            _add_stdin(out, files, stdin_name)
            continue
        p = _pure(raw)
        try:
            st = os.stat(p)
            if not stat_module.S_ISDIR(st.st_mode):
                _add_named_file(out, files, raw, p, st)
                continue
            if not os.access(p, os.R_OK | os.X_OK):
                raise PermissionError(13, "Permission denied")
            before_diags = len(out.diagnostics)
            met = _walk(out, files, raw, p, seen_dirs, follow_links)
        except FileNotFoundError:
            _unusable(out, raw, "no such file or folder")
            continue
        except OSError as exc:  # e.g. inside a folder that cannot be listed
            _unusable(out, raw, (exc.strerror or str(exc)).lower())
            continue
        except InputError as exc:
            _unusable(out, raw, str(exc).removeprefix(f"{raw}: "))
            continue
        real = os.path.realpath(p).rstrip(os.sep) + os.sep
        # named again, or inside a folder named before: its dumps were found then
        if not met and not any(key.startswith(real) for key in files):
            why = _why_empty(out.diagnostics[before_diags:])
            out.empty[raw] = why
            out.diagnostics.append(
                Diagnostic(
                    _display(p),
                    0,
                    D.NOT_IR,
                    f"no graph IR dumps (*.ir written by save_graphs) found in this folder: {why}",
                )
            )
    out.files = list(files.values())
    out.diagnostics += unfinished_compiles(out.files)
    return out


def unfinished_compiles(files: list[DumpFile]) -> list[Diagnostic]:
    """A rank folder whose dumps stop before the final front-end graph while another rank folder
    of the same run reached it: that rank's compile stopped (MindSpore 2.10 stops one pipeline
    stage in ``GetCellBySend`` while the others compile). A single folder that holds no final graph
    may be a copy of some stages only: nothing is said of it."""
    runs: dict[str, dict[str, list[DumpFile]]] = defaultdict(lambda: defaultdict(list))
    for f in files:
        if not f.explicit and f.rank is not None and f.stage.known:
            runs[rank_folder(f)][f.folder].append(f)
    out = []
    for folders in runs.values():
        ends = {folder: _final_of(fs) for folder, fs in folders.items()}
        done = [end for end in ends.values() if end is not None]
        if not done:
            continue
        end = min(done, key=lambda f: f.rank or 0)  # the lowest rank that finished, to name
        rank = end.rank
        for folder, fs in sorted(folders.items()):
            if ends[folder] is not None:
                continue
            last = max(fs, key=lambda f: (f.stage.seq or -1, f.display))
            out.append(
                Diagnostic(
                    last.display,
                    0,
                    D.UNFINISHED,
                    f"rank {fs[0].rank}'s dumps stop at this file, before its final graph, while rank {rank} of "
                    f"the same run wrote {end.display.replace(os.sep, '/').rsplit('/', 1)[-1]}: the compile stopped "
                    "here (its log says why); what is read in this folder is a graph the step never ran",
                )
            )
    return out


def _final_of(folder_files: list[DumpFile]) -> DumpFile | None:
    """The folder's final front-end graph (validate), or a kernel graph written after it."""
    ends = [f for f in folder_files if f.stage.name == "validate" or f.stage.family == BACKEND]
    return min(ends, key=lambda f: (f.stage.name != "validate", f.display)) if ends else None


def _unusable(out: Discovery, raw: str, why: str) -> None:
    """A path named that cannot be used at all: an input problem of the run, as ruff's E902."""
    out.unusable[raw] = why
    out.diagnostics.append(Diagnostic(printable(raw), 0, D.UNREADABLE, why))


def _add_stdin(out: Discovery, files: dict[str, DumpFile], name: str | None) -> None:
    display = printable(name) if name else "<stdin>"
    spool = buffers[STDIN]
    compression = compression_of(spool.head(8))
    kind = sniff(STDIN, compression)
    if kind != "dump":
        out.diagnostics.append(_not_a_dump(display, kind, compression))
        return
    files.setdefault(STDIN, DumpFile(STDIN, display, "", None, True, stage_of(display), spool.size, compression))


def _add_named_file(out: Discovery, files: dict[str, DumpFile], raw: str, p: str, st: os.stat_result) -> None:
    if not stat_module.S_ISREG(st.st_mode) and raw not in buffers:
        # /dev/stdin from a pipe, a FIFO: it can be read once only
        try:
            with open(p, "rb") as f:
                buffers[raw] = Spool(f, raw)
        except OSError as exc:
            raise InputError(f"{raw}: cannot read: {(exc.strerror or str(exc)).lower()}") from None
        st = os.stat_result((*st[:6], buffers[raw].size, *st[7:]))
    if raw in buffers:
        p = _pure(raw)
    try:
        compression = compression_of(magic_head(p))
    except OSError:
        compression = None  # sniff reports it
    if compression is not None and not can_decompress(compression):
        out.diagnostics.append(_not_a_dump(_display(p), "unsupported", compression))
        return
    real = os.path.realpath(p)
    key = raw if raw in buffers else real
    if key not in files:
        # a file named directly is always read (a wrong one is reported by the reader)
        files[key] = DumpFile(
            raw if raw in buffers else p,
            _display(p),
            "",
            _rank_of(os.path.dirname(real)),
            True,
            stage_of("" if p == "." else p.rsplit(os.sep, 1)[-1]),
            st.st_size,
            compression,
        )


def _walk(
    out: Discovery,
    files: dict[str, DumpFile],
    raw: str,
    p: str,
    seen_dirs: set[tuple[int, int]],
    follow_links: bool = False,
) -> int:
    """Add the dumps under folder ``p``; how many were met (also those already found)."""
    walk_errors: list[OSError] = []
    met = 0
    top = os.path.realpath(p)
    links: dict[str, str] = {}  # a link to a folder elsewhere, to be entered -> its target
    # links are followed (a folder of symlinked dumps, a symlinked rank_0/ inside it, rank folders
    # linked from the nodes of a cluster); a loop is cut here, and a link to a folder outside the
    # named one that holds no dump (to "/", "up -> ..") is not entered
    for root, dirs, names in os.walk(p, onerror=walk_errors.append, followlinks=True):
        try:
            st = os.stat(root)
            if (st.st_dev, st.st_ino) in seen_dirs:
                dirs[:] = []
                continue
            seen_dirs.add((st.st_dev, st.st_ino))
        except OSError:
            pass
        folder = _pure(root)
        if root in links:
            out.links.append((_display(folder), printable(links[root])))
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and _enter(out, top, folder, d, follow_links, links))
        real_root = None  # resolved once per folder: a file that is no link resolves into it
        # what every file of the folder shares is worked out once (21k files in a 256-rank folder)
        shown_folder = _display(folder)
        rank = _rank_of(folder)
        for name in sorted(names):
            fp = _join(folder, name)
            inner = name
            if name.lower().endswith(_COMPRESSED):  # else none of them is stripped below
                for suffix in _COMPRESSED:
                    if inner.lower().endswith(suffix):
                        inner = inner[: -len(suffix)]
            if _suffix(inner).lower() in NOT_IR_SUFFIXES:
                continue
            try:
                st = os.stat(fp, follow_symlinks=False)
                link = stat_module.S_ISLNK(st.st_mode)
                if link:
                    st = os.stat(fp)
            except FileNotFoundError:
                if os.path.islink(fp):  # a rank linked from a node that is not mounted, say
                    out.diagnostics.append(
                        Diagnostic(
                            _display(fp),
                            0,
                            D.UNREADABLE,
                            f"{DANGLING} {printable(os.readlink(fp))}, which does not exist",
                        )
                    )
                continue  # else a file removed while we walk
            except OSError as exc:  # e.g. in a folder that can be listed but not entered
                out.diagnostics.append(
                    Diagnostic(_display(fp), 0, D.UNREADABLE, f"cannot read: {(exc.strerror or str(exc)).lower()}")
                )
                continue
            if not stat_module.S_ISREG(st.st_mode):
                continue
            try:
                head = _read_head(fp)  # one open: the magic bytes and, uncompressed, the start
                compression = compression_of(head[:8])
                kind = kind_of(head) if compression is None else sniff(fp, compression)
            except PermissionError:
                compression, kind = None, "unreadable"
            except OSError:
                compression = None
                kind = sniff(fp, compression)
            if kind != "dump":
                # other files sit next to the dumps; but a .ir that is not one was damaged
                if kind in ("unreadable", "damaged", "unsupported") or _suffix(inner).lower() == ".ir":
                    out.diagnostics.append(_not_a_dump(_display(fp), kind, compression))
                continue
            met += 1
            if link:
                key = os.path.realpath(fp)
            else:
                real_root = real_root or os.path.realpath(root)
                key = _under(real_root, name)
            if key not in files:
                shown = name if shown_folder == "." else _under(shown_folder, name)
                files[key] = DumpFile(fp, shown, folder, rank, False, _stage_named(name), st.st_size, compression)
    for err in walk_errors:
        if _pure(err.filename or "") == p:
            raise InputError(f"{raw}: {(err.strerror or str(err)).lower()}")
        out.diagnostics.append(
            Diagnostic(
                _display(_pure(err.filename or raw)),
                0,
                D.UNREADABLE,
                f"cannot list folder: {(err.strerror or str(err)).lower()}",
            )
        )
    return met


LINK_NOT_FOLLOWED = "not read: a link to"
DANGLING = "cannot read: a link to"


def _enter(out: Discovery, top: str, parent: str, name: str, follow_links: bool, links: dict[str, str]) -> bool:
    """Whether a sub-folder may be walked: it is no link, its link leads to a folder within the
    named folder ``top`` (real path), or to a folder that holds dumps (rank folders linked from
    the nodes of a cluster; ``links`` receives it), or every link is followed; else a diagnostic
    names the link and how to read it. The sub-folder is ``name`` in ``parent``."""
    folder = _join(parent, name)
    if not os.path.islink(folder):
        return True
    target = os.path.realpath(folder)
    if target == top or target.startswith(top.rstrip(os.sep) + os.sep):
        return True
    if follow_links or _holds_dumps(target):
        links[folder] = target
        return True
    out.diagnostics.append(
        Diagnostic(
            _display(folder),
            0,
            D.UNREADABLE,
            f"{LINK_NOT_FOLLOWED} {printable(target)}, a folder outside the named one that holds no graph IR "
            f"dump (no file in it starts like one, no rank_N/ folder); to read what the links lead to, name "
            f"them (`irlint {_display(parent)}/*`) or follow every link with -L/--follow-links",
        )
    )
    return False


# a link's target is judged by this many of its files at most (a link to $HOME, to "/")
_LINK_PROBE_FILES = 64


def _holds_dumps(folder: str) -> bool:
    """Whether a folder holds graph IR dumps: a file in it that starts like one (plain or
    compressed), or a rank_N/ folder."""
    probed = 0
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir() and _RANK.match(entry.name):
                    return True
                if probed >= _LINK_PROBE_FILES or not entry.is_file():
                    continue
                inner = re.sub(r"\.(gz|bz2|xz|zst)\Z", "", entry.name, flags=re.IGNORECASE)
                if _suffix(inner).lower() in NOT_IR_SUFFIXES:
                    continue
                probed += 1
                try:
                    head = _read_head(entry.path)
                except OSError:
                    continue
                compression = compression_of(head[:8])
                if is_dump_start(head) if compression is None else sniff(entry.path, compression) == "dump":
                    return True
    except OSError:
        return False
    return False


def _not_a_dump(display: str, kind: str, compression: str | None) -> Diagnostic:
    if kind == "unreadable":
        return Diagnostic(display, 0, D.UNREADABLE, "cannot read: permission denied")
    if kind == "damaged":
        return Diagnostic(display, 0, D.UNREADABLE, f"cannot read: damaged {compression}-compressed file")
    if kind == "unsupported":
        return Diagnostic(
            display,
            0,
            D.UNREADABLE,
            f"{compression}-compressed: irlint reads gzip, bzip2 and xz; for zstd install the "
            f"'zstandard' package or decompress it (zstd -d)",
        )
    prefix = f"{compression}-compressed, " if compression else ""
    return Diagnostic(display, 1, D.BINARY if kind == "binary" else D.NOT_IR, prefix + _NOT_A_DUMP[kind])


def _why_empty(diags: list[Diagnostic]) -> str:
    """What a folder without a dump held instead, from the diagnostics of its walk."""
    counts: dict[tuple[str, str], int] = {}
    for d in diags:
        if d.message.startswith("cannot list folder"):
            what = ("sub-folder that cannot be listed", "sub-folders that cannot be listed")
        elif d.message.startswith(DANGLING):
            what = ("link that leads nowhere", "links that lead nowhere")
        elif d.message.startswith(LINK_NOT_FOLLOWED):
            what = (
                "link to a folder that holds no graph IR dump (not followed)",
                "links to folders that hold no graph IR dump (not followed)",
            )
        elif d.code == D.UNREADABLE and "damaged" in d.message:
            what = ("damaged compressed file", "damaged compressed files")
        elif d.code == D.UNREADABLE and "compressed" in d.message:
            what = (
                "zstd-compressed file (no zstd reader installed)",
                "zstd-compressed files (no zstd reader installed)",
            )
        elif d.code == D.UNREADABLE:
            what = ("file that cannot be read", "files that cannot be read")
        elif d.code == D.BINARY:
            what = ("binary .ir file", "binary .ir files")
        elif "empty" in d.message:
            what = ("empty .ir file", "empty .ir files")
        else:
            what = (".ir file that is not a graph dump", ".ir files that are not graph dumps")
        counts[what] = counts.get(what, 0) + 1
    if not counts:
        return (
            "no file in it starts like a graph dump ('# IR entry:'; files named "
            f"{', '.join(sorted(NOT_IR_SUFFIXES))} are not opened)"
        )
    parts = [f"{n} {what[0] if n == 1 else what[1]}" for what, n in counts.items()]
    return "found only " + ", ".join(parts)


# a rank's folder in a path: rank_0/, rank_17/
RANK_DIR = re.compile(r"(^|[\\/])rank_\d+(?=[\\/]|$)")


def final_files(files: list[DumpFile], stages: tuple[str, ...]) -> list[DumpFile]:
    """Per save_graphs folder (one per rank), the file the rules read: the latest file of the
    first stage in ``stages`` the folder holds; a file named directly is read as is."""
    out: list[DumpFile] = []
    folders: dict[str, list[DumpFile]] = defaultdict(list)
    for f in files:
        if f.explicit:
            out.append(f)
        else:
            folders[f.folder].append(f)
    for folder_files in folders.values():
        for name in stages:
            hits = [f for f in folder_files if f.stage.name == name or f.stage.label == name]
            if hits:
                out.append(max(hits, key=lambda f: (f.stage.seq or -1, f.display)))
                break
    return sorted(out, key=lambda f: (case_of(f), f.rank if f.rank is not None else -1, f.display))


def rank_folder(f: DumpFile) -> str:
    """A file's folder with its rank part as ``rank_*``: the same for every rank of one run."""
    return RANK_DIR.sub(r"\1rank_*", f.folder) if f.rank is not None else f.folder


def case_of(f: DumpFile) -> str:
    """The save_graphs folder a file belongs to: rank folders of one run side by side, one table
    per run."""
    if f.explicit or not f.folder:
        return f.display
    return rank_folder(f)
