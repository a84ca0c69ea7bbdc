"""A finding's headline: one sentence a person reads in one line, in the model's names.

``<op> in <cell path below the layer>, <layers>[ on <ranks>]: <cause>; <cost>; fix: <fix>``
(the cell path as select_recompute writes it, ``feed_forward.w2``; the layers and ranks of every
occurrence of a grouped finding; the bytes summed over them). At most ``MAX`` characters: the
cause is cut first, then the fix. Everything else (node ids, printed scopes, the chain) is evidence."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .units import human_bytes, human_flops, spans

if TYPE_CHECKING:
    from .findings import Finding

MAX = 160
CAUSE_MIN = 30  # characters of the cause worth keeping over the fix
_LAYER_IN_PATH = re.compile(r"(?:\A|\.)(\d+)(?:\.|\Z)")


def layers_text(layers: tuple[str, ...]) -> str:
    """('0', '1', '2', '5') -> 'layers 0–2, 5'; 'outside the layers'; '' when none is known."""
    numbers = [int(x) for x in layers if x.isdigit()]
    outside = any(not x.isdigit() for x in layers)
    if not numbers:
        return ""  # the cell path says where
    parts = spans(numbers)
    if len(parts) > 4:  # a scatter of layers: how many, and their range
        text = f"{len(numbers)} layers in {min(numbers)}–{max(numbers)}"
    else:
        text = ("layer " if len(numbers) == 1 else "layers ") + ", ".join(parts)
    return text + (" and outside them" if outside else "")


def below_layer(model_path: str) -> str:
    """``model.layers.3.feed_forward.w2`` -> ``feed_forward.w2``: the path as select_recompute
    keys write it (the layer's own cells); the whole path outside the layers."""
    found = list(_LAYER_IN_PATH.finditer(model_path))
    return model_path[found[-1].end() :] if found else model_path


def what(f: Finding) -> str:
    path = below_layer(f.model_path)
    return f"{f.op} in {path}" if path else f.op


def where(f: Finding) -> str:
    """'layers 0–29 on ranks 0–3' (what the occurrences share), '' when nothing is known."""
    text = layers_text(f.layers)
    ranks = sorted({r for o in f.occurrences for r in o.ranks})
    if len(ranks) > 1:
        text += (" on " if text else "on ") + "ranks " + ", ".join(spans(ranks))
    copies = len(f.occurrences)
    named = len([x for x in f.layers if x.isdigit()])
    if copies > 1 and copies != named:
        text += f" ({copies} occurrences)" if text else f"{copies} occurrences"
    return text


def cost(f: Finding) -> str:
    """Activation bytes kept (summed over the occurrences of a file: one device's), or
    communication received for nothing per step. Occurrences in several files (pipeline stages,
    other devices) are not summed: the largest file's figure is the one a device holds."""
    kept: dict[str, int] = {}
    waste: dict[str, int] = {}
    moved = "/step received" if f.waste is not None and f.waste.received else "/step wasted"
    for o in f.occurrences:
        if o.bytes_at_stake is not None:
            kept[o.file] = kept.get(o.file, 0) + o.bytes_at_stake
        if o.waste is not None:
            waste[o.file] = waste.get(o.file, 0) + o.waste.bytes
    if kept:
        return _per_device(kept, "kept")
    return _per_device(waste, moved) if any(waste.values()) else ""


def compute(f: Finding) -> str:
    """What a recompute fix re-spends per step (``fix_cost``), summed over the occurrences
    of a file as the bytes are; the largest file's figure: ``+3.1 MFLOP/step, 0.2%``."""
    spent: dict[str, list[int]] = {}
    for o in f.occurrences:
        c = o.fix_cost
        if c is not None:
            row = spent.setdefault(o.file, [0, c.step_flops or 0])
            row[0] += c.flops or 0
    if not spent:
        return ""
    flops, step = max(spent.values())
    pct = 100 * flops / step if step else 0.0
    return f"+{human_flops(flops)}/step, " + (f"{pct:.1f}%" if pct >= 0.1 else "<0.1%" if flops else "0%")


def _per_device(per_file: dict[str, int], what: str) -> str:
    text = human_bytes(max(per_file.values())) + ("" if what.startswith("/") else " ") + what
    return f"up to {text} per device" if len(per_file) > 1 else text


def _cut(text: str, room: int) -> str:
    if len(text) <= room:
        return text
    return text[: max(room - 1, 0)].rstrip(" ,;:") + "…" if room > 1 else ""


def headline(f: Finding, limit: int = MAX) -> str:
    head = what(f)
    place = where(f)
    if place:
        head += f", {place}"
    cause = (f.cause or f.message.split(". ")[0]).strip().rstrip(".")
    spent = compute(f) if f.fix else ""
    tail = [t for t in (cost(f), f"fix: {f.fix}" + (f" ({spent})" if spent else "") if f.fix else "") if t]

    def room(parts: list[str]) -> int:
        return limit - len(head) - 2 - sum(len(t) + 2 for t in parts)

    # the cause is cut first; when that leaves it too little, the fix's compute price goes, then
    # the fix whole (the hint has both)
    if spent and room(tail) < CAUSE_MIN and len(cause) > room(tail):
        tail[-1] = f"fix: {f.fix}"
    if f.fix and room(tail) < CAUSE_MIN and len(cause) > room(tail):
        tail = tail[:-1]
    parts = [_cut(cause, max(room(tail), 20)), *tail]
    return _cut(f"{head}: " + "; ".join(p for p in parts if p), limit)
