"""``irlint diff BEFORE AFTER``: what a change of configuration did to two dumps of one model.

Findings are compared by fingerprint (rule, stage name, op, scope path, chain: never node ids or
line numbers), as a baseline is. The final graph of each rank (the file ``irlint memory`` reads,
chosen by stage name, so renumbered stage files still pair) is compared node by node: nodes are
matched by what survives a recompile, never by ``%N``. Per rank: activation bytes kept for
backward per layer (the ``irlint memory`` account), ops whose recompute state or ``in_strategy``
changed, and how many nodes could not be matched.
"""
from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from ..diagnostics import UNREADABLE, Diagnostic
from .discover import DumpFile, final_files
from ..findings import Finding, Report, _scope_path
from ..accounts.memory import MEMORY_STAGES, cached_account, is_backward
from ..model import IRFile

JSON_VERSION = 1
# forward ops that only pass tensors on or order effects: never listed as changed
_BOOKKEEPING = frozenset({"Load", "UpdateState", "MakeTuple", "Depend", "TupleGetItem", "call", "Return"})
UNMATCHED_LISTED = 20
# a hash in the instance names parallel passes give the ops they insert
# ("redistribution_op_910280660132420711AllGather_"): it changes from compile to compile
HASH = re.compile(r"\d{6,}")   # unmatched nodes named per side (the counts are always whole)


# --- node identity across recompiles -------------------------------------------------------------

def node_key(ir: IRFile, key: int) -> tuple:
    """What identifies a CNode across two compiles of the same model: forward / backward /
    recomputed copy, the scope path (without the ``recompute_`` prefix ``Cell.recompute()`` adds
    and the per-dump ``-opN`` suffix), the op and the primitive's instance name."""
    d = ir[key]
    role = "copy" if ir.is_recompute_copy(key) else "backward" if is_backward(ir, key) else "forward"
    scope = d.get("scope", "").removeprefix("recompute_")
    return (role, _scope_path(scope), d.get("op", ""), HASH.sub("#", d.get("instance") or ""))


def _uid(ir: IRFile, key: int) -> str | None:
    primal = ir[key].get("primal_attrs") or {}
    uid = primal.get("unique_id", primal.get("forward_unique_id"))
    return None if uid is None else f"{'b' if 'forward_unique_id' in primal else 'f'}{uid}"


@dataclass
class NodeMatch:
    pairs: list[tuple[int, int]] = field(default_factory=list)
    before_only: list[int] = field(default_factory=list)
    after_only: list[int] = field(default_factory=list)
    # whether unique_id / forward_unique_id were stable between the two dumps (then used first)
    unique_ids_stable: bool = False
    by_unique_id: int = 0


def match_nodes(before: IRFile, after: IRFile) -> NodeMatch:
    """Pair the CNodes of two dumps. Within each group of equal ``node_key``: first by
    ``unique_id`` / ``forward_unique_id`` when those are stable between the dumps (every id both
    dumps use names nodes of the same key: a re-dump, or a change that did not renumber), then
    by position among the equals (dump order). What is left is unmatched."""
    groups: dict[tuple, tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
    for side, ir in ((0, before), (1, after)):
        for k in sorted(ir.cnodes(), key=lambda k: (ir[k].get("line", 0), k)):
            groups[node_key(ir, k)][side].append(k)
    # a forward_unique_id names the forward op: several backward nodes share it (dx and dw)
    keys_of_uid: list[dict[str, set]] = [defaultdict(set), defaultdict(set)]
    for side, ir in ((0, before), (1, after)):
        for key, members in groups.items():
            for k in members[side]:
                uid = _uid(ir, k)
                if uid is not None:
                    keys_of_uid[side][uid].add(key)
    shared = keys_of_uid[0].keys() & keys_of_uid[1].keys()
    out = NodeMatch(unique_ids_stable=bool(shared) and all(keys_of_uid[0][u] == keys_of_uid[1][u] for u in shared))
    for key, (olds, news) in groups.items():
        olds, news = list(olds), list(news)
        if out.unique_ids_stable:
            by_uid: dict[str, list[int]] = defaultdict(list)
            for k in news:
                by_uid[_uid(after, k)].append(k)
            for k in list(olds):
                uid = _uid(before, k)
                partners = by_uid.get(uid) if uid is not None else None
                if partners:
                    partner = partners.pop(0)   # equals with one id: in dump order
                    out.pairs.append((k, partner))
                    out.by_unique_id += 1
                    olds.remove(k)
                    news.remove(partner)
        out.pairs.extend(zip(olds, news))
        out.before_only.extend(olds[len(news):])
        out.after_only.extend(news[len(olds):])
    out.pairs.sort(key=lambda p: before[p[0]].get("line", 0))
    out.before_only.sort(key=lambda k: before[k].get("line", 0))
    out.after_only.sort(key=lambda k: after[k].get("line", 0))
    return out


# --- what changed on a matched op ----------------------------------------------------------------

def recompute_state(ir: IRFile, key: int) -> dict:
    """requested (how: select, cell, one-op-cell; None: not asked), applied (a recomputed copy
    exists), kept (the ``irlint memory`` account keeps its output for backward, with its bytes;
    a view such as a Reshape shares its source's tensor and is never kept itself)."""
    from ..accounts.memory import bytes_at_stake, kept_output
    from ..rules.recompute.evidence import RecomputeFacts

    facts = RecomputeFacts.of(ir)
    kept = kept_output(ir, key)
    return {"requested": facts.request(key), "applied": facts.applied(key), "kept": kept,
            "kept_bytes": bytes_at_stake(ir, key) if kept else 0}


def in_strategy(ir: IRFile, key: int) -> str | None:
    """The ``in_strategy`` as the dump prints it (2.10 also prints it after the primal attrs)."""
    from ..read.values import fmt

    d = ir[key]
    found = (d.get("primitive_attrs") or {}).get("in_strategy")
    if found is None:
        found = (d.get("parallel_info") or {}).get("in_strategy")
    return None if found is None else fmt(found)


def _node_ref(ir: IRFile, key: int) -> dict:
    d = ir[key]
    return {"node": d.get("id", ""), "op": d.get("op", ""), "instance": d.get("instance") or "",
            "role": node_key(ir, key)[0], "scope": d.get("scope", ""), "line": d.get("line", 0)}


def communication_change(before: IRFile, after: IRFile) -> dict:
    """Bytes each collective kind receives per rank and step, before -> after (the ``irlint comm``
    account), with the share the redistribution findings name as waste."""
    from ..accounts.comm import account

    accounts = {"before": account(before), "after": account(after)}
    kinds: dict[str, dict] = {}
    for side, acc in accounts.items():
        for kind, row in acc.by_kind().items():
            entry = kinds.setdefault(kind, {"kind": kind, "before": 0, "after": 0, "waste_before": 0,
                                            "waste_after": 0, "ops_before": 0, "ops_after": 0})
            entry[side] = row["forward_bytes"] + row["backward_bytes"]
            entry[f"waste_{side}"] = row["waste_bytes"]
            entry[f"ops_{side}"] = row["ops"]
    return {"before_total": accounts["before"].received_bytes, "after_total": accounts["after"].received_bytes,
            "waste_before": accounts["before"].waste_bytes, "waste_after": accounts["after"].waste_bytes,
            "kinds": list(kinds.values())}


@dataclass
class RankDiff:
    """The final graphs of one rank (or of the two files named) compared."""

    rank: int | None
    before: DumpFile
    after: DumpFile
    stages: dict
    nodes: dict
    memory: dict
    recompute: list[dict]
    strategies: list[dict]
    communication: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"rank": self.rank, "before": {"file": self.before.display, "stage": self.before.stage.label},
                "after": {"file": self.after.display, "stage": self.after.stage.label},
                "stages": self.stages, "nodes": self.nodes, "memory": self.memory,
                "recompute_changed": self.recompute, "in_strategy_changed": self.strategies,
                "communication": self.communication}


def compare_files(before_file: DumpFile, before: IRFile, after_file: DumpFile, after: IRFile,
                  stages: dict, rank: int | None) -> RankDiff:
    match = match_nodes(before, after)
    mem_before, mem_after = cached_account(before), cached_account(after)
    rows: dict[str, dict] = {}
    for side, report in (("before", mem_before), ("after", mem_after)):
        for layer in report.layers():
            row = rows.setdefault(layer.layer, {"layer": layer.layer, "before": 0, "after": 0,
                                                "tensors_before": 0, "tensors_after": 0})
            row[side] = layer.kept_bytes
            row[f"tensors_{side}"] = layer.tensors
    order = [r.layer for r in mem_before.layers()] + [r.layer for r in mem_after.layers()]
    layers = sorted(rows.values(), key=lambda r: (r["layer"] == "outside",
                                                   int(r["layer"]) if r["layer"].isdigit() else 0,
                                                   order.index(r["layer"])))
    recompute, strategies = [], []
    for b, a in match.pairs:
        if before[b]["op"] in _BOOKKEEPING or node_key(before, b)[0] != "forward":
            continue
        was, now = recompute_state(before, b), recompute_state(after, a)
        if was != now:
            recompute.append({**_node_ref(after, a), "before_line": before[b].get("line", 0),
                              "before": was, "after": now})
        s_was, s_now = in_strategy(before, b), in_strategy(after, a)
        if s_was != s_now:
            strategies.append({**_node_ref(after, a), "before_line": before[b].get("line", 0),
                               "before": s_was, "after": s_now})
    nodes = {
        "matched": len(match.pairs), "matched_by_unique_id": match.by_unique_id,
        "unique_ids_stable": match.unique_ids_stable,
        "before_only": len(match.before_only), "after_only": len(match.after_only),
        "before_only_nodes": [_node_ref(before, k) for k in match.before_only[:UNMATCHED_LISTED]],
        "after_only_nodes": [_node_ref(after, k) for k in match.after_only[:UNMATCHED_LISTED]],
    }
    memory = {"before_total": mem_before.total_kept_bytes, "after_total": mem_after.total_kept_bytes,
              "layers": layers}
    return RankDiff(rank, before_file, after_file, stages, nodes, memory, recompute, strategies,
                    communication_change(before, after))


# --- pairing the inputs --------------------------------------------------------------------------

def stage_pairing(before: list[DumpFile], after: list[DumpFile]) -> dict:
    """Stage files of one rank paired by stage name (sequence numbers shift between versions)."""
    names_b = Counter(f.stage.label for f in before)
    names_a = Counter(f.stage.label for f in after)
    return {"paired": sum((names_b & names_a).values()),
            "before_only": sorted((names_b - names_a).elements()),
            "after_only": sorted((names_a - names_b).elements())}


def pair_finals(before: list[DumpFile], after: list[DumpFile]) -> tuple[list[tuple], list[str]]:
    """(rank, before final, after final, stage pairing) per rank both sides have; and a note per
    rank only one side has. Two single final files pair whatever their ranks."""
    fb, fa = final_files(before, MEMORY_STAGES), final_files(after, MEMORY_STAGES)
    notes: list[str] = []
    if len(fb) == 1 and len(fa) == 1:
        rank = fb[0].rank if fb[0].rank == fa[0].rank else None
        return [(rank, fb[0], fa[0], stage_pairing(before, after))], notes
    by_rank_b = {f.rank: f for f in fb}
    by_rank_a = {f.rank: f for f in fa}
    pairs = []
    for rank in sorted(by_rank_b.keys() | by_rank_a.keys(), key=lambda r: -1 if r is None else r):
        b, a = by_rank_b.get(rank), by_rank_a.get(rank)
        label = f"rank {rank}" if rank is not None else "the folder without rank_N"
        if b is None or a is None:
            notes.append(f"{label}: only in {'AFTER' if b is None else 'BEFORE'} ({(a or b).display}); not compared")
            continue
        pairs.append((rank, b, a, stage_pairing([f for f in before if f.rank == rank],
                                                 [f for f in after if f.rank == rank])))
    return pairs, notes


# --- the whole comparison ------------------------------------------------------------------------

@dataclass
class Diff:
    before: list[str]
    after: list[str]
    fixed: list[Finding]
    new: list[Finding]
    unchanged: list[Finding]
    ranks: list[RankDiff]
    notes: list[str] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    files_before: list[str] = field(default_factory=list)
    files_after: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        def findings(fs: list[Finding]) -> list[dict]:
            from ..reporters.json import finding_dict

            return [finding_dict(f) for f in fs]

        from .. import __version__

        return {
            "version": JSON_VERSION,
            "tool": {"name": "irlint", "version": __version__},
            "before": self.before, "after": self.after,
            "summary": {"fixed": len(self.fixed), "new": len(self.new), "unchanged": len(self.unchanged),
                        "files_before": len(self.files_before), "files_after": len(self.files_after),
                        "kept_bytes_before": sum(r.memory["before_total"] for r in self.ranks),
                        "kept_bytes_after": sum(r.memory["after_total"] for r in self.ranks),
                        "diagnostics": len(self.diagnostics)},
            "fixed": findings(self.fixed), "new": findings(self.new), "unchanged": findings(self.unchanged),
            "ranks": [r.to_dict() for r in self.ranks],
            "notes": self.notes,
            "diagnostics": [d.to_dict() for d in self.diagnostics],
        }


def compare_findings(before: list[Finding], after: list[Finding]) -> tuple[list, list, list]:
    """(fixed, new, unchanged) by fingerprint, each fingerprint counted as many times as it occurs;
    findings grouped by root cause are compared occurrence by occurrence, then grouped again."""
    grouped = any(f.members for f in [*before, *after])
    if grouped:
        from .group import by_root_cause

        flat = lambda fs: [o for f in fs for o in f.occurrences]   # noqa: E731
        return tuple(by_root_cause(part) for part in _compare(flat(before), flat(after)))
    return _compare(before, after)


def _compare(before: list[Finding], after: list[Finding]) -> tuple[list, list, list]:
    left = Counter(f.fingerprint for f in before)
    new, unchanged = [], []
    for f in after:
        if left[f.fingerprint] > 0:
            left[f.fingerprint] -= 1
            unchanged.append(f)
        else:
            new.append(f)
    right = Counter(f.fingerprint for f in after)
    fixed = []
    for f in before:
        if right[f.fingerprint] > 0:
            right[f.fingerprint] -= 1
        else:
            fixed.append(f)
    return fixed, new, unchanged


def diff_reports(before: Report, after: Report, before_files: list[DumpFile], after_files: list[DumpFile],
                 before_paths: list[str], after_paths: list[str]) -> Diff:
    """Compare two lint reports and the final graphs of the files they came from."""
    from .engine import read_dump

    fixed, new, unchanged = compare_findings(before.findings, after.findings)
    pairs, notes = pair_finals(before_files, after_files)
    diagnostics = list(before.diagnostics) + list(after.diagnostics)
    ranks: list[RankDiff] = []
    for rank, fb, fa, stages in pairs:
        try:
            irb, ira = read_dump(fb), read_dump(fa)
        except OSError as exc:
            diagnostics.append(Diagnostic(fb.display, 0, UNREADABLE, f"cannot read: {exc.strerror or exc}"))
            continue
        ranks.append(compare_files(fb, irb, fa, ira, stages, rank))
    return Diff(before_paths, after_paths, fixed, new, unchanged, ranks, notes, diagnostics,
                list(before.files), list(after.files))


def rank_groups(ranks: list[RankDiff]) -> list[tuple[list[RankDiff], RankDiff]]:
    """Ranks whose comparison is the same (files and lines aside) shown once: 'ranks 0-7'."""
    groups: dict[str, list[RankDiff]] = {}
    for r in ranks:
        d = r.to_dict()
        for k in ("rank", "before", "after"):
            d.pop(k)
        groups.setdefault(json.dumps(d, sort_keys=True, default=str), []).append(r)
    return [(members, members[0]) for members in groups.values()]


def rank_label(members: list[RankDiff]) -> str:
    from ..reporters import ranks_text

    ranks = tuple(r.rank for r in members if r.rank is not None)
    if not ranks:
        return ""
    return ranks_text(ranks) if len(ranks) > 1 else f"rank {ranks[0]}"


def unmatched_label(x: dict) -> str:
    role = {"copy": "recomputed copy", "backward": "backward"}.get(x["role"], "")
    # instance names with a compile's hash in them (inserted redistribution ops) say nothing to a reader
    name = x["instance"] if x["instance"] and not HASH.search(x["instance"]) else ""
    return ", ".join(p for p in (name, role) if p)
