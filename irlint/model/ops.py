"""One op vocabulary: the operator names (as ``IRFile`` normalises them, ``PrimFunc_`` cut) that
compute a Linear, attention and communication. Every rule and account takes its sets from here,
so that an op one of them knows is known to all (``MatMulV2`` priced by ``cost`` is a Linear to
the recompute rules too)."""

from __future__ import annotations

# two operands (a, b), transposed by ``transpose_a``/``transpose_b`` (or ``transpose_x1``/``_x2``):
# the redistribution rules read their strategies by those flags
FLAGGED_MATMUL_OPS = frozenset(
    {
        "MatMul",
        "MatMulV2",
        "MatMulExt",
        "Matmul",
        "BatchMatMul",
        "BatchMatMulV2",
        "BatchMatMulExt",
        "BatchMatmul",
    }
)
# 2-D ones (no batch dimension)
PLAIN_MATMUL_OPS = frozenset({"MatMul", "MatMulV2", "MatMulExt"})
# two operands with the weight as (out, in) and a bias (``mint.nn.functional.linear``)
DENSE_MATMUL_OPS = FLAGGED_MATMUL_OPS | {"Dense"}
# every op that computes a Linear: with the experts' grouped one (MoE), whose operands are lists
MATMUL_OPS = DENSE_MATMUL_OPS | {"GroupedMatmul"}

ATTENTION_OPS = frozenset({"FlashAttentionScore", "FlashAttentionScoreGrad"})

GATHER_OPS = frozenset({"AllGather", "_MiniStepAllGather"})
ALLTOALL_OPS = frozenset({"AlltoAll", "AllToAll", "_AlltoAll", "AlltoAllV", "AllToAllV"})
# collective -> the kind the accounts report it under
KINDS = {
    **dict.fromkeys(GATHER_OPS, "AllGather"),
    **dict.fromkeys(ALLTOALL_OPS, "AlltoAll"),
    "ReduceScatter": "ReduceScatter",
    "AllReduce": "AllReduce",
    "Send": "Send/Receive",
    "Receive": "Send/Receive",
    "Broadcast": "Broadcast",
}
COLLECTIVE_OPS = frozenset(KINDS)
# the collectives of tensor parallel between a Linear's MatMul and its neighbours
TENSOR_PARALLEL_COMM_OPS = frozenset({"AllReduce", "AllGather", "ReduceScatter", "AlltoAll", "AllToAll"})
