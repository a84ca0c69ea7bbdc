"""What a recompute fix costs in compute: the FLOPs of the forward ops the fix makes recomputed
(the blocked op, the ops blocking it, and the other ops of the layer its keys tag), against the
FLOPs of the step (``irlint.accounts.compute``: matrix and element-wise ops, forward, backward and
the copies already made). Only those ops are priced, plus one pass over the file's computing ops
for the step; the memory and compute accounts are not built, and a lint loads only the FLOPs of one
op (``irlint.accounts.flops``), and only when it has a recompute finding."""

from __future__ import annotations

from irlint.findings import FixCost, OpFlops
from irlint.model import IRFile
from irlint.model.layers import Places
from irlint.units import human_flops, human_share

from .keys import KeyNeed, tagged_in_layer


def step_flops(ir: IRFile) -> int:
    """FLOPs of one run of the file's graph: every computing op's, matrix and element-wise (the
    sum of ``irlint cost``'s matrix and element-wise totals)."""
    from irlint.accounts.flops import kind_of, op_flops

    found = ir.__dict__.get("_fix_cost_step_flops")
    if found is None:
        ir.nodes_by_op()  # the op index the rules have built already
        found = 0
        # an element-wise op's FLOPs follow from its types alone, and the reader shares the types
        # of repeated type lines (one object per layer's copy): counted once per pair of objects
        by_types: dict[tuple[int, int], int] = {}
        nodes = ir.nodes
        for op, keys in (ir._by_op or {}).items():
            kind = kind_of(op)
            if kind is None:
                continue
            if kind != "elementwise":
                found += sum([op_flops(ir, k) or 0 for k in keys])
                continue
            for k in keys:
                d = nodes[k]
                types = (id(d.get("in_types")), id(d.get("out_type")))
                flops = by_types.get(types)
                if flops is None:
                    flops = by_types[types] = op_flops(ir, k) or 0
                found += flops
        ir.__dict__["_fix_cost_step_flops"] = found
    return found


def recomputed_by_fix(ir: IRFile, k: int, blocking: list[int], needs: list[KeyNeed]) -> list[int]:
    """The forward ops that get a recomputed copy once the fix is in: ``k``, every blocking op, and
    the other ops of ``k``'s layer a needed key tags (a Linear's key tags its input and output
    Reshape alike)."""
    ops = dict.fromkeys([k, *blocking])
    places = Places.of(ir)
    for n in needs:
        if n.key and n.needed:
            layer = places.layer(n.node)[0]
            for v in tagged_in_layer(ir, ir[n.node]["op"], n.key, layer):
                ops.setdefault(v)
    return list(ops)


def fix_cost(ir: IRFile, k: int, blocking: list[int], needs: list[KeyNeed]) -> FixCost | None:
    """The ``fix_cost`` of a recompute finding on ``k``: the FLOPs its fix re-spends per step
    (matrix and element-wise apart), the step's FLOPs and the share; None when no op's shape is
    known."""
    from irlint.accounts.flops import kind_of, op_flops  # only where a finding needs it

    ops = recomputed_by_fix(ir, k, blocking, needs)
    matrix = elementwise = 0
    sized = False
    rows = []
    for v in ops:
        kind = kind_of(ir[v].get("op", ""))
        flops = op_flops(ir, v)
        rows.append(OpFlops(ir[v].get("id", ""), ir[v].get("op", ""), ir[v].get("graph", ""), flops))
        if kind is None or flops is None:
            continue
        sized = True
        if kind == "elementwise":
            elementwise += flops
        else:
            matrix += flops
    if not sized:
        return None
    step = step_flops(ir)
    total = matrix + elementwise
    return FixCost(total, matrix, elementwise, step, total / step if step else 0.0, tuple(rows))


def short_text(cost: FixCost) -> str:
    """``+1.57 MFLOP/step, <0.1%`` for a headline's fix."""
    return f"+{human_flops(cost.flops)}/step, {human_share(cost.flops, cost.step_flops)}"


def hint_text(cost: FixCost) -> str:
    """The sentence of the hint that prices the fix in compute."""
    parts = []
    if cost.matrix_flops:
        parts.append(f"{human_flops(cost.matrix_flops)} matrix")
    if cost.elementwise_flops:
        parts.append(f"{human_flops(cost.elementwise_flops)} element-wise, memory-bound")
    detail = f" ({', '.join(parts)})" if parts else ""
    return (
        f"The fix re-spends {human_flops(cost.flops)} per step{detail} on {len(cost.ops)} recomputed "
        f"op(s) of this layer, {human_share(cost.flops, cost.step_flops)} of the step's "
        f"{human_flops(cost.step_flops)} (irlint cost)."
    )
