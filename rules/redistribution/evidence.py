"""Shard layouts from ``in_strategy``, and the one-op strategy change that makes a producer and a
consumer agree. Shared by PC001 (redundant-redistribution-chain) and PC002
(strategy-mismatch-full-gather); defines no rule of its own.

A layout is the tuple of shard counts per dim of one tensor, as a strategy entry prints it:
``(1, 8)`` is a 2-D tensor whose columns are split 8 ways."""
from __future__ import annotations

from math import prod

from irlint.findings import Related
from irlint.model import IRFile
from irlint.rule import related_node

MATMUL_OPS = frozenset({"MatMul", "BatchMatMul", "MatMulExt", "BatchMatMulExt"})
# every input of the same rank is read in the output's layout
ELEMENTWISE_OPS = frozenset({
    "Mul", "Add", "Sub", "RealDiv", "Div", "Maximum", "Minimum", "Pow", "SiLU", "ReLU", "GeLU", "FastGeLU",
    "Sigmoid", "Tanh", "Exp", "Neg", "Square", "Sqrt", "Rsqrt", "Cast", "Erf", "Log", "Abs", "AddN",
    "SquaredDifference", "LeakyReLU", "Swish",
})
# ops without a strategy that hand their input's layout on (a forward_op AllReduce completes a
# row-parallel MatMul's partial sums; the layout is the MatMul's)
LAYOUT_KEEPING_OPS = frozenset({"AllReduce", "Cast", "Depend", "Load", "_VirtualDiv", "RealDiv"})
INSERTED_PREFIXES = ("redistribution_op", "forward_op", "grad", "parallel_optimizer", "_Mirror", "_Virtual")


def strategy(ir: IRFile, key: int | None):
    if key is None:
        return None
    data = ir[key]
    attrs = data.get("primitive_attrs") or {}
    found = attrs.get("in_strategy") or attrs.get("strategy")
    if found is None:   # 2.10 prints it a second time after cnode_primal_attrs
        found = (data.get("parallel_info") or {}).get("in_strategy")
    return found if _well_formed(found) else None


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


def scope_path(scope: str) -> str:
    head, _, last = scope.rpartition("/")
    return head if head and "-op" in last else scope


def size(n: int | None) -> str:
    if n is None:
        return "? bytes"
    if n >= 1 << 20:
        return f"{n / (1 << 20):.1f} MiB"
    if n >= 1 << 10:
        return f"{n / (1 << 10):.1f} KiB"
    return f"{n} bytes"


def fmt(value) -> str:
    if value is None:
        return "?"
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(fmt(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    return str(value)


def global_output(ir: IRFile, key: int) -> tuple | None:
    """The whole output shape: ``origin_output_shape`` (MatMuls), else the local shape times the layout."""
    origin = (ir[key].get("primal_attrs") or {}).get("origin_output_shape")
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
    return bool(strat and len(strat) >= 2 and len(strat[1]) >= 3 and strat[1][0] > 1)
