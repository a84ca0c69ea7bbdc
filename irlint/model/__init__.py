"""The graph model of one dump file: subgraphs and a dataflow multigraph.

The multigraph is three dicts in networkx's layout (``IRFile.nodes``, ``succ``, ``pred``);
``IRFile.graph`` is a ``networkx.MultiDiGraph`` over those same dicts, built on first use, so
networkx is imported only by code that asks for it.

Graph nodes are integer keys; their attribute dicts hold:

- ``kind``: ``cnode``, ``return``, ``param``, ``const`` or ``subgraph``
- ``graph``: the subgraph the node lives in (``@name``); ``id``: ``%12``, ``%para3_x``, ``Return``
- ``name``: the name in parentheses (``equiv_12_x``); ``line``: 1-based line of its definition
- ``op``: normalised operator (``PrimFunc_MatMul`` -> ``MatMul``), ``raw_op`` as printed;
  calls of subgraphs or of node values have op ``call``. A called value (``%1(%x)``,
  ``%0[@@g](%x)``, a Switch's result ``%5[@FuncUnion(@a, @b)]()``) gets a ``callee`` edge from
  that value, and for each graph named in its brackets (the graphs it may run) the edges of a
  subgraph call below, its arguments going to the last parameters (a Partial may have bound the
  first); ``producers`` and ``consumers`` follow data edges only
- ``instance``: the primitive's instance name; ``primitive_attrs``, ``cnode_attrs``,
  ``primal_attrs``: the attribute dictionaries as Python values
- ``in_types`` / ``out_type``: ``TensorType`` values from the first type line
- ``scope``: the fullname with scope; ``value``: a constant's value

Edges run producer -> consumer. Data inputs are keyed by argument position (0, 1, ...) with
``kind="data"``; a subgraph call also gets ``callee`` (subgraph -> call), ``call_in``
(argument -> callee parameter, key ``("in", i)``) and ``call_out`` (callee Return -> call) edges.
``Partial(@g, a0, a1, ...)`` binds g's first parameters the same way: ``call_in`` edges from
``a0, a1, ...`` (lazy_inline passes the forward values its backward subgraph reads like this).
"""

from __future__ import annotations

import re
import weakref
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import chain
from operator import methodcaller
from typing import TYPE_CHECKING, Any

from ..diagnostics import Diagnostic
from .stages import Stage, stage_of

_KIND_OF = methodcaller("get", "kind")  # a node's kind, called in C over the node dicts

if TYPE_CHECKING:  # networkx is imported only when something reads ``IRFile.graph``
    import networkx as nx

PASSTHROUGH_OPS = frozenset({"Reshape", "Depend", "Load", "TupleGetItem", "MakeTuple"})
GRADIENT_SCOPE = "Gradients/"
# ops whose later inputs are monads, shapes or indices rather than data
_DATA_FIRST_OPS = frozenset({"Depend", "Load", "TupleGetItem", "Reshape"})
_NO_ATTRS: dict[str, Any] = {}
# CPU kernel graphs expand grad ops under "…/Expand/_SiLUGrad/…" with no Gradients scope
_EXPANDED_GRAD = re.compile(r"Expand/_\w+Grad/")
# a backward input does not make these backward: the order of effects, and subgraph calls
# (lazy_inline's forward half takes the step's monad; the backward half's calls are known)
_NOT_FED = frozenset({"UpdateState", "call", "Partial"})
_ORDER_INPUTS = frozenset({"Depend", "Load"})  # only their first input carries data
# ops that pass values on or order effects: they compute nothing of their own
_PASS_ON = frozenset({"Depend", "Load", "MakeTuple", "TupleGetItem", "UpdateState"})


_FRAME_CODE = re.compile(r"# In file .+?, \d+~\d+/\s*(.*?)/?$")


def _in_bprop(trace: list[str]) -> bool:
    """The innermost function of a node's own trace (the frames before any ``# Corresponding``
    block) is a cell's ``bprop``."""
    code = []
    for ln in trace:
        if ln.startswith("# Corresponding "):
            break
        m = _FRAME_CODE.match(ln)
        if m:
            code.append(m.group(1))
    defs = [c for c in code if c.startswith("def ")]
    return bool(defs) and defs[-1].startswith("def bprop(")


def primal_attr(data: dict[str, Any], name: str) -> Any:
    """One entry of a node's ``primal_attrs`` (``unique_id``, ``forward_unique_id``, ...), or None."""
    return (data.get("primal_attrs") or _NO_ATTRS).get(name)


@dataclass
class Subgraph:
    """A subgraph of a dump: its parameters, nodes and return, in dump order."""

    name: str
    line: int
    params: list[int] = field(default_factory=list)
    nodes: list[int] = field(default_factory=list)
    return_node: int | None = None
    parent: str | None = None
    attrs: dict[str, Any] = field(default_factory=dict)
    closed: bool = False


@dataclass
class CompileFailure:
    """What an ``analyze_fail.ir`` holds besides its graphs: MindSpore writes it when type
    inference fails, with the graphs of the evaluation stack as far as they were evaluated."""

    message: str = ""  # the exception text (2.3 and later print it first; 2.0-2.2 do not)
    line: int = 0  # the line where the message starts
    stack_depth: str = ""  # "2", "3/5 (Ignored 2 internal frames)."
    # nodes marked "#------------------------> N", in stack order: the last one failed
    failed_at: list[int] = field(default_factory=list)


@dataclass
class IRFile:
    """One dump, read: its nodes and edges, subgraphs, header and stage."""

    path: str
    stage: Stage
    # the multigraph in networkx's layout: nodes[key] = attribute dict, succ[u][v][edge key] =
    # edge attribute dict, pred[v][u] is the same dict of edge keys as succ[u][v]
    nodes: dict[int, dict[str, Any]] = field(default_factory=dict, repr=False)
    succ: dict[int, dict[int, dict[Any, Any]]] = field(default_factory=dict, repr=False)
    pred: dict[int, dict[int, dict[Any, Any]]] = field(default_factory=dict, repr=False)
    entry: str | None = None
    header: dict[str, Any] = field(default_factory=dict)
    attrs: dict[str, Any] = field(default_factory=dict)
    subgraphs: dict[str, Subgraph] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    size: int = 0
    # trace regions: node key -> (first line, byte start, byte end); read on demand
    traces: dict[int, tuple[int, int, int]] = field(default_factory=dict)
    source: Any = field(default=None, repr=False)  # a seekable stream read instead of path
    # opens the stream again once ``source`` is closed (a model read whole, then asked of its traces)
    reopen: Callable[[], Any] | None = field(default=None, repr=False, compare=False)
    failure: CompileFailure | None = None  # an analyze_fail.ir: the compile failed
    # "symbol engine details:" (2.10, symbolic shapes): engine name -> its relations as printed,
    # e.g. "[[1, 1], [s3<[1,inf]|=s2>, 32]] = ShapeCalcReduceSumGrad([s3<[1,inf]|=s2>, 32], [], false)";
    # a subgraph names its engine in attrs["symbol_engine"]
    symbol_engines: dict[str, list[str]] = field(default_factory=dict)
    _by_op: dict[str, list[int]] | None = field(default=None, repr=False)
    _by_uid: dict[str, int] | None = field(default=None, repr=False)
    _kind_counts: tuple[int, Counter[str]] | None = field(default=None, repr=False)
    _graph: Any = field(default=None, repr=False, compare=False)

    @classmethod
    def empty(cls, path: str) -> IRFile:
        return cls(path=path, stage=stage_of(path))

    @classmethod
    def from_graph(cls, path: str, graph: nx.MultiDiGraph) -> IRFile:
        """A model over an existing graph's dicts (shared, not copied)."""
        ir = cls.empty(path)
        ir.graph = graph
        return ir

    @property
    def graph(self) -> nx.MultiDiGraph:
        """The multigraph as a ``networkx.MultiDiGraph`` whose node and adjacency dicts are this
        file's ``nodes``, ``succ`` and ``pred``: a change through either is seen by both."""
        if self._graph is None:
            import networkx as nx

            graph = nx.MultiDiGraph()
            # networkx (3.1 and later) keeps _adj and _succ one object and resets its cached views
            graph._node, graph._succ, graph._pred = self.nodes, self.succ, self.pred
            self._graph = graph
        return self._graph

    @graph.setter
    def graph(self, graph: nx.MultiDiGraph) -> None:
        self.nodes, self.succ, self.pred = graph._node, graph._succ, graph._pred
        self._graph = graph

    # --- counts -----------------------------------------------------------------------------
    @property
    def cnode_count(self) -> int:
        """CNodes including Return lines, as MindSpore's ``Total number of cnodes`` counts them."""
        kinds = self._kinds()
        return kinds["cnode"] + kinds["return"]

    @property
    def param_count(self) -> int:
        return self._kinds()["param"]

    @property
    def edge_count(self) -> int:
        """Edges of the multigraph, counted in C (networkx's ``number_of_edges`` walks every edge
        in Python, a visible share of inspecting a large dump)."""
        return sum(map(len, chain.from_iterable(map(dict.values, self.succ.values()))))

    def _kinds(self) -> Counter[str]:
        # counted in C over the node dict (a Python loop over 100k+ nodes is slow), and again only
        # when the number of nodes changed
        nodes = self.nodes
        if self._kind_counts is None or self._kind_counts[0] != len(nodes):
            self._kind_counts = (len(nodes), Counter(map(_KIND_OF, nodes.values())))
        return self._kind_counts[1]

    # --- lookup -----------------------------------------------------------------------------
    # The accessors read the dicts, not networkx's views: rules call them hundreds of thousands of
    # times per file, and each view call builds objects (the dicts made the rules about 1.5x
    # faster). Same results, same order.
    def __getitem__(self, key: int) -> dict[str, Any]:
        return self.nodes[key]

    def cnodes(self) -> Iterator[int]:
        for key, data in self.nodes.items():
            if data.get("kind") == "cnode":
                yield key

    def nodes_by_op(self, *ops: str) -> list[int]:
        if self._by_op is None:
            index: dict[str, list[int]] = defaultdict(list)
            for key, data in self.nodes.items():
                if data["kind"] == "cnode":
                    index[data["op"]].append(key)
            self._by_op = dict(index)
        out: list[int] = []
        for op in ops:
            out.extend(self._by_op.get(op, ()))
        return sorted(out)

    def by_unique_id(self, uid: str) -> int | None:
        if self._by_uid is None:
            self._by_uid = {}
            copies = self._lazy_copies()
            for key, data in self.nodes.items():
                u = primal_attr(data, "unique_id")
                # a lazy_inline recompute copy carries its forward node's unique_id: the
                # forward node is the one meant
                if (
                    u is not None
                    and key not in copies
                    and (data.get("cnode_attrs") or {}).get("duplicated") is not True
                ):
                    self._by_uid.setdefault(str(u), key)
        return self._by_uid.get(str(uid))

    # --- dataflow ---------------------------------------------------------------------------
    def producers(self, key: int) -> list[int]:
        """Data inputs in argument order (constants included)."""
        edges = [(k, u) for u, keyed in self.pred[key].items() for k, d in keyed.items() if d.get("kind") == "data"]
        if len(edges) > 1:
            edges.sort(key=_first)
        return [u for _, u in edges]

    def consumers(self, key: int) -> list[int]:
        """Nodes that read this node's output as a data input (each once)."""
        return [v for v, keyed in self.succ[key].items() if any(d.get("kind") == "data" for d in keyed.values())]

    def inputs_of_kind(self, key: int, kind: str) -> list[int]:
        """The nodes with an edge of ``kind`` into ``key`` (``call_in``, ``call_out``, ...), one
        entry per edge, in networkx's order."""
        return [u for u, keyed in self.pred[key].items() for d in keyed.values() if d.get("kind") == kind]

    def through_passthrough(
        self, key: int, direction: str = "down", passthrough: Iterable[str] = PASSTHROUGH_OPS
    ) -> list[int]:
        """The nearest non-pass-through nodes reached from ``key``: consumers when
        ``direction`` is ``down``, producers when ``up``; walks over Reshape, Depend, Load,
        TupleGetItem, MakeTuple. Only the first input of Depend/Load/TupleGetItem carries data."""
        passthrough = frozenset(passthrough)
        step = self.consumers if direction == "down" else self.producers
        out: dict[int, None] = {}
        seen = {key}

        def unseen(nodes: Iterable[int]) -> list[int]:
            fresh = []
            for n in nodes:
                if n not in seen:
                    seen.add(n)
                    fresh.append(n)
            return fresh

        queue = unseen(step(key))
        while queue:
            node = queue.pop()
            data = self.nodes[node]
            if data["kind"] == "cnode" and data["op"] in passthrough:
                nexts = step(node)
                if direction == "up" and data["op"] in _DATA_FIRST_OPS:
                    nexts = nexts[:1]
                queue.extend(unseen(nexts))
            elif data["kind"] != "const":
                out[node] = None
        return sorted(out)

    # --- forward / backward -------------------------------------------------------------------
    def is_backward(self, key: int) -> bool:
        """The node runs in the backward half of the step: the one answer every rule and account
        asks. Marked so by MindSpore (a ``Gradients/`` scope, ``forward_unique_id`` or
        ``forward_node_name``, a CPU kernel graph's ``Expand/_XGrad/`` expansion), a call of
        lazy_inline's backward half ◂ (the Partial its forward half returns), a computing op inside
        that half (a loss's own bprop prints no mark), an op of a cell's own bprop that MindSpore
        inlined into the one graph without lazy_inline (its trace's ``def bprop(`` frame, backward
        readers only), or fed by such a node
        (gradient accumulation ``AddN`` of ``Default/AddN-op0``, the optimizer): a forward op never
        reads a backward one. Not fed through ``Depend``/``Load``'s order inputs, ``UpdateState``,
        a subgraph call or a recomputed copy (which runs in backward but rebuilds a forward op); a
        ``MakeTuple`` only when all it packs is backward (the step's output packs the loss with the
        gradients)."""
        found = self.__dict__.get("_backward_keys")
        if found is None:
            found = self.__dict__["_backward_keys"] = self._backward_half()
        return key in found

    def read_by_forward(self, key: int) -> bool:
        """Whether a node has a user outside the backward pass as MindSpore's recompute pass tells
        them (``recompute_helper.cc`` ``HasForwardOutput``: a user whose scope does not start with
        ``Gradients``). The pass recomputes no node without one: it only marks it ``checkpoint``."""
        nodes = self.nodes
        return any(
            nodes[c].get("kind") == "cnode" and not nodes[c].get("scope", "").startswith("Gradients")
            for c in self.consumers(key)
        )

    def _marked_backward(self, data: dict[str, Any]) -> bool:
        """What MindSpore prints on a backward node itself (scope or primal attributes)."""
        scope = data.get("scope", "")
        if scope.startswith(GRADIENT_SCOPE) or scope.startswith("Expand/") and _EXPANDED_GRAD.match(scope):
            return True
        primal = data.get("primal_attrs") or _NO_ATTRS
        return "forward_unique_id" in primal or "forward_node_name" in primal

    def _backward_half(self) -> frozenset[int]:
        from .pipeline import backward_calls, backward_halves

        nodes = self.nodes
        lazy = self._lazy_copies()
        # lazy_inline's backward half ◂ (the graph the step calls through the forward half's
        # Partial) runs in backward: its computing ops that no backward node feeds and MindSpore
        # did not mark (a loss's own bprop, ``Sub(Exp(log_softmax), one_hot)``) too, bar the copies;
        # not the plumbing that passes forward values on (the recompute pass's ordering Depends)
        halves = backward_halves(self)
        seeds = [
            k
            for k, d in nodes.items()
            if d.get("kind") == "cnode"
            and (
                self._marked_backward(d)
                or d["graph"] in halves
                and d.get("op") not in _PASS_ON
                and k not in lazy
                and (d.get("cnode_attrs") or _NO_ATTRS).get("duplicated") is not True
            )
        ]
        found = set(seeds) | backward_calls(self)
        queue = list(found)
        while queue:
            k = queue.pop()
            for c in self.consumers(k):
                if c in found:
                    continue
                d = nodes[c]
                op = d.get("op")
                if (
                    d.get("kind") != "cnode"
                    or op in _NOT_FED
                    or op in _ORDER_INPUTS
                    and self.producers(c)[:1] != [k]
                    or op == "MakeTuple"
                    and not all(p in found for p in self.producers(c) if nodes[p].get("kind") == "cnode")
                    or (d.get("cnode_attrs") or _NO_ATTRS).get("duplicated") is True
                    or c in lazy
                ):
                    continue
                found.add(c)
                queue.append(c)
        return frozenset(found | self._own_bprop(found))

    def _own_bprop(self, found: set[int]) -> set[int]:
        """Ops of a cell's own ``bprop`` that MindSpore inlines without a mark outside lazy_inline
        (MindFormers' ``_NLLLoss.bprop``: ``Sub(Exp(log_softmax), one_hot)`` under the loss's forward
        scope): read by backward nodes only, and made in a ``def bprop(`` frame of their trace; walked
        up from the backward nodes, so only a forward op's readers decide whether its trace is read."""
        nodes, traces = self.nodes, self.traces
        more: set[int] = set()
        # only a node with a trace can show the frame: a dump saved without traces walks nothing
        queue = list({p for k in found for p in self.pred.get(k, ()) if p in traces} - found) if traces else []
        checked: set[int] = set()
        while queue:
            k = queue.pop()
            if k in found or k in more or k in checked or k not in traces:
                continue
            d = nodes[k]
            if d.get("kind") != "cnode" or d.get("op") in _PASS_ON or d.get("op") in _NOT_FED:
                continue
            readers = [c for c in self.consumers(k) if nodes[c].get("op") != "UpdateState"]
            if not readers or any(c not in found and c not in more for c in readers):
                continue
            checked.add(k)
            if _in_bprop(self.trace(k)):
                more.add(k)
                queue.extend(self.producers(k))
        return more

    def forward_of(self, key: int) -> int | None:
        """The forward node a backward node was derived from (``forward_unique_id``)."""
        uid = primal_attr(self.nodes[key], "forward_unique_id")
        return None if uid is None else self.by_unique_id(str(uid))

    def is_inserted_slice(self, key: int) -> bool:
        """A StridedSlice the parallel pass inserted, e.g. before a row-parallel Linear that reads a
        split the op before it did not make: named ``redistribution_op_…``, or carrying the
        ``forward_comm_node_unique_id`` of the re-layout it was made for and no source trace of its
        own (under sequence parallel it is named ``strided_slice``; a slice the model code calls keeps
        its trace). It has no select key of its own: it takes the recompute tag of the op after it
        (the Linear's Reshape), and until then it blocks like a layout op."""
        data = self.nodes[key]
        if data.get("op") != "StridedSlice":
            return False
        if str(data.get("instance") or "").startswith("redistribution_op_"):
            return True
        return primal_attr(data, "forward_comm_node_unique_id") is not None and key not in self.traces

    # --- raw text -----------------------------------------------------------------------------
    def trace(self, key: int) -> list[str]:
        """The source-trace comment lines of a node (read from the file on demand)."""
        region = self.traces.get(key)
        if region is None:
            return []
        _, start, end = region
        try:
            if self.source is not None and self.source.closed and self.reopen is not None:
                self.source = self.reopen()
                weakref.finalize(self, self.source.close)
                self.reopen = None
            if self.source is not None:
                self.source.seek(start)
                raw = self.source.read(end - start)
            else:
                with open(self.path, "rb") as f:
                    f.seek(start)
                    raw = f.read(end - start)
        except (OSError, ValueError):
            return []
        return [ln.strip() for ln in raw.decode("utf-8", "replace").splitlines() if ln.strip()]

    def describe(self, key: int) -> str:
        data = self.nodes[key]
        return f"{data.get('id', '?')} {data.get('op', data['kind'])}"

    # --- recompute copies (MindSpore's add_recomputation pass) ---------------------------------
    def is_recompute_copy(self, key: int) -> bool:
        """A node the recompute pass inserted: ``duplicated: Bool(1)`` in its cnode_attrs; in a
        lazy_inline backward half (the subgraph a ``Partial`` names), also a forward op carrying the
        ``unique_id`` of a node outside it (the first op of a ``Cell.recompute()`` segment is copied
        there without the ``duplicated`` mark)."""
        data = self.nodes[key]
        if (data.get("cnode_attrs") or {}).get("duplicated") is True:
            return True
        return key in self._lazy_copies()

    def _lazy_copies(self) -> frozenset[Any]:
        found = self.__dict__.get("_lazy_copy_keys")
        if found is None:
            nodes = self.nodes
            halves = {
                str(nodes[k]["args"][0])
                for k in self.nodes_by_op("Partial")
                if nodes[k].get("args") and str(nodes[k]["args"][0]) in self.subgraphs
            }
            if not halves:  # no backward half: no copy can be inside one (no walk of the file)
                self.__dict__["_lazy_copy_keys"] = found = frozenset()
                return found
            outside: set[str] = set()
            inside: list[tuple[int, str]] = []
            marked: set[int] = set()
            for k, data in nodes.items():
                uid = primal_attr(data, "unique_id") if data["kind"] == "cnode" else None
                if uid is None:
                    continue
                if data["graph"] in halves:
                    if not self._marked_backward(data):
                        inside.append((k, str(uid)))
                        # full-layer recompute copies a segment's ops whose forward node the
                        # graph no longer holds (a Linear's output Reshape folded away): marked
                        # for the pass's CSE, without ``duplicated``
                        if (data.get("cnode_attrs") or _NO_ATTRS).get("need_cse_after_recompute") is True:
                            marked.add(k)
                else:
                    outside.add(str(uid))
            found = frozenset(k for k, uid in inside if uid in outside or k in marked)
            self.__dict__["_lazy_copy_keys"] = found
        return found

    def originals(self) -> dict[int, int]:
        """Recomputed copy -> the forward node it rebuilds (``copy_of`` read the other way)."""
        index: dict[int, int] | None = self.__dict__.get("_copy_originals")
        if index is None:
            index = {}
            for k in self.cnodes():
                if not (self.is_recompute_copy(k) or self.is_backward(k)):
                    for c in self.copy_of(k):
                        index.setdefault(c, k)
            self.__dict__["_copy_originals"] = index
        return index

    def original_of(self, key: int) -> int | None:
        """The forward node a recomputed copy rebuilds, None for any other node."""
        return self.originals().get(key)

    def copy_of(self, key: int) -> list[int]:
        """The recomputed copies of a forward node: duplicated nodes with its ``recompute_id``
        (2.10); with its ``unique_id`` (lazy_inline: the copy is in the backward subgraph ◂,
        no ``recompute_id`` anywhere); when neither carries an id (older dumps), duplicated
        nodes of the same subgraph, op and scope path."""
        index = self.__dict__.get("_recompute_copies")
        if index is None:
            index = {}
            lazy = self._lazy_copies()
            # is_recompute_copy of every CNode, with its two tests inline (a method call per node
            # was most of the index's time)
            copies = (
                k
                for k, d in self.nodes.items()
                if d.get("kind") == "cnode"
                and ((d.get("cnode_attrs") or _NO_ATTRS).get("duplicated") is True or k in lazy)
            )
            for k in copies:
                d = self.nodes[k]
                rid = (d.get("cnode_attrs") or {}).get("recompute_id")
                uid = primal_attr(d, "unique_id")
                if rid is not None:
                    index.setdefault(("id", rid), []).append(k)
                elif uid is not None:
                    index.setdefault(("uid", str(uid)), []).append(k)
                else:
                    index.setdefault(("at", d.get("graph"), d.get("op"), _cell_scope(d.get("scope", ""))), []).append(k)
            self.__dict__["_recompute_copies"] = index
        d = self.nodes[key]
        if self.is_recompute_copy(key):
            return []
        rid = (d.get("cnode_attrs") or {}).get("recompute_id")
        if rid is not None:
            return list(index.get(("id", rid), ()))
        uid = primal_attr(d, "unique_id")
        if uid is not None and ("uid", str(uid)) in index:
            return list(index[("uid", str(uid))])
        return list(index.get(("at", d.get("graph"), d.get("op"), _cell_scope(d.get("scope", ""))), ()))


def _first(pair: tuple[Any, ...]) -> Any:
    return pair[0]


def _cell_scope(scope: str) -> str:
    """The scope without the per-dump op suffix ("/MatMul-op12"): opt_pass files omit it."""
    head, _, last = scope.rpartition("/")
    return head if head and "-op" in last else scope


def weights_upstream(ir: IRFile, key: int, depth: int = 16) -> tuple[str, ...]:
    """The names of the parameters nearest upstream of a node (all those at the first distance,
    breadth first, at most ``depth`` steps up, that reaches any): stable across re-dumps, unlike
    node ids, and per layer (``model.layers.3.attention_norm.weight``) where scopes are missing."""
    nodes, pred = ir.nodes, ir.pred
    seen = {key}
    level = [key]
    for _ in range(depth):
        names: list[str] = []
        ahead: list[int] = []
        for node in level:
            for u in pred[node]:
                if u in seen:
                    continue
                seen.add(u)
                data = nodes[u]
                if data.get("kind") == "param":
                    names.append(str(data.get("id", "")).removeprefix("%").split("_", 1)[-1])
                elif data.get("kind") == "cnode":
                    ahead.append(u)
        if names or not ahead:
            return tuple(sorted(names))
        level = ahead
    return ()
