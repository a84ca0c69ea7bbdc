"""Layouts: how an op's input and output are sharded, from ``in_strategy`` (a tuple strategy or a
Layout), and the compute ops on either side of the ops redistribution inserted.

A layout is the tuple of shard counts per dim of one tensor, as a strategy entry prints it: ``(1, 8)``
is a 2-D tensor whose columns are split 8 ways. A placement says, per dim, which device axes split
it."""

from __future__ import annotations

from math import prod
from typing import Any

from irlint.model import IRFile

from .chain import ELEMENTWISE_OPS, LAYOUT_KEEPING_OPS, MATMUL_OPS
from .wording import as_int, fmt

# a strategy as the dump prints it: per input, a tuple of split counts per dim
Strategy = tuple[Any, ...]


def strategy(ir: IRFile, key: int | None) -> Strategy | None:
    if key is None:
        return None
    data = ir[key]
    attrs = data.get("primitive_attrs") or {}
    found = attrs.get("in_strategy") or attrs.get("strategy")
    if found is None:  # 2.10 prints it a second time after cnode_primal_attrs
        found = (data.get("parallel_info") or {}).get("in_strategy")
    if found is None:  # sharded with a Layout: the split counts of its placements
        placed = _layout_placements(attrs.get("in_layout"))
        found = tuple(tuple(prod(size for size, _ in dim) for dim in inp) for inp in placed) if placed else None
    return found if _well_formed(found) else None


# A placement says, per dim of one tensor, which device axes split it: ((size, rank stride), ...)
# per dim, () for a dim that is not split. Two ops with the same split counts can place the blocks
# on different ranks (a plain tuple strategy maps dim 0 to the outermost device axis, a Layout
# names its axes): then the tensor is re-laid although the local shape does not change.
def placements(ir: IRFile, key: int | None) -> tuple[Any, ...] | None:
    """Per input of ``key``: its placement, from ``in_layout`` or a tuple strategy."""
    if key is None or ir[key]["kind"] != "cnode":
        return None
    placed = _layout_placements((ir[key].get("primitive_attrs") or {}).get("in_layout"))
    if placed:
        return placed
    strat = strategy(ir, key)
    if strat is None:
        return None
    return tuple(tuple(((n, prod(s[i + 1 :])),) if n > 1 else () for i, n in enumerate(s)) for s in strat)


def _layout_placements(value: object) -> tuple[Any, ...] | None:
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
            dims.append(tuple((dev[n - 1 - a], prod(dev[n - a :])) for a in axes if a >= 0 and dev[n - 1 - a] > 1))
        out.append(tuple(dims))
    return tuple(out)


def layout_expression(ir: IRFile, key: int, pos: int = 0) -> str | None:
    """How the user wrote input ``pos``'s Layout: ``layout("tp", "dp")`` of ``Layout((2, 4), ("dp", "tp"))``."""
    value = (ir[key].get("primitive_attrs") or {}).get("in_layout")
    if not (isinstance(value, tuple) and pos < len(value) and isinstance(value[pos], dict)):
        return None
    return _expression(value[pos])


def _expression(layout: dict[str, Any]) -> str | None:
    dev, tmap, names = layout.get("device_matrix"), layout.get("tensor_map"), layout.get("alias_name")
    if not (isinstance(dev, tuple) and isinstance(tmap, tuple) and isinstance(names, tuple) and len(names) == len(dev)):
        return None
    n = len(dev)

    def axis(a: int) -> str:
        return '"None"' if a == -1 else f'"{names[n - 1 - a]}"'

    dims = [f"({', '.join(axis(a) for a in e)})" if isinstance(e, tuple) else axis(e) for e in tmap]
    return f"layout({', '.join(dims)}) of {_device_matrix(dev, names)}"


def _device_matrix(dev: tuple[Any, ...], names: tuple[Any, ...]) -> str:
    return f"Layout({fmt(dev)}, ({', '.join(f'{chr(34)}{x}{chr(34)}' for x in names)}))"


def output_layout_dict(ir: IRFile, key: int) -> dict[str, Any] | None:
    """The Layout of ``key``'s output, when its inputs were given Layouts: the first input's for an
    element-wise or row-wise op, batch and rows of the first and columns of the second for a MatMul."""
    value = (ir[key].get("primitive_attrs") or {}).get("in_layout")
    if not (isinstance(value, tuple) and value and all(isinstance(v, dict) for v in value)):
        return None
    if ir[key]["op"] in MATMUL_OPS and len(value) >= 2:
        x, w = value[0].get("tensor_map"), value[1].get("tensor_map")
        if not (isinstance(x, tuple) and isinstance(w, tuple) and len(x) >= 2 and len(w) >= 2):
            return None
        ta, tb = transposes(ir, key)
        rows, cols = (x[-1] if ta else x[-2]), (w[-2] if tb else w[-1])
        return {**value[0], "tensor_map": (*x[:-2], rows, cols)}
    return value[0] if ir[key]["op"] in _ROW_WISE else None


def output_layout_expression(ir: IRFile, key: int) -> str | None:
    layout = output_layout_dict(ir, key)
    return _expression(layout) if layout else None


def layout_call(layout: dict[str, Any], entry: tuple[Any, ...]) -> str | None:
    """``layout(...)`` for one input of an op given this Layout's placement, from the input's tuple
    entry: the dims the entry splits take the Layout's axes, the others (a broadcast dim) none."""
    tmap = layout.get("tensor_map")
    if not isinstance(tmap, tuple) or len(entry) > len(tmap):
        return None
    off = len(tmap) - len(entry)
    expr = _expression({**layout, "tensor_map": tuple(tmap[off + d] if n > 1 else -1 for d, n in enumerate(entry))})
    return expr.split(" of ")[0] if expr else None


def tuple_matching(layout: dict[str, Any]) -> tuple[tuple[Any, ...], str] | None:
    """The tuple strategy and the order of device axes under which a tuple places this Layout's
    dims where the Layout does: a tuple maps its split dims, in order, to the device axes from the
    outermost, and repeats on the innermost axes it leaves over, so the Layout's axes are ordered
    as its dims use them, the unused ones last. The ``layout(...)`` calls keep their axis names."""
    dev, tmap, names = layout.get("device_matrix"), layout.get("tensor_map"), layout.get("alias_name")
    if not (isinstance(dev, tuple) and isinstance(tmap, tuple) and isinstance(names, tuple) and len(names) == len(dev)):
        return None
    n = len(dev)
    order: list[int] = []  # device-matrix positions, outermost first
    split = []
    for entry in tmap:
        axes = [a for a in (entry if isinstance(entry, tuple) else (entry,)) if isinstance(a, int) and a >= 0]
        order += [n - 1 - a for a in axes]
        split.append(prod(dev[n - 1 - a] for a in axes))
    if len(set(order)) != len(order):
        return None
    order += [i for i in range(n) if i not in order]
    return tuple(split), _device_matrix(tuple(dev[i] for i in order), tuple(names[i] for i in order))


def output_placement(ir: IRFile, key: int) -> tuple[Any, ...] | None:
    """The placement of an element-wise, row-wise or MatMul op's output (past a TupleGetItem or a
    Cast to the op that made it)."""
    for _ in range(6):
        if ir[key]["kind"] != "cnode" or strategy(ir, key) is not None:
            break
        inputs = [p for p in ir.producers(key) if ir[p]["kind"] != "const"]
        if not inputs or ir[key]["op"] not in LAYOUT_KEEPING_OPS:
            return None
        key = inputs[0]
    placed = placements(ir, key)
    if not placed:
        return None
    if ir[key]["op"] in MATMUL_OPS:
        # from a Layout only: a tuple's per-input placement does not know the MatMul's device matrix
        layout = output_layout_dict(ir, key)
        placed_out = _layout_placements((layout,)) if layout else None
        return placed_out[0] if placed_out else None
    if ir[key]["op"] == "Transpose":
        # output dim i is input dim perm[i], on the same device axes
        perm = transpose_perm(ir, key)
        return tuple(placed[0][p] for p in perm) if perm and sorted(perm) == list(range(len(placed[0]))) else None
    return placed[0] if ir[key]["op"] in _ROW_WISE else None


_ROW_WISE = ELEMENTWISE_OPS | {"Softmax", "RmsNorm", "LayerNorm", "Dropout", "DropoutExt"}
# ops MindSpore 2.10 refuses to shard with a Layout: Dropout ("the output tensor layout num 1 does not
# match the output num 2", and with out_strategy "The size of output_tensor_layout for DropoutInfo is
# 2 rather than 1"), DropoutExt ("The size of input_tensor_layout ... is 3 rather than 1")
NO_LAYOUT_OPS = frozenset({"Dropout", "DropoutExt"})


def ranks_moved(produced: tuple[Any, ...], read: tuple[Any, ...], ranks: int) -> list[int]:
    """The ranks whose block under ``read`` is not the one they hold under ``produced``."""
    return [r for r in range(ranks) if block_of(produced, r) != block_of(read, r)]


def block_of(placed: tuple[Any, ...], rank: int) -> tuple[Any, ...]:
    """Which block of each dim ``rank`` holds under a placement."""
    out = []
    for axes in placed:
        index = 0
        for size, stride in axes:
            index = index * size + (rank // stride) % size
        out.append(index)
    return tuple(out)


def _well_formed(strat: object) -> bool:
    """A tuple of per-input tuples of ints: anything else (a dump we have not seen) is no strategy."""
    return isinstance(strat, tuple) and all(
        isinstance(s, tuple) and all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in s) for s in strat
    )


def transposes(ir: IRFile, key: int) -> tuple[bool, bool]:
    args: tuple[Any, ...] = ir[key].get("args") or ()
    attrs = ir[key].get("primitive_attrs") or {}
    ta = args[2] if len(args) > 3 and isinstance(args[2], bool) else bool(attrs.get("transpose_a", False))
    tb = args[3] if len(args) > 3 and isinstance(args[3], bool) else bool(attrs.get("transpose_b", False))
    return bool(ta), bool(tb)


def matmul_dims(strat: Strategy, ta: bool, tb: bool) -> tuple[tuple[Any, ...], int, int, int]:
    """(batch dims, rows, contracted, cols) of a MatMul strategy."""
    x, w = tuple(strat[0]), tuple(strat[1])
    rows, k = (x[-1], x[-2]) if ta else (x[-2], x[-1])
    cols = w[-2] if tb else w[-1]
    return x[:-2], rows, k, cols


def matmul_strategy(
    batch: tuple[Any, ...], rows: int, k: int, cols: int, ta: bool, tb: bool, w_rank: int
) -> tuple[Any, ...]:
    x = batch + ((k, rows) if ta else (rows, k))
    w2 = (cols, k) if tb else (k, cols)
    w = batch[len(batch) - (w_rank - 2) :] + w2 if w_rank > 2 else w2
    return (x, w)


def output_layout(ir: IRFile, key: int, depth: int = 0) -> tuple[Any, ...] | None:
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
        batch, rows, _, cols = matmul_dims(strat, *transposes(ir, key))
        return batch + (rows, cols)
    if data["op"] == "Transpose":
        perm = transpose_perm(ir, key)
        return tuple(strat[0][p] for p in perm) if perm and len(perm) == len(strat[0]) else None
    if not strat or not isinstance(strat[0], tuple):
        return None
    return tuple(strat[0])


def transpose_perm(ir: IRFile, key: int) -> tuple[int, ...] | None:
    args: tuple[Any, ...] = ir[key].get("args") or ()
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


def _devices_of(ir: IRFile, key: int, strat: Strategy) -> int | None:
    try:
        if ir[key]["op"] in MATMUL_OPS and len(strat) >= 2:
            batch, rows, k, cols = matmul_dims(strat, *transposes(ir, key))
            return int(prod(batch)) * rows * k * cols
        return max(prod(s) for s in strat if isinstance(s, tuple)) if strat else None
    except (TypeError, IndexError, ValueError):
        return None


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
        out.append((pos, node if ir[node]["kind"] == "cnode" and strategy(ir, node) is not None else None, reshaped))
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
    return any(
        ir[p].get("op") in ("Split", "TupleGetItem") or _inserted(ir, p)
        for p in ir.producers(key)
        if ir[p]["kind"] == "cnode"
    )


def _changes_rank(ir: IRFile, key: int) -> bool:
    src = (ir[key].get("in_types") or (None,))[0]
    dst = ir[key].get("out_type")
    return not (src and dst and src.shape is not None and dst.shape is not None and len(src.shape) == len(dst.shape))
