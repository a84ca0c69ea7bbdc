"""Static activation-memory accounting: which forward tensors a dump keeps alive for backward.

Counted (``kept``): the output of a forward CNode that a node running in the backward pass reads,
directly or through ops that share its tensor (Reshape, ExpandDims, Squeeze, Flatten, Depend,
Load, TupleGetItem/MakeTuple element access, subgraph calls), once per tensor. Nodes running in
the backward pass are the backward nodes (``Gradients/`` scope, ``forward_unique_id``, CPU
``Expand/_XGrad/`` expansions) and the recomputed copies (``duplicated: Bool(1)``): a copy's
inputs are the checkpoints recompute keeps. A tensor whose copy backward reads instead is
``recompute_saved``. Bytes are dtype size x local shape from the type line.

Not counted: parameters (weights, and graph inputs such as the batch), optimizer state,
gradients, constants, and workspace or temporary buffers of the backward pass itself.
"""
from __future__ import annotations

import re
import weakref
from dataclasses import dataclass, field
from collections.abc import Container, Iterable, Iterator
from typing import NamedTuple

from ..findings import Finding
from ..model.layers import OUTSIDE, Places, layer_of_node, printed_layer
from ..model import IRFile, weights_upstream
from ..model.pipeline import backward_calls, schedules
from ..read.values import TensorType
from ..units import human_bytes

# The stage files whose graph is final for the accounting, best first: the same choice as the
# recompute rules (validate is the final front-end graph; CPU kernel graphs expand ops).
MEMORY_STAGES = ("validate", "cse_after_recomputation", "add_recomputation", "graph_build")

SCOPE_NOTE = ("Counted: outputs of forward ops that the backward pass reads (directly or through "
              "views that share the tensor), once per tensor, without what was recomputed. Not "
              "counted: parameters and graph inputs, optimizer state, gradients, constants, "
              "backward workspace.")

# ops whose output is (a view of) the tensor of their first input
VIEW_OPS = frozenset({"Reshape", "ExpandDims", "Squeeze", "Flatten", "Depend", "Load"})
# backward bookkeeping: they pass tensors on or order effects, they need no storage of their own
_PLUMBING = frozenset({"MakeTuple", "TupleGetItem", "UpdateState", "Depend", "Load"})
_EXPANDED_GRAD = re.compile(r"Expand/_\w+Grad/")
# ops whose output is new data although their inputs are constants (a pipeline stage's input)
_DATA_SOURCES = frozenset({"Receive"})
_TUPLE_OPS = frozenset({"TupleGetItem", "MakeTuple"})
_LAYER = re.compile(r"layers-[^/]*/(\d+)-")
_WEIGHT_LAYER = re.compile(r"\.layers\.(\d+)\.")


class Tensor(NamedTuple):
    """One forward tensor: the node that makes it, and which output of it (None: the only one)."""

    node: int
    index: int | None = None


@dataclass
class KeptTensor:
    """A forward output that stays alive until the backward pass reads it."""

    tensor: Tensor
    type: TensorType | None
    layer: str
    readers: list[int] = field(default_factory=list)

    @property
    def nbytes(self) -> int:
        return (self.type.nbytes or 0) if self.type is not None else 0


class _PlacedOnRead(KeptTensor):
    """A kept tensor whose layer is looked up when first read. The layer walk was most of the
    account's time, and the recompute rules ask the account only for bytes."""

    def __init__(self, tensor: Tensor, type: TensorType | None, ir: IRFile, node: int):
        self._ir, self._node = weakref.ref(ir), node   # weakly: the file keeps its account, no cycle
        super().__init__(tensor, type, None)

    @property
    def layer(self) -> str:
        layer = self.__dict__["_layer"]
        if layer is None:
            layer = self.__dict__["_layer"] = Places.of(self._ir()).layer(self._node)[0]
            self._ir = None
        return layer

    @layer.setter
    def layer(self, value: str | None) -> None:
        self.__dict__["_layer"] = value


@dataclass
class LayerMemory:
    """The kept activations of one decoder layer, summed."""

    layer: str
    kept_bytes: int = 0
    tensors: int = 0
    recompute_saved_bytes: int = 0


@dataclass
class MemoryReport:
    """A dump's kept activations, what recompute saves, and the pipeline's micro batches."""

    kept: list[KeptTensor]
    saved: list[KeptTensor]   # tensors backward reads as recomputed copies instead
    # kept tensors computed from weights and constants only (fp16 copies of weights): they scale
    # with the parameters, not with the batch, so they are shown apart and not counted
    weight_copies: list[KeptTensor] = field(default_factory=list)
    # pipeline stage (lazy_inline forward half called per micro batch): micro batches and how many
    # are in flight at most; tensors of that forward half exist once per micro batch in flight
    micro_batches: int = 1
    in_flight: int = 1
    per_micro_batch: frozenset = frozenset()   # nodes of the forward half

    @property
    def total_kept_bytes(self) -> int:
        return sum(t.nbytes for t in self.kept)

    @property
    def peak_kept_bytes(self) -> int:
        """Kept bytes with every micro batch in flight: the forward half's tensors times in_flight."""
        return sum(t.nbytes * (self.in_flight if t.tensor.node in self.per_micro_batch else 1) for t in self.kept)

    def layers(self) -> list[LayerMemory]:
        rows: dict[str, LayerMemory] = {}
        for t in self.kept:
            row = rows.setdefault(t.layer, LayerMemory(t.layer))
            row.kept_bytes += t.nbytes
            row.tensors += 1
        for t in self.saved:
            rows.setdefault(t.layer, LayerMemory(t.layer)).recompute_saved_bytes += t.nbytes
        return sorted(rows.values(), key=lambda r: (r.layer == OUTSIDE, int(r.layer) if r.layer.isdigit() else 0))

    @property
    def unsized(self) -> list[KeptTensor]:
        """Kept tensors whose type line gives no byte size (unknown dtype, dynamic shape): 0 bytes."""
        return [t for t in self.kept if t.type is None or t.type.nbytes is None]

    def top(self, n: int) -> list[KeptTensor]:
        return sorted(self.kept, key=lambda t: (-t.nbytes, t.tensor.node, t.tensor.index or 0))[:n]


def layer_of(scope: str) -> str:
    """The decoder layer number a scope prints (``layers-CellList/3-DecoderLayer``), else "outside".
    The accounting asks ``irlint.model.layers`` instead, which checks the scope against the weights."""
    return printed_layer(scope) or OUTSIDE


def runs_in_backward(ir: IRFile, key: int) -> bool:
    """A backward node, or a recomputed copy (which backward runs to rebuild a tensor)."""
    if ir.is_recompute_copy(key):
        return True
    return is_backward(ir, key)


def is_backward(ir: IRFile, key: int) -> bool:
    # CPU kernel graphs expand grad ops under "Expand/_SiLUGrad/..." with no Gradients scope; a
    # call of lazy_inline's backward half (the Partial the forward half returns) is backward too
    return (ir.is_backward(key) or bool(_EXPANDED_GRAD.match(ir[key].get("scope", "")))
            or key in backward_calls(ir))


def tensor_type(ir: IRFile, tensor: Tensor, via: int | None = None) -> TensorType | None:
    """A tensor's type: the node's output type, or for one element of a tuple output the type of
    the TupleGetItem that reads it."""
    if tensor.index is None:
        return ir[tensor.node].get("out_type")
    return ir[via].get("out_type") if via is not None else None


def sources(ir: IRFile, key: int) -> list[tuple[Tensor, int | None]]:
    """The tensors whose storage the output of ``key`` is: ``key`` itself for a computing node,
    its input's for a view; each with the TupleGetItem that selected it (for its type). Parameters
    and constants are no tensors here; a subgraph parameter is followed to the call's argument,
    a call's output to the callee's Return."""
    out: dict[tuple[Tensor, int | None], None] = {}
    seen: set[tuple[int, int | None]] = set()
    stack: list[tuple[int, int | None, int | None]] = [(key, None, None)]  # (node, element, getitem)
    while stack:
        node, element, getitem = stack.pop()
        if (node, element) in seen:
            continue
        seen.add((node, element))
        d = ir[node]
        kind = d["kind"]
        if kind == "param":
            stack.extend((a, element, getitem) for a in _call_arguments(ir, node))
            continue
        if kind == "return":
            stack.extend((a, element, getitem) for a in ir.producers(node)[:1])
            continue
        if kind != "cnode":
            continue  # constants, subgraph values
        op = d["op"]
        ins = ir.producers(node)
        if op in VIEW_OPS:
            if ins:
                stack.append((ins[0], element, getitem))
        elif op == "TupleGetItem":
            index = ir[ins[1]].get("value") if len(ins) > 1 else None
            if ins and isinstance(index, int):
                stack.append((ins[0], index, getitem if getitem is not None else node))
        elif op == "MakeTuple":
            picked = ins if element is None else ins[element:element + 1]
            stack.extend((a, None, None) for a in picked)
        elif op == "call":
            returns = ir.inputs_of_kind(node, "call_out")
            if returns:
                stack.extend((r, element, getitem) for r in returns)
            else:
                out[(Tensor(node, element), getitem)] = None
        else:
            out[(Tensor(node, element), getitem)] = None
    return list(out)


def _call_arguments(ir: IRFile, param: int) -> list[int]:
    return ir.inputs_of_kind(param, "call_in")


def _reader_inputs(ir: IRFile, key: int) -> list[int]:
    d = ir[key]
    ins = ir.producers(key)
    if d["op"] in ("UpdateState",):
        return []
    if d["op"] in ("Depend", "Load", "TupleGetItem", "Reshape"):
        return ins[:1]
    return ins


def _original_of_copies(ir: IRFile) -> dict[int, int]:
    """Recomputed copy -> the forward node it rebuilds."""
    out: dict[int, int] = {}
    for k in ir.cnodes():
        if ir.is_recompute_copy(k) or is_backward(ir, k):
            continue
        for c in ir.copy_of(k):
            out.setdefault(c, k)
    return out


def weight_derived(ir: IRFile) -> set[int]:
    """Nodes whose output depends on weights (parameters with a default) and constants only
    (computed once per IRFile)."""
    cached = ir.__dict__.get("_weight_derived")
    if cached is None:
        cached = ir.__dict__["_weight_derived"] = _weight_derived(ir)
    return cached


def is_weight_derived(ir: IRFile, key: int) -> bool:
    """``key in weight_derived(ir)``, walking only what ``key``'s answer needs (its inputs, up
    to the first that is not from weights); the whole-file walk only when a cycle through calls is
    met, since there the whole walk's order decides."""
    whole = ir.__dict__.get("_weight_derived")
    if whole is not None:
        return key in whole
    memo = ir.__dict__.setdefault("_weight_derived_of", {})
    found = memo.get(key)
    if found is None:
        found = _derived_from_weights(ir, key, memo)
    return found if found is not None else key in weight_derived(ir)


def _weight_inputs(ir: IRFile, node: int) -> bool | list[int]:
    """What decides whether ``node`` is computed from weights alone: True or False outright, or the
    inputs whose answers it takes (a call, or a node without inputs, is then no weight copy)."""
    d = ir[node]
    kind = d["kind"]
    if kind == "param":
        # a subgraph parameter (a call's or a Partial's) is what every call passes to it
        return _call_arguments(ir, node) or bool(d.get("has_default"))
    if kind not in ("cnode", "return"):
        return kind == "const"
    if d.get("op") in _DATA_SOURCES:
        return False   # its constant input is a buffer shape, the data comes from elsewhere
    return _reader_inputs(ir, node) if kind == "cnode" else ir.producers(node)[:1]


def _weight_step(ir: IRFile, node: int) -> bool | list[int]:
    """``_weight_inputs``, with a call and a node without inputs decided (False) at once."""
    ins = _weight_inputs(ir, node)
    if ins is True or ins is False:
        return ins
    return False if ir[node].get("op") == "call" or not ins else ins


def _derived_from_weights(ir: IRFile, key: int, memo: dict[int, bool]) -> bool | None:
    """``key``'s answer of ``_weight_derived``, depth first through its inputs, stopping at the
    first one not from weights; None when the walk meets a cycle (through calls)."""
    first = _weight_step(ir, key)
    if first is True or first is False:
        memo[key] = first
        return first
    stack: list[list] = [[key, first, 0]]   # node, its inputs, how many are known to be from weights
    on_path = {key}
    while stack:
        frame = stack[-1]
        node, ins = frame[0], frame[1]
        value = True
        while frame[2] < len(ins):
            a = ins[frame[2]]
            known = memo.get(a)
            if known is None:
                if a in on_path:
                    return None
                known = _weight_step(ir, a)
                if known is not True and known is not False:
                    on_path.add(a)
                    stack.append([a, known, 0])
                    value = None
                    break
                memo[a] = known
            if not known:
                value = False
                break
            frame[2] += 1
        if value is None:
            continue   # an input to walk first
        memo[node] = value
        on_path.discard(node)
        stack.pop()
    return memo[key]


def _weight_derived(ir: IRFile) -> set[int]:
    memo: dict[int, bool] = {}
    visiting: set[int] = set()
    for start in ir.nodes:
        stack = [start]
        while stack:
            node = stack[-1]
            if node in memo:
                stack.pop()
                continue
            ins = _weight_inputs(ir, node)
            if ins is True or ins is False:
                memo[node] = ins
                continue
            pending = [a for a in ins if a not in memo and a not in visiting]
            if pending and node not in visiting:
                visiting.add(node)
                stack.extend(pending)
                continue
            visiting.discard(node)
            # an input still unresolved is on a cycle through calls: no weight copy
            memo[node] = ir[node].get("op") != "call" and bool(ins) and all(memo.get(a, False) for a in ins)
    return {k for k, v in memo.items() if v}


def account(ir: IRFile) -> MemoryReport:
    """The activations ``ir`` keeps for backward, and those recompute rebuilds instead."""
    return _account(ir, places_on_read=False)


def _account(ir: IRFile, places_on_read: bool) -> MemoryReport:
    if places_on_read:
        kept_tensor = lambda t, type, node: _PlacedOnRead(t, type, ir, node)  # noqa: E731
    else:
        kept_tensor = lambda t, type, node: KeptTensor(t, type, layer_of_node(ir, node))  # noqa: E731
    originals = _original_of_copies(ir)
    from_weights = weight_derived(ir)
    kept: dict[Tensor, KeptTensor] = {}
    saved: dict[Tensor, KeptTensor] = {}
    for reader, tensor, getitem in _backward_reads(ir, sorted(ir.cnodes())):
        node = tensor.node
        if runs_in_backward(ir, node):
            original = originals.get(node)
            if original is not None and not ir.is_recompute_copy(reader):
                orig = Tensor(original, tensor.index)
                if orig not in saved:
                    saved[orig] = kept_tensor(orig, tensor_type(ir, orig, getitem), original)
            continue
        entry = kept.get(tensor)
        if entry is None:
            entry = kept[tensor] = kept_tensor(tensor, tensor_type(ir, tensor, getitem), node)
        if reader not in entry.readers:
            entry.readers.append(reader)
    for t in list(saved):
        if t in kept:
            del saved[t]  # backward keeps the original anyway
    weights = [t for t in kept.values() if t.tensor.node in from_weights]
    activations = [t for t in kept.values() if t.tensor.node not in from_weights]
    report = MemoryReport(activations, [t for t in saved.values() if t.tensor.node not in from_weights], weights)
    stages = schedules(ir)
    if stages:
        halves = {s.forward for s in stages}
        report.micro_batches = max(s.micro_batches for s in stages)
        report.in_flight = max(s.in_flight for s in stages)
        report.per_micro_batch = frozenset(t.tensor.node for t in activations if ir[t.tensor.node]["graph"] in halves)
    return report


def _backward_reads(ir: IRFile, readers: Iterable[int], args_in: Container[int] | None = None
                    ) -> Iterator[tuple[int, Tensor, int | None]]:
    """(reader, tensor, the TupleGetItem that selected it) for each tensor a backward reader reads, readers in the given
    order (only through the arguments in ``args_in`` when given). A view or tuple op passes its input
    on: its consumer is the reader."""
    for reader in readers:
        if not runs_in_backward(ir, reader):
            continue
        op = ir[reader]["op"]
        if op in _PLUMBING or (ir.is_recompute_copy(reader) and op in VIEW_OPS):
            continue
        for arg in _reader_inputs(ir, reader):
            if args_in is None or arg in args_in:
                for tensor, getitem in sources(ir, arg):
                    yield reader, tensor, getitem


def bytes_at_stake(ir: IRFile, key: int) -> int:
    """What recomputing ``key`` would free: its output bytes when backward keeps that tensor
    (directly or through views); 0 when nothing of it is kept."""
    return sum(t.nbytes for t in kept_of(ir, key))


def kept_output(ir: IRFile, key: int) -> bool:
    """Whether the account keeps the output of ``key`` for backward (a view's output is its
    source's tensor: kept there, not here)."""
    return bool(kept_of(ir, key))


def cached_account(ir: IRFile) -> MemoryReport:
    """``account(ir)``, computed once per IRFile (rules, ``bytes_at_stake`` and ``irlint diff`` share it)."""
    report = _report(ir)
    for t in (*report.kept, *report.saved, *report.weight_copies):
        t.layer  # noqa: B018 - looked up while the file is alive: the report may outlive it
    return report


def _report(ir: IRFile) -> MemoryReport:
    report = ir.__dict__.get("_memory_report")
    if report is None:
        report = ir.__dict__["_memory_report"] = _account(ir, places_on_read=True)
    return report


def kept_of(ir: IRFile, key: int) -> list[KeptTensor]:
    """The tensors of ``key``'s output in the account's ``kept`` (the same entries, readers in the
    same order), from the readers reachable from ``key`` only: rules price a few nodes of a file."""
    report = ir.__dict__.get("_memory_report")
    if report is not None:
        index = ir.__dict__.get("_kept_by_node")
        if index is None:
            index = ir.__dict__["_kept_by_node"] = {}
            for t in report.kept:
                index.setdefault(t.tensor.node, []).append(t)
        return index.get(key, [])
    memo = ir.__dict__.setdefault("_kept_of", {})
    found = memo.get(key)
    if found is None:
        found = memo[key] = _kept_of(ir, key)
    return found


def _kept_of(ir: IRFile, key: int) -> list[KeptTensor]:
    if ir[key]["kind"] != "cnode" or runs_in_backward(ir, key):
        return []   # no tensor of the account, or one backward makes itself
    # the nodes whose tensor may be key's: those ``sources`` walks back to key through
    nodes, succ = ir.nodes, ir.succ
    through = {key}
    stack = [key]
    while stack:
        for s, keyed in succ[stack.pop()].items():
            if s in through:
                continue
            d = nodes[s]
            kind = d["kind"]
            if kind == "param":
                wanted = "call_in"
            elif kind == "return" or kind == "cnode" and (d["op"] in VIEW_OPS or d["op"] in _TUPLE_OPS):
                wanted = "data"
            elif kind == "cnode" and d["op"] == "call":
                wanted = "call_out"
            else:
                continue
            if any(e.get("kind") == wanted for e in keyed.values()):
                through.add(s)
                stack.append(s)
    readers = {r for n in through for r, keyed in succ[n].items()
               if nodes[r]["kind"] == "cnode" and any(e.get("kind") == "data" for e in keyed.values())}
    kept: dict[Tensor, KeptTensor] = {}
    # as ``_account``, for the readers that may read key's tensors
    for reader, tensor, getitem in _backward_reads(ir, sorted(readers), through):
        if tensor.node != key:
            continue
        entry = kept.get(tensor)
        if entry is None:
            entry = kept[tensor] = _PlacedOnRead(tensor, tensor_type(ir, tensor, getitem), ir, key)
        if reader not in entry.readers:
            entry.readers.append(reader)
    if kept and is_weight_derived(ir, key):
        return []   # a weight copy: the account lists it apart
    return list(kept.values())


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
    if ir.is_recompute_copy(key) or is_backward(ir, key):   # not among its own peers
        return [p for p in layer_peers(ir, key) if p == key or _asked_to_recompute(ir, p)]
    return sorted({key, *_peers_by_pattern(ir, ir[key]["op"], asked=True).get(pattern, ())})


def _peers_by_pattern(ir: IRFile, op: str, asked: bool) -> dict:
    """Peer pattern -> the forward nodes of ``op`` with it (only those asked to recompute when
    ``asked``), once per file and op."""
    index = ir.__dict__.setdefault("_layer_peers", {})
    found = index.get((op, asked))
    if found is None:
        found = index[op, asked] = {}
        for k in ir.nodes_by_op(op):
            if (not asked or _asked_to_recompute(ir, k)) and not (ir.is_recompute_copy(k) or is_backward(ir, k)):
                p = _peer_pattern(ir, k)
                if p is not None:
                    found.setdefault(p, []).append(k)
    return found


def _peer_pattern(ir: IRFile, k: int) -> str | tuple | None:
    scope = ir[k].get("scope", "").removeprefix("recompute_")
    if _LAYER.search(scope):
        return _LAYER.sub(lambda m: m.group(0).replace(m.group(1), "*", 1), scope)
    if not scope:   # a dump without scope lines: the weights it is computed from
        names = weights_upstream(ir, k)
        if not names or not all(_WEIGHT_LAYER.search(n) for n in names):
            return None
        return "weights:" + ",".join(_WEIGHT_LAYER.sub(".layers.*.", "." + n) for n in names)
    if "-" in scope.rsplit("/", 1)[0]:
        return None   # a named scope outside the layers
    where = Places.of(ir).place(k)
    return ("cells", where.cells, ir[k].get("instance")) if where.cells and where.layer != OUTSIDE else None


def _asked_to_recompute(ir: IRFile, key: int) -> bool:
    d = ir[key]
    return (d.get("primitive_attrs") or {}).get("recompute") is True or (d.get("cnode_attrs") or {}).get("recompute") is True


class Stake(NamedTuple):
    """Bytes of kept activations a finding is about: in its own layer, and summed over the
    layers where the same node is asked to recompute and still costs memory. In a pipeline stage
    the figures are per micro batch, and ``in_flight`` micro batches hold them at once."""

    bytes: int
    total: int
    layers: int
    in_flight: int = 1
    micro_batches: int = 1

    def text(self) -> str:
        per = " per micro batch" if self.micro_batches > 1 else ""
        if self.layers > 1:
            out = (f"{human_bytes(self.bytes)} at stake{per} in this layer, {human_bytes(self.total)} across the "
                   f"{self.layers} layers with the same problem")
        else:
            out = f"{human_bytes(self.bytes)} at stake{per}"
        if self.micro_batches > 1:
            out += (f"; this pipeline stage holds up to {self.in_flight} of its {self.micro_batches} micro "
                    f"batches in flight, so {human_bytes(self.total * self.in_flight)} at its peak")
        return out

    def extra(self) -> dict:
        out = {"bytes_at_stake_total": self.total, "layers_with_problem": self.layers}
        if self.micro_batches > 1:
            out.update(micro_batches=self.micro_batches, micro_batches_in_flight=self.in_flight)
        return out


def stake(ir: IRFile, key: int, cost=None) -> Stake:
    """The activation bytes a recompute finding on ``key`` is about: ``cost(ir, node)`` (default
    ``bytes_at_stake``) here, and summed over its layer peers that are asked to recompute and
    cost something too."""
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
    total = sum(priced(p) for p in peers)
    stage = next((s for s in schedules(ir) if s.forward == ir[key]["graph"]), None)
    if stage is None:
        return Stake(own, total, len(peers))
    return Stake(own, total, len(peers), stage.in_flight, stage.micro_batches)


def downcast_cost(ir: IRFile, cast: int) -> int:
    """What recomputing a down-cast costs: its high-precision input (kept for the copy) instead
    of its low-precision output, when only recomputed copies read that input; 0 when backward
    keeps the input anyway, or the types are unknown."""
    ins = ir.producers(cast)[:1]
    in_t = (ir[cast].get("in_types") or (None,))[0]
    out_t = ir[cast].get("out_type")
    if not ins or in_t is None or out_t is None or not in_t.nbytes or not out_t.nbytes:
        return 0
    sources_of_input = [t.node for t, _ in sources(ir, ins[0])]
    kept = [t for s in sources_of_input for t in kept_of(ir, s)]
    if any(not ir.is_recompute_copy(r) for t in kept for r in t.readers):
        return 0
    return max(0, in_t.nbytes - out_t.nbytes)


def staked(finding: Finding, at: Stake) -> Finding:
    """``finding`` stating the bytes at stake: in its message, ``bytes_at_stake`` and ``extra``."""
    return finding.with_(message=f"{finding.message} ({at.text()})", bytes_at_stake=at.bytes * at.in_flight,
                         extra=tuple(sorted({**dict(finding.extra), **at.extra()}.items())))
