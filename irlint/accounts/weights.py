"""Which nodes a dump computes from weights and constants only (fp16 copies of weights): they scale
with the parameters, not with the batch, so the memory account lists their tensors apart."""

from __future__ import annotations

from ..model import IRFile
from .tensors import call_arguments, reader_inputs

# ops whose output is new data although their inputs are constants (a pipeline stage's input)
_DATA_SOURCES = frozenset({"Receive"})


def weight_derived(ir: IRFile) -> set[int]:
    """Nodes whose output depends on weights (parameters with a default) and constants only
    (computed once per IRFile)."""
    cached = ir.__dict__.get("_weight_derived")
    if cached is None:
        cached = ir.__dict__["_weight_derived"] = _weight_derived(ir)
    return cached


def is_weight_derived(ir: IRFile, key: int) -> bool:
    """``key in weight_derived(ir)``, walking only what ``key``'s answer needs (its inputs, up
    to the first that is not from weights); the whole-file walk only when a cycle through calls is
    met, since there the whole walk's order decides."""
    whole = ir.__dict__.get("_weight_derived")
    if whole is not None:
        return key in whole
    memo = ir.__dict__.setdefault("_weight_derived_of", {})
    found = memo.get(key)
    if found is None:
        found = _derived_from_weights(ir, key, memo)
    return found if found is not None else key in weight_derived(ir)


def _weight_inputs(ir: IRFile, node: int) -> bool | list[int]:
    """What decides whether ``node`` is computed from weights alone: True or False outright, or the
    inputs whose answers it takes (a call, or a node without inputs, is then no weight copy)."""
    d = ir[node]
    kind = d["kind"]
    if kind == "param":
        # a subgraph parameter (a call's or a Partial's) is what every call passes to it
        return call_arguments(ir, node) or bool(d.get("has_default"))
    if kind not in ("cnode", "return"):
        return kind == "const"
    if d.get("op") in _DATA_SOURCES:
        return False  # its constant input is a buffer shape, the data comes from elsewhere
    return reader_inputs(ir, node) if kind == "cnode" else ir.producers(node)[:1]


def _weight_step(ir: IRFile, node: int) -> bool | list[int]:
    """``_weight_inputs``, with a call and a node without inputs decided (False) at once."""
    ins = _weight_inputs(ir, node)
    if ins is True or ins is False:
        return ins
    return False if ir[node].get("op") == "call" or not ins else ins


def _derived_from_weights(ir: IRFile, key: int, memo: dict[int, bool]) -> bool | None:
    """``key``'s answer of ``_weight_derived``, depth first through its inputs, stopping at the
    first one not from weights; None when the walk meets a cycle (through calls)."""
    first = _weight_step(ir, key)
    if first is True or first is False:
        memo[key] = first
        return first
    stack: list[list] = [[key, first, 0]]  # node, its inputs, how many are known to be from weights
    on_path = {key}
    while stack:
        frame = stack[-1]
        node, ins = frame[0], frame[1]
        value: bool | None = True
        while frame[2] < len(ins):
            a = ins[frame[2]]
            known: bool | list[int] | None = memo.get(a)
            if known is None:
                if a in on_path:
                    return None
                known = _weight_step(ir, a)
                if known is not True and known is not False:
                    on_path.add(a)
                    stack.append([a, known, 0])
                    value = None
                    break
                memo[a] = known
            if not known:
                value = False
                break
            frame[2] += 1
        if value is None:
            continue  # an input to walk first
        memo[node] = value
        on_path.discard(node)
        stack.pop()
    return memo[key]


def _weight_derived(ir: IRFile) -> set[int]:
    memo: dict[int, bool] = {}
    visiting: set[int] = set()
    for start in ir.nodes:
        stack = [start]
        while stack:
            node = stack[-1]
            if node in memo:
                stack.pop()
                continue
            ins = _weight_inputs(ir, node)
            if ins is True or ins is False:
                memo[node] = ins
                continue
            pending = [a for a in ins if a not in memo and a not in visiting]
            if pending and node not in visiting:
                visiting.add(node)
                stack.extend(pending)
                continue
            visiting.discard(node)
            # an input still unresolved is on a cycle through calls: no weight copy
            memo[node] = ir[node].get("op") != "call" and bool(ins) and all(memo.get(a, False) for a in ins)
    return {k for k, v in memo.items() if v}
