"""Recompute rules (RC): did the recompute the user asked for happen, and does it save memory.

The evidence (MindSpore 2.10, see the corpus FINDINGS): a request is ``recompute: Bool(1)`` in
``primitive_attrs`` (``Primitive.recompute()`` / select_recompute) and, once the add_recomputation
pass has run, in ``cnode_attrs`` of every forward node it decided on (``Cell.recompute()`` shows
before that only as a ``recompute_`` scope prefix). A node was recomputed when it carries a
``recompute_id`` and a copy with ``duplicated: Bool(1)`` and the same id exists (older dumps: a
``duplicated`` copy only). ``recompute_sub_graph``, ``need_cse_after_recompute`` and the scope
prefix are not evidence of a copy.
"""
from __future__ import annotations

import re
import weakref
from dataclasses import dataclass, field

from irlint.findings import Related
from irlint.memory import downcast_cost, stake, staked
from irlint.model import IRFile
from irlint.rule import Rule, related_node
from irlint.values import TYPE_ID_NAMES

from . import recompute_examples as ex

# Stage files where the recompute decision is final, best first: the final front-end graph
# (validate), then the passes that make the decision, then the backend graph (CPU expands SiLU
# there and drops its attributes, so it is the last resort).
RECOMPUTE_STAGES = ("validate", "cse_after_recomputation", "add_recomputation", "graph_build")

CELL_PREFIX = "recompute_"
# ops whose output shares the tensor it reads: a backward node reading them keeps that tensor alive
VIEW_OPS = frozenset({"Reshape", "ExpandDims", "Squeeze", "Flatten", "Depend", "Load", "TupleGetItem", "MakeTuple"})
FIRST_INPUT_ONLY = frozenset({"Depend", "Load", "TupleGetItem"})
MATMUL_OPS = frozenset({"MatMul", "BatchMatMul", "MatMulExt", "BatchMatMulExt", "Dense"})
BOOKKEEPING_OPS = frozenset({"Load", "UpdateState", "MakeTuple", "Depend", "TupleGetItem", "call"})
HIGH_PRECISION = frozenset({"Float32", "Float64"})
LOW_PRECISION = frozenset({"Float16", "BFloat16"})
_OP_SUFFIX = re.compile(r".+-op\d+\Z")
_EXPANDED_GRAD = re.compile(r"Expand/_\w+Grad/")
# MindFormers' documented select_recompute keys for the FeedForward reshapes
DOCUMENTED_RESHAPE_KEYS = {"w1": r"feed_forward\.w1\.reshape", "w2": r"feed_forward\.w2\.reshape",
                           "w3": r"feed_forward\.w3\.reshape"}
DOCUMENTED_KEYS = {"SiLU": r"feed_forward\.w1\.activation\.silu", "Mul": r"feed_forward\.mul"}


# --- what the dump says about recompute ----------------------------------------------------------

def cell_path(scope: str) -> tuple[str, ...]:
    """Scope components without the ``recompute_`` prefix and the ``Op-opN`` suffix."""
    if scope.startswith(CELL_PREFIX):
        scope = scope[len(CELL_PREFIX):]
    parts = scope.split("/")
    if parts and _OP_SUFFIX.match(parts[-1]):
        parts = parts[:-1]
    return tuple(parts)


@dataclass
class RecomputeFacts:
    """Per-file answers the recompute rules share (computed once per IRFile, kept on it)."""

    # a weak reference: the IRFile keeps the facts, and a cycle would outlive the file
    _ir: "weakref.ref[IRFile]"
    decided: bool = False
    _applied: dict[int, bool] = field(default_factory=dict)
    _cells: dict[tuple, list[bool]] = field(default_factory=dict)  # path -> [has un-prefixed, has applied]

    @classmethod
    def of(cls, ir: IRFile) -> "RecomputeFacts":
        facts = ir.__dict__.get("_recompute_facts")
        if facts is None:
            facts = cls(weakref.ref(ir))
            facts._scan()
            ir.__dict__["_recompute_facts"] = facts
        return facts

    @property
    def ir(self) -> IRFile:
        return self._ir()

    def _scan(self) -> None:
        ir = self.ir
        marker = backward = False
        for k in ir.cnodes():
            d = ir[k]
            ca = d.get("cnode_attrs") or {}
            if self.is_backward(k):
                backward = True
                continue
            if ca.get("recompute") is True or "recompute_id" in ca or ca.get("duplicated") is True:
                marker = True
            if ir.is_recompute_copy(k) or d["op"] in BOOKKEEPING_OPS:
                continue
            path = cell_path(d.get("scope", ""))
            prefixed = d.get("scope", "").startswith(CELL_PREFIX)
            applied = self.applied(k)
            for i in range(1, len(path) + 1):
                entry = self._cells.setdefault(path[:i], [False, False])
                entry[0] |= not prefixed
                entry[1] |= applied
        # The pass writes cnode_attrs markers on every node it decided on; before it (e.g.
        # 06_add_attr, 12_pipeline_split, 22_environ_conv) only primitive_attrs tags exist.
        self.decided = marker and backward

    def is_backward(self, k: int) -> bool:
        # CPU backend graphs expand grad ops under "Expand/_SiLUGrad/..." with no Gradients scope
        return self.ir.is_backward(k) or bool(_EXPANDED_GRAD.match(self.ir[k].get("scope", "")))

    def applied(self, k: int) -> bool:
        if k not in self._applied:
            self._applied[k] = bool(self.ir.copy_of(k))
        return self._applied[k]

    def request(self, k: int) -> str | None:
        """How a forward node asked for recompute: ``select`` (its primitive is tagged),
        ``cell`` (marked by the pass as part of a ``Cell.recompute()`` cell), ``cell-output``
        (``Bool(0)`` in a recompute cell that recomputed nothing at all), or None."""
        d = self.ir[k]
        if d["kind"] != "cnode" or self.is_backward(k) or self.ir.is_recompute_copy(k):
            return None
        ca = d.get("cnode_attrs") or {}
        pa = d.get("primitive_attrs") or {}
        if ca.get("recompute") is False:
            return "cell-output" if self._cell_recomputed_nothing(d.get("scope", "")) else None
        if pa.get("recompute") is True:
            return "select"
        if ca.get("recompute") is True:
            # marked by the pass: the primitive was not tagged, so the request came from a cell
            return "cell" if d.get("scope", "").startswith(CELL_PREFIX) else "select"
        return None

    def recompute_cell(self, scope: str) -> tuple[str, ...] | None:
        """The widest cell around a ``recompute_`` scope whose forward nodes all carry the prefix:
        the cell ``.recompute()`` was (at most) called on."""
        if not scope.startswith(CELL_PREFIX):
            return None
        path = cell_path(scope)
        best = None
        for i in range(len(path), 0, -1):
            entry = self._cells.get(path[:i])
            if entry is None or entry[0]:
                break
            best = path[:i]
        return best

    def _cell_recomputed_nothing(self, scope: str) -> bool:
        # Bool(0) is the by-design exclusion of a recompute cell's output; it only means "not
        # applied" when nothing else in that cell was recomputed either.
        cell = self.recompute_cell(scope)
        return cell is not None and not self._cells[cell][1]

    def backward_readers(self, k: int) -> list[tuple[int, list[int]]]:
        """Backward nodes that read ``k``'s output, directly or through non-recomputed view ops,
        each with the chain of view nodes in between."""
        ir = self.ir
        out: list[tuple[int, list[int]]] = []
        seen = {k}
        stack: list[tuple[int, list[int]]] = [(k, [])]
        while stack:
            node, chain = stack.pop()
            nexts = [c for c in ir.consumers(node) if c not in seen]
            for _, param, kind in ir.graph.out_edges(node, data="kind"):
                if kind == "call_in" and param not in seen:
                    nexts.append(param)  # into a called subgraph: continue from its parameter
            for c in nexts:
                seen.add(c)
                d = ir[c]
                if d["kind"] == "param":
                    stack.append((c, chain))
                elif d["kind"] != "cnode":
                    continue
                elif self.is_backward(c):
                    out.append((c, chain))
                elif d["op"] in VIEW_OPS and not self.applied(c) and not ir.is_recompute_copy(c):
                    if d["op"] in FIRST_INPUT_ONLY and ir.producers(c)[:1] != [node]:
                        continue  # ordering input of Depend / monad of Load: no data flows
                    stack.append((c, chain + [c]))
        return sorted(out, key=lambda rc: ir[rc[0]].get("line", 0))

    def up_through_views(self, k: int) -> tuple[int | None, list[int]]:
        """The nearest non-view producer of ``k`` (first inputs only) and the views passed."""
        ir = self.ir
        views: list[int] = []
        node = k
        for _ in range(64):
            d = ir[node]
            if d["kind"] != "cnode" or d["op"] not in VIEW_OPS:
                return node, views
            views.append(node)
            first = ir.producers(node)[:1]
            if not first:
                return None, views
            node = first[0]
        return None, views


# --- MindFormers select_recompute keys -----------------------------------------------------------

WRAPPER_CELLS = frozenset({"network", "_backbone", "backbone", "model", "net"})


def select_key(scope: str, name: str | None, op: str) -> str | None:
    """The select_recompute regex key of a primitive: its cell path below the layer (cell
    attribute names from ``name-Class`` scope parts) plus the primitive's attribute ``name``
    (see ``primitive_name``; the lower-cased op when None); None when the scope holds no cell
    names."""
    names = [p.split("-", 1)[0] for p in cell_path(scope) if "-" in p]
    numeric = [i for i, n in enumerate(names) if n.isdigit()]
    if numeric:
        names = names[numeric[-1] + 1:]
    else:
        while len(names) > 1 and names[0] in WRAPPER_CELLS:
            names = names[1:]
    if not names:
        return None
    return "\\.".join(re.escape(n).replace("\\_", "_") for n in names + [name or op.lower()])


# ``# In file PATH:LINE[~LINE], COL~COL/SOURCE LINE/``; the columns are 0-based, the end is
# exclusive and on the last line of the range, while only the first source line is printed.
_TRACE_LINE = re.compile(r"# In file .*?:\d+(?:~\d+)?, (?P<start>\d+)~\d+/(?P<text>.*)/\Z")
_SHARED_SUFFIX = re.compile(r"/<~~[^/]*/\Z")  # "<~~This line of code can be shared by multiple nodes..."
_SELF_CALL = re.compile(r"self\.(\w+)\s*\(")
_CANDIDATE = "# Corresponding "


def own_trace(lines: list[str]) -> list[str]:
    """The ``# In file`` lines of a node's own source: the lines before any ``# Corresponding``
    block, else (kernel graphs) the ``code candidate`` block; never the ``forward node
    candidate`` block, which is another node's source."""
    blocks: list[tuple[str, list[str]]] = [("", [])]
    for ln in lines:
        if ln.startswith(_CANDIDATE):
            blocks.append((ln, []))
        elif ln.startswith("# In file"):
            blocks[-1][1].append(ln)
    for header, body in blocks:
        if body and (not header or "code candidate" in header):
            return body
    return []


def attribute_from_trace(lines: list[str]) -> str | None:
    """The cell attribute a primitive was called through: ``self.<attr>(`` at the start column of
    the innermost call site of its own source trace; None when the call is not of that form
    (functional ops, a primitive held in a local) or there is no trace."""
    own = own_trace(lines)
    if not own:
        return None
    m = _TRACE_LINE.match(_SHARED_SUFFIX.sub("/", own[-1]))
    if m is None:
        return None
    call = _SELF_CALL.match(m.group("text"), int(m.group("start")))
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
    tagged = (d.get("primitive_attrs") or {}).get("recompute") is True
    return d.get("instance") or d["op"].lower(), not (tagged and d.get("instance"))


def node_select_key(ir: IRFile, k: int) -> tuple[str | None, bool]:
    """``select_key`` of a node with its primitive's name from ``primitive_name``; (key, guessed)."""
    d = ir[k]
    name, guessed = primitive_name(ir, k)
    key = select_key(d.get("scope", ""), name, d["op"])
    return key, guessed and key is not None


GUESS_NOTE = (" (no source trace names the primitive's cell attribute, so the key uses the printed "
              "instance name, which MindSpore may have taken from a merged identical primitive; "
              "check it against the cell's attribute)")


def yaml_snippet(keys: list[str]) -> str:
    quoted = ", ".join(f"'{k}'" for k in dict.fromkeys(keys))
    return f"recompute_config:\n  select_recompute: [{quoted}]"


# --- rules ---------------------------------------------------------------------------------------

def _how(request: str) -> str:
    return {"select": "recompute: Bool(1) on its primitive",
            "cell": "Cell.recompute() on its cell, scope prefix recompute_",
            "cell-output": "Cell.recompute() on the cell whose output it is"}[request]


def backward_text(ir: IRFile, r: int) -> str:
    """A backward node by what it differentiates: MindSpore's scope of a gradient op names the
    cell whose backward emitted it (e.g. ``lm_head``'s ``Grad_MatMul`` for layer 0's ``down_proj``),
    ``forward_unique_id`` names the forward node itself."""
    fwd = ir.forward_of(r)
    if fwd is None:
        return f"backward {ir.describe(r)} ({ir[r].get('scope', '')})"
    path = cell_path(ir[fwd].get("scope", ""))
    where = f" in {'/'.join(path)}" if any("-" in p for p in path) else ""  # no cell names: no place to add
    return f"backward {ir.describe(r)} (gradient of {ir.describe(fwd)}{where})"


def reader_note(ir: IRFile, r: int, note: str) -> str:
    fwd = ir.forward_of(r)
    return note if fwd is None else f"{note}; gradient of {ir.describe(fwd)}"


class _RecomputeRule(Rule):
    stages = RECOMPUTE_STAGES

    def check(self, ir: IRFile):
        facts = RecomputeFacts.of(ir)
        if facts.decided:  # before the recompute pass a tag is only a request
            yield from self.check_decided(ir, facts)

    def check_decided(self, ir: IRFile, facts: RecomputeFacts):
        raise NotImplementedError

    def _unapplied_requests(self, ir: IRFile, facts: RecomputeFacts):
        for k in ir.cnodes():
            req = facts.request(k)
            if req is not None and not facts.applied(k):
                yield k, req


class RecomputeNotApplied(_RecomputeRule):
    """What it finds:
    A forward op that was asked to recompute (``recompute: Bool(1)``, or every op of a
    ``Cell.recompute()`` cell) but has no recomputed copy after the recompute pass, while a
    backward op still reads its output, directly or through non-recomputed view ops (Reshape,
    ExpandDims, Depend ...). Applied means: the op has ``recompute_id`` and a copy with
    ``duplicated: Bool(1)`` and the same id exists (older dumps: a ``duplicated`` copy).
    ``recompute: Bool(0)`` (a recompute cell's output, excluded by design) is reported only when
    nothing else in that cell was recomputed: then the ``.recompute()`` call did nothing. A
    tagged fp32 -> fp16/bf16 Cast is left to ``recompute-downcast`` (RC003): making that
    recompute apply is what would raise memory.

    Stage files: ``validate`` (final front-end graph), else ``cse_after_recomputation``,
    ``add_recomputation``, ``graph_build``. A file is judged only when it shows the pass ran
    (cnode_attrs ``recompute: Bool(1)``/``recompute_id``/``duplicated`` on a forward op, and a
    backward graph): files before it (``06_add_attr``, ``12_pipeline_split``,
    ``22_environ_conv``, ``opt_pass_18_*`` ...) hold requests only.

    Why it matters:
    The activation stays in memory although the configuration says it is recomputed; memory
    plans made on that belief fail.

    How to fix:
    Recompute the view ops between the op and its backward reader too (the finding names them
    and the hint gives the select_recompute keys), or put the recompute on the primitive instead
    of a one-op cell.

    Example:
    ``%6 = PrimFunc_SiLU(%5) ... cnode_attrs: {recompute: Bool(1)}`` with no ``recompute_id``;
    backward ``Mul`` reads it through ``%7 = PrimFunc_Reshape(%6, ...)``.
    """

    code = "RC001"
    name = "recompute-not-applied"
    severity = "warning"
    summary = "An op asked to recompute has no recomputed copy, and backward still keeps its output"
    INVALID = [ex.FFN_RESHAPE_BLOCKS]
    VALID = [ex.FFN_BEFORE_PASS, ex.FFN_2D_APPLIED, ex.LOSS_TAG_UNUSED, ex.LOSS_CELL_OUTPUT]

    def check_decided(self, ir: IRFile, facts: RecomputeFacts):
        for k, req in self._unapplied_requests(ir, facts):
            if costly_downcast(ir, facts, k) is not None:
                continue  # recompute-downcast says to drop this tag; making it apply would cost memory
            readers = facts.backward_readers(k)
            if readers:
                yield self._finding(ir, facts, k, req, readers)

    def _finding(self, ir, facts, k, req, readers):
        d = ir[k]
        views = list(dict.fromkeys(v for _, chain in readers for v in chain))
        direct = [r for r, chain in readers if not chain]
        first = readers[0][0]
        reader_text = backward_text(ir, first)
        if views:
            via = ", ".join(f"{ir.describe(v)} ({ir[v].get('scope', '')})" for v in views)
            cause = f"{reader_text} reads its output through non-recomputed {via}"
            named = [node_select_key(ir, v) for v in views if ir[v]["op"] not in FIRST_INPUT_ONLY]
            keys = [key for key, _ in named if key]
            hint = "Recompute the view op(s) between it and the backward reader as well"
            hint += (" (select_recompute keys: " + ", ".join(f"'{x}'" for x in keys) + ")") if keys else ""
            hint += (GUESS_NOTE if any(guess for _, guess in named) else "") + "."
        elif req == "cell-output":
            cell = "/".join(facts.recompute_cell(d.get("scope", "")) or ())
            cause = (f"it is the output of the recompute cell {cell}, which MindSpore never recomputes, "
                     f"and nothing else in that cell was recomputed; {reader_text} reads it")
            key, guessed = node_select_key(ir, k)
            hint = ("Call recompute() on the primitive (or the enclosing cell) instead of this cell"
                    + (f", e.g. select_recompute key '{key}'" if key else "") + (GUESS_NOTE if guessed else "") + ".")
        else:
            cause = f"{reader_text} reads it directly, yet the pass made no copy"
            hint = "Check the compile log for recompute warnings about this op."
        message = (f"{d['op']} asked to recompute ({_how(req)}) has no recomputed copy "
                   f"(no recompute_id, no duplicated copy): {cause}, so the activation stays in memory")
        related = [related_node(ir, v, "not recomputed; keeps the output alive") for v in views]
        related += [related_node(ir, r, reader_note(ir, r, "backward reader" + (" (direct)" if r in direct else "")))
                    for r, _ in readers]
        return staked(self.finding(ir, k, message, hint=hint, related=related,
                                   identity=(d["op"], "/".join(cell_path(d.get("scope", "")))),
                                   extra={"request": req, "impact": "memory"}), stake(ir, k))


class RecomputeTagUnused(_RecomputeRule):
    """What it finds:
    A forward op tagged for recompute that has no recomputed copy, and no backward op reads its
    output (directly or through view ops): MindSpore only duplicates ops whose output backward
    needs, so the tag has no effect. Nothing is lost in memory, which is why this is information
    and off by default (``--extend-select RC004``). Same evidence and stage files as RC001.

    Why it matters:
    The configuration claims more than the graph does; the key is dead weight and may hide that
    the intended op was another one.

    How to fix:
    Remove the select_recompute key (or the ``.recompute()`` call) for this op.

    Example:
    ``%34 = PrimFunc_ReduceMean(%33, ...) {instance name: loss_mean} primitive_attrs:
    {recompute: Bool(1)}`` whose only consumer is the graph output.
    """

    code = "RC004"
    name = "recompute-tag-unused"
    severity = "info"
    default_enabled = False
    summary = "An op tagged for recompute has no copy because no backward op needs its output"
    INVALID = [ex.LOSS_TAG_UNUSED]
    VALID = [ex.LOSS_CELL_OUTPUT, ex.FFN_2D_APPLIED, ex.FFN_RESHAPE_BLOCKS, ex.FFN_BEFORE_PASS]

    def check_decided(self, ir: IRFile, facts: RecomputeFacts):
        for k, req in self._unapplied_requests(ir, facts):
            # ops of a Cell.recompute() cell were not tagged one by one: the pass skips the ones
            # backward does not need by design
            if req == "cell" or facts.backward_readers(k):
                continue
            d = ir[k]
            users = [c for c in ir.consumers(k) if ir[c]["kind"] in ("cnode", "return")]
            shown = ", ".join(f"{ir.describe(c)}" for c in users[:4]) or "none"
            message = (f"{d['op']} is tagged for recompute ({_how(req)}) but has no recomputed copy: "
                       f"no backward node reads its output (consumers: {shown}; none in backward), "
                       f"so the tag has no effect and no memory is at stake")
            key, guessed = node_select_key(ir, k)
            hint = "Remove the tag" + (f" (select_recompute key '{key}')" if key else "") + (GUESS_NOTE if guessed else "") + "."
            yield self.finding(ir, k, message, hint=hint,
                               related=[related_node(ir, c, "consumer (forward)") for c in users[:4]],
                               identity=(d["op"], "/".join(cell_path(d.get("scope", "")))),
                               extra={"request": req, "impact": "none"})


@dataclass
class FeedForward:
    gate_mul: int
    silu: int           # SiLU, or the Mul of its CPU expansion x * Sigmoid(x)
    w1: int
    w3: int
    w2: list[int]
    roles: dict[int, str]   # view node -> "w1" | "w2" | "w3" (the Linear it belongs to)


def find_feed_forwards(ir: IRFile, facts: RecomputeFacts) -> list[FeedForward]:
    """``MatMul(w1) -> [Reshape] -> SiLU -> [Reshape] -> Mul <- [Reshape] <- MatMul(w3)``, then
    ``Mul -> [Reshape] -> MatMul(w2)``, found by structure (scopes may carry no cell names).
    Kernel graphs may wrap the MatMuls in backend Casts; those are stepped over like views."""
    out = []
    for m in ir.nodes_by_op("Mul"):
        if facts.is_backward(m) or ir.is_recompute_copy(m):
            continue
        args = [a for a in ir.producers(m) if ir[a]["kind"] == "cnode"][:2]
        if len(args) != 2:
            continue
        for i in (0, 1):
            silu, silu_views = _up_to_compute(ir, facts, args[i])
            other, w3_views = _up_to_compute(ir, facts, args[1 - i])
            if silu is None or other is None or not _is_silu(ir, silu) or ir[other]["op"] not in MATMUL_OPS:
                continue
            silu_in = ir.producers(silu)[:1]
            if not silu_in:
                continue
            w1, w1_views = _up_to_compute(ir, facts, silu_in[0])
            if w1 is None or ir[w1]["op"] not in MATMUL_OPS or w1 == other:
                continue
            w2, w2_views = _down_to_matmul(ir, facts, m)
            if not w2:
                continue
            roles = {v: "w1" for v in silu_views + w1_views}
            roles.update({v: "w3" for v in w3_views})
            roles.update({v: "w2" for v in w2_views})
            out.append(FeedForward(m, silu, w1, other, w2, roles))
            break
    return out


def is_backend_cast(ir: IRFile, k: int) -> bool:
    """A Cast the backend inserted around a kernel lacking the dtype (CPU MatMul runs in Float32
    on Float16 models); it marks itself ``is_backend_cast: Bool(1)`` and is no op of the model."""
    d = ir[k]
    return d["op"] == "Cast" and (d.get("primitive_attrs") or {}).get("is_backend_cast") is True


def _up_to_compute(ir: IRFile, facts: RecomputeFacts, k: int) -> tuple[int | None, list[int]]:
    """``up_through_views`` that also steps over backend-inserted Casts (kernel graphs)."""
    passed: list[int] = []
    node: int | None = k
    for _ in range(64):
        node, views = facts.up_through_views(node)
        passed += views
        if node is None or not is_backend_cast(ir, node):
            return node, passed
        passed.append(node)
        first = ir.producers(node)[:1]
        node = first[0] if first else None
        if node is None:
            return None, passed
    return None, passed


def _is_silu(ir: IRFile, k: int) -> bool:
    d = ir[k]
    if d["op"] == "SiLU":
        return True
    if d["op"] != "Mul":
        return False
    ins = ir.producers(k)[:2]
    return len(ins) == 2 and any(ir[a].get("op") == "Sigmoid" and ir.producers(a)[:1] == [b]
                                 for a, b in ((ins[0], ins[1]), (ins[1], ins[0])))


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
            elif ir[c]["op"] == "Reshape" or is_backend_cast(ir, c):
                views.append(c)
                stack.append(c)
    return matmuls, views


class ReshapeBlocksSiluMulRecompute(_RecomputeRule):
    """What it finds:
    In a FeedForward ``w2(silu(w1(x)) * w3(x))``, SiLU or Mul is tagged for recompute but a
    Reshape on the path ``MatMul(w1/w3) -> [Reshape] -> SiLU -> Mul -> [Reshape] -> MatMul(w2)``
    is not recomputed, and a backward op reads the tensor through that Reshape. MindSpore then
    makes no copy of the SiLU/Mul, and nothing is saved. The FeedForward is found by its
    structure (MatMuls, SiLU or its CPU expansion ``x * Sigmoid(x)``, Mul), not by names, so
    function-compiled dumps with scopes like ``Default/SiLU-op1`` are covered. The finding is on
    the SiLU/Mul; related nodes: the blocking Reshape(s), the MatMuls and the backward reader.

    Stage files: as RC001 (``validate`` first); on CPU ``graph_build`` the SiLU is expanded and
    loses its attributes, so only the Mul can be reported there.

    Why it matters:
    With 3-D Linear inputs MindSpore inserts these Reshapes; the documented SiLU/Mul selective
    recompute then silently saves no memory (with 2-D inputs there is no Reshape and it works).

    How to fix:
    Add the Reshapes to ``select_recompute`` (MindFormers: ``feed_forward\\.w1\\.reshape``,
    ``feed_forward\\.w2\\.reshape``); the hint derives the exact keys from the scope and the
    cell attribute the primitive is called through (from the node's source trace; MindSpore
    merges identical untagged primitives and then prints one instance name for all of them, so
    that name is used only when the dump has no trace, and the hint then calls the key of an
    untagged primitive a guess) and gives the YAML.

    Example:
    ``%6 = PrimFunc_SiLU(%5) {instance name: silu} ... cnode_attrs: {recompute: Bool(1)}`` ->
    ``%7 = PrimFunc_Reshape(%6, ...)`` (no recompute) -> ``%8 = PrimFunc_Mul(%3, %7)``; backward
    ``Mul(%7, %21)`` reads ``%7``.
    """

    code = "RC002"
    name = "reshape-blocks-silu-mul-recompute"
    severity = "warning"
    summary = "SiLU/Mul recompute saves nothing because a Reshape next to it is not recomputed"
    INVALID = [ex.FFN_RESHAPE_BLOCKS]
    VALID = [ex.FFN_BEFORE_PASS, ex.FFN_2D_APPLIED]

    def check_decided(self, ir: IRFile, facts: RecomputeFacts):
        for ffn in find_feed_forwards(ir, facts):
            for k in dict.fromkeys((ffn.silu, ffn.gate_mul)):
                req = facts.request(k)
                if req is None or facts.applied(k):
                    continue
                readers = facts.backward_readers(k)
                blocking = list(dict.fromkeys(v for _, chain in readers for v in chain if ir[v]["op"] == "Reshape"))
                if blocking:
                    yield self._finding(ir, ffn, k, req, blocking, readers)

    def _finding(self, ir, ffn, k, req, blocking, readers):
        d = ir[k]
        keys, documented, guessed = [], False, False
        for node, role in [(k, None)] + [(b, ffn.roles.get(b, "w1")) for b in blocking]:
            nd = ir[node]
            key, guess = node_select_key(ir, node)
            guessed |= guess
            if key is None:
                documented = True
                key = DOCUMENTED_RESHAPE_KEYS[role] if role else DOCUMENTED_KEYS.get(nd["op"], r"feed_forward\.mul")
            keys.append(key)
        block_text = ", ".join(f"{ir.describe(b)} ({ir[b].get('scope', '')})" for b in blocking)
        readers_of_blocking = [r for r, chain in readers if any(b in chain for b in blocking)]
        reader_text = ", ".join(backward_text(ir, r) for r in readers_of_blocking)
        message = (f"{d['op']} is tagged for recompute but not recomputed: Reshape {block_text} on the "
                   f"FeedForward path is not recomputed and {reader_text} reads the tensor "
                   f"through it, so the activation is kept and the {d['op']} recompute saves nothing")
        hint = ("Recompute the Reshape(s) too: add "
                + ", ".join(f"'{x}'" for x in keys[1:]) + " to select_recompute")
        if documented:
            hint += (" (the scopes carry no cell names, e.g. a function compiled with ms.grad; these are "
                     "MindFormers' documented keys for the FeedForward, check them against your model)")
        elif guessed:
            hint += GUESS_NOTE
        hint += ":\n" + yaml_snippet(keys)
        related = [related_node(ir, b, f"blocking Reshape ({ffn.roles.get(b, 'w1')}), not recomputed") for b in blocking]
        related += [related_node(ir, ffn.w1, "MatMul w1"), related_node(ir, ffn.w3, "MatMul w3")]
        related += [related_node(ir, w, "MatMul w2") for w in ffn.w2]
        related += [related_node(ir, r, reader_note(ir, r, "backward reader of the saved tensor"))
                    for r in readers_of_blocking]
        identity = (d["op"], "/".join(cell_path(d.get("scope", ""))),
                    tuple("/".join(cell_path(ir[b].get("scope", ""))) for b in blocking))
        return staked(self.finding(ir, k, message, hint=hint, related=related, identity=identity,
                                   extra={"request": req, "select_recompute": keys[1:]}), stake(ir, k))


def cast_types(ir: IRFile, k: int) -> tuple[str | None, str | None]:
    """(source, destination) dtype of a Cast: from its types, else the dst type id argument."""
    d = ir[k]
    ins = d.get("in_types") or ()
    src = ins[0].dtype if ins else None
    out = d.get("out_type")
    dst = out.dtype if out is not None else None
    if dst is None:
        args = d.get("args") or ()
        if len(args) > 1 and isinstance(args[1], int):
            dst = TYPE_ID_NAMES.get(args[1])
    return src, dst


def costly_downcast(ir: IRFile, facts: "RecomputeFacts", k: int) -> tuple[str, str, int] | None:
    """(source dtype, target dtype, the node whose output the recompute keeps) when ``k`` is a
    Cast to a lower precision tagged for recompute whose high-precision input is not otherwise
    recomputed; None otherwise."""
    if ir[k].get("op") != "Cast" or facts.request(k) is None:
        return None
    src, dst = cast_types(ir, k)
    if src not in HIGH_PRECISION or dst not in LOW_PRECISION:
        return None
    first = ir.producers(k)[:1]
    source, _ = facts.up_through_views(first[0]) if first else (None, [])
    if source is None or ir[source]["kind"] != "cnode" or facts.applied(source):
        return None  # a parameter or a recomputed input: nothing extra is kept
    return src, dst, source


class RecomputeDowncast(_RecomputeRule):
    """What it finds:
    A Cast from Float32/Float64 to Float16/BFloat16 tagged for recompute whose high-precision
    input is an activation that is not itself recomputed. Dtypes come from the type line, else
    from the destination type id (``I64(42)`` Float16, ``I64(45)`` BFloat16). Up-casts, casts of
    parameters (always resident) and casts whose input is recomputed too are fine.

    Stage files: as RC001 (``validate`` first); files before the recompute pass are not judged.

    Why it matters:
    To recompute the down-cast, backward must keep its fp32 input instead of the fp16 output:
    memory goes up, the opposite of what recompute is for. Often the tag comes from a Cast
    primitive shared by the up-cast and the down-cast of an RMSNorm.

    How to fix:
    Recompute the up-cast (fp16 -> fp32) instead, give the down-cast its own primitive without
    the tag, or drop its select_recompute key.

    Example:
    ``%75 = PrimFunc_Cast(%74, I64(42)) {instance name: rcast} primitive_attrs: {recompute:
    Bool(1)}`` with types ``(<Tensor[Float32], (1, 16, 64)>) -> (<Tensor[Float16], ...>)``.
    """

    code = "RC003"
    name = "recompute-downcast"
    severity = "warning"
    summary = "A down-cast (fp32 -> fp16/bf16) is tagged for recompute, which raises memory"
    INVALID = [ex.CAST_DOWN_TAGGED]
    VALID = [ex.CAST_UP_TAGGED, ex.FFN_RESHAPE_BLOCKS]

    def check_decided(self, ir: IRFile, facts: RecomputeFacts):
        for k in ir.nodes_by_op("Cast"):
            costly = costly_downcast(ir, facts, k)
            if costly is None:
                continue
            src, dst, source = costly
            d = ir[k]
            state = "and was recomputed" if facts.applied(k) else "(no copy was made yet the tag asks for it)"
            in_t = (d.get("in_types") or (None,))[0]
            out_t = d.get("out_type")
            sizes = ""
            if in_t is not None and out_t is not None and in_t.nbytes and out_t.nbytes:
                sizes = f" ({in_t.nbytes} bytes instead of {out_t.nbytes})"
            message = (f"Cast {src} -> {dst} is tagged for recompute {state}: recomputing a down-cast "
                       f"keeps its {src} input {ir.describe(source)} alive for backward{sizes}, "
                       f"which raises memory")
            key, guessed = node_select_key(ir, k)
            hint = ("Recompute the up-cast before the norm instead, or give the down-cast its own "
                    "Cast primitive without the tag" + (f"; drop select_recompute key '{key}'" if key else "")
                    + (GUESS_NOTE if guessed else "") + ".")
            yield staked(self.finding(ir, k, message, hint=hint,
                                      related=[related_node(ir, source, f"{src} input kept for the recompute")],
                                      identity=(d["op"], "/".join(cell_path(d.get("scope", ""))), src, dst),
                                      extra={"src_dtype": src, "dst_dtype": dst, "applied": facts.applied(k)}),
                         stake(ir, k, downcast_cost))
