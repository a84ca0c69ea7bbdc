"""The select_recompute key that tags a node, as MindFormers matches keys: its cell path below the
layer plus the cell attribute its primitive is called through (from the source trace). Where the
forward scope names no cell (lazy_inline's ``Default/SiLU-op0``), the cell path is the one
``irlint.model.layers`` recovers from the node's recomputed copy, weights or gradient op. The
model's answer: the recompute rules, the fix plan, ``comm`` and ``cost`` all ask it here."""

from __future__ import annotations

import functools
import re

from . import IRFile
from .layers import (
    LAYER_IN_NAME,
    Places,
    below_layer,
    layer_prefix,
    names_cells,
    printed_layer,
    scope_parts,
    weight_cells,
    weight_name,
)
from .source import own_trace

CELL_PREFIX = "recompute_"
_OP_SUFFIX = re.compile(r".+-op\d+\Z")


def cell_path(scope: str) -> tuple[str, ...]:
    """Scope components without the ``recompute_`` prefix and the ``Op-opN`` suffix. A cell
    compiled as a function has an empty name (``recompute_/SiLU-op1`` gives ``("",)``)."""
    if scope.startswith(CELL_PREFIX):
        scope = scope[len(CELL_PREFIX) :]
    parts = scope.split("/")
    if parts and _OP_SUFFIX.match(parts[-1]):
        parts = parts[:-1]
    return tuple(parts)


WRAPPER_CELLS = frozenset({"network", "_backbone", "backbone", "model", "net"})


def select_key(scope: str, name: str | None, op: str) -> str | None:
    """The select_recompute regex key of a primitive: its cell path below the layer (cell
    attribute names from ``name-Class`` scope parts) plus the primitive's attribute ``name``
    (see ``primitive_name``; the lower-cased op when None); None when the scope holds no cell
    names."""
    names = _key_cells(scope)
    if not names:
        return None
    return "\\.".join(_key_part(n) for n in names + [name or op.lower()])


def _key_cells(scope: str) -> list[str]:
    """The cell attribute names of a scope that start its select key."""
    names = [p.split("-", 1)[0] for p in cell_path(scope) if "-" in p]
    numeric = [i for i, n in enumerate(names) if n.isdigit()]
    if numeric:
        return names[numeric[-1] + 1 :]
    while len(names) > 1 and names[0] in WRAPPER_CELLS:
        names = names[1:]
    return names


@functools.cache
def _key_part(name: str) -> str:
    return re.escape(name).replace("\\_", "_")


key_cells = _key_cells
select_key_part = _key_part


# ``# In file PATH:LINE[~LINE], COL~COL/SOURCE LINE/``; the columns are 0-based, the end is
# exclusive and on the last line of the range, while only the first source line is printed.
TRACE_LINE = re.compile(r"# In file .*?:\d+(?:~\d+)?, (?P<start>\d+)~\d+/(?P<text>.*)/\Z")
SHARED_SUFFIX = re.compile(r"/<~~[^/]*/\Z")  # "<~~This line of code can be shared by multiple nodes..."
SELF_CALL = re.compile(r"self\.(\w+)\s*\(")
# instance names the parallel passes give the ops they insert or replace
_INSERTED_INSTANCE = re.compile(r"(?:redistribution_op|forward_op|gradforward_op|mirror_)\w*?_?\d{6,}")


def attribute_from_trace(lines: list[str]) -> str | None:
    """The cell attribute a primitive was called through: ``self.<attr>(`` at the start column of
    the innermost call site of its own source trace; None when the call is not of that form
    (functional ops, a primitive held in a local) or there is no trace."""
    own = own_trace(lines)
    if not own:
        return None
    line = SHARED_SUFFIX.sub("/", own[-1])
    # without its closing "/" the regex would rescan the rest of the line at every ":" (quadratic)
    m = TRACE_LINE.match(line) if line.endswith("/") else None
    if m is None:
        return None
    call = SELF_CALL.match(m.group("text"), int(m.group("start")))
    return call.group(1) if call else None


def primitive_name(ir: IRFile, k: int) -> tuple[str, bool]:
    """The name select_recompute matches for a node's primitive, and whether it is a guess.

    The cell attribute named by the source trace comes first: MindSpore merges identical
    untagged primitives after grad expansion and then prints one instance name for all of
    them (e.g. nn.Embedding's ``reshape_flat`` on every Linear's ``reshape``). It is preferred
    always, not only when a name looks merged: it is what select_recompute matches, it agrees
    with every tagged primitive's name, and the key stays the same in every stage file. Without a usable
    trace the instance name is used; it is only trustworthy on a tagged primitive (the tag keeps
    it apart from untagged ones)."""
    d = ir[k]
    attr = attribute_from_trace(ir.trace(k))
    if attr is not None:
        return attr, False
    if d.get("instance") and _INSERTED_INSTANCE.match(d["instance"]):
        # the parallel pass replaced the primitive (a Linear's Reshape becomes redistribution_op_<hash>,
        # keeping the attributes): its printed name names nothing a key matches; MindFormers' cells
        # call such primitives by the op's name (Linear's ``reshape``)
        return d["op"].lower(), False
    tagged = (d.get("primitive_attrs") or {}).get("recompute") is True
    return d.get("instance") or d["op"].lower(), not (tagged and d.get("instance"))


def inserted_by_parallel(ir: IRFile, k: int) -> bool:
    """An op the parallel passes inserted (communication, slicing, ``redistribution_op_…``), not a
    model primitive they replaced (a Linear's Reshape keeps its primitive's attributes)."""
    d = ir[k]
    return bool(d.get("instance") and _INSERTED_INSTANCE.match(d["instance"])) and d["op"] != "Reshape"


def node_select_key(ir: IRFile, k: int) -> tuple[str | None, bool]:
    """``select_key`` of a node with its primitive's name from ``primitive_name``; (key, guessed)
    (once per node and trace region: the name may come from the node's trace in the file). None
    for a key whose cells the dump does not show (``key_exists``): MindFormers would match nothing."""
    known = ir.__dict__.setdefault("_recompute_select_keys", {})
    asked = (k, ir.traces.get(k))
    found: tuple[str | None, bool] | None = known.get(asked)
    if found is None:
        d = ir[k]
        name, guessed = primitive_name(ir, k)
        key = select_key(Places.of(ir).cell_scope(k), name, d["op"])
        # a key from the node's own scope below a layer names cells the dump shows (``dump_cells``
        # reads that scope): no walk of the file for it
        if key is not None and not (printed_layer(d.get("scope", "")) or "").isdigit() and not key_exists(ir, key):
            key = None
        found = known[asked] = (key, guessed and key is not None)
    return found


def dump_cells(ir: IRFile) -> frozenset[tuple[str, ...]]:
    """The cell attribute paths below a decoder layer that the dump shows (``("mlp",
    "linear_fc2")``): the cells of every printed scope below its layer and of every layer weight's
    name, each prefix included (one walk per file)."""
    found = ir.__dict__.get("_recompute_dump_cells")
    if found is None:
        paths: set[tuple[str, ...]] = set()
        scopes: set[str] = set()
        for k, d in ir.nodes.items():
            if d["kind"] == "param" and d.get("has_default"):
                name = weight_name(ir, k)
                if name and LAYER_IN_NAME.search(name):
                    cells = weight_cells(name)
                    paths.update(cells[:i] for i in range(1, len(cells) + 1))
                continue
            scopes.add(d.get("scope", ""))
        # a scope is printed on many nodes, and its cells on every op of the cell (``…/w1-Linear/
        # MatMul-op3``, ``…/Reshape-op4``): each cell path is read once
        heads = set()
        for scope in scopes:
            head, _, last = scope.rpartition("/")
            heads.add(head + "/" if head and _OP_SUFFIX.match(last) else scope)
        for scope in heads:
            parts = tuple(scope_parts(scope))
            if layer_prefix(parts) is None:
                continue
            cells = tuple(p.split("-", 1)[0] for p in below_layer(list(parts)) if "-" in p)
            paths.update(cells[:i] for i in range(1, len(cells) + 1))
        found = ir.__dict__["_recompute_dump_cells"] = frozenset(paths)
    return found


def key_exists(ir: IRFile, key: str) -> bool:
    """A select_recompute key's cells exist in the model, as MindFormers matches a key
    (``LayerSetting.set_pattern_recompute``): the pattern split on ``\\.``, each segment but the last
    fullmatched against the child cells' names from the layer down, the last against the attributes
    of the cell reached (a primitive or a child cell, which the dump cannot list: not checked).
    True in a dump that shows no decoder layer (nothing to check against). Once per file and key:
    every layer asks for the same keys."""
    asked: dict[str, bool] = ir.__dict__.setdefault("_recompute_key_exists", {})
    found = asked.get(key)
    if found is None:
        found = asked[key] = _key_exists(dump_cells(ir), key)
    return found


def _key_exists(known: frozenset[tuple[str, ...]], key: str) -> bool:
    cells = key.split("\\.")[:-1]
    if not known or not cells:
        return True
    try:
        return any(
            len(path) == len(cells) and all(re.fullmatch(seg, part) for seg, part in zip(cells, path)) for path in known
        )
    except re.error:
        return False


_NOT_COMPUTE = frozenset({"Load", "UpdateState", "MakeTuple", "Depend", "TupleGetItem", "call", "Partial", "Return"})


def recomputed_layers(ir: IRFile) -> frozenset[str]:
    """The decoder layers recomputed whole (full-layer recompute: ``Cell.recompute()`` on the layer,
    MindFormers' ``recompute: True``): those where every cell below the layer holds forward ops
    mostly marked for recompute (a ``recompute_`` scope, or lazy_inline's
    ``need_cse_after_recompute``). A select key on one cell (``mlp``) marks that cell only. Once
    per file."""
    found = ir.__dict__.get("_recomputed_layers")
    if found is None:
        places = Places.of(ir)
        counts: dict[str, dict[str, list[int]]] = {}
        for k in ir.cnodes():
            d = ir[k]
            if d["op"] in _NOT_COMPUTE or ir.is_backward(k) or ir.is_recompute_copy(k):
                continue
            scope = d.get("scope", "")
            ca = d.get("cnode_attrs") or {}
            marked = scope.startswith(CELL_PREFIX) or ca.get("need_cse_after_recompute") is True
            layer = places.layer(k)[0]
            if not layer.isdigit():
                continue
            cell = (places.place(k).cells or ("",))[0].split("-", 1)[0]
            if not cell or cell == "Default":
                continue
            row = counts.setdefault(layer, {}).setdefault(cell, [0, 0])
            row[0] += 1
            row[1] += marked
        found = frozenset(
            layer for layer, cells in counts.items() if cells and all(2 * m >= n for n, m in cells.values())
        )
        ir.__dict__["_recomputed_layers"] = found
    return found


MINDFORMERS_FRAME = "/mindformers/"
_MINDFORMERS_NAME = "mindformers"
_SAMPLED_TRACES = 64


def mindformers_model(ir: IRFile) -> bool:
    """The dump is of a MindFormers model, whose recompute ``recompute_config`` sets (select keys,
    full-layer recompute): a subgraph named after a MindFormers class (lazy_inline's halves, cell
    graphs), or a MindFormers frame in the source traces (the first ones suffice: every model op's
    trace runs through the model's construct). Else a plain MindSpore model, whose recompute the
    model code sets with ``.recompute()`` calls."""
    found = ir.__dict__.get("_mindformers_model")
    if found is None:
        found = any(_MINDFORMERS_NAME in name for name in ir.subgraphs)
        if not found:
            for k in list(ir.traces)[:_SAMPLED_TRACES]:
                if any(MINDFORMERS_FRAME in ln for ln in ir.trace(k)):
                    found = True
                    break
        ir.__dict__["_mindformers_model"] = found
    return found


_AROUND_STEPS = 8
_NOT_AROUND = frozenset({"UpdateState", "MakeTuple", "Depend", "Partial", "call", "Return", "Load"})


def recomputed_cell(ir: IRFile, key: int) -> tuple[str, list[str]] | None:
    """(layer, cell attribute names below it) of the recomputed cell a forward op sits in when its
    own scope names no cell: a communication op a cell creates inside a function (MindFormers'
    MoE token dispatcher builds its AlltoAllV cells in the experts' Morph) prints ``Default/…``
    while the cell's other ops print ``recompute_…/mlp-MoELayer/experts-…``. The nearest forward
    data neighbours carrying that prefix and naming cells decide, when they agree on the layer; the
    cells are what they all share. None when the op names cells itself or nothing around agrees."""
    if names_cells(ir[key].get("scope", "")):
        return None
    cells_of = key_cells
    seen = {key}
    frontier = [key]
    for _ in range(_AROUND_STEPS):
        nxt, found = [], []
        for k in frontier:
            for n in (*ir.producers(k), *ir.consumers(k)):
                d = ir[n]
                if n in seen or d.get("kind") != "cnode" or d.get("op") in _NOT_AROUND:
                    continue
                if ir.is_backward(n) or ir.is_recompute_copy(n):
                    continue
                seen.add(n)
                scope = d.get("scope", "")
                if scope.startswith(CELL_PREFIX) and names_cells(scope):
                    found.append((printed_layer(scope), cells_of(scope)))
                else:
                    nxt.append(n)
        if found:
            layers = {layer for layer, _ in found}
            shared = found[0][1]
            for _, cells in found[1:]:
                i = 0
                while i < min(len(shared), len(cells)) and shared[i] == cells[i]:
                    i += 1
                shared = shared[:i]
            layer = next(iter(layers)) if len(layers) == 1 else None
            return (layer, shared) if layer is not None and shared else None
        frontier = nxt
    return None
