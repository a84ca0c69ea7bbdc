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

import weakref
from collections.abc import Callable, Container, Iterable, Iterator
from dataclasses import dataclass, field

from ..model import IRFile
from ..model.layers import OUTSIDE, Places, layer_of_node, printed_layer
from ..model.pipeline import at_peak, schedules
from ..read.values import TensorType
from .tensors import VIEW_OPS, Tensor, reader_inputs, sources, tensor_type
from .weights import is_weight_derived, weight_derived

# The stage files whose graph is final for the accounting, best first: the same choice as the
# recompute rules (validate is the final front-end graph; CPU kernel graphs expand ops).
MEMORY_STAGES = ("validate", "cse_after_recomputation", "add_recomputation", "graph_build")

SCOPE_NOTE = (
    "Counted: outputs of forward ops that the backward pass reads (directly or through "
    "views that share the tensor), once per tensor, without what was recomputed. Not "
    "counted: parameters and graph inputs, optimizer state, gradients, constants, "
    "backward workspace."
)

# backward bookkeeping: they pass tensors on or order effects, they need no storage of their own
_PLUMBING = frozenset({"MakeTuple", "TupleGetItem", "UpdateState", "Depend", "Load"})
_TUPLE_OPS = frozenset({"TupleGetItem", "MakeTuple"})
_MONADS = frozenset({"UpdateState"})


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
        self._ir, self._node = weakref.ref(ir), node  # weakly: the file keeps its account, no cycle
        super().__init__(tensor, type, None)  # type: ignore[arg-type]  # the layer: looked up on first read

    @property
    def layer(self) -> str:
        layer = self.__dict__["_layer"]
        if layer is None:
            layer = self.__dict__["_layer"] = Places.of(self._ir()).layer(self._node)[0]  # type: ignore[arg-type]  # alive: see cached_account
            self._ir = None  # type: ignore[assignment]  # no longer needed
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
    saved: list[KeptTensor]  # tensors backward reads as recomputed copies instead
    # kept tensors computed from weights and constants only (fp16 copies of weights): they scale
    # with the parameters, not with the batch, so they are shown apart and not counted
    weight_copies: list[KeptTensor] = field(default_factory=list)
    # pipeline stage (lazy_inline forward half called per micro batch; one per chunk with
    # interleave): micro batches, and how many of each half's are in flight at the stage's peak
    # (``irlint.model.pipeline.at_peak``); a half's tensors exist once per micro batch in flight
    micro_batches: int = 1
    in_flight: int = 1  # the most of any half at the peak
    per_micro_batch: dict = field(default_factory=dict)  # node of a forward half -> its in-flight count
    chunks: list = field(default_factory=list)  # [{"graph", "in_flight_at_peak", "kept_bytes"}] per forward half

    @property
    def total_kept_bytes(self) -> int:
        return sum(t.nbytes for t in self.kept)

    @property
    def peak_kept_bytes(self) -> int:
        """Kept bytes at the stage's peak: each forward half's tensors times its micro batches in flight then."""
        return sum(t.nbytes * self.per_micro_batch.get(t.tensor.node, 1) for t in self.kept)

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
    return ir.is_backward(key)


def account(ir: IRFile) -> MemoryReport:
    """The activations ``ir`` keeps for backward, and those recompute rebuilds instead."""
    return _account(ir, places_on_read=False)


def _account(ir: IRFile, places_on_read: bool) -> MemoryReport:
    kept_tensor: Callable[[Tensor, TensorType | None, int], KeptTensor]
    if places_on_read:
        kept_tensor = lambda t, type, node: _PlacedOnRead(t, type, ir, node)  # noqa: E731
    else:
        kept_tensor = lambda t, type, node: KeptTensor(t, type, layer_of_node(ir, node))  # noqa: E731
    originals = ir.originals()
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
        per_half: dict[str, int] = dict.fromkeys(halves, 0)
        for a in activations:
            graph = ir[a.tensor.node]["graph"]
            if graph in per_half:
                per_half[graph] += a.nbytes
        counts = at_peak(ir, per_half)
        report.micro_batches = max(s.micro_batches for s in stages)
        report.in_flight = max(counts.values())
        report.per_micro_batch = {
            t.tensor.node: counts[ir[t.tensor.node]["graph"]]
            for t in activations
            if ir[t.tensor.node]["graph"] in halves
        }
        report.chunks = [
            {"graph": s.forward, "in_flight_at_peak": counts[s.forward], "kept_bytes": per_half[s.forward]}
            for s in stages
        ]
    return report


def _backward_reads(
    ir: IRFile, readers: Iterable[int], args_in: Container[int] | None = None
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
        for arg in reader_inputs(ir, reader):
            if args_in is None or arg in args_in:
                for tensor, getitem in sources(ir, arg):
                    if ir[tensor.node].get("op") not in _MONADS:  # the order of effects, no tensor
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


def in_flight_at_peak(ir: IRFile, graph: str) -> tuple[int, int] | None:
    """(micro batches of the forward half ``graph`` in flight at its stage's peak, the stage's micro
    batches), or None outside a pipeline stage. With interleave the peak is weighed by what each
    chunk keeps, so the file's account is made (once); without, the half's own most in flight."""
    stage = next((s for s in schedules(ir) if s.forward == graph), None)
    if stage is None:
        return None
    if sum(1 for s in schedules(ir) if s.caller == stage.caller) == 1:
        return stage.in_flight, stage.micro_batches
    chunk = next(c for c in _report(ir).chunks if c["graph"] == graph)
    return chunk["in_flight_at_peak"], stage.micro_batches


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
        return []  # no tensor of the account, or one backward makes itself
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
    readers = {
        r
        for n in through
        for r, keyed in succ[n].items()
        if nodes[r]["kind"] == "cnode" and any(e.get("kind") == "data" for e in keyed.values())
    }
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
        return []  # a weight copy: the account lists it apart
    return list(kept.values())
