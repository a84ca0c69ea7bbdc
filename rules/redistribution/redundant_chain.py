"""PC001 redundant-redistribution-chain: tensor redistribution that moves data and then undoes or
discards it, between two compute ops of the forward graph."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from irlint.findings import Finding
from irlint.model import IRFile
from irlint.rule import Invalid, Rule, Says

from .chain import COMM_OPS, Chain
from .chain_finding import chain_finding
from .discovery import allreduce_then_slice, collect_chain, in_chain, is_weight, touches_backward
from .recomputed_chain import is_copy
from .repeated_gather import repeated_gathers
from .root_cause import RootCause, at_cause_ops, grouped, root_cause
from .round_trip import round_trips
from .simulation import simulate
from .trip_finding import round_trip_finding


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
          thrown away), or across a run of point-wise ops that share one layout (one given a
          strategy, the others aligned with it by auto_parallel's sharding propagation or left to
          semi_auto_parallel's data-parallel default): a column-split output gathered before them
          and sliced after, a replicated residual sliced for them and gathered again. Each run
          alone looks harmless; the tensor leaves the second in the layout the producer made and
          the consumer reads. Under sharding propagation the hint sets the ops the user sharded,
          which the others follow;
        - a point-wise or norm op computing a slice of a tensor every rank holds whole (a
          full_batch input sliced locally) for one reader that takes its result split, while
          another reader gathers the result whole again: computed whole, the op would serve the
          second reader as it is and the first through a local slice (an FFN's norm between
          ``w3`` ``((8, 1), (1, 1))`` and a column-parallel ``w1``). When every reader takes the
          gathered result, as the column-parallel MatMuls after a sequence-parallel norm do, the
          split is the op's own and nothing is reported;
        - a permutation paid as a full gather: producer and consumer name the same split counts
          on different device axes (one sharded with a plain tuple, which maps dim 0 to the
          outer device axis, the other with a ``Layout`` that names its axes), so the blocks
          sit on other ranks and MindSpore gathers the tensor whole and slices one block back;
          the local shape is the same at both ends (a MatMul's output is placed by its inputs'
          Layouts, a Dropout's result past its TupleGetItem). The finding names the ranks whose
          block is another rank's (the only data a permutation must move). The hint names the op
          sharded differently and the ``layout(...)`` of its neighbour's ``Layout`` that removes
          the run; for an op MindSpore 2.10 will not shard with a Layout (Dropout), the order of
          the Layout's device axes under which the tuple places every block where the Layout does.

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
        ``extra["recompute"]``), never reported apart. Under full-layer recompute no key asks: the
        chain runs twice "because of full-layer recompute", which recomputes the layer's communication
        too (``Cell.recompute``'s ``mp_comm_recompute``, on by default; MindFormers 2.1.0 passes the
        config's ``mp_comm_recompute`` to no layer, so ``mp_comm_recompute: False`` there changes
        nothing). A chain whose every reader is in backward still names the bytes it keeps (its
        last op's output).

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
        Under sharding propagation, where the ops around a chain have no strategy of their own
        and follow two MatMuls the user sharded differently although they read one tensor with
        the same weight shape (``w1`` ``((1, 1), (8, 1))``, ``w3`` ``((8, 1), (1, 1))``), the hint
        gives the one splitting its weight less the other's strategy, for every chain they cause.
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
        Invalid(
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
            Says(
                "%3",
                "AllGather between MatMul mm1 (net) and ReLU (net): gather-then-slice",
                "ReLU (net) in_strategy ((8, 1),)",
            ),
        ),
        # an AllGather re-split along the dim it gathered: the slice keeps what the rank sent
        Invalid(
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
            Says("%2", "AllGather between MatMul (w1) and SiLU (w2): gather-resplit"),
        ),
    ]

    def check(self, ir: IRFile) -> Iterator[Finding]:
        seen: set[int] = set()
        chains: list[Chain] = []
        # chains one config choice causes are reported once, under the cause
        caused: dict[tuple[Any, ...], list[tuple[RootCause, Finding, Chain]]] = {}
        uncaused: list[Chain] = []
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
                    uncaused.append(chain)
                else:
                    caused.setdefault(cause.key, []).append((cause, chain_finding(self, ir, chain), chain))
        for chain, cause in at_cause_ops(ir, uncaused, caused):
            if cause is None:
                yield chain_finding(self, ir, chain)
            else:
                caused[cause.key].append((cause, chain_finding(self, ir, chain, cause.node), chain))
        yield from grouped(ir, caused)
        yield from repeated_gathers(self, ir, chains)
        for trip in round_trips(ir):
            yield round_trip_finding(self, ir, trip)
        for key in ir.nodes_by_op("AllReduce"):
            sliced = allreduce_then_slice(ir, key)
            if sliced is not None:
                yield chain_finding(self, ir, sliced)
