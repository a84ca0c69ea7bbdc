"""A pipeline run's stages side by side (peak device memory, FLOPs per micro batch, micro batches, chunks, the
bubble) and the MindFormers ``offset`` that balances them.

MindFormers places ``num_layers // pp + offset[i]`` decoder layers on stage ``i``. Moving a layer changes a
stage's peak by what one layer holds there: its parameters, optimizer states, accumulation buffers and constants
once, and its kept activations and weight copies once per micro batch in flight on that stage (more on the first
stages); and its FLOPs per micro batch by one layer's. The decoder layers are alike, so one layer's figures are
the mean over the dumped layers. The plan moves one layer at a time from the stage it helps most to the stage it
costs least, while the worst stage's peak (then the slowest stage's FLOPs) goes down.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model import IRFile
from .device import block, device_peak
from .memory import cached_account


@dataclass
class Stage:
    """One pipeline stage of a run, from the file of one of its ranks."""

    index: int
    ranks: list[int | None]
    layers: list[int]  # the decoder layers it holds
    peak_bytes: int
    flops: int  # per micro batch: forward, backward and recomputed copies (embedding, head and loss included)
    micro_batches: int
    in_flight: int
    chunks: int
    layer_static_bytes: float  # one layer's parameters, states, accumulation buffers and constants
    layer_kept_bytes: float  # one layer's kept activations and weight copies, per micro batch
    layer_flops: float
    file: str = ""
    node: int | None = None  # the node at the peak
    # with interleave, per chunk in layer order: its decoder layers here and its micro batches in flight at the peak
    chunk_layers: list[int] = field(default_factory=list)
    chunk_in_flight: list[int] = field(default_factory=list)
    # with interleave: the stage's final graph and its chunks' forward halves, to find the peak point again
    # for other layer counts (the 1F1B order weighed by what each chunk then keeps)
    ir: IRFile | None = field(default=None, repr=False)
    chunk_graphs: list[str] = field(default_factory=list)


@dataclass
class Plan:
    offset: list  # per stage; with interleave per chunk, then per stage
    layers_now: list[int]
    layers_after: list[int]
    peak_now: list[int]
    peak_after: list[int]
    flops_now: list[int]
    flops_after: list[int]
    notes: list[str] = field(default_factory=list)

    def fields(self) -> dict:
        """``fix_plan.pipeline`` (one entry per stage, in stage order)."""
        return {
            "offset": self.offset,
            "stage_peak_bytes_now": self.peak_now,
            "stage_peak_bytes_after": self.peak_after,
            "stage_flops_now": self.flops_now,
            "stage_flops_after": self.flops_after,
        }


def bubble(stages: int, chunks: int, micro_batches: int) -> float:
    """The share of a 1F1B step the stages idle: (p-1) / (v·m + p-1)."""
    return (stages - 1) / (chunks * micro_batches + stages - 1) if stages > 1 else 0.0


def _decoder_layer(name: str) -> int | None:
    import re

    m = re.search(r"(?:^|\.)layers\.(\d+)\.", name)
    return int(m.group(1)) if m else None


def stage_of_file(ir: IRFile, rank: int | None, index: int = 0, path: str = "") -> Stage | None:
    """The figures of the pipeline stage ``ir`` is the final graph of; None outside a pipeline."""
    report = cached_account(ir)
    if report.micro_batches < 2:
        return None
    layers = sorted({int(r.layer) for r in report.layers() if r.layer.isdigit()})
    if not layers:
        return None
    from .compute import account as cost_account  # a pipeline only: a lint of one graph loads no cost account

    peak = device_peak(ir, report)
    static = 0
    layer_static = 0.0
    for d in ir.nodes.values():
        if d["kind"] == "param" and d.get("has_default") and d["graph"] == ir.entry and d.get("out_type") is not None:
            b = block(d["out_type"].nbytes or 0)
            static += b
            if _decoder_layer(d.get("name", "")) is not None:
                layer_static += b
    # the constants (the zeros of the gradient clearing) follow the parameters
    consts = peak.parts.get("constants", 0)
    if static:
        layer_static += consts * layer_static / static
    kept = sum(block(t.nbytes) for t in report.kept if t.layer.isdigit())
    kept += sum(block(t.nbytes) for t in report.weight_copies if t.layer.isdigit())
    cost = cost_account(ir, keys=False)
    rows = cost.layers()
    total_flops = sum(
        r.step_flops + r.forward_elementwise_flops + r.backward_elementwise_flops + r.recompute_elementwise_flops
        for r in rows
    )
    layer_flops = sum(
        r.step_flops + r.forward_elementwise_flops + r.backward_elementwise_flops + r.recompute_elementwise_flops
        for r in rows
        if r.layer.isdigit()
    )
    n = len(layers)
    chunk_layers, chunk_in_flight, chunk_graphs = _chunks(ir, report, len(layers))
    return Stage(
        index,
        [rank],
        layers,
        peak.bytes,
        total_flops,
        report.micro_batches,
        report.in_flight,
        max(len(report.chunks), 1),
        layer_static / n,
        kept / n,
        layer_flops / n,
        path,
        peak.node,
        chunk_layers,
        chunk_in_flight,
        ir if len(chunk_graphs) > 1 else None,
        chunk_graphs,
    )


def _chunks(ir: IRFile, report, layers: int) -> tuple[list[int], list[int], list[str]]:
    """(decoder layers, micro batches in flight at the peak, forward half) of each chunk of the stage, in layer
    order."""
    rows = []
    for c in report.chunks:
        held = {t.layer for t in report.kept if t.layer.isdigit() and ir[t.tensor.node]["graph"] == c["graph"]}
        if held:
            rows.append((min(int(x) for x in held), len(held), c["in_flight_at_peak"], c["graph"]))
    rows.sort()
    if not rows or sum(r[1] for r in rows) != layers:
        return [layers], [report.in_flight], []
    return [r[1] for r in rows], [r[2] for r in rows], [r[3] for r in rows]


def _in_flight(s: Stage, counts: list[int]) -> list[int]:
    """Each chunk's micro batches in flight at the stage's peak with ``counts`` layers per chunk: with
    interleave the peak point of the 1F1B order moves with what each chunk keeps."""
    if s.ir is None or len(counts) != len(s.chunk_graphs):
        return s.chunk_in_flight or [s.in_flight]
    from ..model.pipeline import at_peak

    found = at_peak(s.ir, {g: max(n, 0) for g, n in zip(s.chunk_graphs, counts)})
    return [found.get(g, 1) for g in s.chunk_graphs]


def _peak(s: Stage, counts: list[int]) -> int:
    """The stage's peak with ``counts`` layers per chunk: one layer's parameters, states and constants once, its
    kept activations and weight copies once per micro batch of its chunk in flight at the peak."""
    now = s.chunk_layers or [len(s.layers)]
    held = sum(n - m for n, m in zip(counts, now)) * s.layer_static_bytes

    def kept(c: list[int]) -> float:
        return sum(n * f for n, f in zip(c, _in_flight(s, c))) * s.layer_kept_bytes

    return round(s.peak_bytes + held + kept(counts) - kept(now))


def _flops(s: Stage, counts: list[int], per_layer: float) -> int:
    return round(s.flops + (sum(counts) - len(s.layers)) * per_layer)


def plan_offset(stages: list[Stage]) -> Plan | None:
    """The offset that lowers the worst stage's peak (then the slowest stage's FLOPs), or None when no move
    of a layer does. With interleave the offset is MindFormers' per chunk form, ``offset[chunk][stage]``."""
    if len(stages) < 2:
        return None
    chunks = {len(s.chunk_layers or [0]) for s in stages}
    if len(chunks) != 1:
        return None  # the stages disagree on the chunks: no plan
    v = chunks.pop()
    total = sum(len(s.layers) for s in stages)
    per_layer = sum(s.layer_flops * len(s.layers) for s in stages) / total
    now = [list(s.chunk_layers or [len(s.layers)]) for s in stages]
    counts = [list(c) for c in now]

    def score(c: list[list[int]]) -> tuple:
        peaks = [_peak(s, n) for s, n in zip(stages, c)]
        flops = [_flops(s, n, per_layer) for s, n in zip(stages, c)]
        moved = sum(abs(a - b) for x, y in zip(c, now) for a, b in zip(x, y))
        return (max(peaks), max(flops), moved)

    slots = [(i, k) for i in range(len(stages)) for k in range(v)]
    best = score(counts)
    while True:
        moves = []
        for i, k in slots:
            if counts[i][k] <= 1:
                continue
            for j, m in slots:
                if (i, k) == (j, m):
                    continue
                c = [list(x) for x in counts]
                c[i][k] -= 1
                c[j][m] += 1
                moves.append((score(c), c))
        if not moves:
            break
        found, c = min(moves)
        if found[:2] >= best[:2]:
            break
        best, counts = found, c
    if counts == now:
        return None
    base = total // (len(stages) * v)
    offset: list = (
        [n - base for n in (c[0] for c in counts)]
        if v == 1
        else [[counts[i][k] - base for i in range(len(stages))] for k in range(v)]
    )
    return Plan(
        offset=offset,
        layers_now=[sum(c) for c in now],
        layers_after=[sum(c) for c in counts],
        peak_now=[s.peak_bytes for s in stages],
        peak_after=[_peak(s, n) for s, n in zip(stages, counts)],
        flops_now=[s.flops for s in stages],
        flops_after=[_flops(s, n, per_layer) for s, n in zip(stages, counts)],
    )


def run_stages(files: list[tuple[IRFile, int | None, str]]) -> list[Stage]:
    """The pipeline stages of one run's files ((model, rank, path) each), in stage order: the files of one stage
    (its data-parallel ranks) hold the same layers and are one entry, their ranks listed, figured from the rank
    with the highest peak. None but pipeline files count, and fewer than two stages are no pipeline to show."""
    groups: dict[tuple[int, ...], list[tuple[IRFile, int | None, str]]] = {}
    for ir, rank, path in files:
        report = cached_account(ir)
        if report.micro_batches < 2:
            continue
        layers = tuple(sorted({int(r.layer) for r in report.layers() if r.layer.isdigit()}))
        if layers:
            groups.setdefault(layers, []).append((ir, rank, path))
    if len(groups) < 2:
        return []
    out = []
    for members in groups.values():
        ir, rank, path = max(members, key=lambda m: device_peak(m[0]).bytes)
        stage = stage_of_file(ir, rank, path=path)
        if stage is not None:
            stage.ranks = [m[1] for m in members]
            out.append(stage)
    out.sort(key=lambda s: s.layers[0])
    for i, s in enumerate(out):
        s.index = i
    return out
