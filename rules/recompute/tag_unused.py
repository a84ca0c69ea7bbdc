"""RC004 recompute-tag-unused (info, off by default): a tag with no effect and no cost."""

from __future__ import annotations

from collections.abc import Iterator

from irlint.findings import Finding
from irlint.model import IRFile
from irlint.model.layers import Places
from irlint.rule import Invalid, Says, related_node

from . import examples as ex
from .evidence import RecomputeFacts
from .keys import GUESS_NOTE, inserted_by_parallel, node_select_key, tagged_in_layer
from .report import RecomputeRule, how, place_path, short_fix


class RecomputeTagUnused(RecomputeRule):
    """What it finds:
    A forward op tagged for recompute that has no recomputed copy, and no backward op reads its
    output (directly or through non-recomputed layout ops), or reads it only behind a recompute
    cell's kept ``recompute: Bool(0)`` output: MindSpore only duplicates ops whose output
    backward needs, so the tag has no effect. Nothing is lost in memory, which is why this is information
    and off by default (``--extend-select RC004``). Same evidence and stage files as RC001.

    Why it matters:
    The configuration claims more than the graph does; the key is dead weight and may hide that
    the intended op was another one.

    How to fix:
    Remove the select_recompute key (or the ``.recompute()`` call) for this op.

    Not reported: communication and slicing ops the parallel passes inserted (AllGather, Split,
    StridedSlice ... named ``redistribution_op_…``) that carry a tag MindSpore propagated
    (``select_comm_recompute``, or the tag of the primitive they were inserted for): the user
    named none of them. A Reshape the redistribution pass put in place of a model's own Reshape is
    still reported: it carries that primitive's tag.

    Example:
    ``%34 = PrimFunc_ReduceMean(%33, ...) {instance name: loss_mean} primitive_attrs:
    {recompute: Bool(1)}`` whose only consumer is the graph output.
    """

    code = "RC004"
    name = "recompute-tag-unused"
    severity = "info"
    default_enabled = False
    summary = "An op tagged for recompute has no copy because no backward op needs its output"
    INVALID = [
        Invalid(
            ex.LOSS_TAG_UNUSED,
            Says("%1", "tagged for recompute, no backward op reads it", "select_recompute - 'network\\.loss_mean'"),
        ),
        Invalid(
            ex.ATTN_NOT_READ,
            Says("%0", "tagged for recompute, no backward op reads it", "select_recompute - 'attention\\.bmm2'"),
        ),
    ]
    VALID = [
        ex.LOSS_CELL_OUTPUT,
        ex.FFN_2D_APPLIED,
        ex.FFN_RESHAPE_BLOCKS,
        ex.FFN_BEFORE_PASS,
        ex.ATTN_TRANSPOSE_BLOCKS,
    ]

    def check_decided(self, ir: IRFile, facts: RecomputeFacts) -> Iterator[Finding]:
        for k, req in self.unapplied_requests(ir, facts):
            # ops of a Cell.recompute() cell were not tagged one by one: the pass skips the ones
            # backward does not need by design
            if req == "cell" or facts.backward_readers(k):
                continue
            if inserted_by_parallel(ir, k):
                continue
            d = ir[k]
            users = [c for c in ir.consumers(k) if ir[c]["kind"] in ("cnode", "return")]
            shown = ", ".join(f"{ir.describe(c)}" for c in users[:4]) or "none"
            message = (
                f"{d['op']} is tagged for recompute ({how(req)}) but has no recomputed copy: "
                f"no backward node reads its output (consumers: {shown}; none in backward), "
                f"so the tag has no effect and no memory is at stake"
            )
            key, guessed = node_select_key(ir, k)
            # a key that also tags ops of the layer which are recomputed is needed there: dropping
            # it would undo them (a Linear's ``cast`` tags its weight's Cast and its input's)
            used = [
                n
                for n in (tagged_in_layer(ir, d["op"], key, Places.of(ir).layer(k)[0]) if key else ())
                if n != k and facts.applied(n)
            ]
            if used:
                hint = (
                    f"Keep '{key}': it also tags {ir.describe(used[0])}, which is recomputed; on "
                    f"{ir.describe(k)} the tag costs nothing."
                )
            else:
                hint = (
                    "Remove the tag"
                    + (f" (select_recompute key '{key}')" if key else "")
                    + (GUESS_NOTE if guessed else "")
                    + "."
                )
            yield self.finding(
                ir,
                k,
                message,
                hint=hint,
                related=[related_node(ir, c, "consumer (forward)") for c in users[:4]],
                identity=(d["op"], place_path(ir, k)),
                facts={"request": req, "impact": "none"},
                cause="tagged for recompute, no backward op reads it",
                fix="" if used else short_fix([key], "drop") if key else "remove the tag",
            )
