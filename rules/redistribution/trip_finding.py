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
from .fix_search import all_reduce_note, reading_as_produced
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
    message = (
        f"{who(ir, op)} (in_strategy {fmt(strategy(ir, op))}){_region_text(ir, trip)} "
        f"{'disagree' if trip.region else 'disagrees'} with both neighbours: "
        f"{steps(trip.before)} before {them} and {steps(trip.after)} after {them} hand {who(ir, consumer)} "
        f"the layout {fmt(trip.layout)} that {who(ir, maker)} already produced"
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
    if trip.region:
        hint, also = _region_hint(ir, trip)
    related = [end_note(ir, trip.before.source, "producer")]
    related += [
        note(ir, k, step_text(ir, k, costs=True))
        for k in trip.before.nodes
        if k != anchor and ir[k]["op"] not in QUIET_IN_RELATED
    ]
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
    ops = [(op, trip.fix), *also]
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
        cause=f"{short_who(ir, op)}'s in_strategy disagrees with both neighbours ({kind})",
        fix=f"in_strategy {fmt(trip.fix)}",
        waste_kinds=[kind],
    )


def _given(ir: IRFile, key: int) -> bool:
    """The op's strategy is the user's (``shard()``), not one the parallel pass chose: 2.10 prints a
    chosen one only in the trailing block."""
    attrs = ir[key].get("primitive_attrs") or {}
    return bool(attrs.get("in_strategy") or attrs.get("in_layout"))


def _propagated(ir: IRFile) -> bool:
    """auto_parallel: strategies the user did not give were searched (sharding propagation)."""
    return ir.attrs.get("auto_parallel_run_once_only") is not None


def _region_text(ir: IRFile, trip: RoundTrip) -> str:
    if not trip.region:
        return ""
    names = ", ".join(short_who(ir, k) for k in trip.region)
    chosen = [k for k in trip.region if not _given(ir, k)]
    how = (
        " (sharding propagation gave them its strategy)"
        if chosen and _propagated(ir)
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
    given = [k for k in ops if _given(ir, k)]
    if given and _propagated(ir):
        sets = [(k, trip.fix if k == trip.op else reading_as_produced(ir, k, 0, trip.layout)) for k in given]
        rest = [k for k in ops if k not in given]
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
