"""Full-depth projection: a dump made with fewer decoder layers (as the tuning guide advises, to keep
compiles short) scaled to the depth of the model that runs.

The dumped layers repeat in order: with D dumped layers and N projected, projected layer j has the
figures of dumped layer ``j·D // N`` (each dumped layer stands for a block of N/D consecutive layers,
so a dump whose layers differ, e.g. recomputed or not, keeps their proportion and order; fewer
layers than dumped are the first N). Rows
outside the decoder layers (embedding, final norm, head, loss) are counted once. The files of the
pipeline stages of one run share N in proportion to the layers each holds (``stage_depths``).
"""

from __future__ import annotations


def layer_blocks(dumped: list[str], layers: int) -> list[tuple[int, int, str]]:
    """(first, last, dumped layer) of each block of projected layers, in order. Fewer layers than
    were dumped: the first ones, each once (a shallower model holds layers 0 to N-1; every D/N-th
    would skip the layers between)."""
    d = len(dumped)
    if layers < d:
        return [(i, i, name) for i, name in enumerate(dumped[:layers])]
    out = []
    for i, name in enumerate(dumped):
        first = -(-i * layers // d)  # ceil(i·N/D): the first j with j·D // N == i
        last = -(-(i + 1) * layers // d) - 1
        if last >= first:
            out.append((first, last, name))
    return out


def project(rows: list[dict], fields: tuple[str, ...], layers: int, first: int = 0) -> dict | None:
    """The figures ``fields`` of per-layer ``rows`` (each with a "layer" name) projected to
    ``layers`` decoder layers numbered from ``first`` (a later pipeline stage's); None when the rows
    hold no decoder layer."""
    dumped = sorted((r for r in rows if str(r["layer"]).isdigit()), key=lambda r: int(r["layer"]))
    once = [r for r in rows if not str(r["layer"]).isdigit()]
    if not dumped:
        return None
    by_name = {r["layer"]: r for r in dumped}
    blocks = []
    totals = {f: sum(r.get(f) or 0 for r in once) for f in fields}
    for start, last, name in layer_blocks([r["layer"] for r in dumped], layers):
        count = last - start + 1
        row = by_name[name]
        start, last = start + first, last + first
        blocks.append(
            {
                "layers": f"{start}-{last}" if last > start else str(start),
                "count": count,
                "from_layer": name,
                **{f: row.get(f) or 0 for f in fields},
            }
        )
        for f in fields:
            totals[f] += count * (row.get(f) or 0)
    return {
        "projected": True,
        "layers": layers,
        "dumped_layers": len(dumped),
        "blocks": blocks,
        "once": {f: sum(r.get(f) or 0 for r in once) for f in fields},
        "totals": totals,
    }


def stage_depths(layer_sets: list[set[str]], layers: int, per_stage: list[int] | None = None) -> list[tuple[int, int]]:
    """(projected depth, number of its first layer) of each file of one run, given the model's depth
    ``layers``: a file holding every dumped layer (data and tensor parallel ranks) gets all of them;
    the files of pipeline stages (disjoint sets of layers) share them in proportion to the layers
    each holds, in layer order, every rank of one stage alike; or, with ``per_stage`` (the layers
    of each stage, from the config) for as many stages as the dump shows, as it says."""
    union = set().union(*layer_sets) if layer_sets else set()
    stages = sorted({frozenset(s) for s in layer_sets if s}, key=lambda s: min(int(x) for x in s))
    if len(stages) < 2 or sum(len(s) for s in stages) != len(union):
        return [(layers, 0)] * len(layer_sets)  # one stage, or overlapping sets: not a pipeline split
    if per_stage is not None and len(per_stage) != len(stages):
        per_stage = None
    shares: dict[frozenset, tuple[int, int]] = {}
    given = 0
    for i, s in enumerate(stages):
        n = (
            per_stage[i]
            if per_stage is not None
            else layers - given
            if i == len(stages) - 1
            else round(layers * len(s) / len(union))
        )
        shares[s] = (n, given)
        given += n
    return [shares.get(frozenset(s), (layers, 0)) for s in layer_sets]


def stage_count(layer_sets: list[set[str]]) -> int:
    """How many pipeline stages the files of one run show (disjoint sets of layers), 1 for none."""
    union = set().union(*layer_sets) if layer_sets else set()
    stages = {frozenset(s) for s in layer_sets if s}
    return len(stages) if len(stages) > 1 and sum(len(s) for s in stages) == len(union) else 1
