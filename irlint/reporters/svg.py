"""Drawings of the HTML report as inline SVG, made here from plain data (no external binary, no
script): a finding's chain of nodes, and bar charts of bytes per layer."""

from __future__ import annotations

from dataclasses import dataclass
from xml.sax.saxutils import escape

from ..units import human_bytes

NODE_W, NODE_H, GAP, ROW_GAP, PAD = 136, 48, 124, 70, 12
V_GAP = 58  # between rows of the vertical layout
MAX_ACROSS = 5  # longer chains are drawn top to bottom, so the page need not scroll sideways
FONT = 'font-family="ui-sans-serif, system-ui, sans-serif"'


@dataclass
class ChainNode:
    """One box of a chain: op and where it is, what kind of node it is, and what it outputs."""

    op: str
    sub: str  # "%12 · line 77"
    kind: str  # producer, finding, step, comm, blocking, consumer, backward
    edge_label: str = ""  # the tensor it hands to the next node: "Float32(8, 32) · 1.0 KiB"
    edge_note: str = ""  # what the hand-over costs: "receives 7.0 KiB"
    title: str = ""  # tooltip: the full note and scope


STYLE = {  # fill, stroke, text colour
    "producer": ("#eef4ff", "#4a6fa5", "#1c2b40"),
    "consumer": ("#eef4ff", "#4a6fa5", "#1c2b40"),
    "finding": ("#fff3e0", "#d9480f", "#5c1f00"),
    "step": ("#f8f9fa", "#868e96", "#212529"),
    "comm": ("#e7f5ff", "#1971c2", "#0b3a66"),
    "blocking": ("#fff5f5", "#c92a2a", "#5c0f0f"),
    "backward": ("#f3f0ff", "#6741d9", "#2b1a66"),
    "context": ("#ffffff", "#ced4da", "#495057"),
}
LEGEND = (
    ("finding", "the finding's node"),
    ("comm", "communication"),
    ("blocking", "not recomputed: blocks"),
    ("backward", "backward pass"),
    ("producer", "producer / consumer"),
)


def _text(
    x: float, y: float, text: str, size: int = 12, weight: str = "normal", fill: str = "#212529", anchor: str = "middle"
) -> str:
    return (
        f'<text x="{x:.0f}" y="{y:.0f}" font-size="{size}" font-weight="{weight}" fill="{fill}" '
        f'text-anchor="{anchor}" {FONT}>{escape(text)}</text>'
    )


def _clip(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[: chars - 1] + "…"


def _box(x: float, y: float, node: ChainNode) -> str:
    fill, stroke, ink = STYLE.get(node.kind, STYLE["step"])
    dash = ' stroke-dasharray="6 3"' if node.kind == "blocking" else ""
    width = 3 if node.kind in ("finding", "blocking") else 1.5
    parts = [
        f'<g class="chain-node chain-{node.kind}"><title>{escape(node.title or node.op)}</title>',
        f'<rect x="{x:.0f}" y="{y:.0f}" width="{NODE_W}" height="{NODE_H}" rx="7" fill="{fill}" '
        f'stroke="{stroke}" stroke-width="{width}"{dash}/>',
        _text(x + NODE_W / 2, y + 20, _clip(node.op, 20), 13, "bold", ink),
        _text(x + NODE_W / 2, y + 37, _clip(node.sub, 24), 11, "normal", ink),
    ]
    if node.kind == "blocking":
        parts.append(_text(x + NODE_W / 2, y - 5, "not recomputed", 10, "bold", "#c92a2a"))
    parts.append("</g>")
    return "".join(parts)


def _arrow(
    x1: float, y1: float, x2: float, y2: float, marker: str, colour: str = "#495057", dashed: bool = False
) -> str:
    dash = ' stroke-dasharray="5 4"' if dashed else ""
    return (
        f'<line x1="{x1:.0f}" y1="{y1:.0f}" x2="{x2:.0f}" y2="{y2:.0f}" stroke="{colour}" stroke-width="1.6"'
        f'{dash} marker-end="url(#{marker})"/>'
    )


def _edge_label(x: float, y: float, node: ChainNode, anchor: str = "middle") -> list[str]:
    """The tensor a node hands on (type, then bytes) above the arrow; what it costs under it."""
    kind, _, nbytes = node.edge_label.partition(" · ")
    out = [
        _text(x, y - 18, _clip(kind, 22), 10, "normal", "#343a40", anchor),
        _text(x, y - 6, nbytes, 10, "normal", "#343a40", anchor),
    ]
    if node.edge_note:
        out.append(_text(x, y + 15, _clip(node.edge_note, 22), 10, "bold", "#1971c2", anchor))
    return out


def _svg_open(width: float, height: float, n: int, marker: str) -> list[str]:
    return [
        f'<svg class="chain" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width:.0f} {height:.0f}" '
        f'width="{width:.0f}" height="{height:.0f}" role="img" aria-label="chain of {n} nodes">',
        f'<defs><marker id="{marker}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#495057"/></marker></defs>',
    ]


def chain_svg(forward: list[ChainNode], backward: list[ChainNode], kept_label: str = "", uid: str = "c") -> str:
    """Forward nodes left to right; the backward nodes under them, right to left (the transpose
    runs the other way); a dashed arrow down where backward reads what the forward chain keeps.
    A chain longer than ``MAX_ACROSS`` is drawn top to bottom: forward on the left, backward on
    the right."""
    marker = f"arrow-{uid}"
    if max(len(forward), len(backward)) > MAX_ACROSS:
        return _chain_down(forward, backward, kept_label, marker)
    cols = max(len(forward), len(backward), 1)
    width = PAD * 2 + cols * NODE_W + (cols - 1) * GAP + (150 if backward else 0)
    top = PAD + 14
    height = top + NODE_H + (ROW_GAP + NODE_H if backward else 0) + PAD + 6
    out = _svg_open(width, height, len(forward) + len(backward), marker)
    xs = [PAD + i * (NODE_W + GAP) for i in range(cols)]
    for i, node in enumerate(forward):
        out.append(_box(xs[i], top, node))
        if i + 1 < len(forward):
            x1, x2, y = xs[i] + NODE_W, xs[i + 1], top + NODE_H / 2
            out.append(_arrow(x1 + 2, y, x2 - 2, y, marker))
            out.extend(_edge_label((x1 + x2) / 2, y, node))
    if backward:
        y = top + NODE_H + ROW_GAP
        # right to left, starting under the last forward node
        start = cols - 1
        for j, node in enumerate(backward):
            col = start - j
            out.append(_box(xs[col], y, node))
            if j + 1 < len(backward):
                x1, x2, ym = xs[col], xs[col - 1] + NODE_W, y + NODE_H / 2
                out.append(_arrow(x1 - 2, ym, x2 + 2, ym, marker, "#6741d9"))
                out.extend(_edge_label((x1 + x2) / 2, ym, node))
        if forward:
            src = xs[len(forward) - 1] + NODE_W / 2
            dst = xs[start] + NODE_W / 2
            out.append(_arrow(src, top + NODE_H + 2, dst, y - 3, marker, "#6741d9", dashed=True))
            out.append(
                _text(src + 8, top + NODE_H + ROW_GAP / 2 + 4, kept_label or "backward", 10, "bold", "#6741d9", "start")
            )
    out.append("</svg>")
    return "".join(out)


def _chain_down(forward: list[ChainNode], backward: list[ChainNode], kept_label: str, marker: str) -> str:
    rows = max(len(forward), len(backward))
    left, label_w = PAD, 170
    right = left + NODE_W + label_w + 40
    width = right + (NODE_W + label_w if backward else 0) + PAD
    top = PAD + 14
    height = top + rows * NODE_H + (rows - 1) * V_GAP + PAD + 6
    out = _svg_open(width, height, len(forward) + len(backward), marker)
    ys = [top + i * (NODE_H + V_GAP) for i in range(rows)]
    for column, nodes, colour in ((left, forward, "#495057"), (right, backward, "#6741d9")):
        for i, node in enumerate(nodes):
            out.append(_box(column, ys[i], node))
            if i + 1 < len(nodes):
                x, y1, y2 = column + NODE_W / 2, ys[i] + NODE_H, ys[i + 1]
                out.append(_arrow(x, y1 + 2, x, y2 - 2, marker, colour))
                out.extend(_edge_label(x + 10, (y1 + y2) / 2 + 10, node, "start"))
    if forward and backward:
        last = ys[len(forward) - 1] + NODE_H / 2
        out.append(_arrow(left + NODE_W + 2, last, right - 2, ys[0] + NODE_H / 2, marker, "#6741d9", dashed=True))
        label = kept_label or "backward"
        out.append(_text(left + NODE_W + 14, last + 16, label, 10, "bold", "#6741d9", "start"))
    out.append("</svg>")
    return "".join(out)


def legend_svg() -> str:
    width = len(LEGEND) * 190
    out = [
        f'<svg class="legend" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} 24" width="{width}" '
        f'height="24" role="img" aria-label="legend">'
    ]
    for i, (kind, label) in enumerate(LEGEND):
        fill, stroke, _ = STYLE[kind]
        dash = ' stroke-dasharray="4 2"' if kind == "blocking" else ""
        x = i * 190
        out.append(
            f'<rect x="{x + 2}" y="4" width="22" height="15" rx="3" fill="{fill}" stroke="{stroke}" '
            f'stroke-width="2"{dash}/>'
        )
        out.append(_text(x + 30, 16, label, 11, "normal", "#343a40", "start"))
    out.append("</svg>")
    return "".join(out)


def bar_chart_svg(labels: list[str], series: list[tuple[str, str, list[int]]], unit=human_bytes) -> str:
    """Horizontal bars, one group per label; ``series`` is (name, colour, values) (one series: a
    plain chart; two: before and after side by side)."""
    bar_h, gap, right = 16, 10, 130
    left = min(170, max(70, 7 * max([len(label) for label in labels] + [0]) + 18))  # room for the labels
    inner = 520
    top = 26 if len(series) > 1 else 6
    group_h = bar_h * len(series) + gap
    height = top + group_h * max(len(labels), 1) + 6
    peak = max([v for _, _, values in series for v in values] + [1])
    width = left + inner + right
    out = [
        f'<svg class="bars" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img" aria-label="bar chart: {len(labels)} rows">'
    ]
    if len(series) > 1:
        for i, (name, colour, _) in enumerate(series):
            out.append(f'<rect x="{left + i * 110}" y="6" width="14" height="12" fill="{colour}"/>')
            out.append(_text(left + i * 110 + 20, 16, name, 11, "normal", "#343a40", "start"))
    for i, label in enumerate(labels):
        y0 = top + i * group_h
        out.append(_text(left - 8, y0 + bar_h * len(series) / 2 + 4, _clip(label, 22), 12, "normal", "#212529", "end"))
        for j, (name, colour, values) in enumerate(series):
            value = values[i]
            w = inner * value / peak
            y = y0 + j * bar_h
            out.append(
                f'<rect class="bar" x="{left}" y="{y}" width="{max(w, 0.5):.1f}" height="{bar_h - 2}" '
                f'fill="{colour}"><title>{escape(label)} {escape(name)}: {escape(unit(value))}</title></rect>'
            )
            out.append(_text(left + w + 6, y + bar_h - 5, unit(value), 11, "normal", "#343a40", "start"))
    out.append("</svg>")
    return "".join(out)
