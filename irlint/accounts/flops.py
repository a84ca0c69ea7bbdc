"""FLOPs of one op from the shapes on its type lines (``irlint.accounts.compute`` counts a whole
step with them; a recompute finding prices its fix with them without loading that account)."""

from __future__ import annotations

from math import prod

from ..model import IRFile
from ..model.ops import ATTENTION_OPS
from ..model.ops import DENSE_MATMUL_OPS as MATMUL_OPS  # priced from two operand shapes

CONV_OPS = frozenset(
    {
        "Conv2D",
        "Conv3D",
        "Conv1D",
        "Conv2DBackpropInput",
        "Conv2DBackpropFilter",
        "Conv3DBackpropInput",
        "Conv3DBackpropFilter",
        "Conv2DTranspose",
        "Conv3DTranspose",
        "Convolution",
        "ConvolutionGrad",
    }
)
# arithmetic on every element (their gradients included: names ending in Grad below)
ELEMENTWISE_OPS = frozenset(
    {
        "Add",
        "Sub",
        "Mul",
        "Div",
        "RealDiv",
        "DivNoNan",
        "Neg",
        "Exp",
        "Log",
        "Sqrt",
        "Rsqrt",
        "Square",
        "Pow",
        "Maximum",
        "Minimum",
        "Abs",
        "Reciprocal",
        "AddN",
        "AddExt",
        "SubExt",
        "Muls",
        "Adds",
        "SiLU",
        "GeLU",
        "FastGeLU",
        "ReLU",
        "Sigmoid",
        "Tanh",
        "Erf",
        "Softmax",
        "LogSoftmax",
        "ReduceMean",
        "ReduceSum",
        "ReduceMax",
        "ReduceMin",
        "MeanExt",
        "SumExt",
        "RmsNorm",
        "LayerNorm",
        "LayerNormV3",
        "AddRmsNorm",
        "Dropout",
        "DropoutExt",
        "Select",
        "Equal",
        "Less",
        "Greater",
        "LessEqual",
        "GreaterEqual",
        "NotEqual",
        "LogicalAnd",
        "LogicalOr",
        "LogicalNot",
        "SwiGlu",
        "Swiglu",
        "RotaryPositionEmbedding",
        "ApplyRotaryPosEmb",
        "BiasAdd",
        "SquaredDifference",
        "SoftmaxCrossEntropyWithLogits",
        "SparseSoftmaxCrossEntropyWithLogits",
        "CrossEntropy",
    }
)
_NOT_ELEMENTWISE_GRADS = frozenset(
    {
        "StridedSliceGrad",
        "GatherDGradV2",
        "GatherDGrad",
        "UnsortedSegmentSumGrad",
        "EmbeddingGrad",
        "SliceGrad",
        "ReshapeGrad",
        "TransposeGrad",
        "CastGrad",
    }
)
# where the sequence length sits in a flash-attention key, per input_layout
_FA_SEQ_AXIS = {"BSH": 1, "BNSD": 2, "SBH": 0, "BSND": 1}
# MindSpore 2.3 and later pass input_layout as a positional enum (FASInputLayoutMode), not an attribute
_FA_LAYOUT_ENUM = {0: "BSH", 1: "BNSD", 2: "SBH", 3: "BSND", 4: "TND"}
# its position among the inputs: FlashAttentionScore(q, k, v, 7 optional tensors, head_num, keep_prob,
# scale_value, pre_tokens, next_tokens, inner_precise, input_layout, sparse_mode); the Grad has dy and
# four softmax tensors more
_FA_LAYOUT_POSITION = {"FlashAttentionScore": 16, "FlashAttentionScoreGrad": 21}

KINDS = ("matmul", "attention", "conv", "elementwise")


def _shape(t) -> tuple[int, ...] | None:
    if t is None or t.shape is None or not all(isinstance(d, int) and d >= 0 for d in t.shape):
        return None
    return tuple(t.shape)


def attr_flag(ir: IRFile, k: int, position: int, *names: str, ins: list[int] | None = None) -> bool:
    """A MatMul transpose flag: the constant input at ``position`` (MindSpore 2.3 and later), else
    the primitive attribute of one of ``names`` (older dumps). ``ins``: ``k``'s producers, if known."""
    if ins is None:
        ins = ir.producers(k)
    if len(ins) > position and ir[ins[position]]["kind"] == "const":
        value = ir[ins[position]].get("value")
        if isinstance(value, bool):
            return value
    attrs = ir[k].get("primitive_attrs") or {}
    return any(attrs.get(n) is True for n in names)


def matmul_dims(ir: IRFile, k: int) -> tuple[int, int, int, int] | None:
    """(batch, M, K, N) of a MatMul-like op from its input shapes and transpose flags; None when a
    shape is unknown."""
    d = ir[k]
    types: list = list(d.get("in_types") or ())
    if len(types) < 2:
        return None
    a, b = _shape(types[0]), _shape(types[1])
    if not a or not b:
        return None
    if d["op"] == "Dense":  # y = x·Wᵀ (+ bias)
        ta, tb = False, True
    else:
        ins = ir.producers(k)  # once for both flags
        ta = attr_flag(ir, k, 2, "transpose_a", "transpose_x1", ins=ins)
        tb = attr_flag(ir, k, 3, "transpose_b", "transpose_x2", ins=ins)
    if len(a) == 1:
        a = (1, *a)
    if len(b) == 1:
        b = (*b, 1)
    m, kk = (a[-1], a[-2]) if ta else (a[-2], a[-1])
    n = b[-2] if tb else b[-1]
    out = _shape(d.get("out_type"))
    if out is not None and len(out) >= 2 and m * n:
        batch = prod(out) // (m * n) if prod(out) % (m * n) == 0 else max(prod(a[:-2]), prod(b[:-2]))
    else:
        batch = max(prod(a[:-2]), prod(b[:-2]))
    return batch, m, kk, n


def _attention_layout(ir: IRFile, k: int) -> str:
    """The input_layout of a flash-attention op: its positional enum (2.3 and later), else the
    primitive attribute of older dumps, else MindSpore's default BSH."""
    d = ir[k]
    position = _FA_LAYOUT_POSITION.get(d["op"])
    ins = ir.producers(k)
    if position is not None and len(ins) > position and ir[ins[position]]["kind"] == "const":
        value = ir[ins[position]].get("value")
        if isinstance(value, int) and not isinstance(value, bool):
            return _FA_LAYOUT_ENUM.get(value, "")
        if isinstance(value, str):
            return value
    return str((d.get("primitive_attrs") or {}).get("input_layout") or "BSH")


def _attention_flops(ir: IRFile, k: int) -> int | None:
    d = ir[k]
    types: list = list(d.get("in_types") or ())
    if len(types) < 2:
        return None
    q, key = _shape(types[0]), _shape(types[1])
    axis = _FA_SEQ_AXIS.get(_attention_layout(ir, k))
    if q is None or key is None or axis is None or len(key) <= axis:
        return None
    forward = 4 * prod(q) * key[axis]  # QKᵀ and PV: 2·(B·N·Sq·D)·Skv each
    return 2 * forward if d["op"].endswith("Grad") else forward


def _conv_flops(ir: IRFile, k: int) -> int | None:
    d = ir[k]
    op = d["op"]
    types: list = list(d.get("in_types") or ())
    out = _shape(d.get("out_type"))
    if len(types) < 2:
        return None
    if op.endswith("BackpropFilter"):  # (dout, x, size) -> dw
        grad, weight = _shape(types[0]), out
    elif op.endswith(("BackpropInput", "Transpose")):  # (dout, w, size) -> dx
        grad, weight = _shape(types[0]), _shape(types[1])
    else:  # (x, w) -> out
        grad, weight = out, _shape(types[1])
    if grad is None or weight is None or len(weight) < 2:
        return None
    return 2 * prod(grad) * prod(weight[1:])


def _elementwise_flops(ir: IRFile, k: int) -> int | None:
    d = ir[k]
    shapes = [
        _shape(t) for t in (*(d.get("in_types") or ()), d.get("out_type")) if t is not None and t.kind == "Tensor"
    ]
    sizes = [prod(s) for s in shapes if s is not None]
    return max(sizes) if sizes else None


def kind_of(op: str) -> str | None:
    """The kind of computing op ``op`` is (``KINDS``), None for one that only moves data."""
    if op in MATMUL_OPS:
        return "matmul"
    if op in ATTENTION_OPS:
        return "attention"
    if op in CONV_OPS:
        return "conv"
    if op in ELEMENTWISE_OPS or (op.endswith("Grad") and op not in _NOT_ELEMENTWISE_GRADS):
        return "elementwise"
    return None


def op_flops(ir: IRFile, k: int) -> int | None:
    """FLOPs of one execution of ``k`` on its rank: 0 for an op that only moves data, None when the
    type line gives no shape."""
    kind = kind_of(ir[k].get("op", ""))
    if kind is None:
        return 0
    if kind == "matmul":
        dims = matmul_dims(ir, k)
        return None if dims is None else 2 * dims[0] * dims[1] * dims[2] * dims[3]
    if kind == "attention":
        return _attention_flops(ir, k)
    if kind == "conv":
        return _conv_flops(ir, k)
    return _elementwise_flops(ir, k)
