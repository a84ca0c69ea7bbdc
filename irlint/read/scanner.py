"""Finds the lines of a dump that hold structure, without touching the others in Python.

A dump is read in large blocks. One compiled regex walks each block and matches, in this order:
- a whole node record: the node line, its type lines, its scope line and the source-trace lines
  after them (a ``NodeRecord``; most of a dump is such records);
- a run of source-trace lines (``      # In file ...``, ``      # Corresponding code candidate:``;
  50-75% of a dump's bytes) as a whole (a ``TraceRun``);
- or a single other line, handed to the reader as ``(line number, byte offset, bytes)``.
Of trace lines only their first line number and byte range are kept.

A node record is handed over whole only when the reader would read it exactly as it reads its
lines one by one: valid UTF-8, no carriage returns, a type line after the node line or balanced
brackets on it (else a printed tensor continues it on the next lines), and no line too long to
parse. Otherwise its lines are handed over one by one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import BinaryIO, final

# A small block: a fresh process pays a page fault per 4 KiB of the buffer it first fills (so a
# large block slows a one-file lint), and the block stays in the CPU's cache for the regex.
BLOCK_BYTES = 256 * 1024
RECORDS = True  # hand over whole node records (tests compare with line by line)
RECORD_LIMIT = 4 * 1024 * 1024  # a record this long goes line by line (the reader skips such lines)

_TRACE_LINE = rb"(?:      # In file |      # Corresponding |# In file )[^\n]*\n"
# The text of a structural line: no C0 control byte but a tab (a NUL or an escape in a node, type or
# scope line is damage, never text). A line ending in CR (a copied dump) keeps it.
# Telling text from such bytes costs the regex a third more time: it does so only in a block that
# holds one (a C-speed test), and the patterns below come in both forms.
_CONTROL_BYTES = bytes(b for b in range(32) if b not in (9, 10))
_CONTROL_TEST_BYTES = 64 * 1024
_STRICT_TEXT = rb"[^\n\x00-\x08\x0b-\x1f]*"


@cache
def record_pattern(records: bool, strict: bool) -> re.Pattern:
    """The regex of a block: with whole node records or line by line, telling control bytes apart
    or not. Compiled when a block first needs it (most dumps need one of the four)."""
    text, name = (_STRICT_TEXT, rb"[^\s)\x00-\x1f]*") if strict else (rb"[^\n]*", rb"[^\s)]*")
    if not records:
        # A run of trace lines (group 1), one line of text (2), or a line holding a control byte (3).
        return re.compile(rb"((?:" + _TRACE_LINE + rb")+)|(" + text + rb"\r?)\n|([^\n]*)\n")
    # A whole node record first: node line (1), type lines (2), scope (3), traces (4); then the same
    # three alternatives as above (5, 6, 7).
    return re.compile(
        rb"(  %[0-9]+\(" + name + rb"\) = " + text + rb")\n((?:      : " + text + rb"\n)*)"
        rb"(?:      # (?:Fullname with scope|Scope): \((" + text + rb")\n)?((?:" + _TRACE_LINE + rb")*)"
        rb"|((?:" + _TRACE_LINE + rb")+)|(" + text + rb")\n|([^\n]*)\n"
    )


_RUN, _LINE, _CONTROL = 5, 6, 7


@final
@dataclass(slots=True)
class TraceRun:
    """Consecutive source-trace lines: they are read back only when a finding quotes them."""

    line: int  # 1-based number of the first line
    start: int  # byte offset of the first line
    end: int  # byte offset just after the last line
    lines: int  # how many lines
    text: bytes  # the bytes, for an UTF-8 check; empty when the block was valid UTF-8


@final
class ControlLine(tuple):
    """``(line number, byte offset, line without its newline)`` of a line outside the source traces
    that holds a C0 control byte other than a tab (and a CR before its newline)."""

    __slots__ = ()


@final
class NodeRecord(tuple):
    """A node line with the lines that belong to it, in valid UTF-8: the tuple
    ``(line, start, node, types, scope, trace_line, trace_start, trace_end, last)``:
    the node line's number and byte offset, the node line without its newline, its type lines
    each with its newline (kernel graphs print three), what the scope line holds after "(" or
    None, the first line number and byte range of the trace lines after it (``trace_start`` -1
    when there are none), and the number of the record's last line. (A plain tuple: one is
    made for most records of a dump.)"""

    __slots__ = ()


# What ``scan`` yields (a ``ControlLine`` is a line too)
Item = tuple[int, int, bytes] | TraceRun | NodeRecord


def scan(f: BinaryIO, block_bytes: int | None = None) -> Iterator[Item]:
    """Yields, in file order, a ``NodeRecord`` for each plain node record, a ``TraceRun`` for each
    other run of trace lines and ``(line number, byte offset, line without its newline)`` for each
    other line. Any line length works: a block grows until it holds a whole line."""
    block_bytes = block_bytes or BLOCK_BYTES
    lineno = 0
    offset = 0  # file offset of buf[0]
    # One buffer for every block (fresh blocks cost a page fault per 4 KiB); an unfinished line
    # is moved to its front before the next read.
    buf = bytearray(block_bytes)
    keep = 0  # bytes of an unfinished line at buf[:keep]
    eof = False
    while not eof:
        if len(buf) - keep < block_bytes:  # a long line: the block grows until it holds it
            buf.extend(bytes(block_bytes))
        with memoryview(buf) as view:
            got = f.readinto(view[keep : keep + block_bytes])  # type: ignore[attr-defined]  # binary files have it
        if not got:
            eof = True
            if not keep:
                break
            data_end = offset + keep  # a newline added below is not the file's
            filled = cut = keep
            if buf[keep - 1] != 10:  # the last line may lack its newline
                buf[keep] = 10
                filled = cut = keep + 1
        else:
            filled = keep + got
            # buf[:keep] is an unfinished line: only the new bytes can hold a newline (a long line
            # read in many blocks is not searched again and again)
            cut = buf.rfind(b"\n", keep, filled) + 1
            if cut == 0:  # no complete line yet
                keep = filled
                continue
            data_end = offset + filled
        valid_utf8 = _is_utf8(buf, cut)
        strict = _has_control_byte(buf, cut)
        if valid_utf8 and RECORDS and buf.find(b"\r", 0, cut) < 0:
            pattern, run_group, line_group, control_group = record_pattern(True, strict), _RUN, _LINE, _CONTROL
        else:  # lines one by one, so that the reader reports each bad one
            pattern, run_group, line_group, control_group = record_pattern(False, strict), 1, 2, 3
        for m in pattern.finditer(buf, 0, cut):
            kind = m.lastindex
            if kind == line_group:
                lineno += 1
                yield lineno, offset + m.start(), m.group(kind)
                continue
            if kind == control_group:
                lineno += 1
                yield ControlLine((lineno, offset + m.start(), m.group(kind)))
                continue
            if kind == run_group:
                start, end = m.span()
                n = buf.count(b"\n", start, end)
                stop = min(offset + end, data_end)
                yield TraceRun(lineno + 1, offset + start, stop, n, b"" if valid_utf8 else bytes(buf[start:end]))
                lineno += n
                continue
            # a node record: the last group that took part is its (maybe empty) trace run
            node, types, scope = m.group(1, 2, 3)
            start, head_end, end = m.start(), m.start(4), m.end()
            # an unbalanced node line continues on the next lines, unless a type line follows it
            # (then, line by line, the record would end there too)
            plain = head_end - start < RECORD_LIMIT and (
                types or node.count(b"(") == node.count(b")") and node.count(b"[") == node.count(b"]")
            )
            if plain:
                head_last = lineno + 1 + types.count(b"\n") + (scope is not None)
            else:
                head_last = lineno + buf.count(b"\n", start, head_end)
                yield from _lines(buf, start, head_end, lineno, offset)
            n = buf.count(b"\n", head_end, end) if end > head_end else 0
            stop = min(offset + end, data_end)
            if plain:
                yield NodeRecord(
                    (
                        lineno + 1,
                        offset + start,
                        node,
                        types,
                        scope,
                        head_last + 1,
                        offset + head_end if n else -1,
                        stop if n else 0,
                        head_last + n,
                    )
                )
            elif n:
                yield TraceRun(head_last + 1, offset + head_end, stop, n, b"")
            lineno = head_last + n
        offset += cut
        keep = filled - cut
        buf[:keep] = buf[cut:filled]


def _lines(buf: bytes | bytearray, start: int, end: int, lineno: int, offset: int) -> Iterator[tuple[int, int, bytes]]:
    pos = start
    while pos < end:
        nl = buf.index(b"\n", pos)
        lineno += 1
        yield lineno, offset + pos, bytes(buf[pos:nl])
        pos = nl + 1


def _has_control_byte(buf: bytearray, end: int) -> bool:
    # in pieces: each piece's two copies then reuse the memory the last one freed (a block-sized
    # copy costs a page fault per 4 KiB, a third of the scan of a fresh process)
    step = _CONTROL_TEST_BYTES
    for start in range(0, end, step):
        piece = buf[start : min(start + step, end)]
        if len(piece.translate(None, _CONTROL_BYTES)) != len(piece):
            return True
    return False


def _is_utf8(buf: bytearray, end: int) -> bool:
    if buf.isascii():  # the whole buffer, in C (what lies past end is the rest of earlier blocks)
        return True
    try:
        buf[:end].decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
