"""What a recompute fix makes backward keep that it does not keep now.

A Linear's key (``feed_forward\\.w1\\.reshape``) tags the one ``reshape`` primitive the Linear calls for
its input and its output. Under sequence parallel the parallel pass replaces the input Reshape by a
re-layout chain that starts with a collective (``AllGather -> Split -> Concat -> Reshape``,
``redistribution_op`` instance names), shared by the Linears that read the same input (w1 and w3).
Once the key is in, the tagged Linear gets its own chain, tagged, and MindSpore recomputes it for
backward: the collective runs again and its input (the norm's sequence-sharded output) is kept,
while the untagged chain of the other Linear keeps its output as before. Measured on a real
MindFormers 2.1.0 Llama dp2 x mp4 with ``use_seq_parallel`` (``par_rc_mf_gen.py --only
mf_dp2_mp4_sp_select_blocked``, then its round 1): per layer the SiLU's 2,048 bytes go, the
1,024-byte Cast before the AllGather comes.
"""

from __future__ import annotations

from typing import NamedTuple

from irlint.accounts.memory import bytes_at_stake
from irlint.model import IRFile
from irlint.model.layers import Places
from irlint.model.ops import DENSE_MATMUL_OPS

from .keys import KeyNeed, weight_of_matmul

_CHAIN = {"Reshape", "Concat", "Split", "StridedSlice", "Transpose"}
_PLUMBING = {"TupleGetItem", "MakeTuple"}
_COLLECTIVES = {"AllGather", "AlltoAll", "AllToAll", "AlltoAllV"}
_SUFFIX = "\\.reshape"


class SideKeep(NamedTuple):
    """The collective whose input the fix makes backward keep, and that input's bytes."""

    collective: int
    bytes: int


def _relayout(ir: IRFile, k: int) -> bool:
    return str(ir[k].get("instance", "")).startswith("redistribution_op")


def kept_by_fix(ir: IRFile, needs: list[KeyNeed]) -> list[SideKeep]:
    """Inputs of re-layout collectives that the needed ``<cell>\\.reshape`` keys would make backward
    keep: the cell's MatMul in the key's layer reads its input through a re-layout chain with a
    Reshape, starting at a collective whose input backward does not keep now, and the chain's output
    is read by another forward op too (it stays kept for that one)."""
    out: dict[int, SideKeep] = {}
    places = Places.of(ir)
    for n in needs:
        if not (n.key and n.needed and n.key.endswith(_SUFFIX)):
            continue
        cell = n.key[: -len(_SUFFIX)].replace("\\.", ".")
        layer = places.layer(n.node)[0]
        if not layer.isdigit():
            continue
        weight = f"layers.{layer}.{cell}.weight"
        for m, name in _forward_matmul_weights(ir):
            if not name.endswith(weight):
                continue
            found = _chain_collective(ir, m)
            if found is not None and found.collective not in out:
                out[found.collective] = found
    return list(out.values())


def _forward_matmul_weights(ir: IRFile) -> list[tuple[int, str]]:
    """The forward MatMuls (no recomputed copies) that read a named weight, with its name: asked per
    key and per layer, found once per file."""
    found = ir.__dict__.get("_side_keep_matmul_weights")
    if found is None:
        found = ir.__dict__["_side_keep_matmul_weights"] = [
            (m, name)
            for m in ir.nodes_by_op(*DENSE_MATMUL_OPS)
            if not (ir.is_backward(m) or ir.is_recompute_copy(m)) and (name := weight_of_matmul(ir, m))
        ]
    return found


def _chain_collective(ir: IRFile, m: int) -> SideKeep | None:
    ins = [u for u in ir.producers(m) if ir[u]["kind"] == "cnode" and _relayout(ir, u)]
    if len(ins) != 1:
        return None
    top = v = ins[0]
    reshaped = False
    for _ in range(16):
        op = ir[v]["op"]
        if op in _COLLECTIVES and _relayout(ir, v):
            break
        if op in _CHAIN and _relayout(ir, v):
            reshaped |= op == "Reshape"
        elif op not in _PLUMBING:
            return None
        ups = [u for u in ir.producers(v) if ir[u]["kind"] == "cnode"]
        if not ups:
            return None
        v = ups[0]
    else:
        return None
    if not reshaped or ir[v]["op"] not in _COLLECTIVES:
        return None
    shared = [c for c in ir.consumers(top) if c != m and not ir.is_backward(c) and not ir.is_recompute_copy(c)]
    source = [u for u in ir.producers(v) if ir[u]["kind"] == "cnode"]
    in_t = (ir[v].get("in_types") or (None,))[0]
    if not shared or not source or in_t is None or not in_t.nbytes or bytes_at_stake(ir, source[0]):
        return None
    return SideKeep(v, in_t.nbytes)
