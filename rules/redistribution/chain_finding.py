"""The PC001 finding of one redistribution chain: the run in order with what each step receives, the
bytes wasted forward, in the backward transpose and in recomputed copies, and the hint (a strategy, a
Layout for a permutation of device axes, or enable_alltoall for an expert-parallel re-layout)."""

from __future__ import annotations

from typing import Any

from irlint.accounts.received import received_bytes, step_received_bytes, waste_entry
from irlint.findings import ChainStep, CommWaste, Finding, Fixes, OpFix, SourceLine, WastedBytes, scope_path
from irlint.model import IRFile
from irlint.model.source import source_of
from irlint.rule import Rule
from irlint.units import human_share, spans

from .chain import MOVING_OPS, QUIET_IN_RELATED, Chain, waste_finding
from .discovery import backward_index, backward_transpose, end_note, near_experts, readers, strategy_source
from .fix_search import best_fix, hint_for, sibling_hint
from .layouts import (
    NO_LAYOUT_OPS,
    layout_call,
    layout_expression,
    output_layout_dict,
    output_layout_expression,
    strategy,
    tuple_matching,
)
from .recomputed_chain import kept_type, rerun_of
from .simulation import Permutation, permutation
from .steps import step_text
from .wording import first_in, fmt, note, placement_text, short_who, size, who


def chain_finding(rule: Rule, ir: IRFile, chain: Chain, cause_op: int | None = None) -> Finding:
    backward = backward_index(ir)
    # the finding starts at the first wasteful op: scheme collectives before it are not waste
    span = chain.span(ir) or chain.nodes
    anchor = next((k for k in span if ir[k]["op"] in MOVING_OPS), span[0])
    consumer, pos = chain.consumers[0] if chain.consumers else (None, 0)
    survive = chain.exit.nbytes if chain.exit is not None else None
    if survive is None:  # every reader is in backward (a weight-gradient MatMul has no strategy)
        kept = kept_type(ir, chain.nodes)
        survive = kept.nbytes if kept is not None else None
    transpose = backward_transpose(ir, chain, backward)
    alltoall = min((w.alltoall_bytes for w in chain.wastes if w.alltoall_bytes), default=None)
    expert = near_experts(ir, consumer, True) or near_experts(ir, chain.producer, False)
    expert_relayout = bool(
        alltoall
        and expert is not None
        and permutation(ir, chain) is None
        and sum(ir[k]["op"] in MOVING_OPS for k in span) == 1
    )
    if expert_relayout:
        # expert parallelism needs the re-layout: what one AlltoAll moves is scheme, the rest waste
        chain.kept_by_scheme = alltoall or 0
    waste = [
        (k, max((received_bytes(ir, k) or 0) - chain.kept_by_scheme, 0))
        for k in span + backward_transpose(ir, chain, backward, span)
        if ir[k]["op"] in MOVING_OPS
    ]
    wasted = sum(b for k, b in waste if k in span)
    wasted_back = sum(b for k, b in waste if k not in span)
    # copies recompute runs in backward: the same waste again, paid because of a select key
    rerun = rerun_of(ir, [k for k in chain.nodes if k in span])
    waste += rerun.copies
    in_all = wasted + wasted_back + rerun.bytes
    moved_back = sum(received_bytes(ir, k) or 0 for k in transpose)
    if ir[anchor]["op"] in MOVING_OPS and expert_relayout:
        cost = (
            f"the expert-parallel re-layout itself is scheme (one AlltoAll: {size(alltoall)}), the other "
            f"{size(wasted)} received are waste"
        )
        if transpose:
            cost += f"; the backward transpose wastes {size(wasted_back)} more, {size(in_all)} per step in all"
    elif ir[anchor]["op"] in MOVING_OPS:
        cost = f"{size(wasted)} received to keep {size(survive)}"
        if transpose:
            cost += (
                f"; the backward transpose ({' -> '.join(ir[k]['op'] for k in transpose)}) moves "
                f"{size(wasted_back)} more, {size(in_all)} per step in all"
            )
    else:
        cost = f"no communication, but {size(survive)} are copied to end where they started"
    if rerun.copies:
        cost += f"; it {rerun.text()}"
    sequence = " -> ".join(step_text(ir, k, costs=True) for k in chain.nodes if ir[k]["op"] not in QUIET_IN_RELATED)
    kinds = sorted({w.kind for w in chain.wastes})
    what = "; ".join(w.text for w in chain.wastes)
    moved_blocks = permutation(ir, chain)
    if moved_blocks is None and cause_op is not None:
        # joined to a cause by its op: the other end has no placement, so no claim on ranks or a cheaper step
        end = "into" if any(k == cause_op for k, _ in chain.consumers) else "out of"
        what = (
            f"the local shape {chain.entry} is the same at both ends, re-laid {end} {who(ir, cause_op)}, the op "
            f"whose tuple is the root cause; the other end has no placement irlint can read, so which ranks "
            f"trade blocks is not claimed"
        )
    if moved_blocks is not None:
        kinds = ["permutation-as-gather"]
        what = (
            f"{who(ir, chain.producer)} and {who(ir, consumer)} both split this tensor "
            f"{fmt(moved_blocks.split)}, but on different device axes ({placement_text(moved_blocks.produced)}"
            f" vs {placement_text(moved_blocks.read)}): {_trading(moved_blocks, chain)}; MindSpore re-lays the "
            f"tensor by gathering it whole ({moved_blocks.factor}x) on every rank and slicing one block back, and "
            f"the local shape {chain.entry} is the same at both ends"
        )
    after = "".join(f", after the scheme {step_text(ir, k, costs=True)}," for k in chain.scheme)
    total = step_received_bytes(ir)
    message = (
        f"redistribution chain {sequence} between {who(ir, chain.producer)}{after} and "
        f"{readers(ir, chain)}: {what}; {cost}; {human_share(in_all, total)} of the "
        f"{size(total)} this step's collectives receive per rank"
    )
    same_rank = (
        chain.entry is not None
        and chain.exit is not None
        and len(chain.entry.shape or ()) == len(chain.exit.shape or ())
    )
    hint = chain.hint or hint_for(ir, chain.source, consumer, pos, comparable=same_rank)
    # under sharding propagation, the user's strategy the two ends follow
    siblings = sibling_hint(ir, chain.source, consumer, pos) if consumer is not None and chain.hint is None else None
    if siblings is not None:
        hint = siblings[0]
    fixed_op: int | None = None
    if moved_blocks is not None and consumer is not None:  # a permutation always has its reader
        hint, fix_of_blocks, fixed_op = placement_hint(ir, chain.source, consumer, pos)
        alltoall = None
    if alltoall and expert is not None:
        # the layout change is the point of expert parallelism: keep it, make it cheap
        moved_fwd = sum(received_bytes(ir, k) or 0 for k in span if ir[k]["op"] in MOVING_OPS)
        hint = (
            f"{who(ir, expert)} splits its weights' expert dim (in_strategy {fmt(strategy(ir, expert))}), so "
            f"this re-layout is the expert-parallel dispatch/combine: set_auto_parallel_context("
            f"enable_alltoall=True) makes MindSpore emit one AlltoAll receiving {size(alltoall)} instead of "
            f"{size(moved_fwd)}"
        )
    elif alltoall:
        hint += (
            "; where the layout change is wanted, set_auto_parallel_context(enable_alltoall=True) makes "
            "MindSpore emit one AlltoAll instead"
        )
    related = [end_note(ir, chain.source, "producer")]
    related += [note(ir, k, "scheme, not waste: " + step_text(ir, k, costs=True)) for k in chain.scheme]
    related += [
        note(ir, k, step_text(ir, k, costs=True))
        for k in chain.nodes
        if k != anchor and ir[k]["op"] not in QUIET_IN_RELATED
    ]
    related += [end_note(ir, c, f"consumer (input {p})") for c, p in chain.consumers]
    if siblings is not None:
        a, b = siblings[3]
        related += [end_note(ir, a, f"sharded by the user; {short_who(ir, chain.source)} follows its layout")]
        related += [end_note(ir, b, f"sharded by the user; {short_who(ir, consumer)} follows its layout")]
    related += [note(ir, k, "backward transpose: " + step_text(ir, k, costs=True)) for k in transpose]
    identity = (
        tuple(ir[k]["op"] for k in chain.nodes if ir[k]["op"] not in QUIET_IN_RELATED),
        scope_path(ir[chain.source].get("scope", "")),
        tuple(scope_path(ir[c].get("scope", "")) for c, _ in chain.consumers),
        tuple(kinds),
    )
    waste_bytes = CommWaste(
        bytes=in_all,
        step_received=total,
        moved=chain.moved,
        backward_moved=moved_back,
        steps=tuple(
            ChainStep(
                ir[k]["id"], ir[k]["op"], str(first_in(ir, k)), str(ir[k].get("out_type")), received_bytes(ir, k) or 0
            )
            for k in chain.nodes
            if ir[k]["op"] not in QUIET_IN_RELATED
        ),
    )
    facts: dict[str, Any] = {
        "kinds": kinds,
        "surviving_bytes": survive,
        "backward": [ir[k]["id"] for k in transpose],
        "scheme": [ir[k]["id"] for k in chain.scheme],
        "entry": str(chain.entry) if chain.entry else None,
        "exit": str(chain.exit) if chain.exit else None,
        "producer_strategy": fmt(strategy(ir, chain.producer)),
        "consumer_strategy": fmt(strategy(ir, consumer)) if consumer is not None else None,
    }
    if rerun.copies:
        facts["recompute"] = {
            "keys": rerun.keys + rerun.causes,
            "bytes": rerun.bytes,
            "copies": [ir[c]["id"] for c, _ in rerun.copies],
        }
    fix = best_fix(ir, chain.source, consumer, pos) if consumer is not None and same_rank else None
    if siblings is not None:
        fix = (siblings[1], siblings[2], 0)
    fixes = Fixes()
    if moved_blocks is not None:
        fixes = Fixes(ops=(fix_of_blocks,))
        facts["split"] = fmt(moved_blocks.split)
    elif alltoall and expert is not None:
        fixes = Fixes(context="enable_alltoall=True")
    elif fix is not None and chain.hint is None:
        fixes = Fixes(ops=(OpFix(ir[fix[0]]["id"], in_strategy=fmt(fix[1]), source=fix_source(ir, fix[0])),))
    ops = "->".join(dict.fromkeys(ir[k]["op"] for k in chain.nodes if ir[k]["op"] in MOVING_OPS)) or "re-layout"
    cause = f"{ops} between {short_who(ir, chain.producer)} and {short_who(ir, consumer)}: {', '.join(kinds)}"
    short = _short_fix(ir, fixed_op if moved_blocks is not None else fix[0] if fix else None, fixes)
    return waste_finding(
        rule,
        ir,
        anchor,
        message,
        facts,
        waste_bytes,
        fixes,
        wasted=[WastedBytes(**waste_entry(ir, k, b)) for k, b in waste],
        hint=hint,
        related=related,
        identity=identity,
        cause=cause,
        fix=short,
        waste_kinds=kinds,
    )


def _trading(moved: Permutation, chain: Chain) -> str:
    """Which ranks read a block another rank holds: the only data a permutation has to move."""
    block = size(chain.exit.nbytes) if chain.exit is not None and chain.exit.nbytes else "one block"
    if not moved.moved:
        return "every rank reads the block it holds"
    ranks = ", ".join(spans(moved.moved))
    kept = moved.ranks - len(moved.moved)
    return f"ranks {ranks} read a block another rank holds (sending it there receives {block} on each)" + (
        f", the other {kept} of {moved.ranks} ranks read the block they hold" if kept > 0 else ""
    )


def _short_fix(ir: IRFile, key: int | None, fixes: Fixes) -> str:
    """The headline's few words for the change ``fixes`` holds (the hint's, never another);
    ``key``: the op it changes."""
    if fixes.context:
        return fixes.context
    if not fixes.ops:
        return ""
    fix = fixes.ops[0]
    named = short_who(ir, key)
    if fix.device_matrix:
        return " ".join(x for x in (named, fix.in_strategy, "with", fix.device_matrix) if x)
    if fix.in_layout:
        return f"{named} with {fix.in_layout.split(' of ')[-1]}"
    if fix.in_strategy:
        return f"{named} in_strategy {fix.in_strategy}"
    return ""


def placement_hint(ir: IRFile, producer: int, consumer: int, pos: int) -> tuple[str, OpFix, int]:
    """Which of two ops with the same split counts to change, and to what: the one sharded with a
    plain tuple takes the Layout the other was given; an op MindSpore will not shard with a Layout
    keeps its tuple, and the Layout's device axes are ordered the way the tuple places dims."""
    # past the TupleGetItem of a Dropout's result to the op whose strategy made it
    source = producer if strategy(ir, producer) is not None else (strategy_source(ir, producer) or producer)
    produced, read = output_layout_expression(ir, source), layout_expression(ir, consumer, pos)
    in_value = (ir[consumer].get("primitive_attrs") or {}).get("in_layout")
    read_layout = in_value[pos] if isinstance(in_value, tuple) and pos < len(in_value) else None
    expr: str | None
    if produced and not read:
        op, expr, other, layout = consumer, produced, source, output_layout_dict(ir, source)
    elif read and not produced:
        op, expr, other, layout = source, read, consumer, read_layout
    else:
        op, expr, other, layout = consumer, produced or read, source, output_layout_dict(ir, source)
    if expr is None:
        return (
            (
                f"give {who(ir, op)} the device-axis order of {who(ir, other)}: a Layout that maps each split dim "
                f"to the same device axis, so that the blocks stay on their ranks and the chain and its backward "
                f"transpose disappear"
            ),
            OpFix(ir[op]["id"]),
            op,
        )
    matching = tuple_matching(layout) if ir[op]["op"] in NO_LAYOUT_OPS and isinstance(layout, dict) else None
    if matching is not None:
        split, matrix = matching
        same = tuple(strategy(ir, op) or ())[:1] == (split,)
        return (
            (
                f"{who(ir, op)} (in_strategy {fmt(strategy(ir, op))}) places its blocks differently from "
                f"{who(ir, other)} ({expr}), and MindSpore does not shard {ir[op]['op']} with a Layout: order the "
                f"device axes of that Layout as a tuple places dims (each dim's axes in order, outermost first), "
                f"{matrix}, every layout(...) call unchanged"
                + ("" if same else f", and shard {who(ir, op)} with the tuple {fmt((split,))}")
                + "; then the tuple places every block where the Layout does, and the chain and its backward "
                "transpose disappear"
            ),
            OpFix(ir[op]["id"], device_matrix=matrix, in_strategy="" if same else fmt((split,))),
            op,
        )
    entries = tuple(strategy(ir, op) or ())
    calls = [layout_call(layout, tuple(e)) for e in entries] if isinstance(layout, dict) and entries else []
    if not calls or None in calls:  # one input, or no entry to read: the neighbour's own call
        calls = [expr.split(" of ")[0]] * (len(entries) or 1)
    strategy_text = f"in_strategy=({', '.join(map(str, calls))}{',' if len(calls) == 1 else ''})"
    return (
        (
            f"{who(ir, op)} (in_strategy {fmt(strategy(ir, op))}) places its blocks differently from "
            f"{who(ir, other)} ({expr}): shard it with the same {expr.split(' of ')[1]}, {strategy_text}; the "
            f"strategies name the same split counts, so only the device axes change, and the chain and its "
            f"backward transpose disappear"
        ),
        OpFix(ir[op]["id"], in_layout=expr),
        op,
    )


def fix_source(ir: IRFile, k: int) -> SourceLine | None:
    """The model line that creates the op whose strategy changes."""
    src = source_of(ir, k)
    return SourceLine(*src) if src else None
