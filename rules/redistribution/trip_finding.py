"""The PC001 finding of a round trip across one op: the runs before and after it, the bytes both
receive with their backward transpose, and the op's strategy that reads the tensor as produced."""

from __future__ import annotations

from typing import Any

from irlint.accounts.received import ALLTOALL_OPS, received_bytes, share, step_received_bytes, waste_entry
from irlint.findings import Finding, WastedBytes, scope_path
from irlint.model import IRFile
from irlint.rule import Rule, strategy_snippet

from .chain import MOVING_OPS, QUIET_IN_RELATED
from .chain_finding import fix_source
from .discovery import backward_index, backward_transpose, end_note, strategy_source
from .fix_search import all_reduce_note
from .layouts import strategy
from .round_trip import RoundTrip
from .steps import step_text
from .wording import fmt, note, short_who, size, who


def round_trip_finding(rule: Rule, ir: IRFile, trip: RoundTrip) -> Finding:
    backward = backward_index(ir)
    runs = trip.before.nodes + trip.after.nodes
    anchor = next((k for k in runs if ir[k]["op"] in MOVING_OPS), runs[0])
    transpose = sorted(
        set(backward_transpose(ir, trip.before, backward) + backward_transpose(ir, trip.after, backward)),
        key=lambda k: ir[k].get("line", 0),
    )
    waste = [(k, received_bytes(ir, k) or 0) for k in runs + transpose if ir[k]["op"] in MOVING_OPS]
    wasted = sum(b for _, b in waste)
    total = step_received_bytes(ir)
    op, consumer = trip.op, trip.after.consumers[0][0]
    maker = strategy_source(ir, trip.before.producer) or trip.before.producer  # past a TupleGetItem

    def steps(chain):
        return " -> ".join(step_text(ir, k, costs=True) for k in chain.nodes if ir[k]["op"] not in QUIET_IN_RELATED)

    kind = (
        "gather-compute-slice"
        if trip.discarded > 1
        else ("alltoall-round-trip" if any(ir[k]["op"] in ALLTOALL_OPS for k in runs) else "round-trip")
    )
    message = (
        f"{who(ir, op)} (in_strategy {fmt(strategy(ir, op))}) disagrees with both neighbours: "
        f"{steps(trip.before)} before it and {steps(trip.after)} after it hand {who(ir, consumer)} "
        f"the layout {fmt(trip.layout)} that {who(ir, maker)} already produced"
    )
    if trip.discarded > 1:
        message += (
            f"; the MatMul computes every row of the gathered input and the slice keeps 1/"
            f"{trip.discarded} of its result, so {trip.discarded - 1}/{trip.discarded} of its compute "
            f"is thrown away too"
        )
    message += (
        f"; {size(wasted)} received per step for nothing (backward transpose included), "
        f"{share(wasted, total)} of the {size(total)} this step's collectives receive per rank"
    )
    reads = (
        f"splits its rows like its neighbours ({fmt(trip.layout)}) and computes only the rows this rank keeps"
        if trip.discarded > 1
        else f"reads input {trip.pos} in the layout {fmt(trip.layout)} its neighbours use"
    )
    hint = (
        f"set {who(ir, op)} to in_strategy {fmt(trip.fix)}: it then {reads}, and both runs and their "
        f"backward transpose disappear" + all_reduce_note(ir, op, trip.fix)
    )
    related = [end_note(ir, trip.before.producer, "producer")]
    related += [
        note(ir, k, step_text(ir, k, costs=True))
        for k in trip.before.nodes
        if k != anchor and ir[k]["op"] not in QUIET_IN_RELATED
    ]
    related += [end_note(ir, op, "op whose strategy disagrees with both neighbours")]
    related += [
        note(ir, k, step_text(ir, k, costs=True))
        for k in trip.after.nodes
        if k != anchor and ir[k]["op"] not in QUIET_IN_RELATED
    ]
    related += [end_note(ir, consumer, f"consumer (input {trip.after.consumers[0][1]})")]
    related += [note(ir, k, "backward transpose: " + step_text(ir, k, costs=True)) for k in transpose]
    identity = (
        "round-trip",
        kind,
        scope_path(ir[op].get("scope", "")),
        ir[op]["op"],
        tuple(ir[k]["op"] for k in runs if ir[k]["op"] not in QUIET_IN_RELATED),
    )
    extra: dict[str, Any] = {
        "kinds": [kind],
        "moved_bytes": sum(received_bytes(ir, k) or 0 for k in runs),
        "backward_moved_bytes": sum(received_bytes(ir, k) or 0 for k in transpose),
        "backward": [ir[k]["id"] for k in transpose],
        "op_strategy": fmt(strategy(ir, op)),
        "layout": fmt(trip.layout),
        "discarded_compute": f"{trip.discarded - 1}/{trip.discarded}" if trip.discarded > 1 else None,
        "fix": {"node": ir[op]["id"], "in_strategy": fmt(trip.fix), **fix_source(ir, op)},
        "waste_bytes": wasted,
        "step_received_bytes": total,
        "waste": [waste_entry(ir, k, b) for k, b in waste],
    }
    found = rule.finding(
        ir,
        anchor,
        message,
        hint=hint,
        related=related,
        identity=identity,
        extra=extra,
        cause=f"{short_who(ir, op)}'s in_strategy disagrees with both neighbours ({kind})",
        fix=f"in_strategy {fmt(trip.fix)}",
        waste_kinds=[kind],
        wasted=[WastedBytes(**w) for w in extra["waste"]],
    )
    return found.with_(snippet=strategy_snippet(found.related, extra["fix"]))
