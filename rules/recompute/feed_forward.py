"""FeedForward ``w2(silu(w1(x)) * w3(x))`` found by structure, in the shapes real models compile
to: separate or fused gate/up MatMuls, SiLU or its CPU expansion ``x * Sigmoid(x)``, model and
backend Casts around the Linears."""

from __future__ import annotations

from typing import NamedTuple

from irlint.model import IRFile
from irlint.model.layers import linear_name

from .evidence import MATMUL_OPS, RecomputeFacts, is_redistribution

# One MatMul computing gate and up together (GLM's dense_h_to_4h, Megatron's linear_fc1) is split
# afterwards; TupleGetItem picks a part of a Split's tuple.
SPLIT_OPS = frozenset(
    {"Split", "SplitWithSize", "SplitTensor", "StridedSlice", "Slice", "SliceExt", "Chunk", "TupleGetItem"}
)


class FeedForward(NamedTuple):
    """A gated feed-forward block: its MatMuls, SiLU and gate Mul."""

    gate_mul: int
    silu: int  # SiLU, or the Mul of its CPU expansion x * Sigmoid(x)
    w1: int
    w3: int  # the same node as w1 when gate and up are one fused MatMul
    w2: list[int]
    roles: dict[int, str]  # op between the MatMuls and SiLU/Mul -> the name of its Linear
    names: dict[str, str]  # "gate", "up", "down" -> the Linear's name in the model (linear_fc1, w1, ...)

    def role(self, k: int) -> str:
        """The Linear an op between the MatMuls and SiLU/Mul belongs to, by the model's name."""
        return self.roles.get(k) or self.names["gate"]


def linear_names(ir: IRFile, w1: int, w3: int, w2: list[int]) -> dict[str, str]:
    """The model's own names of a FeedForward's Linears, from the weights their MatMuls read
    (mcore's ``linear_fc1``/``linear_fc2``, Llama's ``w1``/``w3``/``w2``, GLM's
    ``dense_h_to_4h``/``dense_4h_to_h``); a MatMul reading no named weight is called by what it does."""
    down = {linear_name(ir, w) for w in w2} - {""}
    return {
        "gate": linear_name(ir, w1) or "gate projection",
        "up": linear_name(ir, w3) or "up projection",
        "down": down.pop() if len(down) == 1 else "down projection",
    }


def up_to_compute(ir: IRFile, facts: RecomputeFacts, k: int) -> tuple[int | None, list[int], bool]:
    """The compute op a FeedForward input comes from: steps over views, Casts (the model's
    own around a Linear, and backend ones in kernel graphs) and splits of a fused MatMul; with
    the ops passed and whether a split was among them."""
    passed: list[int] = []
    split = False
    node = k
    for _ in range(64):
        up, views = facts.up_through_views(node)
        passed += views
        split |= any(ir[v]["op"] in SPLIT_OPS for v in views)
        # a re-layout the parallel pass inserted (a column-parallel fused MatMul's output gathered:
        # AllGather -> Split -> Concat) is stepped over like a view
        if up is None or ir[up]["op"] not in SPLIT_OPS and ir[up]["op"] != "Cast" and not is_redistribution(ir[up]):
            return up, passed, split
        split |= ir[up]["op"] in SPLIT_OPS
        passed.append(up)
        first = ir.producers(up)[:1]
        if not first:
            return None, passed, split
        node = first[0]
    return None, passed, split


def _silu_input(ir: IRFile, facts: RecomputeFacts, k: int) -> int | None:
    """The input of a SiLU, or of ``x * Sigmoid(x)`` (where both ``x`` may be separate Casts of
    one MatMul in a kernel graph); None when ``k`` is neither."""
    d = ir[k]
    if d["op"] == "SiLU":
        first = ir.producers(k)[:1]
        return first[0] if first else None
    if d["op"] != "Mul":
        return None
    ins = ir.producers(k)[:2]
    if len(ins) != 2:
        return None
    for sig, x in ((ins[0], ins[1]), (ins[1], ins[0])):
        if ir[sig].get("op") != "Sigmoid" or not ir.producers(sig):
            continue
        inner = ir.producers(sig)[0]
        if inner == x or up_to_compute(ir, facts, inner)[0] == up_to_compute(ir, facts, x)[0] is not None:
            return x
    return None


def _down_to_matmul(ir: IRFile, facts: RecomputeFacts, k: int) -> tuple[list[int], list[int]]:
    matmuls, views = [], []
    stack, seen = [k], {k}
    while stack:
        for c in ir.consumers(stack.pop()):
            if c in seen or ir[c]["kind"] != "cnode" or facts.is_backward(c) or ir.is_recompute_copy(c):
                continue
            seen.add(c)
            if ir[c]["op"] in MATMUL_OPS:
                matmuls.append(c)
            elif ir[c]["op"] in ("Reshape", "Cast") or ir.is_inserted_slice(c):
                # a row-parallel w2 reading the Mul split over mp: the parallel pass slices the Mul's output
                views.append(c)
                stack.append(c)
    return matmuls, views


def find_feed_forwards(ir: IRFile, facts: RecomputeFacts) -> list[FeedForward]:
    """``MatMul(w1) -> [views] -> SiLU -> [views] -> Mul <- [views] <- MatMul(w3)``, then
    ``Mul -> [Reshape/Cast/inserted StridedSlice] -> MatMul(w2)``, found by structure (scopes may carry no cell names).
    w1 and w3 may be one MatMul whose output is split."""
    cached: list[FeedForward] | None = ir.__dict__.get("_recompute_feed_forwards")
    if cached is not None:
        return cached
    out = []
    for m in ir.nodes_by_op("Mul"):
        if facts.is_backward(m) or ir.is_recompute_copy(m):
            continue
        args = [a for a in ir.producers(m) if ir[a]["kind"] == "cnode"][:2]
        if len(args) != 2:
            continue
        for i in (0, 1):
            silu, silu_views, _ = up_to_compute(ir, facts, args[i])
            other, w3_views, up_split = up_to_compute(ir, facts, args[1 - i])
            if silu is None or other is None or ir[other]["op"] not in MATMUL_OPS:
                continue
            silu_in = _silu_input(ir, facts, silu)
            if silu_in is None:
                continue
            w1, w1_views, gate_split = up_to_compute(ir, facts, silu_in)
            if w1 is None or ir[w1]["op"] not in MATMUL_OPS or (w1 == other and not (gate_split and up_split)):
                continue
            w2, w2_views = _down_to_matmul(ir, facts, m)
            if not w2:
                continue
            names = linear_names(ir, w1, other, w2)
            roles = dict.fromkeys(silu_views + w1_views, names["gate"])
            roles.update({v: names["up"] for v in w3_views if v not in roles})
            roles.update(dict.fromkeys(w2_views, names["down"]))
            out.append(FeedForward(m, silu, w1, other, w2, roles, names))
            break
    ir.__dict__["_recompute_feed_forwards"] = out
    return out
