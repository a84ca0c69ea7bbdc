"""What one collective receives per rank and step (``irlint.accounts.comm`` says how it is counted):
the part of the communication accounting the redistribution rules use, without the account's
report classes."""

from __future__ import annotations

import re

from ..model import IRFile
from ..model.ops import ALLTOALL_OPS as ALLTOALL_OPS
from ..model.ops import COLLECTIVE_OPS as COLLECTIVE_OPS
from ..model.ops import GATHER_OPS as GATHER_OPS
from ..model.ops import KINDS as KINDS

_GROUP_SIZE = re.compile(r"^(\d+)-")


def group_size(ir: IRFile, key: int) -> int | None:
    """Ranks in the op's group: ``rank_size``, the member lists, or the size prefix of the name."""
    attrs = ir[key].get("primitive_attrs") or {}
    n = _int(attrs.get("rank_size"))
    if n:
        return n
    members = attrs.get("group_rank_ids") or attrs.get("rank_list")
    if isinstance(members, tuple) and members:
        return len(members)
    m = _GROUP_SIZE.match(str(attrs.get("group") or ""))
    return int(m.group(1)) if m else None


def received_bytes(ir: IRFile, key: int) -> int | None:
    """Bytes one rank receives through one execution of ``key``: 0 for an op that is no
    collective, None when the type line gives no size."""
    data = ir[key]
    op = data.get("op")
    if op not in COLLECTIVE_OPS:
        return 0
    src = (data.get("in_types") or (None,))[0]
    dst = data.get("out_type")
    if op == "Send":
        return 0
    if op == "Receive":
        return dst.nbytes if dst is not None and dst.dtype is not None else None
    if op in _VARIABLE_OPS and dst is not None and dst.nbytes is None:
        return _variable_received(ir, key)
    if src is None or dst is None or src.nbytes is None or dst.nbytes is None:
        return None
    if op in GATHER_OPS:
        return max(dst.nbytes - src.nbytes, 0)
    if op in ALLTOALL_OPS:
        count = _int((data.get("primitive_attrs") or {}).get("split_count")) or group_size(ir, key) or 1
        return dst.nbytes * (count - 1) // count
    if op == "ReduceScatter":
        return max(src.nbytes - dst.nbytes, 0)
    if op == "AllReduce":  # a ring: reduce-scatter, then all-gather, of the whole tensor
        n = group_size(ir, key) or 1
        return 2 * (n - 1) * src.nbytes // n
    n = group_size(ir, key) or 1  # Broadcast: every rank but the root receives the tensor
    return dst.nbytes * (n - 1) // n


_VARIABLE_OPS = frozenset({"AlltoAllV", "AllToAllV"})


def variable_size(ir: IRFile, key: int) -> bool:
    """An AlltoAllV whose receive size the data decides: its bytes are an estimate."""
    data = ir[key]
    dst = data.get("out_type")
    return data.get("op") in _VARIABLE_OPS and dst is not None and dst.nbytes is None


def _variable_received(ir: IRFile, key: int) -> int | None:
    """An AlltoAllV whose receive size the data decides (MoE token dispatch): what the rank sends,
    split evenly over the peers its send list names, as what it receives from the others (balanced
    routing: over the group, sent and received are equal). One whose input size is data-dependent
    too moves the volume of an AlltoAllV with the same two lists: in the same order (the dispatch's
    gradient) it sends what that one sends; swapped (the combine) it receives what that one sent.
    None when neither gives a size."""
    types: list = list(ir[key].get("in_types") or ())
    if len(types) < 3 or types[1] is None or not types[1].shape or not isinstance(types[1].shape[0], int):
        return None
    peers = types[1].shape[0]
    if peers < 1:
        return None
    sent = types[0].nbytes if types[0] is not None else None
    if sent is None:
        args = ir.producers(key)
        if len(args) < 3:
            return None
        for other in ir.consumers(args[1]):
            theirs = ir.producers(other)
            same = theirs[1:3] in ([args[1], args[2]], [args[2], args[1]])
            if other != key and ir[other].get("op") in _VARIABLE_OPS and same:
                their_types = ir[other].get("in_types") or ()
                sent = their_types[0].nbytes if their_types and their_types[0] is not None else None
                if sent is not None:
                    break
    return None if sent is None else sent * (peers - 1) // peers


def step_received_bytes(ir: IRFile) -> int:
    """What every collective of the file receives per rank and step, added up."""
    total = ir.__dict__.get("_step_received_bytes")
    if total is None:
        total = sum(received_bytes(ir, k) or 0 for k in ir.nodes_by_op(*COLLECTIVE_OPS))
        ir.__dict__["_step_received_bytes"] = total
    return total


def waste_entry(ir: IRFile, key: int, nbytes: int) -> dict:
    """How a finding names the bytes of one collective a consistent strategy would not move."""
    return {
        "graph": ir[key].get("graph", ""),
        "node": ir[key].get("id", ""),
        "op": ir[key].get("op", ""),
        "bytes": nbytes,
    }


def _int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
