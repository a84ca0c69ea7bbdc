"""One finding per root cause: the findings of one mistake repeated across decoder layers,
interleave chunks, micro-batch copies, the recomputed copy of a chain in the backward half and
stage files become one finding that keeps every occurrence (``Finding.members``). Rank copies are
merged before this (``engine._group``), into one occurrence that names its ranks.

The root cause is what a person fixes once: the rule, the op, its place in the model with the
layer index taken out, and the rule's identity of the problem (the blocking ops, the chain's
pattern) with the layer index taken out too."""

from __future__ import annotations

import re

from ..findings import Finding, model_names, scope_path

# a layer index in a dotted path (``layers.3.``), a scope (``/3-DecoderLayer``) or a text ("layer 3")
_INDEX = re.compile(r"(?<=[./])\d+(?=[./'\-)]|\Z)|(?<=layer )\d+")
_RECOMPUTED = re.compile(r"\brecompute_")


def layerless(text: str) -> str:
    """``text`` with layer indices (and the recomputed copy's ``recompute_`` prefix) taken out."""
    return _INDEX.sub("*", _RECOMPUTED.sub("", text))


def root_cause(f: Finding) -> tuple:
    where = f.model_path or model_names(scope_path(f.scope))
    return (f.code, f.rule, f.op, layerless(where), layerless(model_names(repr(f.identity))))


def _order(f: Finding) -> tuple:
    return (not f.layer.isdigit(), int(f.layer) if f.layer.isdigit() else 0, f.file, f.line)


def by_root_cause(findings: list[Finding]) -> list[Finding]:
    """``findings`` with those of one root cause made one: the first occurrence (lowest layer)
    speaks for them, with every occurrence in ``members``, the bytes at stake summed (each
    occurrence keeps its own) and the ranks joined. A root cause seen once stays as it is."""
    groups: dict[tuple, list[Finding]] = {}
    for f in findings:
        groups.setdefault(root_cause(f), []).append(f)
    out = []
    for members in groups.values():
        if len(members) == 1:
            out.append(members[0])
            continue
        members.sort(key=_order)
        first = members[0]
        stakes = [m.bytes_at_stake for m in members if m.bytes_at_stake is not None]
        ranks = tuple(sorted({r for m in members for r in m.ranks}))
        out.append(first.with_(members=tuple(members), bytes_at_stake=sum(stakes) if stakes else None, ranks=ranks))
    out.sort(key=lambda x: (x.file, x.line, x.code))
    return out
