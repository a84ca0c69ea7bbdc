"""The PC001 finding of a round trip across one op: the runs before and after it, the bytes both
receive with their backward transpose, and the op's strategy that reads the tensor as produced."""

from __future__ import annotations

from math import prod
from typing import Any

from irlint.accounts.received import ALLTOALL_OPS, received_bytes, step_received_bytes, waste_entry
from irlint.findings import CommWaste, Finding, Fixes, OpFix, WastedBytes, scope_path
from irlint.model import IRFile
from irlint.rule import Rule
from irlint.units import human_share

from .chain import MOVING_OPS, QUIET_IN_RELATED, Chain, waste_finding
from .chain_finding import fix_source
from .discovery import backward_index, backward_transpose, end_note, strategy_source
from .fix_search import all_reduce_note, first_sibling_fix, given, propagated, reading_as_produced
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
    maker = strategy_source(ir, trip.before.source) or trip.before.source  # past a TupleGetItem

    def steps(chain: Chain) -> str:
        return " -> ".join(step_text(ir, k, costs=True) for k in chain.nodes if ir[k]["op"] not in QUIET_IN_RELATED)

    kind = (
        "gather-compute-slice"
        if trip.discarded > 1
        else ("alltoall-round-trip" if any(ir[k]["op"] in ALLTOALL_OPS for k in runs) else "round-trip")
    )
    them = "them" if trip.region else "it"
    made_by = f"graph input {ir[maker]['id']}" if ir[maker]["kind"] == "param" else who(ir, maker)
    if trip.split_readers:
        message = (
            f"{who(ir, op)} (in_strategy {fmt(strategy(ir, op))}) computes a slice of a tensor every rank holds "
            f"whole, for {', '.join(who(ir, k) for k in trip.split_readers)}, which "
            f"{'read' if len(trip.split_readers) > 1 else 'reads'} its result split; "
            f"{who(ir, consumer)} (in_strategy {fmt(strategy(ir, consumer))}) reads it whole: "
            f"{steps(trip.before)} before it and {steps(trip.after)} after it hand {short_who(ir, consumer)} "
            f"the layout {fmt(trip.layout)} that {made_by} already produced"
        )
    else:
        message = (
            f"{who(ir, op)} (in_strategy {fmt(strategy(ir, op))}){_region_text(ir, trip)} "
            f"{'disagree' if trip.region else 'disagrees'} with both neighbours: "
            f"{steps(trip.before)} before {them} and {steps(trip.after)} after {them} hand {who(ir, consumer)} "
            f"the layout {fmt(trip.layout)} that {made_by} already produced"
        )
    grown = _grown(trip)
    if trip.region and grown > 1:
        message += (
            f"; the {len(trip.region) + 1} ops compute {grown}x the elements each rank keeps, "
            f"so {grown - 1}/{grown} of their compute is thrown away too"
        )
    if trip.discarded > 1:
        message += (
            f"; the MatMul computes every row of the gathered input and the slice keeps 1/"
            f"{trip.discarded} of its result, so {trip.discarded - 1}/{trip.discarded} of its compute "
            f"is thrown away too"
        )
    message += (
        f"; {size(wasted)} received per step for nothing (backward transpose included), "
        f"{human_share(wasted, total)} of the {size(total)} this step's collectives receive per rank"
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
    also: list[Any] = []  # the other ops of a run to reshard with ``op``
    fixed = [(op, trip.fix)]  # the ops the hint reshards, first the one the finding names
    if trip.region:
        hint, also = _region_hint(ir, trip)
    elif trip.split_readers:
        hint, fixed = _split_hint(ir, trip)
    related = [end_note(ir, trip.before.source, "producer")]
    related += [
        note(ir, k, step_text(ir, k, costs=True))
        for k in trip.before.nodes
        if k != anchor and ir[k]["op"] not in QUIET_IN_RELATED
    ]
    if trip.split_readers:
        related += [end_note(ir, op, "op computing a slice of a whole tensor")]
        related += [end_note(ir, k, "reads its result split, as produced") for k in trip.split_readers]
    else:
        related += [end_note(ir, op, "op whose strategy disagrees with both neighbours")]
    related += [end_note(ir, k, f"takes {short_who(ir, op)}'s layout") for k in trip.region]
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
    waste_of = CommWaste(
        bytes=wasted,
        step_received=total,
        moved=sum(received_bytes(ir, k) or 0 for k in runs),
        backward_moved=sum(received_bytes(ir, k) or 0 for k in transpose),
    )
    facts: dict[str, Any] = {
        "kinds": [kind],
        "backward": [ir[k]["id"] for k in transpose],
        "op_strategy": fmt(strategy(ir, op)),
        "layout": fmt(trip.layout),
        "discarded_compute": f"{trip.discarded - 1}/{trip.discarded}"
        if trip.discarded > 1
        else (f"{grown - 1}/{grown}" if trip.region and grown > 1 else None),
    }
    if trip.region:
        facts["region"] = [ir[k]["id"] for k in trip.region]
    # a run of ops to reshard together (a round trip across several ops): the op's fix first
    ops = [*fixed, *also]
    fixes = Fixes(ops=tuple(OpFix(ir[k]["id"], in_strategy=fmt(new), source=fix_source(ir, k)) for k, new in ops))
    return waste_finding(
        rule,
        ir,
        anchor,
        message,
        facts,
        waste_of,
        fixes,
        wasted=[WastedBytes(**waste_entry(ir, k, b)) for k, b in waste],
        hint=hint,
        related=related,
        identity=identity,
        cause=(
            f"{short_who(ir, op)} computes a slice that {short_who(ir, consumer)} gathers whole again ({kind})"
            if trip.split_readers
            else f"{short_who(ir, op)}'s in_strategy disagrees with both neighbours ({kind})"
        ),
        fix=(
            f"{short_who(ir, fixed[0][0])} in_strategy {fmt(fixed[0][1])}"
            if trip.split_readers
            else f"in_strategy {fmt(trip.fix)}"
        ),
        waste_kinds=[kind],
    )


def _region_text(ir: IRFile, trip: RoundTrip) -> str:
    if not trip.region:
        return ""
    names = ", ".join(short_who(ir, k) for k in trip.region)
    chosen = [k for k in trip.region if not given(ir, k)]
    how = (
        " (sharding propagation gave them its strategy)"
        if chosen and propagated(ir)
        else " (semi_auto_parallel's data-parallel default)"
        if chosen
        else ""
    )
    return f" and the {len(trip.region)} point-wise ops after it that take its layout ({names}){how}"


def _grown(trip: RoundTrip) -> int:
    """How many times the elements each rank keeps the ops between the runs compute (a gather
    before them, a slice after)."""
    full, kept = trip.after.entry, trip.after.exit
    if full is None or kept is None or not full.shape or not kept.shape or 0 in full.shape + kept.shape:
        return 1
    n, m = prod(full.shape), prod(kept.shape)
    return n // m if n % m == 0 and n > m else 1


def _region_hint(ir: IRFile, trip: RoundTrip) -> tuple[str, list[Any]]:
    """The hint, and the ops besides ``trip.op`` whose strategy it changes, with their new one."""
    ops = (trip.op, *trip.region)
    sharded = [k for k in ops if given(ir, k)]
    if sharded and propagated(ir):
        sets = [(k, trip.fix if k == trip.op else reading_as_produced(ir, k, 0, trip.layout)) for k in sharded]
        rest = [k for k in ops if k not in sharded]
        hint = (
            "set "
            + ", ".join(f"{who(ir, k)} to in_strategy {fmt(new)}" for k, new in sets)
            + (
                f": sharding propagation then gives {', '.join(short_who(ir, k) for k in rest)} (no strategy of "
                f"their own) the layout {fmt(trip.layout)} too"
                if rest
                else ""
            )
            + ", and both runs and their backward transpose disappear"
        )
        return hint, [(k, new) for k, new in sets if k != trip.op and new is not None]
    sets = [(k, trip.fix if k == trip.op else reading_as_produced(ir, k, 0, trip.layout)) for k in ops]
    hint = (
        "give each op of the run the layout its neighbours use: "
        + ", ".join(f"{who(ir, k)} in_strategy {fmt(new)}" for k, new in sets)
        + "; then both runs and their backward transpose disappear"
    )
    return hint, [(k, new) for k, new in sets if k != trip.op and new is not None]


def _split_hint(ir: IRFile, trip: RoundTrip) -> tuple[str, list[Any]]:
    """The hint for an op computing a slice one reader gathers whole again, and the ops it reshards.
    Under sharding propagation an op without a strategy of its own follows its readers: where the
    split reader and the gathering one are sibling MatMuls (``sibling_fix``), the one splitting its
    weight less takes the other's strategy, and the op follows."""
    op, consumer = trip.op, trip.after.consumers[0][0]
    if propagated(ir) and not given(ir, op):
        found = first_sibling_fix(ir, ((reader, consumer) for reader in trip.split_readers))
        if found is not None:
            changed, new, keep, _ = found
            hint = (
                f"set {who(ir, changed)} to in_strategy {fmt(new)}, the strategy of {who(ir, keep)}, which reads "
                f"the same tensor: sharding propagation then gives {who(ir, op)} (no strategy of its own) one "
                f"layout for both, and the gather and its backward transpose disappear"
                + all_reduce_note(ir, changed, new)
            )
            return hint, [(changed, new)]
    readers = ", ".join(short_who(ir, k) for k in trip.split_readers)
    hint = (
        f"set {who(ir, op)} to in_strategy {fmt(trip.fix)}: it then computes its result whole as its input "
        f"already is, {readers} {'read' if len(trip.split_readers) > 1 else 'reads'} it through a local slice, "
        f"and the gather and its backward transpose disappear" + all_reduce_note(ir, op, trip.fix)
    )
    return hint, [(op, trip.fix)]
