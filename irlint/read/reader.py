"""Reads a dump file into an ``IRFile``: the driver of the three reading steps.

1. ``irlint.read.scanner`` finds the structural lines in large blocks of bytes, most node records as
   a whole (node, type and scope lines); source-trace lines, most of a file's bytes, are never
   looked at one by one: a node keeps their byte range and reads them on demand.
2. The reader tells the line kinds apart and keeps the state between them, in four parts:
   ``loop`` (the scanner's items), ``lines`` (headers, sections, type and scope lines),
   ``records`` (subgraphs, parameters, nodes: ``irlint.read.record`` parses them with the grammar)
   and ``failure`` (an ``analyze_fail.ir``'s message).
3. ``irlint.read.assemble`` turns the collected records into the graph model.

A line that cannot be read becomes a diagnostic and reading resumes at the next line.
"""

from __future__ import annotations

import gc
from typing import BinaryIO

from .. import diagnostics as D
from ..diagnostics import Diagnostic, excerpt
from ..model import IRFile, Subgraph
from .assemble import Records, assemble, check_counts
from .failure import FailureMessage
from .lines import LineKinds
from .loop import MAX_RECORD_BYTES, LineLoop
from .record import normalize_op
from .records import NO_ATTRS, RecordParsing

__all__ = ["read_ir", "warm", "normalize_op", "MAX_RECORD_BYTES", "NO_ATTRS"]

MAX_UTF8_REPORTED = 20
MAX_UNTYPED_REPORTED = 20


def warm() -> None:
    """What the first read of a process does whatever the file: build the parser. A process that
    forks workers to read does it once, before, for all of them."""
    from .parser import _parser

    _parser()


def read_ir(path: str, display: str | None = None, stream: BinaryIO | None = None) -> IRFile:
    """Read one dump. Never raises for bad content; I/O errors become a diagnostic too.

    ``stream``: read this seekable binary stream instead of opening ``path`` (standard input,
    a decompressed dump); source traces are then read back from it.
    """
    ir = IRFile.empty(path)
    ir.source = stream
    # Reading only adds objects, and the cyclic collector would rescan the growing graph again
    # and again (a large share of the time on a large dump). Afterwards the new objects go straight to
    # the oldest generation (freeze + unfreeze): the first young collection would otherwise scan
    # the whole model once more; a full collection still sees them.
    collecting = gc.isenabled()
    gc.disable()
    try:
        if stream is not None:
            stream.seek(0)
            _Reader(ir, display or path).run(stream)
        else:
            with open(path, "rb", buffering=0) as f:
                _Reader(ir, display or path).run(f)
    except OSError as exc:
        ir.diagnostics.append(Diagnostic(display or path, 0, D.UNREADABLE, f"cannot read: {exc.strerror or exc}"))
    finally:
        if collecting:
            gc.freeze()
            gc.unfreeze()
            gc.enable()
    return ir


class _Reader(LineLoop, LineKinds, RecordParsing, FailureMessage):
    """One file's reading state; each part's methods live in its module (see above)."""

    def __init__(self, ir: IRFile, name: str):
        self.ir = ir
        self.name = name
        self.rec = Records()
        self.sub: Subgraph | None = None
        self.local: dict[str, int] = {}  # %N -> key within the open subgraph
        self.current: dict | None = None  # the record whose comment lines follow
        self.current_key = -1
        self.type_lines = 0
        self.section: dict | None = None  # "key: value" lines go here (# Attrs, subgraph attr)
        self.pending_sub_attrs: dict = {}
        self.bad_utf8 = 0
        self.bad_run: list[Diagnostic] = []  # the open run of consecutive bad lines
        self.block: str | None = None  # a top-level "name {" block such as "jit config {"
        self.symbol_details = False  # after "symbol engine details:": its blocks are symbol engines
        self.in_order = False  # the "# Order:" listing after a subgraph
        self.eof_line = 0
        self.param_data: dict[int, dict] = {}  # key -> data of a parameter, for a later, typed declaration
        # while a construct of several lines is open (the message of an analyze_fail.ir, a subgraph
        # header printed one parameter per line), its method sees each line first: True, taken
        self.divert = None
        self.message: list[str] = []
        self.marks: list[tuple[int, int]] = []  # "#-----> N" lines: (line, key of the next record)
        self.split_header: tuple[str, int, list[tuple[str, int]]] | None = None
        self.open_record: tuple[int, str, bool] | None = None  # the last node record: line, text, a Return?
        self.typed_records = 0  # nodes other than a Return with their type line
        self.untyped_records: list[tuple[int, str]] = []  # records without a type line

    def diag(self, line: int, code: str, message: str, text: str = "") -> None:
        new = Diagnostic(self.name, line, code, message, excerpt(text))
        if code in D.LINE_CODES and line > 0:
            run = self.bad_run
            if run and run[-1].line <= line <= run[-1].line + 1:
                # a run of bad lines (megabytes of junk) keeps its first line, one line of each kind
                # and its last line: all that its one diagnostic says (D.line_run_diagnostic)
                if run[-1].line > run[0].line and any(d.code == run[-1].code for d in run[:-1]):
                    run[-1] = new
                else:
                    run.append(new)
                return
            self.close_run()
            self.bad_run = [new]
            return
        self.close_run()
        self.ir.diagnostics.append(new)

    def close_run(self) -> None:
        run = self.bad_run
        if run:
            if run[-1].line > run[0].line:
                self.ir.diagnostics.append(D.line_run_diagnostic(run))
            else:
                self.ir.diagnostics.extend(run)  # bad lines, all on one line
            self.bad_run = []

    def untyped_diagnostics(self) -> None:
        """Records without their type line in a dump that prints types: cut or damaged. (A dump
        written without types, MS_DEV_DUMP_IR_FORMAT=0, types only its Returns: IR015 says so.)"""
        untyped = self.untyped_records
        new = [
            Diagnostic(
                self.name, lineno, D.BAD_RECORD, "node record without its type line (cut or damaged?)", excerpt(text)
            )
            for lineno, text in untyped[:MAX_UNTYPED_REPORTED]
        ]
        if len(untyped) > MAX_UNTYPED_REPORTED:
            rest = untyped[MAX_UNTYPED_REPORTED:]
            new.append(
                Diagnostic(
                    self.name,
                    rest[0][0],
                    D.BAD_RECORD,
                    f"{len(rest)} more node records without their type line (lines {rest[0][0]}-{rest[-1][0]})",
                    excerpt(rest[0][1]),
                )
            )
        self.ir.diagnostics[:] = sorted(self.ir.diagnostics + new, key=lambda d: d.line)

    def decode(self, raw: bytes, lineno: int) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            self.bad_utf8 += 1
            if self.bad_utf8 <= MAX_UTF8_REPORTED:
                self.diag(lineno, D.INVALID_UTF8, f"invalid UTF-8 at byte {exc.start} of the line; replaced")
            return raw.decode("utf-8", "replace")

    def finish(self) -> None:
        if self.divert is not None:  # the file ends in a message or a split header
            if self.split_header is not None:
                self.header_line("", self.eof_line)
            else:
                self.end_message()
        if self.sub is not None and not self.sub.closed:
            self.diag(self.eof_line, D.TRUNCATED, f"file ends inside subgraph {self.sub.name} (truncated dump?)")
        self.close_run()
        self.ir.diagnostics[:] = D.merge_line_runs(self.ir.diagnostics)
        self.end_record()
        if self.untyped_records and self.typed_records:
            self.untyped_diagnostics()
        assemble(self.ir, self.rec, self.diag)
        if self.ir.failure is not None:
            self.failure_diagnostic()
        check_counts(self.ir, self.eof_line, self.diag)
