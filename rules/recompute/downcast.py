"""RC003 recompute-downcast: a recomputed fp32 -> fp16/bf16 Cast keeps its fp32 input alive."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

from irlint.accounts.stake import downcast_cost, stake, staked
from irlint.findings import Finding, Fixes
from irlint.model import IRFile
from irlint.read.values import TYPE_ID_NAMES
from irlint.rule import Invalid, Says, related_node

from . import examples as ex
from .evidence import HIGH_PRECISION, LOW_PRECISION, RecomputeFacts
from .keys import GUESS_NOTE, node_select_key
from .report import RecomputeRule, nodes_text, place_path, short_fix


def cast_types(ir: IRFile, k: int) -> tuple[str | None, str | None]:
    """(source, destination) dtype of a Cast: from its types, else the dst type id argument."""
    d = ir[k]
    ins: tuple[Any, ...] = d.get("in_types") or ()
    src = ins[0].dtype if ins else None
    out = d.get("out_type")
    dst = out.dtype if out is not None else None
    if dst is None:
        args: tuple[Any, ...] = d.get("args") or ()
        if len(args) > 1 and isinstance(args[1], int):
            dst = TYPE_ID_NAMES.get(args[1])
    return src, dst


class Downcast(NamedTuple):
    """A tagged Cast to a lower precision whose recompute keeps its high-precision input."""

    src: str
    dst: str
    source: int  # the activation whose high-precision output the recompute keeps
    blocking: tuple[int, ...]  # not recomputed yet: the layout ops whose recompute would apply it


def costly_downcast(ir: IRFile, facts: RecomputeFacts, k: int) -> Downcast | None:
    """A tagged Cast to a lower precision whose high-precision input is an activation that is not
    itself recomputed (not a weight Load), when the Cast was recomputed, or when only
    non-recomputed layout ops keep it from being recomputed (then the tag raises memory as soon
    as they are recomputed); None otherwise: a ``Bool(0)`` cast, or one no backward node needs."""
    if ir[k].get("op") != "Cast" or facts.request(k) not in ("select", "cell"):
        return None
    src, dst = cast_types(ir, k)
    if src not in HIGH_PRECISION or dst not in LOW_PRECISION:
        return None
    first = ir.producers(k)[:1]
    source, _ = facts.up_through_views(first[0]) if first else (None, [])
    if source is None or ir[source]["kind"] != "cnode" or facts.applied(source):
        return None  # a parameter or a recomputed input: nothing extra is kept
    if facts.applied(k):
        return Downcast(src, dst, source, ())
    blocking = facts.blocking_chain(facts.backward_readers(k))
    return Downcast(src, dst, source, tuple(blocking)) if blocking else None


class RecomputeDowncast(RecomputeRule):
    """What it finds:
    A Cast from Float32/Float64 to Float16/BFloat16 that was recomputed (it has a
    ``recompute_id`` and a copy) while its high-precision input is an activation that is not
    itself recomputed (not a weight ``Load``). Dtypes come from the type line, else from the
    destination type id (``I64(42)`` Float16, ``I64(45)`` BFloat16). Also a tagged down-cast
    whose recompute only non-recomputed layout ops hold back (backward reads it through them):
    the finding says it raises memory once they are recomputed. Up-casts, casts of parameters,
    casts whose input is recomputed too (full recompute), ``recompute: Bool(0)`` casts and tagged
    casts no backward node needs are fine.

    Stage files: as RC001 (``validate`` first); files before the recompute pass are not judged.

    Why it matters:
    To recompute the down-cast, backward must keep its fp32 input instead of the fp16 output:
    memory goes up, the opposite of what recompute is for. Often the tag comes from a Cast
    primitive shared by the up-cast and the down-cast of an RMSNorm.

    How to fix:
    Recompute the up-cast (fp16 -> fp32) instead, give the down-cast its own primitive without
    the tag, or drop its select_recompute key.

    Example:
    ``%11 = PrimFunc_Cast(%10, I64(42)) ... cnode_attrs: {recompute_sub_graph: U64(1),
    recompute_id: I64(2), recompute: Bool(1)}`` with types ``(<Tensor[Float32], (2, 8, 32)>) ->
    (<Tensor[Float16], ...>)`` and a ``duplicated`` copy.
    """

    code = "RC003"
    name = "recompute-downcast"
    severity = "warning"
    summary = "A down-cast (fp32 -> fp16/bf16) is recomputed, which keeps its fp32 input and raises memory"
    INVALID = [
        Invalid(
            ex.CAST_DOWN_RECOMPUTED,
            Says(
                "%1",
                "recomputed Float32->Float16 down-cast keeps its Float32 input",
                "select_recompute - 'attention_norm\\.cast'",
            ),
        ),
        Invalid(
            ex.CAST_DOWN_TAGGED,
            Says(
                "%1",
                "recomputed Float32->Float16 down-cast keeps its Float32 input",
                "select_recompute - 'attention_norm\\.rcast'",
            ),
        ),
    ]
    VALID = [ex.CAST_UP_TAGGED, ex.FFN_RESHAPE_BLOCKS]

    def check_decided(self, ir: IRFile, facts: RecomputeFacts) -> Iterator[Finding]:
        for k in ir.nodes_by_op("Cast"):
            down = costly_downcast(ir, facts, k)
            if down is None:
                continue
            d = ir[k]
            in_t = (d.get("in_types") or (None,))[0]
            out_t = d.get("out_type")
            sizes = ""
            if in_t is not None and out_t is not None and in_t.nbytes and out_t.nbytes:
                sizes = f" ({in_t.nbytes} bytes instead of {out_t.nbytes})"
            keeps = f"its {down.src} input {ir.describe(down.source)} alive for backward{sizes}"
            if down.blocking:
                message = (
                    f"Cast {down.src} -> {down.dst} is tagged for recompute; it is not recomputed only "
                    f"because non-recomputed {nodes_text(ir, list(down.blocking))} "
                    f"{'keeps' if len(down.blocking) == 1 else 'keep'} its output for "
                    f"backward: once they are recomputed, recomputing the down-cast keeps {keeps}, "
                    f"which raises memory"
                )
            else:
                message = (
                    f"Cast {down.src} -> {down.dst} was recomputed: recomputing a down-cast keeps "
                    f"{keeps}, which raises memory"
                )
            key, guessed = node_select_key(ir, k)
            hint = (
                "Recompute the up-cast before the norm instead, or give the down-cast its own "
                "Cast primitive without the tag"
                + (f"; drop select_recompute key '{key}'" if key else "")
                + (GUESS_NOTE if guessed else "")
                + "."
            )
            related = [related_node(ir, down.source, f"{down.src} input kept for the recompute")]
            related += [related_node(ir, b, "not recomputed; holds the recompute back") for b in down.blocking]
            cause = f"recomputed {down.src}->{down.dst} down-cast keeps its {down.src} input"
            finding = self.finding(
                ir,
                k,
                message,
                hint=hint,
                related=related,
                cause=cause,
                fix=short_fix([key], "drop") if key else "recompute the up-cast instead",
                identity=(d["op"], place_path(ir, k), down.src, down.dst),
                facts={"src_dtype": down.src, "dst_dtype": down.dst, "applied": facts.applied(k)},
                fixes=Fixes(drop_select_recompute=(key,) if key else ()),
            )
            yield staked(finding, stake(ir, k, downcast_cost))
