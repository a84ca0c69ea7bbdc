"""DT001 (cast-round-trip): a tensor cast to a lower precision and straight back."""

from __future__ import annotations

from collections.abc import Iterator

from irlint.findings import Finding, scope_path
from irlint.model import IRFile
from irlint.rule import Invalid, Rule, Says, related_node
from irlint.units import human_bytes

from .recompute.downcast import cast_types
from .recompute.evidence import HIGH_PRECISION, LOW_PRECISION


def _snippet(middle: str, cnodes: int = 3) -> str:
    """A trimmed dump: a Float32 activation, a Cast to Float16, then ``middle`` ending in %1."""
    return f"""\
# IR entry: @g
# Total subgraphs: 1

# Total params: 1
# Params:
%para1_h: <Tensor[Float32], (2, 16, 64)> : [2, 16, 64]
Node counting information:
Total number of nodes: {cnodes + 3}
Total number of cnodes: {cnodes}
subgraph attr:
subgraph instance: g : 0x55860104edc0
subgraph @g() {{
  %0(equiv_147_CNode_1016) = PrimFunc_Cast(%para1_h, I64(42)) {{instance name: rcast}} cnode_attrs: {{checkpoint: Bool(1)}} cnode_primal_attrs: {{unique_id: "24121"}}
      : (<Tensor[Float32], (2, 16, 64)>, <Int64, NoShape>) -> (<Tensor[Float16], (2, 16, 64)>)
      # Fullname with scope: (Default/network-LlamaForCausalLM/model-LlamaModel/tok_embeddings-Embedding/Cast-op0)
{middle}
  Return(%1)
      : (<Tensor[Float32], (2, 16, 64)>)
      # Fullname with scope: (Default/network-LlamaForCausalLM/Return-op0)
}}
"""


# par-rc-dp2_mp4_select_blocked rank_0 21_validate: the embedding's Float32 output cast to Float16,
# which layer 0's RMSNorm casts straight back to Float32
EMBEDDING_THEN_NORM = _snippet(
    """\
  %1(equiv_146_CNode_1017) = PrimFunc_Cast(%0, I64(43)) {instance name: cast} cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "24178"}
      : (<Tensor[Float16], (2, 16, 64)>, <Int64, NoShape>) -> (<Tensor[Float32], (2, 16, 64)>)
      # Fullname with scope: (Default/network-LlamaForCausalLM/model-LlamaModel/layers-CellList/0-LLamaDecodeLayer/attention_norm-LlamaRMSNorm/Cast-op0)"""
)
# the same Cast back to Float32 after an op computed in Float16: the low precision was used
COMPUTED_IN_BETWEEN = _snippet(
    """\
  %2(CNode_1018) = PrimFunc_Mul(%0, %0) {instance name: mul} cnode_primal_attrs: {unique_id: "24179"}
      : (<Tensor[Float16], (2, 16, 64)>, <Tensor[Float16], (2, 16, 64)>) -> (<Tensor[Float16], (2, 16, 64)>)
      # Fullname with scope: (Default/network-LlamaForCausalLM/model-LlamaModel/layers-CellList/0-LLamaDecodeLayer/Mul-op0)
  %1(equiv_146_CNode_1017) = PrimFunc_Cast(%2, I64(43)) {instance name: cast} cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "24178"}
      : (<Tensor[Float16], (2, 16, 64)>, <Int64, NoShape>) -> (<Tensor[Float32], (2, 16, 64)>)
      # Fullname with scope: (Default/network-LlamaForCausalLM/model-LlamaModel/layers-CellList/0-LLamaDecodeLayer/attention_norm-LlamaRMSNorm/Cast-op0)""",
    cnodes=4,
)
# ops that order or pass a value on without computing with it
_NOT_READERS = frozenset({"Depend", "UpdateState", "Load"})

_CAUSE = "{src}->{low}->{src} round trip: the Cast back gives the type, not the precision"


class CastRoundTrip(Rule):
    """What it finds:
    A forward Cast to a higher precision (Float16 -> Float32) whose input is a Cast of a tensor of
    that precision down to a lower one (Float32 -> Float16): the tensor comes back with its type but
    rounded, and the step runs two Casts for it. MindFormers' embedding casts its Float32 output to
    the compute dtype, which the first layer's RMSNorm casts back.

    Why it matters:
    The high-precision copy read downstream carries the low precision's rounding error, and the pair
    costs two element-wise passes and a low-precision copy of the tensor.

    How to fix:
    Where the high precision is wanted, read the tensor before the down-cast (one Cast fewer, no
    rounding); where the rounding is meant (a model that computes in Float16), nothing. The finding
    says which other ops read the low-precision copy (those keep the down-cast).

    Example:
    ``%3 = PrimFunc_Cast(%2, I64(42))`` (Float32 -> Float16) in ``tok_embeddings``, then
    ``%4 = PrimFunc_Cast(%3, I64(43))`` (Float16 -> Float32) in layer 0's ``attention_norm``.
    """

    code = "DT001"
    name = "cast-round-trip"
    severity = "info"
    summary = "A tensor cast to a lower precision and straight back"
    stages = ("validate",)  # where its evidence is final, best first
    default_enabled = False  # a model may round on purpose: asked for with --extend-select DT001
    INVALID = [
        Invalid(
            EMBEDDING_THEN_NORM,
            Says("%1", _CAUSE.format(src="Float32", low="Float16"), "read %para1_h (Float32) instead"),
        )
    ]
    VALID = [COMPUTED_IN_BETWEEN]

    def check(self, ir: IRFile) -> Iterator[Finding]:
        for up in ir.nodes_by_op("Cast"):
            if ir.is_backward(up) or ir.is_recompute_copy(up):
                continue
            data = [p for p in ir.producers(up) if ir[p]["kind"] != "const"][:1]
            if not data or ir[data[0]].get("op") != "Cast":
                continue
            down = data[0]
            src, low = cast_types(ir, down)
            back, high = cast_types(ir, up)
            if not (src in HIGH_PRECISION and low in LOW_PRECISION and back == low and high == src):
                continue
            origin = [p for p in ir.producers(down) if ir[p]["kind"] != "const"][:1]
            yield self._finding(ir, up, down, origin[0] if origin else None, str(src), str(low))

    def _finding(self, ir: IRFile, up: int, down: int, origin: int | None, src: str, low: str) -> Finding:
        out = ir[up].get("out_type")
        size = f" ({human_bytes(out.nbytes)})" if out is not None and out.nbytes else ""
        others = [
            c for c in ir.consumers(down) if c != up and not ir.is_backward(c) and ir[c].get("op") not in _NOT_READERS
        ]
        message = (
            f"{ir.describe(up)} casts {ir.describe(down)}'s {low} copy of a {src} tensor{size} back to {src}: "
            f"the value read downstream is the {low} rounding of the {src} one"
            + (
                f"; {len(others)} other forward op(s) read the {low} copy ({', '.join(ir.describe(c) for c in others)})"
                if others
                else "; nothing else reads the copy"
            )
        )
        named = ir[origin]["id"] if origin is not None else ""
        hint = (
            f"Where {src} is wanted here, read the tensor before the down-cast"
            + (f" ({named})" if named else "")
            + " instead of casting it back: one Cast fewer and no rounding"
            + (f" (the {low} copy stays for its other readers)" if others else "")
            + f". Where the rounding is meant (the model computes in {low}), nothing to change."
        )
        related = [related_node(ir, down, f"down-cast {src}->{low}")]
        if origin is not None:
            related.append(related_node(ir, origin, f"the {src} tensor"))
        related += [related_node(ir, c, f"reads the {low} copy") for c in others]
        return self.finding(
            ir,
            up,
            message,
            hint=hint,
            related=related,
            identity=("Cast", scope_path(ir[down].get("scope", "")), src, low),
            cause=_CAUSE.format(src=src, low=low),
            fix=f"read {named} ({src}) instead" if named else "",
        )
