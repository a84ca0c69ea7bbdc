"""Dumps that hold the same graph: each rank of a job writes its own copy of every stage file, and
one rank writes several stages byte for byte alike. They differ only in lines that name the process
(``compile_phase: train.<n>.<n>.<n>``, ``subgraph instance: … : 0x<address>``, the node total), which
no rule reads. A lint hashes each file with those values masked, reads one file per class and gives
every other member its findings under the member's own name, stage and rank.

A masked value never spans a line break, so the members of a class have the same lines at the same
numbers: a finding's line is right in each of them."""
from __future__ import annotations

import hashlib
import re
from dataclasses import replace

from ..diagnostics import Diagnostic
from ..findings import Finding

# the value of each process-specific header line, as MindSpore 2.x prints it (whole lines only;
# starting with the newline lets the regex engine skip to candidate lines in C: 1.7 GB/s here)
MASKED = re.compile(
    rb"\n(?:(compile_phase: [A-Za-z_]+)(?:\.\d+)+"
    rb"|(subgraph instance: [^\n]* : )0x[0-9a-fA-F]+"
    rb"|(Total number of nodes: )\d+)(?=\r?\n)")

BLOCK = 8 << 20


def _mask(m: re.Match) -> bytes:
    return b"\n" + (m.group(1) or m.group(2) or m.group(3)) + b"#"


def graph_hash(stream) -> str:
    """sha256 of a dump's text (``stream``, decompressed) with process-specific values masked.
    Raises what reading raises."""
    graph = hashlib.sha256()
    # each piece starts with the newline before its first line (the regex needs it) and ends
    # before its last newline, which starts the next piece: a line is never cut, a byte hashed once
    carry = b"\n"
    while True:
        block = stream.read(BLOCK)
        if not block:
            graph.update(MASKED.sub(_mask, carry + b"\n")[:-1])
            break
        cut = block.rfind(b"\n")
        if cut < 0:
            carry += block
            if len(carry) > BLOCK:   # no header line is this long: hashed as it is, memory stays bounded
                graph.update(carry)
                carry = b""
            continue
        graph.update(MASKED.sub(_mask, carry + block[:cut + 1])[:-1])
        carry = block[cut:]
    return graph.hexdigest()


def as_member(findings: list[Finding], diagnostics: list[Diagnostic], read_as: tuple[str, str],
              member: tuple[str, str]) -> tuple[list[Finding], list[Diagnostic]]:
    """What a class's representative (``read_as``: its display name and stage label) gave, said of
    another member: findings and diagnostics under the member's name and stage."""
    (name, stage), (new_name, new_stage) = read_as, member
    if (name, stage) == (new_name, new_stage):
        return findings, diagnostics

    def moved(f: Finding) -> Finding:
        related = tuple(replace(r, file=new_name) if r.file == name else r for r in f.related)
        return f.with_(file=new_name if f.file == name else f.file,
                       stage=new_stage if f.stage == stage else f.stage, related=related)

    return ([moved(f) for f in findings],
            [replace(d, file=new_name) if d.file == name else d for d in diagnostics])
