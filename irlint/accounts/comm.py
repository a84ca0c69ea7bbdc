"""Static communication accounting: what each collective of a dump receives per rank and step.

Counted (``received_bytes``), per execution of the op on one rank, from the local shapes on its
type line (dtype size x shape): an AllGather receives its output minus its own input, a
ReduceScatter its input minus its output, an AllReduce (a ring: reduce-scatter then all-gather)
2·(n-1)/n of its input over a group of n, an AlltoAll (n-1)/n of its output over its
``split_count``, a Receive its output. A Send receives nothing. An AlltoAllV whose receive size the
data decides (MoE token dispatch and combine) is counted as (n-1)/n of what the rank sends over the n
peers of its send list (balanced routing), the combine and the gradients from the dispatch with the
same two lists. Forward and backward are the model's answer (``IRFile.is_backward``); a backward
collective names the forward op it transposes and is counted in that op's layer (a mirror op's
gradient in its weight's), a recomputed copy in the layer of the op it repeats. Layers are the
model's (``irlint.model.layers.layer_of_any``: the weights an op reads, its data links where its
printed scope names no cell or a reused layer's, the printed scope checked against the weights).

Each byte is either **waste** (a redistribution finding names the op and how many of its bytes a
consistent strategy would not move in ``Finding.wasted``, under a kind of ``Finding.waste_kinds``) or **scheme** (the communication the parallel
configuration needs: data- and tensor-parallel AllReduces, sequence-parallel ReduceScatter and
AllGather, expert AlltoAll, pipeline Send/Receive, optimizer-parallel gathers, loss reductions).

**Recompute** is the part of the backward bytes that recomputed copies of forward collectives
receive again (``irlint.accounts.recompute_comm``), by what asked for it: a select key,
``select_comm_recompute``, full-layer ``recompute`` or ``mp_comm_recompute``.

Not counted: what a collective sends, the latency of each call, communication the backend adds
after the front-end graph (fusion and overlap passes), and loops a graph runs more than once
(micro batches of gradient accumulation count once).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..findings import Finding
from ..model import IRFile
from ..model.layers import layer_of_any, model_path
from ..units import human_share
from .memory import OUTSIDE, runs_in_backward

# what one collective receives; part of this module's names (the rules import it alone)
from .received import (  # noqa: F401
    ALLTOALL_OPS,
    COLLECTIVE_OPS,
    GATHER_OPS,
    KINDS,
    group_size,
    received_bytes,
    step_received_bytes,
    variable_size,
    waste_entry,
)
from .recompute_comm import Rerun, asked_by, by_key

# The stage files whose graph is final for the accounting, best first: the files the PC rules read.
COMM_STAGES = ("validate", "optimize", "cse_after_recomputation", "add_recomputation")

SCOPE_NOTE = (
    "Counted: bytes each collective receives per rank, once per execution of the step's graph, "
    "from local shapes (ring AllReduce 2(n-1)/n, AllGather output minus input, ReduceScatter input "
    "minus output, AlltoAll (n-1)/n, Receive its output). Waste: the bytes the redistribution "
    "findings (PC) name; scheme: the rest. Not counted: bytes sent, backend-inserted communication, "
    "repeated micro-batches."
)

KIND_ORDER = ("AllGather", "ReduceScatter", "AllReduce", "AlltoAll", "Send/Receive", "Broadcast")


@dataclass
class Collective:
    """One collective op: what it receives, how much of that is waste, its layer."""

    node: int
    kind: str
    backward: bool
    layer: str
    group_size: int | None
    received_bytes: int | None
    waste_bytes: int = 0
    findings: list[str] = field(default_factory=list)  # codes of the PC findings naming it
    transposes: int | None = None  # the forward op of a backward collective
    rerun: Rerun | None = None  # a recomputed copy: the key that asked for it

    @property
    def scheme_bytes(self) -> int:
        return (self.received_bytes or 0) - self.waste_bytes


@dataclass
class LayerComm:
    """The collectives of one decoder layer, summed."""

    layer: str
    received_bytes: int = 0
    scheme_bytes: int = 0
    waste_bytes: int = 0
    forward_bytes: int = 0
    backward_bytes: int = 0
    recompute_bytes: int = 0
    collectives: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)


@dataclass
class CommAccount:
    """A dump's collectives and the redistribution findings that name their waste."""

    collectives: list[Collective]
    findings: list[Finding]  # the redistribution findings whose bytes are the waste

    @property
    def received_bytes(self) -> int:
        return sum(c.received_bytes or 0 for c in self.collectives)

    @property
    def waste_bytes(self) -> int:
        return sum(c.waste_bytes for c in self.collectives)

    @property
    def scheme_bytes(self) -> int:
        return self.received_bytes - self.waste_bytes

    @property
    def recompute_bytes(self) -> int:
        """Backward bytes of recomputed copies: communication a recompute key runs twice."""
        return sum(c.received_bytes or 0 for c in self.collectives if c.rerun is not None)

    def layers(self) -> list[LayerComm]:
        rows: dict[str, LayerComm] = {}
        for c in self.collectives:
            row = rows.setdefault(c.layer, LayerComm(c.layer))
            got = c.received_bytes or 0
            row.received_bytes += got
            row.waste_bytes += c.waste_bytes
            row.scheme_bytes += c.scheme_bytes
            row.collectives += 1
            if c.backward:
                row.backward_bytes += got
            else:
                row.forward_bytes += got
            if c.rerun is not None:
                row.recompute_bytes += got
            row.by_kind[c.kind] = row.by_kind.get(c.kind, 0) + got
        return sorted(rows.values(), key=lambda r: (r.layer == OUTSIDE, int(r.layer) if r.layer.isdigit() else 0))

    def by_kind(self) -> dict[str, dict[str, int]]:
        """kind -> forward/backward/waste bytes and how many ops, in a fixed kind order."""
        out: dict[str, dict[str, int]] = {}
        for c in self.collectives:
            row = out.setdefault(c.kind, {"ops": 0, "forward_bytes": 0, "backward_bytes": 0, "waste_bytes": 0})
            row["ops"] += 1
            row["backward_bytes" if c.backward else "forward_bytes"] += c.received_bytes or 0
            row["waste_bytes"] += c.waste_bytes
        return {k: out[k] for k in sorted(out, key=_kind_rank)}

    @property
    def unsized(self) -> list[Collective]:
        return [c for c in self.collectives if c.received_bytes is None]


def account(ir: IRFile, findings: list[Finding] | None = None) -> CommAccount:
    """Every collective of ``ir`` with what it receives, split into scheme and waste by the
    redistribution findings (``findings``; by default the PC rules are run on ``ir``)."""
    if findings is None:
        findings = redistribution_findings(ir)
    by_id = {(ir[k].get("graph", ""), ir[k].get("id", "")): k for k in ir.cnodes()}
    waste: dict[int, int] = {}
    named: dict[int, list[str]] = {}
    for f in findings:
        for entry in f.wasted:
            key = by_id.get((entry.graph, entry.node))
            if key is not None:
                waste[key] = waste.get(key, 0) + entry.bytes
                named.setdefault(key, []).append(f.code)
    out = []
    for key in sorted(ir.nodes_by_op(*COLLECTIVE_OPS), key=lambda k: (ir[k].get("line", 0), k)):
        data = ir[key]
        got = received_bytes(ir, key)
        backward = runs_in_backward(ir, key)
        forward = ir.forward_of(key) if backward else None
        out.append(
            Collective(
                key,
                KINDS[data["op"]],
                backward,
                layer_of_any(ir, key),
                group_size(ir, key),
                got,
                min(waste.get(key, 0), got or 0),
                named.get(key, []),
                forward,
            )
        )
    by_node = {c.node: c for c in out}
    for r in reruns(ir, out):
        by_node[r.node].rerun = r
    return CommAccount(out, list(findings))


def redistribution_findings(ir: IRFile) -> list[Finding]:
    """What the built-in rules that name redistribution waste (``Rule.waste_kinds``) find in ``ir``."""
    from ..rule import load_rules

    found: list[Finding] = []
    for cls in load_rules(plugins=False):
        if cls.waste_kinds:
            found += list(cls().check(ir))
    return found


def as_dict(ir: IRFile, acc: CommAccount) -> dict:
    """The account as plain data: the per-file part of ``irlint comm --format json`` (version 1),
    without the file's name, stage and rank."""

    def node(key: int | None) -> str | None:
        return None if key is None else ir[key].get("id", "")

    return {
        "received_bytes": acc.received_bytes,
        "scheme_bytes": acc.scheme_bytes,
        "waste_bytes": acc.waste_bytes,
        "forward_bytes": sum(c.received_bytes or 0 for c in acc.collectives if not c.backward),
        "backward_bytes": sum(c.received_bytes or 0 for c in acc.collectives if c.backward),
        "recompute_bytes": acc.recompute_bytes,
        "by_kind": [{"kind": k, **v} for k, v in acc.by_kind().items()],
        "layers": [
            {
                "layer": r.layer,
                "received_bytes": r.received_bytes,
                "scheme_bytes": r.scheme_bytes,
                "waste_bytes": r.waste_bytes,
                "forward_bytes": r.forward_bytes,
                "backward_bytes": r.backward_bytes,
                "recompute_bytes": r.recompute_bytes,
                "collectives": r.collectives,
                "by_kind": {k: r.by_kind[k] for k in sorted(r.by_kind, key=_kind_rank)},
            }
            for r in acc.layers()
        ],
        "collectives": [
            {
                "node": node(c.node),
                "graph": ir[c.node].get("graph", ""),
                "op": ir[c.node].get("op", ""),
                "kind": c.kind,
                "direction": "backward" if c.backward else "forward",
                "layer": c.layer,
                "group_size": c.group_size,
                "received_bytes": c.received_bytes,
                "received_estimated": c.received_bytes is not None and variable_size(ir, c.node),
                "waste_bytes": c.waste_bytes,
                "findings": c.findings,
                "transposes": node(c.transposes),
                "transposes_graph": None if c.transposes is None else ir[c.transposes].get("graph", ""),
                "instance": ir[c.node].get("instance") or "",
                "scope": ir[c.node].get("scope", ""),
                "model_path": model_path(ir, c.node)[1],  # added to version 1: the cell path as the weights name it
                "line": ir[c.node].get("line", 0),
                "recompute_key": c.rerun.key if c.rerun else None,
                "recompute_via": c.rerun.via if c.rerun else None,
                "recomputes": node(c.rerun.original) if c.rerun else None,
                "recomputes_graph": (
                    ir[c.rerun.original].get("graph", "") if c.rerun and c.rerun.original is not None else None
                ),
            }
            for c in acc.collectives
        ],
        "recompute": by_key([c.rerun for c in acc.collectives if c.rerun is not None]),
        "findings": [
            {
                "code": f.code,
                "rule": f.rule,
                "node": f.node,
                "graph": f.graph,
                "line": f.line,
                "waste_bytes": f.waste.bytes if f.waste is not None else 0,
                "share": human_share(f.waste.bytes if f.waste is not None else 0, acc.received_bytes),
            }
            for f in acc.findings
        ],
    }


def _kind_rank(kind: str) -> int:
    return KIND_ORDER.index(kind) if kind in KIND_ORDER else len(KIND_ORDER)


def reruns(ir: IRFile, collectives: list[Collective]) -> list[Rerun]:
    """The collectives of the account that are recompute copies, each with the key that asked."""
    out = []
    for c in collectives:
        if not c.backward or not ir.is_recompute_copy(c.node):
            continue
        original = ir.original_of(c.node)
        key, via = asked_by(ir, original if original is not None else c.node, c.layer)
        out.append(Rerun(c.node, original, key, via, c.layer, c.kind, c.received_bytes or 0))
    return out
