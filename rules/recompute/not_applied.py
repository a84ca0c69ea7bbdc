"""RC001 recompute-not-applied: asked to recompute, no copy, and backward keeps the output."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from irlint.accounts.stake import stake, staked
from irlint.findings import Finding, Fixes, RecomputeFix
from irlint.model import IRFile
from irlint.rule import Invalid, Says, related_node
from irlint.units import human_bytes

from . import examples as ex
from .downcast import costly_downcast
from .evidence import KeptRead, RecomputeFacts, cell_text, is_recompute_fence
from .fix_cost import fix_cost, hint_text
from .keys import (
    GUESS_NOTE,
    ModelCodeRecompute,
    blocking_keys,
    folded_note,
    keys_hint,
    keys_snippet,
    model_code_hint,
    model_code_recompute,
    model_code_snippet,
    node_select_key,
    plain_model_op,
    primitive_class,
    recompute_fix,
    user_frame,
)
from .report import (
    RecomputeRule,
    backward_text,
    freed_by_recompute,
    how,
    inputs_kept_by_fix,
    nodes_text,
    place_path,
    reader_note,
    short_fix,
    where,
)
from .reshape_blocks import blocked_silu_muls


def _cell_key(key: str | None) -> str | None:
    """The key of the cell a primitive's key names the primitive in (its key without the last part)."""
    cell = key.rpartition("\\.")[0] if key else ""
    return cell or None


class RecomputeNotApplied(RecomputeRule):
    """What it finds:
    A forward op that was asked to recompute (``recompute: Bool(1)``, or every op of a
    ``Cell.recompute()`` cell) but has no recomputed copy after the recompute pass, while a
    backward op still reads its output, directly or through non-recomputed layout ops
    (Reshape, Transpose, Cast, ExpandDims, Squeeze, and a StridedSlice the parallel pass inserted
    before a row-parallel Linear) and pass-through ops (Depend, Load ...):
    every blocking op is named, with the select_recompute keys that unblock the recompute
    (e.g. an attention's ``attention\\.merger_head_transpose``, and ``attention\\.reshape`` for wo's
    input Reshape folded with the attention's merge-heads one, which ``attention\\.wo\\.reshape`` does not
    tag). Keys come only from the dump's own names; an op that carries the tag gets none.
    The walk stops at a ``recompute: Bool(0)`` output of a multi-op recompute cell: that output
    is kept by design, and a tag behind it costs nothing (see RC004). Applied means: the op has
    ``recompute_id`` and a copy with ``duplicated: Bool(1)`` and the same id exists (older
    dumps: a ``duplicated`` copy; lazy_inline dumps: a ``duplicated`` copy with the op's
    ``unique_id`` in the backward half ``@…◂…``, which reads the forward half's values through
    its ``Partial``). In a pipeline stage the bytes at stake are per micro batch, and the message
    says how many micro batches the stage holds in flight.

    One-op cells: a ``Bool(0)`` op that is the only op of its recompute cell (a select key or a
    ``.recompute()`` call naming an activation cell such as GLM's ``mlp.activation_func.silu``)
    is the cell's output, which ``Cell.recompute()`` never recomputes: when backward reads it,
    it is reported, and the hint gives the key of the primitive inside the cell. A multi-op
    cell's ``Bool(0)`` output is its checkpoint, kept by design: never reported. Cells are
    counted in the layer the op's weights give, not the printed one: a model whose decoder
    layers are one class can print layer 0's scope on the SiLU of every layer; and per call: a
    cell called twice (LeNet's ``self.pool`` after each conv) prints one scope for both calls,
    whose ops are linked only through ops outside the cell. Under lazy_inline
    the one-op cell's op has no recompute attribute at all, only ``need_cse_after_recompute:
    Bool(1)`` and the ``recompute_`` scope prefix, and no copy. The primitive's key replaces the
    cell's: with both (its primitive tagged, the prefix kept) MindSpore still marks the cell's
    output not to be recomputed ("All nodes in the graph … are the output nodes, which are set to
    not be recomputed"), and the fix takes the cell's key out (``irlint fix`` does). The
    ``Depend {recompute_insert}`` (``recompute_depend``) the recompute pass puts before a copy reads
    the copy's saved input: it is never named as what blocks the recompute.

    An op no forward op reads (every user's scope starts with ``Gradients``: a step that returns no
    forward value, as ``ms.grad`` and ``GradOperation`` do, prunes the forward ops after it) is never
    recomputed, whatever is tagged: MindSpore's recompute pass skips a node without a forward user
    (``HasForwardOutput``) and only marks it ``checkpoint``. It is reported as info, with nothing to
    change in the recompute settings.

    Left to other rules: a FeedForward SiLU/Mul blocked by a Reshape (RC002 reports it, once),
    and a tagged fp32 -> fp16/bf16 Cast (RC003: making that recompute apply raises memory).

    Stage files: ``validate`` (final front-end graph), else ``cse_after_recomputation``,
    ``add_recomputation``, ``graph_build``. A file is judged only when it shows the pass ran
    (cnode_attrs ``recompute: Bool(1)``/``recompute_id``/``duplicated``/``checkpoint: Bool(1)`` on a
    forward op, and a backward graph; a one-op cell's ``Bool(0)`` op may leave only the
    ``checkpoint`` marks): files before it (``06_add_attr``, ``12_pipeline_split``,
    ``22_environ_conv``, ``opt_pass_18_*`` ...) hold requests only.

    Why it matters:
    The activation stays in memory although the configuration says it is recomputed; memory
    plans made on that belief fail.

    How to fix:
    Recompute the blocking ops between the op and its backward reader too (the finding names
    them and the hint gives the select_recompute keys), or, for a one-op cell, put the recompute
    on the primitive inside the cell. For a model without MindFormers' ``recompute_config`` (no
    MindFormers frame in the op's source trace, no decoder layer) the fix is the call in the model
    code, at the line that calls the cell: ``self.pool.max_pool.recompute()`` in place of
    ``self.pool.recompute()``; the fix plan lists it as a by-hand row, not a key. So for the
    blocking ops of such a model: ``self.down.reshape.recompute()`` in the cell that calls
    ``self.down`` (file:line); an op made by a functional call has no primitive to tag, and the
    hint says so. Where recomputing the chain would make backward keep its
    input instead, as large (wv's output Reshape and the Transpose after it, read from wv's MatMul
    output), nothing is saved: the finding is info, with no key, and the run's fix plan adds none.

    Example:
    ``%33 = PrimFunc_BatchMatMul(%27, %32, ...) {instance name: bmm2} ... cnode_attrs: {recompute:
    Bool(1)}`` with no ``recompute_id``; backward ``MatMul(%590, %35)`` reads it through ``%34 =
    PrimFunc_Transpose(%33, ...) {instance name: merger_head_transpose}`` and ``%35 =
    PrimFunc_Reshape(%34, ...)`` (wo), neither recomputed.
    """

    code = "RC001"
    name = "recompute-not-applied"
    severity = "warning"
    summary = "An op asked to recompute has no recomputed copy, and backward still keeps its output"
    INVALID = [
        Invalid(
            ex.ATTN_TRANSPOSE_BLOCKS,
            Says(
                "%0",
                "kept for backward by non-recomputed Transpose, Reshape",
                "select_recompute + 'attention\\.merger_head_transpose' (+1 more)",
            ),
        ),
        Invalid(
            ex.ONE_OP_CELL,
            Says("%0", "a one-op cell's output is never recomputed", "key 'feed_forward\\.activation\\.silu' instead"),
        ),
    ]
    VALID = [
        ex.FFN_BEFORE_PASS,
        ex.FFN_2D_APPLIED,
        ex.LOSS_TAG_UNUSED,
        ex.LOSS_CELL_OUTPUT,
        ex.FFN_RESHAPE_BLOCKS,
        ex.ATTN_NOT_READ,
    ]

    def check_decided(self, ir: IRFile, facts: RecomputeFacts) -> Iterator[Finding]:
        left_to_rc002 = {b.node for b in blocked_silu_muls(ir, facts)}
        for k, req in self.unapplied_requests(ir, facts):
            if k in left_to_rc002 or costly_downcast(ir, facts, k) is not None:
                continue
            readers = facts.backward_readers(k)
            if readers:
                yield self._finding(ir, facts, k, req, readers)

    def _finding(self, ir: IRFile, facts: RecomputeFacts, k: int, req: str, readers: list[KeptRead]) -> Finding:
        d = ir[k]
        # the recompute pass's own Depend before a copy is no blocker: it reads the copy's saved input
        fences = list(dict.fromkeys(v for r in readers for v in r.chain if is_recompute_fence(ir, v)))
        chain = list(dict.fromkeys(v for r in readers for v in r.chain if v not in fences))
        blocking = facts.blocking_chain(readers)
        needed: RecomputeFix | None = None
        code = None
        calls: list[ModelCodeRecompute] = []  # the model-code changes of a plain model, for the snippet
        severity, impact = None, "memory"
        reader_text = backward_text(ir, readers[0].reader)
        outcome = "so the activation stays in memory"
        if not ir.read_by_forward(k):
            # MindSpore recomputes only a node a forward op reads (HasForwardOutput): a step that
            # returns no forward value (ms.grad, GradOperation) prunes the forward ops after it
            cause = (
                f"no forward op reads its output, only {reader_text}, and MindSpore recomputes only an op that a "
                "forward op reads (it marks the others checkpoint)"
            )
            outcome = "so no recompute request on it can take effect"
            short = "no forward op reads it, so it cannot be recomputed"
            severity, impact = "info", "none"
            fix, priced = "", None
            hint = (
                "Nothing to change in the recompute settings: the forward pass after this op was pruned (the step "
                "returns no forward value, as ms.grad and GradOperation do), so backward alone reads it. A step "
                "that uses the forward output (ms.value_and_grad, TrainOneStepCell) gives it a forward reader: only "
                "then can it be recomputed."
            )
        elif req == "one-op-cell":
            # its own cell: under lazy_inline most forward scopes print "(Default)", so the widest
            # all-prefixed cell can be its parent (GLM's activation_func around the SiLU cell)
            cell = cell_text(facts.cell_path_of(k), d.get("scope", ""))
            cause = (
                f"it is the only op of its recompute cell {cell}, and a cell's output is never "
                f"recomputed, so the recompute names nothing that gets recomputed; {reader_text} reads it"
            )
            short = "a one-op cell's output is never recomputed"
            code = model_code_recompute(ir, k)
            if code is not None:
                # a model without MindFormers' recompute_config: the call to write, not a key
                key, guessed, calls = None, False, [code]
                fix = f"{code.call} in place of {code.instead}"
                hint = (
                    f"Name the primitive inside the cell, not the cell: in the model code, write {code.call} "
                    f"in place of {code.instead} (the cell called at {code.path}:{code.line})."
                )
            elif plain_model_op(ir, k):
                # a plain model whose trace names no self.<cell>.<primitive> call (a function the
                # cell calls, a cell called through a local): the change, without the attribute names
                key, guessed = None, False
                at = user_frame(ir, k)
                fix = "recompute the primitive inside the cell"
                hint = (
                    "Name the primitive inside the cell, not the cell: in the model code, call .recompute() on "
                    f"the primitive the cell{f' called at {at[0]}:{at[1]}' if at else ''} runs, in place of the "
                    f"cell's .recompute() (a cell that calls a function, as nn.SiLU calls ops.function.silu, has "
                    f"no primitive to tag: hold one in the model, self.<name> = {primitive_class(ir, k)}(), and call it)."
                )
                if at is not None:
                    code = ModelCodeRecompute("", "", *at)  # where the change is made
            else:
                key, guessed = node_select_key(ir, k)
                fix = f"key '{key}' instead" if key else "recompute the primitive inside the cell"
                hint = (
                    "Name the primitive inside the cell, not the cell: "
                    + (f"select_recompute key '{key}'" if key else "call recompute() on the primitive")
                    + (GUESS_NOTE if guessed else "")
                    + "."
                )
            needed = recompute_fix(ir, k, [key], []) if key else None
            cell_key = _cell_key(key)
            if needed is not None and cell_key:
                # the primitive's key in place of the cell's: kept beside it, it would be overridden
                needed = replace(needed, replaces=(cell_key,))
            priced = fix_cost(ir, k, [], []) if key else None
        elif req == "nested":
            cell = cell_text(facts.cell_path_of(k), d.get("scope", ""))
            cause = (
                f"its primitive is tagged, but it is also the only op of the recompute cell {cell}, and MindSpore "
                "marks a recompute cell's output not to be recomputed, over its primitive's own tag, so neither "
                f"makes a copy; {reader_text} reads it"
            )
            short = "its primitive's tag is ignored inside its recomputed one-op cell"
            code = model_code_recompute(ir, k)
            if code is not None:
                key, drop = None, None
                fix = f"remove {code.instead}, keep {code.call}"
                hint = (
                    f"Recompute the primitive only: in the model code, remove {code.instead} (the cell called at "
                    f"{code.path}:{code.line}) and keep {code.call}."
                )
            else:
                key, guessed = node_select_key(ir, k)
                drop = _cell_key(key)
                fix = f"select_recompute - '{drop}'" if drop else "take out the recompute of the cell around it"
                hint = (
                    "Recompute the primitive only: take out the key that names the cell"
                    + (f" ('{drop}')" if drop else "")
                    + (f" and keep the primitive's '{key}'" if key else "")
                    + (GUESS_NOTE if guessed else "")
                    + '. With both, the compile log says "All nodes in the graph … are the output '
                    'nodes, which are set to not be recomputed", and the output stays kept for backward.'
                )
            # the primitive's key is in the config already (its tag is on the op): only the cell's goes
            needed = (
                replace(recompute_fix(ir, k, [key], []), replaces=(drop,), applied=(key,)) if key and drop else None
            )
            priced = fix_cost(ir, k, [], []) if key else None
        elif chain:
            cause = f"{reader_text} reads its output through non-recomputed {nodes_text(ir, blocking or chain)}"
            ops = ", ".join(dict.fromkeys(ir[v]["op"] for v in (blocking or chain)))
            moved = inputs_kept_by_fix(ir, k)
            if moved and not freed_by_recompute(ir, k):
                # a view chain whose recompute would keep its input instead (a real MindFormers
                # recompile with the key kept the same bytes): no key to add, worth knowing of only
                severity, impact = "info", "none"
                inputs = ", ".join(dict.fromkeys(ir[v]["op"] for v, _ in moved))
                short = (
                    f"kept for backward by non-recomputed {ops}; recomputing them would keep {inputs}'s output instead"
                )
                fix, priced = "", None
                hint = (
                    f"No key to add: recomputing {nodes_text(ir, blocking or chain)} as well would make backward keep "
                    + ", ".join(f"{ir.describe(v)}'s output ({human_bytes(b)})" for v, b in moved)
                    + f" instead, as large as what they free; the request on {ir.describe(k)} saves no memory here."
                )
                asked = [v for v, _ in moved if self.unapplied_request(facts, v) is not None]
                if asked:  # that input's own finding recomputes the chain with it
                    hint += (
                        f" {nodes_text(ir, asked)} is asked to recompute too: its own finding's keys free this chain."
                    )
            elif (plain := model_code_hint(ir, k, blocking or chain)) is not None:
                # a plain MindSpore model sets recompute in its code: the calls to add, not keys
                calls, said = plain
                short = f"kept for backward by non-recomputed {ops}"
                hint = f"Recompute the blocking op(s) between it and the backward reader as well, {said}."
                fix = "; ".join(c.text() for c in calls)
                code = calls[0] if calls else None
                # priced as the key on the same cell attribute: the call tags that primitive wherever it runs
                priced = fix_cost(ir, k, blocking or chain, blocking_keys(ir, blocking or chain))
            else:
                # a slice the parallel pass inserted has no key of its own: the key of the op it feeds tags it
                slices = [v for v in blocking if ir.is_inserted_slice(v)]
                needs = blocking_keys(ir, [v for v in blocking if v not in slices])
                short = f"kept for backward by non-recomputed {ops}"
                said = keys_hint(needs)
                hint = "Recompute the blocking op(s) between it and the backward reader as well"
                hint += (": " + said if said else "") + "."
                keys = [n.key for n in needs if n.key and n.needed]
                needed = recompute_fix(ir, k, keys, needs)
                fix = short_fix(keys)
                priced = fix_cost(ir, k, blocking or chain, needs)
                hint += folded_note(ir, blocking)
                if slices:
                    hint += (
                        f" {', '.join(ir.describe(v) for v in slices)} was inserted by the parallel pass "
                        f"({ir[slices[0]].get('instance')}) and has no key of its own: it takes the recompute tag "
                        f"of the op it feeds, whose key recomputes it too."
                    )
        else:
            cause = f"{reader_text} reads it directly, yet the pass made no copy"
            short, fix = "no recomputed copy, backward keeps it", "see the compile log"
            priced = None
            hint = "Check the compile log for recompute warnings about this op."
        if priced is not None:
            hint += " " + hint_text(priced)
        message = (
            f"{d['op']}{where(ir, k)} asked to recompute ({how(req)}) has no recomputed copy "
            f"(no recompute_id, no duplicated copy): {cause}, {outcome}"
        )
        direct = {r.reader for r in readers if not any(v not in fences for v in r.chain)}
        related = [related_node(ir, v, "not recomputed; keeps the output alive") for v in chain]
        related += [
            related_node(ir, v, "the recompute pass's Depend before a copy: reads its saved input, blocks nothing")
            for v in fences
        ]
        related += [
            related_node(
                ir, r.reader, reader_note(ir, r.reader, "backward reader" + (" (direct)" if r.reader in direct else ""))
            )
            for r in readers
        ]
        finding = self.finding(
            ir,
            k,
            message,
            hint=hint,
            related=related,
            identity=(d["op"], place_path(ir, k)),
            severity=severity,
            facts={"request": req, "impact": impact, "blocking": [ir[v].get("id", "") for v in blocking]},
            fixes=Fixes(recompute=needed),
            fix_cost=priced,
            cause=short,
            fix=fix,
            snippet=keys_snippet(list(needed.keys)) if needed and needed.keys else model_code_snippet(calls),
        )
        if code is not None:  # the fix is made where the model calls the cell, not in MindSpore's pooling.py
            finding = replace(finding, source=(code.path, code.line))
        if impact == "none":
            return finding  # nothing at stake: no bytes to state
        return staked(finding, stake(ir, k, freed_by_recompute))
