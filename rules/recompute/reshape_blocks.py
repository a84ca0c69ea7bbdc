"""RC002 reshape-blocks-silu-mul-recompute: a FeedForward's SiLU/Mul recompute held back by a
non-recomputed Reshape."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import NamedTuple

from irlint.accounts.stake import stake, staked
from irlint.findings import Finding, Fixes
from irlint.model import IRFile
from irlint.rule import Invalid, Says, related_node
from irlint.units import human_bytes

from . import examples as ex
from .evidence import KeptRead, RecomputeFacts
from .feed_forward import FeedForward, find_feed_forwards
from .fix_cost import fix_cost, hint_text
from .keys import (
    blocking_keys,
    folded_note,
    keys_hint,
    model_code_hint,
    model_code_snippet,
    recompute_fix,
    yaml_snippet,
)
from .report import (
    RecomputeRule,
    backward_text,
    freed_by_recompute,
    nodes_text,
    place_path,
    reader_note,
    short_fix,
    where,
)
from .side_keep import kept_by_fix


class BlockedSiluMul(NamedTuple):
    """A SiLU or Mul tagged for recompute that layout ops between it and backward keep alive."""

    node: int  # the tagged SiLU or Mul
    request: str
    ffn: FeedForward
    blocking: list[int]  # every non-recomputed layout op between it and backward
    readers: list[KeptRead]  # the backward reads through them


def freed_net(ir: IRFile, k: int) -> int:
    """What RC002's fix frees for ``k``: ``freed_by_recompute`` less what its keys make backward keep
    (``side_keep``: under sequence parallel a Linear's re-layout chain, recomputed with its input kept)."""
    blocked = next((b for b in blocked_silu_muls(ir, RecomputeFacts.of(ir)) if b.node == k), None)
    side = kept_by_fix(ir, blocking_keys(ir, _keyed(ir, blocked.blocking))) if blocked is not None else []
    return max(0, freed_by_recompute(ir, k) - sum(c.bytes for c in side))


def blocked_silu_muls(ir: IRFile, facts: RecomputeFacts) -> list[BlockedSiluMul]:
    """Tagged FeedForward SiLU/Mul ops with no copy whose output backward reads through a chain
    holding a non-recomputed Reshape (what RC002 reports; RC001 leaves them to it)."""
    cached: list[BlockedSiluMul] | None = ir.__dict__.get("_recompute_blocked_silu_muls")
    if cached is not None:
        return cached
    out = []
    for ffn in find_feed_forwards(ir, facts):
        for k in dict.fromkeys((ffn.silu, ffn.gate_mul)):
            req = facts.request(k)
            if req is None or facts.applied(k):
                continue
            reads = [r for r in facts.backward_readers(k) if any(ir[v]["op"] == "Reshape" for v in r.chain)]
            if reads:
                out.append(BlockedSiluMul(k, req, ffn, facts.blocking_chain(reads), reads))
    ir.__dict__["_recompute_blocked_silu_muls"] = out
    return out


class ReshapeBlocksSiluMulRecompute(RecomputeRule):
    """What it finds:
    In a FeedForward ``w2(silu(w1(x)) * w3(x))``, SiLU or Mul is tagged for recompute but a
    Reshape on the path ``MatMul(w1/w3) -> [Reshape] -> SiLU -> Mul -> [Reshape] -> MatMul(w2)``
    is not recomputed, and a backward op reads the tensor through that Reshape. MindSpore then
    makes no copy of the SiLU/Mul, and nothing is saved. The FeedForward is found by its
    structure, not by names: separate or fused gate/up MatMuls (one MatMul split afterwards by
    Split / SplitWithSize / StridedSlice / TupleGetItem, as GLM's ``dense_h_to_4h``, also through the
    AllGather / Split / Concat the parallel pass inserts after it, and the StridedSlice it inserts
    before a row-parallel ``dense_4h_to_h``, which has no key of its own), SiLU or its
    CPU expansion ``x * Sigmoid(x)`` (also fed by two backend Casts of one MatMul), and the
    model's own Casts around a Linear; function-compiled dumps with scopes like
    ``Default/SiLU-op1`` are covered. The finding is on the SiLU/Mul and names every
    non-recomputed layout op in the chain (Reshape, and a Cast or Transpose next to it);
    related nodes: those ops, the MatMuls and the backward reader. ``recompute-not-applied``
    does not report the same node again.

    Stage files: as RC001 (``validate`` first); on CPU ``graph_build`` the SiLU is expanded and
    loses its attributes, so only the Mul can be reported there.

    Why it matters:
    With 3-D Linear inputs MindSpore inserts these Reshapes; the documented SiLU/Mul selective
    recompute then silently saves no memory (with 2-D inputs there is no Reshape and it works).

    How to fix:
    Add the blocking ops to ``select_recompute`` (MindFormers Llama: ``feed_forward\\.w1\\.reshape``,
    ``feed_forward\\.w2\\.reshape``; GLM: ``mlp\\.dense_4h_to_h\\.reshape``); the hint derives the
    exact keys from the model's own cell paths and the cell attribute the primitive is called
    through (from the node's source trace; MindSpore merges identical untagged primitives and
    then prints one instance name for all of them, so that name is used only when the dump has no
    trace, and the hint then calls the key of an untagged primitive a guess) and gives the keys
    to add to the user's own. Where the dump names no cell (a function compiled with ms.grad) no
    key is given: the hint names the op and its model source line. A plain MindSpore model (no
    MindFormers class or frame in the dump, no decoder layer) sets recompute in its code: the fix
    is the ``.recompute()`` call on each blocking primitive, ``self.w2.reshape.recompute()`` in the
    cell that calls ``self.w2`` (its file:line from the trace), listed in the fix plan by hand.

    Example:
    ``%6 = PrimFunc_SiLU(%5) {instance name: silu} ... cnode_attrs: {recompute: Bool(1)}`` ->
    ``%7 = PrimFunc_Reshape(%6, ...)`` (no recompute) -> ``%8 = PrimFunc_Mul(%3, %7)``; backward
    ``Mul(%7, %21)`` reads ``%7``.
    """

    code = "RC002"
    name = "reshape-blocks-silu-mul-recompute"
    severity = "warning"
    summary = "SiLU/Mul recompute saves nothing because a Reshape next to it is not recomputed"
    INVALID = [
        Invalid(
            ex.FFN_RESHAPE_BLOCKS,
            Says("%4", "recompute blocked by w1's Reshape"),
            Says("%6", "recompute blocked by w2's Reshape", "select_recompute + 'feed_forward\\.w2\\.reshape'"),
        )
    ]
    VALID = [ex.FFN_BEFORE_PASS, ex.FFN_2D_APPLIED]

    def check_decided(self, ir: IRFile, facts: RecomputeFacts) -> Iterator[Finding]:
        for blocked in blocked_silu_muls(ir, facts):
            yield self._finding(ir, blocked)

    def _finding(self, ir: IRFile, b: BlockedSiluMul) -> Finding:
        k, ffn, blocking = b.node, b.ffn, b.blocking
        d = ir[k]
        needs = blocking_keys(ir, _keyed(ir, blocking))
        slices = [v for v in blocking if ir.is_inserted_slice(v)]
        keys = [n.key for n in needs if n.key and n.needed]
        reader_text = ", ".join(backward_text(ir, r.reader) for r in b.readers)
        message = (
            f"{d['op']}{where(ir, k)} is tagged for recompute but not recomputed: {nodes_text(ir, blocking)} on the "
            f"FeedForward path {'is' if len(blocking) == 1 else 'are'} not recomputed and "
            f"{reader_text} reads the tensor through {'it' if len(blocking) == 1 else 'them'}, "
            f"so the activation is kept and the {d['op']} recompute saves nothing"
        )
        plain = model_code_hint(ir, k, blocking)
        if plain is not None:  # a plain MindSpore model sets recompute in its code: the calls, not keys
            # (priced as the key on the same cell attribute: the call tags that primitive wherever it runs)
            keys = []
            hint = "Recompute the blocking op(s) too, " + plain[1]
        else:
            hint = "Recompute the blocking op(s) too: " + keys_hint(needs)
            hint += folded_note(ir, blocking).rstrip(".")
        if slices:
            hint += (
                f"; {', '.join(ir.describe(v) for v in slices)} was inserted by the parallel pass "
                f"({ir[slices[0]].get('instance')}) and has no key of its own: it takes the recompute tag "
                "of the op it feeds, whose key recomputes it too"
            )
        side = kept_by_fix(ir, needs) if plain is None else []
        if side:
            hint += (
                "; under sequence parallel "
                + ", ".join(f"'{x}'" for x in keys)
                + " also tags the re-layout that replaced that Linear's input Reshape ("
                + ", ".join(f"{ir[c.collective]['op']} {ir[c.collective].get('id', '')}" for c in side)
                + "): MindSpore recomputes it for backward, which runs the collective again and keeps its input ("
                + human_bytes(sum(c.bytes for c in side))
                + "); the bytes at stake are net of it"
            )
        if keys:
            hint += ":\n" + yaml_snippet(keys)
        priced = fix_cost(ir, k, blocking, needs)
        if priced is not None:
            hint += ("\n" if keys else ". ") + hint_text(priced)
        # the Linear as the model names it (the key's cell: mcore's linear_fc2), else its role
        linear = {n.node: _linear_name(n.key) or ffn.role(n.node) for n in needs}
        names = ffn.names
        related = [
            related_node(ir, v, f"blocking {ir[v]['op']} ({linear.get(v) or ffn.role(v)}), not recomputed")
            for v in blocking
        ]
        fused = f"MatMul {names['gate']} (gate and up fused)"
        related += [related_node(ir, ffn.w1, f"MatMul {names['gate']}" if ffn.w1 != ffn.w3 else fused)]
        related += [related_node(ir, ffn.w3, f"MatMul {names['up']}")] if ffn.w3 != ffn.w1 else []
        related += [related_node(ir, w, f"MatMul {names['down']}") for w in ffn.w2]
        related += [
            related_node(ir, r.reader, reader_note(ir, r.reader, "backward reader of the saved tensor"))
            for r in b.readers
        ]
        identity = (d["op"], place_path(ir, k), tuple(place_path(ir, v) for v in blocking))
        held = ", ".join(dict.fromkeys(f"{linear.get(v) or ffn.role(v)}'s {ir[v]['op']}" for v in blocking))
        cause = f"recompute blocked by {held}"  # the rule's name; the evidence says it saves nothing
        finding = self.finding(
            ir,
            k,
            message,
            hint=hint,
            related=related,
            identity=identity,
            fixes=Fixes(recompute=recompute_fix(ir, k, keys, needs) if plain is None else None),
            fix_cost=priced,
            facts={
                "request": b.request,
                **(
                    {
                        "fix_keeps": [
                            {"node": ir[c.collective].get("id", ""), "op": ir[c.collective]["op"], "bytes": c.bytes}
                            for c in side
                        ]
                    }
                    if side
                    else {}
                ),
            },
            cause=cause,
            fix="; ".join(c.text() for c in plain[0]) if plain is not None else short_fix(keys),
            snippet=yaml_snippet(keys) if keys else model_code_snippet(plain[0]) if plain is not None else "",
        )
        if plain is not None and plain[0]:  # the fix is made in the model code, where the call is written
            finding = replace(finding, source=(plain[0][0].path, plain[0][0].line))
        return staked(finding, stake(ir, k, freed_net))


def _linear_name(key: str | None) -> str:
    """The cell a primitive key tags under: ``mlp\\.linear_fc2\\.reshape`` -> ``linear_fc2``."""
    parts = (key or "").replace("\\.", ".").split(".")
    return parts[-2] if len(parts) >= 3 else ""


def _keyed(ir: IRFile, blocking: list[int]) -> list[int]:
    """The blocking ops a key is asked for: not a slice the parallel pass inserted (the key of the
    op it feeds tags it)."""
    return [v for v in blocking if not ir.is_inserted_slice(v)]
