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


@dataclass
class Plan:
    offset: list[int]
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
    )


def _peak(s: Stage, layers: int) -> int:
    return round(s.peak_bytes + (layers - len(s.layers)) * (s.layer_static_bytes + s.in_flight * s.layer_kept_bytes))


def _flops(s: Stage, layers: int, per_layer: float) -> int:
    return round(s.flops + (layers - len(s.layers)) * per_layer)


def plan_offset(stages: list[Stage]) -> Plan | None:
    """The offset that lowers the worst stage's peak (then the slowest stage's FLOPs), or None when no move
    of a layer does (or the stages hold several chunks each: interleave's offsets are per chunk)."""
    if len(stages) < 2 or any(s.chunks > 1 for s in stages):
        return None
    total = sum(len(s.layers) for s in stages)
    per_layer = sum(s.layer_flops * len(s.layers) for s in stages) / total
    now = [len(s.layers) for s in stages]
    counts = list(now)

    def score(c: list[int]) -> tuple:
        peaks = [_peak(s, n) for s, n in zip(stages, c)]
        flops = [_flops(s, n, per_layer) for s, n in zip(stages, c)]
        return (max(peaks), max(flops), sum(abs(a - b) for a, b in zip(c, now)))

    best = score(counts)
    while True:
        moves = []
        for i in range(len(stages)):
            for j in range(len(stages)):
                if i == j or counts[i] <= 1:
                    continue
                c = list(counts)
                c[i] -= 1
                c[j] += 1
                moves.append((score(c), c))
        if not moves:
            break
        found, c = min(moves)
        if found[:2] >= best[:2]:
            break
        best, counts = found, c
    if counts == now:
        return None
    base = total // len(stages)
    return Plan(
        offset=[n - base for n in counts],
        layers_now=now,
        layers_after=counts,
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
