"""The reader's main loop: the scanner's items (whole node records, runs of source-trace lines,
single lines) handed to the line kinds, with the byte range of each node's trace remembered."""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

from .. import diagnostics as D
from .lines import LineKinds
from .record import TYPE_LINES_READ
from .scanner import RECORD_LIMIT, ControlLine, Item, NodeRecord, TraceRun, scan

MAX_RECORD_BYTES = RECORD_LIMIT  # a node record longer than this is skipped, not parsed
MAX_CONTINUATION_LINES = 100_000  # a multi-line tensor value that never closes

NODE_COMMENT = b"      # "
TYPE_LINE = b"      : "
_RECORD_STARTS = (b"  %", b"  Return(", b"      : ", b"      # ", b"}", b"subgraph ", b"# ", b"%para")


class LineLoop(LineKinds):
    """Part of the reader (``reader._Reader``): the scanner's items to the line kinds."""

    def loop(self, f: BinaryIO) -> None:
        traces = self.ir.traces
        trace_start = -1  # byte offset where the open trace region starts
        trace_line = trace_end = 0
        lineno = 0
        items = scan(f)
        for item in items:
            while True:  # runs again only for the line that ended a multi-line record
                if type(item) is NodeRecord:
                    # the common case, a whole record at once; the same steps as its lines one by one
                    if trace_start >= 0:
                        if self.current_key >= 0:
                            traces[self.current_key] = (trace_line, trace_start, item[1])
                        trace_start = -1
                    self.node_record(item)
                    if item[6] >= 0 and self.current_key >= 0:
                        trace_line, trace_start, trace_end = item[5:8]
                    lineno = item[8]
                    break
                if type(item) is TraceRun:
                    # Source traces: most of the bytes. Only remember where they are.
                    if trace_start < 0:
                        trace_start, trace_line = item.start, item.line
                    trace_end = item.end
                    lineno = item.line + item.lines - 1
                    self.check_trace_utf8(item)
                    break
                lineno, start, raw = item
                if trace_start >= 0:
                    if self.current_key >= 0 and raw.startswith(NODE_COMMENT):
                        pass  # a "Corresponding ... candidate" block keeps the region open
                    else:
                        if self.current_key >= 0:
                            traces[self.current_key] = (trace_line, trace_start, start)
                        trace_start = -1
                if type(item) is ControlLine:
                    self.control_line(raw, lineno)
                    break
                if len(raw) >= MAX_RECORD_BYTES:
                    self.diag(
                        lineno,
                        D.LINE_TOO_LONG,
                        f"line of {len(raw) + 1:,} bytes skipped",
                        raw[:80].decode("utf-8", "replace"),
                    )
                    self.current, self.current_key = None, -1
                    break
                if raw.startswith(TYPE_LINE) and self.type_lines and self.current is not None and raw.isascii():
                    self.type_lines += 1  # a kernel graph's second and third type lines: no rule reads them
                    break
                # trailing blanks (an editor, a copy) and a UTF-8 byte order mark carry no meaning
                line = self.decode(raw, lineno).rstrip("\r \t")
                if lineno == 1:
                    line = line.lstrip("\ufeff")
                if self.divert is not None and self.divert(line, lineno):
                    break
                if line.startswith("  %"):
                    first = lineno  # a record's line is its first line, however many it spans
                    ended_by = None
                    if line.count("(") != line.count(")") or line.count("[") != line.count("]"):
                        line, lineno, ended_by = self.continuation(line, items, lineno)
                    self.node_line(line, first)
                    if ended_by is not None:
                        item = ended_by
                        continue
                elif line.startswith("      "):
                    self.comment_line(line, lineno)
                elif line.startswith("  Return(") and (
                    line.count("(") != line.count(")") or line.count("[") != line.count("]")
                ):
                    # a graph returning a printed constant tensor (RoPE's arange) wraps like a node line
                    first = lineno
                    line, lineno, ended_by = self.continuation(line, items, lineno)
                    self.top_line(line, first)
                    if ended_by is not None:
                        item = ended_by
                        continue
                else:
                    self.top_line(line, lineno)
                break
        if trace_start >= 0 and self.current_key >= 0:
            traces[self.current_key] = (trace_line, trace_start, trace_end)
        self.eof_line = lineno

    def continuation(self, line: str, items: Iterator[Item], lineno: int) -> tuple[str, int, Item | None]:
        """A node line holding a printed tensor continues until its brackets close. A line that
        starts a new record ends it early (the broken record is then reported, not swallowed);
        that line is returned, to be read next."""
        parts = [line]
        depth = line.count("(") - line.count(")") + line.count("[") - line.count("]")
        size = len(line)
        extra = 0
        for item in items:
            if type(item) is not tuple or item[2].startswith(_RECORD_STARTS):
                return " ".join(parts), lineno, item
            extra += 1
            lineno = item[0]
            text = self.decode(item[2], lineno).rstrip("\r")
            parts.append(text.strip())
            size += len(text)
            depth += text.count("(") - text.count(")") + text.count("[") - text.count("]")
            if depth <= 0 or size > MAX_RECORD_BYTES or extra >= MAX_CONTINUATION_LINES:
                break
        return " ".join(parts), lineno, None

    def node_record(self, item: NodeRecord) -> None:
        lineno, _, node, types, scope = item[:5]
        line = node.decode().rstrip(" \t")
        # the scanner matched "  %N(name) = ": cut there (NODE_LINE's \s also takes the Unicode
        # spaces a name of other characters may hold: such a line goes through it)
        open_at = line.find("(", 3)
        close_at = line.find(")", open_at)
        name = line[open_at + 1 : close_at]
        if name.isascii():
            self.current, self.current_key = None, -1
            self.record(lineno, line[2:open_at], name, line[close_at + 4 :], line)
        else:
            self.node_line(line, lineno)
        current = self.current
        if current is None:  # not read: its other lines are reported as they always are
            for raw in types.splitlines():
                lineno += 1
                self.comment_line(raw.decode(), lineno)
            return
        if types:
            first = types.find(b"\n")
            self.type_lines = types.count(b"\n")
            known = TYPE_LINES_READ.get(types[8:first])
            if known is not None:
                current["in_types"], current["out_type"] = known
            else:
                self.first_type_line(current, types[8:first].decode().strip(), types[:first], lineno + 1)
        if scope is not None:
            scope = scope.decode().rstrip(" \t")
            current["scope"] = scope[:-1] if scope.endswith(")") else scope

    def control_line(self, raw: bytes, lineno: int) -> None:
        """A structural line holding a NUL, an escape or another C0 control byte: damage, not text.
        The line is skipped; a node line's record with it (its type and scope lines then say so)."""
        col = next(i for i, b in enumerate(raw) if b < 32 and b != 9 and not (b == 13 and i == len(raw) - 1))
        text = self.decode(raw, lineno)
        if raw.startswith(TYPE_LINE) and self.current is not None:
            self.type_lines += 1  # the record has its type line; what it says was not read
        elif not raw.startswith(NODE_COMMENT):
            self.current, self.current_key = None, -1
        code = D.BAD_RECORD if raw.startswith(_RECORD_STARTS) else D.UNKNOWN_LINE  # a record's line, or junk
        self.diag(lineno, code, f"control byte 0x{raw[col]:02x} at column {col + 1}; line skipped", text)

    def check_trace_utf8(self, run: TraceRun) -> None:
        if not run.text:
            return  # the scanner found the whole block valid
        for i, raw in enumerate(run.text.split(b"\n")[: run.lines]):
            if not raw.isascii():
                self.decode(raw, run.line + i)
