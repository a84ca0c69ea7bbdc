"""The lazy_inline split of a dump: which subgraph is a forward half, which its backward half, and
how a pipeline stage schedules them.

With lazy_inline (MindFormers' default, always under pipeline parallel) the model is compiled once
as a forward half ``@…▸…`` that ends in ``Partial(@…◂…, kept values …)`` and a backward half
``@…◂…``. A pipeline stage calls the forward half once per micro batch and the backward half (the
returned Partial) once per micro batch, in its 1F1B order: the activations one forward call keeps
for its backward exist once per micro batch in flight, the most forward calls whose backward has
not run yet at any point of that order.

With pipeline interleave each stage holds several chunks of layers, one forward/backward half pair
per chunk, all called by one caller in the interleaved 1F1B order. The stage's memory peaks at one
point of that order: the model of what is in flight is how many micro batches of each chunk are
alive at that point (``at_peak``), not each chunk's own most (which the chunks reach at different
times). Every pipeline price (the account's peak, the findings' ``bytes_at_stake``) uses it.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from . import IRFile

_PARTIAL_CALLEE = re.compile(r"@Partial\((@[^,)\s]+)")


class Schedule(NamedTuple):
    """A pipeline stage's forward half, its backward half and how many micro batches are in flight."""

    forward: str  # the forward half (@…▸…)
    backward: str  # the backward half its Partial names (@…◂…)
    caller: str  # the subgraph that calls them
    micro_batches: int  # forward calls
    in_flight: int  # most forward calls whose backward call has not come yet (printed order)


def halves(ir: IRFile) -> dict[str, str]:
    """Forward half -> backward half: the subgraphs holding a ``Partial(@g, …)`` of another subgraph."""
    cached = ir.__dict__.get("_lazy_halves")
    if cached is None:
        cached = {}
        for k in ir.nodes_by_op("Partial"):
            args = ir[k].get("args") or ()
            if args and str(args[0]) in ir.subgraphs:
                cached.setdefault(ir[k]["graph"], str(args[0]))
        ir.__dict__["_lazy_halves"] = cached
    return cached


def backward_calls(ir: IRFile) -> set[int]:
    """Calls of a backward half (``%5[@Partial(@…◂…)](…)``): they run the backward pass."""
    cached = ir.__dict__.get("_backward_half_calls")
    if cached is None:
        targets = set(halves(ir).values())
        cached = set()
        for k in ir.nodes_by_op("call"):
            m = _PARTIAL_CALLEE.search(ir[k].get("raw_op", ""))
            if m and m.group(1) in targets:
                cached.add(k)
        ir.__dict__["_backward_half_calls"] = cached
    return cached


def backward_halves(ir: IRFile) -> frozenset[str]:
    """The backward halves the step runs: the subgraphs a backward call names (``%5[@Partial(@…◂…)]``)."""
    cached = ir.__dict__.get("_backward_halves")
    if cached is None:
        found = set()
        for k in backward_calls(ir):
            m = _PARTIAL_CALLEE.search(ir[k].get("raw_op", ""))
            if m:
                found.add(m.group(1))
        cached = ir.__dict__["_backward_halves"] = frozenset(found)
    return cached


def schedules(ir: IRFile) -> list[Schedule]:
    """One entry per forward half called more than once (a pipeline stage's micro batches)."""
    cached: list[Schedule] | None = ir.__dict__.get("_pipeline_schedules")
    if cached is not None:
        return cached
    out = []
    bwd_calls = backward_calls(ir)
    for fwd, bwd in halves(ir).items():
        node = next((k for k, d in ir.nodes.items() if d["kind"] == "subgraph" and d["graph"] == fwd), None)
        if node is None:
            continue
        calls = [c for c, keyed in ir.succ[node].items() for d in keyed.values() if d.get("kind") == "callee"]
        if len(calls) < 2:
            continue
        caller = ir[calls[0]]["graph"]
        events = [(ir[c]["line"], 1) for c in calls if ir[c]["graph"] == caller]
        events += [
            (ir[c]["line"], -1) for c in bwd_calls if ir[c]["graph"] == caller and bwd in ir[c].get("raw_op", "")
        ]
        live = peak = 0
        for _, step in sorted(events):
            live += step
            peak = max(peak, live)
        out.append(Schedule(fwd, bwd, caller, len(calls), max(peak, 1)))
    ir.__dict__["_pipeline_schedules"] = out
    return out


def in_flight(ir: IRFile, graph: str) -> Schedule | None:
    """The schedule of the forward half ``graph`` when a pipeline stage calls it per micro batch."""
    return next((s for s in schedules(ir) if s.forward == graph), None)


def at_peak(ir: IRFile, weights: dict[str, int] | None = None) -> dict[str, int]:
    """Forward half -> how many of its micro batches are in flight at its stage's peak: the point of
    the caller's printed order where the live forward halves hold the most bytes (``weights``: bytes
    one micro batch of each half keeps; counted as equal when not given or all 0). The first such
    point when several tie. Without interleave that is the half's own ``in_flight``."""
    by_caller: dict[str, list[Schedule]] = {}
    for s in schedules(ir):
        by_caller.setdefault(s.caller, []).append(s)
    out: dict[str, int] = {}
    for caller, stages in by_caller.items():
        if len(stages) == 1:
            out[stages[0].forward] = stages[0].in_flight
            continue
        w = {s.forward: (weights or {}).get(s.forward, 0) for s in stages}
        if not any(w.values()):
            w = dict.fromkeys(w, 1)
        out.update(_live_at_peak(ir, caller, stages, w))
    return out


def _live_at_peak(ir: IRFile, caller: str, stages: list[Schedule], weights: dict[str, int]) -> dict[str, int]:
    by_backward = {s.backward: s.forward for s in stages}
    events: list[tuple[int, str, int]] = []
    for s in stages:
        node = next((k for k, d in ir.nodes.items() if d["kind"] == "subgraph" and d["graph"] == s.forward), None)
        if node is None:
            continue
        for c, keyed in ir.succ[node].items():
            if ir[c]["graph"] == caller and any(d.get("kind") == "callee" for d in keyed.values()):
                events.append((ir[c]["line"], s.forward, 1))
    for c in backward_calls(ir):
        if ir[c]["graph"] != caller:
            continue
        m = _PARTIAL_CALLEE.search(ir[c].get("raw_op", ""))
        if m and m.group(1) in by_backward:
            events.append((ir[c]["line"], by_backward[m.group(1)], -1))
    live = dict.fromkeys(weights, 0)
    best, peak = -1, dict(live)
    for _, half, step in sorted(events):
        live[half] += step
        held = sum(n * weights[h] for h, n in live.items())
        if held > best:
            best, peak = held, dict(live)
    return peak


def pipeline_stage(ir: IRFile) -> int | None:
    """The pipeline stage MindSpore assigned the file's ops (their ``stage`` primal attribute, the
    most common value), None when no op carries one."""
    if "_pipeline_stage" in ir.__dict__:
        known: int | None = ir.__dict__["_pipeline_stage"]
        return known
    counts: dict[int, int] = {}
    for d in ir.nodes.values():
        value = (d.get("primal_attrs") or {}).get("stage") if d.get("kind") == "cnode" else None
        if isinstance(value, int) and not isinstance(value, bool):
            counts[value] = counts.get(value, 0) + 1
    found = max(counts, key=counts.__getitem__) if counts else None
    ir.__dict__["_pipeline_stage"] = found
    return found
