"""One step of a chain: the arguments of a Split or Concat as the dump gives them, how its shape
changes, and the line a finding shows for it (``step_text``)."""

from __future__ import annotations

from typing import Any

from irlint.accounts.received import ALLTOALL_OPS, received_bytes
from irlint.model import IRFile

from .chain import MOVING_OPS
from .wording import as_int, first_in, size


def shrunk_dims(ir: IRFile, key: int) -> list[tuple[int, int]]:
    src = (ir[key].get("in_types") or (None,))[0]
    dst = ir[key].get("out_type")
    if not src or not dst or not src.shape or not dst.shape or len(src.shape) != len(dst.shape):
        return []
    return [(i, a // b) for i, (a, b) in enumerate(zip(src.shape, dst.shape)) if b and a > b]


def split_args(ir: IRFile, key: int) -> tuple[int | None, int | None]:
    args: tuple[Any, ...] = ir[key].get("args") or ()
    attrs = ir[key].get("primitive_attrs") or {}
    axis = as_int(args[1]) if len(args) > 1 else as_int(attrs.get("axis"))
    outputs = as_int(args[2]) if len(args) > 2 else as_int(attrs.get("output_num"))
    return norm_dim(axis, tensor_rank(ir, key)), outputs


def tensor_rank(ir: IRFile, key: int, out: bool = False) -> int | None:
    t = ir[key].get("out_type") if out else (ir[key].get("in_types") or (None,))[0]
    return len(t.shape) if t is not None and t.shape is not None else None


def norm_dim(dim: int | None, rank: int | None) -> int | None:
    """-1 and rank-1 name the same axis."""
    return dim + rank if dim is not None and dim < 0 and rank else dim


def axis_of(ir: IRFile, key: int) -> int | None:
    args: tuple[Any, ...] = ir[key].get("args") or ()
    return as_int(args[1]) if len(args) > 1 else as_int((ir[key].get("primitive_attrs") or {}).get("axis"))


def used_split_outputs(ir: IRFile, key: int) -> set[int]:
    used: set[int] = set()
    for user in ir.consumers(key):
        if ir[user]["op"] == "TupleGetItem" and ir.consumers(user):
            args: tuple[Any, ...] = ir[user].get("args") or ()
            index = as_int(args[1]) if len(args) > 1 else None
            if index is not None:
                used.add(index)
        else:
            return set(range(split_args(ir, key)[1] or 0))
    return used


def step_text(ir: IRFile, key: int, costs: bool = False) -> str:
    data = ir[key]
    op = data["op"]
    src = first_in(ir, key)
    dst = data.get("out_type")
    detail = ""
    if op == "Split":
        axis, n = split_args(ir, key)
        detail = f"(axis {axis}, {n})"
    elif op == "Concat":
        detail = f"(axis {axis_of(ir, key)})"
    elif op in ALLTOALL_OPS:
        a = data.get("primitive_attrs") or {}
        detail = f"(split_dim {a.get('split_dim')}, concat_dim {a.get('concat_dim')})"
    text = f"{op}{detail} {src}" if dst is not None and dst.dtype is None else f"{op}{detail} {src}->{dst}"
    if costs and op in MOVING_OPS:
        attrs = data.get("primitive_attrs") or {}
        ranks = attrs.get("rank_size") or len(attrs.get("group_rank_ids") or ()) or "?"
        text += f" [group of {ranks}, receives {size(received_bytes(ir, key))}]"
    return text
