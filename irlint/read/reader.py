"""Reads a dump file into an ``IRFile``: the driver of the three reading steps.

1. ``irlint.read.scanner`` finds the structural lines in large blocks of bytes, most node records as
   a whole (node, type and scope lines); source-trace lines, most of a file's bytes, are never
   looked at one by one: a node keeps their byte range and reads them on demand.
2. The reader tells the line kinds apart and keeps the state between them (``state``: its
   attributes, diagnostics, decoding), in four parts, each a class on the ones it calls:
   ``records`` (subgraphs, parameters, nodes: ``irlint.read.record`` parses them with the grammar)
   and ``failure`` (an ``analyze_fail.ir``'s message) on the state, ``lines`` (headers, sections,
   type and scope lines) on both, ``loop`` (the scanner's items) on ``lines``; ``_Reader`` drives them.
3. ``irlint.read.assemble`` turns the collected records into the graph model.

A line that cannot be read becomes a diagnostic and reading resumes at the next line.
"""

from __future__ import annotations

import gc
from typing import BinaryIO

from .. import diagnostics as D
from ..diagnostics import Diagnostic, excerpt
from ..model import IRFile
from .assemble import assemble, check_counts
from .dump_start import is_dump_start
from .loop import MAX_RECORD_BYTES, LineLoop
from .record import normalize_op
from .records import NO_ATTRS

__all__ = ["read_ir", "warm", "normalize_op", "MAX_RECORD_BYTES", "NO_ATTRS"]

MAX_UNTYPED_REPORTED = 20


def warm() -> None:
    """What the first read of a process does whatever the file: compile the scanner's pattern (the
    fast parser reads the common forms: Lark's parser is built only for a piece it refuses). A
    process that forks workers to read does it once, before, for all of them."""
    from .scanner import record_pattern

    record_pattern(True, False)


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


class _Reader(LineLoop):
    """One file's reading: the driver of the parts (see above), each in its module on ``ReaderState``."""

    def run(self, f: BinaryIO) -> None:
        first = f.read(4096)
        if b"\x00" in first:
            self.diag(1, D.BINARY, "binary content (NUL bytes): not a text IR dump")
            return
        if not is_dump_start(first):
            if not first.strip():
                self.diag(1, D.NOT_IR, "empty file: not a graph IR dump")
            else:
                self.diag(
                    1,
                    D.NOT_IR,
                    "not a graph IR dump (it does not start with '# IR entry:')",
                    first.split(b"\n", 1)[0].decode("utf-8", "replace"),
                )
            return
        f.seek(0)
        try:
            self.loop(f)
        finally:
            self.close_run()
        self.finish()

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
            self.failure_diagnostic(self.ir.failure)
        check_counts(self.ir, self.eof_line, self.diag)
