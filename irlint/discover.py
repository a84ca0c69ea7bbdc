"""Which files of the given paths are graph IR dumps."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from . import diagnostics as D
from .diagnostics import Diagnostic
from .stages import Stage, stage_of

# Written next to the dumps, never graph IR: skipped without opening them.
NOT_IR_SUFFIXES = {".pb", ".dot", ".dat", ".json", ".npy", ".npz", ".txt", ".csv", ".log", ".py", ".yaml", ".md"}
SKIP_DIRS = {"actor_set"}
_RANK = re.compile(r"rank_(\d+)\Z")
# How a graph dump starts: "# IR entry: @g" (2.x), "#IR entry      : @g" (1.x, 2.0), or the note
# that opens an analyze_fail.ir
DUMP_START = re.compile(rb"#\s*IR entry\s*:|# 1\.This file shows the parsed IR info")
_HEAD_BYTES = 64


_NOT_A_DUMP = {
    "binary": "binary content (NUL bytes): not a text IR dump",
    "empty": "empty file: not a graph IR dump",
    "text": "not a graph IR dump (it does not start with '# IR entry:')",
}


class InputError(Exception):
    """A path the user named cannot be used at all (exit code 2)."""


@dataclass(frozen=True, slots=True)
class DumpFile:
    path: str           # as opened
    display: str        # as reported (relative to the working directory when possible)
    folder: str         # the save_graphs folder it belongs to ("" for a file named directly)
    rank: int | None
    explicit: bool      # named on the command line: always linted
    stage: Stage
    size: int


def is_dump_start(head: bytes) -> bool:
    return DUMP_START.match(head.lstrip(b"\xef\xbb\xbf")) is not None


def sniff(path: str) -> str:
    """``dump``, ``binary``, ``empty``, ``text`` (some other text) or ``unreadable``."""
    try:
        with open(path, "rb") as f:
            head = f.read(_HEAD_BYTES)
    except OSError:
        return "unreadable"
    if is_dump_start(head):
        return "dump"
    if b"\x00" in head:
        return "binary"
    return "text" if head.strip() else "empty"


def _display(path: Path) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return str(path)
    return str(path) if rel.startswith(".." + os.sep + "..") else rel


def _rank_of(path: Path) -> int | None:
    for part in reversed(path.parts[:-1]):
        m = _RANK.match(part)
        if m:
            return int(m.group(1))
    return None


def discover(paths: list[str]) -> tuple[list[DumpFile], list[Diagnostic]]:
    """Files to read, and diagnostics for what was skipped. Raises InputError for a path that
    does not exist or cannot be listed."""
    files: dict[str, DumpFile] = {}
    diags: list[Diagnostic] = []
    for raw in paths:
        p = Path(raw)
        try:
            st = p.stat()
        except FileNotFoundError:
            raise InputError(f"{raw}: no such file or folder") from None
        except OSError as exc:   # e.g. inside a folder that cannot be listed
            raise InputError(f"{raw}: {(exc.strerror or str(exc)).lower()}") from None
        if p.is_file():
            key = str(p.resolve())
            if key not in files:
                files[key] = DumpFile(str(p), _display(p), "", _rank_of(p.resolve()), True, stage_of(p.name),
                                      st.st_size)
            continue
        if not os.access(p, os.R_OK | os.X_OK):
            raise InputError(f"{raw}: permission denied")
        walk_errors: list[OSError] = []
        for root, dirs, names in os.walk(p, onerror=walk_errors.append):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
            for name in sorted(names):
                if Path(name).suffix.lower() in NOT_IR_SUFFIXES:
                    continue
                fp = Path(root) / name
                if not fp.is_file():
                    continue
                kind = sniff(str(fp))
                if kind != "dump":
                    # other files sit next to the dumps; but a .ir that is not one was damaged
                    if kind == "unreadable":
                        diags.append(Diagnostic(_display(fp), 0, D.UNREADABLE, "cannot read: permission denied"))
                    elif fp.suffix.lower() == ".ir":
                        diags.append(Diagnostic(_display(fp), 1, D.BINARY if kind == "binary" else D.NOT_IR,
                                                _NOT_A_DUMP[kind]))
                    continue
                key = str(fp.resolve())
                if key not in files:
                    files[key] = DumpFile(str(fp), _display(fp), str(Path(root)), _rank_of(fp.resolve()), False,
                                          stage_of(name), fp.stat().st_size)
        for err in walk_errors:
            if Path(err.filename or "") == p:
                raise InputError(f"{raw}: {err.strerror or err}")
            diags.append(Diagnostic(_display(Path(err.filename or raw)), 0, D.UNREADABLE,
                                    f"cannot list folder: {err.strerror or err}"))
    return list(files.values()), diags
