"""Finds the lines of a dump that hold structure, without touching the others in Python.

A dump is read in large blocks. One compiled regex walks each block and matches either a run of
source-trace lines (``      # In file ...``, ``      # Corresponding code candidate:``; 50-75% of
a dump's bytes) as a whole, or a single other line. Only the second kind reaches Python code one
line at a time; of a trace run only its first line number and byte range are kept.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import BinaryIO, Iterator

BLOCK_BYTES = 8 * 1024 * 1024

# A run of trace lines (group 1), or one line of anything else.
_LINE_OR_TRACE_RUN = re.compile(
    rb"((?:(?:      # In file |      # Corresponding |# In file )[^\n]*\n)+)|([^\n]*)\n")


@dataclass(slots=True)
class TraceRun:
    """Consecutive source-trace lines: they are read back only when a finding quotes them."""

    line: int     # 1-based number of the first line
    start: int    # byte offset of the first line
    end: int      # byte offset just after the last line
    lines: int    # how many lines
    text: bytes   # the bytes, for an UTF-8 check; empty when the block was valid UTF-8


def scan(f: BinaryIO, block_bytes: int | None = None) -> Iterator[tuple[int, int, bytes] | TraceRun]:
    """Yields ``(line number, byte offset, line without its newline)`` for each structural line,
    and a ``TraceRun`` for each run of trace lines, in file order. Any line length works: a block
    grows until it holds a whole line."""
    block_bytes = block_bytes or BLOCK_BYTES
    lineno = 0
    offset = 0          # file offset of buf[0]
    carry = b""
    eof = False
    while not eof:
        chunk = f.read(block_bytes)
        if not chunk:
            eof = True
            if not carry:
                break
            buf = carry if carry.endswith(b"\n") else carry + b"\n"   # the last line may lack one
            cut = len(buf)
            file_end = offset + len(carry)
        else:
            buf = carry + chunk if carry else chunk
            cut = buf.rfind(b"\n") + 1
            if cut == 0:   # no complete line yet: a long line grows the block
                carry = buf
                continue
            file_end = None
        valid_utf8 = _is_utf8(buf, cut)
        for m in _LINE_OR_TRACE_RUN.finditer(buf, 0, cut):
            if m.lastindex == 2:
                lineno += 1
                yield lineno, offset + m.start(), m.group(2)
                continue
            start, end = m.span()
            n = buf.count(b"\n", start, end)
            stop = offset + end if file_end is None else min(offset + end, file_end)
            yield TraceRun(lineno + 1, offset + start, stop, n, b"" if valid_utf8 else buf[start:end])
            lineno += n
        offset += cut
        carry = buf[cut:]


def _is_utf8(buf: bytes, end: int) -> bool:
    if buf.isascii():
        return True
    try:
        buf[:end].decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
