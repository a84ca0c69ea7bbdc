"""Full-depth projection: a dump made with fewer decoder layers (as the tuning guide advises, to keep
compiles short) scaled to the depth of the model that runs.

The dumped layers repeat in order: with D dumped layers and N projected, projected layer j has the
figures of dumped layer ``j·D // N`` (each dumped layer stands for a block of N/D consecutive layers,
so a dump whose layers differ, e.g. recomputed or not, keeps their proportion and order). Rows
outside the decoder layers (embedding, final norm, head, loss) are counted once. A pipeline stage's
file holds its own layers: N is then the layers of that stage.
"""
from __future__ import annotations


def layer_blocks(dumped: list[str], layers: int) -> list[tuple[int, int, str]]:
    """(first, last, dumped layer) of each block of projected layers, in order."""
    d = len(dumped)
    out = []
    for i, name in enumerate(dumped):
        first = -(-i * layers // d)          # ceil(i·N/D): the first j with j·D // N == i
        last = -(-(i + 1) * layers // d) - 1
        if last >= first:
            out.append((first, last, name))
    return out


def project(rows: list[dict], fields: tuple[str, ...], layers: int) -> dict | None:
    """The figures ``fields`` of per-layer ``rows`` (each with a "layer" name) projected to
    ``layers`` decoder layers; None when the rows hold no decoder layer."""
    dumped = sorted((r for r in rows if str(r["layer"]).isdigit()), key=lambda r: int(r["layer"]))
    once = [r for r in rows if not str(r["layer"]).isdigit()]
    if not dumped:
        return None
    by_name = {r["layer"]: r for r in dumped}
    blocks = []
    totals = {f: sum(r.get(f) or 0 for r in once) for f in fields}
    for first, last, name in layer_blocks([r["layer"] for r in dumped], layers):
        count = last - first + 1
        row = by_name[name]
        blocks.append({"layers": f"{first}-{last}" if last > first else str(first), "count": count,
                       "from_layer": name, **{f: row.get(f) or 0 for f in fields}})
        for f in fields:
            totals[f] += count * (row.get(f) or 0)
    return {"projected": True, "layers": layers, "dumped_layers": len(dumped), "blocks": blocks,
            "once": {f: sum(r.get(f) or 0 for r in once) for f in fields}, "totals": totals}
