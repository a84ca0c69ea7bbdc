"""The rules' costing of a recompute finding: the activation bytes at stake on a node (``Stake``),
summed over its peers in the other decoder layers, and stated on the finding."""

from __future__ import annotations

import re
from typing import NamedTuple

from ..findings import Finding
from ..findings import Stake as AtStake
from ..model import IRFile, weights_upstream
from ..model.layers import OUTSIDE, Places, any_layer
from ..units import human_bytes
from .memory import bytes_at_stake, in_flight_at_peak, kept_of
from .tensors import sources

_WEIGHT_LAYER = re.compile(r"\.layers\.(\d+)\.")


def layer_peers(ir: IRFile, key: int) -> list[int]:
    """The forward nodes at the same place in every decoder layer (same op, same scope with the
    layer number and the ``recompute_`` prefix ignored; for a scope that names no cell, such as
    lazy_inline's ``Default/SiLU-op3``, the same op, primitive and recovered cell path in another
    layer), ``key`` included; [key] outside layers."""
    pattern = _peer_pattern(ir, key)
    if pattern is None:
        return [key]
    return sorted(_peers_by_pattern(ir, ir[key]["op"], asked=False).get(pattern, [key]))


def _asked_peers(ir: IRFile, key: int) -> list[int]:
    """``key`` and those of its layer peers that are asked to recompute (what ``stake`` sums over),
    placing only the nodes of its op that are asked."""
    pattern = _peer_pattern(ir, key)
    if pattern is None:
        return [key]
    if ir.is_recompute_copy(key) or ir.is_backward(key):  # not among its own peers
        return [p for p in layer_peers(ir, key) if p == key or _asked_to_recompute(ir, p)]
    return sorted({key, *_peers_by_pattern(ir, ir[key]["op"], asked=True).get(pattern, ())})


def _peers_by_pattern(ir: IRFile, op: str, asked: bool) -> dict:
    """Peer pattern -> the forward nodes of ``op`` with it (only those asked to recompute when
    ``asked``), once per file and op."""
    index = ir.__dict__.setdefault("_layer_peers", {})
    found: dict[str | tuple, list[int]] | None = index.get((op, asked))
    if found is None:
        found = {}
        index[op, asked] = found
        for k in ir.nodes_by_op(op):
            if (not asked or _asked_to_recompute(ir, k)) and not (ir.is_recompute_copy(k) or ir.is_backward(k)):
                p = _peer_pattern(ir, k)
                if p is not None:
                    found.setdefault(p, []).append(k)
    return found


def _peer_pattern(ir: IRFile, k: int) -> str | tuple | None:
    scope = ir[k].get("scope", "").removeprefix("recompute_")
    same = any_layer(scope)  # the model's layer, not a ``layers-`` name
    if same is not None:
        return same
    if not scope:  # a dump without scope lines: the weights it is computed from
        names = weights_upstream(ir, k)
        if not names or not all(_WEIGHT_LAYER.search(n) for n in names):
            return None
        return "weights:" + ",".join(_WEIGHT_LAYER.sub(".layers.*.", "." + n) for n in names)
    if "-" in scope.rsplit("/", 1)[0]:
        return None  # a named scope outside the layers
    where = Places.of(ir).place(k)
    return ("cells", where.cells, ir[k].get("instance")) if where.cells and where.layer != OUTSIDE else None


def _asked_to_recompute(ir: IRFile, key: int) -> bool:
    d = ir[key]
    return (d.get("primitive_attrs") or {}).get("recompute") is True or (d.get("cnode_attrs") or {}).get(
        "recompute"
    ) is True


class Stake(NamedTuple):
    """Bytes of kept activations a finding is about: in its own layer, and summed over the
    layers where the same node is asked to recompute and still costs memory. In a pipeline stage
    both are at the stage's peak: a layer's bytes per micro batch times the micro batches of its
    chunk in flight then (``irlint.model.pipeline.at_peak``), what the fix takes off that peak."""

    bytes: int
    total: int
    layers: int
    in_flight: int = 1  # micro batches of this layer's chunk in flight at the stage's peak
    micro_batches: int = 1
    per_micro_batch: int = 0  # ``bytes`` for one micro batch

    def text(self) -> str:
        if self.layers > 1:
            out = (
                f"{human_bytes(self.bytes)} at stake in this layer, {human_bytes(self.total)} across the "
                f"{self.layers} layers with the same problem"
            )
        else:
            out = f"{human_bytes(self.bytes)} at stake"
        if self.micro_batches > 1:
            out += (
                f", at the pipeline stage's peak: {human_bytes(self.per_micro_batch)} per micro batch, "
                f"{self.in_flight} of this layer's {self.micro_batches} micro batches in flight then"
            )
        return out

    def typed(self) -> AtStake:
        """The finding's ``stake`` field: what it holds beyond ``bytes_at_stake``."""
        if self.micro_batches > 1:
            return AtStake(self.total, self.layers, self.micro_batches, self.in_flight, self.per_micro_batch)
        return AtStake(self.total, self.layers)


def stake(ir: IRFile, key: int, cost=None) -> Stake:
    """The activation bytes a recompute finding on ``key`` is about: ``cost(ir, node)`` (default
    ``bytes_at_stake``) here, and summed over its layer peers that are asked to recompute and
    cost something too; in a pipeline stage each at the stage's peak (times the micro batches of
    its chunk in flight then)."""
    # each layer's finding sums the same peers: their costs are priced once per file, not once
    # per finding (quadratic in the layers)
    memo = ir.__dict__.setdefault("_stake_costs", {})
    cost = cost or bytes_at_stake

    def priced(node: int) -> int:
        found = memo.get((cost, node))
        if found is None:
            found = memo[cost, node] = cost(ir, node)
        return found

    own = priced(key)
    peers = [p for p in _asked_peers(ir, key) if p == key or priced(p) > 0]
    here = in_flight_at_peak(ir, ir[key]["graph"])
    if here is None:
        return Stake(own, sum(priced(p) for p in peers), len(peers))
    flights = {g: in_flight_at_peak(ir, g) for g in {ir[p]["graph"] for p in peers}}
    total = sum(priced(p) * (flights[ir[p]["graph"]] or (1, 1))[0] for p in peers)
    return Stake(own * here[0], total, len(peers), here[0], here[1], own)


def downcast_cost(ir: IRFile, cast: int) -> int:
    """What recomputing a down-cast costs: its high-precision input (kept for the copy) instead
    of its low-precision output, when only recomputed copies read that input; 0 when backward
    keeps the input anyway, or the types are unknown."""
    ins = ir.producers(cast)[:1]
    in_t = (ir[cast].get("in_types") or (None,))[0]
    out_t = ir[cast].get("out_type")
    if not ins or in_t is None or out_t is None or not in_t.nbytes or not out_t.nbytes:
        return 0
    # only the input's own tensors: a multi-output producer (RmsNorm's (y, rstd)) keeps its other
    # outputs for its own backward, which says nothing about this one
    tensors = {t for t, _ in sources(ir, ins[0])}
    kept = [t for s in {t.node for t in tensors} for t in kept_of(ir, s) if t.tensor in tensors]
    if any(not ir.is_recompute_copy(r) for t in kept for r in t.readers):
        return 0
    return max(0, in_t.nbytes - out_t.nbytes)


def staked(finding: Finding, at: Stake) -> Finding:
    """``finding`` stating the bytes at stake: in its message, ``bytes_at_stake`` and ``stake``."""
    return finding.with_(message=f"{finding.message} ({at.text()})", bytes_at_stake=at.bytes, stake=at.typed())
