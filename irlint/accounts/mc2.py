"""MC2 candidates: the MatMul + collective pairs Ascend's fused kernels (MatmulAllReduce,
MatmulReduceScatter, AllGatherMatmul) could overlap, priced with a device profile.

A candidate is a MatMul-like op (forward, backward or recomputed copy) whose output a same-graph
AllReduce or ReduceScatter reads directly, or which reads an AllGather's output directly. For each:
M, K, N (batch folded into M), dtype, the bytes the collective receives per rank (as ``irlint comm``
counts them), the MatMul's FLOPs, and under the device profile the time of each, the bound type
(compute when the MatMul takes longer than the communication, which grows with K: the K at which
they are equal is given) and the tuning guide's short block ``m0 = min(a, b, c)``: the smallest a
with ``a·K·N ≥ 4 GiB``, the smallest b with ``b·K·N/1024 + b·N ≥ 6 MiB``, c = 384 (capped at M).
With a fitted cost model in the profile (``CostMM(m) = mm_per_flop·2·m·K·N + mm_fixed``,
``CostComm(m) = comm_per_byte·(bytes of m rows) + comm_fixed``), the long block is the m at which
one block's communication equals the next block's MatMul slowed by the contention factor (1.15),
aligned up to 128, and the count of long blocks that cover the rest of M.

Whether MC2 runs is decided after the front-end graph: MindSpore's Ascend backend fuses the pairs
(``mc2_fusion.cc``, ``matmul_allreduce_fusion.cc``) when the context parameter
``compute_communicate_fusion_level`` is 1 (forward), 2 (backward and recomputed copies) or 3 (both),
for MatMul (not BatchMatMul) in float16/bfloat16, over a communication group of 8 consecutive ranks
of one server; AllGatherMatmul also needs ``transpose_a`` false and the gathered input first,
MatmulReduceScatter a MatMul read by nothing else. A front-end dump (validate) cannot show the
fusion; a backend graph (``graph_build``, ``hwopt_*``) shows the fused ops by name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..model import IRFile
from ..model.ops import PLAIN_MATMUL_OPS
from .compute import direction_of
from .flops import MATMUL_OPS, matmul_dims, op_flops
from .received import GATHER_OPS, group_size, received_bytes

GIB, MIB = 2**30, 2**20
SHORT_BLOCK_CAP = 384
LONG_BLOCK_ALIGN = 128
CONTENTION = 1.15
FUSED_OPS = frozenset(
    {
        "MatmulAllReduce",
        "MatMulAllReduce",
        "MatmulReduceScatter",
        "AllGatherMatmul",
        "QuantBatchMatmulAllReduce",
        "MatmulAllReduceAddRmsNorm",
    }
)
_REDUCING = frozenset({"AllReduce", "ReduceScatter"})
_FUSIBLE_DTYPES = frozenset({"Float16", "BFloat16"})

# Atlas A2 (Atlas 800T A2 server, 8 Ascend 910B NPUs), per NPU; docs/accounts.md "MC2 candidates" names the
# public figures. A user's profile (``--device FILE``) has the same keys.
DEFAULT_PROFILE = """\
name = "Atlas A2 (Atlas 800T A2, 8x Ascend 910B per server)"
source = "public product figures: 2.5 PFLOPS FP16 per 8-NPU server (~313 TFLOPS per NPU); HCCS 392 GB/s per NPU inside a server (196 GB/s each way); 200GE RoCE per NPU between servers (25 GB/s)"

[peak_flops]            # per second and NPU, by dtype as the dump prints it
Float16 = 313e12
BFloat16 = 313e12
Float32 = 78e12         # not published for the cube unit: a quarter of FP16 assumed

[bandwidth]             # bytes per second one rank receives, by communication group size
"2" = 196e9
"4" = 196e9
"8" = 196e9
default = 25e9          # groups beyond one server
"""


@dataclass
class Profile:
    name: str
    peak_flops: dict[str, float]
    bandwidth: dict[str, float]
    cost_model: dict[str, float] | None = None
    source: str = ""

    def peak(self, dtype: str | None) -> float | None:
        return self.peak_flops.get(dtype or "") or self.peak_flops.get("default")

    def link(self, group: int | None) -> float | None:
        return (
            self.bandwidth.get(str(group))
            if group is not None and str(group) in self.bandwidth
            else self.bandwidth.get("default")
        )


class ProfileError(ValueError):
    pass


def load_profile(text: str | None = None) -> Profile:
    """A device profile from TOML text (the default Atlas A2 profile when None)."""
    import tomllib

    try:
        data = tomllib.loads(DEFAULT_PROFILE if text is None else text)
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"not a TOML device profile: {exc}") from None
    peak, bandwidth = data.get("peak_flops"), data.get("bandwidth")
    if not isinstance(peak, dict) or not isinstance(bandwidth, dict) or not peak or not bandwidth:
        raise ProfileError(
            "a device profile needs [peak_flops] (FLOPS per dtype) and [bandwidth] "
            "(bytes per second per group size, or default)"
        )
    for table in (peak, bandwidth, data.get("cost_model") or {}):
        for key, value in table.items():
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
                raise ProfileError(f"device profile: {key} = {value!r} is not a non-negative number")
    model = data.get("cost_model")
    if model is not None and not {"mm_per_flop", "mm_fixed", "comm_per_byte", "comm_fixed"} <= set(model):
        raise ProfileError("device profile: [cost_model] needs mm_per_flop, mm_fixed, comm_per_byte, comm_fixed")
    return Profile(
        str(data.get("name", "device")),
        {k: float(v) for k, v in peak.items()},
        {str(k): float(v) for k, v in bandwidth.items()},
        {k: float(v) for k, v in model.items()} if model else None,
        str(data.get("source", "")),
    )


def short_block(m: int, k: int, n: int) -> int:
    """The guide's first (short) block of rows: min(a, b, 384), capped at M."""
    a = -(-4 * GIB // (k * n))
    b = math.ceil(6 * MIB / (k * n / 1024 + n))
    return max(1, min(a, b, SHORT_BLOCK_CAP, m))


def long_blocks(m: int, k: int, n: int, row_bytes: float, m0: int, model: dict[str, float]) -> tuple[int, int]:
    """(long block, count) with a fitted cost model: the rows whose communication equals the next
    block's MatMul under contention, aligned up to 128; the rest of M in one block when none is."""
    rest = m - m0
    if rest <= 0:
        return 0, 0
    slope = CONTENTION * model["mm_per_flop"] * 2 * k * n - model["comm_per_byte"] * row_bytes
    fixed = model["comm_fixed"] - CONTENTION * model["mm_fixed"]
    rows = fixed / slope if slope else 0
    if rows <= 0 or rows >= rest:
        rows = rest
    size = -(-math.ceil(rows) // LONG_BLOCK_ALIGN) * LONG_BLOCK_ALIGN
    return size, -(-rest // size)


@dataclass
class Candidate:
    matmul: int
    collective: int
    pattern: str  # MatmulAllReduce, MatmulReduceScatter or AllGatherMatmul
    direction: str
    m: int
    k: int
    n: int
    dtype: str | None
    bytes: int | None
    flops: int | None
    group_size: int | None
    matmul_seconds: float | None = None
    comm_seconds: float | None = None
    bound: str | None = None
    balance_k: float | None = None  # the K at which MatMul and communication take as long
    m0: int = 0
    long_block: int | None = None
    long_blocks: int | None = None
    not_fusible: list[str] = field(default_factory=list)  # conditions of MindSpore's pass it misses


def candidates(ir: IRFile, profile: Profile | None = None) -> list[Candidate]:
    """Every MatMul + collective pair of ``ir`` an MC2 kernel could fuse, priced with ``profile``
    (the default Atlas A2 profile when None)."""
    profile = profile or load_profile()
    out = []
    for mm in ir.nodes_by_op(*MATMUL_OPS):
        pairs = [
            (c, "MatmulAllReduce" if ir[c]["op"] == "AllReduce" else "MatmulReduceScatter")
            for c in ir.consumers(mm)
            if ir[c]["kind"] == "cnode" and ir[c]["op"] in _REDUCING
        ]
        ins = ir.producers(mm)[:2]
        pairs += [(g, "AllGatherMatmul") for g in ins if ir[g]["kind"] == "cnode" and ir[g]["op"] in GATHER_OPS]
        if not pairs:
            continue
        dims = matmul_dims(ir, mm)
        if dims is None:
            continue
        batch, m, k, n = dims
        types = ir[mm].get("in_types") or ()
        dtype = types[0].dtype if types else None
        for coll, pattern in pairs:
            c = Candidate(
                mm,
                coll,
                pattern,
                direction_of(ir, mm),
                batch * m,
                k,
                n,
                dtype,
                received_bytes(ir, coll),
                op_flops(ir, mm),
                group_size(ir, coll),
            )
            _price(c, profile, ir)
            c.not_fusible = _misses(ir, mm, coll, c, ins)
            out.append(c)
    return sorted(out, key=lambda c: (ir[c.matmul].get("line", 0), ir[c.collective].get("line", 0)))


def _price(c: Candidate, profile: Profile, ir: IRFile) -> None:
    peak, link = profile.peak(c.dtype), profile.link(c.group_size)
    if c.flops is not None and peak:
        c.matmul_seconds = c.flops / peak
    if c.bytes is not None and link:
        c.comm_seconds = c.bytes / link
    if c.matmul_seconds is not None and c.comm_seconds is not None:
        c.bound = "compute" if c.matmul_seconds >= c.comm_seconds else "communication"
        if c.matmul_seconds:
            c.balance_k = c.k * c.comm_seconds / c.matmul_seconds
    c.m0 = short_block(c.m, c.k, c.n) if c.k and c.n else 0
    if profile.cost_model and c.bytes is not None and c.m:
        c.long_block, c.long_blocks = long_blocks(c.m, c.k, c.n, c.bytes / c.m, c.m0, profile.cost_model)


def _misses(ir: IRFile, mm: int, coll: int, c: Candidate, ins: list[int]) -> list[str]:
    """The conditions of MindSpore's fusion pass this pair does not meet."""
    out = []
    if ir[mm]["op"] not in PLAIN_MATMUL_OPS:
        out.append(f"{ir[mm]['op']} is not a MatMul")
    if c.dtype not in _FUSIBLE_DTYPES:
        out.append(f"{c.dtype or 'unknown dtype'} (float16 or bfloat16 only)")
    ranks = (ir[coll].get("primitive_attrs") or {}).get("rank_list") or (ir[coll].get("primitive_attrs") or {}).get(
        "group_rank_ids"
    )
    if isinstance(ranks, tuple) and ranks:
        r = sorted(ranks)
        if not (len(r) == 8 and r[0] % 8 == 0 and r == list(range(r[0], r[0] + 8))):
            out.append(f"group of {len(r)} ranks (8 consecutive ranks of one server only)")
    elif c.group_size != 8:
        out.append(f"group of {c.group_size or '?'} ranks (8 consecutive ranks of one server only)")
    if c.pattern == "AllGatherMatmul":
        from .flops import attr_flag

        if ins and ins[0] != coll:
            out.append("the gathered input is the second")
        if attr_flag(ir, mm, 2, "transpose_a", "transpose_x1"):
            out.append("transpose_a")
    if c.pattern == "MatmulReduceScatter" and len(ir.consumers(mm)) > 1:
        out.append("the MatMul has other readers")
    return out


def fusion_state(ir: IRFile) -> str:
    """What the dump can tell of MC2 fusion: "fused" (a fused op is in the graph), "not fused" (a
    backend graph without one), "unknown" (any other graph: the fusion runs in the backend, after it)."""
    from ..model.stages import BACKEND

    if ir.nodes_by_op(*FUSED_OPS):
        return "fused"
    return "not fused" if ir.stage is not None and ir.stage.family == BACKEND else "unknown"


FUSION_NOTE = {
    "fused": "The graph holds fused MC2 ops: fusion is on for some pairs (compute_communicate_fusion_level).",
    "not fused": (
        "This backend graph holds no fused MC2 op: the pairs run serially "
        "(compute_communicate_fusion_level is 0, or the pass's conditions are not met)."
    ),
    "unknown": (
        "A front-end graph cannot show MC2 fusion: MindSpore's Ascend backend fuses the pairs after it "
        "(context parameter compute_communicate_fusion_level: 1 forward, 2 backward, 3 both); "
        "a backend dump (graph_build, hwopt_*) shows the fused ops by name."
    ),
}


def as_dict(ir: IRFile, found: list[Candidate]) -> list[dict]:
    def node(k: int) -> str:
        return ir[k].get("id", "")

    return [
        {
            "matmul": node(c.matmul),
            "matmul_op": ir[c.matmul]["op"],
            "collective": node(c.collective),
            "collective_op": ir[c.collective]["op"],
            "pattern": c.pattern,
            "direction": c.direction,
            "m": c.m,
            "k": c.k,
            "n": c.n,
            "dtype": c.dtype,
            "bytes": c.bytes,
            "flops": c.flops,
            "group_size": c.group_size,
            "matmul_seconds": c.matmul_seconds,
            "comm_seconds": c.comm_seconds,
            "bound": c.bound,
            "balance_k": c.balance_k,
            "m0": c.m0,
            "long_block": c.long_block,
            "long_blocks": c.long_blocks,
            "not_fusible": c.not_fusible,
            "line": ir[c.matmul].get("line", 0),
            "scope": ir[c.matmul].get("scope", ""),
        }
        for c in found
    ]
