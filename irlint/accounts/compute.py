"""Static compute accounting: the floating-point operations of one step, per layer, from the shapes
on the type lines.

Counted, per execution of the op on one rank (local shapes: a sharded op counts its slice):

- **matrix** ops (cube units, compute-bound): MatMul and BatchMatMul (and their ``Ext``/``V2`` forms,
  Dense) ``2·M·K·N`` per output matrix, K read from the first input and its ``transpose`` flag;
  FlashAttentionScore ``4·B·N·Sq·Skv·D`` (its two products, masks not subtracted), its Grad twice
  that; convolutions ``2·(output elements)·(weight elements per output channel)``, both backprops
  the same from their gradient's shape.
- **element-wise** ops and reductions (vector units, memory-bound; shown apart): one operation per
  element of the largest tensor they read or write.

Each op is forward, backward (``Gradients/`` scope, ``forward_unique_id``, lazy_inline's backward
half) or a recomputed copy (``duplicated: Bool(1)``, the copies the memory account uses). Its layer
is the resolved layer of the forward op (``irlint.model.layers``): a backward op's is that of the
forward op it differentiates, a copy's that of the op it rebuilds.

Not counted: data movement (Reshape, Transpose, Cast, Gather, slices, concatenation), communication,
the optimizer's update, what the backend adds or fuses after the front-end graph, the scores a
flash-attention backward kernel recomputes inside itself; a graph that runs once per micro batch
(a pipeline stage) is counted once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import prod

from ..model import IRFile
from ..model.layers import OUTSIDE, layer_of_node, printed_layer
from .memory import _original_of_copies, cached_account, is_backward

# The stage files whose graph is final for the accounting, best first: the memory account's choice
# (the copies of the recompute pass exist there).
COST_STAGES = ("validate", "cse_after_recomputation", "add_recomputation", "graph_build")

SCOPE_NOTE = (
    "Counted: floating-point operations per rank and execution of the step's graph, from local "
    "shapes: MatMul/BatchMatMul 2·M·K·N, flash attention 4·B·N·Sq·Skv·D (its backward twice that), "
    "convolutions 2·out·(kernel elements); element-wise ops and reductions one per element, shown "
    "apart. Not counted: data movement, communication, the optimizer, backend fusion, repeated "
    "micro-batches."
)

MATMUL_OPS = frozenset(
    {
        "MatMul",
        "BatchMatMul",
        "MatMulExt",
        "BatchMatMulExt",
        "MatMulV2",
        "BatchMatMulV2",
        "Dense",
        "Matmul",
        "BatchMatmul",
    }
)
ATTENTION_OPS = frozenset({"FlashAttentionScore", "FlashAttentionScoreGrad"})
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

KINDS = ("matmul", "attention", "conv", "elementwise")
DIRECTIONS = ("forward", "backward", "recompute")


@dataclass
class OpCost:
    """One op that computes: its FLOPs, what kind and direction it is, its layer."""

    node: int
    kind: str  # one of KINDS
    direction: str  # one of DIRECTIONS
    layer: str
    flops: int | None  # None: the type line gives no shape
    original: int | None = None  # the forward op a recomputed copy rebuilds, or a backward op differentiates

    @property
    def matrix(self) -> bool:
        return self.kind != "elementwise"


@dataclass
class LayerCost:
    """The FLOPs of one decoder layer: matrix ops and element-wise ops, per direction."""

    layer: str
    forward_flops: int = 0
    backward_flops: int = 0
    recompute_flops: int = 0
    forward_elementwise_flops: int = 0
    backward_elementwise_flops: int = 0
    recompute_elementwise_flops: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)  # matrix kinds, every direction

    @property
    def step_flops(self) -> int:
        return self.forward_flops + self.backward_flops + self.recompute_flops


@dataclass
class RecomputeCost:
    """One recompute key (the select_recompute key of the ops it copies, or their cell path): what
    its copies re-spend against what the memory account says they save."""

    key: str
    layers: list[str]
    copies: int  # recomputed ops (views and casts included)
    flops: int  # matrix and element-wise FLOPs of the copies
    matrix_flops: int
    saved_bytes: int  # tensors backward reads as these copies instead of keeping them

    @property
    def bytes_per_gflop(self) -> float | None:
        return None if not self.flops else self.saved_bytes / (self.flops / 1e9)


@dataclass
class CostAccount:
    """A dump's computing ops and what each recompute key costs."""

    ops: list[OpCost]
    recompute: list[RecomputeCost] = field(default_factory=list)
    micro_batches: int = 1

    def total(self, direction: str | None = None, matrix: bool = True) -> int:
        return sum(
            o.flops or 0 for o in self.ops if o.matrix == matrix and (direction is None or o.direction == direction)
        )

    @property
    def step_flops(self) -> int:
        """Matrix FLOPs of the step: forward, backward and recomputed copies."""
        return self.total()

    @property
    def recompute_share(self) -> float:
        step = self.step_flops
        return self.total("recompute") / step if step else 0.0

    def layers(self) -> list[LayerCost]:
        rows: dict[str, LayerCost] = {}
        for o in self.ops:
            row = rows.setdefault(o.layer, LayerCost(o.layer))
            flops = o.flops or 0
            name = f"{o.direction}_flops" if o.matrix else f"{o.direction}_elementwise_flops"
            setattr(row, name, getattr(row, name) + flops)
            if o.matrix:
                row.by_kind[o.kind] = row.by_kind.get(o.kind, 0) + flops
        return sorted(rows.values(), key=lambda r: (r.layer == OUTSIDE, int(r.layer) if r.layer.isdigit() else 0))

    @property
    def unsized(self) -> list[OpCost]:
        return [o for o in self.ops if o.flops is None]


# --- FLOPs of one op ---------------------------------------------------------------------------


def _shape(t) -> tuple[int, ...] | None:
    if t is None or t.shape is None or not all(isinstance(d, int) and d >= 0 for d in t.shape):
        return None
    return tuple(t.shape)


def _flag(ir: IRFile, k: int, position: int, *names: str) -> bool:
    """A MatMul transpose flag: the constant input at ``position`` (MindSpore 2.3 and later), else
    the primitive attribute of one of ``names`` (older dumps)."""
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
        ta = _flag(ir, k, 2, "transpose_a", "transpose_x1")
        tb = _flag(ir, k, 3, "transpose_b", "transpose_x2")
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


def _attention_flops(ir: IRFile, k: int) -> int | None:
    d = ir[k]
    types: list = list(d.get("in_types") or ())
    if len(types) < 2:
        return None
    q, key = _shape(types[0]), _shape(types[1])
    layout = str((d.get("primitive_attrs") or {}).get("input_layout") or "BSH")
    axis = _FA_SEQ_AXIS.get(layout)
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


# --- the account -------------------------------------------------------------------------------


def direction_of(ir: IRFile, k: int) -> str:
    if ir.is_recompute_copy(k):
        return "recompute"
    return "backward" if is_backward(ir, k) else "forward"


def account(ir: IRFile, keys: bool = True) -> CostAccount:
    """Every computing op of ``ir`` with its FLOPs, direction and layer; with ``keys``, what each
    recompute key re-spends against the bytes the memory account says it saves."""
    originals = _original_of_copies(ir)
    ops: list[OpCost] = []
    for k in sorted(ir.cnodes(), key=lambda n: (ir[n].get("line", 0), n)):
        d = ir[k]
        kind = kind_of(d.get("op", ""))
        if kind is None:
            continue
        direction = direction_of(ir, k)
        original = None
        if direction == "recompute":
            original = originals.get(k)
        elif direction == "backward":
            original = ir.forward_of(k)
            if original is not None and direction_of(ir, original) != "forward":
                original = None
        if original is not None:
            layer = layer_of_node(ir, original)
        elif direction == "forward":
            layer = layer_of_node(ir, k)
        else:
            layer = printed_layer(d.get("scope", "")) or OUTSIDE
        ops.append(OpCost(k, kind, direction, layer, op_flops(ir, k), original))
    acc = CostAccount(ops)
    from ..model.pipeline import schedules

    stages = schedules(ir)
    if stages:
        acc.micro_batches = max(s.micro_batches for s in stages)
    if keys:
        acc.recompute = recompute_costs(ir, acc, originals)
    return acc


def recompute_costs(ir: IRFile, acc: CostAccount, originals: dict[int, int] | None = None) -> list[RecomputeCost]:
    """Per recompute key: the copies' FLOPs and the bytes of the tensors backward reads as those
    copies instead of keeping them (the memory account's ``saved``). A primitive tagged for
    recompute is grouped by its select_recompute key; the ops of a ``Cell.recompute()`` by the cell
    (the cell path their places share, "whole layer" for a decoder layer), across layers."""
    memory = cached_account(ir)
    saved_by_node: dict[int, int] = {}
    for t in memory.saved:
        saved_by_node[t.tensor.node] = saved_by_node.get(t.tensor.node, 0) + t.nbytes
    copies = [o for o in acc.ops if o.direction == "recompute"]
    if not copies and not saved_by_node:
        return []
    from importlib import import_module

    from ..model.layers import Places
    from ..rule import _builtin_package

    _builtin_package()
    node_select_key = import_module("irlint.rules.recompute.keys").node_select_key
    places = Places.of(ir)

    def group_of(node: int):
        d = ir[node]
        if (d.get("primitive_attrs") or {}).get("recompute") is True:
            key, _ = node_select_key(ir, node)
            if key is not None:
                return key
        sub = (d.get("cnode_attrs") or {}).get("recompute_sub_graph")
        return ("cell", places.layer(node)[0], sub)

    # (forward node, layer, flops, matrix flops, is a copy) per recomputed copy, computing or not
    members: list[tuple[int, str, int, int, bool]] = []
    priced = {o.node: o for o in copies}
    seen: set[int] = set()
    for copy, source in (originals if originals is not None else _original_of_copies(ir)).items():
        o = priced.pop(copy, None)
        flops = (o.flops or 0) if o is not None else 0
        members.append((source, layer_of_node(ir, source), flops, flops if o is not None and o.matrix else 0, True))
        seen.add(source)
    for o in priced.values():  # a computing copy whose forward op is not found
        members.append((o.node, o.layer, o.flops or 0, (o.flops or 0) if o.matrix else 0, True))
    for node, nbytes in saved_by_node.items():
        if node not in seen and nbytes:
            members.append((node, layer_of_node(ir, node), 0, 0, False))
    groups: dict = {}
    for m in members:
        groups.setdefault(group_of(m[0]), []).append(m)
    rows: dict[str, RecomputeCost] = {}
    for group, ms in groups.items():
        if isinstance(group, tuple):
            cells = [places.place(m[0]).cells for m in ms]
            common = cells[0]
            for c in cells[1:]:
                n = 0
                while n < min(len(common), len(c)) and common[n] == c[n]:
                    n += 1
                common = common[:n]
            name = "cell " + ("/".join(common) if common else "(whole layer)")
        else:
            name = group
        row = rows.setdefault(name, RecomputeCost(name, [], 0, 0, 0, 0))
        counted: set[int] = set()
        for node, layer, flops, matrix, computes in ms:
            row.copies += computes
            row.flops += flops
            row.matrix_flops += matrix
            if layer not in row.layers:
                row.layers.append(layer)
            if node not in counted:
                counted.add(node)
                row.saved_bytes += saved_by_node.get(node, 0)
    for row in rows.values():
        row.layers.sort(key=lambda name: (name == OUTSIDE, int(name) if name.isdigit() else 0))
    return sorted(rows.values(), key=lambda r: (-r.saved_bytes, r.flops, r.key))


def change(before: IRFile, after: IRFile) -> dict:
    """Matrix FLOPs of the step and what recompute re-spends (matrix and element-wise), before -> after
    (``irlint diff``)."""
    accounts = {"before": account(before, keys=False), "after": account(after, keys=False)}
    out: dict = {}
    for side, acc in accounts.items():
        out[f"{side}_step_flops"] = acc.step_flops
        out[f"{side}_recompute_flops"] = acc.total("recompute")
        out[f"{side}_recompute_share"] = acc.recompute_share
        out[f"{side}_recompute_elementwise_flops"] = acc.total("recompute", matrix=False)
    return out
