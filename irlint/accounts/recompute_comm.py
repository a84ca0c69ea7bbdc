"""Communication that recompute runs again in backward, by what asked for it.

A collective recompute copies (``duplicated: Bool(1)``, or lazy_inline's copy in the backward half
with its forward node's ``unique_id``) receives its bytes a second time in backward: cost the user
chose with a key. The key is told from the forward op the copy repeats:

- ``select_comm_recompute``: the op re-lays out the output of a primitive carrying
  ``recompute_comm_op: Bool(1)`` (the norm whose sequence-parallel AllGather is recomputed); the key
  is that primitive's select key;
- ``select_recompute``: for an op the parallel pass inserted (``redistribution_op_…``), the key of the
  tagged model primitive it re-lays out the input of (MindSpore passes that primitive's tag to the
  ops inserted for it: a chain before wq's Reshape runs again under ``attention\\.wq\\.reshape``);
  else the op's own select key (``irlint.model.keys.node_select_key``,
  which a whole-cell key such as ``mlp\\.experts`` matches as a prefix);
- ``recompute``: the op is in a decoder layer recomputed whole (``recompute: True`` or a layer
  list; ``irlint.model.keys.recomputed_layers``), which no select key is applied to; the key is
  ``recompute``. A collective the parallel pass inserted there (``redistribution_op_…``) runs again
  because of ``mp_comm_recompute``, its key;
- ``parallel_optimizer_comm_recompute``: the parallel optimizer's AllGather of a weight shard, which
  MindSpore names ``parallel_optimizer_allgather`` and tags ``recompute`` only when the weight's
  ``parallel_optimizer_comm_recompute`` is set (else ``parallel_optimizer_allgather_not_recompute``, kept
  from forward); MindSpore 2.10 applies it through zero3 (``optimizer_level: level3``), and
  ``Cell.recompute(parallel_optimizer_comm_recompute=True)`` only warns. Whatever else recomputes the layer;
- ``cell``: no key can be derived; the cell scope names it.

The bytes are the copy's, counted as every collective (``irlint.accounts.received``); they are
already part of the account's backward bytes, not added again.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model import IRFile
from ..model.keys import (
    inserted_by_parallel,
    node_select_key,
    recomputed_cell,
    recomputed_layers,
    select_key_part,
)

# ops between a recompute_comm_op primitive and the communication inserted for its output
_BETWEEN = frozenset(
    {
        "Cast",
        "Reshape",
        "Depend",
        "Load",
        "TupleGetItem",
        "MakeTuple",
        "StridedSlice",
        "Split",
        "Concat",
        "Transpose",
        "Identity",
    }
)
_UP_STEPS = 6


@dataclass
class Rerun:
    """One collective recompute runs again in backward."""

    node: int  # the copy
    original: int | None  # the forward op it repeats
    key: str  # the select key (or cell scope) that asked for it
    # "select_comm_recompute", "select_recompute", "recompute" (whole layer), "mp_comm_recompute",
    # "parallel_optimizer_comm_recompute" or "cell"
    via: str
    layer: str
    kind: str
    received_bytes: int


def asked_by(ir: IRFile, key: int, layer: str | None = None) -> tuple[str, str]:
    """(select key, config setting or cell scope; how it was asked) for a recomputed forward
    collective in decoder layer ``layer`` (default: the model's layer of it)."""
    from ..model.layers import Places

    if is_optimizer_allgather(ir, key):
        return ("parallel_optimizer_comm_recompute",) * 2
    source = comm_recompute_source(ir, key)
    if source is not None:
        found, _ = node_select_key(ir, source)
        if found is not None:
            return found, "select_comm_recompute"
    # a layer recomputed whole takes no select key (MindFormers applies none to it): the config's
    # ``recompute``, and for the communication the parallel pass inserted in it ``mp_comm_recompute``
    if (layer or Places.of(ir).layer(key)[0]) in recomputed_layers(ir):
        return ("mp_comm_recompute",) * 2 if inserted_by_parallel(ir, key) else ("recompute",) * 2
    if inserted_by_parallel(ir, key):
        target = tagged_reader(ir, key, inserted_by_parallel)
        found = node_select_key(ir, target)[0] if target is not None else None
        if found is not None:
            return found, "select_recompute"
    found, _ = node_select_key(ir, key)
    if found is not None:
        return found, "select_recompute"
    around = recomputed_cell(ir, key)
    if around is not None:
        return "\\.".join(select_key_part(n) for n in around[1]), "select_recompute"
    return Places.of(ir).cell_scope(key) or ir[key].get("scope", ""), "cell"


# the instance name MindSpore gives the parallel optimizer's AllGather it recomputes (the one it keeps
# is ``parallel_optimizer_allgather_not_recompute``)
_OPTIMIZER_ALLGATHER = "parallel_optimizer_allgather"


def is_optimizer_allgather(ir: IRFile, key: int) -> bool:
    """The parallel optimizer's AllGather of a weight shard, recomputed for backward."""
    d = ir[key]
    return d.get("instance") == _OPTIMIZER_ALLGATHER and (d.get("primitive_attrs") or {}).get("recompute") is True


def comm_recompute_source(ir: IRFile, key: int) -> int | None:
    """The primitive with ``recompute_comm_op: Bool(1)`` whose output ``key`` re-lays out: the first
    one up the data inputs through re-layout and cast ops, else None."""
    seen = {key}
    frontier = [key]
    for _ in range(_UP_STEPS):
        nxt = []
        for k in frontier:
            for p in ir.producers(k):
                d = ir[p]
                if p in seen or d.get("kind") != "cnode":
                    continue
                seen.add(p)
                if (d.get("primitive_attrs") or {}).get("recompute_comm_op") is True:
                    return p
                if d.get("op") in _BETWEEN:
                    nxt.append(p)
        frontier = nxt
    return None


def tagged_reader(ir: IRFile, key: int, inserted) -> int | None:
    """The model primitive tagged for recompute that reads ``key``'s output through ops the parallel
    pass inserted (the primitive whose tag MindSpore passed to them), else None."""
    seen = {key}
    frontier = [key]
    for _ in range(3 * _UP_STEPS):
        nxt = []
        for k in frontier:
            for c in ir.consumers(k):
                d = ir[c]
                if c in seen or d.get("kind") != "cnode" or ir.is_backward(c):
                    continue
                seen.add(c)
                if inserted(ir, c) or d.get("op") in _BETWEEN and not (d.get("primitive_attrs") or {}).get("recompute"):
                    nxt.append(c)
                elif (d.get("primitive_attrs") or {}).get("recompute") is True:
                    return c
        frontier = nxt
    return None


def by_key(found: list[Rerun]) -> list[dict]:
    """The re-runs summed per key, costliest first: key, how it was asked, ops, bytes, layers,
    kinds."""
    rows: dict[tuple[str, str], dict] = {}
    for r in found:
        row = rows.setdefault(
            (r.key, r.via), {"key": r.key, "via": r.via, "ops": 0, "received_bytes": 0, "layers": [], "by_kind": {}}
        )
        row["ops"] += 1
        row["received_bytes"] += r.received_bytes
        if r.layer not in row["layers"]:
            row["layers"].append(r.layer)
        row["by_kind"][r.kind] = row["by_kind"].get(r.kind, 0) + r.received_bytes
    for row in rows.values():
        row["layers"].sort(key=lambda name: (not name.isdigit(), int(name) if name.isdigit() else 0, name))
    return sorted(rows.values(), key=lambda row: (-row["received_bytes"], row["key"]))
