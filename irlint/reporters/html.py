"""One self-contained HTML page (no network, no external file) for a lint, ``irlint memory`` or
``irlint diff``: a summary first, then each finding with its message, the fix as a snippet to
copy, ``file:line``, and its chain drawn as SVG; bar charts of the bytes each layer keeps.
Templates (Jinja2) travel in the package under ``irlint/reporters/templates``."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from pathlib import Path

from .. import __version__
from ..findings import Finding, Report
from ..units import human_bytes, percent_change
from . import RenderContext, ranks_text, rule_classes
from .source import SourceLines
from .svg import ChainNode, bar_chart_svg, chain_svg, legend_svg

TEMPLATES = Path(__file__).resolve().parent / "templates"
COLLECTIVES = frozenset(
    {
        "AllGather",
        "AllReduce",
        "ReduceScatter",
        "AlltoAll",
        "AllToAll",
        "AlltoAllV",
        "Broadcast",
        "Send",
        "Receive",
        "NeighborExchange",
        "CollectivePermute",
    }
)
_RECEIVES = re.compile(r"receives ([\d.,]+ (?:bytes|KiB|MiB|GiB))")
_RANK_DIR = re.compile(r"(?:^|/)rank_(\d+)/")
BEFORE_COLOUR, AFTER_COLOUR, KEPT_COLOUR = "#adb5bd", "#1971c2", "#1971c2"


size = human_bytes  # the one byte formatter of every report (irlint.units)


def environment():
    from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES)),
        autoescape=select_autoescape(["j2", "html"]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["size"] = size
    env.filters["thousands"] = lambda n: f"{n:,}"
    env.filters["signed"] = lambda n: ("+" if n > 0 else "") + size(n) if n else "0"
    env.filters["percent"] = lambda pair: percent_change(*pair)
    return env


def markup(text: str):
    from markupsafe import Markup

    return Markup(text)


# --- a finding's chain -----------------------------------------------------------------------------


class OutputTypes:
    """The output type of a node from its type line (the line after the node's), read by number."""

    def __init__(self, sources: SourceLines):
        self.sources = sources
        self._lines: dict[str, dict[int, str]] = {}

    def prefetch(self, findings: list[Finding]) -> None:
        wanted: dict[str, set[int]] = defaultdict(set)
        for f in findings:
            for file, line in [(f.file, f.line)] + [(r.file, r.line) for r in f.related]:
                if line > 0:
                    wanted[file].add(line + 1)
        for file, numbers in wanted.items():
            self._lines.setdefault(file, {}).update(self.sources.whole_lines(file, numbers))

    def of(self, file: str, line: int):
        from ..read.parser import GrammarError
        from ..read.record import parse_type_line

        text = self._lines.get(file, {}).get(line + 1, "")
        if not text.startswith(":"):
            return None
        try:
            return parse_type_line(text[1:].strip())[1]
        except (GrammarError, ValueError, IndexError):
            return None


def _role(note: str, op: str) -> str:
    """Where a related node goes in the drawing, from how the rule described it."""
    if note.startswith("producer") or note.endswith("input kept for the recompute"):
        return "producer"
    if note.startswith(("consumer", "column-parallel MatMul to change")):
        return "consumer"
    if note.startswith("backward"):
        return "backward"
    if note.startswith(("blocking", "not recomputed")):
        return "blocking"
    # a step of a chain names its op and the types it maps ("StridedSlice Float32(64, 32)->...");
    # other notes name context (the FeedForward's MatMuls), drawn apart
    if note.startswith(op) and re.search(r"\b(?:B?Float|U?Int|Bool|Tuple|Complex)\w*", note):
        return "step"
    return "context"


def _label(t) -> str:
    if t is None:
        return ""
    return f"{t} · {size(t.nbytes)}" if t.nbytes is not None else str(t)


def chain_of(f: Finding, types: OutputTypes, uid: str) -> tuple[str, list[dict]]:
    """The SVG of a finding's chain, and the related nodes not in it (context) as rows."""
    steps = f.waste.steps if f.waste is not None and f.waste.steps else ()
    moved = {s.node: s.moved_bytes for s in steps}
    forward: list[tuple[int, int, ChainNode]] = []
    backward: list[ChainNode] = []
    context: list[dict] = []

    def node(file, line, op, node_id, kind, note, scope) -> ChainNode:
        if kind == "step" and op in COLLECTIVES:
            kind = "comm"
        receives = _RECEIVES.search(note)
        note_text = f"receives {receives.group(1)}" if receives else ""
        if not note_text and moved.get(node_id):
            note_text = f"receives {size(moved[node_id])}"
        return ChainNode(
            op=op,
            sub=f"{node_id} · line {line}",
            kind=kind,
            edge_label=_label(types.of(file, line)),
            edge_note=note_text,
            title=f"{op} {node_id} (line {line}) {note}\n{scope}".strip(),
        )

    order = {"producer": 0, "finding": 1, "step": 1, "blocking": 1, "consumer": 2}
    forward.append((order["finding"], f.line, node(f.file, f.line, f.op, f.node, "finding", "", f.scope)))
    for r in f.related:
        role = _role(r.note, r.op)
        if role == "context":
            context.append({"node": r.node, "op": r.op, "line": r.line, "note": r.note, "scope": r.scope})
        elif role == "backward":
            backward.append(node(r.file, r.line, r.op, r.node, "backward", r.note, r.scope))
        else:
            forward.append(
                (
                    order[role],
                    r.line if r.file == f.file else f.line,
                    node(r.file, r.line, r.op, r.node, role, r.note, r.scope),
                )
            )
    forward.sort(key=lambda x: (x[0], x[1]))
    nodes = [n for _, _, n in forward]
    kept = ""
    if backward and f.bytes_at_stake:
        kept = f"kept for backward: {size(f.bytes_at_stake)}"
    elif backward and not any(n.kind == "consumer" for n in nodes):
        kept = "read by backward"
    return chain_svg(nodes, backward, kept, uid), context


# --- the fix ---------------------------------------------------------------------------------------


def fix_of(f: Finding) -> tuple[str, str]:
    """(what to do, the snippet to paste): the hint, and the finding's ``snippet``; a hint that
    ends with its snippet (the text report shows both) is shown here without it."""
    hint, snippet = f.hint.strip(), f.snippet.rstrip()
    if snippet and hint.endswith(snippet):
        return hint[: -len(snippet)].rstrip("\n"), snippet
    return hint, snippet


def _ranks_of(f: Finding) -> str:
    return ranks_text(f.ranks) if len(f.ranks) > 1 else ""


def comm_bytes(f: Finding) -> int:
    """The communication a finding names as waste per step, as its headline counts it: its
    occurrences' wasted bytes summed per file, the largest file's (one device's) figure."""
    per_file: dict[str, int] = {}
    for o in f.occurrences:
        per_file[o.file] = per_file.get(o.file, 0) + sum(w.bytes for w in o.wasted)
    return max(per_file.values(), default=0)


def finding_views(findings: list[Finding], sources: SourceLines, prefix: str) -> list[dict]:
    types = OutputTypes(sources)
    types.prefetch(findings)
    sources.prefetch_findings(findings)
    out = []
    for i, f in enumerate(findings):
        uid = f"{prefix}{i + 1}"
        svg, context = chain_of(f, types, uid)
        what, snippet = fix_of(f)
        out.append(
            {
                "id": uid,
                "f": f,
                "svg": markup(svg),
                "context": context,
                "fix": what,
                "snippet": snippet,
                "location": f"{f.file}:{f.line}",
                "ranks": _ranks_of(f),
                "source": sources.line(f.file, f.line),
                "memory": f.bytes_at_stake or 0,
                "comm": comm_bytes(f),
            }
        )
    return out


def rule_rows(findings: list[Finding], rules: list) -> list[dict]:
    names = {c.code: c for c in rules}
    counts = Counter(f.code for f in findings)
    rows = []
    for code, n in sorted(counts.items()):
        cls = names.get(code)
        mine = [f for f in findings if f.code == code]
        rows.append(
            {
                "code": code,
                "name": cls.name if cls else mine[0].rule,
                "summary": cls.summary if cls else "",
                "count": n,
                "severity": mine[0].severity,
                "memory": sum(f.bytes_at_stake or 0 for f in mine),
                "comm": sum(comm_bytes(f) for f in mine),
            }
        )
    return rows


def ranks_of_files(files: list[str]) -> str:
    ranks = sorted({int(m.group(1)) for f in files for m in [_RANK_DIR.search(f.replace("\\", "/"))] if m})
    if not ranks:
        return ""
    return ranks_text(tuple(ranks)) if len(ranks) > 1 else f"rank {ranks[0]}"


def layer_name(layer: str) -> str:
    return f"layer {layer}" if layer.isdigit() else layer


def per_layer_chart(layers: list[dict], series: list[tuple[str, str, str]], unit=size) -> str:
    """The bar chart of a file's per-layer rows: (name, colour, field of the row) per series; no
    chart without rows."""
    if not layers:
        return ""
    return bar_chart_svg(
        [layer_name(row["layer"]) for row in layers],
        [(name, colour, [row[key] for row in layers]) for name, colour, key in series],
        unit,
    )


def _costliest_first(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (-(f.bytes_at_stake or 0) - comm_bytes(f), f.file, f.line))


# --- the three pages -------------------------------------------------------------------------------


def render(report: Report, ctx: RenderContext) -> str:
    findings = _costliest_first(report.findings)
    views = finding_views(findings, ctx.sources, "f")
    rows = rule_rows(findings, rule_classes(report, ctx))
    chart = ""
    if any(r["memory"] or r["comm"] for r in rows):
        chart = bar_chart_svg(
            [r["code"] for r in rows], [("bytes at stake", KEPT_COLOUR, [r["memory"] + r["comm"] for r in rows])], size
        )
    from ..accounts.memory import layer_of

    per_layer: dict[str, int] = {}
    for f in findings:
        for o in f.occurrences:  # each occurrence under the layer the graph resolved
            if o.bytes_at_stake:
                layer = o.layer or layer_of(o.scope)
                per_layer[layer] = per_layer.get(layer, 0) + o.bytes_at_stake
    layers = sorted(per_layer, key=lambda name: (name == "outside", int(name) if name.isdigit() else 0))
    layer_chart = (
        bar_chart_svg(
            [layer_name(name) for name in layers],
            [("activations at stake", KEPT_COLOUR, [per_layer[name] for name in layers])],
            size,
        )
        if layers
        else ""
    )
    from ..fixplan import fix_plan, is_empty, plan_text

    plan = fix_plan(report.findings, fingerprints=False)
    return (
        environment()
        .get_template("lint.html.j2")
        .render(
            title="irlint report",
            version=__version__,
            report=report,
            findings=views,
            rules=rows,
            fix_plan="" if is_empty(plan) else plan_text(plan),
            layer_chart=markup(layer_chart),
            ranks=ranks_of_files(report.files),
            legend=markup(legend_svg()),
            rule_chart=markup(chart),
            memory_total=sum(v["memory"] for v in views),
            comm_total=sum(v["comm"] for v in views),
            baselined=ctx.baselined,
        )
    )


def render_memory(entries: list[dict], problems: list, counted: str, budget: int | None = None) -> str:
    from .account_lines import AT_STAKE_NOTE, largest_device, memory_headline, rule_codes
    from .device_lines import device_headline, device_rows
    from .tables import graph_groups, same_label

    files = []
    for g in graph_groups(entries):  # one section per distinct graph (ranks that hold it share it)
        e = g[0]
        chart = per_layer_chart(e["layers"], [("kept bytes", KEPT_COLOUR, "kept_bytes")])
        files.append({"e": e, "same": same_label(g), "chart": markup(chart)})
    return (
        environment()
        .get_template("memory.html.j2")
        .render(
            title="irlint memory",
            version=__version__,
            files=files,
            read=len(entries),
            problems=problems,
            counted=counted,
            largest=largest_device(entries),
            headline=memory_headline(entries),
            device_headline=device_headline(entries, budget),
            device_rows=device_rows(entries) if len(entries) > 1 else [],
            codes=rule_codes(entries),
            at_stake_note=AT_STAKE_NOTE,
            ranks=ranks_text(tuple(e["rank"] for e in entries if e["rank"] is not None))
            if any(e["rank"] is not None for e in entries)
            else "",
        )
    )


def render_diff(result) -> str:
    from ..findings import FAILING_SEVERITIES
    from ..runner.diff import rank_groups, rank_label, unmatched_label

    sources = SourceLines()
    sections = []
    for name, findings, prefix in (
        ("new", result.new, "n"),
        ("fixed", result.fixed, "f"),
        ("unchanged", result.unchanged, "u"),
        ("fixed? (not verified)", result.unverified_fixed, "v"),
        ("new? (not verified)", result.unverified_new, "w"),
    ):
        sections.append({"name": name, "findings": finding_views(_costliest_first(findings), sources, prefix)})
    groups = []
    for members, r in rank_groups(result.ranks):
        chart = per_layer_chart(
            r.memory["layers"], [("before", BEFORE_COLOUR, "before"), ("after", AFTER_COLOUR, "after")]
        )
        for side in ("before", "after"):
            for x in r.nodes[f"{side}_only_nodes"]:
                x["label"] = unmatched_label(x)
        comm = r.communication
        comm_chart = (
            bar_chart_svg(
                [k["kind"] for k in comm["kinds"]],
                [
                    ("before", BEFORE_COLOUR, [k["before"] for k in comm["kinds"]]),
                    ("after", AFTER_COLOUR, [k["after"] for k in comm["kinds"]]),
                ],
                size,
            )
            if comm and comm["kinds"]
            else ""
        )
        groups.append(
            {
                "label": rank_label(members),
                "alike": len(members) - 1,
                "r": r,
                "chart": markup(chart),
                "comm_chart": markup(comm_chart),
            }
        )
    failing = [f for f in result.new if f.severity in FAILING_SEVERITIES]
    kept_before = sum(r.memory["before_total"] for r in result.ranks)
    kept_after = sum(r.memory["after_total"] for r in result.ranks)
    verdict = (
        f"{len(failing)} new finding{'s' if len(failing) != 1 else ''}: the change made something worse"
        if failing
        else "No new finding"
    )
    verdict += (
        f"; {len(result.fixed)} fixed; activations kept for backward {size(kept_before)} → {size(kept_after)}"
        f" ({percent_change(kept_before, kept_after)})"
        if kept_after != kept_before
        else f"; {len(result.fixed)} fixed; activations kept for backward unchanged ({size(kept_after)})"
    )
    return (
        environment()
        .get_template("diff.html.j2")
        .render(
            title="irlint diff",
            version=__version__,
            d=result,
            sections=sections,
            groups=groups,
            verdict=verdict,
            failing=bool(failing),
            legend=markup(legend_svg()),
            kept_before=kept_before,
            kept_after=kept_after,
            comm_before=sum((r.communication or {}).get("before_total", 0) for r in result.ranks),
            comm_after=sum((r.communication or {}).get("after_total", 0) for r in result.ranks),
            comm_fixed=sum(comm_bytes(f) for f in result.fixed),
            comm_new=sum(comm_bytes(f) for f in result.new),
        )
    )
