"""Assembles the graph model from the records of one dump, once the whole file is read.

The reader collects node records and the references between them as plain lists; here they
become graph nodes and edges in bulk: arguments are resolved to node keys (a local ``%N``, a
file-wide ``%paraN``, ``$(@g:name)`` of an enclosing subgraph, ``@g`` of a subgraph), literal
arguments become ``Constant`` nodes, and subgraph calls get their callee, call_in and call_out
edges (see ``irlint.model``), also when a value holding graphs is called (``%5[@FuncUnion(@a, @b)]()``:
each graph it may run).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .. import diagnostics as D
from ..model import IRFile
from .values import FreeVar, GraphRef, Ref

_PARA_INDEX = re.compile(r"%para(\d+)_")
MAX_UNRESOLVED_REPORTED = 20


@dataclass
class Records:
    """What the reader collected from one dump, before it is a graph."""

    nodes: list[tuple[int, dict]] = field(default_factory=list)
    # per node record: (its arguments, the node, its graph, a %N or $(@g:x) callee or None, its line)
    uses: list[tuple[tuple, int, str, Any, int]] = field(default_factory=list)
    calls: list[tuple[int, str, tuple, str]] = field(default_factory=list)  # (call node, callee graph, args, graph)
    # ``Partial(@g, a0, a1, ...)``: (node, @g, bound arguments, graph); a0 binds g's first parameter
    partials: list[tuple[int, str, tuple, str]] = field(default_factory=list)
    params: dict[str, int] = field(default_factory=dict)  # %paraN_x -> key (file-unique names)
    graph_nodes: dict[str, int] = field(default_factory=dict)  # @g -> key of its subgraph node
    locals: dict[str, dict[str, int]] = field(default_factory=dict)  # graph -> %N -> key
    # calls of a value holding graphs, "%0[@@g](..)", "%5[@FuncUnion(@a, @b)]()": one per graph it
    # may run, as in ``calls``
    value_calls: list[tuple[int, str, tuple, str]] = field(default_factory=list)
    next_key: int = 0

    def new_key(self) -> int:
        key = self.next_key
        self.next_key += 1
        return key

    def by_name(self) -> dict[tuple[str, str], int]:
        """(graph, name) -> key of a parameter or a named node, for ``$(@g:name)``: built only
        for a dump that has such references (the last definition of a name wins)."""
        index = {}
        for key, data in self.nodes:
            kind = data["kind"]
            if kind == "param" or (kind == "cnode" and data["name"]):
                index[(data["graph"], data["name"])] = key
        return index

    def graph_node(self, name: str) -> int:
        key = self.graph_nodes.get(name)
        if key is None:
            key = self.new_key()
            self.graph_nodes[name] = key
            self.nodes.append(
                (
                    key,
                    {
                        "kind": "subgraph",
                        "graph": name,
                        "id": name,
                        "name": name[1:],
                        "line": 0,
                        "op": "subgraph",
                        "scope": "",
                    },
                )
            )
        return key


# The attributes of data and callee edges, one dict for all (read-only): a dict per edge was most of
# an edge's memory (a record of a million operands made a million of them).
DATA_EDGE = {"kind": "data"}
MANY_OPERANDS = 256
_PLAIN_CONSTANTS = (int, float, bool, str, type(None))
CALLEE_EDGE = {"kind": "callee"}
# an edge's key: a data edge's operand position, "callee", ("in", i) into a callee's parameter i
EdgeKey = int | str | tuple[str, int]
# what an argument names a node by (``_Resolver.resolve`` gives None for anything else)
_NODE_NAMES = (Ref, FreeVar, GraphRef)


def assemble(ir: IRFile, rec: Records, diag: Callable[[int, str, str], None]) -> None:
    """Add the collected nodes and resolved edges to the model's graph dicts."""
    resolver = _Resolver(rec)
    edges: list[tuple[int, int, EdgeKey, dict[str, str]]] = []
    unresolved = 0
    const_nodes = []
    locals_of = rec.locals
    local: dict[str, int] | None = None
    local_graph = None
    for args, consumer, graph, callee, line in rec.uses:
        if graph is not local_graph:
            local_graph, local = graph, locals_of.get(graph)
        # a record of thousands of operands (crafted: ``MakeTuple(1, 1, ...)``) makes one node per
        # distinct constant, not one per operand (a node costs a kilobyte, the operand 3 bytes)
        shared: dict | None = {} if len(args) > MANY_OPERANDS else None
        for pos, arg in enumerate(args) if callee is None else [*enumerate(args), (-1, callee)]:
            kind = type(arg)
            # most arguments are a %N of the node's own subgraph, or a constant: both inline
            if kind is Ref and not arg.startswith("%p"):
                src = local.get(arg) if local is not None else None
            elif not isinstance(arg, _NODE_NAMES):
                src = None
            else:
                src = resolver.resolve(arg, graph)
            if src is None:
                if isinstance(arg, (Ref, FreeVar)):
                    unresolved += 1
                    if unresolved <= MAX_UNRESOLVED_REPORTED:
                        diag(line, D.UNRESOLVED, f"{arg} is not defined in {graph}")
                    continue
                if pos < 0:
                    continue
                same = (kind, arg) if shared is not None and kind in _PLAIN_CONSTANTS else None
                src = shared.get(same) if shared is not None and same is not None else None
                if src is None:
                    src = rec.new_key()
                    const_nodes.append(
                        (
                            src,
                            {
                                "kind": "const",
                                "graph": graph,
                                "id": "",
                                "name": "",
                                "line": line,
                                "op": "Constant",
                                "scope": "",
                                "value": arg,
                            },
                        )
                    )
                    if shared is not None and same is not None:
                        shared[same] = src
            if pos < 0:
                edges.append((src, consumer, "callee", CALLEE_EDGE))
            else:
                edges.append((src, consumer, pos, DATA_EDGE))
    rec.uses.clear()  # resolved: dropped before the graph grows (a lower peak on large dumps)
    made_by_args = len(rec.nodes)  # subgraph nodes of @g arguments come before the constants

    def bind(sub, args: tuple, graph: str, first: int = 0) -> None:
        """Edges from a call's arguments into the callee's parameters ``first``, ``first + 1``, ..."""
        for i, arg in enumerate(args[: len(sub.params) - first]):
            src = resolver.resolve(arg, graph)
            if src is not None:
                edges.append((src, sub.params[first + i], ("in", first + i), {"kind": "call_in"}))

    for call, callee, args, graph in rec.value_calls:
        sub = ir.subgraphs.get(callee)
        edges.append((rec.graph_node(callee), call, "callee", {"kind": "callee"}))
        if sub is None:
            continue
        # the value may be a Partial that bound the first parameters: the arguments are the last ones
        bind(sub, args, graph, max(0, len(sub.params) - len(args)))
        if sub.return_node is not None:
            edges.append((sub.return_node, call, "out", {"kind": "call_out"}))
    for call, callee, args, graph in rec.calls:
        sub = ir.subgraphs.get(callee)
        edges.append((rec.graph_node(callee), call, "callee", CALLEE_EDGE))
        if sub is None:
            continue
        bind(sub, args, graph)
        if sub.return_node is not None:
            edges.append((sub.return_node, call, "out", {"kind": "call_out"}))
    # A Partial binds its arguments to the callee's first parameters as a call does (lazy_inline
    # hands the forward values backward needs to the backward subgraph this way).
    for _partial, callee, args, graph in rec.partials:
        sub = ir.subgraphs.get(callee)
        if sub is None:
            continue
        bind(sub, args, graph)
    _add_nodes(ir, rec.nodes[:made_by_args])
    _add_nodes(ir, const_nodes)
    _add_nodes(ir, rec.nodes[made_by_args:])
    _add_edges(ir, edges)


# networkx's add_nodes_from / add_edges_from copy every attribute dict and check every argument:
# a third of the reading time of a large dump. The reader's records are fresh dicts of new,
# distinct keys, so they go straight into the model's dicts, in networkx's adjacency layout
# (nodes[key], succ[u][v][key], pred[v][u] is the same key dict); tests/test_model.py checks
# the result against networkx's own methods.
def _add_nodes(ir: IRFile, nodes: list[tuple[int, dict]]) -> None:
    node, succ, pred = ir.nodes, ir.succ, ir.pred
    for key, data in nodes:
        if key in node:
            node[key].update(data)
            continue
        node[key] = data
        succ[key] = {}
        pred[key] = {}


def _add_edges(ir: IRFile, edges: list[tuple[int, int, EdgeKey, dict[str, str]]]) -> None:
    succ, pred = ir.succ, ir.pred
    for u, v, key, data in edges:
        out = succ[u]
        keys = out.get(v)
        if keys is None:
            out[v] = pred[v][u] = {key: data}
        elif key in keys:
            if keys[key] is not data:
                keys[key] = {**keys[key], **data}  # never into a shared dict
        else:
            keys[key] = data


class _Resolver:
    def __init__(self, rec: Records):
        self.rec = rec
        self._para_index: dict[str, int] | None = None
        self._by_name: dict[tuple[str, str], int] | None = None

    def resolve(self, arg: Any, graph: str) -> int | None:
        rec = self.rec
        if isinstance(arg, Ref):
            if arg.startswith("%para"):
                key = rec.params.get(arg)
                if key is None:
                    # early stages print a parameter's declared and referenced names differently
                    # ("%para1_args" vs "%para1_Parameter_3"); the number is what identifies it
                    m = _PARA_INDEX.match(arg)
                    key = self.params_by_index().get(m.group(1)) if m else None
                return key
            local = rec.locals.get(graph)
            return local.get(arg) if local is not None else None
        if isinstance(arg, FreeVar):
            if self._by_name is None:
                self._by_name = rec.by_name()
            return self._by_name.get((arg.graph, arg.name))
        if isinstance(arg, GraphRef):
            name = str(arg)
            if name.startswith("@@"):
                name = name[1:]
            return rec.graph_node(name)
        return None

    def params_by_index(self) -> dict[str, int]:
        if self._para_index is None:
            self._para_index = {}
            for name, key in self.rec.params.items():
                m = _PARA_INDEX.match(name)
                if m:
                    self._para_index.setdefault(m.group(1), key)
        return self._para_index


def check_counts(ir: IRFile, eof_line: int, diag: Callable[[int, str, str], None]) -> None:
    """The header's cnode and subgraph totals against what was read (unless the file is cut)."""
    header = ir.header
    truncated = any(d.code == D.TRUNCATED for d in ir.diagnostics)
    if "total_cnodes" in header and not truncated and ir.cnode_count != header["total_cnodes"]:
        diag(0, D.COUNT_MISMATCH, f"read {ir.cnode_count} cnodes, the header says {header['total_cnodes']}")
    if "total_subgraphs" in header and len(ir.subgraphs) < header["total_subgraphs"] and not truncated:
        diag(
            eof_line,
            D.TRUNCATED,
            f"read {len(ir.subgraphs)} of {header['total_subgraphs']} subgraphs (truncated dump?)",
        )
        truncated = True
    # the header names the entry graph: a file that never defines it was cut, whatever else it holds
    if ir.entry and ir.entry not in ir.subgraphs and not truncated:
        diag(eof_line, D.TRUNCATED, f"the entry graph {ir.entry} is never defined (truncated dump?)")
