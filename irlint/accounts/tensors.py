"""The tensors of the memory account: which tensor's storage a node's output is (views, tuple
elements and subgraph calls followed), its type, and which inputs a node reads."""

from __future__ import annotations

from typing import NamedTuple

from ..model import IRFile
from ..read.values import TensorType

# ops whose output is (a view of) the tensor of their first input
VIEW_OPS = frozenset({"Reshape", "ExpandDims", "Squeeze", "Flatten", "Depend", "Load"})


class Tensor(NamedTuple):
    """One forward tensor: the node that makes it, and which output of it (None: the only one)."""

    node: int
    index: int | None = None  # type: ignore[assignment]  # the output's number, over tuple.index


def tensor_type(ir: IRFile, tensor: Tensor, via: int | None = None) -> TensorType | None:
    """A tensor's type: the node's output type, or for one element of a tuple output the type of
    the TupleGetItem that reads it."""
    if tensor.index is None:
        return ir[tensor.node].get("out_type")
    return ir[via].get("out_type") if via is not None else None


def sources(ir: IRFile, key: int) -> list[tuple[Tensor, int | None]]:
    """The tensors whose storage the output of ``key`` is: ``key`` itself for a computing node,
    its input's for a view; each with the TupleGetItem that selected it (for its type). Parameters
    and constants are no tensors here; a subgraph parameter is followed to the call's argument,
    a call's output to the callee's Return."""
    out: dict[tuple[Tensor, int | None], None] = {}
    seen: set[tuple[int, int | None]] = set()
    stack: list[tuple[int, int | None, int | None]] = [(key, None, None)]  # (node, element, getitem)
    while stack:
        node, element, getitem = stack.pop()
        if (node, element) in seen:
            continue
        seen.add((node, element))
        d = ir[node]
        kind = d["kind"]
        if kind == "param":
            stack.extend((a, element, getitem) for a in call_arguments(ir, node))
            continue
        if kind == "return":
            stack.extend((a, element, getitem) for a in ir.producers(node)[:1])
            continue
        if kind != "cnode":
            continue  # constants, subgraph values
        op = d["op"]
        ins = ir.producers(node)
        if op in VIEW_OPS:
            if ins:
                stack.append((ins[0], element, getitem))
        elif op == "TupleGetItem":
            index = ir[ins[1]].get("value") if len(ins) > 1 else None
            if ins and isinstance(index, int):
                stack.append((ins[0], index, getitem if getitem is not None else node))
        elif op == "MakeTuple":
            picked = ins if element is None else ins[element : element + 1]
            stack.extend((a, None, None) for a in picked)
        elif op == "call":
            returns = ir.inputs_of_kind(node, "call_out")
            if returns:
                stack.extend((r, element, getitem) for r in returns)
            else:
                out[(Tensor(node, element), getitem)] = None
        else:
            out[(Tensor(node, element), getitem)] = None
    return list(out)


def call_arguments(ir: IRFile, param: int) -> list[int]:
    return ir.inputs_of_kind(param, "call_in")


def reader_inputs(ir: IRFile, key: int) -> list[int]:
    d = ir[key]
    ins = ir.producers(key)
    if d["op"] in ("UpdateState",):
        return []
    if d["op"] in ("Depend", "Load", "TupleGetItem", "Reshape"):
        return ins[:1]
    return ins
