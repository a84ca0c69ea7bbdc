"""``irlint diff BEFORE AFTER``: what a change of configuration did to two dumps of one model.

Findings are compared by fingerprint (rule, op, scope path, chain: never node ids, line numbers or
the stage file read), as a baseline is; a finding of BEFORE is fixed only where AFTER read the
rule's final evidence, and new only where BEFORE did and the finding's own file was read whole
(else it is unverified), and both sides are read one compile per folder.
The final graph of each rank (the file ``irlint memory`` reads, chosen by stage name, so
renumbered stage files still pair) is compared node by node: nodes are matched by what survives a
recompile, never by ``%N``. Per rank: activation bytes kept for backward per layer (the ``irlint
memory`` account), ops whose recompute state or ``in_strategy`` changed, and how many nodes could
not be matched.
"""
from __future__ import annotations

import json
import os
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from ..diagnostics import KINDS, UNREADABLE, Diagnostic
from .discover import DumpFile, final_files
from ..findings import Finding, Report, scope_path
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
    return (role, scope_path(scope), d.get("op", ""), HASH.sub("#", d.get("instance") or ""))


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
    for _key, (olds, news) in groups.items():
        olds, news = list(olds), list(news)
        if out.unique_ids_stable:
            by_uid: dict[str | None, list[int]] = defaultdict(list)
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
    from ..read.values import dump_notation

    d = ir[key]
    found = (d.get("primitive_attrs") or {}).get("in_strategy")
    if found is None:
        found = (d.get("parallel_info") or {}).get("in_strategy")
    return None if found is None else dump_notation(found)


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
    compute: dict = field(default_factory=dict)   # FLOPs and recompute overhead (irlint cost)

    def to_dict(self) -> dict:
        return {"rank": self.rank, "before": {"file": self.before.display, "stage": self.before.stage.label},
                "after": {"file": self.after.display, "stage": self.after.stage.label},
                "stages": self.stages, "nodes": self.nodes, "memory": self.memory,
                "recompute_changed": self.recompute, "in_strategy_changed": self.strategies,
                "communication": self.communication, "compute": self.compute}


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
    from ..accounts.compute import change as compute_change

    return RankDiff(rank, before_file, after_file, stages, nodes, memory, recompute, strategies,
                    communication_change(before, after), compute_change(before, after))


# --- pairing the inputs --------------------------------------------------------------------------

def stage_pairing(before: list[DumpFile], after: list[DumpFile]) -> dict:
    """Stage files of one rank paired by stage name (sequence numbers shift between versions)."""
    names_b = Counter(f.stage.label for f in before)
    names_a = Counter(f.stage.label for f in after)
    return {"paired": sum((names_b & names_a).values()),
            "before_only": sorted((names_b - names_a).elements()),
            "after_only": sorted((names_a - names_b).elements())}


def pair_finals(before: list[DumpFile], after: list[DumpFile], unread: frozenset[str] = frozenset()
                ) -> tuple[list[tuple], list[str]]:
    """(rank, before final, after final, stage pairing) per rank both sides have; and a note per
    rank only one side has. Two single final files pair whatever their ranks. A file in ``unread``
    (paths of files not read whole) is a final graph only when no earlier stage can stand in."""
    fb, fa = _complete_finals(before, unread), _complete_finals(after, unread)
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


def _complete_finals(files: list[DumpFile], unread: frozenset[str]) -> list[DumpFile]:
    finals = final_files(files, MEMORY_STAGES)
    if not unread & {f.path for f in finals}:
        return finals
    stand_ins = {(f.folder, f.path if f.explicit else ""): f
                 for f in final_files([f for f in files if f.path not in unread], MEMORY_STAGES)}
    return [stand_ins.get((f.folder, f.path if f.explicit else ""), f) for f in finals]


# --- one compile per folder ----------------------------------------------------------------------

class CompileChoiceError(ValueError):
    """--compile names a compile a folder does not hold."""


def pick_compile(files: list[DumpFile], which: int = -1) -> tuple[list[DumpFile], list[dict]]:
    """The files of one compile per save_graphs folder (``which``: 1 the first, -1 the newest), so
    that findings, nodes and memory come from one compile; and, per folder holding several
    compiles, which one was kept. Files without a sequence number and files named directly are kept."""
    from .plan import compiles

    folders: dict[str, list[DumpFile]] = defaultdict(list)
    for f in files:
        if not f.explicit:
            folders[f.folder].append(f)
    dropped: set[str] = set()
    chosen: list[dict] = []
    for folder, members in folders.items():
        groups = compiles([f for f in members if f.placed and f.stage.seq is not None])
        if len(groups) < 2:
            continue
        if not -len(groups) <= which <= len(groups) or which == 0:
            raise CompileChoiceError(f"--compile {which}: {members[0].display.rpartition('/')[0] or folder} "
                                     f"holds {len(groups)} compiles")
        index = which - 1 if which > 0 else len(groups) + which
        for i, group in enumerate(groups):
            if i != index:
                dropped.update(f.path for f in group)
        kept = groups[index]
        chosen.append({"folder": os.path.dirname(kept[0].display), "compiles": len(groups), "compared": index + 1,
                       "first": kept[0].display, "last": kept[-1].display})
    return [f for f in files if f.path not in dropped], chosen


# --- what each side could read -------------------------------------------------------------------

@dataclass
class FinalRead:
    """The file a rule reads its final evidence from, for one rank of one side."""

    file: DumpFile
    preference: int          # the position of its stage in the rule's stages (0: the best)
    damage: str = ""         # the input problem that kept it from being read whole ("" when it was)


def final_reads(files: list[DumpFile], rules: list, report: Report, skip: frozenset[str] = frozenset()
                ) -> dict[tuple[str, int | None], FinalRead]:
    """(rule code, rank) -> the file the rule's evidence is final in (files in ``skip`` left out)."""
    from .plan import INCOMPLETE, plan

    damage = {d.file: f"{d.code} {KINDS.get(d.code, '')}".strip() for d in report.diagnostics if d.code in INCOMPLETE}
    todo = plan([f for f in files if f.path not in skip], rules)
    out: dict[tuple[str, int | None], FinalRead] = {}
    by_path = {f.path: f for f in files}
    for path, path_rules in todo.items():
        f = by_path[path]
        for rule in path_rules:
            names = (f.stage.name, f.stage.label)
            pref = next((i for i, name in enumerate(rule.stages) if name in names), len(rule.stages))
            key = (rule.code, f.rank)
            if key not in out or pref < out[key].preference:
                out[key] = FinalRead(f, pref, damage.get(f.display, ""))
    return out


@dataclass
class SideReads:
    """What each rule of one side read, as planned and as it could be read."""

    planned: dict[tuple[str, int | None], FinalRead]
    read: dict[tuple[str, int | None], FinalRead]   # damaged files left out: what stood in for them

    @classmethod
    def of(cls, files: list[DumpFile], report: Report) -> SideReads:
        planned = final_reads(files, report.rules, report)
        unread = frozenset(r.file.path for r in planned.values() if r.damage)
        return cls(planned, final_reads(files, report.rules, report, unread) if unread else planned)

    @property
    def unread(self) -> frozenset[str]:
        return frozenset(r.file.path for r in self.planned.values() if r.damage)

    def ranks(self) -> set:
        return {rank for _, rank in self.planned}

    def rekeyed(self) -> SideReads:
        """One rank per side (two files named): keys without the rank, as the files pair."""
        def strip(d: dict) -> dict:
            return {(code, None): v for (code, _), v in d.items()}

        return SideReads(strip(self.planned), strip(self.read))

    def short(self, key: tuple, other: SideReads) -> str:
        """Why this side did not read the rule's final evidence for that rank ('' when it did)."""
        planned, read, theirs = self.planned.get(key), self.read.get(key), other.read.get(key)
        if planned is not None and planned.damage:
            instead = f"; read {read.file.display} instead" if read is not None else ""
            return f"{planned.file.display} not read whole ({planned.damage}){instead}"
        if read is None:
            return "no file of a stage it reads" if theirs is not None else ""
        if theirs is not None and read.preference > theirs.preference:
            return (f"no {theirs.file.stage.label} file; read {read.file.display} ({read.file.stage.label}) "
                    f"instead")
        return ""


def incomplete_sides(before: SideReads, after: SideReads) -> list[dict]:
    """Per side and rank, the rules that did not read their final evidence there, and why."""
    entries: dict[tuple, dict] = {}
    for side, mine, theirs in (("before", before, after), ("after", after, before)):
        ranks = mine.ranks()   # a rank only one side has is a note of its own
        keys = sorted((k for k in mine.planned.keys() | theirs.planned.keys() if k[1] in ranks),
                      key=lambda k: (k[1] is not None, k[1] or 0, k[0]))
        for key in keys:
            why = mine.short(key, theirs)
            if why:
                entry = entries.setdefault((side, key[1], why), {"side": side, "rank": key[1], "why": why,
                                                                 "rules": []})
                entry["rules"].append(key[0])
    return list(entries.values())


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
    # findings of BEFORE that AFTER does not show, where AFTER could not read the rule's final evidence
    unverified_fixed: list[Finding] = field(default_factory=list)
    # findings of AFTER that BEFORE does not show, where BEFORE could not read the rule's final
    # evidence or the finding comes from a file not read whole (its chain may be cut)
    unverified_new: list[Finding] = field(default_factory=list)
    # per side and rank: rules that did not read their final evidence, and why
    incomplete: list[dict] = field(default_factory=list)
    # per side, each folder holding several compiles: which one was compared
    compiles: list[dict] = field(default_factory=list)

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
                        "diagnostics": len(self.diagnostics), "unverified_fixed": len(self.unverified_fixed),
                        "unverified_new": len(self.unverified_new)},
            "fixed": findings(self.fixed), "new": findings(self.new), "unchanged": findings(self.unchanged),
            "unverified_fixed": findings(self.unverified_fixed), "unverified_new": findings(self.unverified_new),
            "incomplete": self.incomplete, "compiles": self.compiles,
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


def unverified_of(gone: list[Finding], files: list[DumpFile], mine: SideReads, theirs: SideReads
                  ) -> tuple[list[Finding], list[Finding]]:
    """(verified, unverified) of the findings of one side (``mine``) that the other does not show:
    verified only where the other side read the rule's final evidence on every rank the finding
    is on, and the finding's own file was read whole."""
    file_of = {f.display: f for f in files}
    keep, unsure = [], []
    for f in gone:
        ranks = (None,) if not mine.ranks() - {None} and not theirs.ranks() - {None} else (
            f.ranks or (getattr(file_of.get(f.file), "rank", None),))
        cut = getattr(file_of.get(f.file), "path", None) in mine.unread
        (unsure if cut or any(theirs.short((f.code, r), mine) for r in ranks) else keep).append(f)
    return keep, unsure


def diff_reports(before: Report, after: Report, before_files: list[DumpFile], after_files: list[DumpFile],
                 before_paths: list[str], after_paths: list[str], compiles: list[dict] | None = None) -> Diff:
    """Compare two lint reports and the final graphs of the files they came from."""
    from .lint_file import read_dump

    fixed, new, unchanged = compare_findings(before.findings, after.findings)
    reads_b, reads_a = SideReads.of(before_files, before), SideReads.of(after_files, after)
    if len(reads_b.ranks()) <= 1 and len(reads_a.ranks()) <= 1:   # two files, or two rank-less folders
        reads_b, reads_a = reads_b.rekeyed(), reads_a.rekeyed()
    fixed, unverified_fixed = unverified_of(fixed, before_files, reads_b, reads_a)
    new, unverified_new = unverified_of(new, after_files, reads_a, reads_b)
    pairs, notes = pair_finals(before_files, after_files, reads_b.unread | reads_a.unread)
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
                list(before.files), list(after.files), unverified_fixed, unverified_new,
                incomplete_sides(reads_b, reads_a),
                compiles or [])


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
