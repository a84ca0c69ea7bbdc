"""Chain discovery: the connected run of ops tensor redistribution inserted between two compute ops
(``collect_chain``), what it touches (weights, the backward pass, MoE experts) and its backward
transpose (``backward_transpose``)."""

from __future__ import annotations

from collections.abc import Iterator

from irlint.accounts.received import group_size, received_bytes
from irlint.findings import Related
from irlint.model import IRFile, primal_attr

from .chain import CHAIN_OPS, MATMUL_OPS, QUIET_IN_RELATED, SCHEME_REDUCE_OPS, SLICE_OPS, WEIGHT_PATH_OPS, Chain, Waste
from .layouts import strategy
from .steps import shrunk_dims
from .wording import first_in, fmt, note, size, who


def splits_experts(ir: IRFile, key: int | None) -> bool:
    """A batched MatMul whose weight operand (a parameter) is split on its leading, expert dim."""
    if key is None or ir[key]["op"] not in MATMUL_OPS:
        return False
    strat = strategy(ir, key)
    if not (strat and len(strat) >= 2 and len(strat[1]) >= 3 and strat[1][0] > 1):
        return False
    inputs = data_inputs(ir, key)  # attention's batched MatMuls split their batch dim on activations
    return len(inputs) >= 2 and is_weight(ir, inputs[1])


def near_experts(ir: IRFile, key: int | None, downstream: bool, hops: int = 6) -> int | None:
    """The expert-splitting batched MatMul ``key`` is, or reaches within ``hops`` forward ops
    (its readers when ``downstream``, else its inputs): MoE dispatch reaches the experts through
    Transposes and Reshapes, combine leaves them the same way."""
    seen, frontier = set(), [key] if key is not None else []
    for _ in range(hops + 1):
        nxt = []
        for k in frontier:
            if k in seen or ir[k]["kind"] != "cnode" or ir.is_backward(k):
                continue
            seen.add(k)
            if splits_experts(ir, k):
                return k
            nxt += ir.consumers(k) if downstream else data_inputs(ir, k)
        frontier = nxt
    return None


def in_chain(ir: IRFile, key: int) -> bool:
    data = ir[key]
    if data["kind"] != "cnode" or data["op"] not in CHAIN_OPS or ir.is_backward(key):
        return False
    if data["op"] in SCHEME_REDUCE_OPS:  # redistribution moves data, it never sums partial results
        return False
    if strategy(ir, key) is not None:  # an op of the model with its own shard strategy
        return False
    if data["op"] == "MakeTuple":  # only the tuple a Concat reassembles
        users = ir.consumers(key)
        return bool(users) and all(ir[u]["op"] == "Concat" for u in users)
    if data["op"] == "TupleGetItem":
        src = ir.producers(key)[:1]
        return bool(src) and ir[src[0]].get("op") == "Split"
    return True


def collect_chain(ir: IRFile, start: int) -> Chain:
    """The connected run of redistribution ops around ``start``, its producer and consumers."""
    nodes = {start}
    stack = [start]
    while stack:
        key = stack.pop()
        for nxt in data_inputs(ir, key) + ir.consumers(key):
            if nxt not in nodes and in_chain(ir, nxt):
                nodes.add(nxt)
                stack.append(nxt)
    ordered = sorted(nodes, key=lambda k: ir[k].get("line", 0))
    chain = Chain(nodes=ordered)
    for key in ordered:
        for pos, src in enumerate(ir.producers(key)):
            if src not in nodes and ir[src]["kind"] != "const" and pos == 0:
                chain.producer = chain.producer if chain.producer is not None else src
                if chain.entry is None:
                    types = ir[key].get("in_types") or ()
                    chain.entry = types[0] if types else None
        for user in ir.consumers(key):
            if user in nodes or ir.is_backward(user) or _hands_to_backward(ir, user):
                continue
            chain.exit = chain.exit or ir[key].get("out_type")
            for p, src in enumerate(ir.producers(user)):
                if src == key and (user, p) not in chain.consumers:
                    chain.consumers.append((user, p))
    # the op whose strategy made the tensor sits behind the scheme collectives that complete it
    while chain.producer is not None and is_scheme_reduce(ir, chain.producer):
        inputs = data_inputs(ir, chain.producer)
        if not inputs:
            break
        chain.scheme.insert(0, chain.producer)
        chain.producer = inputs[0]
    return chain


def _hands_to_backward(ir: IRFile, user: int) -> bool:
    """A user that only keeps the activation for the backward pass: the Partial of a lazy_inline
    backward half, the graph's Return, or a tuple of outputs (the ▸ forward half returns them)."""
    op = ir[user].get("op") if ir[user]["kind"] == "cnode" else ir[user]["kind"]
    if op in ("Partial", "return", "UpdateState"):
        return True
    return (
        op == "MakeTuple"
        and all(ir[u]["kind"] == "return" or ir[u].get("op") == "Partial" for u in ir.consumers(user))
        and bool(ir.consumers(user))
    )


def is_scheme_reduce(ir: IRFile, key: int) -> bool:
    data = ir[key]
    return (
        data["kind"] == "cnode"
        and data["op"] in SCHEME_REDUCE_OPS
        and not ir.is_backward(key)
        and strategy(ir, key) is None
    )


def data_inputs(ir: IRFile, key: int) -> list[int]:
    return [p for p in ir.producers(key) if ir[p]["kind"] != "const"]


def _first_inputs(ir: IRFile, key: int) -> Iterator[int]:
    """``key``, its first data input, that one's first data input ... (until a node without
    inputs, or a cycle)."""
    seen = set()
    while key not in seen:
        seen.add(key)
        yield key
        inputs = data_inputs(ir, key)
        if not inputs:
            return
        key = inputs[0]


def is_weight(ir: IRFile, key: int) -> bool:
    """Optimizer-parallel gathers read a parameter (through Load / mirror ops)."""
    for k in _first_inputs(ir, key):
        data = ir[k]
        if data["kind"] == "param":
            return True
        if data["kind"] != "cnode" or data["op"] not in WEIGHT_PATH_OPS:
            return False
    return False


def touches_backward(ir: IRFile, chain: Chain) -> bool:
    return any(ir.is_backward(k) for k in chain.nodes) or ir.is_backward(chain.source)


def allreduce_then_slice(ir: IRFile, key: int) -> Chain | None:
    """A forward AllReduce whose every user keeps only a slice of the reduced tensor: a
    ReduceScatter would hand each rank its part for half the bytes (MindSpore emits one when the
    producer MatMul has an ``out_strategy``)."""
    if ir.is_backward(key) or (ir[key].get("primitive_attrs") or {}).get("op", "sum") != "sum":
        return None
    n = group_size(ir, key)
    users = [u for u in ir.consumers(key) if not ir.is_backward(u)]
    if not n or n < 2 or not users:
        return None
    nodes, consumers, kept = [key], [], None
    for user in users:
        node, path = user, []
        while in_chain(ir, node) and ir[node]["op"] == "Reshape" and len(ir.consumers(node)) == 1:
            path.append(node)
            node = ir.consumers(node)[0]
        if not in_chain(ir, node) or ir[node]["op"] not in SLICE_OPS:
            return None  # someone reads the whole reduced tensor
        factor = 1
        for _, f in shrunk_dims(ir, node):
            factor *= f
        if factor < 2:
            return None
        kept = factor if kept is None else min(kept, factor)
        nodes += path + [node]
        for c in ir.consumers(node):
            if not ir.is_backward(c):
                consumers += [(c, p) for p, src in enumerate(ir.producers(c)) if src == node]
    inputs = data_inputs(ir, key)
    if not inputs or not consumers:
        return None
    nodes.sort(key=lambda k: ir[k].get("line", 0))
    last = nodes[-1]
    chain = Chain(
        nodes=nodes,
        producer=inputs[0],
        consumers=consumers,
        entry=first_in(ir, key),
        exit=ir[last].get("out_type"),
        moved=received_bytes(ir, key) or 0,
    )
    scatter = (chain.entry.nbytes * (n - 1) // n) if chain.entry is not None and chain.entry.nbytes else None
    chain.kept_by_scheme = scatter or 0
    chain.wastes.append(
        Waste(
            "allreduce-then-slice",
            (key, last),
            f"every rank reduces the whole tensor and keeps 1/{kept} of it; a ReduceScatter "
            f"over the same {n} ranks would receive {size(scatter)} instead of "
            f"{size(chain.moved)}",
        )
    )
    consumer, pos = consumers[0]
    producer = strategy_source(ir, inputs[0])
    c_strat = strategy(ir, consumer)
    wants = tuple(c_strat[pos]) if c_strat and pos < len(c_strat) else None
    if producer is not None and wants is not None and ir[producer]["op"] in MATMUL_OPS:
        chain.hint = (
            f"{who(ir, consumer)} (in_strategy {fmt(c_strat)}) reads input {pos} as layout {fmt(wants)}; "
            f"give {who(ir, producer)} (in_strategy {fmt(strategy(ir, producer))}) out_strategy "
            f"{fmt((wants,))}: MindSpore then reduces with one ReduceScatter into that layout, and the "
            f"AllReduce, the slice and their backward transpose go (the sequence-parallel form)"
        )
    return chain


def strategy_source(ir: IRFile, key: int) -> int | None:
    """The op with a strategy whose output reaches ``key`` unchanged."""
    for k in _first_inputs(ir, key):
        if ir[k]["kind"] != "cnode":
            return None
        if strategy(ir, k) is not None:
            return k
    return None


def backward_index(ir: IRFile) -> dict[str, list[int]]:
    """forward unique_id -> the backward nodes derived from it (``forward_unique_id``); once per
    IRFile, when a finding first names a backward transpose."""
    index = ir.__dict__.get("_redistribution_backward_index")
    if index is None:
        index = ir.__dict__["_redistribution_backward_index"] = {}
        for key in ir.cnodes():
            uid = primal_attr(ir[key], "forward_unique_id")
            if uid is not None and ir.is_backward(key):
                index.setdefault(str(uid), []).append(key)
    return index


def backward_transpose(
    ir: IRFile, chain: Chain, index: dict[str, list[int]], nodes: list[int] | None = None
) -> list[int]:
    """The backward ops MindSpore derived from the chain's ops (or from ``nodes`` of it: the
    gather's ReduceScatter, the slice's StridedSliceGrad, ...), in dump order; glue left out."""
    out = set()
    for key in chain.nodes if nodes is None else nodes:
        uid = primal_attr(ir[key], "unique_id")
        for b in index.get(str(uid), ()) if uid is not None else ():
            if ir[b]["op"] not in QUIET_IN_RELATED:
                out.add(b)
    return sorted(out, key=lambda k: ir[k].get("line", 0))


def readers(ir: IRFile, chain: Chain) -> str:
    """The consumers of a chain (MindSpore 2.10 shares one redistribution among readers of one layout)."""
    names = list(dict.fromkeys(who(ir, c) for c, _ in chain.consumers))
    if len(names) > 1:
        return f"its {len(names)} readers {', '.join(names)}"
    return names[0] if names else "its users"


def end_note(ir: IRFile, key: int, text: str) -> Related:
    if ir[key]["kind"] == "cnode":
        strat = strategy(ir, key)
        extra = f", in_strategy {fmt(strat)}" if strat is not None else ""
        return note(ir, key, f"{text}{extra}, out {ir[key].get('out_type')}")
    return note(ir, key, text)
