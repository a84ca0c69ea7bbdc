"""The base of the recompute rules and how their findings name requests and backward readers."""
from __future__ import annotations

from irlint.memory import bytes_at_stake
from irlint.model import IRFile
from irlint.rule import Rule

from .evidence import RECOMPUTE_STAGES, RecomputeFacts, cell_path


def freed_by_recompute(ir: IRFile, k: int) -> int:
    """Bytes that recomputing ``k`` together with the layout ops blocking it would free: what
    backward keeps of their outputs (the memory model gives a view's bytes to its source, so a
    tensor counts once); the cost function of ``irlint.memory.stake`` for RC001 and RC002."""
    facts = RecomputeFacts.of(ir)
    return sum(bytes_at_stake(ir, n) for n in [k, *facts.blocking_chain(facts.backward_readers(k))])


def how(request: str) -> str:
    return {"select": "recompute: Bool(1) on its primitive",
            "cell": "Cell.recompute() on its cell, scope prefix recompute_",
            "one-op-cell": "Cell.recompute() or a select_recompute key on the one-op cell it is the output of"}[request]


def backward_text(ir: IRFile, r: int) -> str:
    """A backward node by what it differentiates: MindSpore's scope of a gradient op names the
    cell whose backward emitted it (e.g. ``lm_head``'s ``Grad_MatMul`` for layer 0's ``down_proj``),
    ``forward_unique_id`` names the forward node itself."""
    fwd = ir.forward_of(r)
    if fwd is None:
        return f"backward {ir.describe(r)}{_in_scope(ir, r)}"
    path = cell_path(ir[fwd].get("scope", ""))
    where = f" in {'/'.join(path)}" if any("-" in p for p in path) else ""  # no cell names: no place to add
    return f"backward {ir.describe(r)} (gradient of {ir.describe(fwd)}{where})"


def reader_note(ir: IRFile, r: int, note: str) -> str:
    fwd = ir.forward_of(r)
    return note if fwd is None else f"{note}; gradient of {ir.describe(fwd)}"


def nodes_text(ir: IRFile, nodes: list[int]) -> str:
    return ", ".join(f"{ir.describe(v)}{_in_scope(ir, v)}" for v in nodes)


def _in_scope(ir: IRFile, k: int) -> str:
    """`` (scope)``, or nothing in a dump without scope lines."""
    scope = ir[k].get("scope", "")
    return f" ({scope})" if scope else ""


class RecomputeRule(Rule):
    """A recompute rule judges only files where the recompute pass has decided."""

    stages = RECOMPUTE_STAGES

    def check(self, ir: IRFile):
        facts = RecomputeFacts.of(ir)
        if facts.decided:  # before the recompute pass a tag is only a request
            yield from self.check_decided(ir, facts)

    def check_decided(self, ir: IRFile, facts: RecomputeFacts):
        raise NotImplementedError

    @staticmethod
    def unapplied_requests(ir: IRFile, facts: RecomputeFacts):
        for k in ir.cnodes():
            req = facts.request(k)
            if req is not None and not facts.applied(k):
                yield k, req
