"""Static compute accounting: the floating-point operations of one step, per layer, from the shapes
on the type lines.

Counted, per execution of the op on one rank (local shapes: a sharded op counts its slice):

- **matrix** ops (cube units, compute-bound): MatMul and BatchMatMul (and their ``Ext``/``V2`` forms,
  Dense) ``2·M·K·N`` per output matrix, K read from the first input and its ``transpose`` flag;
  FlashAttentionScore ``4·B·N·Sq·Skv·D`` (its two products, masks not subtracted), its Grad twice
  that; convolutions ``2·(output elements)·(weight elements per output channel)``, both backprops
  the same from their gradient's shape.
- **element-wise** ops and reductions (vector units, memory-bound; shown apart): one operation per
  element of the largest tensor they read or write.

Each op is forward, backward (``Gradients/`` scope, ``forward_unique_id``, lazy_inline's backward
half) or a recomputed copy (``duplicated: Bool(1)``, the copies the memory account uses). Its layer
is the resolved layer of the forward op (``irlint.model.layers``): a backward op's is that of the
forward op it differentiates, a copy's that of the op it rebuilds.

Not counted: data movement (Reshape, Transpose, Cast, Gather, slices, concatenation), communication,
the optimizer's update, what the backend adds or fuses after the front-end graph, the scores a
flash-attention backward kernel recomputes inside itself; a graph that runs once per micro batch
(a pipeline stage) is counted once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model import IRFile
from ..model.layers import OUTSIDE, layer_of_any, layer_of_node
from .flops import kind_of, op_flops
from .memory import cached_account

# The stage files whose graph is final for the accounting, best first: the memory account's choice
# (the copies of the recompute pass exist there).
COST_STAGES = ("validate", "cse_after_recomputation", "add_recomputation", "graph_build")

SCOPE_NOTE = (
    "Counted: floating-point operations per rank and execution of the step's graph, from local "
    "shapes: MatMul/BatchMatMul 2·M·K·N, flash attention 4·B·N·Sq·Skv·D (its backward twice that), "
    "convolutions 2·out·(kernel elements); element-wise ops and reductions one per element, shown "
    "apart. Not counted: data movement, communication, the optimizer, backend fusion, repeated "
    "micro-batches."
)

DIRECTIONS = ("forward", "backward", "recompute")


@dataclass
class OpCost:
    """One op that computes: its FLOPs, what kind and direction it is, its layer."""

    node: int
    kind: str  # one of flops.KINDS
    direction: str  # one of DIRECTIONS
    layer: str
    flops: int | None  # None: the type line gives no shape
    original: int | None = None  # the forward op a recomputed copy rebuilds, or a backward op differentiates

    @property
    def matrix(self) -> bool:
        return self.kind != "elementwise"


@dataclass
class LayerCost:
    """The FLOPs of one decoder layer: matrix ops and element-wise ops, per direction."""

    layer: str
    forward_flops: int = 0
    backward_flops: int = 0
    recompute_flops: int = 0
    forward_elementwise_flops: int = 0
    backward_elementwise_flops: int = 0
    recompute_elementwise_flops: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)  # matrix kinds, every direction

    @property
    def step_flops(self) -> int:
        return self.forward_flops + self.backward_flops + self.recompute_flops


@dataclass
class RecomputeCost:
    """One recompute key (the select_recompute key of the ops it copies, or their cell path): what
    its copies re-spend against what the memory account says they save."""

    key: str
    layers: list[str]
    copies: int  # recomputed ops (views and casts included)
    flops: int  # matrix and element-wise FLOPs of the copies
    matrix_flops: int
    saved_bytes: int  # tensors backward reads as these copies instead of keeping them

    @property
    def bytes_per_gflop(self) -> float | None:
        return None if not self.flops else self.saved_bytes / (self.flops / 1e9)


@dataclass
class CostAccount:
    """A dump's computing ops and what each recompute key costs."""

    ops: list[OpCost]
    recompute: list[RecomputeCost] = field(default_factory=list)
    micro_batches: int = 1

    def total(self, direction: str | None = None, matrix: bool = True) -> int:
        return sum(
            o.flops or 0 for o in self.ops if o.matrix == matrix and (direction is None or o.direction == direction)
        )

    @property
    def step_flops(self) -> int:
        """Matrix FLOPs of the step: forward, backward and recomputed copies."""
        return self.total()

    @property
    def recompute_share(self) -> float:
        step = self.step_flops
        return self.total("recompute") / step if step else 0.0

    def layers(self) -> list[LayerCost]:
        rows: dict[str, LayerCost] = {}
        for o in self.ops:
            row = rows.setdefault(o.layer, LayerCost(o.layer))
            flops = o.flops or 0
            name = f"{o.direction}_flops" if o.matrix else f"{o.direction}_elementwise_flops"
            setattr(row, name, getattr(row, name) + flops)
            if o.matrix:
                row.by_kind[o.kind] = row.by_kind.get(o.kind, 0) + flops
        return sorted(rows.values(), key=lambda r: (r.layer == OUTSIDE, int(r.layer) if r.layer.isdigit() else 0))

    @property
    def unsized(self) -> list[OpCost]:
        return [o for o in self.ops if o.flops is None]


# --- the account -------------------------------------------------------------------------------


def direction_of(ir: IRFile, k: int) -> str:
    if ir.is_recompute_copy(k):
        return "recompute"
    return "backward" if ir.is_backward(k) else "forward"


def account(ir: IRFile, keys: bool = True) -> CostAccount:
    """Every computing op of ``ir`` with its FLOPs, direction and layer; with ``keys``, what each
    recompute key re-spends against the bytes the memory account says it saves."""
    originals = ir.originals()
    ops: list[OpCost] = []
    for k in sorted(ir.cnodes(), key=lambda n: (ir[n].get("line", 0), n)):
        d = ir[k]
        kind = kind_of(d.get("op", ""))
        if kind is None:
            continue
        direction = direction_of(ir, k)
        original = None
        if direction == "recompute":
            original = originals.get(k)
        elif direction == "backward":
            original = ir.forward_of(k)
            if original is not None and direction_of(ir, original) != "forward":
                original = None
        if original is not None:
            layer = layer_of_node(ir, original)
        elif direction == "forward":
            layer = layer_of_node(ir, k)
        else:  # a backward op whose forward op is not a forward op of this file: the model's links
            layer = layer_of_any(ir, k)
        ops.append(OpCost(k, kind, direction, layer, op_flops(ir, k), original))
    acc = CostAccount(ops)
    from ..model.pipeline import schedules

    stages = schedules(ir)
    if stages:
        acc.micro_batches = max(s.micro_batches for s in stages)
    if keys:
        acc.recompute = recompute_costs(ir, acc, originals)
    return acc


def recompute_costs(ir: IRFile, acc: CostAccount, originals: dict[int, int] | None = None) -> list[RecomputeCost]:
    """Per recompute key: the copies' FLOPs and the bytes of the tensors backward reads as those
    copies instead of keeping them (the memory account's ``saved``). A primitive tagged for
    recompute is grouped by its select_recompute key; the ops of a ``Cell.recompute()`` by the cell
    (the cell path their places share, "whole layer" for a decoder layer), across layers."""
    memory = cached_account(ir)
    saved_by_node: dict[int, int] = {}
    for t in memory.saved:
        saved_by_node[t.tensor.node] = saved_by_node.get(t.tensor.node, 0) + t.nbytes
    copies = [o for o in acc.ops if o.direction == "recompute"]
    if not copies and not saved_by_node:
        return []
    from ..model.keys import node_select_key
    from ..model.layers import Places

    places = Places.of(ir)

    def group_of(node: int):
        d = ir[node]
        if (d.get("primitive_attrs") or {}).get("recompute") is True:
            key, _ = node_select_key(ir, node)
            if key is not None:
                return key
        sub = (d.get("cnode_attrs") or {}).get("recompute_sub_graph")
        return ("cell", places.layer(node)[0], sub)

    # (forward node, layer, flops, matrix flops, is a copy) per recomputed copy, computing or not
    members: list[tuple[int, str, int, int, bool]] = []
    priced = {o.node: o for o in copies}
    seen: set[int] = set()
    for copy, source in (originals if originals is not None else ir.originals()).items():
        o = priced.pop(copy, None)
        flops = (o.flops or 0) if o is not None else 0
        members.append((source, layer_of_node(ir, source), flops, flops if o is not None and o.matrix else 0, True))
        seen.add(source)
    for o in priced.values():  # a computing copy whose forward op is not found
        members.append((o.node, o.layer, o.flops or 0, (o.flops or 0) if o.matrix else 0, True))
    for node, nbytes in saved_by_node.items():
        if node not in seen and nbytes:
            members.append((node, layer_of_node(ir, node), 0, 0, False))
    groups: dict = {}
    for m in members:
        groups.setdefault(group_of(m[0]), []).append(m)
    rows: dict[str, RecomputeCost] = {}
    for group, ms in groups.items():
        if isinstance(group, tuple):
            cells = [places.place(m[0]).cells for m in ms]
            common = cells[0]
            for c in cells[1:]:
                n = 0
                while n < min(len(common), len(c)) and common[n] == c[n]:
                    n += 1
                common = common[:n]
            name = "cell " + ("/".join(common) if common else "(whole layer)")
        else:
            name = group
        row = rows.setdefault(name, RecomputeCost(name, [], 0, 0, 0, 0))
        counted: set[int] = set()
        for node, layer, flops, matrix, computes in ms:
            row.copies += computes
            row.flops += flops
            row.matrix_flops += matrix
            if layer not in row.layers:
                row.layers.append(layer)
            if node not in counted:
                counted.add(node)
                row.saved_bytes += saved_by_node.get(node, 0)
    for row in rows.values():
        row.layers.sort(key=lambda name: (name == OUTSIDE, int(name) if name.isdigit() else 0))
    return sorted(rows.values(), key=lambda r: (-r.saved_bytes, r.flops, r.key))


def change(before: IRFile, after: IRFile) -> dict:
    """Matrix FLOPs of the step and what recompute re-spends (matrix and element-wise), before -> after
    (``irlint diff``)."""
    accounts = {"before": account(before, keys=False), "after": account(after, keys=False)}
    out: dict = {}
    for side, acc in accounts.items():
        out[f"{side}_step_flops"] = acc.step_flops
        out[f"{side}_recompute_flops"] = acc.total("recompute")
        out[f"{side}_recompute_share"] = acc.recompute_share
        out[f"{side}_recompute_elementwise_flops"] = acc.total("recompute", matrix=False)
    return out
