"""``irlint diff BEFORE AFTER``: what a change of configuration did to two dumps of one model.

Findings are compared by fingerprint (rule, op, scope path, chain: never node ids, line numbers or
the stage file read), as a baseline is; a finding of BEFORE is fixed only where AFTER read the
rule's final evidence, and new only where BEFORE did and the finding's own file was read whole
(else it is unverified), and both sides are read one compile per folder.
The final graph of each rank (the file ``irlint memory`` reads, chosen by stage name, so
renumbered stage files still pair) is compared node by node: nodes are matched by what survives a
recompile, never by ``%N``. Per rank: activation bytes kept for backward per layer (the ``irlint
memory`` account), ops whose recompute state or ``in_strategy`` changed, and how many nodes could
not be matched. The ranks' comparison is ``diff_ranks``; pairing the inputs and what each side read, ``diff_inputs``.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field

from ..diagnostics import UNREADABLE, Diagnostic
from ..findings import Finding, Report
from .diff_inputs import CompileChoiceError, SideReads, incomplete_sides, pair_finals, pick_compile  # noqa: F401 - the diff command's
from .diff_ranks import HASH, RankDiff, compare_files, match_nodes, node_key  # noqa: F401 - part of the API
from .discover import DumpFile

JSON_VERSION = 1


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
            "before": self.before,
            "after": self.after,
            "summary": {
                "fixed": len(self.fixed),
                "new": len(self.new),
                "unchanged": len(self.unchanged),
                "files_before": len(self.files_before),
                "files_after": len(self.files_after),
                "kept_bytes_before": sum(r.memory["before_total"] for r in self.ranks),
                "kept_bytes_after": sum(r.memory["after_total"] for r in self.ranks),
                "peak_kept_bytes_before": sum(r.memory["before_peak"] for r in self.ranks),
                "peak_kept_bytes_after": sum(r.memory["after_peak"] for r in self.ranks),
                "diagnostics": len(self.diagnostics),
                "unverified_fixed": len(self.unverified_fixed),
                "unverified_new": len(self.unverified_new),
            },
            "fixed": findings(self.fixed),
            "new": findings(self.new),
            "unchanged": findings(self.unchanged),
            "unverified_fixed": findings(self.unverified_fixed),
            "unverified_new": findings(self.unverified_new),
            "incomplete": self.incomplete,
            "compiles": self.compiles,
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

        flat = lambda fs: [o for f in fs for o in f.occurrences]  # noqa: E731
        fixed, new, unchanged = (by_root_cause(part) for part in _compare(flat(before), flat(after)))
        return fixed, new, unchanged
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


def unverified_of(
    gone: list[Finding], files: list[DumpFile], mine: SideReads, theirs: SideReads
) -> tuple[list[Finding], list[Finding]]:
    """(verified, unverified) of the findings of one side (``mine``) that the other does not show:
    verified only where the other side read the rule's final evidence on every rank the finding
    is on, and the finding's own file was read whole."""
    file_of = {f.display: f for f in files}
    keep: list[Finding] = []
    unsure: list[Finding] = []
    for f in gone:
        ranks = (
            (None,)
            if not mine.ranks() - {None} and not theirs.ranks() - {None}
            else (f.ranks or (getattr(file_of.get(f.file), "rank", None),))
        )
        cut = getattr(file_of.get(f.file), "path", None) in mine.unread
        (unsure if cut or any(theirs.short((f.code, r), mine) for r in ranks) else keep).append(f)
    return keep, unsure


def diff_reports(
    before: Report,
    after: Report,
    before_files: list[DumpFile],
    after_files: list[DumpFile],
    before_paths: list[str],
    after_paths: list[str],
    compiles: list[dict] | None = None,
) -> Diff:
    """Compare two lint reports and the final graphs of the files they came from."""
    from .lint_file import read_dump

    fixed, new, unchanged = compare_findings(before.findings, after.findings)
    reads_b, reads_a = SideReads.of(before_files, before), SideReads.of(after_files, after)
    if len(reads_b.ranks()) <= 1 and len(reads_a.ranks()) <= 1:  # two files, or two rank-less folders
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
    return Diff(
        before_paths,
        after_paths,
        fixed,
        new,
        unchanged,
        ranks,
        notes,
        diagnostics,
        list(before.files),
        list(after.files),
        unverified_fixed,
        unverified_new,
        incomplete_sides(reads_b, reads_a),
        compiles or [],
    )


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
