"""Root causes of redistribution chains: one config choice that makes many chains, recognised from
the layouts at the chain's two ends, so the chains it causes are reported once, under the cause."""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from irlint.accounts.received import share
from irlint.findings import Finding, Related
from irlint.model import IRFile

from .evidence import Chain, fmt, output_layout, scope_path, size, strategy, who


@dataclass(frozen=True)
class RootCause:
    """A cause several chains share: ``key`` tells one cause from another, ``hint`` removes it."""

    kind: str
    key: tuple
    text: str          # why the chains arise, in a sentence
    hint: str
    fix: dict


def root_cause(ir: IRFile, chain: Chain) -> RootCause | None:
    """The cause of ``chain`` when it is one the layouts show; None for an ordinary mismatch."""
    return batch_merge(ir, chain)


def _ends(ir: IRFile, chain: Chain):
    """(2-D end, ≥3-D end, local shape at the ≥3-D end, its layout) when the chain joins a 2-D
    tensor to a ≥3-D one, else None."""
    entry = chain.entry.shape if chain.entry is not None else None
    exit_ = chain.exit.shape if chain.exit is not None else None
    if not entry or not exit_ or not chain.consumers:
        return None
    consumer, pos = chain.consumers[0]
    if len(entry) == 2 and len(exit_) >= 3:
        strat = strategy(ir, consumer)
        layout = tuple(strat[pos]) if strat and pos < len(strat) and isinstance(strat[pos], tuple) else None
        return chain.producer, consumer, exit_, layout
    if len(entry) >= 3 and len(exit_) == 2:
        return consumer, chain.producer, entry, output_layout(ir, chain.producer)
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
    flat, shaped, local, layout = ends
    if layout is None or len(layout) < 2 or len(local) != len(layout):
        return None
    batch_split, seq_split = layout[0], layout[1]
    per_replica = local[0]
    if not (isinstance(per_replica, int) and per_replica > 1 and seq_split > 1):
        return None
    text = (f"MatMuls on 2-D (batch·sequence, hidden) rows split them in contiguous blocks, while the ops "
            f"around them keep (batch, sequence, ...) and split both (e.g. {who(ir, flat)} and {who(ir, shaped)}, "
            f"layout {fmt(layout)}); each data-parallel replica holds {per_replica} sequences, so one rank's "
            f"(batch, sequence) block is not a contiguous run of the merged rows and no shard() can make it one "
            f"(it would need an interleaved layout)")
    hint = (f"one sequence per data-parallel replica: runner_config.batch_size: 1 (now {per_replica} per replica), "
            f"keeping the global batch with runner_config.gradient_accumulation_steps or parallel_config."
            f"micro_batch_num; then each rank's block of the merged rows is its (batch, sequence) block "
            f"and these re-layouts disappear")
    return RootCause("batch-merge", ("batch-merge", per_replica), text, hint,
                     {"runner_config.batch_size": 1, "sequences_per_replica": per_replica,
                      "keep_global_batch_with": ["runner_config.gradient_accumulation_steps",
                                                 "parallel_config.micro_batch_num"]})


def grouped(caused: dict[tuple, tuple[RootCause, list[Finding]]], total: int) -> Iterator[Finding]:
    """One finding per root cause: the first chain's anchor, every chain it causes as an occurrence
    (its nodes in ``related``, its account in ``extra["occurrences"]``), the bytes summed."""
    for cause, found in caused.values():
        found = sorted(found, key=lambda f: (f.graph, f.line))
        first = found[0]
        # the cause makes each chain whole: every collective of it, forward and backward, goes with it
        wasted = sum((dict(f.extra).get("moved_bytes") or 0) + (dict(f.extra).get("backward_moved_bytes") or 0)
                     for f in found)
        kinds = sorted({(f.op, scope_path(f.scope).rsplit("/", 1)[0]) for f in found})
        message = (f"{len(found)} redistribution chains have one root cause, {cause.kind}: {cause.text}; "
                   f"together their collectives receive {size(wasted)} per step with the backward transposes, "
                   f"all of it gone with the cause "
                   f"({share(wasted, total)} of the {size(total)} this step's collectives receive per rank)")
        related: list[Related] = []
        occurrences = []
        for i, f in enumerate(found, 1):
            head = f.message.split(" between ", 1)[0]
            related.append(Related(file=f.file, line=f.line, node=f.node, op=f.op, scope=f.scope, graph=f.graph,
                                   note=f"chain {i} of {len(found)}: {head}"))
            related += list(f.related)
            occurrences.append({"node": f.node, "graph": f.graph, "line": f.line, "op": f.op, "message": f.message,
                                **dict(f.extra)})
        extra = {"root_cause": {"kind": cause.kind, "why": cause.text, "fix": cause.fix},
                 "occurrences": occurrences, "chains": len(found), "chain_sites": len(kinds),
                 "kinds": sorted({k for f in found for k in dict(f.extra).get("kinds", ())}),
                 "waste_bytes": wasted, "step_received_bytes": total}
        yield first.with_(message=message, hint=cause.hint, related=tuple(related),
                          identity=("root-cause", cause.key, tuple(f.identity for f in found)),
                          extra=tuple(sorted(extra.items())))
