"""Root causes of redistribution chains: one config choice that makes many chains, recognised from
the layouts at the chain's two ends, so the chains it causes are reported once, under the cause."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from math import prod
from typing import Any

from irlint.accounts.received import received_bytes, step_received_bytes, waste_entry
from irlint.findings import (
    CommWaste,
    Finding,
    Fixes,
    Related,
    RootCauseFix,
    RootFix,
    SourceLine,
    WastedBytes,
    scope_path,
)
from irlint.model import IRFile
from irlint.model.source import source_of
from irlint.units import human_share

from .chain import ELEMENTWISE_OPS, LAYOUT_KEEPING_OPS, MATMUL_OPS, MOVING_OPS, Chain
from .discovery import backward_index, backward_transpose
from .layouts import (
    NO_LAYOUT_OPS,
    devices,
    layout_expression,
    output_layout,
    output_layout_dict,
    output_layout_expression,
    output_placement,
    placements,
    ranks_moved,
    strategy,
    tuple_matching,
)
from .recomputed_chain import Rerun, rerun_of
from .wording import fmt, size, who


@dataclass(frozen=True)
class RootCause:
    """A cause several chains share: ``key`` tells one cause from another, ``hint`` removes it."""

    kind: str
    key: tuple[Any, ...]
    text: str  # why the chains arise, in a sentence
    hint: str
    fix: RootFix
    node: int | None = None  # the op whose strategy is the cause, when it is one op


def root_cause(ir: IRFile, chain: Chain) -> RootCause | None:
    """The cause of ``chain`` when it is one the layouts show; None for an ordinary mismatch."""
    return batch_merge(ir, chain) or tuple_beside_layout(ir, chain)


def _ends(ir: IRFile, chain: Chain) -> tuple[int, int, int, tuple[Any, ...], tuple[Any, ...] | None] | None:
    """(2-D end, ≥3-D end, local rows at the 2-D end, local shape at the ≥3-D end, its layout) when
    the chain joins a 2-D tensor to a ≥3-D one, else None."""
    entry = chain.entry.shape if chain.entry is not None else None
    exit_ = chain.exit.shape if chain.exit is not None else None
    if not entry or not exit_ or not chain.consumers or chain.producer is None:
        return None
    consumer, pos = chain.consumers[0]
    if len(entry) == 2 and len(exit_) >= 3:
        strat = strategy(ir, consumer)
        layout = tuple(strat[pos]) if strat and pos < len(strat) and isinstance(strat[pos], tuple) else None
        return chain.producer, consumer, entry[0], exit_, layout
    if len(entry) >= 3 and len(exit_) == 2:
        return consumer, chain.producer, exit_[0], entry, output_layout(ir, chain.producer)
    return None


def batch_merge(ir: IRFile, chain: Chain) -> RootCause | None:
    """A flattening Reshape (B, S, H) <-> (B·S, H) between a 2-D op and a ≥3-D op that splits the
    batch and the sequence. The 2-D op splits the merged rows in contiguous blocks; the ≥3-D op's
    (batch, sequence) blocks are contiguous rows only when each batch block holds one sequence.
    With more than one sequence per block and a split sequence, no split of B·S equals it (it would
    need an interleaved layout), so MindSpore gathers and slices at every such edge."""
    ends = _ends(ir, chain)
    if ends is None:
        return None
    flat, shaped, rows, local, layout = ends
    if layout is None or len(layout) < 2 or len(local) != len(layout):
        return None
    batch_split, seq_split = layout[0], layout[1]
    per_replica = local[0]
    if not (isinstance(per_replica, int) and per_replica > 1 and seq_split > 1 and isinstance(rows, int) and rows):
        return None
    # the 2-D op must cut the merged rows finer than the batch blocks, into a replica's sequences;
    # rows split by the batch only are whole sequences, and one sequence per replica would not help
    merged = per_replica * batch_split * local[1] * seq_split
    if merged % rows or merged // rows <= batch_split:
        return None
    text = (
        f"MatMuls on 2-D (batch·sequence, hidden) rows split them in contiguous blocks, while the ops "
        f"around them keep (batch, sequence, ...) and split both (e.g. {who(ir, flat)} and {who(ir, shaped)}, "
        f"layout {fmt(layout)}); each data-parallel replica holds {per_replica} sequences, so one rank's "
        f"(batch, sequence) block is not a contiguous run of the merged rows and no shard() can make it one "
        f"(it would need an interleaved layout)"
    )
    hint = (
        f"one sequence per data-parallel replica: runner_config.batch_size: 1 (now {per_replica} per replica), "
        f"keeping the global batch with runner_config.gradient_accumulation_steps or parallel_config."
        f"micro_batch_num; then each rank's block of the merged rows is its (batch, sequence) block "
        f"and these re-layouts disappear"
    )
    return RootCause(
        "batch-merge",
        ("batch-merge", per_replica),
        text,
        hint,
        RootFix(
            batch_size=1,
            sequences_per_replica=per_replica,
            keep_global_batch_with=("runner_config.gradient_accumulation_steps", "parallel_config.micro_batch_num"),
        ),
    )


def at_cause_ops(
    ir: IRFile, chains: list[Chain], caused: dict[tuple[Any, ...], list[tuple[RootCause, Finding, Chain]]]
) -> Iterator[tuple[Chain, RootCause | None]]:
    """Each chain with the cause whose op it feeds or leaves, else None: a chain that keeps the
    local shape into (or out of) the op whose tuple another chain showed to be the cause is that op's
    re-layout too, although its other end (a row-parallel MatMul's reduce-scattered rows, an op
    without a strategy) has no placement to compare."""
    at = {c.node: c for items in caused.values() for c, _, _ in items if c.node is not None}
    for chain in chains:
        same = chain.entry is not None and chain.exit is not None and chain.entry.shape == chain.exit.shape
        ends = [k for k, _ in chain.consumers[:1]]
        if chain.producer is not None and (source := kept_source(ir, chain.producer)) is not None:
            ends.append(source)
        yield chain, next((at[k] for k in ends if same and k in at), None)


def grouped(ir: IRFile, caused: dict[tuple[Any, ...], list[tuple[RootCause, Finding, Chain]]]) -> Iterator[Finding]:
    """One finding per root cause: the first chain's anchor, every chain it causes as an occurrence
    (its nodes in ``related``, its account in ``extra["occurrences"]``), the bytes summed."""
    total = step_received_bytes(ir)
    backward = backward_index(ir) if caused else {}
    for items in caused.values():
        from irlint.findings_json import extra_data, root_fix_data  # here: a lint without a root cause loads none

        # the chain whose ends name the most of the fix (a Layout to copy) speaks for the cause
        cause = max((c for c, _, _ in items), key=lambda c: len(root_fix_data(c.fix)))
        items = sorted(items, key=lambda item: (item[1].graph, item[1].line))
        found = [f for _, f, _ in items]
        first = found[0]
        # the cause makes each chain whole: every collective of it, forward and backward, goes with it
        moving = [
            k
            for _, _, chain in items
            for k in chain.nodes + backward_transpose(ir, chain, backward)
            if ir[k]["op"] in MOVING_OPS
        ]
        # and the copies recompute runs again in backward, because of a select key
        reruns = [rerun_of(ir, chain.nodes) for _, _, chain in items]
        moving += [c for r in reruns for c, _ in r.copies]
        waste = [WastedBytes(**waste_entry(ir, k, received_bytes(ir, k) or 0)) for k in dict.fromkeys(moving)]
        wasted = sum(w.bytes for w in waste)
        rerun = Rerun(
            [c for r in reruns for c in r.copies],
            list(dict.fromkeys(k for r in reruns for k in r.keys)),
            list(dict.fromkeys(c for r in reruns for c in r.causes)),
        )
        kinds = sorted({(f.op, scope_path(f.scope).rsplit("/", 1)[0]) for f in found})
        message = (
            f"{len(found)} redistribution chains have one root cause, {cause.kind}: {cause.text}; "
            f"together their collectives receive {size(wasted)} per step with the backward transposes"
            + (
                f" and the recomputed copies ({sum(bool(r.copies) for r in reruns)} of them "
                f"{rerun.text('run' if sum(bool(r.copies) for r in reruns) > 1 else 'runs')})"
                if rerun.copies
                else ""
            )
            + ", "
            f"all of it gone with the cause "
            f"({human_share(wasted, total)} of the {size(total)} this step's collectives receive per rank)"
        )
        related: list[Related] = []
        occurrences = []
        for i, f in enumerate(found, 1):
            head = f.message.split(" between ", 1)[0]
            related.append(
                Related(
                    file=f.file,
                    line=f.line,
                    node=f.node,
                    op=f.op,
                    scope=f.scope,
                    graph=f.graph,
                    note=f"chain {i} of {len(found)}: {head}",
                )
            )
            related += list(f.related)
            occurrences.append(
                {"node": f.node, "graph": f.graph, "line": f.line, "op": f.op, "message": f.message, **extra_data(f)}
            )
        facts = {
            "occurrences": occurrences,
            "chains": len(found),
            "chain_sites": len(kinds),
            "kinds": sorted({k for f in found for k in dict(f.facts).get("kinds", ())}),
        }
        if rerun.copies:
            facts["recompute"] = {
                "keys": rerun.keys + rerun.causes,
                "bytes": rerun.bytes,
                "copies": [ir[c]["id"] for c, _ in rerun.copies],
            }
        yield first.with_(
            message=message,
            hint=cause.hint,
            related=tuple(related),
            # the cause is the model's, not a layer's: its chains are in every layer
            cause=f"{_SHORT[cause.kind]} ({len(found)} chains)",
            layer="",
            fix=_short_fix(cause.fix),
            identity=("root-cause", cause.key, tuple(f.identity for f in found)),
            facts=tuple(sorted(facts.items())),
            fixes=Fixes(root_cause=RootCauseFix(cause.kind, cause.text, cause.fix)),
            waste=CommWaste(bytes=wasted, step_received=total),
            stake=None,
            fix_cost=None,
            waste_kinds=tuple(sorted({k for f in found for k in f.waste_kinds})),
            wasted=tuple(waste),
            snippet="",
        )


# the headline's words for a cause, and its fix in a few words (irlint.headline)
_SHORT = {"batch-merge": ">1 sequence per dp replica", "tuple-beside-layout": "tuple strategy beside a Layout"}


def _short_fix(fix: RootFix) -> str:
    if fix.batch_size is not None:
        return f"runner_config.batch_size: {fix.batch_size} per dp replica"
    if fix.device_matrix:
        return fix.config or f"{fix.op} {fix.in_strategy} with {fix.device_matrix}"
    return fix.config or (f"{fix.cell} Layout {fix.layout}" if fix.layout else f"a Layout for {fix.cell}")


# MindFormers config keys that remove a cell's tuple-sharded ops (the cell class, from the scope)
_REMOVED_BY = {"RotaryEmbedding": "use_rope_slice: False (MindFormers' default: RoPE without the slice/neg/concat)"}
# the same for a MindFormers module whose op the source trace names (the cell class alone would also
# name a plain MindSpore nn.Dropout, which no MindFormers key removes)
_MODULE_REMOVED_BY = {
    "parallel_core/training_graph/transformer/dropout.py": (
        "hidden_dropout: 0.0 (model_config; MindFormers' mcore Dropout returns its input when the probability "
        "is 0, and its Qwen3, Qwen3-MoE and DeepSeek-V3 pretrain configs set it; the mcore default is 0.1)"
    )
}
# ops whose output has the layout of their first input
_SHAPE_KEEPING = ELEMENTWISE_OPS | {
    "Concat",
    "StridedSlice",
    "Neg",
    "Softmax",
    "RmsNorm",
    "LayerNorm",
    "Dropout",
    "DropoutExt",
}


def _removed_by(ir: IRFile, key: int, cell_class: str) -> str | None:
    found = source_of(ir, key)
    path = found[0].replace("\\", "/") if found else ""
    if "mindformers/" in path:
        for module, text in _MODULE_REMOVED_BY.items():
            if path.endswith(module):
                return text
    return _REMOVED_BY.get(cell_class)


def _cell_class(ir: IRFile, key: int) -> str:
    """The class of the cell that made ``key``; an op the parallel pass moved to ``Default`` (a
    Dropout's DropoutExt) is named by the cell of the TupleGetItem that reads its result."""
    cell = scope_path(ir[key].get("scope", "")).rsplit("/", 1)[-1]
    if "-" not in cell:
        for reader in ir.consumers(key):
            if ir[reader]["op"] == "TupleGetItem":
                named = scope_path(ir[reader].get("scope", "")).rsplit("/", 1)[-1]
                if "-" in named:
                    cell = named
                    break
    return cell.rsplit("-", 1)[-1]


def _tuple_placement(ir: IRFile, strat: tuple[Any, ...]) -> tuple[Any, ...]:
    """Per dim ((split, rank stride),) of a tuple strategy: the devices it leaves over repeat the
    computation on the innermost device axis, so every split sits that many ranks further apart."""
    repeat = max(devices(ir) // max(prod(strat), 1), 1)
    return tuple(((n, prod(strat[i + 1 :]) * repeat),) if n > 1 else () for i, n in enumerate(strat))


def _is_layout(ir: IRFile, key: int) -> bool:
    return bool((ir[key].get("primitive_attrs") or {}).get("in_layout"))


def _repeats(ir: IRFile, key: int) -> bool:
    strat = strategy(ir, key)
    return (
        not _is_layout(ir, key)
        and strat is not None
        and len(strat) > 0
        and isinstance(strat[0], tuple)
        and devices(ir) > prod(strat[0])
        and ir[key]["op"] in _SHAPE_KEEPING | {"Transpose"}
    )


def _in_placement(ir: IRFile, key: int, pos: int) -> tuple[Any, ...] | None:
    if _is_layout(ir, key):
        placed = placements(ir, key)
        return placed[pos] if placed and pos < len(placed) else None
    strat = strategy(ir, key)
    if not strat or pos >= len(strat) or not isinstance(strat[pos], tuple):
        return None
    return _tuple_placement(ir, tuple(strat[pos]))


def _out_placement(ir: IRFile, key: int) -> tuple[Any, ...] | None:
    if ir[key]["op"] in MATMUL_OPS:
        return output_placement(ir, key) if _is_layout(ir, key) else None
    placed = _in_placement(ir, key, 0)
    if placed is None:
        return None
    if ir[key]["op"] == "Transpose":
        perm = (ir[key].get("args") or (None, None))[1]
        if not (isinstance(perm, tuple) and len(perm) == len(placed)):
            return None
        return tuple(placed[p] for p in perm)
    return placed if ir[key]["op"] in _SHAPE_KEEPING else None


def kept_source(ir: IRFile, key: int) -> int | None:
    """The op with a strategy whose output reaches ``key`` through ops that keep its layout (the
    TupleGetItem of a Dropout's result, a Cast, a Depend); None past a Reshape or an op without a
    strategy that computes (its output's placement is not the input's)."""
    for _ in range(8):
        if ir[key]["kind"] != "cnode":
            return None
        if strategy(ir, key) is not None:
            return key
        if ir[key]["op"] not in LAYOUT_KEEPING_OPS:
            return None
        inputs = [p for p in ir.producers(key) if ir[p]["kind"] != "const"]
        if not inputs:
            return None
        key = inputs[0]
    return None


def tuple_beside_layout(ir: IRFile, chain: Chain) -> RootCause | None:
    """A tuple strategy that leaves devices over (they repeat its computation on the innermost
    device axis) next to an op that places the same tensor dim, split as many ways, on another
    device axis (a Layout naming its axes, or a full tuple): the tensor is re-laid at both edges of
    the tuple op although both sides agree on how many blocks each dim has."""
    if chain.producer is None or not chain.consumers:
        return None
    consumer, pos = chain.consumers[0]
    producer = kept_source(ir, chain.producer)
    if producer is None:
        return None
    produced, read = _out_placement(ir, producer), _in_placement(ir, consumer, pos)
    if produced is None or read is None or len(produced) != len(read):
        return None
    moved = [
        d
        for d, (a, b) in enumerate(zip(produced, read))
        if a and b and prod(n for n, _ in a) == prod(n for n, _ in b) and a != b
    ]
    if not moved:
        return None
    deviant, other = (
        (consumer, producer)
        if _repeats(ir, consumer) and not _repeats(ir, producer)
        else (producer, consumer)
        if _repeats(ir, producer) and not _repeats(ir, consumer)
        else (None, None)
    )
    if deviant is None:
        # a full tuple on an op MindSpore will not shard with a Layout: no tuple order of the device
        # axes places its dims where its neighbour's do, so this op is the one that cannot follow
        stuck = [k for k in (producer, consumer) if ir[k]["op"] in NO_LAYOUT_OPS and not _is_layout(ir, k)]
        if len(stuck) != 1:
            return None
        deviant = stuck[0]
        other = consumer if deviant == producer else producer
    cell_class = _cell_class(ir, deviant)
    in_value = (ir[consumer].get("primitive_attrs") or {}).get("in_layout")
    read_layout = in_value[pos] if isinstance(in_value, tuple) and pos < len(in_value) else None
    # the neighbour's Layout: what the consumer reads, else what the producer outputs
    neighbour = next(
        (
            (expr, lay)
            for expr, lay in (
                (layout_expression(ir, consumer, pos), read_layout),
                (output_layout_expression(ir, producer), output_layout_dict(ir, producer)),
            )
            if expr and isinstance(lay, dict)
        ),
        None,
    )
    layout = neighbour[0] if neighbour else None
    deviant_strat = strategy(ir, deviant)
    assert deviant_strat is not None  # the deviant is the op whose tuple strategy is the cause
    away = ranks_moved(tuple(produced[d] for d in moved), tuple(read[d] for d in moved), devices(ir))
    text = (
        f"{cell_class} shards its ops with a tuple strategy (e.g. {who(ir, deviant)} {fmt(strategy(ir, deviant))}) "
        + (
            f"that uses {used} of {devices(ir)} devices"
            if (used := prod(deviant_strat[0])) < devices(ir)
            else "that puts its split dims on the device axes in order, outermost first"
        )
        + ", so its splits sit on other "
        f"device axes than {who(ir, other)}'s (dim {', '.join(map(str, moved))}: "
        f"{_axes(produced, moved)} vs {_axes(read, moved)}); on {len(away)} of {devices(ir)} ranks the block "
        f"read is one another rank holds, and the tensor is gathered and sliced back at the edges of those ops"
    )
    mine = produced if deviant == producer else read
    theirs = read if deviant == producer else produced
    whole = [d for d, (a, b) in enumerate(zip(mine, theirs)) if b and not a]
    text += (
        f", and dim {', '.join(map(str, whole))}, split by {who(ir, other)}, is whole in the tuple, so every rank "
        f"gathers it and computes all of it; with the neighbours' placement on every dim no re-layout is needed"
        if whole
        else ", although no re-layout is needed"
    )
    removed = _removed_by(ir, deviant, cell_class)
    matching = tuple_matching(neighbour[1]) if neighbour and ir[deviant]["op"] in NO_LAYOUT_OPS else None
    if matching is not None:
        # the op cannot take the Layout: order the Layout's device axes the way a tuple places dims
        split, matrix = matching
        same = tuple(strategy(ir, deviant) or ())[:1] == (split,)
        fixes = ([removed] if removed else []) + [
            f"MindSpore does not shard {ir[deviant]['op']} with a Layout, so "
            + (
                f"keep {who(ir, deviant)}'s tuple ({fmt(split)}, the split counts of its neighbours, {layout}) and "
                if same
                else f"shard {who(ir, deviant)} with the tuple {fmt((split,))}, the split counts of its neighbours "
                f"({layout}), and "
            )
            + f"order the device axes of that Layout as a tuple places dims (the dims' axes in order, outermost "
            f"first): {matrix}, every layout(...) call unchanged; then both place each block on the same rank"
        ]
        src = source_of(ir, deviant)
        fix = RootFix(
            cell=cell_class,
            op=ir[deviant]["op"],
            node=ir[deviant]["id"],
            in_strategy=fmt((split,)),
            keeps_tuple=same,
            device_matrix=matrix,
            source=SourceLine(*src) if src else None,
            config=removed.split(" (")[0] if removed else "",
        )
        return RootCause(
            "tuple-beside-layout", ("tuple-beside-layout", cell_class), text, "; or ".join(fixes), fix, deviant
        )
    fixes = ([removed] if removed else []) + (
        [f"give {cell_class}'s tuple-sharded ops the Layout of their neighbours ({layout})"]
        if layout
        else [
            f"give {cell_class}'s tuple-sharded ops a Layout that places each dim on the device axis its neighbours use"
        ]
    )
    fix = RootFix(cell=cell_class, config=removed.split(" (")[0] if removed else "", layout=layout or "")
    return RootCause(
        "tuple-beside-layout", ("tuple-beside-layout", cell_class), text, "; or ".join(fixes), fix, deviant
    )


def _axes(placed: tuple[Any, ...], dims: list[int]) -> str:
    return ", ".join(" x ".join(f"{n} ranks {stride} apart" for n, stride in placed[d]) for d in dims)
