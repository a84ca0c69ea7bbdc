"""What a dump says about recompute: requested, applied, kept for backward, blocking chain, cell
membership. Every recompute rule reads these answers; none reads the attributes itself.

The evidence (MindSpore 2.7-2.10, see the corpus FINDINGS): a request is ``recompute: Bool(1)``
in ``primitive_attrs`` (``Primitive.recompute()`` / select_recompute) and, once the
add_recomputation pass has run, in ``cnode_attrs`` of every forward node it decided on
(``Cell.recompute()`` shows before that only as a ``recompute_`` scope prefix; the cell's output
gets ``recompute: Bool(0)``: it is kept as the checkpoint). A node was recomputed when it carries
a ``recompute_id`` and a copy with ``duplicated: Bool(1)`` and the same id exists (older dumps: a
``duplicated`` copy only). ``recompute_sub_graph``, ``need_cse_after_recompute`` and the scope
prefix are not evidence of a copy.

lazy_inline dumps (MindFormers' default, always with pipeline parallel) split the model into a
forward half ``@…▸…`` and a backward half ``@…◂…`` and carry no ``recompute_id``: a node was
recomputed when ◂ holds a copy with its ``unique_id`` (``duplicated: Bool(1)``, except the first op
of a ``Cell.recompute()`` segment, copied without the mark); the values backward
needs reach ◂ as the arguments of one ``Partial(@…◂…, …)``, which the model binds to ◂'s
parameters like a call, so "kept for backward" is the same walk in both forms. A recomputed copy
counts as a backward reader: what it reads is kept for it. A recompute cell's op left without a
copy has no ``recompute`` attribute there, only ``need_cse_after_recompute: Bool(1)`` and the
``recompute_`` prefix (where the other form prints ``Bool(0)``). Ops a user cannot name are never
requests: a ``TupleGetItem`` inheriting its producer's tag, and ops computed from weights only
(``_MirrorOperator`` and the weight's Cast under full recompute).

``kept_for_backward(ir, k)`` is the plain answer to "which backward reads keep this node's output
in memory, and through which non-recomputed layout ops"; other modules (e.g. a memory model) call
it without knowing the rules.
"""

from __future__ import annotations

import re
import weakref
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from irlint.accounts.weights import is_weight_derived
from irlint.model import IRFile
from irlint.model.keys import CELL_PREFIX as CELL_PREFIX
from irlint.model.keys import cell_path as cell_path
from irlint.model.layers import Places, layer_prefix, with_layer
from irlint.model.ops import MATMUL_OPS as MATMUL_OPS
from irlint.model.pipeline import halves

# Stage files where the recompute decision is final, best first: the final front-end graph
# (validate), then the passes that make the decision, then the backend graph (CPU expands SiLU
# there and drops its attributes, so it is the last resort).
RECOMPUTE_STAGES = ("validate", "cse_after_recomputation", "add_recomputation", "graph_build")

# Layout ops: a non-recomputed one between a tagged op and its backward reader blocks the
# recompute (MindSpore keeps its output for backward, so the tagged op gets no copy).
LAYOUT_OPS = frozenset({"Reshape", "Transpose", "Cast", "ExpandDims", "Squeeze", "Flatten"})
# ops that only pass a tensor on (no new data): walked through, never named as blocking
PASSTHROUGH_OPS = frozenset({"Depend", "Load", "TupleGetItem", "MakeTuple"})
FIRST_INPUT_ONLY = frozenset({"Depend", "Load", "TupleGetItem"})
BOOKKEEPING_OPS = frozenset({"Load", "UpdateState", "MakeTuple", "Depend", "TupleGetItem", "call"})
HIGH_PRECISION = frozenset({"Float32", "Float64"})
LOW_PRECISION = frozenset({"Float16", "BFloat16"})
_OP_SUFFIX = re.compile(r".+-op\d+\Z")
_REDISTRIBUTION = "redistribution_op_"
_NONE: dict[str, Any] = {}


def _marked(attrs: dict[str, Any] | None) -> bool:
    """cnode_attrs the recompute pass writes on a node it decided on: ``checkpoint: Bool(1)`` too (the
    pass writes it on what backward keeps; a one-op cell's ``Bool(0)`` op may be its only mark)."""
    if not attrs:
        return False
    return (
        attrs.get("recompute") is True
        or "recompute_id" in attrs
        or attrs.get("duplicated") is True
        or attrs.get("checkpoint") is True
    )


def is_recompute_fence(ir: IRFile, v: int) -> bool:
    """A Depend the recompute pass inserts before a recomputed copy (``recompute_insert`` under
    lazy_inline, ``recompute_depend`` without): it orders the copy after the gradient it waits for,
    and reads the copy's saved input. It keeps nothing the copy would not read anyway, and no key
    can recompute it: never a blocker."""
    d = ir[v]
    ca = d.get("cnode_attrs") or _NONE
    return d.get("op") == "Depend" and (ca.get("recompute_insert") is True or ca.get("recompute_depend") is True)


def is_redistribution(d: dict[str, Any]) -> bool:
    """An op of a re-layout the parallel pass inserted (``redistribution_op_…``: AllGather, Split,
    Concat, StridedSlice, Reshape): it moves a tensor between layouts and computes nothing."""
    return str(d.get("instance") or "").startswith(_REDISTRIBUTION)


def cell_text(path: tuple[str, ...] | None, scope: str) -> str:
    """A cell for a message: its path, or the node's scope when the cell has no name."""
    name = "/".join(p for p in path or () if p)
    return name if name else f"with no name (scope {scope})"


@dataclass
class _Cell:
    """What a cell holds of the forward pass."""

    unprefixed: bool = False  # holds a forward op without the recompute_ prefix
    ops: int = 0  # forward compute ops (no bookkeeping, no copies)


class KeptRead(NamedTuple):
    """A backward node that reads a forward output, and the non-recomputed layout and
    pass-through ops in between (empty when it reads it directly)."""

    reader: int
    chain: tuple[int, ...]


@dataclass
class RecomputeFacts:
    """Per-file answers the recompute rules share (computed once per IRFile, kept on it)."""

    # a weak reference: the IRFile keeps the facts, and a cycle would outlive the file
    _ir: weakref.ref[IRFile]
    decided: bool = False
    _applied: dict[int, bool] = field(default_factory=dict)
    _readers: dict[int, list[KeptRead]] = field(default_factory=dict)
    _cell_index: dict[tuple[Any, ...], _Cell] | None = None
    _node_paths: dict[int, tuple[str, ...]] = field(default_factory=dict)  # forward node -> its cell path
    _call_sizes: dict[tuple[tuple[str, ...], int], int] = field(default_factory=dict)  # (cell, node) -> call's ops
    _tagged: list[int] | None = None

    @classmethod
    def of(cls, ir: IRFile) -> RecomputeFacts:
        facts = ir.__dict__.get("_recompute_facts")
        if facts is None:
            facts = cls(weakref.ref(ir))
            facts.decided = facts._decided()
            ir.__dict__["_recompute_facts"] = facts
        return facts

    @property
    def ir(self) -> IRFile:
        return self._ir()  # type: ignore[return-value]  # held by the file it describes

    def _decided(self) -> bool:
        """The pass writes cnode_attrs markers on every forward node it decided on; before it (e.g.
        06_add_attr, 12_pipeline_split, 22_environ_conv) only primitive_attrs tags exist. Decided:
        a marker on a forward node, and a backward graph."""
        nodes = self.ir.nodes
        marked = (k for k, d in nodes.items() if d["kind"] == "cnode" and _marked(d.get("cnode_attrs")))
        # a lazy_inline compile whose tags all came to nothing has no marker (its recompute ran in
        # the recompute_root passes and marks only what it copied): there the stage the file is
        # named after says it; in the other form the pass marks every node it decided on
        if not any(not self.is_backward(k) for k in marked) and not (
            self.ir.stage.name in RECOMPUTE_STAGES and halves(self.ir)
        ):
            return False
        # backward ops follow the forward ones in a dump: looked for from the end
        return any(self.is_backward(k) for k in reversed(nodes) if nodes[k]["kind"] == "cnode")

    @property
    def _cells(self) -> dict[tuple[Any, ...], _Cell]:
        """The cells of the forward compute ops, by scope path (one walk of the file, when first
        asked: only ``recompute: Bool(0)`` nodes need them)."""
        cells = self._cell_index
        if cells is None:
            ir = self.ir
            cells = self._cell_index = {}
            ops = []
            judged = set()  # the printed layers holding a recompute_ op: only there can an aliased op change a verdict
            for k in ir.cnodes():
                d = ir[k]
                if self.is_backward(k) or ir.is_recompute_copy(k):
                    continue
                path = cell_path(d.get("scope", ""))
                if d["op"] in BOOKKEEPING_OPS:
                    self._node_paths[k] = path  # links a call's ops (TupleGetItem of a Split), counts for nothing
                    continue
                prefixed = d.get("scope", "").startswith(CELL_PREFIX)
                ops.append((k, path, prefixed))
                if prefixed:
                    judged.add(layer_prefix(path))
            judged.discard(None)
            for k, path, prefixed in ops:
                if judged and layer_prefix(path) in judged:
                    path = self.cell_path_of(k)
                self._node_paths[k] = path
                for i in range(1, len(path) + 1):
                    cell = cells.setdefault(path[:i], _Cell())
                    cell.unprefixed |= not prefixed
                    cell.ops += 1
        return cells

    def tagged(self) -> list[int]:
        """The CNodes that carry a recompute attribute, or lazy_inline's mark of a recompute cell's
        op (``need_cse_after_recompute`` under a ``recompute_`` scope); ``request`` is None for
        every other node. In the file's order."""
        if self._tagged is None:
            self._tagged = [
                k
                for k, d in self.ir.nodes.items()
                if d["kind"] == "cnode"
                and (
                    (d.get("cnode_attrs") or _NONE).get("recompute") is not None
                    or (d.get("primitive_attrs") or _NONE).get("recompute") is True
                    or (d.get("cnode_attrs") or _NONE).get("need_cse_after_recompute") is True
                    and d.get("scope", "").startswith(CELL_PREFIX)
                )
            ]
        return self._tagged

    # --- requested / applied ---------------------------------------------------------------

    def is_backward(self, k: int) -> bool:
        return self.ir.is_backward(k)  # the model's answer

    def applied(self, k: int) -> bool:
        """The node was recomputed: a copy of it exists."""
        if k not in self._applied:
            self._applied[k] = bool(self.ir.copy_of(k))
        return self._applied[k]

    def request(self, k: int) -> str | None:
        """How a forward node asked for recompute: ``select`` (its primitive is tagged),
        ``cell`` (marked by the pass as part of a ``Cell.recompute()`` cell), ``one-op-cell``
        (``Bool(0)``: the only op of its recompute cell, so the cell's recompute names nothing
        that gets recomputed), ``nested`` (lazy_inline: its primitive is tagged too, and
        MindSpore puts the cell's no-recompute of its output over that tag), or None (not asked, or a multi-op
        cell's output: kept by design)."""
        d = self.ir[k]
        if d["kind"] != "cnode" or self.is_backward(k) or self.ir.is_recompute_copy(k):
            return None
        if d["op"] in BOOKKEEPING_OPS:
            return None  # not the user's request: a TupleGetItem inherits its producer's tag
        ca = d.get("cnode_attrs") or {}
        pa = d.get("primitive_attrs") or {}
        if ca.get("recompute") is False or self._uncopied_cell_op(k, ca, pa):
            cell = self.recompute_cell(k)
            if cell is None:
                return None
            # a multi-op cell's output is its checkpoint, kept by design: not a request
            return "one-op-cell" if self.call_ops(cell, k) == 1 else None
        if pa.get("recompute") is True:
            # inside a Cell.recompute() cell the primitive's tag is the cell's (MindSpore tags the
            # primitives of a recomputed cell) or the model code's own (MindFormers' MLP
            # ``Reshape().recompute(True)``): MindFormers applies no select_recompute key to a
            # layer it recomputes whole, so nobody asked for this op by a key
            if not d.get("scope", "").startswith(CELL_PREFIX):
                return "select"
            return "nested" if self._nested_in_one_op_cell(k, ca) else "cell"
        if ca.get("recompute") is True:
            # marked by the pass: the primitive was not tagged, so the request came from a cell
            return "cell" if d.get("scope", "").startswith(CELL_PREFIX) else "select"
        return None

    def _nested_in_one_op_cell(self, k: int, ca: dict[str, Any]) -> bool:
        """lazy_inline: a tagged primitive that is the only op of a ``Cell.recompute()`` cell, left
        without a copy. MindSpore sets ``recompute: False`` on a recompute cell's output nodes
        (``SetCellOutputNoRecompute``, over the primitive's tag; the log: "All nodes in the graph …
        are the output nodes, which are set to not be recomputed"), so with a key on the cell and
        one on its primitive (GLM4's ``mlp\\.activation_func\\.silu`` and ``…\\.silu\\.silu``) neither
        works. Under lazy_inline that attribute is not printed: only the mark and the prefix."""
        if "recompute" in ca or ca.get("need_cse_after_recompute") is not True:
            return False
        if self.ir[k].get("graph") not in halves(self.ir) or self.applied(k):
            return False
        cell = self.recompute_cell(k)
        return cell is not None and self.call_ops(cell, k) == 1

    def _uncopied_cell_op(self, k: int, ca: dict[str, Any], pa: dict[str, Any]) -> bool:
        """lazy_inline's form of a recompute cell's op that got no copy (its output, or every op of
        a one-op cell): no ``recompute`` attribute in the forward half, only
        ``need_cse_after_recompute: Bool(1)`` and the ``recompute_`` scope prefix."""
        return (
            "recompute" not in ca
            and ca.get("need_cse_after_recompute") is True
            and pa.get("recompute") is not True
            and self.ir[k].get("scope", "").startswith(CELL_PREFIX)
            and self.ir[k].get("graph") in halves(self.ir)
            and not self.applied(k)
        )

    def weight_only(self, k: int) -> bool:
        """Computed from weights and constants only: under full recompute the weight-side ops
        (``_MirrorOperator``, the weight's Cast) are tagged with the cell although no activation
        passes through them, so their tag is not a request that can cost activation memory."""
        return is_weight_derived(self.ir, k)

    # --- cell membership -------------------------------------------------------------------

    def cell_path_of(self, k: int) -> tuple[str, ...]:
        """``cell_path`` of a node's scope, in the layer its weights give when the printed scope
        is another layer's (a reused cell prints the first layer's scope in every layer)."""
        path = cell_path(self.ir[k].get("scope", ""))
        layer = Places.of(self.ir).aliased_layer(k)
        return path if layer is None else with_layer(path, layer)

    def recompute_cell(self, k: int) -> tuple[str, ...] | None:
        """The widest cell around a node with a ``recompute_`` scope whose forward nodes all carry
        the prefix: the cell ``.recompute()`` was (at most) called on."""
        if not self.ir[k].get("scope", "").startswith(CELL_PREFIX):
            return None
        path = self.cell_path_of(k)
        best = None
        for i in range(len(path), 0, -1):
            cell = self._cells.get(path[:i])
            if cell is None or cell.unprefixed:
                break
            best = path[:i]
        return best

    def is_kept_output(self, k: int) -> bool:
        """``recompute: Bool(0)`` on the output of a recompute cell with more than one op: kept
        as the checkpoint by design, so what lies behind it is not kept for backward."""
        d = self.ir[k]
        if (d.get("cnode_attrs") or {}).get("recompute") is not False:
            return False
        cell = self.recompute_cell(k)
        return cell is not None and self.call_ops(cell, k) > 1

    def call_ops(self, cell: tuple[str, ...], k: int) -> int:
        """The forward compute ops of the call of ``cell`` that ``k`` belongs to. A cell called twice
        prints one scope for both calls; a call's ops are linked by data inside the cell or read the
        same input (a cell returning ``transpose(x), neg(x)``), while two calls are linked only
        through ops outside it (``self.pool`` after each conv): the ops linked to ``k``."""
        total = self._cells[cell].ops
        if total == 1:
            return 1
        known = self._call_sizes.get((cell, k))
        if known is not None:
            return known
        ir, paths, n = self.ir, self._node_paths, len(cell)

        def inside(u: int) -> bool:
            return paths.get(u, ())[:n] == cell and ir[u].get("op") != "UpdateState"

        seen, stack, ops = {k}, [k], 0
        while stack:
            v = stack.pop()
            ops += ir[v]["op"] not in BOOKKEEPING_OPS
            near = list(ir.consumers(v))
            for u in ir.producers(v):
                near.append(u)
                if not inside(u) and ir[u].get("op") != "UpdateState":
                    near += ir.consumers(u)  # the call's input, read by its other ops
            for u in near:
                if u not in seen and inside(u):
                    seen.add(u)
                    stack.append(u)
        size = min(ops, total)
        for v in seen:  # one walk per call: a cell's every op may ask (lazy_inline's uncopied ops)
            self._call_sizes[(cell, v)] = size
        return size

    # --- kept for backward / blocking chain ------------------------------------------------

    def backward_readers(self, k: int) -> list[KeptRead]:
        """Backward nodes that read ``k``'s output, directly or through non-recomputed layout
        and pass-through ops; the walk stops at a kept cell output (``is_kept_output``)."""
        if k not in self._readers:  # rules and the bytes-at-stake of every layer peer ask again
            self._readers[k] = self._walk_to_backward(k)
        return list(self._readers[k])

    def _walk_to_backward(self, k: int) -> list[KeptRead]:
        ir = self.ir
        out: list[KeptRead] = []
        seen = {k}
        stack: list[tuple[int, tuple[int, ...]]] = [(k, ())]
        while stack:
            node, chain = stack.pop()
            nexts = [c for c in ir.consumers(node) if c not in seen]
            for param, keyed in ir.succ[node].items():
                for d in keyed.values():
                    if d.get("kind") == "call_in" and param not in seen:
                        nexts.append(param)  # into a called subgraph: continue from its parameter
            for c in nexts:
                seen.add(c)
                d = ir[c]
                if d["kind"] == "param":
                    stack.append((c, chain))
                elif d["kind"] != "cnode":
                    continue
                elif self.is_backward(c) or ir.is_recompute_copy(c):
                    # a recomputed copy runs in backward too: what it reads is kept for it
                    out.append(KeptRead(c, chain))
                elif (
                    (d["op"] in LAYOUT_OPS or d["op"] in PASSTHROUGH_OPS or ir.is_inserted_slice(c))
                    and not self.applied(c)
                    and not ir.is_recompute_copy(c)
                    and not self.is_kept_output(c)
                ):
                    if d["op"] in FIRST_INPUT_ONLY and ir.producers(c)[:1] != [node]:
                        continue  # ordering input of Depend / monad of Load: no data flows
                    stack.append((c, chain + (c,)))
        return sorted(out, key=lambda r: ir[r.reader].get("line", 0))

    def blocking_chain(self, reads: list[KeptRead]) -> list[int]:
        """The layout ops and inserted slices (not pass-through ops) in the chains of ``reads``, each once."""
        ir = self.ir
        return list(
            dict.fromkeys(v for r in reads for v in r.chain if ir[v]["op"] in LAYOUT_OPS or ir.is_inserted_slice(v))
        )

    def up_through_views(self, k: int) -> tuple[int | None, list[int]]:
        """The nearest producer of ``k`` (first inputs only) that is not a Reshape-like view or
        pass-through op, and the ones passed."""
        ir = self.ir
        views: list[int] = []
        node = k
        for _ in range(64):
            d = ir[node]
            if d["kind"] != "cnode" or d["op"] not in _VIEWS_UP:
                return node, views
            views.append(node)
            first = ir.producers(node)[:1]
            if not first:
                return None, views
            node = first[0]
        return None, views


# Walking up to a compute op steps over shape-only ops, never over a Transpose or Cast (those are
# the compute ops a FeedForward or cast rule looks for).
_VIEWS_UP = frozenset({"Reshape", "ExpandDims", "Squeeze", "Flatten"}) | PASSTHROUGH_OPS


def kept_for_backward(ir: IRFile, k: int) -> list[KeptRead]:
    """The backward reads that keep forward node ``k``'s output in memory: each backward node
    reading it directly or through non-recomputed layout ops (Reshape, Transpose, Cast,
    ExpandDims, Squeeze, Flatten) and pass-through ops, with that chain. Empty when no backward
    node needs it, or only behind a recompute cell's kept ``Bool(0)`` output."""
    return RecomputeFacts.of(ir).backward_readers(k)
