"""The base of the recompute rules and how their findings name requests and backward readers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from irlint.accounts.memory import bytes_at_stake
from irlint.findings import Finding
from irlint.model import IRFile
from irlint.model.layers import Places, model_path
from irlint.rule import Rule

from .evidence import RECOMPUTE_STAGES, RecomputeFacts, cell_path


def _segment(ir: IRFile, k: int) -> list[int]:
    """``k`` and the layout ops blocking its recompute: what its fix makes recomputed."""
    facts = RecomputeFacts.of(ir)
    return [k, *facts.blocking_chain(facts.backward_readers(k))]


def freed_by_recompute(ir: IRFile, k: int) -> int:
    """Bytes that recomputing ``k`` together with the layout ops blocking it would free: what
    backward keeps of their outputs (the memory model gives a view's bytes to its source, so a
    tensor counts once) less ``inputs_kept_by_fix`` (a view chain recomputed from a MatMul's output
    keeps that output instead: on a real MindFormers Llama, wv's output Reshape and the Transpose
    after it free 1 KiB a layer and keep wv's 1 KiB output, and the recompile frees nothing); the
    cost function of ``irlint.accounts.memory.stake`` for RC001 and RC002."""
    kept = sum(bytes_at_stake(ir, n) for n in _segment(ir, k))
    return max(0, kept - sum(b for _, b in inputs_kept_by_fix(ir, k)))


def inputs_kept_by_fix(ir: IRFile, k: int) -> list[tuple[int, int]]:
    """The activations the copies of ``k`` and the ops blocking it would read and no backward op
    keeps now, with their bytes: recomputing them makes backward keep those instead. An input that
    is recomputed too is left out (the copies read its copy)."""
    # asked by the price, by its layer peers' prices and by the hint: found once per node
    memo: dict[int, list[tuple[int, int]]] = ir.__dict__.setdefault("_recompute_inputs_kept_by_fix", {})
    found = memo.get(k)
    if found is None:
        found = memo[k] = _inputs_kept_by_fix(ir, k)
    return found


def _inputs_kept_by_fix(ir: IRFile, k: int) -> list[tuple[int, int]]:
    from irlint.accounts.memory import kept_of
    from irlint.accounts.tensors import sources, tensor_type

    segment = _segment(ir, k)
    inside = set(segment)
    out: list[tuple[int, int]] = []
    seen: set[Any] = set()
    for n in segment:
        for u in ir.producers(n):
            if u in inside or ir[u]["kind"] != "cnode" or ir.copy_of(u):
                continue
            for t, via in sources(ir, u):
                if t in seen or t.node in inside or ir.copy_of(t.node):
                    continue
                seen.add(t)
                if any(kt.tensor == t for kt in kept_of(ir, t.node)):
                    continue  # backward keeps it already
                typ = tensor_type(ir, t, via)
                if typ is not None and typ.nbytes:
                    out.append((t.node, typ.nbytes))
    return out


def where(ir: IRFile, k: int) -> str:
    """Where a node whose printed scope lost its place sits, for a message (lazy_inline prints most
    tagged forward ops as ``Default/SiLU-op0``); empty when the scope says it and the weights agree."""
    p = Places.of(ir).place(k)
    if p.cells_from not in ("copy", "gradient") and (p.layer_from == "scope" or p.layer == "outside"):
        return ""
    source = {"copy": "its recomputed copy's scope", "gradient": "its gradient op's scope"}.get(p.cells_from)
    cells = "/".join(c.split("-", 1)[0] for c in p.cells)
    layer = "outside the layers" if p.layer == "outside" else f"layer {p.layer}"
    how = {"weights": " (from the weights it reads)", "links": " (from the ops it is linked to)"}
    parts = [layer + how.get(p.layer_from, "")]
    if cells and source:
        parts.append(f"cell {cells} (from {source})")
    return f" [{', '.join(parts)}; printed scope {ir[k].get('scope', '')}]"


def place_path(ir: IRFile, k: int) -> str:
    """A node's cell path for a finding's identity: the model path the graph resolves (layer and
    cells, class names left out; ``irlint.model.layers.model_path``), the same whether the scope
    prints it or lost it (lazy_inline's ``Default/SiLU-op0``), so that two layers' problems stay
    two problems and a re-dump with or without lazy_inline, or with a class renamed, keeps them."""
    layer, path = model_path(ir, k)
    return path or "/".join(cell_path(ir[k].get("scope", "")))


def short_fix(keys: list[str], verb: str = "add") -> str:
    """A headline's fix: the select_recompute key to add (or drop), the first one when many (the
    hint and ``extra`` list them all)."""
    if not keys:
        return ""
    shown = f"'{keys[0]}'" + (f" (+{len(keys) - 1} more)" if len(keys) > 1 else "")
    return f"select_recompute {'+' if verb == 'add' else '-'} {shown}"


def how(request: str) -> str:
    return {
        "select": "recompute: Bool(1) on its primitive",
        "cell": "Cell.recompute() on its cell, scope prefix recompute_",
        "one-op-cell": "Cell.recompute() or a select_recompute key on the one-op cell it is the output of",
        "nested": "recompute: Bool(1) on its primitive, and a select_recompute key or Cell.recompute() on the "
        "one-op cell around it",
    }[request]


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

    def check(self, ir: IRFile) -> Iterator[Finding]:
        facts = RecomputeFacts.of(ir)
        if facts.decided:  # before the recompute pass a tag is only a request
            yield from self.check_decided(ir, facts)

    def check_decided(self, ir: IRFile, facts: RecomputeFacts) -> Iterator[Finding]:
        raise NotImplementedError

    @staticmethod
    def unapplied_requests(ir: IRFile, facts: RecomputeFacts) -> Iterator[tuple[int, str]]:
        for k in facts.tagged():
            req = RecomputeRule.unapplied_request(facts, k)
            if req is not None:
                yield k, req

    @staticmethod
    def unapplied_request(facts: RecomputeFacts, k: int) -> str | None:
        """How ``k`` asked to recompute, when it did and was not recomputed (and computes from more
        than weights): what RC001 and RC004 judge."""
        req = facts.request(k)
        # the weight-only test last: it walks the node's inputs
        if req is not None and not facts.applied(k) and not facts.weight_only(k):
            return req
        return None
