"""Where a forward node sits in the model: its decoder layer and its cell path, from the graph's
structure where the printed scope lost them.

Real parallel dumps print scopes a linter cannot take at their word: with lazy_inline most tagged
forward ops of the forward half are just ``Default/SiLU-op0``, and where MindSpore compiled the
layers' cells once and reused them, a later layer's op (and the gradient of an earlier one) can
carry the first layer's scope. What does not lie is the weights: every layer reads its own
parameters (``model.layers.7.feed_forward.w1.weight``), passed by name into each subgraph.

- **Layer**: the layers of the weights nearest to the node in its forward neighbourhood (a walk
  outwards along data edges between forward ops, at most ``MAX_HOPS`` away). The printed layer is kept when such a
  weight of that layer is about as near as the nearest one (the ops between two layers read both);
  otherwise the nearest weights' layer wins. Weights outside the layers (embedding, final norm,
  lm_head) count as ``outside``. No weight near: the printed scope decides.
- **Cell path**: the printed scope when it names cells; else the scope of the node's recomputed
  copy (lazy_inline prints copies with their full scope), else the scope of a gradient op made
  from it (``forward_unique_id``, with ``Gradients/`` and the ``Grad_X`` part cut) when the weights
  near the node belong to the cell it names (a shared ``Grad_Reshape`` can carry another cell's
  scope); a view op left without a place (a Linear's output Reshape) takes its producer's, past
  communication ops. Only the part below the layer is taken from those: their layer number may be
  the reused one.
"""

from __future__ import annotations

import re
import weakref
from collections import Counter
from operator import methodcaller
from typing import Any, NamedTuple

from . import IRFile, primal_attr
from .ops import MATMUL_OPS as MATMUL_OPS
from .ops import TENSOR_PARALLEL_COMM_OPS

OUTSIDE = "outside"
MAX_HOPS = 16
SIDE_HOPS = 64  # ops a weights_side walk passes
LINK_HOPS = 8  # re-layout ops a Dropout or a collective printing no cell is wrapped in
NEAR = 2  # hops within which the printed layer still agrees with the nearest weights
# a numbered cell of a list: a decoder layer, not one of the micro batches MindSpore's pipeline and
# interleave wrappers slice the inputs into (``micro_inputs-CellList/0-_MicroBatch``)
_LAYER_PART = re.compile(r"\A(\d+)-(?!_MicroBatch\Z)")
LAYER_IN_NAME = re.compile(r"\.(\d+)\.")
_PARA_PREFIX = re.compile(r"\A%?para\d+_")
_OP_SUFFIX = re.compile(r".+-op\d+\Z")
# ops that tie unrelated tensors together (state order, tuples of everything, calls): the
# neighbourhood walk does not pass through them
_VIEWS = frozenset({"Reshape", "ExpandDims", "Squeeze", "Flatten"})
_COMM_OPS = TENSOR_PARALLEL_COMM_OPS
# ops between a Linear's MatMul and its input or output: its Casts and the collectives of tensor parallel
_LINK_OPS = frozenset({"Cast", *_COMM_OPS})
_NOT_NEIGHBOURS = frozenset({"UpdateState", "MakeTuple", "Depend", "Partial", "call", "Return", "Send", "Receive"})


class Place(NamedTuple):
    """Where a node is in the network: its decoder layer and the cells below it."""

    layer: str  # decoder layer number, or "outside"
    cells: tuple[str, ...]  # cell scope parts (``name-Class``) below the layer, e.g. feed_forward-X, w1-Linear
    scope: str  # a full scope that names the cells (printed or recovered), else the printed one
    layer_from: str  # "scope", "links" or "weights"
    cells_from: str  # "scope", "weights", "copy", "links", "gradient", "producer" or "none"


def scope_parts(scope: str) -> list[str]:
    """Scope components without the ``recompute_`` prefix, ``Gradients/`` and the ``Op-opN`` suffix."""
    scope = scope.removeprefix("Gradients/").removeprefix("recompute_")
    parts = scope.split("/")
    if parts and _OP_SUFFIX.match(parts[-1]):
        parts = parts[:-1]
    return parts


def names_cells(scope: str) -> bool:
    return any("-" in p for p in scope_parts(scope))


def printed_layer(scope: str) -> str | None:
    """The layer number a scope prints (``…/layers-CellList/3-DecoderLayer/…``), ``outside`` for
    a scope naming cells but no layer, None for a scope naming no cell (``Default/SiLU-op0``)."""
    parts = scope_parts(scope)
    for p in parts:  # the outermost numbered cell: a layer's own cell lists (experts) sit inside it
        m = _LAYER_PART.match(p)
        if m:
            return m.group(1)
    return OUTSIDE if any("-" in p for p in parts) else None


def below_layer(parts: list[str]) -> tuple[str, ...]:
    numeric = [i for i, p in enumerate(parts) if _LAYER_PART.match(p)]
    return tuple(parts[numeric[-1] + 1 :]) if numeric else tuple(parts)


# ops a weight passes through on its way to the op that reads it: the Load of the parameter, the
# model's Cast to the compute type, Depend, and the parallel optimizer's gather of a sharded weight
_WEIGHT_PASS = frozenset({"Load", "Cast", "Depend", "AllGather", "MirrorMicroStep", "MicroStepAllGather"})


def weight_name(ir: IRFile, node: int) -> str | None:
    """The name of the weight a node holds or passes on: a parameter's own when it has a default,
    else that of the weight every call (or Partial) passes to it; through a Load, Cast or Depend of
    it (an outer graph passes a lazy_inline subgraph the Cast of a weight). None for inputs,
    monads and activations."""
    for _ in range(32):
        d = ir[node]
        if d["kind"] == "param":
            if d.get("has_default"):
                return _PARA_PREFIX.sub("", d.get("name") or d.get("id", ""))
            args = ir.inputs_of_kind(node, "call_in")
            if not args:
                return None
            # a parameter passed on as it is first (the nearest weight), then what an op made of one
            node = min(args, key=lambda a: ir[a]["kind"] != "param")
        elif d["kind"] == "cnode" and d["op"] in _WEIGHT_PASS:
            ins = ir.producers(node)[:1]
            if not ins:
                return None
            node = ins[0]
        else:
            return None
    return None


def weight_layer(name: str) -> str:
    m = LAYER_IN_NAME.search(name)
    return m.group(1) if m else OUTSIDE


def weight_cell(name: str) -> str:
    """The first cell attribute below the layer in a weight's name (``attention`` for
    ``model.layers.0.attention.wo.weight``), or the weight's first name outside the layers."""
    m = LAYER_IN_NAME.search(name)
    rest = name[m.end() :] if m else name.split(".", 1)[-1] if name.count(".") > 1 else name
    return rest.split(".", 1)[0]


def weight_cells(name: str) -> tuple[str, ...]:
    """The cell attributes of a weight's name below the layer, its own parameter name left out
    (``decoder.layers.0.mlp.linear_fc2.weight`` -> ``("mlp", "linear_fc2")``); outside the layers
    the whole path (``embedding.word_embeddings``)."""
    m = LAYER_IN_NAME.search(name)
    rest = name[m.end() :] if m else name
    return tuple(rest.split(".")[:-1])


def read_weights(ir: IRFile, k: int) -> list[str]:
    """The weights a node reads as data inputs, each followed through Load, Cast, Depend and the
    call arguments of outer graphs (``weight_name``), in argument order."""
    names = (weight_name(ir, u) for u in ir.producers(k) if ir[u]["kind"] in ("param", "cnode"))
    return [n for n in names if n and "." in n]


def linear_name(ir: IRFile, matmul: int) -> str:
    """The model's own name of the Linear a MatMul computes: the cell of the weight it reads
    (``linear_fc2``, ``w2``, ``dense_4h_to_h``); "" when it reads no named weight."""
    cells = {weight_cells(n)[-1:] for n in read_weights(ir, matmul)} - {()}
    return cells.pop()[0] if len(cells) == 1 else ""


class Places:
    """Layer and cell path of the forward nodes of one file (computed once per IRFile)."""

    def __init__(self, ir: IRFile):
        # a weak reference: the IRFile keeps this index, and a cycle would outlive the file
        self._ir = weakref.ref(ir)
        self._near: dict[int, dict[str, int]] = {}  # node -> layer -> hops to its nearest weight
        self._weights: dict[int, tuple[str, str] | None] = {}  # node -> layer and cell of the weight it is
        self._forward_memo: dict[int, bool] = {}
        self._steps: dict[
            int, tuple[tuple[Any, ...], tuple[Any, ...]]
        ] = {}  # node -> its weights and forward neighbours
        self._near_cells: dict[int, set[str]] = {}  # node -> those cells of the weights near it
        self._grad_scopes: dict[str, str] | None = None  # forward unique_id -> a gradient op's scope
        self._places: dict[int, Place] = {}
        self._reads: dict[int, list[str]] = {}  # node -> the weights it reads
        self._linked: dict[tuple[int, str | None], str | None] = {}  # (node, printed layer) -> linked layer
        self._base_layers: dict[int, tuple[str, str]] = {}

    @property
    def ir(self) -> IRFile:
        return self._ir()  # type: ignore[return-value]  # held by the file it describes

    @classmethod
    def of(cls, ir: IRFile) -> Places:
        places = ir.__dict__.get("_places")
        if places is None:
            places = ir.__dict__["_places"] = cls(ir)
        return places

    def _forward(self, k: int) -> bool:
        d = self.ir[k]
        return (
            d["kind"] == "cnode"
            and d["op"] not in _NOT_NEIGHBOURS
            and not self.ir.is_backward(k)
            and not self.ir.is_recompute_copy(k)
        )

    def _tuple(self, k: int) -> bool:
        """A forward MakeTuple (the walks that go one way only may pass it: what it ties is read on)."""
        d = self.ir[k]
        return d["kind"] == "cnode" and d["op"] == "MakeTuple" and not self.ir.is_backward(k)

    def _weight(self, k: int) -> tuple[str, str] | None:
        """(layer, cell) of the weight a node is (a parameter holding or passed one), else None."""
        if self.ir[k]["kind"] != "param":
            return None
        name = weight_name(self.ir, k)
        return None if name is None else (weight_layer(name), weight_cell(name))

    def _grad_scope(self) -> dict[str, str]:
        """Forward unique_id -> the scope of the first gradient op made from it that names cells
        (one walk of the file, when a forward scope first lacks them)."""
        if self._grad_scopes is None:
            ir = self.ir
            self._grad_scopes = {}
            for k, d in ir.nodes.items():
                if d["kind"] == "cnode" and ir.is_backward(k):
                    uid = primal_attr(d, "forward_unique_id")
                    if uid is not None and names_cells(d.get("scope", "")):
                        self._grad_scopes.setdefault(str(uid), d["scope"])
        return self._grad_scopes

    def _step(self, node: int) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        """The neighbours of ``node`` a walk can use, once per node: the weights (with their layer
        and cell) and the forward ops it goes on through; the others end a walk either way."""
        ir, forward, known = self.ir, self._forward_memo, self._weights
        weights, onward = [], []
        for n in {**ir.pred[node], **ir.succ[node]}:  # data, call and callee edges alike
            if n in known:
                weight = known[n]
            else:
                weight = known[n] = self._weight(n)
            if weight is not None:
                weights.append((n, *weight))
                continue
            ok = forward.get(n)
            if ok is None:
                ok = forward[n] = self._forward(n)
            if ok:
                onward.append(n)
        return tuple(weights), tuple(onward)

    def near(self, k: int) -> dict[str, int]:
        """Layer -> hops from ``k`` to the nearest weight of that layer, for the layers whose
        weights are within ``NEAR`` hops of the nearest one (a walk from the node outwards)."""
        found = self._near.get(k)
        if found is not None:
            return found
        steps = self._steps
        found = {}
        cells: set[str] = set()
        limit = MAX_HOPS
        seen = {k}
        frontier = [k]
        for hops in range(1, MAX_HOPS + 1):
            if hops > limit or not frontier:
                break
            nxt = []
            for node in frontier:
                step = steps.get(node)
                if step is None:
                    step = steps[node] = self._step(node)
                weights, onward = step
                for w, layer, cell in weights:
                    if w != k:  # a weight seen before was nearer: nothing changes
                        found.setdefault(layer, hops)
                        limit = min(limit, hops + NEAR)
                        cells.add(cell)
                for n in onward:
                    if n not in seen:
                        seen.add(n)
                        nxt.append(n)
            frontier = nxt
        self._near[k] = found
        self._near_cells[k] = cells
        return found

    def reads_weights(self, k: int) -> list[str]:
        """``read_weights``, once per node."""
        found = self._reads.get(k)
        if found is None:
            found = self._reads[k] = read_weights(self.ir, k)
        return found

    def unplaced(self, k: int) -> bool:
        """Whether a node's printed scope places it nowhere: it names no cell (``Default/Dropout-op0``)
        or only cells on the way to the layers (``transformer-ChatGLM2Model/Cast-op7``, the
        model's own cast of a layer's norm output)."""
        scope = self.ir[k].get("scope", "")
        printed = printed_layer(scope)
        return printed is None or (printed == OUTSIDE and above_layers(self.ir, scope))

    def linked_layer(self, k: int, through: str | None = None) -> str | None:
        """The layer a forward op's data links give: the layers of the nearest placed ops among its
        producers and among its consumers (those reading weights, or printing a cell), walked
        through the ops placed nowhere and, with ``through``, those printing that same layer.
        ``through=None`` (an op placed nowhere: ``Default/Dropout-op0``, the re-layouts the
        parallel pass puts around it): the one layer the sides that reach a placed op give.
        With ``through`` (an op printing that layer), when the ops around deny it: the one layer
        of the nearest weights read before and after it (``weights_side``; the residual Add
        between two layers reads one layer's before and the next one's after: no answer).
        None otherwise (a tuple of two layers' tensors disagrees)."""
        memo = self._linked
        if (k, through) in memo:
            return memo[k, through]
        ir = self.ir
        found: set[str] = set()
        sides = 0
        for step in (ir.producers, ir.consumers):
            side: set[str] = set()
            seen, frontier = {k}, [k]
            for _ in range(LINK_HOPS):
                nxt = []
                for n in frontier:
                    for m in step(n):
                        if m in seen or ir[m]["kind"] != "cnode" or ir.is_backward(m) or ir.is_recompute_copy(m):
                            continue
                        seen.add(m)
                        if ir[m]["op"] in _NOT_NEIGHBOURS and ir[m]["op"] != "MakeTuple":
                            if through is None and not self.unplaced(m):
                                side.add(self.base_layer(m)[0])  # a Depend printing the cell's output
                            continue
                        if self.reads_weights(m):
                            side.add(self.base_layer(m)[0])
                        elif self.unplaced(m) or (
                            through is not None and printed_layer(ir[m].get("scope", "")) == through
                        ):
                            nxt.append(m)
                        else:
                            side.add(self.base_layer(m)[0])
                if side or not nxt:
                    break
                frontier = nxt
            sides += bool(side)
            found |= side
        if through is None:
            answer = found.pop() if len(found) == 1 else None
        elif found - {through}:
            # the printed layer is denied around it: the weights the ops before and after it read
            # decide, each side walked one way only (a table both layers read, the rotary one, joins
            # two layers when walked both ways)
            sides_found = self.weights_side(k, ir.producers) | self.weights_side(k, ir.consumers)
            answer = sides_found.pop() if len(sides_found) == 1 else None
        else:
            answer = None
        memo[k, through] = answer
        return answer

    def weights_side(self, k: int, step: Any) -> set[str]:
        """The layers of the nearest weights read by the forward ops before ``k`` (``step``:
        ``ir.producers``) or after it (``ir.consumers``), walked that way only, at most
        ``SIDE_HOPS`` ops away (the rotary output to the attention's dense: 26)."""
        seen, frontier = {k}, [k]
        for _ in range(SIDE_HOPS):
            found: set[str] = set()
            nxt = []
            for n in frontier:
                for m in step(n):
                    if m in seen or not (self._forward(m) or self._tuple(m)):
                        continue
                    seen.add(m)
                    names = [w for w in self.reads_weights(m) if not w.startswith(_STATE_PREFIXES)]
                    if names:
                        found.update(weight_layer(w) for w in names)
                    else:
                        nxt.append(m)
            if found or not nxt:
                return found
            frontier = nxt
        return set()

    def layer(self, k: int) -> tuple[str, str]:
        """(layer, "scope" | "links" | "weights") of a forward node: for an op that reads no weight,
        its data links where the printed scope places it nowhere, or where it prints a layer both
        sides of it deny (MindSpore prints one compiled cell's scope, layer 0's, on ops of every
        layer that reuse it); else ``base_layer``."""
        ir = self.ir
        if ir[k]["op"] not in _NOT_NEIGHBOURS and not self.reads_weights(k):
            if self.unplaced(k):
                linked = self.linked_layer(k)
                if linked is not None:
                    return linked, "links"
            else:
                printed = printed_layer(ir[k].get("scope", ""))
                if printed is not None and printed.isdigit():
                    linked = self.linked_layer(k, printed)
                    if linked is not None and linked.isdigit() and linked != printed:
                        return linked, "links"
        return self.base_layer(k)

    def base_layer(self, k: int) -> tuple[str, str]:
        """(layer, "scope" | "weights") of a forward node from its printed scope and the weights
        near it."""
        memo = self._base_layers
        if k not in memo:
            memo[k] = self._base_layer(k)
        return memo[k]

    def _base_layer(self, k: int) -> tuple[str, str]:
        scope = self.ir[k].get("scope", "")
        printed = printed_layer(scope)
        near = self.near(k)
        if not near:
            return (printed or OUTSIDE), "scope"
        if printed == OUTSIDE and outside_cell(self.ir, scope):
            # a cell of the model outside its layers (the embedding, the final norm, the loss) is no
            # layer's, however near a layer's weights are: its output feeds layer 0
            return OUTSIDE, "scope"
        nearest = min(near.values())
        if printed is not None and printed in near and near[printed] <= nearest + NEAR:
            return printed, "scope"
        # a tie between a layer and the weights outside the layers (the residual stream reaches the
        # embedding's output): the layer
        best = min(
            (h, 1 if layer == OUTSIDE else 0, int(layer) if layer.isdigit() else 0, layer) for layer, h in near.items()
        )
        return best[3], "weights"

    def aliased_layer(self, k: int) -> str | None:
        """The layer a forward op belongs to (or ``outside``) when its printed scope names another
        one whose weights are nowhere near it (MindSpore prints the first layer's scope on a reused
        cell's ops in every layer, and on the loss's scalar ops: its data links or the weights say
        so), else None. An op between two
        layers reads both layers' weights: its printed layer is near, so it is never taken for
        aliased."""
        printed = printed_layer(self.ir[k].get("scope", ""))
        if printed is None or printed == OUTSIDE:
            return None
        layer, source = self.layer(k)
        if source == "links":
            return layer if layer != printed else None
        if source != "weights" or printed in self.near(k):
            return None
        return layer

    def cell_scope(self, k: int) -> str:
        """A scope naming ``k``'s cells: the printed one when it does (no walk needed), else the
        one ``place`` recovers."""
        scope = self.ir[k].get("scope", "")
        return scope if names_cells(scope) else self.place(k).scope

    def place(self, k: int) -> Place:
        if k not in self._places:
            self._places[k] = self._place(k)
        return self._places[k]

    def _classes(self) -> dict[tuple[str, ...], tuple[str, ...]]:
        """Cell attribute path below the layer (``("mlp", "linear_fc2")``) -> the scope parts that
        print it (``mlp-MLP``, ``linear_fc2-RowParallelLinear``), and ``()`` -> the parts down to a
        layer; from every printed scope of the file (one walk, when a place is first built from
        weights)."""
        found = self.__dict__.get("_class_index")
        if found is None:
            found = {}
            for d in self.ir.nodes.values():
                parts = scope_parts(d.get("scope", ""))
                at = layer_prefix(tuple(parts))
                if at is None:
                    continue
                found.setdefault((), at)
                below = [p for p in parts[len(at) :] if "-" in p]
                names = tuple(p.split("-", 1)[0] for p in below)
                for i in range(1, len(below) + 1):
                    found.setdefault(names[:i], tuple(below[:i]))
            self.__dict__["_class_index"] = found
        return found

    def own_cells(self, k: int) -> tuple[str, ...] | None:
        """The cell attributes below the layer of the weights ``k`` reads itself (a MatMul its
        Linear's, a norm its own), when they are of one cell; None otherwise."""
        cells = {weight_cells(n) for n in read_weights(self.ir, k) if LAYER_IN_NAME.search(n)} - {()}
        return cells.pop() if len(cells) == 1 else None

    def linked_cells(self, k: int) -> tuple[str, ...] | None:
        """The cell of the Linear a Cast, a collective or an output view belongs to, from its
        forward links: the MatMul whose output it casts, reduces or reshapes, else (not for a
        view: a Reshape before a Linear may be its caller's, folded) the MatMul its output feeds,
        through Casts and collectives only. None when those MatMuls read weights of more than one
        cell, or none."""
        ir = self.ir
        op = ir[k]["op"]
        if op not in _LINK_OPS and op not in _VIEWS:
            return None
        for step, ok in ((ir.producers, True), (ir.consumers, op not in _VIEWS)):
            if not ok:
                continue
            cells, frontier, seen = set(), [k], {k}
            for _ in range(4):
                nxt = []
                for n in frontier:
                    for w in step(n)[:1] if step is ir.producers else step(n):
                        if w in seen or ir[w]["kind"] != "cnode" or not self._forward(w):
                            continue
                        seen.add(w)
                        if ir[w]["op"] in MATMUL_OPS:
                            found = self.own_cells(w)
                            cells.add(found)
                        elif ir[w]["op"] in _LINK_OPS:
                            nxt.append(w)
                frontier = nxt
            if cells:
                return cells.pop() if len(cells) == 1 and None not in cells else None
        return None

    def _from_weights(self, k: int, layer: str, layer_from: str, cells: tuple[str, ...], source: str) -> Place:
        """A place whose cells come from weight names, printed as the file's scopes print them."""
        index = self._classes()
        parts = index.get(cells) or tuple(f"{c}-" for c in cells)
        top = with_layer(index[()], layer) if () in index and layer.isdigit() else ("Default",)
        op = self.ir[k]["op"]
        return Place(layer, parts, "/".join([*top, *parts, f"{op}-op0"]), layer_from, source)

    def _place(self, k: int) -> Place:
        ir = self.ir
        d = ir[k]
        scope = d.get("scope", "")
        layer, layer_from = self.layer(k)
        printed = below_layer(scope_parts(scope)) if names_cells(scope) else None
        if printed is not None and layer.isdigit() and layer_prefix(tuple(scope_parts(scope))) is None:
            printed = None  # a scope printing no layer names no cell inside the one the weights gave
        # the weights an op reads are its own cell's: no scope (lazy_inline's Default/MatMul-op3,
        # an mcore Linear's Morph) and no neighbour can say otherwise
        own = self.own_cells(k) if layer.isdigit() else None
        if own is not None:
            if printed is not None and tuple(p.split("-", 1)[0] for p in printed) == own:
                return Place(layer, printed, scope, layer_from, "scope")
            return self._from_weights(k, layer, layer_from, own, "weights")
        if printed is not None:
            return Place(layer, printed, scope, layer_from, "scope")
        for c in ir.copy_of(k):
            if names_cells(ir[c].get("scope", "")):
                return Place(layer, below_layer(scope_parts(ir[c]["scope"])), ir[c]["scope"], layer_from, "copy")
        linked = self.linked_cells(k) if layer.isdigit() else None
        if linked is not None:
            return self._from_weights(k, layer, layer_from, linked, "links")
        uid = primal_attr(d, "unique_id")
        grad = self._grad_scope().get(str(uid)) if uid is not None else None
        if grad is not None:
            parts = scope_parts(grad)
            cut = next((i for i, p in enumerate(parts) if p.startswith("Grad_")), len(parts))
            cells = below_layer(parts[:cut])
            # a gradient op's scope can name another cell altogether (MindSpore shares one Grad_Reshape
            # between cells): taken only when the weights near the node belong to that cell
            self.near(k)
            if cells and cells[0].split("-", 1)[0] in self._near_cells.get(k, ()):
                return Place(layer, cells, "/".join(parts[:cut]), layer_from, "gradient")
        if d["op"] in _VIEWS:
            # a view with no place of its own (a Linear's output Reshape after its MatMul and
            # AllReduce) belongs to the cell of the op whose tensor it reshapes
            src = k
            for _ in range(8):
                ins = ir.producers(src)[:1]
                if not ins or ir[ins[0]]["kind"] != "cnode":
                    break
                src = ins[0]
                if ir[src]["op"] in _COMM_OPS:
                    continue
                if names_cells(ir[src].get("scope", "")) and self.layer(src)[0] == layer:
                    src_scope = ir[src]["scope"]
                    return Place(layer, below_layer(scope_parts(src_scope)), src_scope, layer_from, "producer")
                break
        return Place(layer, (), scope, layer_from, "none")


def place(ir: IRFile, k: int) -> Place:
    return Places.of(ir).place(k)


def with_layer(parts: tuple[str, ...], layer: str) -> tuple[str, ...]:
    """Scope parts with the outermost layer number (``0-DecoderLayer``) set to ``layer``; for
    ``outside`` that part becomes ``outside`` (the op's own cell outside the layers is unknown)."""
    for i, p in enumerate(parts):
        m = _LAYER_PART.match(p)
        if m:
            return parts[:i] + (OUTSIDE if layer == OUTSIDE else layer + p[m.end(1) :],) + parts[i + 1 :]
    return parts


def any_layer(scope: str) -> str | None:
    """A scope with its decoder layer's number (the outermost numbered cell, whatever the layer
    list is called) as ``*``: the same scope in every layer; None when it prints no layer."""
    parts = scope.split("/")
    for i, p in enumerate(parts):
        m = _LAYER_PART.match(p)
        if m:
            parts[i] = "*" + p[m.end(1) :]
            return "/".join(parts)
    return None


def layer_prefix(parts: tuple[str, ...]) -> tuple[str, ...] | None:
    """Scope parts down to the outermost layer (``…/layers-CellList/0-DecoderLayer``), None
    when they name no layer."""
    for i, p in enumerate(parts):
        if _LAYER_PART.match(p):
            return parts[: i + 1]
    return None


def layer_of_node(ir: IRFile, k: int) -> str:
    return Places.of(ir).layer(k)[0]


def layer_of_any(ir: IRFile, k: int) -> str:
    """The decoder layer of any node, from the graph's links: a forward op's (``Places.layer``);
    a backward node's, that of the forward node it belongs to (``forward_of``), else that of the
    weight whose gradient it reduces (``mirror_user_id``: a mirror op's gradient, whose forward
    op the dump does not hold); only a backward node with neither link takes its printed scope's
    (``outside`` when it prints none). A recomputed copy is given by the op it repeats."""
    if not ir.is_backward(k) and not ir.is_recompute_copy(k):
        return Places.of(ir).layer(k)[0]
    original = ir.original_of(k)
    if original is not None:
        return Places.of(ir).layer(original)[0]
    forward = ir.forward_of(k)
    if forward is not None and not ir.is_backward(forward) and not ir.is_recompute_copy(forward):
        return Places.of(ir).layer(forward)[0]
    weight = primal_attr(ir[k], "mirror_user_id")
    if isinstance(weight, str) and "." in weight:
        return weight_layer(weight)
    return printed_layer(ir[k].get("scope", "")) or OUTSIDE


class Naming(NamedTuple):
    """How a file's parameter names spell the way to the decoder layers."""

    layers: tuple[str, ...]  # the parameter names' path to the layer list: ("decoder", "layers")
    wrappers: tuple[str, ...] | None  # the scope's cells above it that names leave out, None: unknown


_LAYERED_NAME = re.compile(r"\A(.+?)\.\d+\.")
# the optimizer's state and accumulated gradients, named after the weights they belong to
_STATE_PREFIXES = ("accu_grads.", "moments.", "adam_", "accum.")


def naming(ir: IRFile) -> Naming | None:
    """The parameter names' path to the layers (the most common one; ``model.layers`` in
    MindFormers' Llama, ``decoder.layers`` in its mcore models) and the wrapper cells the printed
    scopes hold above it (``network``, ``model`` of the training and pipeline cells), so that a path
    is the same whatever cells wrap the model; None when no parameter is a layer's."""
    if "_naming" in ir.__dict__:
        cached: Naming | None = ir.__dict__["_naming"]
        return cached
    counts: dict[str, int] = {}
    for d in ir.nodes.values():
        if d["kind"] == "param" and d.get("has_default"):
            m = _LAYERED_NAME.match(_PARA_PREFIX.sub("", d.get("name") or d.get("id", "")))
            if m:
                counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    found = None
    if counts:
        # the optimizer's state and accumulated gradients repeat the names behind a prefix of theirs
        # (``moments.decoder.layers``, ``accu_grads.model.layers``): the model's own path is the one
        # no other ends with
        own = [p for p in counts if not any(p.endswith("." + q) for q in counts)]
        layers = tuple(max(own, key=lambda p: (counts[p], p)).split("."))
        wrappers = None
        for d in ir.nodes.values():
            parts = scope_parts(d.get("scope", ""))
            at = next((i for i, part in enumerate(parts) if _LAYER_PART.match(part)), None)
            if at is None:
                continue
            above = tuple(part.split("-", 1)[0] for part in parts[:at] if "-" in part)
            if above[len(above) - len(layers) :] == layers:
                wrappers = above[: len(above) - len(layers)]
                break
        found = Naming(layers, wrappers)
    ir.__dict__["_naming"] = found
    return found


def _cell_path(scope: str) -> list[str]:
    """The cell names a scope prints, class names left out (``network``, ``model``, ``layers``, …)."""
    return [p.split("-", 1)[0] for p in scope_parts(scope) if "-" in p]


def _below_wrappers(ir: IRFile, scope: str) -> tuple[Naming, list[str], bool] | None:
    """(the file's naming, the scope's cell path below the wrapper cells, whether the path started
    with them), None when the file's naming or its wrappers are unknown."""
    names = naming(ir)
    if names is None or names.wrappers is None:
        return None
    path, wrappers = _cell_path(scope), list(names.wrappers)
    wrapped = path[: len(wrappers)] == wrappers
    return names, path[len(wrappers) :] if wrapped else path, wrapped


def outside_cell(ir: IRFile, scope: str) -> bool:
    """Whether a scope names a cell of the model that is not on the way to its layers (the
    embedding, ``decoder.final_layernorm``, the loss, the pipeline's micro batches): the cells below
    the wrappers leave the parameter names' path to the layers. False when the file's naming is
    unknown or the scope stops on that path (``decoder-TransformerBlock/Cast-op0``)."""
    found = _below_wrappers(ir, scope)
    if found is None:
        return False
    names, rest, _ = found
    return bool(rest) and tuple(rest[: len(names.layers)]) != names.layers[: len(rest)]


def above_layers(ir: IRFile, scope: str) -> bool:
    """Whether a scope names cells of the model only on the parameter names' path to its layers
    (``decoder-TransformerBlock/Cast-op0``), none of a layer nor one outside them. False when the
    file's naming is unknown."""
    found = _below_wrappers(ir, scope)
    if found is None or not found[2]:
        return False
    names, rest, _ = found
    return bool(rest) and len(rest) <= len(names.layers) and tuple(rest) == names.layers[: len(rest)]


def model_path(ir: IRFile, k: int) -> tuple[str, str]:
    """A node's resolved layer ("3", "outside", "" when nothing tells) and cell path as the
    model's parameter names spell it, class names and the wrapper cells of training and pipeline
    left out and the layer the graph resolved put in (``model.layers.3.feed_forward.w2``,
    ``decoder.layers.0.mlp.linear_fc2``: the same whatever the parallel configuration); the path of
    what recovered the place where the printed scope lost it (lazy_inline's ``Default/SiLU-op0``).
    A backward node takes the path of the forward node it belongs to, else the cell of the weight
    whose gradient it reduces (``mirror_user_id``), as ``layer_of_any`` takes their layers: MindSpore's
    backward scopes can name another cell (a shared ``Grad_Reshape``, the next layer's). A recomputed
    copy takes the path of the op it rebuilds."""
    if ir.is_recompute_copy(k):
        original = ir.original_of(k)
        if original is not None:
            return model_path(ir, original)
    elif ir.is_backward(k):
        forward = ir.forward_of(k)
        if forward is not None and not ir.is_backward(forward) and not ir.is_recompute_copy(forward):
            return model_path(ir, forward)
        weight = primal_attr(ir[k], "mirror_user_id")
        if isinstance(weight, str) and "." in weight:
            return weight_layer(weight), weight.rsplit(".", 1)[0]
    p = Places.of(ir).place(k)
    parts = scope_parts(p.scope)
    names = naming(ir)
    at = next((i for i, part in enumerate(parts) if _LAYER_PART.match(part)), None)
    above = [part.split("-", 1)[0] for part in (parts[:at] if at is not None else []) if "-" in part]
    below = [part.split("-", 1)[0] for part in p.cells if "-" in part]
    if p.layer.isdigit():
        lead = list(names.layers) if names else (above or ["layers"])
        return p.layer, ".".join([*lead, p.layer, *below])
    if not parts and p.layer == OUTSIDE and not p.cells:
        return "", ""
    path = _cell_path(p.scope)
    wrappers = names.wrappers if names else None
    if wrappers and path[: len(wrappers)] == list(wrappers):
        path = path[len(wrappers) :]  # the model's own cell (its mirror ops' gradients) is the root, ""
    return p.layer, ".".join(path)


_NETWORK_PART = re.compile(r"network-(\w+)")
_SCOPE_OF = methodcaller("get", "scope", "")


def network_class(ir: IRFile) -> str:
    """The class of the model a dump compiled (``LlamaForCausalLM``, ``TrainingQwen3ForCausalLM``):
    the innermost of the ``network-<Class>`` cells that open its scopes (training wrappers hold the
    model as their ``network``), the most common one over the graph's nodes; "" when no scope names
    one. The same for a model printed with or without lazy_inline, or with a layer's class renamed."""
    found = ir.__dict__.get("_network_class")
    if found is None:
        counts: dict[str, int] = {}
        # each scope read once, with the number of nodes that print it (counted in C)
        for scope, n in Counter(map(_SCOPE_OF, ir.nodes.values())).items():
            parts = scope.split("/")
            inner = ""
            for part in parts[1:] if parts and parts[0] in ("Default", "Gradients") else ():
                if part == "Default":
                    continue
                m = _NETWORK_PART.fullmatch(part)
                if m is None:
                    break
                inner = m.group(1)
            if inner:
                counts[inner] = counts.get(inner, 0) + n
        found = ir.__dict__["_network_class"] = max(sorted(counts), key=counts.__getitem__, default="")
    return found
