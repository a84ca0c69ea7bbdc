"""The fix plan of a run: one document that resolves every finding at once, built from the
findings alone (so a report read from the cache has it too).

Recompute: the select_recompute keys to ADD to the user's own (never a replacement list; only a
one-op cell's key is taken out, ``replace``, for its primitive's key, which it overrides), each
with the layers whose findings need it; under a pipeline whose stages the run shows, MindFormers'
per-stage form (key -> number of layers per stage, counted from the first layer of each stage:
the last blocked layer of a stage decides its count); the ops no key can tag, with their model
line. Strategies: each op's new in_strategy as its ``shard()`` line, with the model line that
creates the op. Configuration: the config keys that remove a root cause of re-layouts
(``Fixes.root_cause``) or make an expert-parallel re-layout one AlltoAll
(``set_auto_parallel_context``, MindFormers' ``parallel`` section), each marked as ``irlint fix``
writes it or only prints it. Layouts: the device-axis order of a Layout (and the tuple of an op
MindSpore will not shard with one), changed in the model code. By hand: every other finding with a
fix, with its op and model line, so that a finding that has a fix is never missing from the plan.
The plan is a fold over the findings' ``fixes`` (irlint.findings.Fixes). The contract is
``tests/fixtures/schemas/irlint-fix-plan-1.json``; ``irlint fix`` applies it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from .findings import Finding, RootFix, SourceLine

PLAN_VERSION = 1


def fix_plan(findings: list[Finding], fingerprints: bool = True) -> dict[str, Any]:
    """The plan of ``findings``: ``{"version", "recompute", "strategies", "resolves"}`` (see the
    schema); empty lists where nothing is to change. Without ``fingerprints`` (the text and HTML
    reports, which show none) the lists of findings stay empty: a default lint loads no hashlib."""

    def mark(f: Finding) -> str:
        return f.fingerprint if fingerprints else ""

    keys: dict[str, dict[str, Any]] = {}
    replace: dict[str, dict[str, Any]] = {}
    no_key: list[dict[str, Any]] = []
    spans: set[tuple[int, ...]] = set()
    pipeline = False
    resolved: list[str] = []
    strategies: list[dict[str, Any]] = []
    seen_shards: set[tuple[Any, ...]] = set()
    config: dict[str, dict[str, Any]] = {}
    pipeline_plan: dict[str, Any] | None = None
    layouts: dict[tuple[Any, ...], dict[str, Any]] = {}
    by_hand: dict[tuple[Any, ...], dict[str, Any]] = {}
    # a finding grouped by root cause stands for one occurrence per layer: each names its own layer
    for f in (o for g in findings for o in g.occurrences):
        fixes = f.fixes
        planned = len(resolved)
        need = fixes.recompute
        if need is not None:
            span = need.stage_layers
            if span:
                spans.add(span)
            pipeline |= f.stake is not None and f.stake.micro_batches > 1
            for key in need.keys:
                entry = keys.setdefault(
                    key, {"key": key, "layers": set(), "by_span": {}, "findings": [], "applied": True}
                )
                entry["applied"] &= key in need.applied
                if need.layer is not None:
                    entry["layers"].add(need.layer)
                    entry["by_span"].setdefault(span, set()).add(need.layer)
                entry["findings"].append(mark(f))
            for key in need.replaces:
                rep = replace.setdefault(key, {"key": key, "by": [], "findings": []})
                rep["by"] = list(dict.fromkeys([*rep["by"], *need.keys]))
                rep["findings"].append(mark(f))
            for nk in need.no_key:
                no_key.append({"node": nk.node, "op": nk.op, "source": nk.source, "file": f.file, "finding": mark(f)})
            if need.keys:
                resolved.append(mark(f))
        if fixes.pipeline is not None:
            pipeline_plan = fixes.pipeline.data()
            row = config.setdefault(OFFSET_KEY, {**offset_change(pipeline_plan), "findings": []})
            row["findings"].append(mark(f))
            resolved.append(mark(f))
        root = fixes.root_cause
        changes = config_changes(root.kind, root.fix) if root is not None else []
        changes += context_changes(fixes.context)
        for change in changes:
            row = config.setdefault(change["key"], {**change, "findings": []})
            row["findings"].append(mark(f))
            resolved.append(mark(f))
        for change in layout_changes(f, root.fix if root is not None else None):
            row = layouts.setdefault((change["op"], change["change"]), {**change, "findings": []})
            row["findings"].append(mark(f))
            resolved.append(mark(f))
        # a run of ops to reshard together (a round trip across several ops): one fix per op
        for fix in () if fixes.context else fixes.ops:
            if not fix.in_strategy:
                continue
            target = next((r for r in f.related if r.node == fix.node), None)
            op = target.op if target else f.op
            # one shard() line per line of model code: the same op of every layer is one change
            where = _source_data(fix.source) or (f.file, fix.node)
            once = (op, fix.in_strategy, repr(where))
            resolved.append(mark(f))
            if once in seen_shards:
                continue
            seen_shards.add(once)
            strategies.append(
                {
                    "finding": mark(f),
                    "code": f.code,
                    "file": f.file,
                    "node": fix.node,
                    "op": op,
                    "scope": target.scope if target else f.scope,
                    "in_strategy": fix.in_strategy,
                    "shard": f"ops.{op}().shard({fix.in_strategy})",
                    "source": _source_data(fix.source),
                }
            )
        if f.fix and len(resolved) == planned:
            # a fix no section above can hold: the user makes it, at the op's model line
            row = by_hand.setdefault((f.code, f.fix, f.source), _by_hand(f))
            row["findings"].append(mark(f))
            resolved.append(mark(f))
    stages = _stages(spans) if len(spans) > 1 else None
    chunks = _chunks(stages) if stages else None
    out_keys = []
    for entry in keys.values():
        row = {
            "key": entry["key"],
            "layers": sorted(entry["layers"]),
            "findings": sorted({x for x in entry["findings"] if x}),
        }
        if entry["applied"]:  # the ops already carry its tag: kept, not added
            row["applied"] = True
        if chunks and len(chunks) > 1:  # interleave: MindFormers' [chunk][stage] counts
            row["per_stage"] = [[_count(entry["layers"], run) for run in chunk] for chunk in chunks]
        elif stages:
            row["per_stage"] = [_count(entry["by_span"].get(span, ()), span) for span in stages]
        out_keys.append(row)
    recompute: dict[str, Any] = {
        "select_recompute": [k["key"] for k in out_keys],
        "keys": out_keys,
        "no_key": _dedup(no_key),
    }
    if replace:  # a one-op cell's key the added keys take the place of
        recompute["replace"] = [_sorted_findings(r) for r in replace.values()]
    if stages:
        recompute["stages"] = [list(s) for s in stages]
        if chunks and len(chunks) > 1:
            recompute["chunks"] = [[list(run) for run in chunk] for chunk in chunks]
        recompute["select_recompute_per_stage"] = {k["key"]: k["per_stage"] for k in out_keys}
    elif out_keys and (len(spans) > 1 or pipeline):
        recompute["per_stage_note"] = (
            "for MindFormers' per-stage form, lint the dumps of every pipeline stage "
            "together: the counts come from the layers each stage holds"
        )
    changes = [{**c, "findings": sorted({x for x in c["findings"] if x})} for c in config.values()]
    return {
        "version": PLAN_VERSION,
        "recompute": recompute,
        "strategies": _dedup(strategies, ("node", "file", "in_strategy")),
        "config": changes,
        "layouts": [_sorted_findings(r) for r in layouts.values()],
        "by_hand": [_sorted_findings(r) for r in by_hand.values()],
        "resolves": sorted({x for x in resolved if x}),
        **({"pipeline": pipeline_plan} if pipeline_plan else {}),
    }  # sorted: the same plan grouped or not


def _sorted_findings(row: dict[str, Any]) -> dict[str, Any]:
    return {**row, "findings": sorted({x for x in row["findings"] if x})}


# MindFormers passes its YAML's parallel section to set_auto_parallel_context
CONTEXT_SECTION = "parallel."


OFFSET_KEY = "model.model_config.offset"


def offset_change(pipeline: dict[str, Any]) -> dict[str, Any]:
    """The config change of a pipeline plan (pipeline-stage-imbalance): MindFormers' offset."""
    from .units import human_bytes

    return {
        "key": OFFSET_KEY,
        "value": list(pipeline["offset"]),
        "cause": "pipeline stage imbalance",
        "why": "layers moved between pipeline stages: the worst stage's peak "
        f"{human_bytes(max(pipeline['stage_peak_bytes_now']))} -> {human_bytes(max(pipeline['stage_peak_bytes_after']))}",
        "written_by_fix": True,
        "note": "layers of stage i = num_layers / pipeline_stage + offset[i]",
    }


def context_changes(setting: str) -> list[dict[str, Any]]:
    """A ``set_auto_parallel_context`` setting a finding's fix names (``enable_alltoall=True``) as
    a config change of MindFormers' ``parallel`` section."""
    if "=" not in setting:
        return []
    name, _, raw = setting.partition("=")
    value: object = {"True": True, "False": False}.get(raw.strip(), raw.strip())
    return [
        {
            "key": CONTEXT_SECTION + name.strip(),
            "value": value,
            "cause": "expert-parallel re-layout",
            "why": "the experts' dispatch and combine as one AlltoAll instead of a gather and a slice",
            "written_by_fix": True,
            "note": f"without MindFormers: set_auto_parallel_context({setting})",
        }
    ]


def layout_changes(f: Finding, root: RootFix | None) -> list[dict[str, Any]]:
    """The Layout changes a finding's fix names: a Layout's device axes ordered as a tuple places
    dims (for an op MindSpore will not shard with a Layout, whose tuple may change too), or an op
    given its neighbour's Layout. Written in the model code, never by ``irlint fix``."""
    out = []
    if root is not None and not root.config and (root.device_matrix or root.layout):
        cell = root.cell or ""
        if root.device_matrix:
            op = root.op
            change = _axis_order(root.device_matrix)
            if root.in_strategy:
                how = "keeps its tuple" if root.keeps_tuple else "is sharded with the tuple"
                change += f"; {op} ({cell}) {how} {root.in_strategy}"
        else:
            op, change = "", f"give {cell}'s tuple-sharded ops the Layout {root.layout}"
        out.append(_layout_row(f, cell, op, change, root.node, root.device_matrix, root.in_strategy, root.source))
    fix = f.fixes.ops[0] if f.fixes.ops and not f.fixes.context else None
    if fix is not None and (fix.device_matrix or fix.in_layout):
        target = next((r for r in f.related if r.node == fix.node), None)
        op = target.op if target else f.op
        if fix.device_matrix:
            change = _axis_order(fix.device_matrix)
            if fix.in_strategy:
                change += f"; shard {op} with the tuple {fix.in_strategy}"
        else:
            expr = fix.in_layout
            change = f"shard {op} with {expr.split(' of ')[-1]}: {expr}"
        out.append(
            _layout_row(
                f,
                "",
                op,
                change,
                fix.node,
                fix.device_matrix,
                fix.in_strategy,
                fix.source,
                target.scope if target else f.scope,
            )
        )
    return out


def _axis_order(device_matrix: str) -> str:
    return f"order the device axes of the Layout: {device_matrix}, every layout(...) call unchanged"


def _layout_row(
    f: Finding,
    cell: str,
    op: str,
    change: str,
    node: str,
    device_matrix: str,
    in_strategy: str,
    source: SourceLine | None,
    scope: str = "",
) -> dict[str, Any]:
    return {
        "code": f.code,
        "file": f.file,
        "node": node or f.node,
        "op": op,
        "cell": cell,
        "scope": scope or f.scope,
        "device_matrix": device_matrix,
        "in_strategy": in_strategy,
        "change": change,
        "source": _source_data(source) or _source(f),
    }


def _by_hand(f: Finding) -> dict[str, Any]:
    row: dict[str, Any] = {
        "code": f.code,
        "file": f.file,
        "node": f.node,
        "op": f.op,
        "scope": f.scope,
        "fix": f.fix,
        "hint": f.hint.split("\n")[0],
        "source": _source(f),
        "findings": [],
    }
    drop = f.fixes.drop_select_recompute
    if drop:  # a key to take out, as the dump names the op: irlint fix names the user's own
        row["drop_select_recompute"] = list(drop)
    return row


def _source(f: Finding) -> dict[str, Any] | None:
    return {"path": f.source[0], "line": f.source[1]} if f.source else None


def _source_data(src: SourceLine | None) -> dict[str, Any] | None:
    return {"path": src.path, "line": src.line} if src is not None else None


# MindFormers' model options sit under model.model_config; runner_config.batch_size is a training
# choice (it sets the global batch with dp, micro batches and gradient accumulation)
MODEL_CONFIG = "model.model_config."
BATCH_NOTE = (
    "changes the global batch (batch_size x data parallel x micro batches x gradient accumulation): "
    "keep it with {keep}; irlint fix prints this change and does not write it, the batch is yours to choose"
)


def config_changes(kind: str, fix: RootFix) -> list[dict[str, Any]]:
    """The config changes a root cause's fix names: ``{"key", "value", "cause", "why", "written_by_fix",
    "note"}``. A model option (``use_rope_slice: False``) is written by ``irlint fix`` where the
    config has the key under model_config; ``runner_config.batch_size`` only printed."""
    out = []
    if fix.batch_size is not None:
        keep = " or ".join(fix.keep_global_batch_with or ["gradient accumulation or micro batches"])
        out.append(
            {
                "key": "runner_config.batch_size",
                "value": fix.batch_size,
                "cause": kind,
                "why": "one sequence per data-parallel replica"
                + (f" (now {fix.sequences_per_replica})" if fix.sequences_per_replica else ""),
                "written_by_fix": False,
                "note": BATCH_NOTE.format(keep=keep),
            }
        )
    setting = fix.config
    if ":" in setting:
        name, _, raw = setting.partition(":")
        name, raw = name.strip(), raw.strip()
        value: object = {"True": True, "False": False}.get(raw, int(raw) if raw.lstrip("-").isdigit() else raw)
        key = name if "." in name else MODEL_CONFIG + name
        note = f"or give {fix.cell}'s tuple-sharded ops the Layout {fix.layout}" if fix.layout else ""
        out.append(
            {
                "key": key,
                "value": value,
                "cause": kind,
                "why": f"removes {fix.cell} ops whose tuple strategy sits beside a Layout",
                "written_by_fix": key.startswith(MODEL_CONFIG),
                "note": note,
            }
        )
    return out


_PLAIN = re.compile(r"[A-Za-z_][\w.\-/]*")
_NOT_PLAIN = frozenset({"true", "false", "null", "yes", "no", "on", "off", "y", "n"})  # YAML reads these as others


def yaml_text(value: object, lower: bool = False, spelled: bool = False) -> str:
    """A value as a MindFormers config spells it: True/False (``lower``: true/false), a float with its
    point, flow lists and maps, null, a string quoted where YAML would read another type. ``spelled``:
    a string is the value's spelling already (a fix's ``hidden_dropout: 0.0`` gives "0.0"), written as
    it is (the fix plan's lines; ``irlint fix`` gives the option the type the config has)."""
    if isinstance(value, bool):
        word = "True" if value else "False"
        return word.lower() if lower else word
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(yaml_text(v, lower, spelled) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{yaml_text(k)}: {yaml_text(v, lower, spelled)}" for k, v in value.items()) + "}"
    if value is None:
        return "null"
    if isinstance(value, str):
        if spelled or _PLAIN.fullmatch(value) and value.lower() not in _NOT_PLAIN:
            return value
        return "'" + value.replace("'", "''") + "'"
    return str(value)


def _stages(spans: set[tuple[int, ...]]) -> list[tuple[int, ...]] | None:
    """The stages' layers in stage order when every stage of the pipeline is in the run: their
    runs of consecutive layers (one per stage, or one per chunk with interleave) tile the layers
    from 0 without a gap, else None: a count for a stage not seen cannot be given."""
    ordered = sorted(spans)
    runs = sorted(run for span in ordered for run in _runs(span))
    if not runs or runs[0][0] != 0:
        return None
    for a, b in zip(runs, runs[1:]):
        if b[0] != a[-1] + 1:
            return None
    return ordered


def _chunks(stages: list[tuple[int, ...]]) -> list[list[tuple[int, ...]]] | None:
    """With pipeline interleave, each chunk's runs in stage order (``chunks[v][stage]``): MindFormers
    places run r of the model on stage r % stages, chunk r // stages (its LayerSetting); None when
    the stages' runs are not laid out that way."""
    per_stage = [_runs(span) for span in stages]
    count = len(per_stage[0])
    if any(len(r) != count for r in per_stage):
        return None
    runs = sorted(run for r in per_stage for run in r)
    out = [[runs[v * len(stages) + s] for s in range(len(stages))] for v in range(count)]
    if any(out[v][s] != per_stage[s][v] for v in range(count) for s in range(len(stages))):
        return None
    return out


def _runs(layers: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Runs of consecutive layers."""
    out: list[list[int]] = []
    for layer in sorted(layers):
        if out and layer == out[-1][-1] + 1:
            out[-1].append(layer)
        else:
            out.append([layer])
    return [tuple(r) for r in out]


def _count(blocked: Iterable[int], run: tuple[int, ...]) -> int:
    """Layers of ``run`` a key must cover from its first: up to its last blocked layer."""
    return max((layer - run[0] + 1 for layer in blocked if layer in run), default=0)


def _dedup(rows: list[dict[str, Any]], fields: tuple[str, ...] = ("node", "file")) -> list[dict[str, Any]]:
    seen, out = set(), []
    for r in rows:
        mark = tuple(str(r.get(x)) for x in fields)
        if mark not in seen:
            seen.add(mark)
            out.append(r)
    return out


def is_empty(plan: dict[str, Any]) -> bool:
    rc = plan["recompute"]
    return (
        not rc["select_recompute"]
        and not rc.get("replace")
        and not rc["no_key"]
        and not plan["strategies"]
        and not plan.get("config")
        and not plan.get("layouts")
        and not plan.get("by_hand")
    )


def plan_text(plan: dict[str, Any]) -> str:
    """The plan for a person: the keys to add in both MindFormers forms where there is a pipeline,
    the ops no key can tag, each strategy change with its model line."""
    rc = plan["recompute"]
    lines: list[str] = []
    applied = {k["key"] for k in rc.get("keys") or () if k.get("applied")}
    added = [k for k in rc["select_recompute"] if k not in applied]
    if added:
        lines.append("recompute_config:   # add to your own keys (irlint fix CONFIG.yaml DUMP... does it)")
        lines.append("  select_recompute: [" + ", ".join(f"'{k}'" for k in added) + "]")
        if rc.get("select_recompute_per_stage") and rc.get("chunks"):
            lines.append(
                "  # or, per interleave chunk and pipeline stage ("
                + "; ".join(
                    f"chunk {v}: layers " + ", ".join(f"{r[0]}-{r[-1]}" for r in chunk)
                    for v, chunk in enumerate(rc["chunks"])
                )
                + "): key -> [chunk][stage] number of layers from each one's first"
            )
        elif rc.get("select_recompute_per_stage"):
            lines.append(
                "  # or, per pipeline stage (layers "
                + ", ".join(f"{s[0]}-{s[-1]}" for s in rc["stages"])
                + "): key -> number of layers from each stage's first"
            )
        if rc.get("select_recompute_per_stage"):
            lines.append(
                "  # select_recompute: {"
                + ", ".join(f"'{k}': {v}" for k, v in rc["select_recompute_per_stage"].items())
                + "}"
            )
        if rc.get("per_stage_note"):
            lines.append("  # " + rc["per_stage_note"])
    for r in rc.get("replace") or ():
        by = " and ".join(f"'{k}'" + (" (its tag is there already)" if k in applied else "") for k in r["by"])
        if not lines:
            lines.append("recompute_config:")
        lines.append(
            f"  # {'and ' if added else ''}take out your key that tags '{r['key']}' (irlint fix does it): {by} "
            "takes its place, and MindSpore never recomputes a recompute cell's output, whatever its primitive's tag"
        )
    for op in rc["no_key"]:
        lines.append(f"# no select_recompute key can be derived for {op['node']} {op['op']} ({op['source']})")
    for s in plan["strategies"]:
        src = s.get("source")
        where = f"{src['path']}:{src['line']}" if src else "no source trace in the dump"
        lines.append(f"{s['shard']}   # {s['node']} {s['op']} ({s['scope']}); created at {where}")
    # a dotted key as the YAML it stands for (``runner_config:`` then ``  batch_size: 1``), so the
    # lines paste into a config as they are; keys under one section share its line
    open_path: list[str] = []
    for c in plan.get("config") or ():
        how = "irlint fix writes it where your config has the key" if c["written_by_fix"] else "set it yourself"
        *sections, leaf = c["key"].split(".")
        shared = 0
        while shared < min(len(sections), len(open_path)) and sections[shared] == open_path[shared]:
            shared += 1
        lines += [f"{'  ' * i}{name}:" for i, name in enumerate(sections) if i >= shared]
        open_path = sections
        pad = "  " * len(sections)
        lines.append(f"{pad}{leaf}: {yaml_text(c['value'], spelled=True)}   # {c['why']} ({c['cause']}); {how}")
        if c["note"]:
            lines.append(f"{pad}#   {c['note']}")
    for row in plan.get("layouts") or ():
        what = f"{row['op']} made at " if row["op"] and row.get("source") else ""
        lines.append(f"# Layout, in the model code ({what}{model_line(row)}): {row['change']}")
    for row in plan.get("by_hand") or ():
        lines.append(f"# by hand, at {model_line(row)}: {row['fix']} ({row['code']} {row['node']} {row['op']})")
    return "\n".join(lines)


def model_line(row: dict[str, Any]) -> str:
    """Where a plan row's change is made: the model file:line, else the dump and the node."""
    src = row.get("source")
    return f"{src['path']}:{src['line']}" if src else f"{row['file']} {row['node']} {row['op']} (no source trace)"
