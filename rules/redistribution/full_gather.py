"""PC002 strategy-mismatch-full-gather: an activation gathered whole on every rank because a
column-parallel MatMul sits next to another column-split layout (communication at an
unreasonable place)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from math import prod
from typing import Any

from irlint.accounts.received import GATHER_OPS, received_bytes, step_received_bytes, waste_entry
from irlint.findings import CommWaste, Finding, Fixes, OpFix, WastedBytes, scope_path
from irlint.model import IRFile
from irlint.rule import Invalid, Rule, Says
from irlint.units import human_share

from .chain import MATMUL_OPS, MOVING_OPS, QUIET_IN_RELATED, SLICE_OPS, Chain, waste_finding
from .chain_finding import fix_source
from .discovery import backward_index, backward_transpose, collect_chain, end_note, is_weight, touches_backward
from .fix_search import all_reduce_note, row_parallel
from .layouts import Strategy, output_layout, strategy, transposes
from .redundant_chain import RedundantRedistributionChain
from .round_trip import round_trips
from .simulation import simulate
from .steps import axis_of, split_args, step_text, used_split_outputs
from .wording import as_int, fmt, note, short_who, size, who


@dataclass
class FullGather:
    """A chain that gathers a tensor whole where the consumer reads it split."""

    chain: Chain
    factor: int
    exit_dim: int | None  # the gathered dim of the tensor the consumer reads
    entry_dim: int | None  # the same dim in the producer's output
    backward: list[int] = field(default_factory=list)


class StrategyMismatchFullGather(Rule):
    """A whole activation gathered on every rank where a row-parallel MatMul would read it as produced.

    What it finds:
        A forward redistribution run that gathers an activation in full (AllGather, with the
        Split / Concat MindSpore uses to gather along a non-leading axis) and hands every gathered
        element to the next op, where that op or the op before it is a column-parallel MatMul:

        - the consumer MatMul reads the gathered dim as its contracted dim unsplit, while the
          producer split it (column-parallel after column-parallel: ``w1`` ``((1, 1), (8, 1))``
          then ``w2`` ``((1, 1), (8, 1))``);
        - the producer MatMul split its output columns, and the consumer reads them whole (a
          column-parallel output projection before a residual Add).

        Nothing is thrown away, so ``redundant-redistribution-chain`` (PC001) stays silent: a
        ring AllGather of the activation moves about the bytes that the AllReduce of a
        row-parallel MatMul would. The communication is simply at the place the MindFormers
        tuning guide calls unreasonable, and it comes with a full copy of the activation on
        every rank. All the runs one strategy change would remove are reported together.

    Why it matters:
        The gathered tensor is as large as the unsharded activation, on every rank, and it is
        kept for the backward pass, where its transpose (a ReduceScatter) runs again. With the
        Megatron pairing (column-parallel, then row-parallel) the activation stays split, and
        the only communication left is one AllReduce of the (smaller) output.

    How to fix:
        Make the named MatMul row-parallel: split its contracted dim the way the activation
        already is, and drop the split of the weight's output columns. The hint gives the
        ``in_strategy``, derived from the dump's strategies and the gather's rank count, and the
        size of the AllReduce the MatMul then needs.

    Example:
        ``par-mismatch-ffn_col_col`` (MindSpore 2.10, 8 devices): w1/w3 ``((1, 1), (8, 1))``
        output the hidden activation split by columns, ``Float32(64, 8)`` per rank; w2, also
        ``((1, 1), (8, 1))``, reads it whole::

            AllGather            Float32(64, 8)  -> Float32(512, 8)    receives 14.0 KiB
            Split(axis 0, 8) / MakeTuple / Concat(axis 1)  -> Float32(64, 64)
            MatMul (w2)          in_strategy ((1, 1), (8, 1))
            backward: SplitWithSize / Concat / ReduceScatter           receives 14.0 KiB

        With w2 at ``((1, 8), (1, 8))`` the run and its backward ReduceScatter are gone, and one
        AllReduce of the ``Float32(64, 32)`` output remains.
    """

    code = "PC002"
    name = "strategy-mismatch-full-gather"
    waste_kinds = ("full-gather",)
    severity = "info"
    summary = "A column-parallel MatMul makes the parallel pass gather a whole activation on every rank"
    stages = ("validate", "optimize", "cse_after_recomputation", "add_recomputation")
    VALID = RedundantRedistributionChain.VALID  # w2 row-parallel after column-parallel w1: one AllReduce
    INVALID = [
        # par-mismatch-ffn_col_col rank_0 21_validate, forward only (w3 and Mul left out): w1 and w2
        # both ((1, 1), (8, 1)), the hidden activation gathered whole before w2
        Invalid(
            """# IR entry: @main
# Total subgraphs: 1

# Total params: 3
# Params:
%para1_inputs0: <Tensor[Float32], (64, 32)> : [64, 32]
%para3_net.w1.weight: <Ref[Tensor[Float32]], (8, 32), ref_key=net.w1.weight, is_parameter, is_inplace>  :  has_default
%para4_net.w2.weight: <Ref[Tensor[Float32]], (4, 64), ref_key=net.w2.weight, is_parameter, is_inplace>  :  has_default

Node counting information:
Total number of nodes: 44
Total number of cnodes: 18

subgraph @main() {
  %2(equiv_5_CNode_240) = Load(%para3_net.w1.weight, UMonad[U]) cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "4168"}
      : (<Ref[Tensor[Float32]], (8, 32), ref_key=net.w1.weight, is_parameter, is_inplace>, <UMonad, NoShape>) -> (<Tensor[Float32], (8, 32)>)
      # Fullname with scope: (Default/network-WithLoss/net-FeedForward/w1-Linear/Load-op0)
  %3(equiv_17_CNode_334) = PrimFunc_MatMul(%para1_inputs0, %2, Bool(0), Bool(1)) {instance name: matmul} primitive_attrs: {in_strategy: ((1, 1), (8, 1))} cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "4166", origin_output_shape: (64, 64), origin_input_shapes: ((64, 32), (64, 32))} {in_strategy: ((1, 1), (8, 1))}
      : (<Tensor[Float32], (64, 32)>, <Tensor[Float32], (8, 32)>, <Bool, NoShape>, <Bool, NoShape>) -> (<Tensor[Float32], (64, 8)>)
      # Fullname with scope: (Default/network-WithLoss/net-FeedForward/w1-Linear/MatMul-op0)
  %4(equiv_16_CNode_335) = PrimFunc_SiLU(%3) {instance name: silu} primitive_attrs: {in_strategy: ((1, 8))} cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "4154"} {in_strategy: ((1, 8))}
      : (<Tensor[Float32], (64, 8)>) -> (<Tensor[Float32], (64, 8)>)
      # Fullname with scope: (Default/network-WithLoss/net-FeedForward/SiLU-op0)
  %6(equiv_14_CNode_291) = AllGather(%4) {instance name: redistribution_op_720714096916516801AllGather_} primitive_attrs: {comm_reuse: Bool(1), group: "hccl_world_group", fusion: I64(0), rank_list: (0, 1, 2, 3, 4, 5, 6, 7), group_ranks: "WORLD_GROUP", group_rank_ids: (0, 1, 2, 3, 4, 5, 6, 7), rank_size: I64(8), keep_value_node_input: Bool(1), no_eliminate: Bool(1), mean_flag: Bool(0)} cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "4175", forward_comm_node_unique_id: "3919"}
      : (<Tensor[Float32], (64, 8)>) -> (<Tensor[Float32], (512, 8)>)
      # Fullname with scope: (Default/network-WithLoss/net-FeedForward/w2-Linear/AllGather-op0)
  %7(equiv_13_CNode_292) = PrimFunc_Split(%6, I64(0), I64(8)) {instance name: redistribution_op_10829776424460885436Split_} primitive_attrs: {keep_value_node_input: Bool(1)} cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "4176", forward_comm_node_unique_id: "3923"}
      : (<Tensor[Float32], (512, 8)>, <Int64, NoShape>, <Int64, NoShape>) -> (<Tuple[Tensor[Float32]*8], TupleShape((64, 8), (64, 8), (64, 8), (64, 8), (64, 8), (64, 8), (64, 8), (64, 8))>)
      # Fullname with scope: (Default/network-WithLoss/net-FeedForward/w2-Linear/Split-op0)
  %8(equiv_26_CNode_293) = TupleGetItem(%7, I64(0)) cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "4185"}
      : (<Tuple[Tensor[Float32]*8], TupleShape((64, 8), (64, 8), (64, 8), (64, 8), (64, 8), (64, 8), (64, 8), (64, 8))>, <Int64, NoShape>) -> (<Tensor[Float32], (64, 8)>)
      # Fullname with scope: (Default/network-WithLoss/net-FeedForward/w2-Linear/TupleGetItem-op0)
  %9(equiv_25_CNode_294) = TupleGetItem(%7, I64(1)) cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "4184"}
      : (<Tuple[Tensor[Float32]*8], TupleShape((64, 8), (64, 8), (64, 8), (64, 8), (64, 8), (64, 8), (64, 8), (64, 8))>, <Int64, NoShape>) -> (<Tensor[Float32], (64, 8)>)
      # Fullname with scope: (Default/network-WithLoss/net-FeedForward/w2-Linear/TupleGetItem-op1)
  %10(equiv_24_CNode_295) = TupleGetItem(%7, I64(2)) cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "4183"}
      : (<Tuple[Tensor[Float32]*8], TupleShape((64, 8), (64, 8), (64, 8), (64, 8), (64, 8), (64, 8), (64, 8), (64, 8))>, <Int64, NoShape>) -> (<Tensor[Float32], (64, 8)>)
      # Fullname with scope: (Default/network-WithLoss/net-FeedForward/w2-Linear/TupleGetItem-op2)
  %11(equiv_23_CNode_296) = TupleGetItem(%7, I64(3)) cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "4182"}
      : (<Tuple[Tensor[Float32]*8], TupleShape((64, 8), (64, 8), (64, 8), (64, 8), (64, 8), (64, 8), (64, 8), (64, 8))>, <Int64, NoShape>) -> (<Tensor[Float32], (64, 8)>)
      # Fullname with scope: (Default/network-WithLoss/net-FeedForward/w2-Linear/TupleGetItem-op3)
  %12(equiv_22_CNode_297) = TupleGetItem(%7, I64(4)) cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "4181"}
      : (<Tuple[Tensor[Float32]*8], TupleShape((64, 8), (64, 8), (64, 8), (64, 8), (64, 8), (64, 8), (64, 8), (64, 8))>, <Int64, NoShape>) -> (<Tensor[Float32], (64, 8)>)
      # Fullname with scope: (Default/network-WithLoss/net-FeedForward/w2-Linear/TupleGetItem-op4)
  %13(equiv_21_CNode_298) = TupleGetItem(%7, I64(5)) cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "4180"}
      : (<Tuple[Tensor[Float32]*8], TupleShape((64, 8), (64, 8), (64, 8), (64, 8), (64, 8), (64, 8), (64, 8), (64, 8))>, <Int64, NoShape>) -> (<Tensor[Float32], (64, 8)>)
      # Fullname with scope: (Default/network-WithLoss/net-FeedForward/w2-Linear/TupleGetItem-op5)
  %14(equiv_20_CNode_299) = TupleGetItem(%7, I64(6)) cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "4179"}
      : (<Tuple[Tensor[Float32]*8], TupleShape((64, 8), (64, 8), (64, 8), (64, 8), (64, 8), (64, 8), (64, 8), (64, 8))>, <Int64, NoShape>) -> (<Tensor[Float32], (64, 8)>)
      # Fullname with scope: (Default/network-WithLoss/net-FeedForward/w2-Linear/TupleGetItem-op6)
  %15(equiv_12_CNode_300) = TupleGetItem(%7, I64(7)) cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "4178"}
      : (<Tuple[Tensor[Float32]*8], TupleShape((64, 8), (64, 8), (64, 8), (64, 8), (64, 8), (64, 8), (64, 8), (64, 8))>, <Int64, NoShape>) -> (<Tensor[Float32], (64, 8)>)
      # Fullname with scope: (Default/network-WithLoss/net-FeedForward/w2-Linear/TupleGetItem-op7)
  %16(▲CNode_301) = MakeTuple(%8, %9, %10, %11, %12, %13, %14, %15) cnode_attrs: {checkpoint: Bool(1)}
      : (<Tensor[Float32], (64, 8)>, <Tensor[Float32], (64, 8)>, <Tensor[Float32], (64, 8)>, <Tensor[Float32], (64, 8)>, <Tensor[Float32], (64, 8)>, <Tensor[Float32], (64, 8)>, <Tensor[Float32], (64, 8)>, <Tensor[Float32], (64, 8)>) -> (<Tuple[Tensor[Float32]*8], TupleShape((64, 8), (64, 8), (64, 8), (64, 8), (64, 8), (64, 8), (64, 8), (64, 8)), elements_use_flags={[const vector]{1, 1, 1, 1, 1, 1, 1, 1}}>)
      # Fullname with scope: (Default/network-WithLoss/net-FeedForward/w2-Linear/MakeTuple-op0)
  %17(equiv_11_CNode_302) = PrimFunc_Concat(%16, I64(1)) {instance name: redistribution_op_12232264507779376008Concat_} primitive_attrs: {keep_value_node_input: Bool(1)} cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "4186", forward_comm_node_unique_id: "3952"}
      : (<Tuple[Tensor[Float32]*8], TupleShape((64, 8), (64, 8), (64, 8), (64, 8), (64, 8), (64, 8), (64, 8), (64, 8)), elements_use_flags={[const vector]{1, 1, 1, 1, 1, 1, 1, 1}}>, <Int64, NoShape>) -> (<Tensor[Float32], (64, 64)>)
      # Fullname with scope: (Default/network-WithLoss/net-FeedForward/w2-Linear/Concat-op0)
  %18(equiv_3_CNode_234) = Load(%para4_net.w2.weight, UMonad[U]) cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "4161"}
      : (<Ref[Tensor[Float32]], (4, 64), ref_key=net.w2.weight, is_parameter, is_inplace>, <UMonad, NoShape>) -> (<Tensor[Float32], (4, 64)>)
      # Fullname with scope: (Default/network-WithLoss/net-FeedForward/w2-Linear/Load-op0)
  %19(equiv_10_CNode_337) = PrimFunc_MatMul(%17, %18, Bool(0), Bool(1)) {instance name: matmul} primitive_attrs: {in_strategy: ((1, 1), (8, 1))} cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "4159", origin_output_shape: (64, 32), origin_input_shapes: ((64, 64), (32, 64))} {in_strategy: ((1, 1), (8, 1))}
      : (<Tensor[Float32], (64, 64)>, <Tensor[Float32], (4, 64)>, <Bool, NoShape>, <Bool, NoShape>) -> (<Tensor[Float32], (64, 4)>)
      # Fullname with scope: (Default/network-WithLoss/net-FeedForward/w2-Linear/MatMul-op0)
  Return(%19)
      : (<Tensor[Float32], (64, 4)>)
      # Fullname with scope: (Default/network-WithLoss/Return-op0)
}
""",
            Says(
                "%6",
                "column-parallel MatMul (w2) has 1 activation gathered whole on every rank",
                "row-parallel in_strategy ((1, 8), (1, 8))",
            ),
        ),
    ]

    def check(self, ir: IRFile) -> Iterator[Finding]:
        groups: dict[tuple[Any, ...], list[FullGather]] = {}
        # a gather undone by a slice after the ops between is PC001's round trip, not a full gather
        seen: set[int] = {k for t in round_trips(ir) for k in t.before.nodes + t.after.nodes}
        for key in ir.nodes_by_op(*GATHER_OPS):
            if key in seen or ir.is_backward(key):
                continue
            chain = collect_chain(ir, key)
            seen.update(chain.nodes)
            if chain.producer is None or is_weight(ir, chain.producer) or touches_backward(ir, chain):
                continue
            gather = _full_gather(ir, chain)
            if gather is None:
                continue
            fix = _row_parallel_fix(ir, gather)
            if fix is None:
                continue
            gather.backward = backward_transpose(ir, chain, backward_index(ir))
            groups.setdefault(fix, []).append(gather)
        for (matmul, new), gathers in groups.items():
            yield self._finding(ir, matmul, new, gathers)

    def _finding(self, ir: IRFile, matmul: int, new: Strategy, gathers: list[FullGather]) -> Finding:
        gathers.sort(key=lambda g: ir[g.chain.nodes[0]].get("line", 0))
        anchor = gathers[0].chain.nodes[0]
        moved = sum(g.chain.moved for g in gathers)
        moved_back = sum(received_bytes(ir, k) or 0 for g in gathers for k in g.backward)
        held = sum(g.chain.exit.nbytes or 0 for g in gathers if g.chain.exit is not None)
        runs = []
        for g in gathers:
            consumer = g.chain.consumers[0][0] if g.chain.consumers else None
            steps = " -> ".join(
                step_text(ir, k, costs=True) for k in g.chain.nodes if ir[k]["op"] not in QUIET_IN_RELATED
            )
            runs.append(f"{steps} between {who(ir, g.chain.producer)} and {who(ir, consumer)}")
        count = "the activation is" if len(gathers) == 1 else f"{len(gathers)} activations are"
        message = (
            f"{count} gathered whole on every rank around column-parallel {who(ir, matmul)} "
            f"(in_strategy {fmt(strategy(ir, matmul))}): {'; '.join(runs)}. Every gathered element is used "
            f"(not a redundant chain), but {size(moved)} are received and {size(held)} of full activations "
            f"are held per rank"
        )
        if moved_back:
            message += f"; the backward transpose receives {size(moved_back)} more"
        total = step_received_bytes(ir)
        message += (
            f"; {human_share(moved + moved_back, total)} of the {size(total)} this step's collectives receive per rank"
        )
        hint = (
            f"make {who(ir, matmul)} row-parallel, in_strategy {fmt(new)}: it then reads the activation as "
            f"produced and {'this gather goes' if len(gathers) == 1 else 'these gathers go'}, with "
            f"{'its' if len(gathers) == 1 else 'their'} backward transpose" + all_reduce_note(ir, matmul, new)
        )
        related = [end_note(ir, matmul, "column-parallel MatMul to change")]
        for g in gathers:
            if g.chain.producer != matmul:
                related.append(end_note(ir, g.chain.source, "producer"))
            related += [
                note(ir, k, step_text(ir, k, costs=True))
                for k in g.chain.nodes
                if k != anchor and ir[k]["op"] not in QUIET_IN_RELATED
            ]
            related += [end_note(ir, c, f"consumer (input {p})") for c, p in g.chain.consumers if c != matmul]
            related += [note(ir, k, "backward transpose: " + step_text(ir, k, costs=True)) for k in g.backward]
        identity = (
            "full-gather",
            scope_path(ir[matmul].get("scope", "")),
            tuple(tuple(ir[k]["op"] for k in g.chain.nodes if ir[k]["op"] not in QUIET_IN_RELATED) for g in gathers),
        )
        # every gathered element is used: the bytes are the cost of the scheme, not waste
        facts: dict[str, Any] = {
            "gathered_bytes": held,
            "gathers": len(gathers),
            "matmul_strategy": fmt(strategy(ir, matmul)),
        }
        cost = CommWaste(
            bytes=moved + moved_back, step_received=total, moved=moved, backward_moved=moved_back, received=True
        )
        return waste_finding(
            self,
            ir,
            anchor,
            message,
            facts,
            cost,
            Fixes(ops=(OpFix(ir[matmul]["id"], in_strategy=fmt(new), source=fix_source(ir, matmul)),)),
            wasted=[
                WastedBytes(**waste_entry(ir, k, received_bytes(ir, k) or 0))
                for g in gathers
                for k in g.chain.nodes + g.backward
                if ir[k]["op"] in MOVING_OPS
            ],
            hint=hint,
            related=related,
            identity=identity,
            cause=(
                f"column-parallel {short_who(ir, matmul)} has {len(gathers)} "
                f"activation{'s' if len(gathers) != 1 else ''} gathered whole on every rank"
            ),
            fix=f"row-parallel in_strategy {fmt(new)}",
            waste_kinds=["full-gather"],
        )


def _full_gather(ir: IRFile, chain: Chain) -> FullGather | None:
    """The run when it gathers and hands every gathered element on: no slice, no unused piece."""
    simulate(ir, chain)
    if chain.wastes or chain.entry is None or chain.exit is None or not chain.consumers:
        return None
    factor = 1
    for key in chain.nodes:
        op = ir[key]["op"]
        if op in SLICE_OPS:
            return None
        if op == "Split":
            outputs = split_args(ir, key)[1]
            if outputs is None or len(used_split_outputs(ir, key)) < outputs:
                return None
        if op in GATHER_OPS:
            factor *= as_int((ir[key].get("primitive_attrs") or {}).get("rank_size")) or 1
        elif op not in ("Split", "Concat", "Reshape", "TupleGetItem", "MakeTuple"):
            return None  # AlltoAll, ReduceScatter: another story
    if factor <= 1 or chain.entry.shape is None or chain.exit.shape is None:
        return None
    if prod(chain.exit.shape) != prod(chain.entry.shape) * factor:
        return None
    exit_dim, entry_dim = _gathered_dims(ir, chain)
    return FullGather(chain, factor, exit_dim, entry_dim)


def _gathered_dims(ir: IRFile, chain: Chain) -> tuple[int | None, int | None]:
    """Which dim of the consumer's tensor and of the producer's output the gather filled: the
    Concat's axis (axis 0 without one), carried across the Reshapes before and after it by the
    number of elements that precede it."""
    gather = next(k for k in chain.nodes if ir[k]["op"] in GATHER_OPS)
    concat = next((k for k in chain.nodes if ir[k]["op"] == "Concat"), None)
    at = concat if concat is not None else gather
    shape = ir[at]["out_type"].shape if ir[at].get("out_type") is not None else None
    axis = axis_of(ir, concat) if concat is not None else 0
    if shape is None or axis is None:
        return None, None
    axis = axis + len(shape) if axis < 0 else axis
    before = prod(shape[:axis])
    src = (ir[gather].get("in_types") or (None,))[0]
    # in the producer's output the dim holds 1/factor as much; the elements before it do not change
    return _dim_at(chain.exit_shape, before), _dim_at(chain.entry_shape, before) if src is not None else None


def _dim_at(shape: tuple[Any, ...], before: int) -> int | None:
    """The dim of ``shape`` that starts after ``before`` elements (of the outer dims)."""
    p = 1
    for j, n in enumerate(shape):
        if p == before and n > 1:
            return j
        if p > before:
            return j - 1 if j else None
        p *= n
    return None


def _row_parallel_fix(ir: IRFile, gather: FullGather) -> tuple[int, tuple[Any, ...]] | None:
    """The column-parallel MatMul whose row-parallel form removes the gather, and that form."""
    chain = gather.chain
    for consumer, pos in chain.consumers:  # the consumer reads the gathered dim as its contracted dim
        if ir[consumer]["op"] in MATMUL_OPS and pos in (0, 1) and gather.exit_dim is not None:
            ta, tb = transposes(ir, consumer)
            rank = len(chain.exit_shape)
            contracted = (rank - 2 if ta else rank - 1) if pos == 0 else (rank - 1 if tb else rank - 2)
            strat = strategy(ir, consumer)
            if gather.exit_dim == contracted and strat and strat[pos][contracted] == 1:
                new = row_parallel(ir, consumer, gather.factor)
                if new is not None:
                    return consumer, new
    producer = chain.source
    if ir[producer]["op"] in MATMUL_OPS and gather.entry_dim is not None:
        layout = output_layout(ir, producer)
        rank = len(chain.entry_shape)
        if layout and gather.entry_dim == rank - 1 and layout[-1] == gather.factor:
            new = row_parallel(ir, producer, gather.factor)
            if new is not None:
                return producer, new
    return None
