"""Round trips across one op, for PC001: the run of redistribution before an op and the run after
it bring the tensor back to the layout its producer made and its consumer reads, because that one
op's strategy disagrees with both neighbours. Each run alone looks harmless (a gather used whole,
a slice without communication, one AlltoAll); together they are waste. Defines no rule of its own.

Three forms, read from the local shapes and the strategies around the op:

- around a point-wise or norm op: a slice (or AlltoAll) before it, the gather (or inverse
  AlltoAll) after it; the tensor leaves the second run with the shape it entered the first;
- around a MatMul: its input gathered along the rows (tokens) it does not contract, its output
  sliced back along the same rows by the same factor: the communication and all but 1/n of the
  MatMul's compute are thrown away (a router or gate given a replicated strategy);
- around a run of point-wise ops that share one layout, read each other's results and nothing else
  but weights and the run before them (``RoundTrip.region``): one op given a strategy and the ops
  sharding propagation (auto_parallel) aligned with it, or ops left to semi_auto_parallel's
  data-parallel default. A column-split output gathered before them and sliced after, or a
  replicated residual sliced for them and their result gathered again;
- around a point-wise or norm op whose result two readers take in different layouts: its input
  sliced locally (no communication) from a whole tensor, one reader reading the result split as
  produced and the other gathering it whole again (``RoundTrip.split_readers``). Computed whole,
  the op would serve the gathering reader as it is and the other through a local slice: the
  gather moves data every rank had before the slice. (When every reader takes the gathered
  tensor, the split is the layout the op was given for itself, as in sequence parallel, and is
  left alone.)
"""

from __future__ import annotations

from math import prod
from typing import Any, NamedTuple

from irlint.accounts.received import GATHER_OPS
from irlint.model import IRFile
from irlint.model.ops import PLAIN_MATMUL_OPS

from .chain import ELEMENTWISE_OPS, MATMUL_OPS, MOVING_OPS, SLICE_OPS, Chain
from .discovery import collect_chain, in_chain, is_weight, touches_backward
from .fix_search import reading_as_produced
from .layouts import output_layout, strategy, transposes
from .simulation import simulate

# ops that compute each row (or element) on its own: any split of their rows gives the same result
NORM_OPS = frozenset({"RmsNorm", "LayerNorm", "LayerNormV3", "Softmax", "Dropout", "DropoutExt", "AddRmsNorm"})
ROW_OPS = ELEMENTWISE_OPS | NORM_OPS
_CHECKED_OPS = ROW_OPS | MATMUL_OPS


class RoundTrip(NamedTuple):
    """An op whose strategy disagrees with both neighbours: the tensor is re-laid out there and back."""

    op: int  # the op whose strategy disagrees with both neighbours
    pos: int  # which input of it the first run feeds
    before: Chain
    after: Chain
    layout: tuple[Any, ...]  # what the producer outputs and the consumer reads
    fix: tuple[Any, ...]  # the op's strategy that reads the tensor as produced
    discarded: int = 1  # a MatMul computes this many row blocks for each one kept
    region: tuple[Any, ...] = ()  # the other point-wise ops of the run that share ``op``'s layout, in order
    split_readers: tuple[Any, ...] = ()  # readers that take ``op``'s result split, as produced


def round_trips(ir: IRFile) -> list[RoundTrip]:
    """Every round trip of the file's forward graph (once per IRFile: PC001 reports them, PC002
    leaves their gathers alone)."""
    cached: list[RoundTrip] | None = ir.__dict__.get("_round_trips")
    if cached is not None:
        return cached
    found: list[RoundTrip] = []
    in_region: set[int] = set()
    for key, data in sorted(ir.nodes.items(), key=lambda item: item[1].get("line", 0)):
        if (
            data.get("kind") != "cnode"
            or data["op"] not in _CHECKED_OPS
            or ir.is_backward(key)
            or strategy(ir, key) is None
            or key in in_region
        ):
            continue
        trip = _round_trip(ir, key) or _region_trip(ir, key) or _split_then_gathered(ir, key)
        if trip is not None:
            found.append(trip)
            in_region.update(trip.region)
    found.sort(key=lambda t: ir[t.op].get("line", 0))
    ir.__dict__["_round_trips"] = found
    return found


def _round_trip(ir: IRFile, key: int) -> RoundTrip | None:
    after = _run_after(ir, key)
    if after is None:
        return None
    for pos, src in enumerate(ir.producers(key)):
        if ir[src]["kind"] != "cnode" or not in_chain(ir, src):
            continue
        before = collect_chain(ir, src)
        if (
            before.consumers != [(key, pos)]
            or before.producer is None
            or is_weight(ir, before.producer)
            or touches_backward(ir, before)
        ):
            continue
        if not _quiet_pair(ir, before, after):
            return None
        layout = _layout_restored(ir, before, after)
        if layout is None or before.entry is None or after.exit is None:
            continue
        if ir[key]["op"] in MATMUL_OPS:
            factor = _rows_gathered_then_sliced(ir, key, pos, before, after)
            if factor is None:
                continue
        elif (
            before.entry.shape != after.exit.shape
            or (strat := strategy(ir, key)) is None
            or tuple(strat[pos]) == layout
        ):
            continue
        else:
            factor = 1
        fix = _rows_split(ir, key, factor) if factor > 1 else reading_as_produced(ir, key, pos, layout)
        if fix is None or fix == strategy(ir, key):
            continue
        return RoundTrip(key, pos, before, after, layout, fix, factor)
    return None


def _run_after(ir: IRFile, key: int) -> Chain | None:
    """The one redistribution run that reads ``key``'s output, when every forward reader is in it."""
    readers = [
        u
        for u in ir.consumers(key)
        if not ir.is_backward(u)
        and ir[u]["kind"] == "cnode"
        and ir[u]["op"] not in ("Partial", "UpdateState", "Return")
    ]
    if not readers or not all(in_chain(ir, u) for u in readers):
        return None
    after = collect_chain(ir, readers[0])
    if (
        not set(readers) <= set(after.nodes)
        or after.producer != key
        or len(after.consumers) != 1
        or touches_backward(ir, after)
    ):
        return None
    return after


def _rows_gathered_then_sliced(ir: IRFile, key: int, pos: int, before: Chain, after: Chain) -> int | None:
    """For a MatMul: the factor by which its input ``pos`` is gathered along the rows it keeps
    (not the contracted dim) and its output sliced back along the same rows; None otherwise."""
    if pos != 0 or ir[key]["op"] not in PLAIN_MATMUL_OPS:
        return None
    ta, _ = transposes(ir, key)
    if ta:
        return None
    if not all(ir[k]["op"] in GATHER_OPS | {"Reshape"} for k in before.nodes):
        return None
    if not all(ir[k]["op"] in SLICE_OPS | {"Reshape"} for k in after.nodes):
        return None
    src, dst = before.entry_shape, before.exit_shape
    out_full, out_kept = after.entry_shape, after.exit_shape
    if not (src and dst and out_full and out_kept) or 0 in src + dst + out_full + out_kept:
        return None
    # the contracted (last) dim of the input and the output's columns are never touched; the rows
    # (every other dim, however the Reshapes fold them) grow and shrink by the same factor
    if src[-1] != dst[-1] or out_full[-1] != out_kept[-1]:
        return None
    grown, shrunk = prod(dst) // prod(src), prod(out_full) // prod(out_kept)
    if prod(dst) % prod(src) or prod(out_full) % prod(out_kept) or grown != shrunk:
        return None
    return grown if grown > 1 else None


def _rows_split(ir: IRFile, key: int, factor: int) -> tuple[Any, ...] | None:
    """The MatMul's strategy with its rows split ``factor`` times more: it then computes only the
    rows this rank keeps, from the input as produced (Reshapes that fold the rows need no change)."""
    strat = strategy(ir, key)
    if strat is None or len(strat) < 2 or len(strat[0]) != 2:
        return None
    x = (strat[0][0] * factor, strat[0][1])
    return (x,) + tuple(tuple(s) for s in strat[1:])


def _region_trip(ir: IRFile, key: int) -> RoundTrip | None:
    """A round trip across the point-wise ops that take ``key``'s layout from its output on: the
    run before ``key`` is their only way in (besides weights), one run after the last is their
    only way out, and it hands the consumer the layout the producer made."""
    if ir[key]["op"] not in ROW_OPS:
        return None
    layout = _layout(ir, key)
    if layout is None:
        return None
    region = _grow(ir, key, layout)
    if len(region) < 2:
        return None
    members = set(region)
    before: Chain | None = None
    for member in region:
        for src in ir.producers(member):
            if src in members or ir[src]["kind"] != "cnode" or is_weight(ir, src) or ir[src]["op"] == "Load":
                continue
            if not in_chain(ir, src):
                return None  # a way in without redistribution: the layouts agree there
            run = collect_chain(ir, src)
            if before is not None and run.nodes != before.nodes:
                return None
            before = run
    if before is None or before.producer is None or before.producer in members:
        return None
    if (
        not {c for c, _ in before.consumers} <= members
        or is_weight(ir, before.producer)
        or touches_backward(ir, before)
    ):
        return None
    exits = [
        u
        for m in region
        for u in ir.consumers(m)
        if u not in members
        and not ir.is_backward(u)
        and ir[u]["kind"] == "cnode"
        and ir[u]["op"] not in ("Partial", "UpdateState", "Return", "Depend")
    ]
    if not exits or not all(in_chain(ir, u) for u in exits):
        return None
    after = collect_chain(ir, exits[0])
    if not set(exits) <= set(after.nodes) or after.producer not in members or len(after.consumers) != 1:
        return None
    if touches_backward(ir, after) or not _quiet_pair(ir, before, after):
        return None
    produced = _layout_restored(ir, before, after)
    if produced is None or produced == layout:
        return None
    if before.entry is None or after.exit is None or before.entry.shape != after.exit.shape:
        return None
    pos = (
        next(p for p, src in enumerate(ir.producers(key)) if src in before.nodes)
        if any(src in before.nodes for src in ir.producers(key))
        else 0
    )
    fix = reading_as_produced(ir, key, pos, produced)
    if fix is None or fix == strategy(ir, key):
        return None
    return RoundTrip(key, pos, before, after, produced, fix, 1, tuple(region[1:]))


def _split_then_gathered(ir: IRFile, key: int) -> RoundTrip | None:
    """A point-wise or norm op reading a local slice of a whole tensor, whose result one reader
    gathers whole again while another reads it split as produced."""
    if ir[key]["op"] not in ROW_OPS:
        return None
    readers = [
        u
        for u in ir.consumers(key)
        if not ir.is_backward(u)
        and ir[u]["kind"] == "cnode"
        and ir[u]["op"] not in ("Partial", "UpdateState", "Return", "Depend")
    ]
    runs = [u for u in readers if in_chain(ir, u)]
    direct = tuple(u for u in readers if not in_chain(ir, u))
    if not runs or not direct:
        return None
    after = collect_chain(ir, runs[0])
    if not set(runs) <= set(after.nodes) or after.producer != key or len(after.consumers) != 1:
        return None
    if touches_backward(ir, after) or not all(ir[k]["op"] in GATHER_OPS | _GLUE_OPS for k in after.nodes):
        return None
    for pos, src in enumerate(ir.producers(key)):
        if ir[src]["kind"] != "cnode" or not in_chain(ir, src):
            continue
        before = collect_chain(ir, src)
        if before.producer is None or touches_backward(ir, before) or key not in {c for c, _ in before.consumers}:
            continue
        # a local slice: the op's input was whole on every rank before it
        if not all(ir[k]["op"] in SLICE_OPS | {"Reshape"} for k in before.nodes):
            continue
        whole = _whole_layout(ir, before.producer)
        if whole is None or before.entry is None or after.exit is None or before.entry.shape != after.exit.shape:
            continue
        if not _quiet_pair(ir, before, after):
            continue
        consumer, c_pos = after.consumers[0]
        wants = strategy(ir, consumer)
        if not wants or c_pos >= len(wants) or tuple(wants[c_pos]) != whole:
            continue
        fix = reading_as_produced(ir, key, pos, whole)
        if fix is None or fix == strategy(ir, key):
            continue
        return RoundTrip(key, pos, before, after, whole, fix, split_readers=direct)
    return None


_GLUE_OPS = frozenset({"Split", "Concat", "TupleGetItem", "MakeTuple", "Reshape"})


def _whole_layout(ir: IRFile, key: int) -> tuple[Any, ...] | None:
    """The layout of a tensor every rank holds whole: a graph input (a parameter without a default
    value, which full_batch hands every rank in full) or an op's replicated output."""
    data = ir[key]
    if data["kind"] == "param":
        shape = getattr(data.get("out_type"), "shape", None)
        return (1,) * len(shape) if not data.get("has_default") and shape else None
    layout = output_layout(ir, key)
    return layout if layout is not None and all(n == 1 for n in layout) else None


def _layout(ir: IRFile, key: int) -> tuple[Any, ...] | None:
    strat = strategy(ir, key)
    return tuple(strat[0]) if strat and isinstance(strat[0], tuple) else None


def _grow(ir: IRFile, key: int, layout: tuple[Any, ...]) -> list[int]:
    """``key`` and the forward point-wise ops reading its results directly whose full-rank inputs
    all take ``layout`` (lower-rank ones, a bias, its trailing dims), in dump order."""
    region, stack = [key], [key]
    while stack:
        node = stack.pop()
        for user in ir.consumers(node):
            if user in region or ir.is_backward(user) or ir[user]["kind"] != "cnode" or ir[user]["op"] not in ROW_OPS:
                continue
            strat = strategy(ir, user)
            if not strat or not all(isinstance(s, tuple) and tuple(s) == layout[len(layout) - len(s) :] for s in strat):
                continue
            region.append(user)
            stack.append(user)
    return sorted(region, key=lambda k: ir[k].get("line", 0))


def _quiet_pair(ir: IRFile, before: Chain, after: Chain) -> bool:
    """The two runs move data and neither is wasteful on its own (PC001 reports such a run as a chain)."""
    if not any(ir[k]["op"] in MOVING_OPS for k in before.nodes + after.nodes):
        return False
    simulate(ir, before)
    simulate(ir, after)
    return not (before.wastes or after.wastes)


def _layout_restored(ir: IRFile, before: Chain, after: Chain) -> tuple[Any, ...] | None:
    """The producer's output layout when the reader after the trip reads that layout again, else None."""
    layout = output_layout(ir, before.source)
    consumer, c_pos = after.consumers[0]
    wants = strategy(ir, consumer)
    wants = tuple(wants[c_pos]) if wants and c_pos < len(wants) else None
    return layout if layout is not None and layout == wants else None
