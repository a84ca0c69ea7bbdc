"""What each step of a chain moves: the simulation (``simulate``) that finds what a run discards or
undoes, and a permutation of device axes paid as a gather (``permutation``)."""

from __future__ import annotations

from typing import Any, NamedTuple

from irlint.accounts.received import ALLTOALL_OPS, GATHER_OPS, received_bytes
from irlint.model import IRFile

from .chain import SLICE_OPS, Chain, Waste
from .discovery import data_inputs
from .layouts import devices, output_layout, output_placement, placements, ranks_moved, strategy, transpose_perm
from .steps import axis_of, norm_dim, shrunk_dims, split_args, step_text, tensor_rank, used_split_outputs
from .wording import as_int, size


def simulate(ir: IRFile, chain: Chain) -> None:
    """Walk the chain in order, tracking which dims hold gathered data, and record waste."""
    gathered: dict[int, tuple[int, int]] = {}  # dim -> (factor, gather node)
    members = set(chain.nodes)
    undone: set[int] = set()
    for key in chain.nodes:
        data = ir[key]
        op = data["op"]
        chain.moved += received_bytes(ir, key) or 0
        if op in GATHER_OPS:
            factor = as_int((data.get("primitive_attrs") or {}).get("rank_size")) or _growth(ir, key, 0)
            if factor and factor > 1:
                old = gathered.get(0, (1, key))
                gathered[0] = (old[0] * factor, key)
        elif op in ALLTOALL_OPS:
            first = _alltoall_undone(ir, members, key)
            if first is not None and first not in undone:
                undone.update((first, key))
                between = [
                    k
                    for k in members
                    if ir[k]["line"] > ir[first]["line"]
                    and ir[k]["line"] < ir[key]["line"]
                    and ir[k]["op"] in ("Reshape", "Transpose")
                ]
                around = f" around {', '.join(step_text(ir, k) for k in between)}" if between else ""
                chain.wastes.append(
                    Waste(
                        "alltoall-undone", (first, key), f"{step_text(ir, key)} undoes {step_text(ir, first)}{around}"
                    )
                )
        elif op == "Split":
            axis, outputs = split_args(ir, key)
            used = used_split_outputs(ir, key)
            concat = _reassembling_concat(ir, key, outputs)
            if concat is not None:
                c_axis = norm_dim(axis_of(ir, concat), tensor_rank(ir, concat, out=True))
                if axis in gathered and c_axis is not None and c_axis != axis:
                    gathered[c_axis] = gathered.pop(axis)
                elif c_axis == axis:
                    chain.wastes.append(
                        Waste(
                            "split-concat-round-trip",
                            (key, concat),
                            f"Split and Concat along axis {axis} only reassemble the tensor",
                        )
                    )
            elif outputs and len(used) < outputs:
                _discard(ir, chain, gathered, key, axis, outputs // max(len(used), 1))
        elif op in SLICE_OPS:
            dims = shrunk_dims(ir, key)
            for dim, factor in dims:
                _discard(ir, chain, gathered, key, dim, factor)


def _alltoall_undone(ir: IRFile, members: set[int], key: int) -> int | None:
    """The AlltoAll of the run that ``key`` reverses: walking back over its input through
    Reshapes and Transposes that keep both moved dims whole, an AlltoAll on the same group with
    the same split_count whose split_dim/concat_dim are ``key``'s concat_dim/split_dim. Any other
    op on the way (compute never belongs to a run) changes the layout, so nothing is undone."""
    split, concat, count, group = _alltoall_dims(ir, key)
    if split is None or concat is None:
        return None
    node = key
    while True:
        inputs = data_inputs(ir, node)[:1]
        if not inputs or inputs[0] not in members:
            return None
        node = inputs[0]
        op = ir[node]["op"]
        if op in ALLTOALL_OPS:
            s, c, n, g = _alltoall_dims(ir, node)
            return node if (s, c, n, g) == (concat, split, count, group) else None
        if op == "Reshape":
            back = _reshape_kept_dims(ir, node)
        elif op == "Transpose":
            perm = transpose_perm(ir, node)
            back = dict(enumerate(perm)) if perm else {}
        else:
            return None
        if split not in back or concat not in back:
            return None
        split, concat = back[split], back[concat]


def _alltoall_dims(ir: IRFile, key: int) -> tuple[int | None, int | None, int | None, Any]:
    attrs = ir[key].get("primitive_attrs") or {}
    rank = tensor_rank(ir, key)
    return (
        norm_dim(as_int(attrs.get("split_dim")), rank),
        norm_dim(as_int(attrs.get("concat_dim")), rank),
        as_int(attrs.get("split_count")),
        attrs.get("group"),
    )


def _reshape_kept_dims(ir: IRFile, key: int) -> dict[int, int]:
    """Output dim -> input dim for the dims a Reshape keeps whole (same size, same number of
    elements before them); the others are merged or split."""
    src = (ir[key].get("in_types") or (None,))[0]
    dst = ir[key].get("out_type")
    if not src or not dst or src.shape is None or dst.shape is None:
        return {}
    before_in: dict[tuple[int, int], int] = {}
    p = 1
    for i, n in enumerate(src.shape):
        before_in.setdefault((p, n), i)
        p *= n or 0
    kept, p = {}, 1
    for j, n in enumerate(dst.shape):
        if n and n > 1 and (p, n) in before_in:
            kept[j] = before_in[(p, n)]
        p *= n or 0
    return kept


def _discard(
    ir: IRFile, chain: Chain, gathered: dict[int, tuple[int, int]], key: int, dim: int | None, factor: int
) -> None:
    if not gathered or factor <= 1:
        return
    if dim is not None and dim in gathered and gathered[dim][0] == factor:
        _, g = gathered.pop(dim)
        chain.wastes.append(
            Waste(
                "gather-resplit",
                (g, key),
                f"{step_text(ir, key)} re-splits along dim {dim} what {step_text(ir, g)} "
                f"gathered along it, keeping 1/{factor} of it",
            )
        )
        return
    g = max(v[1] for v in gathered.values())
    text = f"{ir[g]['op']} then {ir[key]['op']} keeps 1/{factor} along dim {dim}"
    out = ir[key].get("out_type")
    if (dim is None or dim not in gathered) and out is not None and out.nbytes:
        # a change of split dim: one AlltoAll sends each rank only the pieces it keeps
        alltoall = out.nbytes * (factor - 1) // factor
        text += f"; one AlltoAll would make the same re-layout receiving {size(alltoall)}"
        chain.wastes.append(Waste("gather-then-slice", (g, key), text, alltoall))
        return
    chain.wastes.append(Waste("gather-then-slice", (g, key), text))


def _growth(ir: IRFile, key: int, dim: int) -> int | None:
    src = (ir[key].get("in_types") or (None,))[0]
    dst = ir[key].get("out_type")
    if not src or not dst or not src.shape or not dst.shape or len(src.shape) <= dim or not src.shape[dim]:
        return None
    return int(dst.shape[dim] // src.shape[dim])


def _reassembling_concat(ir: IRFile, split: int, outputs: int | None) -> int | None:
    """The Concat that takes every piece of ``split``, in order, through one MakeTuple."""
    items = [u for u in ir.consumers(split) if ir[u]["op"] == "TupleGetItem"]
    tuples = {t for i in items for t in ir.consumers(i) if ir[t]["op"] == "MakeTuple"}
    if len(tuples) != 1:
        return None
    tup = tuples.pop()
    order = []
    for item in ir.producers(tup):  # every piece, straight from the Split, in order
        args: tuple[Any, ...] = ir[item].get("args") or ()
        if ir[item]["op"] != "TupleGetItem" or ir.producers(item)[:1] != [split] or len(args) < 2:
            return None
        order.append(as_int(args[1]))
    if outputs is None or order != list(range(outputs)):
        return None
    concats = [c for c in ir.consumers(tup) if ir[c]["op"] == "Concat"]
    return concats[0] if len(concats) == 1 else None


class Permutation(NamedTuple):
    """A change of device axes paid as a gather."""

    split: tuple[Any, ...]  # the split counts both ends use
    produced: tuple[Any, ...]  # the producer's output placement
    read: tuple[Any, ...]  # the consumer's input placement
    factor: int  # how many times the tensor is gathered
    moved: tuple[Any, ...] = ()  # the ranks whose block is one another rank holds
    ranks: int = 0  # the devices the strategies use


def permutation(ir: IRFile, chain: Chain) -> Permutation | None:
    """The run when producer and consumer name the same split counts on different device axes:
    the local shape is the same at both ends, the blocks sit on other ranks."""
    if not chain.consumers or chain.entry is None or chain.exit is None or chain.entry.shape is None:
        return None
    if chain.entry.shape != chain.exit.shape:
        return None
    consumer, pos = chain.consumers[0]
    has, strat = output_layout(ir, chain.source), strategy(ir, consumer)
    wants = tuple(strat[pos]) if strat and pos < len(strat) else None
    produced, read = output_placement(ir, chain.source), placements(ir, consumer)
    read = read[pos] if read and pos < len(read) else None
    if has is None or has != wants or produced is None or read is None or produced == read:
        return None
    factor = 1
    for k in chain.nodes:
        if ir[k]["op"] in GATHER_OPS:
            factor *= as_int((ir[k].get("primitive_attrs") or {}).get("rank_size")) or 1
    ranks = devices(ir)
    return Permutation(has, produced, read, factor, tuple(ranks_moved(produced, read, ranks)), ranks)
