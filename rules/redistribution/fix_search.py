"""The fix search: the one-op change of ``in_strategy`` that makes a producer and a consumer agree
(``best_fix``), what it costs (``all_reduce_note``), and the hint that proposes it (``hint_for``);
under sharding propagation, the user's strategy that the ops between two disagreeing MatMuls
follow (``sibling_fix``, ``sibling_hint``)."""

from __future__ import annotations

from collections.abc import Iterable
from math import prod
from typing import Any

from irlint.model import IRFile, primal_attr

from .chain import ELEMENTWISE_OPS, MATMUL_OPS
from .discovery import in_chain
from .layouts import (
    Strategy,
    compute_consumers,
    compute_inputs,
    devices,
    matmul_dims,
    matmul_strategy,
    output_layout,
    strategy,
    transpose_perm,
    transposes,
)
from .wording import fmt, short_who, size, who


def reading_as_produced(ir: IRFile, consumer: int, pos: int, layout: tuple[Any, ...]) -> Strategy | None:
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
            batch = x[len(x) - 2 - nb : -2] if pos == 0 else w[len(w) - 2 - nb : -2]
            x[len(x) - 2 - nb : -2], w[len(w) - 2 - nb : -2] = batch, batch
        new[0], new[1] = tuple(x), tuple(w)
    elif op in ELEMENTWISE_OPS:
        new = [tuple(layout) if len(s) == len(layout) else s for s in new]
    else:
        new[pos] = tuple(layout)
    return tuple(new)


def producing(ir: IRFile, producer: int, layout: tuple[Any, ...]) -> Strategy | None:
    """The producer's strategy that outputs ``layout``, for MatMuls, element-wise ops and Transpose."""
    strat = strategy(ir, producer)
    if strat is None:
        return None
    op = ir[producer]["op"]
    if op in MATMUL_OPS and len(strat) >= 2 and len(layout) >= 2:
        ta, tb = transposes(ir, producer)
        batch, _, k, _ = matmul_dims(strat, ta, tb)
        if len(batch) != len(layout) - 2:
            return None
        rows, cols = layout[-2], layout[-1]
        if prod(layout) * k > devices(ir):
            k = 1
        return matmul_strategy(tuple(layout[:-2]), rows, k, cols, ta, tb, len(strat[1]))
    if op in ELEMENTWISE_OPS:
        if not any(len(s) == len(layout) for s in strat):
            return None
        return tuple(tuple(layout) if len(s) == len(layout) else tuple(s) for s in strat)
    if op == "Transpose":
        perm = transpose_perm(ir, producer)
        if not perm or len(perm) != len(layout):
            return None
        src = [1] * len(perm)
        for j, p in enumerate(perm):
            src[p] = layout[j]
        return (tuple(src),)
    return None


def row_parallel(ir: IRFile, matmul: int, factor: int) -> Strategy | None:
    """A MatMul's strategy with ``factor`` moved onto the contracted dim of both operands (and off
    the weight's output columns): Megatron's row-parallel form of a column-parallel layer."""
    strat = strategy(ir, matmul)
    if strat is None or len(strat) < 2 or ir[matmul]["op"] not in MATMUL_OPS:
        return None
    ta, tb = transposes(ir, matmul)
    batch, rows, k, cols = matmul_dims(strat, ta, tb)
    cols = cols // factor if cols % factor == 0 else 1
    return matmul_strategy(batch, rows, k * factor, cols, ta, tb, len(strat[1]))


def mismatches(ir: IRFile, keys: tuple[int, ...], changed: dict[int, tuple[Any, ...]]) -> int:
    """Layout disagreements on the edges of ``keys`` (into and out of each), with the strategies
    in ``changed`` replacing the dump's. Parameters and graph inputs take any layout; an edge
    across a rank-changing Reshape is not compared."""

    def out_layout(k: int) -> tuple[Any, ...] | None:
        if k in changed:
            return _layout_under(ir, k, changed[k])
        return output_layout(ir, k)

    def wanted(k: int, pos: int) -> tuple[Any, ...] | None:
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


def _layout_under(ir: IRFile, key: int, strat: Strategy) -> tuple[Any, ...] | None:
    op = ir[key]["op"]
    if op in MATMUL_OPS and len(strat) >= 2:
        batch, rows, _, cols = matmul_dims(strat, *transposes(ir, key))
        return batch + (rows, cols)
    if op == "Transpose":
        perm = transpose_perm(ir, key)
        return tuple(strat[0][p] for p in perm) if perm else None
    return tuple(strat[0]) if strat else None


def best_fix(ir: IRFile, producer: int, consumer: int, pos: int) -> tuple[int, Strategy, int] | None:
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


def global_output(ir: IRFile, key: int) -> tuple[Any, ...] | None:
    """The whole output shape: ``origin_output_shape`` (MatMuls), else the local shape times the layout."""
    origin = primal_attr(ir[key], "origin_output_shape")
    if isinstance(origin, tuple) and all(isinstance(d, int) for d in origin):
        return origin
    out, layout = ir[key].get("out_type"), output_layout(ir, key)
    if out is None or out.shape is None or layout is None or len(layout) != len(out.shape):
        return None
    return tuple(d * n for d, n in zip(out.shape, layout))


def all_reduce_note(ir: IRFile, key: int, new: Strategy) -> str:
    """What a MatMul strategy with a split contracted dim costs: one AllReduce of its output."""
    if ir[key]["op"] not in MATMUL_OPS or new is None or len(new) < 2:
        return ""
    batch, rows, k, cols = matmul_dims(new, *transposes(ir, key))
    whole, out = global_output(ir, key), ir[key].get("out_type")
    if k <= 1 or whole is None or out is None or out.nbytes is None or len(whole) != len(batch) + 2:
        return ""
    local = tuple(d // n for d, n in zip(whole, batch + (rows, cols)))
    nbytes = out.nbytes // max(prod(out.shape), 1) * prod(local)
    ring = 2 * (k - 1) * nbytes // k
    return (
        f"; its partial sums then take one AllReduce of the {out.dtype}{local} output over {k} ranks "
        f"(ring: {size(ring)} per rank)"
    )


def hint_for(ir: IRFile, producer: int, consumer: int | None, pos: int, comparable: bool = True) -> str:
    p_strat = strategy(ir, producer)
    if consumer is None:
        return (
            f"check the shard strategy of {who(ir, producer)} (in_strategy {fmt(p_strat)}) and of the ops "
            "reading its output"
        )
    c_strat = strategy(ir, consumer)
    wants = tuple(c_strat[pos]) if c_strat and pos < len(c_strat) else None
    has = output_layout(ir, producer)
    head = (
        f"{who(ir, consumer)} (in_strategy {fmt(c_strat)}) reads input {pos} as layout {fmt(wants)}, but "
        f"{who(ir, producer)} (in_strategy {fmt(p_strat)}) outputs layout {fmt(has)}"
    )
    if has is None or wants is None or not comparable:
        # a Reshape that changes the rank on the way: the two layouts are in different dims
        return head + "; make the two strategies agree on this tensor's layout"
    if has == wants:
        return head + (
            "; the two strategies already agree, so the chain is pure overhead: look for what makes "
            "the framework see different layouts (a Reshape or out_strategy between them, or a "
            "different device matrix)"
        )
    fix = best_fix(ir, producer, consumer, pos)
    if fix is None:
        return (
            head + f"; give the consumer's input {pos} the layout {fmt(has)}, or change the producer's strategy "
            f"so it outputs {fmt(wants)}"
        )
    op, new, left = fix
    verb = f"outputs {fmt(wants)}" if op == producer else f"reads the tensor as produced ({fmt(has)})"
    tail = (
        f"; set {who(ir, op)} to in_strategy {fmt(new)}: it then {verb}, and the chain and its backward "
        f"transpose disappear"
    )
    tail += (
        ", with every other neighbour of the two ops still in agreement"
        if left == 0
        else f"; {left} other layout change{'s' if left > 1 else ''} around the two ops would remain"
    )
    return head + tail + all_reduce_note(ir, op, new)


def given(ir: IRFile, key: int) -> bool:
    """The op's strategy is the user's (``shard()``), not one the parallel pass chose: 2.10 prints a
    chosen one only in the trailing block."""
    attrs = ir[key].get("primitive_attrs") or {}
    return bool(attrs.get("in_strategy") or attrs.get("in_layout"))


def propagated(ir: IRFile) -> bool:
    """auto_parallel: strategies the user did not give were searched (sharding propagation)."""
    return ir.attrs.get("auto_parallel_run_once_only") is not None


def given_source(ir: IRFile, key: int, pos: int = 0) -> int | None:
    """The op with a user-given strategy whose layout input ``pos`` of ``key`` follows under sharding
    propagation: its producer when given, else (through ops without a strategy of their own, each
    by its first input) the first given one; redistribution is skipped."""
    inputs = ir.producers(key)
    k = inputs[pos] if pos < len(inputs) else None
    for _ in range(8):
        if k is None or ir[k]["kind"] != "cnode":
            return None
        if given(ir, k):
            return k
        ahead = [p for p in ir.producers(k) if ir[p]["kind"] == "cnode" and ir[p]["op"] != "Load"]
        if strategy(ir, k) is not None and ir[k]["op"] not in ELEMENTWISE_OPS:
            return None  # a chosen MatMul or other op: its layout is its own
        k = ahead[0] if ahead else None
    return None


def _read_tensor(ir: IRFile, key: int) -> int | None:
    """What input 0 of ``key`` is, past the redistribution in front of it."""
    inputs = ir.producers(key)
    k = inputs[0] if inputs else None
    while k is not None and in_chain(ir, k):
        ahead = ir.producers(k)
        k = ahead[0] if ahead else None
    return k


def sibling_fix(ir: IRFile, a: int, b: int) -> tuple[int, Strategy] | None:
    """Two MatMuls of one kind whose strategies the user gave, reading one tensor (``w1`` and ``w3``
    of an FFN) with the same weight shape in different layouts: the one splitting its weight less
    takes the other's strategy (its weight then stays split, and both read their input alike)."""
    if a == b or not (given(ir, a) and given(ir, b)):
        return None
    if ir[a]["op"] != ir[b]["op"] or ir[a]["op"] not in MATMUL_OPS or transposes(ir, a) != transposes(ir, b):
        return None
    sa, sb = strategy(ir, a), strategy(ir, b)
    if sa is None or sb is None or sa == sb or len(sa) < 2 or len(sb) < 2:
        return None
    shapes_a, shapes_b = primal_attr(ir[a], "origin_input_shapes"), primal_attr(ir[b], "origin_input_shapes")
    if shapes_a is None or shapes_a != shapes_b:
        return None
    tensor = _read_tensor(ir, a)
    if tensor is None or tensor != _read_tensor(ir, b):
        return None
    wa, wb = prod(sa[1]), prod(sb[1])
    if wa == wb:
        return None
    return (b, sa) if wa > wb else (a, sb)


def first_sibling_fix(
    ir: IRFile, pairs: Iterable[tuple[int, int]]
) -> tuple[int, Strategy, int, tuple[int, int]] | None:
    """``sibling_fix`` of the first pair of sibling MatMuls that has one: (the MatMul to change, its new
    strategy, the MatMul whose strategy it takes, the pair)."""
    for a, b in pairs:
        fix = sibling_fix(ir, a, b)
        if fix is not None:
            op, new = fix
            return op, new, b if op == a else a, (a, b)
    return None


def sibling_hint(
    ir: IRFile, producer: int, consumer: int, pos: int
) -> tuple[str, int, Strategy, tuple[int, int]] | None:
    """Under sharding propagation, a chain between two ops without a strategy of their own that
    follow two sibling MatMuls (``sibling_fix``): the producer follows one, the consumer's other
    input the other. The hint, the MatMul and strategy it sets, and the two MatMuls."""
    if not propagated(ir) or given(ir, producer) or given(ir, consumer):
        return None
    a = given_source(ir, producer) if ir[producer]["op"] in ELEMENTWISE_OPS else None
    if a is None:
        return None
    others = (
        given_source(ir, consumer, p)
        for p, src in enumerate(ir.producers(consumer))
        if p != pos and ir[src]["kind"] == "cnode"
    )
    found = first_sibling_fix(ir, ((a, b) for b in others if b is not None))
    if found is None:
        return None
    op, new, keep, (a, b) = found
    hint = (
        f"{who(ir, producer)} and {who(ir, consumer)} have no strategy of their own: sharding propagation gave "
        f"{short_who(ir, producer)} the layout of {who(ir, a)} (in_strategy {fmt(strategy(ir, a))}) and "
        f"{short_who(ir, consumer)} that of {who(ir, b)} (in_strategy {fmt(strategy(ir, b))}), two MatMuls "
        f"reading the same tensor in different layouts; set {who(ir, op)} to in_strategy {fmt(new)}, the "
        f"strategy of {who(ir, keep)}: propagation then gives the ops between them one layout, and the chain "
        f"and its backward transpose disappear" + all_reduce_note(ir, op, new)
    )
    return hint, op, new, (a, b)
