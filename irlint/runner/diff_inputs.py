"""``irlint diff``, its inputs: which stage files of the two sides pair, the one compile read per folder, and what
each side could read of each rule's final evidence (a finding is fixed or new only where both sides read it)."""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from dataclasses import dataclass

from ..accounts.memory import MEMORY_STAGES
from ..diagnostics import KINDS
from ..findings import Report
from .discover import DumpFile, final_files

# --- pairing the inputs --------------------------------------------------------------------------


def stage_pairing(before: list[DumpFile], after: list[DumpFile]) -> dict:
    """Stage files of one rank paired by stage name (sequence numbers shift between versions)."""
    names_b = Counter(f.stage.label for f in before)
    names_a = Counter(f.stage.label for f in after)
    return {
        "paired": sum((names_b & names_a).values()),
        "before_only": sorted((names_b - names_a).elements()),
        "after_only": sorted((names_a - names_b).elements()),
    }


def pair_finals(
    before: list[DumpFile], after: list[DumpFile], unread: frozenset[str] = frozenset()
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
            only = a or b
            assert only is not None  # the rank is a key of one side at least
            notes.append(f"{label}: only in {'AFTER' if b is None else 'BEFORE'} ({only.display}); not compared")
            continue
        pairs.append(
            (rank, b, a, stage_pairing([f for f in before if f.rank == rank], [f for f in after if f.rank == rank]))
        )
    return pairs, notes


def _complete_finals(files: list[DumpFile], unread: frozenset[str]) -> list[DumpFile]:
    finals = final_files(files, MEMORY_STAGES)
    if not unread & {f.path for f in finals}:
        return finals
    stand_ins = {
        (f.folder, f.path if f.explicit else ""): f
        for f in final_files([f for f in files if f.path not in unread], MEMORY_STAGES)
    }
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
            raise CompileChoiceError(
                f"--compile {which}: {members[0].display.rpartition('/')[0] or folder} holds {len(groups)} compiles"
            )
        index = which - 1 if which > 0 else len(groups) + which
        for i, group in enumerate(groups):
            if i != index:
                dropped.update(f.path for f in group)
        kept = groups[index]
        chosen.append(
            {
                "folder": os.path.dirname(kept[0].display),
                "compiles": len(groups),
                "compared": index + 1,
                "first": kept[0].display,
                "last": kept[-1].display,
            }
        )
    return [f for f in files if f.path not in dropped], chosen


# --- what each side could read -------------------------------------------------------------------


@dataclass
class FinalRead:
    """The file a rule reads its final evidence from, for one rank of one side."""

    file: DumpFile
    preference: int  # the position of its stage in the rule's stages (0: the best)
    damage: str = ""  # the input problem that kept it from being read whole ("" when it was)


def final_reads(
    files: list[DumpFile], rules: list, report: Report, skip: frozenset[str] = frozenset()
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
    read: dict[tuple[str, int | None], FinalRead]  # damaged files left out: what stood in for them

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
            return f"no {theirs.file.stage.label} file; read {read.file.display} ({read.file.stage.label}) instead"
        return ""


def incomplete_sides(before: SideReads, after: SideReads) -> list[dict]:
    """Per side and rank, the rules that did not read their final evidence there, and why."""
    entries: dict[tuple, dict] = {}
    for side, mine, theirs in (("before", before, after), ("after", after, before)):
        ranks = mine.ranks()  # a rank only one side has is a note of its own
        keys = sorted(
            (k for k in mine.planned.keys() | theirs.planned.keys() if k[1] in ranks),
            key=lambda k: (k[1] is not None, k[1] or 0, k[0]),
        )
        for key in keys:
            why = mine.short(key, theirs)
            if why:
                entry = entries.setdefault((side, key[1], why), {"side": side, "rank": key[1], "why": why, "rules": []})
                entry["rules"].append(key[0])
    return list(entries.values())
