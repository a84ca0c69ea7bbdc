"""PC001 redundant-redistribution-chain: tensor redistribution that moves data and then undoes or
discards it, between two compute ops of the forward graph."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from irlint.findings import Finding, Related
from irlint.model import IRFile
from irlint.rule import Rule
from irlint.values import TensorType

from .evidence import (MATMUL_OPS, all_reduce_note, best_fix, fmt, note, output_layout, scope_path, size,
                               splits_experts, strategy, who)

GATHER_OPS = frozenset({"AllGather", "_MiniStepAllGather"})
ALLTOALL_OPS = frozenset({"AlltoAll", "AllToAll", "_AlltoAll", "AlltoAllV", "AllToAllV"})
COMM_OPS = GATHER_OPS | ALLTOALL_OPS | {"ReduceScatter"}
SLICE_OPS = frozenset({"StridedSlice", "Slice"})
# local ops tensor redistribution inserts around the communication
LOCAL_OPS = frozenset({"Split", "Concat", "Reshape", "Transpose", "TupleGetItem", "MakeTuple"}) | SLICE_OPS
CHAIN_OPS = COMM_OPS | LOCAL_OPS
MOVING_OPS = COMM_OPS | {"AllReduce"}   # what the byte counts cover
# ops that hand a weight through unchanged on its way to a consumer
WEIGHT_PATH_OPS = frozenset({"Load", "Depend", "_MirrorOperator", "_MirrorMiniStepOperator", "_VirtualDiv",
                             "Cast"})
QUIET_IN_RELATED = frozenset({"TupleGetItem", "MakeTuple"})


@dataclass
class Waste:
    kind: str
    nodes: tuple[int, ...]
    text: str
    alltoall_bytes: int | None = None    # what one AlltoAll would receive for the same re-layout


@dataclass
class Chain:
    nodes: list[int]                      # redistribution ops in dump order
    producer: int | None = None
    consumers: list[tuple[int, int]] = field(default_factory=list)   # (consumer, argument position)
    entry: TensorType | None = None
    exit: TensorType | None = None
    moved: int = 0
    wastes: list[Waste] = field(default_factory=list)
    hint: str | None = None                # set where the fix is not a change of in_strategy


class RedundantRedistributionChain(Rule):
    """Redistribution communication in the forward graph that undoes itself or throws data away.

    What it finds:
        Under semi/auto parallel each op carries a shard strategy (``in_strategy``). Where a
        producer's output layout differs from the layout its consumer's strategy asks for,
        MindSpore's tensor redistribution inserts a run of ops between them: AllGather,
        AlltoAll, ReduceScatter and the local Split / Concat / StridedSlice / Reshape around
        them. The rule follows each such run between two compute ops of the forward graph and
        reports it when it is wasteful:

        - data gathered and then sliced away (AllGather, with the Split/Concat MindSpore uses to
          gather along a non-leading axis, followed by a StridedSlice or a Split whose other
          pieces are unused): a re-layout done by gathering everything. Where the split dim
          changes, the finding says what one AlltoAll would move instead;
        - an AllGather re-split along the dim it gathered: the slice keeps exactly what the
          rank sent, so the communication is a no-op;
        - an AllReduce whose every user slices it: each rank receives the whole sum to keep
          1/n of it, where a ReduceScatter would move half the bytes;
        - two AlltoAll that undo each other: the second, on the same group and split_count,
          swaps split_dim and concat_dim back, with at most Reshapes/Transposes between them
          that keep both moved dims whole (a compute op between them, like the expert MatMul
          between MoE dispatch and combine, makes them a real round trip and is left alone);
        - a Split/Concat along one axis that only reassembles the tensor (every piece, in
          order), with or without communication around it;
        - the same tensor gathered more than once by identical AllGathers (one per consumer).

        The finding lists the chain in order with local shapes, dtypes and the bytes each step
        receives, the bytes that survive, the producer's and consumer's ``in_strategy``, and the
        backward transpose MindSpore derived from the chain (linked by ``forward_unique_id``;
        StridedSliceGrad, SplitWithSize/Concat, the ReduceScatter named after the AllGather),
        whose cost is added. Identical chains of ``rank_N/`` folders are one finding "on ranks
        0-7" although group names, rank lists and slice offsets differ from rank to rank.

        Communication that belongs to the parallel scheme is left alone: the AllReduce after a
        row-parallel MatMul and its backward, loss AllReduces (``op: "sum"`` or ``"max"``),
        anything in the backward graph (``Gradients/`` scope or ``forward_unique_id``), the
        optimizer-parallel AllGather of a weight (its input is a parameter), the full_batch
        StridedSlice of a graph input, ``_MirrorOperator`` and its gradient AllReduce,
        ``_VirtualDiv``, the sequence-parallel ReduceScatter and the AllGather before
        column-parallel MatMuls, expert-parallel AlltoAll dispatch/combine and pipeline
        Send/Receive. A whole activation gathered and used in full (column-parallel after
        column-parallel) is not redundant: ``strategy-mismatch-full-gather`` (PC002) reports it.

    Why it matters:
        Redistribution is inserted silently. A chain that gathers a whole activation only to
        keep 1/8 of it costs the bandwidth of the full tensor plus the memory of the gathered
        copy on every step, and in the backward graph its transpose runs again. The MindFormers
        tuning guide names such runs of communication in odd places as the sign of a mis-set
        shard strategy.

    How to fix:
        Change the shard strategy of one op so the producer's output layout is the layout the
        consumer reads. The hint derives that change from the dump's strategies (MatMul family,
        element-wise ops, Transpose): of "the consumer reads what is produced" and "the
        producer outputs what is read", it picks the one that leaves the fewest layout
        disagreements with the two ops' other neighbours, and names the op, the new
        ``in_strategy`` and the AllReduce a split contracted dim then needs. For an AllReduce
        that is sliced it gives the producer MatMul the ``out_strategy`` that makes MindSpore
        emit one ReduceScatter; for a re-layout that expert parallelism needs, it points to
        ``set_auto_parallel_context(enable_alltoall=True)``.

    Example:
        ``par-mismatch-mm_rows8_to_cols8`` (MindSpore 2.10, 8 devices, ``21_validate``): mm1
        ``((8, 1), (1, 1))`` splits the rows, the ReLU after it ``((1, 8),)`` the columns, mm2
        ``((1, 8), (8, 1))`` is row-parallel::

            %2 MatMul mm1        -> Float32(8, 32)          in_strategy ((8, 1), (1, 1))
            %3 AllGather         Float32(8, 32) -> Float32(64, 32)   group of 8, receives 7.0 KiB
            %4 StridedSlice      Float32(64, 32) -> Float32(64, 4)   keeps 1/8 (1.0 KiB)
            %5 ReLU              in_strategy ((1, 8),)
            backward: %15 StridedSliceGrad, %16 ReduceScatter        receives 7.0 KiB

        14.0 KiB per step move to keep 1.0 KiB. The fix: mm1 ``((1, 1), (1, 8))`` (column
        parallel) outputs the (1, 8) layout the ReLU reads, and mm2 keeps its one AllReduce;
        ReLU ``((8, 1),)`` instead would only move the chain in front of mm2.
    """

    code = "PC001"
    name = "redundant-redistribution-chain"
    severity = "warning"
    summary = "A forward redistribution chain undoes itself or discards the data it moved"
    # redistribution exists from step_parallel (optimize) on; validate is the last front-end graph
    stages = ("validate", "optimize", "cse_after_recomputation", "add_recomputation")
    VALID = [
        # row-parallel w2 after column-parallel w1: one AllReduce, no redistribution
        """# IR entry: @main
# Total subgraphs: 1

# Total params: 3
# Params:
%para1_x: <Tensor[Float32], (16, 32)> : [16, 32]
%para2_w1: <Ref[Tensor[Float32]], (8, 32), ref_key=w1, is_parameter>  :  has_default
%para3_w2: <Ref[Tensor[Float32]], (32, 8), ref_key=w2, is_parameter>  :  has_default

Node counting information:
Total number of nodes: 12
Total number of cnodes: 6

subgraph @main() {
  %0(CNode_1) = Load(%para2_w1, UMonad[U]) cnode_primal_attrs: {unique_id: "1"}
      : (<Ref[Tensor[Float32]], (8, 32), ref_key=w1, is_parameter>, <UMonad, NoShape>) -> (<Tensor[Float32], (8, 32)>)
      # Fullname with scope: (Default/network-Net/w1-Linear/Load-op0)
  %1(CNode_2) = PrimFunc_MatMul(%para1_x, %0, Bool(0), Bool(1)) primitive_attrs: {in_strategy: ((1, 1), (8, 1))} cnode_primal_attrs: {unique_id: "2"}
      : (<Tensor[Float32], (16, 32)>, <Tensor[Float32], (8, 32)>, <Bool, NoShape>, <Bool, NoShape>) -> (<Tensor[Float32], (16, 8)>)
      # Fullname with scope: (Default/network-Net/w1-Linear/MatMul-op0)
  %2(CNode_3) = Load(%para3_w2, UMonad[U]) cnode_primal_attrs: {unique_id: "3"}
      : (<Ref[Tensor[Float32]], (32, 8), ref_key=w2, is_parameter>, <UMonad, NoShape>) -> (<Tensor[Float32], (32, 8)>)
      # Fullname with scope: (Default/network-Net/w2-Linear/Load-op0)
  %3(CNode_4) = PrimFunc_MatMul(%1, %2, Bool(0), Bool(1)) primitive_attrs: {in_strategy: ((1, 8), (1, 8))} cnode_primal_attrs: {unique_id: "4"}
      : (<Tensor[Float32], (16, 8)>, <Tensor[Float32], (32, 8)>, <Bool, NoShape>, <Bool, NoShape>) -> (<Tensor[Float32], (16, 32)>)
      # Fullname with scope: (Default/network-Net/w2-Linear/MatMul-op0)
  %4(CNode_5) = AllReduce(%3) {instance name: forward_op_1} primitive_attrs: {group: "8-1", rank_size: I64(8), op: "sum"} cnode_primal_attrs: {unique_id: "5"}
      : (<Tensor[Float32], (16, 32)>) -> (<Tensor[Float32], (16, 32)>)
      # Fullname with scope: (Default/network-Net/w2-Linear/AllReduce-op0)
  Return(%4)
      : (<Tensor[Float32], (16, 32)>)
      # Fullname with scope: (Default/network-Net/Return-op0)
}
""",
    ]
    INVALID = [
        # par-mismatch-mm_rows8_to_cols8 rank_0 21_validate, forward to the ReLU: mm1 splits rows, the
        # ReLU columns; MindSpore gathers all rows and slices 1/8 of the columns away
        """# IR entry: @main
# Total subgraphs: 1

# Total params: 2
# Params:
%para1_inputs0: <Tensor[Float32], (64, 16)> : [64, 16]
%para2_net.w1: <Ref[Tensor[Float32]], (16, 32), ref_key=net.w1, is_parameter, is_inplace>  :  has_default

Node counting information:
Total number of nodes: 20
Total number of cnodes: 7

subgraph @main() {
  %0(equiv_14_CNode_252) = PrimFunc_StridedSlice(%para1_inputs0, (I64(0), I64(0)), (I64(8), I64(16)), (I64(1), I64(1)), I64(0), I64(0), I64(0), I64(0), I64(0)) {instance name: redistribution_op_13295646245872130566StridedSlice_} primitive_attrs: {keep_value_node_input: Bool(1)} cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "3808", forward_comm_node_unique_id: "3604"}
      : (<Tensor[Float32], (64, 16)>, <Tuple[Int64*2], TupleShape(NoShape, NoShape), elements_use_flags={[const vector]{1, 1}}>, <Tuple[Int64*2], TupleShape(NoShape, NoShape), elements_use_flags={[const vector]{1, 1}}>, <Tuple[Int64*2], TupleShape(NoShape, NoShape), elements_use_flags={[const vector]{1, 1}}>, <Int64, NoShape>, <Int64, NoShape>, <Int64, NoShape>, <Int64, NoShape>, <Int64, NoShape>) -> (<Tensor[Float32], (8, 16)>)
      # Fullname with scope: (Default/network-WithLoss/net-TwoMatMul/StridedSlice-op0)
  %1(equiv_4_CNode_210) = Load(%para2_net.w1, UMonad[U]) cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "3803"}
      : (<Ref[Tensor[Float32]], (16, 32), ref_key=net.w1, is_parameter, is_inplace>, <UMonad, NoShape>) -> (<Tensor[Float32], (16, 32)>)
      # Fullname with scope: (Default/network-WithLoss/Load-op0)
  %2(equiv_12_CNode_266) = PrimFunc_MatMul(%0, %1, Bool(0), Bool(0)) {instance name: mm1} primitive_attrs: {in_strategy: ((8, 1), (1, 1)), mirror_user_id: "net.w1"} cnode_attrs: {related_comm_node_id: "3618", checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "3800", related_fusion_key: "all_reduce_hccl_world_group_1", origin_output_shape: (64, 32), origin_input_shapes: ((64, 16), (16, 32)), related_node_id: "2975", mirror_user_id: "net.w1"} {in_strategy: ((8, 1), (1, 1))}
      : (<Tensor[Float32], (8, 16)>, <Tensor[Float32], (16, 32)>, <Bool, NoShape>, <Bool, NoShape>) -> (<Tensor[Float32], (8, 32)>)
      # Fullname with scope: (Default/network-WithLoss/net-TwoMatMul/MatMul-op0)
  %3(equiv_11_CNode_254) = AllGather(%2) {instance name: redistribution_op_910280660132420711AllGather_} primitive_attrs: {comm_reuse: Bool(1), group: "hccl_world_group", fusion: I64(0), rank_list: (0, 1, 2, 3, 4, 5, 6, 7), group_ranks: "WORLD_GROUP", group_rank_ids: (0, 1, 2, 3, 4, 5, 6, 7), rank_size: I64(8), keep_value_node_input: Bool(1), no_eliminate: Bool(1), mean_flag: Bool(0)} cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "3809", forward_comm_node_unique_id: "3606"}
      : (<Tensor[Float32], (8, 32)>) -> (<Tensor[Float32], (64, 32)>)
      # Fullname with scope: (Default/network-WithLoss/net-TwoMatMul/AllGather-op0)
  %4(equiv_10_CNode_255) = PrimFunc_StridedSlice(%3, (I64(0), I64(0)), (I64(64), I64(4)), (I64(1), I64(1)), I64(0), I64(0), I64(0), I64(0), I64(0)) {instance name: redistribution_op_13295646245872130566StridedSlice_} primitive_attrs: {keep_value_node_input: Bool(1)} cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "3810", forward_comm_node_unique_id: "3616"}
      : (<Tensor[Float32], (64, 32)>, <Tuple[Int64*2], TupleShape(NoShape, NoShape), elements_use_flags={[const vector]{1, 1}}>, <Tuple[Int64*2], TupleShape(NoShape, NoShape), elements_use_flags={[const vector]{1, 1}}>, <Tuple[Int64*2], TupleShape(NoShape, NoShape), elements_use_flags={[const vector]{1, 1}}>, <Int64, NoShape>, <Int64, NoShape>, <Int64, NoShape>, <Int64, NoShape>, <Int64, NoShape>) -> (<Tensor[Float32], (64, 4)>)
      # Fullname with scope: (Default/network-WithLoss/net-TwoMatMul/StridedSlice-op1)
  %5(equiv_9_CNode_267) = PrimFunc_ReLU(%4) {instance name: relu} primitive_attrs: {in_strategy: ((1, 8))} cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "3799"} {in_strategy: ((1, 8))}
      : (<Tensor[Float32], (64, 4)>) -> (<Tensor[Float32], (64, 4)>)
      # Fullname with scope: (Default/network-WithLoss/net-TwoMatMul/ReLU-op0)
  Return(%5)
      : (<Tensor[Float32], (64, 4)>)
      # Fullname with scope: (Default/network-WithLoss/Return-op0)
}
""",
        # an AllGather re-split along the dim it gathered: the slice keeps what the rank sent
        """# IR entry: @main
# Total subgraphs: 1

# Total params: 2
# Params:
%para1_x: <Tensor[Float32], (16, 32)> : [16, 32]
%para2_w1: <Ref[Tensor[Float32]], (8, 32), ref_key=w1, is_parameter>  :  has_default

Node counting information:
Total number of nodes: 14
Total number of cnodes: 6

subgraph @main() {
  %0(CNode_1) = Load(%para2_w1, UMonad[U]) cnode_primal_attrs: {unique_id: "1"}
      : (<Ref[Tensor[Float32]], (8, 32), ref_key=w1, is_parameter>, <UMonad, NoShape>) -> (<Tensor[Float32], (8, 32)>)
      # Fullname with scope: (Default/network-Net/w1-Linear/Load-op0)
  %1(CNode_2) = PrimFunc_MatMul(%para1_x, %0, Bool(0), Bool(1)) primitive_attrs: {in_strategy: ((1, 1), (8, 1))} cnode_primal_attrs: {unique_id: "2"}
      : (<Tensor[Float32], (16, 32)>, <Tensor[Float32], (8, 32)>, <Bool, NoShape>, <Bool, NoShape>) -> (<Tensor[Float32], (16, 8)>)
      # Fullname with scope: (Default/network-Net/w1-Linear/MatMul-op0)
  %2(CNode_3) = AllGather(%1) {instance name: redistribution_op_1} primitive_attrs: {group: "8-1", rank_size: I64(8)} cnode_primal_attrs: {unique_id: "3"}
      : (<Tensor[Float32], (16, 8)>) -> (<Tensor[Float32], (128, 8)>)
      # Fullname with scope: (Default/network-Net/w2-Linear/AllGather-op0)
  %3(CNode_4) = PrimFunc_StridedSlice(%2, (I64(0), I64(0)), (I64(16), I64(8)), (I64(1), I64(1)), I64(0), I64(0), I64(0), I64(0), I64(0)) {instance name: redistribution_op_2} cnode_primal_attrs: {unique_id: "4"}
      : (<Tensor[Float32], (128, 8)>, <Tuple[Int64*2], TupleShape(NoShape, NoShape)>, <Tuple[Int64*2], TupleShape(NoShape, NoShape)>, <Tuple[Int64*2], TupleShape(NoShape, NoShape)>, <Int64, NoShape>, <Int64, NoShape>, <Int64, NoShape>, <Int64, NoShape>, <Int64, NoShape>) -> (<Tensor[Float32], (16, 8)>)
      # Fullname with scope: (Default/network-Net/w2-Linear/StridedSlice-op0)
  %4(CNode_5) = PrimFunc_SiLU(%3) primitive_attrs: {in_strategy: ((1, 8))} cnode_primal_attrs: {unique_id: "5"}
      : (<Tensor[Float32], (16, 8)>) -> (<Tensor[Float32], (16, 8)>)
      # Fullname with scope: (Default/network-Net/w2-Linear/SiLU-op0)
  Return(%4)
      : (<Tensor[Float32], (16, 8)>)
      # Fullname with scope: (Default/network-Net/Return-op0)
}
""",
    ]

    def check(self, ir: IRFile) -> Iterator[Finding]:
        seen: set[int] = set()
        chains: list[Chain] = []
        backward = _backward_index(ir)
        for key in ir.nodes_by_op(*COMM_OPS, "Split"):
            if key in seen or ir.is_backward(key) or (ir[key]["op"] == "Split" and not _in_chain(ir, key)):
                continue
            chain = _collect_chain(ir, key)
            seen.update(chain.nodes)
            if chain.producer is None or _is_weight(ir, chain.producer) or _touches_backward(ir, chain):
                continue
            _simulate(ir, chain)
            chains.append(chain)
            if chain.wastes:
                yield self._chain_finding(ir, chain, backward)
        yield from self._repeated_gathers(ir, chains)
        for key in ir.nodes_by_op("AllReduce"):
            chain = _allreduce_then_slice(ir, key)
            if chain is not None:
                yield self._chain_finding(ir, chain, backward)

    # --- findings ---------------------------------------------------------------------------
    def _chain_finding(self, ir: IRFile, chain: Chain, backward: dict[str, list[int]]) -> Finding:
        first_comm = next((k for k in chain.nodes if ir[k]["op"] in MOVING_OPS), chain.nodes[0])
        consumer, pos = chain.consumers[0] if chain.consumers else (None, 0)
        survive = chain.exit.nbytes if chain.exit is not None else None
        transpose = _backward_transpose(ir, chain, backward)
        moved_back = sum(_moved(ir, k) or 0 for k in transpose)
        if ir[first_comm]["op"] in MOVING_OPS:
            cost = f"{size(chain.moved)} received to keep {size(survive)}"
            if transpose:
                cost += (f"; the backward transpose ({' -> '.join(ir[k]['op'] for k in transpose)}) moves "
                         f"{size(moved_back)} more, {size(chain.moved + moved_back)} per step in all")
        else:
            cost = f"no communication, but {size(survive)} are copied to end where they started"
        sequence = " -> ".join(_step(ir, k, costs=True) for k in chain.nodes if ir[k]["op"] not in QUIET_IN_RELATED)
        kinds = sorted({w.kind for w in chain.wastes})
        what = "; ".join(w.text for w in chain.wastes)
        message = (f"redistribution chain {sequence} between {who(ir, chain.producer)} and "
                   f"{_readers(ir, chain)}: {what}; {cost}")
        same_rank = (chain.entry is not None and chain.exit is not None
                     and len(chain.entry.shape or ()) == len(chain.exit.shape or ()))
        hint = chain.hint or _hint(ir, chain.producer, consumer, pos, comparable=same_rank)
        alltoall = min((w.alltoall_bytes for w in chain.wastes if w.alltoall_bytes), default=None)
        expert = next((k for k in (consumer, chain.producer) if splits_experts(ir, k)), None)
        if alltoall and expert is not None:
            # the layout change is the point of expert parallelism: keep it, make it cheap
            hint = (f"{who(ir, expert)} splits its weights' expert dim (in_strategy {fmt(strategy(ir, expert))}), so "
                    f"this re-layout is the expert-parallel dispatch/combine: set_auto_parallel_context("
                    f"enable_alltoall=True) makes MindSpore emit one AlltoAll receiving {size(alltoall)} instead of "
                    f"{size(chain.moved)}")
        elif alltoall:
            hint += ("; where the layout change is wanted, set_auto_parallel_context(enable_alltoall=True) makes "
                     "MindSpore emit one AlltoAll instead")
        related = [_end_note(ir, chain.producer, "producer")]
        related += [note(ir, k, _step(ir, k, costs=True)) for k in chain.nodes
                    if k != first_comm and ir[k]["op"] not in QUIET_IN_RELATED]
        related += [_end_note(ir, c, f"consumer (input {p})") for c, p in chain.consumers]
        related += [note(ir, k, "backward transpose: " + _step(ir, k, costs=True)) for k in transpose]
        identity = (tuple(ir[k]["op"] for k in chain.nodes if ir[k]["op"] not in QUIET_IN_RELATED),
                    scope_path(ir[chain.producer].get("scope", "")),
                    tuple(scope_path(ir[c].get("scope", "")) for c, _ in chain.consumers), tuple(kinds))
        extra = {"kinds": kinds, "moved_bytes": chain.moved, "surviving_bytes": survive,
                 "backward_moved_bytes": moved_back,
                 "steps": [{"node": ir[k]["id"], "op": ir[k]["op"], "in": str(_first_in(ir, k)),
                            "out": str(ir[k].get("out_type")), "moved_bytes": _moved(ir, k) or 0}
                           for k in chain.nodes if ir[k]["op"] not in QUIET_IN_RELATED],
                 "backward": [ir[k]["id"] for k in transpose],
                 "entry": str(chain.entry) if chain.entry else None,
                 "exit": str(chain.exit) if chain.exit else None,
                 "producer_strategy": fmt(strategy(ir, chain.producer)),
                 "consumer_strategy": fmt(strategy(ir, consumer)) if consumer is not None else None}
        fix = best_fix(ir, chain.producer, consumer, pos) if consumer is not None and same_rank else None
        if alltoall and expert is not None:
            extra["fix"] = {"set_auto_parallel_context": "enable_alltoall=True"}
        elif fix is not None and chain.hint is None:
            extra["fix"] = {"node": ir[fix[0]]["id"], "in_strategy": fmt(fix[1])}
        return self.finding(ir, first_comm, message, hint=hint, related=related, identity=identity, extra=extra)

    def _repeated_gathers(self, ir: IRFile, chains: list[Chain]) -> Iterator[Finding]:
        """Identical gathers of one producer output, one per consumer."""
        groups: dict[tuple, list[Chain]] = {}
        for chain in chains:
            first = chain.nodes[0]
            data = ir[first]
            if data["op"] not in GATHER_OPS:
                continue
            attrs = data.get("primitive_attrs") or {}
            sig = (ir.producers(first)[:1][0] if ir.producers(first) else None, data["op"],
                   attrs.get("group"), attrs.get("rank_size"), str(data.get("out_type")))
            groups.setdefault(sig, []).append(chain)
        for (producer_key, op, group, ranks, out), same in groups.items():
            if len(same) < 2 or producer_key is None:
                continue
            gathers = [c.nodes[0] for c in same]
            moved = sum(_moved(ir, g) or 0 for g in gathers[1:])
            consumers = [c for ch in same for c, _ in ch.consumers]
            # the group's size, not its name: names differ from rank to rank
            message = (f"{who(ir, same[0].producer)} output {ir[gathers[0]].get('in_types', ('?',))[0]} is gathered "
                       f"{len(gathers)} times by identical {op}s (group of {ranks or '?'}), once for each of "
                       f"{', '.join(who(ir, c) for c in consumers)}; {size(moved)} received again")
            first = same[0].consumers[0] if same[0].consumers else (None, 0)
            hint = ("one gather would serve every consumer; better, let them read the producer's layout: "
                    + _hint(ir, same[0].producer, first[0], first[1]))
            related = [_end_note(ir, same[0].producer, "producer")]
            related += [note(ir, g, _step(ir, g, costs=True)) for g in gathers[1:]]
            related += [_end_note(ir, c, "consumer") for c in consumers]
            identity = ("repeated-gather", op, scope_path(ir[same[0].producer].get("scope", "")),
                        tuple(sorted(scope_path(ir[c].get("scope", "")) for c in consumers)))
            extra = {"kinds": ["repeated-gather"], "moved_bytes": moved, "gathers": len(gathers),
                     "surviving_bytes": ir[gathers[0]]["out_type"].nbytes if ir[gathers[0]].get("out_type") else None,
                     "producer_strategy": fmt(strategy(ir, same[0].producer))}
            yield self.finding(ir, gathers[1], message, hint=hint, related=related, identity=identity, extra=extra)


# --- chain discovery ------------------------------------------------------------------------------
def _in_chain(ir: IRFile, key: int) -> bool:
    data = ir[key]
    if data["kind"] != "cnode" or data["op"] not in CHAIN_OPS or ir.is_backward(key):
        return False
    if strategy(ir, key) is not None:   # an op of the model with its own shard strategy
        return False
    if data["op"] == "MakeTuple":   # only the tuple a Concat reassembles
        users = ir.consumers(key)
        return bool(users) and all(ir[u]["op"] == "Concat" for u in users)
    if data["op"] == "TupleGetItem":
        src = ir.producers(key)[:1]
        return bool(src) and ir[src[0]].get("op") == "Split"
    return True


def _collect_chain(ir: IRFile, start: int) -> Chain:
    """The connected run of redistribution ops around ``start``, its producer and consumers."""
    nodes = {start}
    stack = [start]
    while stack:
        key = stack.pop()
        for nxt in _data_inputs(ir, key) + ir.consumers(key):
            if nxt not in nodes and _in_chain(ir, nxt):
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
    return chain


def _hands_to_backward(ir: IRFile, user: int) -> bool:
    """A user that only keeps the activation for the backward pass: the Partial of a lazy_inline
    backward half, the graph's Return, or a tuple of outputs (the ▸ forward half returns them)."""
    op = ir[user].get("op") if ir[user]["kind"] == "cnode" else ir[user]["kind"]
    if op in ("Partial", "return", "UpdateState"):
        return True
    return op == "MakeTuple" and all(ir[u]["kind"] == "return" or ir[u].get("op") == "Partial"
                                     for u in ir.consumers(user)) and bool(ir.consumers(user))


def _data_inputs(ir: IRFile, key: int) -> list[int]:
    return [p for p in ir.producers(key) if ir[p]["kind"] != "const"]


def _first_inputs(ir: IRFile, key: int) -> Iterator[int]:
    """``key``, its first data input, that one's first data input ... (until a node without
    inputs, or a cycle)."""
    seen = set()
    while key not in seen:
        seen.add(key)
        yield key
        inputs = _data_inputs(ir, key)
        if not inputs:
            return
        key = inputs[0]


def _is_weight(ir: IRFile, key: int) -> bool:
    """Optimizer-parallel gathers read a parameter (through Load / mirror ops)."""
    for k in _first_inputs(ir, key):
        data = ir[k]
        if data["kind"] == "param":
            return True
        if data["kind"] != "cnode" or data["op"] not in WEIGHT_PATH_OPS:
            return False
    return False


def _touches_backward(ir: IRFile, chain: Chain) -> bool:
    return any(ir.is_backward(k) for k in chain.nodes) or ir.is_backward(chain.producer)


def _allreduce_then_slice(ir: IRFile, key: int) -> Chain | None:
    """A forward AllReduce whose every user keeps only a slice of the reduced tensor: a
    ReduceScatter would hand each rank its part for half the bytes (MindSpore emits one when the
    producer MatMul has an ``out_strategy``)."""
    if ir.is_backward(key) or (ir[key].get("primitive_attrs") or {}).get("op", "sum") != "sum":
        return None
    n = _group_size(ir, key)
    users = [u for u in ir.consumers(key) if not ir.is_backward(u)]
    if not n or n < 2 or not users:
        return None
    nodes, consumers, kept = [key], [], None
    for user in users:
        node, path = user, []
        while _in_chain(ir, node) and ir[node]["op"] == "Reshape" and len(ir.consumers(node)) == 1:
            path.append(node)
            node = ir.consumers(node)[0]
        if not _in_chain(ir, node) or ir[node]["op"] not in SLICE_OPS:
            return None     # someone reads the whole reduced tensor
        factor = 1
        for _, f in _shrunk_dims(ir, node):
            factor *= f
        if factor < 2:
            return None
        kept = factor if kept is None else min(kept, factor)
        nodes += path + [node]
        for c in ir.consumers(node):
            if not ir.is_backward(c):
                consumers += [(c, p) for p, src in enumerate(ir.producers(c)) if src == node]
    inputs = _data_inputs(ir, key)
    if not inputs or not consumers:
        return None
    nodes.sort(key=lambda k: ir[k].get("line", 0))
    last = nodes[-1]
    chain = Chain(nodes=nodes, producer=inputs[0], consumers=consumers, entry=_first_in(ir, key),
                  exit=ir[last].get("out_type"), moved=_moved(ir, key) or 0)
    scatter = (chain.entry.nbytes * (n - 1) // n) if chain.entry is not None and chain.entry.nbytes else None
    chain.wastes.append(Waste("allreduce-then-slice", (key, last),
                              f"every rank reduces the whole tensor and keeps 1/{kept} of it; a ReduceScatter "
                              f"over the same {n} ranks would receive {size(scatter)} instead of "
                              f"{size(chain.moved)}"))
    consumer, pos = consumers[0]
    producer = _strategy_source(ir, inputs[0])
    c_strat = strategy(ir, consumer)
    wants = tuple(c_strat[pos]) if c_strat and pos < len(c_strat) else None
    if producer is not None and wants is not None and ir[producer]["op"] in MATMUL_OPS:
        chain.hint = (f"{who(ir, consumer)} (in_strategy {fmt(c_strat)}) reads input {pos} as layout {fmt(wants)}; "
                      f"give {who(ir, producer)} (in_strategy {fmt(strategy(ir, producer))}) out_strategy "
                      f"{fmt((wants,))}: MindSpore then reduces with one ReduceScatter into that layout, and the "
                      f"AllReduce, the slice and their backward transpose go (the sequence-parallel form)")
    return chain


def _strategy_source(ir: IRFile, key: int) -> int | None:
    """The op with a strategy whose output reaches ``key`` unchanged."""
    for k in _first_inputs(ir, key):
        if ir[k]["kind"] != "cnode":
            return None
        if strategy(ir, k) is not None:
            return k
    return None


# --- what the chain does -------------------------------------------------------------------------
def _simulate(ir: IRFile, chain: Chain) -> None:
    """Walk the chain in order, tracking which dims hold gathered data, and record waste."""
    gathered: dict[int, tuple[int, int]] = {}      # dim -> (factor, gather node)
    members = set(chain.nodes)
    undone: set[int] = set()
    for key in chain.nodes:
        data = ir[key]
        op = data["op"]
        chain.moved += _moved(ir, key) or 0
        if op in GATHER_OPS:
            factor = _int((data.get("primitive_attrs") or {}).get("rank_size")) or _growth(ir, key, 0)
            if factor and factor > 1:
                old = gathered.get(0, (1, key))
                gathered[0] = (old[0] * factor, key)
        elif op in ALLTOALL_OPS:
            first = _alltoall_undone(ir, members, key)
            if first is not None and first not in undone:
                undone.update((first, key))
                between = [k for k in members if ir[k]["line"] > ir[first]["line"] and
                           ir[k]["line"] < ir[key]["line"] and ir[k]["op"] in ("Reshape", "Transpose")]
                around = f" around {', '.join(_step(ir, k) for k in between)}" if between else ""
                chain.wastes.append(Waste("alltoall-undone", (first, key),
                                          f"{_step(ir, key)} undoes {_step(ir, first)}{around}"))
        elif op == "Split":
            axis, outputs = _split_args(ir, key)
            used = _used_split_outputs(ir, key)
            concat = _reassembling_concat(ir, key, outputs)
            if concat is not None:
                c_axis = _norm_dim(_axis(ir, concat), _rank(ir, concat, out=True))
                if axis in gathered and c_axis is not None and c_axis != axis:
                    gathered[c_axis] = gathered.pop(axis)
                elif c_axis == axis:
                    chain.wastes.append(Waste("split-concat-round-trip", (key, concat),
                                              f"Split and Concat along axis {axis} only reassemble the tensor"))
            elif outputs and len(used) < outputs:
                _discard(ir, chain, gathered, key, axis, outputs // max(len(used), 1))
        elif op in SLICE_OPS:
            dims = _shrunk_dims(ir, key)
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
        inputs = _data_inputs(ir, node)[:1]
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
            perm = _perm(ir, node)
            back = {j: p for j, p in enumerate(perm)} if perm else {}
        else:
            return None
        if split not in back or concat not in back:
            return None
        split, concat = back[split], back[concat]


def _alltoall_dims(ir: IRFile, key: int):
    attrs = ir[key].get("primitive_attrs") or {}
    rank = _rank(ir, key)
    return (_norm_dim(_int(attrs.get("split_dim")), rank), _norm_dim(_int(attrs.get("concat_dim")), rank),
            _int(attrs.get("split_count")), attrs.get("group"))


def _reshape_kept_dims(ir: IRFile, key: int) -> dict[int, int]:
    """Output dim -> input dim for the dims a Reshape keeps whole (same size, same number of
    elements before them); the others are merged or split."""
    src = (ir[key].get("in_types") or (None,))[0]
    dst = ir[key].get("out_type")
    if not src or not dst or src.shape is None or dst.shape is None:
        return {}
    before_in, p = {}, 1
    for i, n in enumerate(src.shape):
        before_in.setdefault((p, n), i)
        p *= n or 0
    kept, p = {}, 1
    for j, n in enumerate(dst.shape):
        if n and n > 1 and (p, n) in before_in:
            kept[j] = before_in[(p, n)]
        p *= n or 0
    return kept


def _perm(ir: IRFile, key: int) -> tuple[int, ...] | None:
    args = ir[key].get("args") or ()
    perm = args[1] if len(args) > 1 else (ir[key].get("primitive_attrs") or {}).get("perm")
    if isinstance(perm, tuple) and all(_int(v) is not None for v in perm):
        return perm
    return None


def _discard(ir: IRFile, chain: Chain, gathered: dict, key: int, dim: int | None, factor: int) -> None:
    if not gathered or factor <= 1:
        return
    if dim in gathered and gathered[dim][0] == factor:
        _, g = gathered.pop(dim)
        chain.wastes.append(Waste("gather-resplit", (g, key),
                                  f"{_step(ir, key)} re-splits along dim {dim} what {_step(ir, g)} "
                                  f"gathered along it: the slice keeps what this rank already had"))
        return
    g = max(v[1] for v in gathered.values())
    text = f"{ir[g]['op']} then {ir[key]['op']} keeps 1/{factor} along dim {dim}"
    out = ir[key].get("out_type")
    if dim not in gathered and out is not None and out.nbytes:
        # a change of split dim: one AlltoAll sends each rank only the pieces it keeps
        alltoall = out.nbytes * (factor - 1) // factor
        text += f"; one AlltoAll would make the same re-layout receiving {size(alltoall)}"
        chain.wastes.append(Waste("gather-then-slice", (g, key), text, alltoall))
        return
    chain.wastes.append(Waste("gather-then-slice", (g, key), text))


def _moved(ir: IRFile, key: int) -> int | None:
    """Bytes this rank receives through one communication op."""
    data = ir[key]
    op = data["op"]
    src = (data.get("in_types") or (None,))[0]
    dst = data.get("out_type")
    if src is None or dst is None or src.nbytes is None or dst.nbytes is None:
        return None
    if op in GATHER_OPS:
        return max(dst.nbytes - src.nbytes, 0)
    if op in ALLTOALL_OPS:
        count = _int((data.get("primitive_attrs") or {}).get("split_count")) or 1
        return dst.nbytes * (count - 1) // count
    if op == "ReduceScatter":
        return max(src.nbytes - dst.nbytes, 0)
    if op == "AllReduce":   # a ring: reduce-scatter, then all-gather, of the whole tensor
        n = _group_size(ir, key) or 1
        return 2 * (n - 1) * src.nbytes // n
    return 0


def _group_size(ir: IRFile, key: int) -> int | None:
    attrs = ir[key].get("primitive_attrs") or {}
    return _int(attrs.get("rank_size")) or len(attrs.get("group_rank_ids") or attrs.get("rank_list") or ()) or None


def _growth(ir: IRFile, key: int, dim: int) -> int | None:
    src = (ir[key].get("in_types") or (None,))[0]
    dst = ir[key].get("out_type")
    if not src or not dst or not src.shape or not dst.shape or len(src.shape) <= dim or not src.shape[dim]:
        return None
    return dst.shape[dim] // src.shape[dim]


def _shrunk_dims(ir: IRFile, key: int) -> list[tuple[int, int]]:
    src = (ir[key].get("in_types") or (None,))[0]
    dst = ir[key].get("out_type")
    if not src or not dst or not src.shape or not dst.shape or len(src.shape) != len(dst.shape):
        return []
    return [(i, a // b) for i, (a, b) in enumerate(zip(src.shape, dst.shape)) if b and a > b]


def _split_args(ir: IRFile, key: int) -> tuple[int | None, int | None]:
    args = ir[key].get("args") or ()
    attrs = ir[key].get("primitive_attrs") or {}
    axis = _int(args[1]) if len(args) > 1 else _int(attrs.get("axis"))
    outputs = _int(args[2]) if len(args) > 2 else _int(attrs.get("output_num"))
    return _norm_dim(axis, _rank(ir, key)), outputs


def _rank(ir: IRFile, key: int, out: bool = False) -> int | None:
    t = ir[key].get("out_type") if out else (ir[key].get("in_types") or (None,))[0]
    return len(t.shape) if t is not None and t.shape is not None else None


def _norm_dim(dim: int | None, rank: int | None) -> int | None:
    """-1 and rank-1 name the same axis."""
    return dim + rank if dim is not None and dim < 0 and rank else dim


def _axis(ir: IRFile, key: int) -> int | None:
    args = ir[key].get("args") or ()
    return _int(args[1]) if len(args) > 1 else _int((ir[key].get("primitive_attrs") or {}).get("axis"))


def _used_split_outputs(ir: IRFile, key: int) -> set[int]:
    used = set()
    for user in ir.consumers(key):
        if ir[user]["op"] == "TupleGetItem" and ir.consumers(user):
            args = ir[user].get("args") or ()
            if len(args) > 1 and _int(args[1]) is not None:
                used.add(_int(args[1]))
        else:
            return set(range(_split_args(ir, key)[1] or 0))
    return used


def _reassembling_concat(ir: IRFile, split: int, outputs: int | None) -> int | None:
    """The Concat that takes every piece of ``split``, in order, through one MakeTuple."""
    items = [u for u in ir.consumers(split) if ir[u]["op"] == "TupleGetItem"]
    tuples = {t for i in items for t in ir.consumers(i) if ir[t]["op"] == "MakeTuple"}
    if len(tuples) != 1:
        return None
    tup = tuples.pop()
    order = []
    for item in ir.producers(tup):   # every piece, straight from the Split, in order
        args = ir[item].get("args") or ()
        if ir[item]["op"] != "TupleGetItem" or ir.producers(item)[:1] != [split] or len(args) < 2:
            return None
        order.append(_int(args[1]))
    if outputs is None or order != list(range(outputs)):
        return None
    concats = [c for c in ir.consumers(tup) if ir[c]["op"] == "Concat"]
    return concats[0] if len(concats) == 1 else None


# --- hints ---------------------------------------------------------------------------------------
def _hint(ir: IRFile, producer: int, consumer: int | None, pos: int, comparable: bool = True) -> str:
    p_strat = strategy(ir, producer)
    if consumer is None:
        return (f"check the shard strategy of {who(ir, producer)} (in_strategy {fmt(p_strat)}) and of the ops "
                "reading its output")
    c_strat = strategy(ir, consumer)
    wants = tuple(c_strat[pos]) if c_strat and pos < len(c_strat) else None
    has = output_layout(ir, producer)
    head = (f"{who(ir, consumer)} (in_strategy {fmt(c_strat)}) reads input {pos} as layout {fmt(wants)}, but "
            f"{who(ir, producer)} (in_strategy {fmt(p_strat)}) outputs layout {fmt(has)}")
    if has is None or wants is None or not comparable:
        # a Reshape that changes the rank on the way: the two layouts are in different dims
        return head + "; make the two strategies agree on this tensor's layout"
    if has == wants:
        return head + ("; the two strategies already agree, so the chain is pure overhead: look for what makes "
                       "the framework see different layouts (a Reshape or out_strategy between them, or a "
                       "different device matrix)")
    fix = best_fix(ir, producer, consumer, pos)
    if fix is None:
        return head + f"; give the consumer's input {pos} the layout {fmt(has)}, or change the producer's strategy " \
                      f"so it outputs {fmt(wants)}"
    op, new, left = fix
    verb = f"outputs {fmt(wants)}" if op == producer else f"reads the tensor as produced ({fmt(has)})"
    tail = (f"; set {who(ir, op)} to in_strategy {fmt(new)}: it then {verb}, and the chain and its backward "
            f"transpose disappear")
    tail += (", with every other neighbour of the two ops still in agreement" if left == 0 else
             f"; {left} other layout change{'s' if left > 1 else ''} around the two ops would remain")
    return head + tail + all_reduce_note(ir, op, new)


def _backward_index(ir: IRFile) -> dict[str, list[int]]:
    """forward unique_id -> the backward nodes derived from it (``forward_unique_id``)."""
    index: dict[str, list[int]] = {}
    for key in ir.cnodes():
        uid = (ir[key].get("primal_attrs") or {}).get("forward_unique_id")
        if uid is not None and ir.is_backward(key):
            index.setdefault(str(uid), []).append(key)
    return index


def _backward_transpose(ir: IRFile, chain: Chain, index: dict[str, list[int]]) -> list[int]:
    """The backward ops MindSpore derived from the chain's ops (the gather's ReduceScatter, the
    slice's StridedSliceGrad, ...), in dump order; glue left out."""
    out = set()
    for key in chain.nodes:
        uid = (ir[key].get("primal_attrs") or {}).get("unique_id")
        for b in index.get(str(uid), ()) if uid is not None else ():
            if ir[b]["op"] not in QUIET_IN_RELATED:
                out.add(b)
    return sorted(out, key=lambda k: ir[k].get("line", 0))


# --- formatting -----------------------------------------------------------------------------------
def _first_in(ir: IRFile, key: int):
    return (ir[key].get("in_types") or (None,))[0]


def _step(ir: IRFile, key: int, costs: bool = False) -> str:
    data = ir[key]
    op = data["op"]
    src = _first_in(ir, key)
    dst = data.get("out_type")
    detail = ""
    if op == "Split":
        axis, n = _split_args(ir, key)
        detail = f"(axis {axis}, {n})"
    elif op == "Concat":
        detail = f"(axis {_axis(ir, key)})"
    elif op in ALLTOALL_OPS:
        a = data.get("primitive_attrs") or {}
        detail = f"(split_dim {a.get('split_dim')}, concat_dim {a.get('concat_dim')})"
    text = f"{op}{detail} {src}" if dst is not None and dst.dtype is None else f"{op}{detail} {src}->{dst}"
    if costs and op in MOVING_OPS:
        attrs = data.get("primitive_attrs") or {}
        ranks = attrs.get("rank_size") or len(attrs.get("group_rank_ids") or ()) or "?"
        text += f" [group of {ranks}, receives {size(_moved(ir, key))}]"
    return text


def _readers(ir: IRFile, chain: Chain) -> str:
    """The consumers of a chain (MindSpore 2.10 shares one redistribution among readers of one layout)."""
    names = list(dict.fromkeys(who(ir, c) for c, _ in chain.consumers))
    if len(names) > 1:
        return f"its {len(names)} readers {', '.join(names)}"
    return names[0] if names else "its users"


def _end_note(ir: IRFile, key: int, text: str) -> Related:
    if ir[key]["kind"] == "cnode":
        strat = strategy(ir, key)
        extra = f", in_strategy {fmt(strat)}" if strat is not None else ""
        return note(ir, key, f"{text}{extra}, out {ir[key].get('out_type')}")
    return note(ir, key, text)


def _int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
