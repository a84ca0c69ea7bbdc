"""Activation-memory rule (AM): a kept activation out of proportion to its layer."""

from __future__ import annotations

from collections.abc import Iterator

from irlint.accounts.memory import MEMORY_STAGES, OUTSIDE, KeptTensor, account
from irlint.findings import Finding
from irlint.model import IRFile
from irlint.rule import Invalid, Rule, Says, related_node
from irlint.units import human_bytes

HIGH_PRECISION = frozenset({"Float32", "Float64"})


def _snippet(dtype: str, forward: str, backward: str) -> str:
    """A trimmed dump: the score as a graph input, its Softmax, and the backward op reading it."""
    return f"""\
# IR entry: @g
# Total subgraphs: 1

# Total params: 2
# Params:
%para1_score: <Tensor[{dtype}], (1, 4, 16, 16)> : [1, 4, 16, 16]
%para2_dy: <Tensor[{dtype}], (1, 4, 16, 16)> : [1, 4, 16, 16]
Node counting information:
Total number of nodes: 7
Total number of cnodes: 3
subgraph attr:
subgraph instance: g : 0x55860104edc0
subgraph @g() {{
{forward}
{backward}
  Return(%1)
      : (<Tensor[{dtype}], (1, 4, 16, 16)>)
      # Fullname with scope: (Default/Return-op0)
}}
"""


# llama-recompute-modes 21_validate (llama_tiny.py): the softmax is computed and kept in fp32
SOFTMAX_FP32_KEPT = _snippet(
    "Float32",
    """\
  %0(equiv_56_prob) = PrimFunc_Softmax(%para1_score, (I64(-1))) {instance name: softmax} cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "43385"}
      : (<Tensor[Float32], (1, 4, 16, 16)>, <Tuple[Int64], TupleShape(NoShape), elements_use_flags={[const vector]{1}}>) -> (<Tensor[Float32], (1, 4, 16, 16)>)
      # Fullname with scope: (Default/network-CausalLM/model-Model/layers-CellList/0-DecoderLayer/attention-Attention/Softmax-op0)""",
    """\
  %1(CNode_2127) = PrimFunc_SoftmaxBackward(%para2_dy, %0, I64(-1)) cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {forward_node_name: "Softmax_43385", forward_unique_id: "43385"}
      : (<Tensor[Float32], (1, 4, 16, 16)>, <Tensor[Float32], (1, 4, 16, 16)>, <Int64, NoShape>) -> (<Tensor[Float32], (1, 4, 16, 16)>)
      # Fullname with scope: (Gradients/Default/network-CausalLM/model-Model/layers-CellList/0-DecoderLayer/attention-Attention/Grad_Softmax/SoftmaxBackward-op3)""",
)

# gpt-s16-b2-h64-a4 21_validate (bench/gpt_layer.py; batch cut to 1): the softmax kept in fp16
SOFTMAX_FP16_KEPT = _snippet(
    "Float16",
    """\
  %0(equiv_108_CNode_854) = PrimFunc_Softmax(%para1_score, (I64(-1))) {instance name: softmax} cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "16060"}
      : (<Tensor[Float16], (1, 4, 16, 16)>, <Tuple[Int64], TupleShape(NoShape), elements_use_flags={[const vector]{1}}>) -> (<Tensor[Float16], (1, 4, 16, 16)>)
      # Fullname with scope: (Default/network-GPT/layers-CellList/0-GPTLayer/attention-Attention/core_attention-CoreAttention/Softmax-op0)""",
    """\
  %1(CNode_1071) = PrimFunc_SoftmaxBackward(%para2_dy, %0, I64(-1)) cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {forward_node_name: "Softmax_16060", forward_unique_id: "16060"}
      : (<Tensor[Float16], (1, 4, 16, 16)>, <Tensor[Float16], (1, 4, 16, 16)>, <Int64, NoShape>) -> (<Tensor[Float16], (1, 4, 16, 16)>)
      # Fullname with scope: (Gradients/Default/network-GPT/layers-CellList/0-GPTLayer/attention-Attention/core_attention-CoreAttention/Grad_Softmax/SoftmaxBackward-op2)""",
)


def is_sequence_squared(ir: IRFile, t: KeptTensor) -> bool:
    """An attention-score shaped tensor: at least 3 dims, the last two equal (seq x seq). A
    Transpose output is the head split of Q/K/V, (b, heads, seq, head_dim), square only when
    head_dim happens to equal seq."""
    shape = t.type.shape if t.type is not None else None
    if not shape:
        return False
    return len(shape) >= 3 and shape[-1] == shape[-2] and shape[-1] > 1 and ir[t.tensor.node].get("op") != "Transpose"


class OutsizedKeptActivation(Rule):
    """What it finds:
    An activation that a decoder layer keeps for the backward pass (see ``irlint memory``) and
    that is out of proportion: an attention-score shaped tensor (``(..., seq, seq)``: scores,
    probabilities, masks) kept in Float32/Float64, or any single kept tensor above
    ``max_layer_share`` (default 25%) of its layer's kept bytes, in a layer keeping at least
    ``min_layer_tensors`` (4) tensors, so that a fully recomputed layer (one kept tensor) is not
    flagged. Only tensors under a ``layers-…/N-`` scope are judged.

    Kept activations are what ``irlint memory`` counts: outputs of forward ops that a backward op
    or a recomputed copy reads, directly or through views sharing the tensor, once per tensor,
    dtype size x local shape. Not counted: parameters and graph inputs, optimizer state,
    gradients, constants, backward workspace, tensors made from weights and constants only.

    Stage files: the final graph (``validate``, else ``cse_after_recomputation``,
    ``add_recomputation``, ``graph_build``), as ``irlint memory`` reads it.

    Why it matters:
    The seq² tensors grow with the square of the sequence length; in fp32 they take twice the
    bytes of the fp16 activations around them and, at long sequences, dominate the activation
    memory of every layer. One tensor holding a quarter of a layer is usually such a case or a
    missing recompute. Off by default: small test models keep fp32 softmax on purpose.

    How to fix:
    Use flash attention (MindSpore's ``FlashAttentionScore`` keeps no seq x seq tensor),
    recompute the op that makes it (a ``select_recompute`` key on its primitive), or compute it
    in a lower dtype (fp16/bf16 softmax).

    Example:
    ``%26 = PrimFunc_Softmax(%25, (I64(-1)))`` with ``-> (<Tensor[Float32], (1, 4, 16, 16)>)``
    in ``layers-CellList/0-DecoderLayer/attention-Attention``, read by backward
    ``PrimFunc_SoftmaxBackward(%661, %26, I64(-1))``.
    """

    code = "AM001"
    name = "outsized-kept-activation"
    severity = "info"
    summary = "A layer keeps an fp32 seq x seq tensor, or one tensor holding a large share of its activations"
    stages = MEMORY_STAGES
    default_enabled = False
    max_layer_share = 0.25
    min_layer_tensors = 4
    INVALID = [
        Invalid(
            SOFTMAX_FP32_KEPT,
            Says(
                "%0",
                "keeps a seq x seq Float32 tensor for backward, 100% of the layer",
                "flash attention, recompute or fp16/bf16",
            ),
        )
    ]
    VALID = [SOFTMAX_FP16_KEPT]

    def check(self, ir: IRFile) -> Iterator[Finding]:
        report = account(ir)
        layers = {row.layer: row for row in report.layers()}
        for t in sorted(report.kept, key=lambda t: (ir[t.tensor.node].get("line", 0), t.tensor.index or 0)):
            if t.layer == OUTSIDE or not t.nbytes:
                continue
            layer = layers[t.layer]
            share = t.nbytes / layer.kept_bytes
            dtype = t.type.dtype if t.type is not None else None
            squared = is_sequence_squared(ir, t) and dtype in HIGH_PRECISION
            large = share > self.max_layer_share and layer.tensors >= self.min_layer_tensors
            if not (squared or large):
                continue
            d = ir[t.tensor.node]
            what = f"{d['op']} output" if t.tensor.index is None else f"{d['op']} output {t.tensor.index}"
            why = (
                f"an attention-score shaped (seq x seq) tensor kept in {dtype}"
                if squared
                else f"more than {self.max_layer_share:.0%} of the layer"
            )
            message = (
                f"{what} {t.type} ({human_bytes(t.nbytes)}, {share:.0%} of the {human_bytes(layer.kept_bytes)} "
                f"layer {t.layer} keeps for backward) is {why}; read by "
                + ", ".join(f"backward {ir.describe(r)}" for r in t.readers[:3])
            )
            hint = (
                "Use flash attention (FlashAttentionScore keeps no seq x seq tensor), recompute this op "
                "(select_recompute on its primitive), or compute it in fp16/bf16."
                if squared
                else "Recompute this op or the ops around it (select_recompute), or lower its dtype."
            )
            short = (
                f"keeps a seq x seq {dtype} tensor for backward, {share:.0%} of the layer"
                if squared
                else f"one kept tensor is {share:.0%} of the layer's activations"
            )
            yield self.finding(
                ir,
                t.tensor.node,
                message,
                hint=hint,
                cause=short,
                fix="flash attention, recompute or fp16/bf16" if squared else "recompute it or lower its dtype",
                related=[related_node(ir, r, "backward reader") for r in t.readers[:3]],
                identity=(d["op"], t.tensor.index, "seq2" if squared else "share"),
                facts={"layer": t.layer, "share": round(share, 4)},
            ).with_(bytes_at_stake=t.nbytes)
