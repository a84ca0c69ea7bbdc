"""A pipeline run's stages side by side (peak device memory, FLOPs per micro batch, micro batches, chunks, the
bubble) and the MindFormers ``offset`` that balances them.

MindFormers places ``num_layers // pp + offset[i]`` decoder layers on stage ``i``. A stage's peak with another
count of layers comes from the device walk of its dump (``accounts.device``): at each point of the execution
order, what is alive splits into a part that scales with the layers (their parameters, optimizer states,
accumulation buffers and constants, and what is made from those alone, like the gradients scaled for the update;
the kept activations and weight copies of the decoder layers, of the micro batch running and of each other one in
flight) and a part that does not (the embedding, head and loss, their gradients, the temporaries of the op
running). The predicted peak is the largest over the points of the fixed
part plus the scaled one, so it follows the peak where it moves: a one-layer first stage peaks at its embedding
gradient, not at the forward/backward turn. The FLOPs per micro batch change by one layer's per layer. The
decoder layers are alike, so one layer's figures are the mean over the dumped layers. The plan moves one layer at
a time from the stage it helps most to the stage it costs least, while the worst stage's peak (then the slowest
stage's FLOPs) goes down.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model import IRFile
from .device import STATIC_PARTS, block, device_peak, walk
from .memory import cached_account

# a point of the walk: (what does not scale with the layers, the decoder layers' kept tensors of the running
# micro batch per chunk, inside the halves, the chunk of the decoder layer running there or -1, what is made
# there from the decoder layers' parameters alone: their gradients scaled for the update, casts, gathers)
Point = tuple[int, tuple[int, ...], bool, int, int]


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
    # the walk's points that can be the peak for some layer counts; per chunk what one layer keeps per micro
    # batch; what the other micro batches in flight hold inside the halves
    points: list[Point] = field(default_factory=list, repr=False)
    chunk_kept_bytes: list[float] = field(default_factory=list)
    others_bytes: int = 0


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


def _row_flops(r) -> int:
    """A cost row's FLOPs per micro batch: forward, backward and recomputed copies, element-wise ones included."""
    return r.step_flops + r.forward_elementwise_flops + r.backward_elementwise_flops + r.recompute_elementwise_flops


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
    total_flops = sum(_row_flops(r) for r in rows)
    layer_flops = sum(_row_flops(r) for r in rows if r.layer.isdigit())
    n = len(layers)
    chunk_layers, chunk_in_flight, chunk_graphs = _chunks(ir, report, len(layers))
    points, chunk_kept, others = _points(ir, report, chunk_layers, chunk_graphs)
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
        points,
        chunk_kept,
        others,
    )


def _points(
    ir: IRFile, report, chunk_layers: list[int], chunk_graphs: list[str]
) -> tuple[list[Point], list[float], int]:
    """The walk of the stage's step split into what scales with its decoder layers and what does not, at each
    point that can be the peak for some layer counts; what one layer of each chunk keeps per micro batch; what
    the other micro batches in flight hold inside the halves."""
    from ..model.layers import layer_of_node

    w = walk(ir, report)
    index = {g: k for k, g in enumerate(chunk_graphs)}
    v = len(chunk_layers)
    chunk_of = {}  # a decoder layer's kept tensor or weight copy -> its chunk
    per_chunk = [0] * v
    for t in (*report.kept, *report.weight_copies):
        if t.layer.isdigit():
            k = index.get(ir[t.tensor.node]["graph"], 0) if v > 1 else 0
            chunk_of[t.tensor] = k
            per_chunk[k] += block(t.nbytes)
    # the stage's layers in order fill its chunks in turn
    layers = sorted({int(t.layer) for t in report.kept if t.layer.isdigit()})
    chunk_of_layer = {str(x): c for c, n in enumerate(chunk_layers) for x in layers[sum(chunk_layers[:c]) :][:n]}
    share = _layer_parameter_share(ir, w.order)
    events: dict[int, list[int]] = {}
    for t, size, a, b in w.lifetimes:
        split = [0] * (v + 2)  # does not scale, each chunk's kept, made from the layers' parameters
        if t in chunk_of:
            split[chunk_of[t] + 1] = size
        else:
            split[v + 1] = round(size * share.get(t.node, 0.0))
            split[0] = size - split[v + 1]
        for at, sign in ((a, 1), (b + 1, -1)):
            row = events.setdefault(at, [0] * (v + 2))
            for slot, x in enumerate(split):
                row[slot] += sign * x
    peak = device_peak(ir, report)  # its static parts: what is alive the whole step
    static = sum(peak.parts[k] for k in STATIC_PARTS)
    live = [0] * (v + 2)
    found: set[Point] = set()
    for i, halves in enumerate(w.in_halves):
        for slot, step in enumerate(events.get(i, ())):
            live[slot] += step
        chunk = chunk_of_layer.get(layer_of_node(ir, w.order[i]), -1)
        found.add((static + live[0], tuple(live[1 : v + 1]), halves, chunk, live[v + 1]))
    # a point no larger in every part than another of its kind is never the peak: drop it
    points: list[Point] = []
    for p in sorted(found, reverse=True):
        if not any(q[2:4] == p[2:4] and q[4] >= p[4] and all(x >= y for x, y in zip(q[1], p[1])) for q in points):
            points.append(p)
    kept = [b / n for b, n in zip(per_chunk, chunk_layers)]
    return points, kept, sum(w.others.values())


def _layer_parameter_share(ir: IRFile, order: list[int]) -> dict[int, float]:
    """The nodes of ``order`` that read parameters and constants alone (a gradient scaled before the update, a
    weight's cast or gather) -> the share of the decoder layers' parameters in the bytes of those parameters."""
    read: dict[int, tuple[int, int] | None] = {}  # node -> (bytes of decoder layers' parameters, of all) read

    def of(n: int, depth: int = 0) -> tuple[int, int] | None:
        if n in read:
            return read[n]
        d = ir[n]
        found: tuple[int, int] | None = None
        if d["kind"] == "param":
            b = (d["out_type"].nbytes or 0) if d.get("has_default") and d.get("out_type") is not None else None
            if b is not None:
                found = (b if _decoder_layer(d.get("name", "")) is not None else 0, b)
        elif d["kind"] == "const" or d.get("op") == "UpdateState":
            found = (0, 0)
        elif d["kind"] == "cnode" and d["op"] not in ("call", "Receive") and depth < 8:  # near parameters only
            ins = list(ir.pred[n])
            if d["op"] == "Depend":
                ins = ins[:1]  # the value; the rest only orders it
            layer = total = 0
            for i in ins:
                got = of(i, depth + 1)
                if got is None:
                    break
                layer, total = layer + got[0], total + got[1]
            else:
                found = (layer, total)
        read[n] = found
        return found

    out = {}
    for n in order:
        got = of(n)
        if got is not None and got[1]:
            out[n] = got[0] / got[1]
    return out


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


def peak_with(s: Stage, counts: list[int]) -> int:
    """The stage's peak with ``counts`` layers per chunk: the largest over the walk's points of what does not
    scale with the layers plus what does: each layer's parameters, states and constants once; inside the halves
    one layer's kept activations and weight copies for each other micro batch of its chunk in flight; and the
    running micro batch's kept tensors of each chunk. Outside a chunk's layers those are all of its layers or
    none: in proportion. Inside them they count the layers alive at the point (a layer runs forward on top of
    the ones before it and frees its own in backward), and the layers are alike: a point with the last layer
    before the turn alive holds the layers added or taken there too, one with fewer alive is as it was, or gone
    with the layers taken."""
    now = s.chunk_layers or [len(s.layers)]
    if not s.points:
        return s.peak_bytes
    held = sum(n - m for n, m in zip(counts, now)) * s.layer_static_bytes

    def others(c: list[int]) -> float:
        return sum(n * (f - 1) * b for n, f, b in zip(c, _in_flight(s, c), s.chunk_kept_bytes))

    in_halves = s.others_bytes + others(counts) - others(now)
    best: float | None = None
    layers = sum(counts) / sum(now)
    for fixed, running, halves, chunk, from_layers in s.points:
        here: float = fixed + (in_halves if halves else 0) + from_layers * layers
        for j, (x, n, m, one) in enumerate(zip(running, counts, now, s.chunk_kept_bytes)):
            alive = x / one if one else 0.0
            if j != chunk:
                here += x * n / m
            elif alive > m - 1 - _SLACK:
                here += x + (n - m) * one
            elif alive > n + _SLACK:
                break  # more layers alive than the chunk will have
            else:
                here += x
        else:
            best = here if best is None or here > best else best
    return round((best if best is not None else s.peak_bytes) + held)


# in layers: a layer's kept tensors differ a little from the mean of the stage's
_SLACK = 0.05


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
        peaks = [peak_with(s, n) for s, n in zip(stages, c)]
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
        peak_after=[peak_with(s, n) for s, n in zip(stages, counts)],
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
