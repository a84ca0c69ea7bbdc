"""A finding's headline: one sentence a person reads in one line, in the model's names.

``<op> in <cell path below the layer>, <layers>[ on <ranks>]: <cause>; <cost>; fix: <fix>``
(the cell path as select_recompute writes it, ``feed_forward.w2``; the layers and ranks of every
occurrence of a grouped finding; the bytes summed over them). At most ``MAX`` characters, written
to fit rather than cut: when the whole sentence is too long its parts give way to shorter forms
(the fix's compute price goes, the cause becomes its kind's short phrase, ...), never to an
ellipsis, and the fix stays. Everything else (node ids, printed scopes, the chain) is evidence."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, NamedTuple

from .units import human_bytes, human_flops, spans

if TYPE_CHECKING:
    from .findings import Finding

MAX = 160
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


# each kind of finding in a short phrase: the cause a headline states when the rule's own is too
# long for the line (a redistribution finding by its first waste kind, other findings by code)
SHORT_CAUSE = {
    "gather-then-slice": "gathered, then sliced back",
    "gather-resplit": "gathered, then split on another dim",
    "allreduce-then-slice": "all-reduced, then sliced",
    "alltoall-undone": "an AlltoAll a later one undoes",
    "split-concat-round-trip": "split, then concatenated back",
    "permutation-as-gather": "device axes permuted by a gather",
    "round-trip": "re-laid out and back around one op",
    "alltoall-round-trip": "AlltoAll there and back around one op",
    "gather-compute-slice": "gathered, computed on every rank, sliced",
    "repeated-gather": "one tensor gathered again",
    "full-gather": "input gathered whole on every rank",
    "RC001": "asked to recompute, not recomputed",
    "RC003": "recomputed down-cast keeps its input",
    "RC004": "tagged for recompute, never read",
    "AM001": "one outsized kept tensor",
}
# a Layout fix's definition of its device matrix: ``layout("dp", "mp") of Layout((2, 4), ("dp", "mp"))``
_LAYOUT_DEFINITION = re.compile(r" of Layout\(.*\)\Z")
# a fix's op named with its cell in brackets: ``MatMul mm1 (net) in_strategy ...``
_FIX_CELL = re.compile(r"\A(\w+(?: \w+)?) \([\w.]+\) ")


def short_cause(f: Finding) -> str:
    """The kind's short phrase (a redistribution finding's when its cause names the kind: a root
    cause shared by chains of several kinds keeps its own); the rule's cause when shorter."""
    cause = _cause(f)
    named = [k for k in f.waste_kinds if k in cause or len(f.waste_kinds) == 1 and f.code != "PC001"]
    phrase = next((SHORT_CAUSE[k] for k in (*named, f.code) if k in SHORT_CAUSE), cause)
    return min(cause, phrase, key=len)


def _cause(f: Finding) -> str:
    return (f.cause or f.message.split(". ")[0]).strip().rstrip(".")


class _Form(NamedTuple):
    head: str
    place: str
    cause: str
    price: str
    fix: str

    def text(self) -> str:
        head = f"{self.head}, {self.place}" if self.place else self.head
        return head + ": " + "; ".join(p for p in (self.cause, self.price, self.fix) if p)


def _forms(f: Finding) -> list[_Form]:
    """The sentence's forms from the whole to the shortest, in the order its parts give way: the
    fix's compute price, the cause's second clause, the cause for its kind's phrase, the
    occurrence count, 'per device', the cell path, the cost, the cell named in the fix, a Layout's
    device matrix."""
    cause, price = _cause(f), cost(f)
    spent = compute(f) if f.fix else ""
    fix = f"fix: {f.fix}" if f.fix else ""
    forms = [_Form(what(f), where(f), cause, price, f"{fix} ({spent})" if spent else fix)]

    def give(**part: str) -> None:
        form = forms[-1]._replace(**part)
        if form != forms[-1]:
            forms.append(form)

    give(fix=fix)
    give(cause=cause.split("; ")[0])
    give(cause=short_cause(f))
    give(place=re.sub(r" ?\(?\d+ occurrences\)?\Z", "", forms[-1].place))
    give(price=re.sub(r"\Aup to (.*) per device\Z", r"\1", price))
    give(head=f.op)
    give(price="")
    for short in fix_forms(f.fix)[1:]:
        give(fix=f"fix: {short}")
    return forms


def fix_forms(fix: str) -> list[str]:
    """A fix as a headline may state it, whole first: then without its op's cell, then without a
    Layout's device matrix (both stay in the hint); [] for no fix."""
    if not fix:
        return []
    forms = [fix, _FIX_CELL.sub(r"\1 ", fix)]
    forms.append(_LAYOUT_DEFINITION.sub("", forms[-1]))
    return list(dict.fromkeys(forms))


def headline(f: Finding, limit: int = MAX) -> str:
    """The longest form of the sentence that fits in ``limit`` characters; the shortest form
    when none does (a part cut short would read as a different op or fix)."""
    texts = [form.text() for form in _forms(f)]
    return next((t for t in texts if len(t) <= limit), texts[-1])
