"""Each corpus case's MANIFEST.json against irlint's findings (tests/fixtures/corpus, unseen,
recompute, and ../shared/corpus when present), with no pinned exceptions.

Two manifest dialects exist: ``expected`` / ``true_negatives`` / ``not_scored`` and
``expected_findings`` / ``must_not_flag``. Every entry's file is linted by name (all rules, RC004
switched on). An expected entry must be matched by a finding of its rule (or one of
``any_of_rules``) in that file, on its node (and subgraph, when given) or, without a node, on a
node or related node whose scope contains ``scope_contains``. A negative entry with ``rule``
forbids that rule there; without ``rule`` it forbids every finding there. ``not_scored`` entries
are not asserted. Entries with ``hint_contains`` also pin text the matched finding's hint must contain (the
``select_recompute`` key). Entries marked ``severity: benign`` describe a tag without effect, which irlint
reports as ``recompute-tag-unused`` (RC004, info) and not as ``recompute-not-applied``.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import pytest
from conftest import CORPUS, SHARED_CORPUS, quiet_config

from irlint.findings import Finding
from irlint.runner.engine import lint

BENIGN_RULE = "recompute-tag-unused"

UNSEEN = CORPUS.parent / "unseen"  # real dumps of runs the rules were not written against
RECOMPUTE = CORPUS.parent / "recompute"  # real dumps made for one recompute judgement each


def _roots() -> list[Path]:
    roots = [CORPUS, UNSEEN, RECOMPUTE]
    if SHARED_CORPUS.is_dir():
        roots.append(SHARED_CORPUS)
    return roots


# Entries of shared cases irlint does not judge right yet, by (case, kind) -> indices. Strict: an
# entry that starts passing fails the run until it is taken off this list.
PENDING: dict[tuple[str, str], set[int]] = {}


def _entries(kinds: tuple[str, ...]) -> list:
    out = []
    for root in _roots():
        for manifest in sorted(root.glob("*/MANIFEST.json")):
            data = json.loads(manifest.read_text(encoding="utf-8"))
            for kind in kinds:
                pending = PENDING.get((manifest.parent.name, kind), set()) if root == SHARED_CORPUS else set()
                for i, entry in enumerate(data.get(kind, [])):
                    label = f"{root.parent.name}/{manifest.parent.name}/{kind}[{i}]"
                    marks = [pytest.mark.xfail(strict=True, reason="issue 17")] if i in pending else []
                    out.append(pytest.param(manifest.parent, entry, id=label, marks=marks))
    return out


@lru_cache(maxsize=None)
def _findings(path: str) -> tuple[Finding, ...]:
    report = lint([path], quiet_config(extend_select=["RC004"]))
    assert [str(d) for d in report.diagnostics] == []
    # a finding grouped by root cause counts for each of its occurrences
    return tuple(o for f in report.findings for o in f.occurrences)


def _target(case: Path, entry: dict) -> str:
    return str(case / entry["file"]) if "file" in entry else str(case)


def _on_entry(f: Finding, entry: dict, related: bool = False) -> bool:
    if "node" in entry:
        graph = entry.get("graph")
        if f.node == entry["node"] and (graph is None or f.graph == graph):
            return True
        # an expected chain reported as an occurrence of its root cause's finding (FINDINGS-parallel:
        # "with match_related: true, a finding on any chain node matches")
        return (
            related
            and bool(entry.get("match_related"))
            and any(r.node == entry["node"] and (graph is None or r.graph == graph) for r in f.related)
        )
    needle = entry.get("scope_contains", "")
    return needle in f.scope or any(needle in r.scope for r in f.related)


def _rules_of(entry: dict) -> set[str]:
    if entry.get("severity") == "benign":
        return {BENIGN_RULE}
    return set(entry.get("any_of_rules") or [entry["rule"]])


@pytest.mark.parametrize("case,entry", _entries(("expected", "expected_findings")))
def test_expected_finding_is_reported(case, entry):
    found = _findings(_target(case, entry))
    rules = _rules_of(entry)
    hits = [f for f in found if f.rule in rules and _on_entry(f, entry, related=True)]
    assert hits, (
        f"{entry.get('file', case.name)}: no {sorted(rules)} finding on "
        f"{entry.get('node') or entry.get('scope_contains')}; got "
        f"{[(f.rule, f.node, f.scope) for f in found]}"
    )
    if entry.get("severity") == "benign":
        assert not [f for f in found if f.rule == "recompute-not-applied" and _on_entry(f, entry)]
    if "hint_contains" in entry:  # e.g. the select_recompute key the fix needs
        assert any(entry["hint_contains"] in f.hint for f in hits), [f.hint for f in hits]


@pytest.mark.parametrize("case,entry", _entries(("true_negatives", "must_not_flag")))
def test_true_negative_is_not_reported(case, entry):
    found = _findings(_target(case, entry))
    bad = [f for f in found if _on_entry(f, entry) and ("rule" not in entry or f.rule == entry["rule"])]
    assert bad == [], [(f.rule, f.node, f.scope, f.message) for f in bad]


@pytest.mark.parametrize(
    "root", [r for r in _roots() if (r / "full-folder-1layer").is_dir()], ids=lambda p: p.parent.name
)
def test_folder_reports_reshape_blocks_once(root):
    folder = root / "full-folder-1layer"
    report = lint([str(folder)], quiet_config())
    hits = [f for f in report.findings if f.rule == "reshape-blocks-silu-mul-recompute"]
    assert len(hits) == 1, [(f.file, f.node) for f in hits]
    assert "layers-CellList/0-DecoderLayer/feed_forward-FeedForward/" in hits[0].scope
    assert hits[0].file.endswith("21_validate_0076.ir")
