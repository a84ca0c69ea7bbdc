"""The model source line of a node: the innermost frame of its own source trace (``# In file
…/llama_transformer.py:627, 12~55/…``), the line the user edits."""

from __future__ import annotations

import re
from typing import Any

from . import IRFile

_CANDIDATE = "# Corresponding "
_FRAME = re.compile(r"# In file (?P<path>.+?):(?P<line>\d+)(?:~\d+)?, \d+~\d+/")


def own_trace(lines: list[str]) -> list[str]:
    """The ``# In file`` lines of a node's own source: the lines before any ``# Corresponding``
    block, else (kernel graphs) the ``code candidate`` block; never the ``forward node
    candidate`` block, which is another node's source."""
    blocks: list[tuple[str, list[str]]] = [("", [])]
    for ln in lines:
        if ln.startswith(_CANDIDATE):
            blocks.append((ln, []))
        elif ln.startswith("# In file"):
            blocks[-1][1].append(ln)
    for header, body in blocks:
        if body and (not header or "code candidate" in header):
            return body
    return []


def source_of(ir: IRFile, k: int) -> tuple[str, int] | None:
    """(path, line) of the call that made ``k``: the innermost frame of its own trace (the outer
    frames are the training wrapper and the layer loop); None without a trace (an op a parallel
    pass inserted or replaced, a dump saved without traces)."""
    for ln in reversed(own_trace(ir.trace(k))):
        m = _FRAME.match(ln)
        if m:
            return m.group("path"), int(m.group("line"))
    return None


def source_dict(ir: IRFile, k: int) -> dict[str, Any] | None:
    """``source_of`` as the JSON contract writes it: ``{"path", "line"}``."""
    src = source_of(ir, k)
    return None if src is None else {"path": src[0], "line": src[1]}
