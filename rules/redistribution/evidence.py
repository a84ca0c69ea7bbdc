"""What a dump says about redistribution, for the PC rules; defines no rule of its own.

Chains: the connected run of ops tensor redistribution inserted between two compute ops
(``collect_chain``), what each step receives (``received_bytes``), what the run discards or undoes
(``simulate``), its backward transpose (``backward_transpose``) and how a step reads in a finding.

Layouts: how an op's output is sharded, from ``in_strategy``, and the one-op strategy change that
makes a producer and a consumer agree (``best_fix``). A layout is the tuple of shard counts per dim
of one tensor, as a strategy entry prints it: ``(1, 8)`` is a 2-D tensor whose columns are split 8
ways."""
from __future__ import annotations

from dataclasses import dataclass, field
from math import prod
from collections.abc import Iterator
from typing import NamedTuple

from irlint.accounts.received import ALLTOALL_OPS, GATHER_OPS, group_size, received_bytes
from irlint.findings import Related, scope_path
from irlint.model import IRFile, primal_attr
from irlint.rule import related_node
from irlint.read.values import TensorType
from irlint.units import human_bytes

COMM_OPS = GATHER_OPS | ALLTOALL_OPS | {"ReduceScatter"}
SLICE_OPS = frozenset({"StridedSlice", "Slice"})
# local ops tensor redistribution inserts around the communication
LOCAL_OPS = frozenset({"Split", "Concat", "Reshape", "Transpose", "TupleGetItem", "MakeTuple"}) | SLICE_OPS
CHAIN_OPS = COMM_OPS | LOCAL_OPS
MOVING_OPS = COMM_OPS | {"AllReduce"}   # what the byte counts cover
# forward collectives that complete partial sums (row-parallel MatMul, sequence-parallel
# out_strategy): the parallel scheme, whatever instance name they carry
SCHEME_REDUCE_OPS = frozenset({"ReduceScatter", "AllReduce"})
# ops that hand a weight through unchanged on its way to a consumer
WEIGHT_PATH_OPS = frozenset({"Load", "Depend", "_MirrorOperator", "_MirrorMiniStepOperator", "_VirtualDiv",
                             "Cast"})
QUIET_IN_RELATED = frozenset({"TupleGetItem", "MakeTuple"})


class Waste(NamedTuple):
    """Bytes a redistribution chain moves for nothing, and why."""

    kind: str
    nodes: tuple[int, ...]
    text: str
    alltoall_bytes: int | None = None    # what one AlltoAll would receive for the same re-layout


@dataclass
class Chain:
    """A run of redistribution ops from a producer to its consumers."""

    nodes: list[int]                      # redistribution ops in dump order
    producer: int | None = None
    consumers: list[tuple[int, int]] = field(default_factory=list)   # (consumer, argument position)
    entry: TensorType | None = None
    exit: TensorType | None = None
    moved: int = 0
    wastes: list[Waste] = field(default_factory=list)
    hint: str | None = None                # set where the fix is not a change of in_strategy
    # scheme collectives between the producer and the run (a sequence-parallel ReduceScatter, the
    # AllReduce of a row-parallel MatMul): the configuration needs them, they are never waste
    scheme: list[int] = field(default_factory=list)
    # bytes of each wasteful collective that the right scheme op would still move (a ReduceScatter
    # in place of an AllReduce whose result is sliced)
    kept_by_scheme: int = 0

    def span(self, ir: IRFile) -> list[int]:
        """The wasteful part of the run: from the first op a waste names to the last, in order."""
        named = {k for w in self.wastes for k in w.nodes}
        at = [i for i, k in enumerate(self.nodes) if k in named]
        return self.nodes[min(at):max(at) + 1] if at else []



MATMUL_OPS = frozenset({"MatMul", "BatchMatMul", "MatMulExt", "BatchMatMulExt"})
# every input of the same rank is read in the output's layout
ELEMENTWISE_OPS = frozenset({
    "Mul", "Add", "Sub", "RealDiv", "Div", "Maximum", "Minimum", "Pow", "SiLU", "ReLU", "GeLU", "FastGeLU",
    "Sigmoid", "Tanh", "Exp", "Neg", "Square", "Sqrt", "Rsqrt", "Cast", "Erf", "Log", "Abs", "AddN",
    "SquaredDifference", "LeakyReLU", "Swish",
})
# ops without a strategy that hand their input's layout on (a forward_op AllReduce completes a
# row-parallel MatMul's partial sums; the layout is the MatMul's)
LAYOUT_KEEPING_OPS = frozenset({"AllReduce", "Cast", "Depend", "Load", "_VirtualDiv", "RealDiv", "TupleGetItem"})
INSERTED_PREFIXES = ("redistribution_op", "forward_op", "grad", "parallel_optimizer", "_Mirror", "_Virtual")


def strategy(ir: IRFile, key: int | None):
    if key is None:
        return None
    data = ir[key]
    attrs = data.get("primitive_attrs") or {}
    found = attrs.get("in_strategy") or attrs.get("strategy")
    if found is None:   # 2.10 prints it a second time after cnode_primal_attrs
        found = (data.get("parallel_info") or {}).get("in_strategy")
    if found is None:   # sharded with a Layout: the split counts of its placements
        placed = _layout_placements(attrs.get("in_layout"))
        found = tuple(tuple(prod(size for size, _ in dim) for dim in inp) for inp in placed) if placed else None
    return found if _well_formed(found) else None


# A placement says, per dim of one tensor, which device axes split it: ((size, rank stride), ...)
# per dim, () for a dim that is not split. Two ops with the same split counts can place the blocks
# on different ranks (a plain tuple strategy maps dim 0 to the outermost device axis, a Layout
# names its axes): then the tensor is re-laid although the local shape does not change.
def placements(ir: IRFile, key: int | None) -> tuple | None:
    """Per input of ``key``: its placement, from ``in_layout`` or a tuple strategy."""
    if key is None or ir[key]["kind"] != "cnode":
        return None
    placed = _layout_placements((ir[key].get("primitive_attrs") or {}).get("in_layout"))
    if placed:
        return placed
    strat = strategy(ir, key)
    if strat is None:
        return None
    return tuple(tuple(((n, prod(s[i + 1:])),) if n > 1 else () for i, n in enumerate(s)) for s in strat)


def _layout_placements(value) -> tuple | None:
    if not (isinstance(value, tuple) and value and all(isinstance(v, dict) for v in value)):
        return None
    out = []
    for layout in value:
        dev, tmap = layout.get("device_matrix"), layout.get("tensor_map")
        if not (isinstance(dev, tuple) and isinstance(tmap, tuple) and all(as_int(d) for d in dev)):
            return None
        n = len(dev)
        dims = []
        for entry in tmap:
            axes = entry if isinstance(entry, tuple) else (entry,)
            if not all(as_int(a) is not None and -1 <= a < n for a in axes):
                return None
            dims.append(tuple((dev[n - 1 - a], prod(dev[n - a:])) for a in axes if a >= 0 and dev[n - 1 - a] > 1))
        out.append(tuple(dims))
    return tuple(out)


def layout_expression(ir: IRFile, key: int, pos: int = 0) -> str | None:
    """How the user wrote input ``pos``'s Layout: ``layout("tp", "dp")`` of ``Layout((2, 4), ("dp", "tp"))``."""
    value = (ir[key].get("primitive_attrs") or {}).get("in_layout")
    if not (isinstance(value, tuple) and pos < len(value) and isinstance(value[pos], dict)):
        return None
    layout = value[pos]
    dev, tmap, names = layout.get("device_matrix"), layout.get("tensor_map"), layout.get("alias_name")
    if not (isinstance(dev, tuple) and isinstance(tmap, tuple) and isinstance(names, tuple) and len(names) == len(dev)):
        return None
    n = len(dev)

    def axis(a):
        return '"None"' if a == -1 else f'"{names[n - 1 - a]}"'
    dims = [f"({', '.join(axis(a) for a in e)})" if isinstance(e, tuple) else axis(e) for e in tmap]
    return (f"layout({', '.join(dims)}) of Layout({fmt(dev)}, ({', '.join(f'{chr(34)}{x}{chr(34)}' for x in names)}))")


def output_placement(ir: IRFile, key: int) -> tuple | None:
    """The placement of an element-wise or row-wise op's output: its first input's."""
    placed = placements(ir, key)
    if not placed or ir[key]["op"] not in ELEMENTWISE_OPS | {"Softmax", "RmsNorm", "LayerNorm", "Dropout"}:
        return None
    return placed[0]


def _well_formed(strat) -> bool:
    """A tuple of per-input tuples of ints: anything else (a dump we have not seen) is no strategy."""
    return isinstance(strat, tuple) and all(
        isinstance(s, tuple) and all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in s)
        for s in strat)


def transposes(ir: IRFile, key: int) -> tuple[bool, bool]:
    args = ir[key].get("args") or ()
    attrs = ir[key].get("primitive_attrs") or {}
    ta = args[2] if len(args) > 3 and isinstance(args[2], bool) else bool(attrs.get("transpose_a", False))
    tb = args[3] if len(args) > 3 and isinstance(args[3], bool) else bool(attrs.get("transpose_b", False))
    return bool(ta), bool(tb)


def _matmul_dims(strat, ta: bool, tb: bool) -> tuple[tuple, int, int, int]:
    """(batch dims, rows, contracted, cols) of a MatMul strategy."""
    x, w = tuple(strat[0]), tuple(strat[1])
    rows, k = (x[-1], x[-2]) if ta else (x[-2], x[-1])
    cols = w[-2] if tb else w[-1]
    return x[:-2], rows, k, cols


def _matmul_strategy(batch: tuple, rows: int, k: int, cols: int, ta: bool, tb: bool, w_rank: int) -> tuple:
    x = batch + ((k, rows) if ta else (rows, k))
    w2 = (cols, k) if tb else (k, cols)
    w = batch[len(batch) - (w_rank - 2):] + w2 if w_rank > 2 else w2
    return (x, w)


def output_layout(ir: IRFile, key: int, depth: int = 0):
    """How ``key``'s output is sharded, from its strategy, when the op's rule is known."""
    data = ir[key]
    if data["kind"] != "cnode":
        return None
    attrs = data.get("primitive_attrs") or {}
    if attrs.get("out_strategy"):
        return tuple(attrs["out_strategy"][0])
    strat = strategy(ir, key)
    if strat is None:
        inputs = [p for p in ir.producers(key) if ir[p]["kind"] != "const"]
        if inputs and depth < 6 and data["op"] in LAYOUT_KEEPING_OPS:
            return output_layout(ir, inputs[0], depth + 1)
        return None
    if data["op"] in MATMUL_OPS and len(strat) >= 2:
        batch, rows, _, cols = _matmul_dims(strat, *transposes(ir, key))
        return batch + (rows, cols)
    if data["op"] == "Transpose":
        perm = _perm(ir, key)
        return tuple(strat[0][p] for p in perm) if perm and len(perm) == len(strat[0]) else None
    if not strat or not isinstance(strat[0], tuple):
        return None
    return tuple(strat[0])


def _perm(ir: IRFile, key: int):
    args = ir[key].get("args") or ()
    perm = args[1] if len(args) > 1 else (ir[key].get("primitive_attrs") or {}).get("perm")
    if isinstance(perm, tuple) and all(isinstance(v, int) and not isinstance(v, bool) for v in perm):
        return perm
    return None


def devices(ir: IRFile) -> int:
    """The most devices any strategy of the file uses: the bound a suggested strategy keeps to."""
    index = ir.__dict__.get("_strategy_devices")
    if index is None:
        index = 1
        for key in ir.cnodes():
            strat = strategy(ir, key)
            if not strat:
                continue
            used = _devices_of(ir, key, strat)
            index = max(index, used or 1)
        ir.__dict__["_strategy_devices"] = index
    return index


def _devices_of(ir: IRFile, key: int, strat) -> int | None:
    try:
        if ir[key]["op"] in MATMUL_OPS and len(strat) >= 2:
            batch, rows, k, cols = _matmul_dims(strat, *transposes(ir, key))
            return prod(batch) * rows * k * cols
        return max(prod(s) for s in strat if isinstance(s, tuple)) if strat else None
    except (TypeError, IndexError, ValueError):
        return None


# --- neighbours across inserted ops ----------------------------------------------------------------
def _inserted(ir: IRFile, key: int) -> bool:
    """An op the parallel pass put on the edge (redistribution, the AllReduce of a row-parallel
    MatMul, Load/Depend): it carries no strategy of its own."""
    data = ir[key]
    return data["kind"] == "cnode" and strategy(ir, key) is None and not ir.is_backward(key)


def compute_inputs(ir: IRFile, key: int) -> list[tuple[int, int | None, bool]]:
    """(input position, the op with a strategy that produces it or None for a parameter or graph
    input, whether a rank-changing Reshape lies on the way)."""
    out = []
    for pos, src in enumerate(ir.producers(key)):
        if ir[src]["kind"] == "const":
            continue
        node, reshaped, seen = src, False, set()
        while node not in seen and ir[node]["kind"] == "cnode" and _inserted(ir, node):
            seen.add(node)
            if ir[node]["op"] == "Reshape" and _changes_rank(ir, node):
                reshaped = True
            ins = [p for p in ir.producers(node) if ir[p]["kind"] != "const"]
            if not ins:
                break
            node = ins[0]
        out.append((pos, node if ir[node]["kind"] == "cnode" and strategy(ir, node) is not None else None,
                    reshaped))
    return out


def compute_consumers(ir: IRFile, key: int) -> list[tuple[int, int, bool]]:
    """(consumer with a strategy, its input position, rank-changing Reshape on the way) for the
    forward users of ``key``'s output, across inserted ops."""
    out, seen = [], {key}
    stack = [(key, False)]
    while stack:
        node, reshaped = stack.pop()
        for user in ir.consumers(node):
            if user in seen or ir.is_backward(user) or ir[user]["kind"] != "cnode":
                continue
            seen.add(user)
            if strategy(ir, user) is not None:
                for pos, src in enumerate(ir.producers(user)):
                    if src == node:
                        out.append((user, pos, reshaped))
            elif ir[user]["op"] in ("MakeTuple", "TupleGetItem", "UpdateState", "Return"):
                if ir[user]["op"] in ("MakeTuple", "TupleGetItem") and _tuple_of_split(ir, user):
                    stack.append((user, reshaped))
            else:
                stack.append((user, reshaped or (ir[user]["op"] == "Reshape" and _changes_rank(ir, user))))
    return out


def _tuple_of_split(ir: IRFile, key: int) -> bool:
    """Glue of a redistribution Split/Concat, not a tuple the model builds."""
    return any(ir[p].get("op") in ("Split", "TupleGetItem") or _inserted(ir, p) for p in ir.producers(key)
               if ir[p]["kind"] == "cnode")


def _changes_rank(ir: IRFile, key: int) -> bool:
    src = (ir[key].get("in_types") or (None,))[0]
    dst = ir[key].get("out_type")
    return not (src and dst and src.shape is not None and dst.shape is not None and len(src.shape) == len(dst.shape))


# --- the one-op change that removes a chain -------------------------------------------------------
def reading_as_produced(ir: IRFile, consumer: int, pos: int, layout: tuple):
    """The consumer's strategy with input ``pos`` read in ``layout``; a MatMul's other operand
    follows the contracted dim, an element-wise op reads every input of that rank alike."""
    strat = strategy(ir, consumer)
    if strat is None or pos >= len(strat) or len(strat[pos]) != len(layout):
        return None
    new = [tuple(s) for s in strat]
    op = ir[consumer]["op"]
    if op in MATMUL_OPS and len(new) >= 2 and pos in (0, 1):
        ta, tb = transposes(ir, consumer)
        x, w = list(new[0]), list(new[1])
        if pos == 0:
            x = list(layout)
            k = x[-2] if ta else x[-1]
            wk, wc = (-1, -2) if tb else (-2, -1)
            w[wk], w[wc] = k, 1
        else:
            w = list(layout)
            k = w[-1] if tb else w[-2]
            xk, xr = (-2, -1) if ta else (-1, -2)
            x[xk], x[xr] = k, 1
        # batch dims are split alike on both operands
        nb = min(len(x), len(w)) - 2
        if nb > 0:
            batch = x[len(x) - 2 - nb:-2] if pos == 0 else w[len(w) - 2 - nb:-2]
            x[len(x) - 2 - nb:-2], w[len(w) - 2 - nb:-2] = batch, batch
        new[0], new[1] = tuple(x), tuple(w)
    elif op in ELEMENTWISE_OPS:
        new = [tuple(layout) if len(s) == len(layout) else s for s in new]
    else:
        new[pos] = tuple(layout)
    return tuple(new)


def producing(ir: IRFile, producer: int, layout: tuple):
    """The producer's strategy that outputs ``layout``, for MatMuls, element-wise ops and Transpose."""
    strat = strategy(ir, producer)
    if strat is None:
        return None
    op = ir[producer]["op"]
    if op in MATMUL_OPS and len(strat) >= 2 and len(layout) >= 2:
        ta, tb = transposes(ir, producer)
        batch, _, k, _ = _matmul_dims(strat, ta, tb)
        if len(batch) != len(layout) - 2:
            return None
        rows, cols = layout[-2], layout[-1]
        if prod(layout) * k > devices(ir):
            k = 1
        return _matmul_strategy(tuple(layout[:-2]), rows, k, cols, ta, tb, len(strat[1]))
    if op in ELEMENTWISE_OPS:
        if not any(len(s) == len(layout) for s in strat):
            return None
        return tuple(tuple(layout) if len(s) == len(layout) else tuple(s) for s in strat)
    if op == "Transpose":
        perm = _perm(ir, producer)
        if not perm or len(perm) != len(layout):
            return None
        src = [1] * len(perm)
        for j, p in enumerate(perm):
            src[p] = layout[j]
        return (tuple(src),)
    return None


def row_parallel(ir: IRFile, matmul: int, factor: int):
    """A MatMul's strategy with ``factor`` moved onto the contracted dim of both operands (and off
    the weight's output columns): Megatron's row-parallel form of a column-parallel layer."""
    strat = strategy(ir, matmul)
    if strat is None or len(strat) < 2 or ir[matmul]["op"] not in MATMUL_OPS:
        return None
    ta, tb = transposes(ir, matmul)
    batch, rows, k, cols = _matmul_dims(strat, ta, tb)
    cols = cols // factor if cols % factor == 0 else 1
    return _matmul_strategy(batch, rows, k * factor, cols, ta, tb, len(strat[1]))


def mismatches(ir: IRFile, keys: tuple[int, ...], changed: dict[int, tuple]) -> int:
    """Layout disagreements on the edges of ``keys`` (into and out of each), with the strategies
    in ``changed`` replacing the dump's. Parameters and graph inputs take any layout; an edge
    across a rank-changing Reshape is not compared."""
    def out_layout(k):
        if k in changed:
            return _layout_under(ir, k, changed[k])
        return output_layout(ir, k)

    def wanted(k, pos):
        strat = changed.get(k) or strategy(ir, k)
        return tuple(strat[pos]) if strat and pos < len(strat) and isinstance(strat[pos], tuple) else None

    edges = set()
    for k in keys:
        for pos, src, reshaped in compute_inputs(ir, k):
            if src is not None and not reshaped:
                edges.add((src, k, pos))
        for user, pos, reshaped in compute_consumers(ir, k):
            if not reshaped:
                edges.add((k, user, pos))
    bad = 0
    for src, dst, pos in edges:
        has, wants = out_layout(src), wanted(dst, pos)
        if has is not None and wants is not None and len(has) == len(wants) and has != wants:
            bad += 1
    return bad


def _layout_under(ir: IRFile, key: int, strat) -> tuple | None:
    op = ir[key]["op"]
    if op in MATMUL_OPS and len(strat) >= 2:
        batch, rows, _, cols = _matmul_dims(strat, *transposes(ir, key))
        return batch + (rows, cols)
    if op == "Transpose":
        perm = _perm(ir, key)
        return tuple(strat[0][p] for p in perm) if perm else None
    return tuple(strat[0]) if strat else None


def best_fix(ir: IRFile, producer: int, consumer: int, pos: int):
    """The single strategy change that makes ``producer``'s output and ``consumer``'s input ``pos``
    agree while leaving the fewest disagreements around the two ops: (op, strategy, disagreements
    left), or None when neither side's layout rule is known."""
    has, wants = output_layout(ir, producer), None
    strat = strategy(ir, consumer)
    if strat and pos < len(strat):
        wants = tuple(strat[pos])
    if has is None or wants is None or len(has) != len(wants) or has == wants:
        return None
    candidates = []
    as_read = reading_as_produced(ir, consumer, pos, has)
    if as_read is not None:
        candidates.append((consumer, as_read))
    as_wanted = producing(ir, producer, wants)
    if as_wanted is not None:
        candidates.append((producer, as_wanted))
    scored = [(mismatches(ir, (producer, consumer), {op: s}), i, op, s) for i, (op, s) in enumerate(candidates)]
    if not scored:
        return None
    left, _, op, s = min(scored)
    return op, s, left


# --- wording ---------------------------------------------------------------------------------------
def short_who(ir: IRFile, key: int | None) -> str:
    """``who`` for a headline: the cell without its class (``MatMul (w2)``)."""
    from irlint.findings import model_names

    return model_names(who(ir, key))


def who(ir: IRFile, key: int | None) -> str:
    """An op as the user named it: the op, its own instance name when the model gave one, the cell."""
    if key is None:
        return "?"
    data = ir[key]
    scope = scope_path(data.get("scope", ""))
    cell = scope.rsplit("/", 1)[-1] if scope else ""
    op = data.get("op", data["kind"])
    inst = data.get("instance") or ""
    named = inst and inst.lower() != str(op).lower() and not inst.startswith(INSERTED_PREFIXES) \
        and not inst.isdigit()
    label = f"{op} {inst}" if named else str(op)
    return f"{label} ({cell})" if cell else label


def note(ir: IRFile, key: int, text: str) -> Related:
    return related_node(ir, key, text)


size = human_bytes   # the one byte formatter of every report (irlint.units)


def fmt(value) -> str:
    if value is None:
        return "?"
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(fmt(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    return str(value)


def global_output(ir: IRFile, key: int) -> tuple | None:
    """The whole output shape: ``origin_output_shape`` (MatMuls), else the local shape times the layout."""
    origin = primal_attr(ir[key], "origin_output_shape")
    if isinstance(origin, tuple) and all(isinstance(d, int) for d in origin):
        return origin
    out, layout = ir[key].get("out_type"), output_layout(ir, key)
    if out is None or out.shape is None or layout is None or len(layout) != len(out.shape):
        return None
    return tuple(d * n for d, n in zip(out.shape, layout))


def all_reduce_note(ir: IRFile, key: int, new) -> str:
    """What a MatMul strategy with a split contracted dim costs: one AllReduce of its output."""
    if ir[key]["op"] not in MATMUL_OPS or new is None or len(new) < 2:
        return ""
    batch, rows, k, cols = _matmul_dims(new, *transposes(ir, key))
    whole, out = global_output(ir, key), ir[key].get("out_type")
    if k <= 1 or whole is None or out is None or out.nbytes is None or len(whole) != len(batch) + 2:
        return ""
    local = tuple(d // n for d, n in zip(whole, batch + (rows, cols)))
    nbytes = out.nbytes // max(prod(out.shape), 1) * prod(local)
    ring = 2 * (k - 1) * nbytes // k
    return (f"; its partial sums then take one AllReduce of the {out.dtype}{local} output over {k} ranks "
            f"(ring: {size(ring)} per rank)")


def splits_experts(ir: IRFile, key: int | None) -> bool:
    """A batched MatMul whose weight operand (a parameter) is split on its leading, expert dim."""
    if key is None or ir[key]["op"] not in MATMUL_OPS:
        return False
    strat = strategy(ir, key)
    if not (strat and len(strat) >= 2 and len(strat[1]) >= 3 and strat[1][0] > 1):
        return False
    inputs = data_inputs(ir, key)   # attention's batched MatMuls split their batch dim on activations
    return len(inputs) >= 2 and is_weight(ir, inputs[1])


def near_experts(ir: IRFile, key: int | None, downstream: bool, hops: int = 6) -> int | None:
    """The expert-splitting batched MatMul ``key`` is, or reaches within ``hops`` forward ops
    (its readers when ``downstream``, else its inputs): MoE dispatch reaches the experts through
    Transposes and Reshapes, combine leaves them the same way."""
    seen, frontier = set(), [key] if key is not None else []
    for _ in range(hops + 1):
        nxt = []
        for k in frontier:
            if k in seen or ir[k]["kind"] != "cnode" or ir.is_backward(k):
                continue
            seen.add(k)
            if splits_experts(ir, k):
                return k
            nxt += ir.consumers(k) if downstream else data_inputs(ir, k)
        frontier = nxt
    return None


# --- chain discovery ------------------------------------------------------------------------------
def in_chain(ir: IRFile, key: int) -> bool:
    data = ir[key]
    if data["kind"] != "cnode" or data["op"] not in CHAIN_OPS or ir.is_backward(key):
        return False
    if data["op"] in SCHEME_REDUCE_OPS:   # redistribution moves data, it never sums partial results
        return False
    if strategy(ir, key) is not None:   # an op of the model with its own shard strategy
        return False
    if data["op"] == "MakeTuple":   # only the tuple a Concat reassembles
        users = ir.consumers(key)
        return bool(users) and all(ir[u]["op"] == "Concat" for u in users)
    if data["op"] == "TupleGetItem":
        src = ir.producers(key)[:1]
        return bool(src) and ir[src[0]].get("op") == "Split"
    return True


def collect_chain(ir: IRFile, start: int) -> Chain:
    """The connected run of redistribution ops around ``start``, its producer and consumers."""
    nodes = {start}
    stack = [start]
    while stack:
        key = stack.pop()
        for nxt in data_inputs(ir, key) + ir.consumers(key):
            if nxt not in nodes and in_chain(ir, nxt):
                nodes.add(nxt)
                stack.append(nxt)
    ordered = sorted(nodes, key=lambda k: ir[k].get("line", 0))
    chain = Chain(nodes=ordered)
    for key in ordered:
        for pos, src in enumerate(ir.producers(key)):
            if src not in nodes and ir[src]["kind"] != "const" and pos == 0:
                chain.producer = chain.producer if chain.producer is not None else src
                if chain.entry is None:
                    types = ir[key].get("in_types") or ()
                    chain.entry = types[0] if types else None
        for user in ir.consumers(key):
            if user in nodes or ir.is_backward(user) or _hands_to_backward(ir, user):
                continue
            chain.exit = chain.exit or ir[key].get("out_type")
            for p, src in enumerate(ir.producers(user)):
                if src == key and (user, p) not in chain.consumers:
                    chain.consumers.append((user, p))
    # the op whose strategy made the tensor sits behind the scheme collectives that complete it
    while chain.producer is not None and is_scheme_reduce(ir, chain.producer):
        inputs = data_inputs(ir, chain.producer)
        if not inputs:
            break
        chain.scheme.insert(0, chain.producer)
        chain.producer = inputs[0]
    return chain


def _hands_to_backward(ir: IRFile, user: int) -> bool:
    """A user that only keeps the activation for the backward pass: the Partial of a lazy_inline
    backward half, the graph's Return, or a tuple of outputs (the ▸ forward half returns them)."""
    op = ir[user].get("op") if ir[user]["kind"] == "cnode" else ir[user]["kind"]
    if op in ("Partial", "return", "UpdateState"):
        return True
    return op == "MakeTuple" and all(ir[u]["kind"] == "return" or ir[u].get("op") == "Partial"
                                     for u in ir.consumers(user)) and bool(ir.consumers(user))


def is_scheme_reduce(ir: IRFile, key: int) -> bool:
    data = ir[key]
    return (data["kind"] == "cnode" and data["op"] in SCHEME_REDUCE_OPS and not ir.is_backward(key)
            and strategy(ir, key) is None)


def data_inputs(ir: IRFile, key: int) -> list[int]:
    return [p for p in ir.producers(key) if ir[p]["kind"] != "const"]


def _first_inputs(ir: IRFile, key: int) -> Iterator[int]:
    """``key``, its first data input, that one's first data input ... (until a node without
    inputs, or a cycle)."""
    seen = set()
    while key not in seen:
        seen.add(key)
        yield key
        inputs = data_inputs(ir, key)
        if not inputs:
            return
        key = inputs[0]


def is_weight(ir: IRFile, key: int) -> bool:
    """Optimizer-parallel gathers read a parameter (through Load / mirror ops)."""
    for k in _first_inputs(ir, key):
        data = ir[k]
        if data["kind"] == "param":
            return True
        if data["kind"] != "cnode" or data["op"] not in WEIGHT_PATH_OPS:
            return False
    return False


def touches_backward(ir: IRFile, chain: Chain) -> bool:
    return any(ir.is_backward(k) for k in chain.nodes) or ir.is_backward(chain.producer)


def allreduce_then_slice(ir: IRFile, key: int) -> Chain | None:
    """A forward AllReduce whose every user keeps only a slice of the reduced tensor: a
    ReduceScatter would hand each rank its part for half the bytes (MindSpore emits one when the
    producer MatMul has an ``out_strategy``)."""
    if ir.is_backward(key) or (ir[key].get("primitive_attrs") or {}).get("op", "sum") != "sum":
        return None
    n = group_size(ir, key)
    users = [u for u in ir.consumers(key) if not ir.is_backward(u)]
    if not n or n < 2 or not users:
        return None
    nodes, consumers, kept = [key], [], None
    for user in users:
        node, path = user, []
        while in_chain(ir, node) and ir[node]["op"] == "Reshape" and len(ir.consumers(node)) == 1:
            path.append(node)
            node = ir.consumers(node)[0]
        if not in_chain(ir, node) or ir[node]["op"] not in SLICE_OPS:
            return None     # someone reads the whole reduced tensor
        factor = 1
        for _, f in _shrunk_dims(ir, node):
            factor *= f
        if factor < 2:
            return None
        kept = factor if kept is None else min(kept, factor)
        nodes += path + [node]
        for c in ir.consumers(node):
            if not ir.is_backward(c):
                consumers += [(c, p) for p, src in enumerate(ir.producers(c)) if src == node]
    inputs = data_inputs(ir, key)
    if not inputs or not consumers:
        return None
    nodes.sort(key=lambda k: ir[k].get("line", 0))
    last = nodes[-1]
    chain = Chain(nodes=nodes, producer=inputs[0], consumers=consumers, entry=first_in(ir, key),
                  exit=ir[last].get("out_type"), moved=received_bytes(ir, key) or 0)
    scatter = (chain.entry.nbytes * (n - 1) // n) if chain.entry is not None and chain.entry.nbytes else None
    chain.kept_by_scheme = scatter or 0
    chain.wastes.append(Waste("allreduce-then-slice", (key, last),
                              f"every rank reduces the whole tensor and keeps 1/{kept} of it; a ReduceScatter "
                              f"over the same {n} ranks would receive {size(scatter)} instead of "
                              f"{size(chain.moved)}"))
    consumer, pos = consumers[0]
    producer = strategy_source(ir, inputs[0])
    c_strat = strategy(ir, consumer)
    wants = tuple(c_strat[pos]) if c_strat and pos < len(c_strat) else None
    if producer is not None and wants is not None and ir[producer]["op"] in MATMUL_OPS:
        chain.hint = (f"{who(ir, consumer)} (in_strategy {fmt(c_strat)}) reads input {pos} as layout {fmt(wants)}; "
                      f"give {who(ir, producer)} (in_strategy {fmt(strategy(ir, producer))}) out_strategy "
                      f"{fmt((wants,))}: MindSpore then reduces with one ReduceScatter into that layout, and the "
                      f"AllReduce, the slice and their backward transpose go (the sequence-parallel form)")
    return chain


def strategy_source(ir: IRFile, key: int) -> int | None:
    """The op with a strategy whose output reaches ``key`` unchanged."""
    for k in _first_inputs(ir, key):
        if ir[k]["kind"] != "cnode":
            return None
        if strategy(ir, k) is not None:
            return k
    return None


# --- what the chain does -------------------------------------------------------------------------
def simulate(ir: IRFile, chain: Chain) -> None:
    """Walk the chain in order, tracking which dims hold gathered data, and record waste."""
    gathered: dict[int, tuple[int, int]] = {}      # dim -> (factor, gather node)
    members = set(chain.nodes)
    undone: set[int] = set()
    for key in chain.nodes:
        data = ir[key]
        op = data["op"]
        chain.moved += received_bytes(ir, key) or 0
        if op in GATHER_OPS:
            factor = as_int((data.get("primitive_attrs") or {}).get("rank_size")) or _growth(ir, key, 0)
            if factor and factor > 1:
                old = gathered.get(0, (1, key))
                gathered[0] = (old[0] * factor, key)
        elif op in ALLTOALL_OPS:
            first = _alltoall_undone(ir, members, key)
            if first is not None and first not in undone:
                undone.update((first, key))
                between = [k for k in members if ir[k]["line"] > ir[first]["line"] and
                           ir[k]["line"] < ir[key]["line"] and ir[k]["op"] in ("Reshape", "Transpose")]
                around = f" around {', '.join(step_text(ir, k) for k in between)}" if between else ""
                chain.wastes.append(Waste("alltoall-undone", (first, key),
                                          f"{step_text(ir, key)} undoes {step_text(ir, first)}{around}"))
        elif op == "Split":
            axis, outputs = split_args(ir, key)
            used = used_split_outputs(ir, key)
            concat = _reassembling_concat(ir, key, outputs)
            if concat is not None:
                c_axis = _norm_dim(axis_of(ir, concat), _rank(ir, concat, out=True))
                if axis in gathered and c_axis is not None and c_axis != axis:
                    gathered[c_axis] = gathered.pop(axis)
                elif c_axis == axis:
                    chain.wastes.append(Waste("split-concat-round-trip", (key, concat),
                                              f"Split and Concat along axis {axis} only reassemble the tensor"))
            elif outputs and len(used) < outputs:
                _discard(ir, chain, gathered, key, axis, outputs // max(len(used), 1))
        elif op in SLICE_OPS:
            dims = _shrunk_dims(ir, key)
            for dim, factor in dims:
                _discard(ir, chain, gathered, key, dim, factor)


def _alltoall_undone(ir: IRFile, members: set[int], key: int) -> int | None:
    """The AlltoAll of the run that ``key`` reverses: walking back over its input through
    Reshapes and Transposes that keep both moved dims whole, an AlltoAll on the same group with
    the same split_count whose split_dim/concat_dim are ``key``'s concat_dim/split_dim. Any other
    op on the way (compute never belongs to a run) changes the layout, so nothing is undone."""
    split, concat, count, group = _alltoall_dims(ir, key)
    if split is None or concat is None:
        return None
    node = key
    while True:
        inputs = data_inputs(ir, node)[:1]
        if not inputs or inputs[0] not in members:
            return None
        node = inputs[0]
        op = ir[node]["op"]
        if op in ALLTOALL_OPS:
            s, c, n, g = _alltoall_dims(ir, node)
            return node if (s, c, n, g) == (concat, split, count, group) else None
        if op == "Reshape":
            back = _reshape_kept_dims(ir, node)
        elif op == "Transpose":
            perm = _perm(ir, node)
            back = dict(enumerate(perm)) if perm else {}
        else:
            return None
        if split not in back or concat not in back:
            return None
        split, concat = back[split], back[concat]


def _alltoall_dims(ir: IRFile, key: int):
    attrs = ir[key].get("primitive_attrs") or {}
    rank = _rank(ir, key)
    return (_norm_dim(as_int(attrs.get("split_dim")), rank), _norm_dim(as_int(attrs.get("concat_dim")), rank),
            as_int(attrs.get("split_count")), attrs.get("group"))


def _reshape_kept_dims(ir: IRFile, key: int) -> dict[int, int]:
    """Output dim -> input dim for the dims a Reshape keeps whole (same size, same number of
    elements before them); the others are merged or split."""
    src = (ir[key].get("in_types") or (None,))[0]
    dst = ir[key].get("out_type")
    if not src or not dst or src.shape is None or dst.shape is None:
        return {}
    before_in, p = {}, 1
    for i, n in enumerate(src.shape):
        before_in.setdefault((p, n), i)
        p *= n or 0
    kept, p = {}, 1
    for j, n in enumerate(dst.shape):
        if n and n > 1 and (p, n) in before_in:
            kept[j] = before_in[(p, n)]
        p *= n or 0
    return kept




def _discard(ir: IRFile, chain: Chain, gathered: dict, key: int, dim: int | None, factor: int) -> None:
    if not gathered or factor <= 1:
        return
    if dim in gathered and gathered[dim][0] == factor:
        _, g = gathered.pop(dim)
        chain.wastes.append(Waste("gather-resplit", (g, key),
                                  f"{step_text(ir, key)} re-splits along dim {dim} what {step_text(ir, g)} "
                                  f"gathered along it, keeping 1/{factor} of it"))
        return
    g = max(v[1] for v in gathered.values())
    text = f"{ir[g]['op']} then {ir[key]['op']} keeps 1/{factor} along dim {dim}"
    out = ir[key].get("out_type")
    if dim not in gathered and out is not None and out.nbytes:
        # a change of split dim: one AlltoAll sends each rank only the pieces it keeps
        alltoall = out.nbytes * (factor - 1) // factor
        text += f"; one AlltoAll would make the same re-layout receiving {size(alltoall)}"
        chain.wastes.append(Waste("gather-then-slice", (g, key), text, alltoall))
        return
    chain.wastes.append(Waste("gather-then-slice", (g, key), text))


def _growth(ir: IRFile, key: int, dim: int) -> int | None:
    src = (ir[key].get("in_types") or (None,))[0]
    dst = ir[key].get("out_type")
    if not src or not dst or not src.shape or not dst.shape or len(src.shape) <= dim or not src.shape[dim]:
        return None
    return dst.shape[dim] // src.shape[dim]


def _shrunk_dims(ir: IRFile, key: int) -> list[tuple[int, int]]:
    src = (ir[key].get("in_types") or (None,))[0]
    dst = ir[key].get("out_type")
    if not src or not dst or not src.shape or not dst.shape or len(src.shape) != len(dst.shape):
        return []
    return [(i, a // b) for i, (a, b) in enumerate(zip(src.shape, dst.shape)) if b and a > b]


def split_args(ir: IRFile, key: int) -> tuple[int | None, int | None]:
    args = ir[key].get("args") or ()
    attrs = ir[key].get("primitive_attrs") or {}
    axis = as_int(args[1]) if len(args) > 1 else as_int(attrs.get("axis"))
    outputs = as_int(args[2]) if len(args) > 2 else as_int(attrs.get("output_num"))
    return _norm_dim(axis, _rank(ir, key)), outputs


def _rank(ir: IRFile, key: int, out: bool = False) -> int | None:
    t = ir[key].get("out_type") if out else (ir[key].get("in_types") or (None,))[0]
    return len(t.shape) if t is not None and t.shape is not None else None


def _norm_dim(dim: int | None, rank: int | None) -> int | None:
    """-1 and rank-1 name the same axis."""
    return dim + rank if dim is not None and dim < 0 and rank else dim


def axis_of(ir: IRFile, key: int) -> int | None:
    args = ir[key].get("args") or ()
    return as_int(args[1]) if len(args) > 1 else as_int((ir[key].get("primitive_attrs") or {}).get("axis"))


def used_split_outputs(ir: IRFile, key: int) -> set[int]:
    used = set()
    for user in ir.consumers(key):
        if ir[user]["op"] == "TupleGetItem" and ir.consumers(user):
            args = ir[user].get("args") or ()
            if len(args) > 1 and as_int(args[1]) is not None:
                used.add(as_int(args[1]))
        else:
            return set(range(split_args(ir, key)[1] or 0))
    return used


def _reassembling_concat(ir: IRFile, split: int, outputs: int | None) -> int | None:
    """The Concat that takes every piece of ``split``, in order, through one MakeTuple."""
    items = [u for u in ir.consumers(split) if ir[u]["op"] == "TupleGetItem"]
    tuples = {t for i in items for t in ir.consumers(i) if ir[t]["op"] == "MakeTuple"}
    if len(tuples) != 1:
        return None
    tup = tuples.pop()
    order = []
    for item in ir.producers(tup):   # every piece, straight from the Split, in order
        args = ir[item].get("args") or ()
        if ir[item]["op"] != "TupleGetItem" or ir.producers(item)[:1] != [split] or len(args) < 2:
            return None
        order.append(as_int(args[1]))
    if outputs is None or order != list(range(outputs)):
        return None
    concats = [c for c in ir.consumers(tup) if ir[c]["op"] == "Concat"]
    return concats[0] if len(concats) == 1 else None


# --- hints ---------------------------------------------------------------------------------------
def hint_for(ir: IRFile, producer: int, consumer: int | None, pos: int, comparable: bool = True) -> str:
    p_strat = strategy(ir, producer)
    if consumer is None:
        return (f"check the shard strategy of {who(ir, producer)} (in_strategy {fmt(p_strat)}) and of the ops "
                "reading its output")
    c_strat = strategy(ir, consumer)
    wants = tuple(c_strat[pos]) if c_strat and pos < len(c_strat) else None
    has = output_layout(ir, producer)
    head = (f"{who(ir, consumer)} (in_strategy {fmt(c_strat)}) reads input {pos} as layout {fmt(wants)}, but "
            f"{who(ir, producer)} (in_strategy {fmt(p_strat)}) outputs layout {fmt(has)}")
    if has is None or wants is None or not comparable:
        # a Reshape that changes the rank on the way: the two layouts are in different dims
        return head + "; make the two strategies agree on this tensor's layout"
    if has == wants:
        return head + ("; the two strategies already agree, so the chain is pure overhead: look for what makes "
                       "the framework see different layouts (a Reshape or out_strategy between them, or a "
                       "different device matrix)")
    fix = best_fix(ir, producer, consumer, pos)
    if fix is None:
        return head + f"; give the consumer's input {pos} the layout {fmt(has)}, or change the producer's strategy " \
                      f"so it outputs {fmt(wants)}"
    op, new, left = fix
    verb = f"outputs {fmt(wants)}" if op == producer else f"reads the tensor as produced ({fmt(has)})"
    tail = (f"; set {who(ir, op)} to in_strategy {fmt(new)}: it then {verb}, and the chain and its backward "
            f"transpose disappear")
    tail += (", with every other neighbour of the two ops still in agreement" if left == 0 else
             f"; {left} other layout change{'s' if left > 1 else ''} around the two ops would remain")
    return head + tail + all_reduce_note(ir, op, new)


def backward_index(ir: IRFile) -> dict[str, list[int]]:
    """forward unique_id -> the backward nodes derived from it (``forward_unique_id``); once per
    IRFile, when a finding first names a backward transpose."""
    index = ir.__dict__.get("_redistribution_backward_index")
    if index is None:
        index = ir.__dict__["_redistribution_backward_index"] = {}
        for key in ir.cnodes():
            uid = primal_attr(ir[key], "forward_unique_id")
            if uid is not None and ir.is_backward(key):
                index.setdefault(str(uid), []).append(key)
    return index


def backward_transpose(ir: IRFile, chain: Chain, index: dict[str, list[int]],
                       nodes: list[int] | None = None) -> list[int]:
    """The backward ops MindSpore derived from the chain's ops (or from ``nodes`` of it: the
    gather's ReduceScatter, the slice's StridedSliceGrad, ...), in dump order; glue left out."""
    out = set()
    for key in chain.nodes if nodes is None else nodes:
        uid = primal_attr(ir[key], "unique_id")
        for b in index.get(str(uid), ()) if uid is not None else ():
            if ir[b]["op"] not in QUIET_IN_RELATED:
                out.add(b)
    return sorted(out, key=lambda k: ir[k].get("line", 0))


# --- formatting -----------------------------------------------------------------------------------
def first_in(ir: IRFile, key: int):
    return (ir[key].get("in_types") or (None,))[0]


def step_text(ir: IRFile, key: int, costs: bool = False) -> str:
    data = ir[key]
    op = data["op"]
    src = first_in(ir, key)
    dst = data.get("out_type")
    detail = ""
    if op == "Split":
        axis, n = split_args(ir, key)
        detail = f"(axis {axis}, {n})"
    elif op == "Concat":
        detail = f"(axis {axis_of(ir, key)})"
    elif op in ALLTOALL_OPS:
        a = data.get("primitive_attrs") or {}
        detail = f"(split_dim {a.get('split_dim')}, concat_dim {a.get('concat_dim')})"
    text = f"{op}{detail} {src}" if dst is not None and dst.dtype is None else f"{op}{detail} {src}->{dst}"
    if costs and op in MOVING_OPS:
        attrs = data.get("primitive_attrs") or {}
        ranks = attrs.get("rank_size") or len(attrs.get("group_rank_ids") or ()) or "?"
        text += f" [group of {ranks}, receives {size(received_bytes(ir, key))}]"
    return text


def readers(ir: IRFile, chain: Chain) -> str:
    """The consumers of a chain (MindSpore 2.10 shares one redistribution among readers of one layout)."""
    names = list(dict.fromkeys(who(ir, c) for c, _ in chain.consumers))
    if len(names) > 1:
        return f"its {len(names)} readers {', '.join(names)}"
    return names[0] if names else "its users"


def end_note(ir: IRFile, key: int, text: str) -> Related:
    if ir[key]["kind"] == "cnode":
        strat = strategy(ir, key)
        extra = f", in_strategy {fmt(strat)}" if strat is not None else ""
        return note(ir, key, f"{text}{extra}, out {ir[key].get('out_type')}")
    return note(ir, key, text)


def as_int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# --- a permutation paid as a gather ----------------------------------------------------------------
class Permutation(NamedTuple):
    """A change of device axes paid as a gather."""

    split: tuple                 # the split counts both ends use
    produced: tuple              # the producer's output placement
    read: tuple                  # the consumer's input placement
    factor: int                  # how many times the tensor is gathered


def permutation(ir: IRFile, chain: Chain) -> Permutation | None:
    """The run when producer and consumer name the same split counts on different device axes:
    the local shape is the same at both ends, the blocks sit on other ranks."""
    if not chain.consumers or chain.entry is None or chain.exit is None or chain.entry.shape is None:
        return None
    if chain.entry.shape != chain.exit.shape:
        return None
    consumer, pos = chain.consumers[0]
    has, strat = output_layout(ir, chain.producer), strategy(ir, consumer)
    wants = tuple(strat[pos]) if strat and pos < len(strat) else None
    produced, read = output_placement(ir, chain.producer), placements(ir, consumer)
    read = read[pos] if read and pos < len(read) else None
    if has is None or has != wants or produced is None or read is None or produced == read:
        return None
    factor = 1
    for k in chain.nodes:
        if ir[k]["op"] in GATHER_OPS:
            factor *= as_int((ir[k].get("primitive_attrs") or {}).get("rank_size")) or 1
    return Permutation(has, produced, read, factor)


def placement_text(placed: tuple) -> str:
    parts = []
    for d, axes in enumerate(placed):
        if axes:
            parts.append(f"dim {d} over " + " x ".join(f"{n} ranks {stride} apart" for n, stride in axes))
    return ", ".join(parts) or "not split"
