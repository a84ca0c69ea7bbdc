"""Dumps that hold the same graph: each rank of a job writes its own copy of every stage file, and
one rank writes several stages byte for byte alike. They differ only in lines that name the process
(``compile_phase: train.<n>.<n>.<n>``, ``subgraph instance: … : 0x<address>`` and, with symbolic
shapes, ``subgraph symbol engine: … : 0x<address>``, the node total), which
no rule reads. A lint hashes each file with those values masked, reads one file per class and gives
every other member its findings under the member's own name, stage and rank.

A masked value never spans a line break, so the members of a class have the same lines at the same
numbers: a finding's line is right in each of them."""

from __future__ import annotations

import hashlib
import re
import threading
from dataclasses import replace

from ..diagnostics import Diagnostic
from ..findings import Finding

# the value of each process-specific header line, as MindSpore 2.x prints it (whole lines only;
# starting with the newline lets the regex engine skip to candidate lines in C)
MASKED = re.compile(
    rb"\n(?:(compile_phase: [A-Za-z_]+)(?:\.\d+)+"
    rb"|(subgraph (?:instance|symbol engine): [^\n]* : )0x[0-9a-fA-F]+"
    rb"|(Total number of nodes: )\d+)(?=\r?\n)"
)

# a buffer this size is reused for the whole file: a fresh block per read (and per masked copy)
# costs more in page faults than the regex and sha256 together
BLOCK = 1 << 20


def _mask(m: re.Match) -> bytes:
    return b"\n" + (m.group(1) or m.group(2) or m.group(3)) + b"#"


def graph_hash(stream) -> str:
    """sha256 of a dump's text (``stream``, decompressed) with process-specific values masked: of a
    newline, then the text with each match of ``MASKED`` replaced by ``_mask``. Raises what reading
    raises."""
    graph = hashlib.sha256()
    first = stream.read(BLOCK)
    if len(first) < BLOCK and not (more := stream.read(BLOCK)):  # the whole text: one piece, one update
        graph.update(MASKED.sub(_mask, b"\n" + first + b"\n")[:-1])
        return graph.hexdigest()
    # the buffer holds a newline or the last (unfinished) line of the previous piece, then a block:
    # each piece hashed ends before its last newline, which starts the next one (the regex needs
    # it), so a line is never cut and a byte is hashed once
    buf = _buffer()
    view = memoryview(buf)
    buf[0] = 10
    held = 1
    readinto = getattr(stream, "readinto", None)
    pending = [first, more] if len(first) < BLOCK else [first]  # read already
    try:
        while True:
            if pending:
                block = pending.pop(0)
                got = len(block)
                view[held : held + got] = block
            elif readinto is not None:
                got = readinto(view[held : held + BLOCK]) or 0
            else:
                block = stream.read(BLOCK)
                got = len(block)
                view[held : held + got] = block
            if not got:
                buf[held] = 10  # the end of the text ends its last line
                _update_masked(graph, buf, view, held + 1)
                break
            end = held + got
            cut = buf.rfind(b"\n", held, end)
            if cut < 0:
                held = end
                if held > BLOCK:  # no header line is this long: hashed as it is, memory stays bounded
                    graph.update(view[:held])
                    held = 0
                continue
            _update_masked(graph, buf, view, cut + 1)
            rest = end - cut
            view[:rest] = bytes(view[cut:end])
            held = rest
    finally:
        view.release()
    return graph.hexdigest()


_held = threading.local()


def _buffer() -> bytearray:
    # one per thread, kept: a fresh one for every file costs page faults (more than hashing a small file)
    buf = getattr(_held, "buf", None)
    if buf is None or len(buf) != 2 * BLOCK + 1:
        buf = _held.buf = bytearray(2 * BLOCK + 1)
    return buf


def _update_masked(graph, buf: bytearray, view: memoryview, stop: int) -> None:
    """Hash ``buf[:stop - 1]`` with the matches of ``MASKED`` in ``buf[:stop]`` replaced."""
    pos = 0
    for m in MASKED.finditer(buf, 0, stop):
        graph.update(view[pos : m.start()])
        graph.update(_mask(m))
        pos = m.end()
    graph.update(view[pos : stop - 1])


def as_member(
    findings: list[Finding], diagnostics: list[Diagnostic], read_as: tuple[str, str], member: tuple[str, str]
) -> tuple[list[Finding], list[Diagnostic]]:
    """What a class's representative (``read_as``: its display name and stage label) gave, said of
    another member: findings and diagnostics under the member's name and stage."""
    (name, stage), (new_name, new_stage) = read_as, member
    if (name, stage) == (new_name, new_stage):
        return findings, diagnostics

    def moved(f: Finding) -> Finding:
        related = tuple(replace(r, file=new_name) if r.file == name else r for r in f.related)
        return f.with_(
            file=new_name if f.file == name else f.file,
            stage=new_stage if f.stage == stage else f.stage,
            related=related,
        )

    return ([moved(f) for f in findings], [replace(d, file=new_name) if d.file == name else d for d in diagnostics])
