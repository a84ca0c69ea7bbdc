"""PC001 redundant-redistribution-chain: tensor redistribution that moves data and then undoes or
discards it, between two compute ops of the forward graph."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from irlint.accounts.received import ALLTOALL_OPS, GATHER_OPS, received_bytes, share, step_received_bytes, waste_entry
from irlint.findings import Finding, WastedBytes, scope_path
from irlint.model import IRFile
from irlint.model.source import source_dict
from irlint.rule import Rule, strategy_snippet

from .chain import COMM_OPS, MOVING_OPS, QUIET_IN_RELATED, Chain
from .discovery import (
    allreduce_then_slice,
    backward_index,
    backward_transpose,
    collect_chain,
    end_note,
    in_chain,
    is_weight,
    near_experts,
    readers,
    strategy_source,
    touches_backward,
)
from .fix_search import all_reduce_note, best_fix, hint_for
from .layouts import layout_expression, strategy
from .recomputed_chain import is_copy, kept_type, rerun_of
from .root_cause import RootCause, grouped, root_cause
from .round_trip import RoundTrip, round_trips
from .simulation import permutation, simulate
from .steps import step_text
from .wording import first_in, fmt, note, placement_text, short_who, size, who


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
        - the same tensor gathered more than once by identical AllGathers (one per consumer);
        - a round trip across one op whose strategy disagrees with both neighbours: a slice (or
          AlltoAll) before a point-wise or norm op and the gather (or inverse AlltoAll) after it,
          or an input gathered along the rows a MatMul keeps and its result sliced back along
          them (a replicated router: the gather and all but 1/n of the MatMul's compute are
          thrown away). Each run alone looks harmless; the tensor leaves the second in the
          layout the producer made and the consumer reads;
        - a permutation paid as a full gather: producer and consumer name the same split counts
          on different device axes (one sharded with a plain tuple, which maps dim 0 to the
          outer device axis, the other with a ``Layout`` that names its axes), so the blocks
          sit on other ranks and MindSpore gathers the tensor whole and slices one block back;
          the local shape is the same at both ends. The hint names the op sharded differently
          and the ``layout(...)`` of its neighbour's ``Layout`` that removes the run.

        Chains that one configuration choice makes are one finding, the chains its occurrences
        (``extra["root_cause"]``, ``extra["occurrences"]``), counted whole, since the choice
        removes every collective of them:

        - batch merge: a 2-D MatMul on the flattened (batch·sequence, hidden) rows beside ops
          that split batch and sequence, with more than one sequence per data-parallel replica
          (MindFormers' Linear under context or sequence parallel): the merged rows split in
          contiguous blocks are not the (batch, sequence) blocks, and no ``shard()`` can say
          otherwise;
        - tuple beside Layout: a tuple strategy that leaves devices over (they repeat on the
          innermost device axis) next to ops that place the same dim on another device axis
          (MindFormers' RoPE with ``use_rope_slice`` and context parallel).

        The finding lists the chain in order with local shapes, dtypes and the bytes each step
        receives, the bytes that survive, the producer's and consumer's ``in_strategy``, and the
        backward transpose MindSpore derived from the chain (linked by ``forward_unique_id``;
        StridedSliceGrad, SplitWithSize/Concat, the ReduceScatter named after the AllGather),
        whose cost is added. Identical chains of ``rank_N/`` folders are one finding "on ranks
        0-7" although group names, rank lists and slice offsets differ from rank to rank.

        Every finding states the bytes it wastes per step (forward and backward transpose) and
        their share of what all the step's collectives receive per rank (``irlint comm`` shows
        the whole account).

        A chain that recompute runs again in backward (a select key tags the model primitive after
        it, ``attention\\.wq\\.reshape``, and MindSpore passes the tag to the ops inserted for
        it; the copies feed the weight-gradient MatMul) is the same waste a second time: its copies
        are priced into the forward chain ("runs twice because of key K: +N in backward",
        ``extra["recompute"]``), never reported apart. A chain whose every reader is in backward
        still names the bytes it keeps (its last op's output).

        Communication that belongs to the parallel scheme is never reported, never the node a
        finding points to and never in its bytes, even right before a wasteful run (a
        sequence-parallel ReduceScatter followed by a re-layout: the finding names it "scheme,
        not waste" and starts at the first wasteful op): the AllReduce after a
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
        ``set_auto_parallel_context(enable_alltoall=True)``; the bytes one AlltoAll would receive
        for that re-layout are scheme (expert parallelism needs it), only the rest counts as waste.
        For a root cause the hint names the config that removes it: one sequence per replica
        (``runner_config.batch_size: 1``, the global batch kept with gradient accumulation or
        micro batches), or the config key that drops the tuple-sharded ops (``use_rope_slice:
        False``) and the neighbours' ``Layout`` they could take instead.

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
    waste_kinds = (
        "gather-then-slice",
        "gather-resplit",
        "allreduce-then-slice",
        "alltoall-undone",
        "split-concat-round-trip",
        "permutation-as-gather",
        "round-trip",
        "alltoall-round-trip",
        "gather-compute-slice",
        "repeated-gather",
    )
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
        # chains one config choice causes are reported once, under the cause
        caused: dict[tuple, list[tuple[RootCause, Finding, Chain]]] = {}
        for key in ir.nodes_by_op(*COMM_OPS, "Split"):
            if key in seen or not in_chain(ir, key):
                continue
            chain = collect_chain(ir, key)
            seen.update(chain.nodes)
            if is_copy(ir, chain.nodes):  # a recomputed copy: priced into its forward chain's finding
                continue
            if chain.producer is None or is_weight(ir, chain.producer) or touches_backward(ir, chain):
                continue
            simulate(ir, chain)
            chains.append(chain)
            if chain.wastes:
                cause = root_cause(ir, chain)
                if cause is None:
                    yield self._chain_finding(ir, chain)
                else:
                    caused.setdefault(cause.key, []).append((cause, self._chain_finding(ir, chain), chain))
        yield from grouped(ir, caused)
        yield from self._repeated_gathers(ir, chains)
        for trip in round_trips(ir):
            yield self._round_trip_finding(ir, trip)
        for key in ir.nodes_by_op("AllReduce"):
            chain = allreduce_then_slice(ir, key)
            if chain is not None:
                yield self._chain_finding(ir, chain)

    # --- findings ---------------------------------------------------------------------------
    def _chain_finding(self, ir: IRFile, chain: Chain) -> Finding:
        backward = backward_index(ir)
        # the finding starts at the first wasteful op: scheme collectives before it are not waste
        span = chain.span(ir) or chain.nodes
        anchor = next((k for k in span if ir[k]["op"] in MOVING_OPS), span[0])
        consumer, pos = chain.consumers[0] if chain.consumers else (None, 0)
        survive = chain.exit.nbytes if chain.exit is not None else None
        if survive is None:  # every reader is in backward (a weight-gradient MatMul has no strategy)
            kept = kept_type(ir, chain.nodes)
            survive = kept.nbytes if kept is not None else None
        transpose = backward_transpose(ir, chain, backward)
        alltoall = min((w.alltoall_bytes for w in chain.wastes if w.alltoall_bytes), default=None)
        expert = near_experts(ir, consumer, True) or near_experts(ir, chain.producer, False)
        expert_relayout = bool(
            alltoall
            and expert is not None
            and permutation(ir, chain) is None
            and sum(ir[k]["op"] in MOVING_OPS for k in span) == 1
        )
        if expert_relayout:
            # expert parallelism needs the re-layout: what one AlltoAll moves is scheme, the rest waste
            chain.kept_by_scheme = alltoall
        waste = [
            (k, max((received_bytes(ir, k) or 0) - chain.kept_by_scheme, 0))
            for k in span + backward_transpose(ir, chain, backward, span)
            if ir[k]["op"] in MOVING_OPS
        ]
        wasted = sum(b for k, b in waste if k in span)
        wasted_back = sum(b for k, b in waste if k not in span)
        # copies recompute runs in backward: the same waste again, paid because of a select key
        rerun = rerun_of(ir, [k for k in chain.nodes if k in span])
        waste += rerun.copies
        in_all = wasted + wasted_back + rerun.bytes
        moved_back = sum(received_bytes(ir, k) or 0 for k in transpose)
        if ir[anchor]["op"] in MOVING_OPS and expert_relayout:
            cost = (
                f"the expert-parallel re-layout itself is scheme (one AlltoAll: {size(alltoall)}), the other "
                f"{size(wasted)} received are waste"
            )
            if transpose:
                cost += f"; the backward transpose wastes {size(wasted_back)} more, {size(in_all)} per step in all"
        elif ir[anchor]["op"] in MOVING_OPS:
            cost = f"{size(wasted)} received to keep {size(survive)}"
            if transpose:
                cost += (
                    f"; the backward transpose ({' -> '.join(ir[k]['op'] for k in transpose)}) moves "
                    f"{size(wasted_back)} more, {size(in_all)} per step in all"
                )
        else:
            cost = f"no communication, but {size(survive)} are copied to end where they started"
        if rerun.copies:
            cost += f"; it {rerun.text()}"
        sequence = " -> ".join(step_text(ir, k, costs=True) for k in chain.nodes if ir[k]["op"] not in QUIET_IN_RELATED)
        kinds = sorted({w.kind for w in chain.wastes})
        what = "; ".join(w.text for w in chain.wastes)
        moved_blocks = permutation(ir, chain)
        if moved_blocks is not None:
            kinds = ["permutation-as-gather"]
            what = (
                f"{who(ir, chain.producer)} and {who(ir, consumer)} both split this tensor "
                f"{fmt(moved_blocks.split)}, but on different device axes ({placement_text(moved_blocks.produced)}"
                f" vs {placement_text(moved_blocks.read)}): the blocks sit on other ranks, so MindSpore re-lays "
                f"the tensor by gathering it whole ({moved_blocks.factor}x) and slicing one block back, and the "
                f"local shape {chain.entry} is the same at both ends"
            )
        after = "".join(f", after the scheme {step_text(ir, k, costs=True)}," for k in chain.scheme)
        total = step_received_bytes(ir)
        message = (
            f"redistribution chain {sequence} between {who(ir, chain.producer)}{after} and "
            f"{readers(ir, chain)}: {what}; {cost}; {share(in_all, total)} of the "
            f"{size(total)} this step's collectives receive per rank"
        )
        same_rank = (
            chain.entry is not None
            and chain.exit is not None
            and len(chain.entry.shape or ()) == len(chain.exit.shape or ())
        )
        hint = chain.hint or hint_for(ir, chain.producer, consumer, pos, comparable=same_rank)
        if moved_blocks is not None:
            hint, fix_of_blocks = _placement_hint(ir, chain.producer, consumer, pos)
            alltoall = None
        if alltoall and expert is not None:
            # the layout change is the point of expert parallelism: keep it, make it cheap
            moved_fwd = sum(received_bytes(ir, k) or 0 for k in span if ir[k]["op"] in MOVING_OPS)
            hint = (
                f"{who(ir, expert)} splits its weights' expert dim (in_strategy {fmt(strategy(ir, expert))}), so "
                f"this re-layout is the expert-parallel dispatch/combine: set_auto_parallel_context("
                f"enable_alltoall=True) makes MindSpore emit one AlltoAll receiving {size(alltoall)} instead of "
                f"{size(moved_fwd)}"
            )
        elif alltoall:
            hint += (
                "; where the layout change is wanted, set_auto_parallel_context(enable_alltoall=True) makes "
                "MindSpore emit one AlltoAll instead"
            )
        related = [end_note(ir, chain.producer, "producer")]
        related += [note(ir, k, "scheme, not waste: " + step_text(ir, k, costs=True)) for k in chain.scheme]
        related += [
            note(ir, k, step_text(ir, k, costs=True))
            for k in chain.nodes
            if k != anchor and ir[k]["op"] not in QUIET_IN_RELATED
        ]
        related += [end_note(ir, c, f"consumer (input {p})") for c, p in chain.consumers]
        related += [note(ir, k, "backward transpose: " + step_text(ir, k, costs=True)) for k in transpose]
        identity = (
            tuple(ir[k]["op"] for k in chain.nodes if ir[k]["op"] not in QUIET_IN_RELATED),
            scope_path(ir[chain.producer].get("scope", "")),
            tuple(scope_path(ir[c].get("scope", "")) for c, _ in chain.consumers),
            tuple(kinds),
        )
        extra: dict[str, Any] = {
            "kinds": kinds,
            "moved_bytes": chain.moved,
            "surviving_bytes": survive,
            "backward_moved_bytes": moved_back,
            "steps": [
                {
                    "node": ir[k]["id"],
                    "op": ir[k]["op"],
                    "in": str(first_in(ir, k)),
                    "out": str(ir[k].get("out_type")),
                    "moved_bytes": received_bytes(ir, k) or 0,
                }
                for k in chain.nodes
                if ir[k]["op"] not in QUIET_IN_RELATED
            ],
            "backward": [ir[k]["id"] for k in transpose],
            "scheme": [ir[k]["id"] for k in chain.scheme],
            "entry": str(chain.entry) if chain.entry else None,
            "exit": str(chain.exit) if chain.exit else None,
            "producer_strategy": fmt(strategy(ir, chain.producer)),
            "consumer_strategy": fmt(strategy(ir, consumer)) if consumer is not None else None,
            "waste_bytes": in_all,
            "step_received_bytes": total,
            "waste": [waste_entry(ir, k, b) for k, b in waste],
        }
        if rerun.copies:
            extra["recompute"] = {
                "keys": rerun.keys,
                "bytes": rerun.bytes,
                "copies": [ir[c]["id"] for c, _ in rerun.copies],
            }
        fix = best_fix(ir, chain.producer, consumer, pos) if consumer is not None and same_rank else None
        if moved_blocks is not None:
            extra["fix"] = fix_of_blocks
            extra["split"] = fmt(moved_blocks.split)
        elif alltoall and expert is not None:
            extra["fix"] = {"set_auto_parallel_context": "enable_alltoall=True"}
        elif fix is not None and chain.hint is None:
            extra["fix"] = {"node": ir[fix[0]]["id"], "in_strategy": fmt(fix[1]), **_source(ir, fix[0])}
        ops = "->".join(dict.fromkeys(ir[k]["op"] for k in chain.nodes if ir[k]["op"] in MOVING_OPS)) or "re-layout"
        cause = f"{ops} between {short_who(ir, chain.producer)} and {short_who(ir, consumer)}: {', '.join(kinds)}"
        short = (
            f"{short_who(ir, fix[0])} in_strategy {fmt(fix[1])}"
            if fix is not None and chain.hint is None and moved_blocks is None
            else "enable_alltoall=True"
            if alltoall and expert is not None
            else ""
        )
        found = self.finding(
            ir,
            anchor,
            message,
            hint=hint,
            related=related,
            identity=identity,
            extra=extra,
            cause=cause,
            fix=short,
            waste_kinds=kinds,
            wasted=[WastedBytes(**w) for w in extra["waste"]],
        )
        return found.with_(snippet=strategy_snippet(found.related, extra.get("fix")))

    def _round_trip_finding(self, ir: IRFile, trip: RoundTrip) -> Finding:
        backward = backward_index(ir)
        runs = trip.before.nodes + trip.after.nodes
        anchor = next((k for k in runs if ir[k]["op"] in MOVING_OPS), runs[0])
        transpose = sorted(
            set(backward_transpose(ir, trip.before, backward) + backward_transpose(ir, trip.after, backward)),
            key=lambda k: ir[k].get("line", 0),
        )
        waste = [(k, received_bytes(ir, k) or 0) for k in runs + transpose if ir[k]["op"] in MOVING_OPS]
        wasted = sum(b for _, b in waste)
        total = step_received_bytes(ir)
        op, consumer = trip.op, trip.after.consumers[0][0]
        maker = strategy_source(ir, trip.before.producer) or trip.before.producer  # past a TupleGetItem

        def steps(chain):
            return " -> ".join(step_text(ir, k, costs=True) for k in chain.nodes if ir[k]["op"] not in QUIET_IN_RELATED)

        kind = (
            "gather-compute-slice"
            if trip.discarded > 1
            else ("alltoall-round-trip" if any(ir[k]["op"] in ALLTOALL_OPS for k in runs) else "round-trip")
        )
        message = (
            f"{who(ir, op)} (in_strategy {fmt(strategy(ir, op))}) disagrees with both neighbours: "
            f"{steps(trip.before)} before it and {steps(trip.after)} after it hand {who(ir, consumer)} "
            f"the layout {fmt(trip.layout)} that {who(ir, maker)} already produced"
        )
        if trip.discarded > 1:
            message += (
                f"; the MatMul computes every row of the gathered input and the slice keeps 1/"
                f"{trip.discarded} of its result, so {trip.discarded - 1}/{trip.discarded} of its compute "
                f"is thrown away too"
            )
        message += (
            f"; {size(wasted)} received per step for nothing (backward transpose included), "
            f"{share(wasted, total)} of the {size(total)} this step's collectives receive per rank"
        )
        reads = (
            f"splits its rows like its neighbours ({fmt(trip.layout)}) and computes only the rows this rank keeps"
            if trip.discarded > 1
            else f"reads input {trip.pos} in the layout {fmt(trip.layout)} its neighbours use"
        )
        hint = (
            f"set {who(ir, op)} to in_strategy {fmt(trip.fix)}: it then {reads}, and both runs and their "
            f"backward transpose disappear" + all_reduce_note(ir, op, trip.fix)
        )
        related = [end_note(ir, trip.before.producer, "producer")]
        related += [
            note(ir, k, step_text(ir, k, costs=True))
            for k in trip.before.nodes
            if k != anchor and ir[k]["op"] not in QUIET_IN_RELATED
        ]
        related += [end_note(ir, op, "op whose strategy disagrees with both neighbours")]
        related += [
            note(ir, k, step_text(ir, k, costs=True))
            for k in trip.after.nodes
            if k != anchor and ir[k]["op"] not in QUIET_IN_RELATED
        ]
        related += [end_note(ir, consumer, f"consumer (input {trip.after.consumers[0][1]})")]
        related += [note(ir, k, "backward transpose: " + step_text(ir, k, costs=True)) for k in transpose]
        identity = (
            "round-trip",
            kind,
            scope_path(ir[op].get("scope", "")),
            ir[op]["op"],
            tuple(ir[k]["op"] for k in runs if ir[k]["op"] not in QUIET_IN_RELATED),
        )
        extra: dict[str, Any] = {
            "kinds": [kind],
            "moved_bytes": sum(received_bytes(ir, k) or 0 for k in runs),
            "backward_moved_bytes": sum(received_bytes(ir, k) or 0 for k in transpose),
            "backward": [ir[k]["id"] for k in transpose],
            "op_strategy": fmt(strategy(ir, op)),
            "layout": fmt(trip.layout),
            "discarded_compute": f"{trip.discarded - 1}/{trip.discarded}" if trip.discarded > 1 else None,
            "fix": {"node": ir[op]["id"], "in_strategy": fmt(trip.fix), **_source(ir, op)},
            "waste_bytes": wasted,
            "step_received_bytes": total,
            "waste": [waste_entry(ir, k, b) for k, b in waste],
        }
        found = self.finding(
            ir,
            anchor,
            message,
            hint=hint,
            related=related,
            identity=identity,
            extra=extra,
            cause=f"{short_who(ir, op)}'s in_strategy disagrees with both neighbours ({kind})",
            fix=f"in_strategy {fmt(trip.fix)}",
            waste_kinds=[kind],
            wasted=[WastedBytes(**w) for w in extra["waste"]],
        )
        return found.with_(snippet=strategy_snippet(found.related, extra["fix"]))

    def _repeated_gathers(self, ir: IRFile, chains: list[Chain]) -> Iterator[Finding]:
        """Identical gathers of one producer output, one per consumer."""
        groups: dict[tuple, list[Chain]] = {}
        for chain in chains:
            first = chain.nodes[0]
            data = ir[first]
            if data["op"] not in GATHER_OPS:
                continue
            attrs = data.get("primitive_attrs") or {}
            sig = (
                ir.producers(first)[:1][0] if ir.producers(first) else None,
                data["op"],
                attrs.get("group"),
                attrs.get("rank_size"),
                str(data.get("out_type")),
            )
            groups.setdefault(sig, []).append(chain)
        for (producer_key, op, _group, ranks, _out), same in groups.items():
            if len(same) < 2 or producer_key is None:
                continue
            gathers = [c.nodes[0] for c in same]
            moved = sum(received_bytes(ir, g) or 0 for g in gathers[1:])
            if not moved:
                # step_parallel_end prints one gather per consumer before CSE merges them, with
                # global shapes and no output type: nothing is received twice at run time
                continue
            consumers = [c for ch in same for c, _ in ch.consumers]
            # the group's size, not its name: names differ from rank to rank
            message = (
                f"{who(ir, same[0].producer)} output {ir[gathers[0]].get('in_types', ('?',))[0]} is gathered "
                f"{len(gathers)} times by identical {op}s (group of {ranks or '?'}), once for each of "
                f"{', '.join(who(ir, c) for c in consumers)}; {size(moved)} received again"
            )
            first = same[0].consumers[0] if same[0].consumers else (None, 0)
            hint = "one gather would serve every consumer; better, let them read the producer's layout: " + hint_for(
                ir, same[0].producer, first[0], first[1]
            )
            related = [end_note(ir, same[0].producer, "producer")]
            related += [note(ir, g, step_text(ir, g, costs=True)) for g in gathers[1:]]
            related += [end_note(ir, c, "consumer") for c in consumers]
            identity = (
                "repeated-gather",
                op,
                scope_path(ir[same[0].producer].get("scope", "")),
                tuple(sorted(scope_path(ir[c].get("scope", "")) for c in consumers)),
            )
            total = step_received_bytes(ir)
            message += f"; {share(moved, total)} of the {size(total)} this step's collectives receive per rank"
            extra: dict[str, Any] = {
                "kinds": ["repeated-gather"],
                "moved_bytes": moved,
                "gathers": len(gathers),
                "waste_bytes": moved,
                "step_received_bytes": total,
                "waste": [waste_entry(ir, g, received_bytes(ir, g) or 0) for g in gathers[1:]],
                "surviving_bytes": ir[gathers[0]]["out_type"].nbytes if ir[gathers[0]].get("out_type") else None,
                "producer_strategy": fmt(strategy(ir, same[0].producer)),
            }
            yield self.finding(
                ir,
                gathers[1],
                message,
                hint=hint,
                related=related,
                identity=identity,
                extra=extra,
                cause=f"one output gathered {len(gathers)} times by identical {op}s",
                fix="one gather for every consumer",
                waste_kinds=["repeated-gather"],
                wasted=[WastedBytes(**w) for w in extra["waste"]],
            )


def _placement_hint(ir: IRFile, producer: int, consumer: int, pos: int) -> tuple[str, dict]:
    """Which of two ops with the same split counts to change, and to what: the one sharded with a
    plain tuple takes the Layout the other was given."""
    produced, read = layout_expression(ir, producer, 0), layout_expression(ir, consumer, pos)
    if produced and not read:
        op, expr, other = consumer, produced, producer
    elif read and not produced:
        op, expr, other = producer, read, consumer
    else:
        op, expr, other = consumer, produced or read, producer
    if expr is None:
        return (
            f"give {who(ir, op)} the device-axis order of {who(ir, other)}: a Layout that maps each split dim "
            f"to the same device axis, so that the blocks stay on their ranks and the chain and its backward "
            f"transpose disappear"
        ), {"node": ir[op]["id"]}
    inputs = len(strategy(ir, op) or ()) or 1
    strategy_text = f"in_strategy=({', '.join([expr.split(' of ')[0]] * inputs)},)"
    return (
        f"{who(ir, op)} (in_strategy {fmt(strategy(ir, op))}) places its blocks differently from "
        f"{who(ir, other)} ({expr}): shard it with the same {expr.split(' of ')[1]}, {strategy_text}; the "
        f"strategies name the same split counts, so only the device axes change, and the chain and its "
        f"backward transpose disappear"
    ), {"node": ir[op]["id"], "in_layout": expr}


def _source(ir: IRFile, k: int) -> dict:
    """The model line that creates the op whose strategy changes (``{"source": {path, line}}``)."""
    src = source_dict(ir, k)
    return {"source": src} if src else {}
