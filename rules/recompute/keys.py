"""MindFormers select_recompute keys of a node: its cell path below the layer plus the cell
attribute its primitive is called through (from the source trace). Where the forward scope names no
cell (lazy_inline's ``Default/SiLU-op0``), the cell path is the one ``irlint.model.layers`` recovers from
the node's recomputed copy or gradient op."""

from __future__ import annotations

import re
from typing import NamedTuple

from irlint.findings import NoKeyOp, RecomputeFix
from irlint.model import IRFile

# the model's answers (irlint.model.keys), under this module's names too
from irlint.model.keys import MINDFORMERS_FRAME, SELF_CALL, SHARED_SUFFIX, TRACE_LINE, mindformers_model
from irlint.model.keys import attribute_from_trace as attribute_from_trace
from irlint.model.keys import inserted_by_parallel as inserted_by_parallel
from irlint.model.keys import key_cells as key_cells
from irlint.model.keys import key_exists as key_exists
from irlint.model.keys import node_select_key as node_select_key
from irlint.model.keys import primitive_name as primitive_name
from irlint.model.keys import select_key as select_key
from irlint.model.keys import select_key_part as select_key_part
from irlint.model.layers import (
    LAYER_IN_NAME,
    MATMUL_OPS,
    Places,
    names_cells,
    weight_layer,
    weight_name,
)
from irlint.model.source import own_trace as own_trace
from irlint.model.source import source_of

from .evidence import RecomputeFacts

GUESS_NOTE = (
    " (no source trace names the primitive's cell attribute, so the key uses the printed "
    "instance name, which MindSpore may have taken from a merged identical primitive; "
    "check it against the cell's attribute)"
)


def yaml_snippet(keys: list[str]) -> str:
    """The keys to add, as YAML; added to the user's own list, not in place of it."""
    quoted = ", ".join(f"'{k}'" for k in dict.fromkeys(keys))
    return f"recompute_config:\n  select_recompute: [{quoted}]   # add to your own keys"


def keys_snippet(keys: list[str]) -> str:
    """The keys to use, as the lines a report shows to paste (``Finding.snippet``)."""
    return "recompute_config:\n  select_recompute: [" + ", ".join(f"'{k}'" for k in keys) + "]"


def tagged_keys(ir: IRFile) -> dict[tuple[tuple[str, ...], str], int]:
    """The select keys of the forward primitives tagged for recompute, per layer, each with one
    node that carries it (computed once per IRFile)."""
    found = ir.__dict__.get("_recompute_tagged_keys")
    if found is None:
        found = {}
        for k in ir.cnodes():
            if (
                (ir[k].get("primitive_attrs") or {}).get("recompute") is True
                and not ir.is_backward(k)
                and not ir.is_recompute_copy(k)
            ):
                key, _ = node_select_key(ir, k)
                if key is not None:
                    found.setdefault((Places.of(ir).layer(k)[0], key), k)
        ir.__dict__["_recompute_tagged_keys"] = found
    return found


def tagged_with(ir: IRFile, layer: str, key: str | None) -> int | None:
    """``tagged_keys(ir).get((layer, key))``: the first tagged forward primitive in the file's
    order with select key ``key`` in ``layer``, naming (and placing) only the tagged nodes whose
    printed cell path can start that key."""
    if key is None:
        return None
    asked = ir.__dict__.setdefault("_recompute_tagged_with", {})
    if (layer, key) not in asked:
        asked[layer, key] = next(
            (
                k
                for k in _tagged_primitives(ir)
                if _may_have_key(ir, k, key) and node_select_key(ir, k)[0] == key and Places.of(ir).layer(k)[0] == layer
            ),
            None,
        )
    found: int | None = asked[layer, key]
    return found


def _tagged_primitives(ir: IRFile) -> list[int]:
    """The forward primitives tagged for recompute (``tagged_keys``' nodes), in the file's order."""
    found = ir.__dict__.get("_recompute_tagged_primitives")
    if found is None:
        found = ir.__dict__["_recompute_tagged_primitives"] = [
            k
            for k in RecomputeFacts.of(ir).tagged()
            if (ir[k].get("primitive_attrs") or {}).get("recompute") is True
            and not ir.is_backward(k)
            and not ir.is_recompute_copy(k)
        ]
    return found


def _may_have_key(ir: IRFile, k: int, key: str) -> bool:
    """False when ``k``'s printed scope names cells whose key does not start ``key``."""
    starts = ir.__dict__.setdefault("_recompute_key_starts", {})
    if k not in starts:
        scope = ir[k].get("scope", "")
        cells = key_cells(scope) if names_cells(scope) else None  # None: its cells come from the graph
        starts[k] = None if cells is None else "\\.".join(map(select_key_part, cells)) + "\\." if cells else ""
    start = starts[k]
    return start is None or bool(start) and key.startswith(start)


def _caller_key(ir: IRFile, v: int) -> str | None:
    """The key of the same op in the cell that calls ``v``'s cell, when ``v`` reads that cell's
    output (wo's input Reshape folded with the attention's own merge-heads ``reshape``)."""
    places = Places.of(ir)
    cells = places.place(v).cells
    ins = ir.producers(v)[:1]
    if len(cells) < 2 or not ins or ir[ins[0]]["kind"] != "cnode":
        return None
    if places.place(ins[0]).cells != cells[:-1]:
        return None
    return select_key(places.place(ins[0]).scope, ir[v]["op"].lower(), ir[v]["op"])


def folded_note(ir: IRFile, blocking: list[int]) -> str:
    """A hint sentence for untagged blocking ops whose key is already tagged in the same layer:
    MindSpore folded two consecutive ops of the same kind (e.g. an attention's own Reshape and its
    output Linear's Reshape) into one and kept the untagged primitive, so the key set for it is not
    enough; empty when no blocking op is in that case."""
    notes = []
    for v in blocking:
        if (ir[v].get("primitive_attrs") or {}).get("recompute") is True or folded_caller_key(ir, v) is not None:
            continue  # a folded Reshape's key is already the caller's (blocking_keys says so)
        key, _ = node_select_key(ir, v)
        other = tagged_with(ir, Places.of(ir).layer(v)[0], key)
        if other is not None:
            neighbour = _caller_key(ir, v)
            notes.append(
                f"'{key}' is already set (it tags {ir.describe(other)}), yet {ir.describe(v)} "
                f"carries no tag: MindSpore folded it with a neighbouring untagged {ir[v]['op']} "
                f"and kept that one's primitive, so tag the neighbour's key as well"
                + (f" ('{neighbour}': the {ir[v]['op']} of the cell whose output it reads)" if neighbour else "")
            )
    return (" " + "; ".join(notes) + ".") if notes else ""


# --- keys to add for blocking ops (the fix plan's recompute part) ---------------------------------
def source_text(ir: IRFile, k: int) -> str:
    src = source_of(ir, k)
    return f"{src[0]}:{src[1]}" if src else "no source trace in the dump"


def self_tagged(ir: IRFile, k: int) -> bool:
    """The primitive carries ``recompute: Bool(1)`` itself: the model (or a key already set) tagged
    it, so a key for it adds nothing (MindFormers 2.1.0 fails on a key naming a primitive its model
    code already set ``recompute(True)`` on)."""
    return (ir[k].get("primitive_attrs") or {}).get("recompute") is True


def folded_caller_key(ir: IRFile, v: int) -> str | None:
    """The key of the caller's Reshape when ``v`` is a Linear's input Reshape that MindSpore folded
    with the caller's own Reshape before it (the attention's merge-heads ``reshape`` + wo's input
    ``reshape``): ``v`` reads an op of the calling cell directly and drops two or more dimensions,
    where a Linear's input Reshape merges only batch and sequence. The folded op keeps the caller's
    primitive, so only the caller's key tags it; None otherwise."""
    d = ir[v]
    if d["op"] != "Reshape":
        return None
    ins, outs = d.get("in_types") or (), d.get("out_type")
    shape_in = ins[0].shape if ins and ins[0] is not None else None
    shape_out = outs.shape if outs is not None else None
    if not shape_in or not shape_out or len(shape_in) - len(shape_out) < 2:
        return None
    return _caller_key(ir, v)


def _forward_ops(ir: IRFile, op: str) -> list[int]:
    """The forward ops of type ``op``, in the file's order (once per file and op)."""
    cache: dict[str, list[int]] = ir.__dict__.setdefault("_recompute_forward_ops", {})
    found = cache.get(op)
    if found is None:
        found = cache[op] = [
            k
            for k in ir.nodes_by_op(op)
            if ir[k]["kind"] == "cnode" and not ir.is_backward(k) and not ir.is_recompute_copy(k)
        ]
    return found


def tagged_in_layer(ir: IRFile, op: str, key: str, layer: str) -> list[int]:
    """The forward ops of type ``op`` in ``layer`` that ``key`` tags."""
    # asked once per finding and per blocking op: the key's ops are grouped by layer once. Only the
    # ops whose printed cells can start the key are named (a key reads the node's source trace) and
    # placed (resolving every op's layer costs more than the keys)
    cache: dict[tuple[str, str], dict[str, list[int]]] = ir.__dict__.setdefault("_recompute_keys_by_layer", {})
    by_layer = cache.get((op, key))
    if by_layer is None:
        places = Places.of(ir)
        by_layer = cache[(op, key)] = {}
        for k in _forward_ops(ir, op):
            if _may_have_key(ir, k, key) and node_select_key(ir, k)[0] == key:
                by_layer.setdefault(places.layer(k)[0], []).append(k)
    return list(by_layer.get(layer, ()))


_MATMULS = MATMUL_OPS
_PASS = frozenset({"Cast", "Load", "Depend", "AllReduce", "AllGather", "ReduceScatter"})


def weight_of_matmul(ir: IRFile, m: int) -> str | None:
    """The weight name a MatMul reads (through a Load or Cast), or None."""
    for u in ir.producers(m):
        for _ in range(3):
            d = ir[u]
            if d["kind"] == "param":
                name = weight_name(ir, u)
                return name if name and "." in name else None
            if d["kind"] != "cnode" or d["op"] not in _PASS:
                break
            ins = ir.producers(u)
            if not ins:
                break
            u = ins[0]
    return None


def _near_matmuls(ir: IRFile, v: int) -> list[int]:
    """The MatMuls whose input ``v`` makes or whose output ``v`` reshapes (through Casts and
    collectives): the Linear a Reshape belongs to."""
    found = []
    for step in (ir.consumers, ir.producers):
        frontier = [v]
        for _ in range(3):
            nxt = []
            for n in frontier:
                for w in step(n):
                    d = ir[w]
                    if d["kind"] != "cnode" or ir.is_backward(w):
                        continue
                    if d["op"] in _MATMULS:
                        found.append(w)
                    elif d["op"] in _PASS:
                        nxt.append(w)
            frontier = nxt
    return found


def weight_cell_key(ir: IRFile, v: int) -> str | None:
    """A select key for an op whose scope names no cell, from the weight its Linear reads
    (``model.layers.0.mlp.linear_fc2.weight`` -> ``mlp\\.linear_fc2``) and the primitive's attribute
    (source trace, else the op): only when the MatMuls next to it read weights of one cell."""
    cells = set()
    for m in _near_matmuls(ir, v):
        name = weight_of_matmul(ir, m)
        if name is None:
            continue
        layer = LAYER_IN_NAME.search(name)
        below = name[layer.end() :] if layer else name
        parts = below.split(".")[:-1]  # drop "weight"
        if parts:
            cells.add(tuple(parts))
    if len(cells) != 1:
        return None
    attr = attribute_from_trace(ir.trace(v)) or ir[v]["op"].lower()
    return "\\.".join(select_key_part(p) for p in [*cells.pop(), attr])


def _also_tags(ir: IRFile, v: int, layer: str, key: str) -> str:
    """A note when ``key`` tags other forward ops of ``v``'s layer too (a cell calls one
    primitive for several ops: a Linear's ``reshape`` of its input and output)."""
    more = [n for n in tagged_in_layer(ir, ir[v]["op"], key, layer) if n != v]
    if not more:
        return ""
    shown = ", ".join(ir.describe(n) for n in more[:3]) + (", …" if len(more) > 3 else "")
    return f"; '{key}' also tags {len(more)} other {ir[v]['op']} op(s) of the layer ({shown})"


class KeyNeed(NamedTuple):
    """What one blocking op needs: the key to add (None: none can be derived or none is needed)
    and why, for the hint and the fix plan."""

    node: int
    key: str | None
    note: str  # empty for a plain key that tags exactly the blocking op
    needed: bool  # False: the op carries the tag already, nothing to add


def blocking_keys(ir: IRFile, blocking: list[int]) -> list[KeyNeed]:
    """The select_recompute key each blocking op needs, built only from this dump's names: the
    cell path (printed, or recovered from the weights the neighbours read) plus the primitive's
    attribute (source trace, or the op for a primitive the parallel pass replaced). No key for an
    op the model tags itself; the caller's key for a folded Reshape; a note when the key tags
    more ops of the layer than the blocking one."""
    out = []
    places = Places.of(ir)
    for v in blocking:
        desc = f"{ir.describe(v)} ({source_text(ir, v)})"
        if self_tagged(ir, v):
            out.append(KeyNeed(v, None, f"{desc} already carries the recompute tag: no key for it", False))
            continue
        layer = places.layer(v)[0]
        folded = folded_caller_key(ir, v)
        if folded is not None:
            own, _ = node_select_key(ir, v)
            note = (
                f"{desc} is the calling cell's Reshape and the Linear's input Reshape folded into one, "
                f"which keeps the caller's primitive: '{folded}' tags it"
                + (f", '{own}' does not" if own and own != folded else "")
            )
            out.append(KeyNeed(v, folded, note + _also_tags(ir, v, layer, folded), True))
            continue
        key, guessed = node_select_key(ir, v)
        if key is None:
            key = weight_cell_key(ir, v)
            if key is not None and not key_exists(ir, key):
                key = None
            if key is not None:
                out.append(
                    KeyNeed(
                        v,
                        key,
                        f"{desc}: its scope names no cell; '{key}' is built from the weight "
                        f"its Linear reads" + _also_tags(ir, v, layer, key),
                        True,
                    )
                )
                continue
            unknown = _missing_cells_key(ir, v)
            why = (
                f"'{unknown}' would name cells this model does not have (no scope or weight of the dump "
                f"shows them), and MindFormers matches a key cell by cell"
                if unknown
                else "neither its scope nor the weights near it name its cell"
            )
            out.append(KeyNeed(v, None, f"no select_recompute key can be derived for {desc}: {why}", True))
            continue
        note = _also_tags(ir, v, layer, key).removeprefix("; ")
        if guessed:
            note = (note + "; " if note else "") + GUESS_NOTE.strip(" ()")
        out.append(KeyNeed(v, key, note, True))
    return out


def _missing_cells_key(ir: IRFile, v: int) -> str | None:
    """The key a node's place would give when ``key_exists`` turned it down, else None."""
    key = select_key(Places.of(ir).cell_scope(v), primitive_name(ir, v)[0], ir[v]["op"]) or weight_cell_key(ir, v)
    return key if key is not None and not key_exists(ir, key) else None


def keys_hint(needs: list[KeyNeed]) -> str:
    """The hint text for the keys blocking ops need: what to add to the user's list, and what no
    key can fix."""
    keys = list(dict.fromkeys(n.key for n in needs if n.key and n.needed))
    text = ""
    if keys:
        text = (
            "add " + ", ".join(f"'{k}'" for k in keys) + " to your select_recompute (keep your keys; "
            "the fix plan of the run lists every key at once)"
        )
    notes = [n.note for n in needs if n.note]
    if notes:
        text += ("; " if text else "") + "; ".join(notes)
    return text


def file_layers(ir: IRFile) -> list[int]:
    """The decoder layers whose weights this file holds (a pipeline stage holds a run of them)."""
    found = ir.__dict__.get("_recompute_file_layers")
    if found is None:
        layers = set()
        for k, d in ir.nodes.items():
            if d["kind"] == "param" and d.get("has_default"):
                layer = weight_layer(weight_name(ir, k) or "")
                if layer.isdigit():
                    layers.add(int(layer))
        found = ir.__dict__["_recompute_file_layers"] = sorted(layers)
    return found


def recompute_fix(ir: IRFile, k: int, keys: list[str], needs: list[KeyNeed]) -> RecomputeFix:
    """The fix plan's recompute facts of a finding on ``k`` (``irlint.fixplan``): the keys to add,
    the layer, the layers of the file (the pipeline stage's share), the ops no key can tag."""
    layer = Places.of(ir).layer(k)[0]
    unresolved = tuple(
        NoKeyOp(ir[n.node].get("id", ""), ir[n.node]["op"], source_text(ir, n.node))
        for n in needs
        if n.key is None and n.needed
    )
    return RecomputeFix(tuple(keys), int(layer) if layer.isdigit() else None, tuple(file_layers(ir)), unresolved)


class ModelCodeRecompute(NamedTuple):
    """A recompute fix made in the model code, for a model that takes no select_recompute keys:
    the ``.recompute()`` call to write, the one it replaces (empty when it replaces none), and
    where: the line that calls the cell holding the primitive."""

    call: str  # self.pool.max_pool.recompute()
    instead: str  # self.pool.recompute()
    path: str
    line: int

    def text(self) -> str:
        """The change as the hint and the fix plan say it."""
        return f"{self.call} in place of {self.instead}" if self.instead else self.call


# MindSpore's own files: a call made there (the training wrapper's ``self.network(``) is no place to edit
_MINDSPORE_FRAME = re.compile(r"[/\\](?:site|dist)-packages[/\\]mindspore[/\\]")


class _PrimitiveCall(NamedTuple):
    prim: str  # the cell attribute the primitive is called through
    path: str  # where it is called (the holding cell's construct)
    line: int
    cell: str | None  # the attribute the holding cell is called through, None when not ``self.<attr>(``
    cell_path: str
    cell_line: int


def plain_model_op(ir: IRFile, k: int) -> bool:
    """The fix for ``k`` is made in the model code, not with select keys: a plain MindSpore model
    (``mindformers_model`` is False) and ``k`` outside a numbered decoder layer (a model built of
    decoder layers is read as one whose recompute a MindFormers-style config sets per layer)."""
    return not mindformers_model(ir) and not Places.of(ir).layer(k)[0].isdigit()


def _primitive_call(ir: IRFile, k: int) -> _PrimitiveCall | None:
    """Where ``k``'s primitive is called and where the cell holding it is, from its own trace: the
    innermost frame must be a ``self.<attr>(`` call (the primitive is a cell attribute); past the
    holding cell's block frames (``def construct``, an ``if`` around the call: they span lines),
    the first one-line frame is the call of that cell. None for a functional call, a primitive
    held in a local, no trace, or a MindFormers frame in it."""
    own = own_trace(ir.trace(k))
    if not own or any(MINDFORMERS_FRAME in ln for ln in own):
        return None
    inner: tuple[str, str, int] | None = None
    for ln in reversed(own):
        line = SHARED_SUFFIX.sub("/", ln)
        m = TRACE_LINE.match(line) if line.endswith("/") else None
        frame = _FRAME_AT.match(line)
        if m is None or frame is None:
            break
        call = SELF_CALL.match(m.group("text"), int(m.group("start")))
        path, lineno = frame.group("path"), int(frame.group("line"))
        if inner is None:
            if call is None:
                return None
            inner = (call.group(1), path, lineno)
        elif frame.group("span") is None:
            if call is None or _MINDSPORE_FRAME.search(path):
                break
            return _PrimitiveCall(*inner, call.group(1), path, lineno)
    return None if inner is None else _PrimitiveCall(*inner, None, "", 0)


def user_frame(ir: IRFile, k: int) -> tuple[str, int] | None:
    """(path, line) of the innermost frame of ``k``'s own trace outside MindSpore's own files: the
    line of the model code that made the op (for an op a MindSpore cell makes, the cell's call)."""
    for ln in reversed(own_trace(ir.trace(k))):
        frame = _FRAME_AT.match(SHARED_SUFFIX.sub("/", ln))
        if frame is not None and frame.group("span") is None and not _MINDSPORE_FRAME.search(frame.group("path")):
            return frame.group("path"), int(frame.group("line"))
    return None


def model_code_recompute(ir: IRFile, k: int) -> ModelCodeRecompute | None:
    """The ``.recompute()`` call that tags the primitive of a one-op cell, for a plain MindSpore
    model (``mindformers_model`` is False): ``self.<cell>.<primitive>.recompute()`` in place of
    ``self.<cell>.recompute()``, at the line that calls the cell. From the node's own trace: the
    innermost ``self.<attr>(`` frame names the primitive, the call of its cell (``self.<attr>(``)
    the cell and its call site. None unless ``plain_model_op``, or for a trace that names neither."""
    if not plain_model_op(ir, k):
        return None
    found = _primitive_call(ir, k)
    if found is None or found.cell is None:
        return None
    return ModelCodeRecompute(
        f"self.{found.cell}.{found.prim}.recompute()",
        f"self.{found.cell}.recompute()",
        found.cell_path,
        found.cell_line,
    )


def model_code_call(ir: IRFile, v: int) -> ModelCodeRecompute | None:
    """The ``.recompute()`` call that tags a blocking op's primitive in a plain MindSpore model:
    ``self.<cell>.<primitive>.recompute()`` in the cell that calls ``self.<cell>(`` (its call site
    from the trace), else ``self.<primitive>.recompute()`` in the cell whose construct calls it
    (which tags it in every instance of that cell). None for a MindFormers model, an op with no
    trace (inserted by a pass) or made by a functional call (no primitive to tag)."""
    if mindformers_model(ir):
        return None
    found = _primitive_call(ir, v)
    if found is None:
        return None
    if found.cell is not None:
        return ModelCodeRecompute(f"self.{found.cell}.{found.prim}.recompute()", "", found.cell_path, found.cell_line)
    return ModelCodeRecompute(f"self.{found.prim}.recompute()", "", found.path, found.line)


def primitive_class(ir: IRFile, v: int) -> str:
    """The class to construct ``v``'s primitive with: an op printed ``PrimFunc_X`` is generated, held in
    ``mindspore.ops.auto_generate`` (``ops.SiLU`` does not exist in MindSpore 2.10), the others in ``ops``."""
    generated = str(ir[v].get("raw_op") or "").startswith("PrimFunc_")
    return f"ops.auto_generate.{ir[v]['op']}" if generated else f"ops.{ir[v]['op']}"


def model_code_snippet(calls: list[ModelCodeRecompute]) -> str:
    """The calls to paste, each with where it goes (the report's copy button takes it)."""
    return "\n".join(f"{c.call}  # {_written_in(c)}" for c in calls if c.call)


def _written_in(c: ModelCodeRecompute) -> str:
    if c.instead:
        return f"in place of {c.instead}, the cell called at {c.path}:{c.line}"
    if c.call.count(".") > 2:
        return f"in the cell that calls self.{c.call.split('.')[1]} ({c.path}:{c.line})"
    return f"in the cell whose construct calls it ({c.path}:{c.line})"


def model_code_hint(ir: IRFile, k: int, blocking: list[int]) -> tuple[list[ModelCodeRecompute], str] | None:
    """For a plain MindSpore model (``plain_model_op`` of the finding's op ``k``): the ``.recompute()``
    calls that tag the blocking ops, and the hint text (each call and the cell it is written in, what
    no call can tag and why). None otherwise (the fix is a select key)."""
    if not plain_model_op(ir, k):
        return None
    calls: list[ModelCodeRecompute] = []
    notes: list[str] = []
    for v in blocking:
        code = model_code_call(ir, v)
        if code is not None:
            if code not in calls:
                calls.append(code)
        elif self_tagged(ir, v):
            notes.append(f"{ir.describe(v)} already carries the recompute tag")
        else:
            src = source_of(ir, v)
            notes.append(
                f"no .recompute() call can tag {ir.describe(v)}: "
                + (
                    f"it is made by a functional call at {src[0]}:{src[1]}, with no primitive to tag; hold the "
                    f"primitive in its cell (self.<name> = {primitive_class(ir, v)}()), call it there, and tag it"
                    if src
                    else "it has no source trace (a pass inserted it); recompute the cell that holds it"
                )
            )
    if not calls:  # no op the trace names (a dump saved without traces): the keys say more than nothing
        return None
    parts = [f"write {c.call} {_written_in(c)}" for c in calls]
    text = "in the model code (the model sets recompute with .recompute() calls, not a recompute_config): "
    text += "; ".join(parts + notes)
    return calls, text


_FRAME_AT = re.compile(r"# In file (?P<path>.+?):(?P<line>\d+)(?P<span>~\d+)?, \d+~\d+/")
