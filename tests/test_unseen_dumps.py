"""Real MindSpore 2.10 dumps the rules were not written against (tests/fixtures/unseen).

Each folder holds a few stage files of one run of tests/fixtures/unseen/llama_tiny.py (command in
its MANIFEST.json) and a manifest in the corpus dialect, written from the configuration and checked
by hand against the dump. Matching is the corpus manifest test's (same helpers). Entries with
``hint_contains`` also pin text the matched finding's hint must contain.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import TESTS
from irlint.reader import read_ir
from test_corpus_manifests import _findings, _on_entry, _rules_of, _target

UNSEEN = TESTS / "fixtures" / "unseen"
CASES = sorted(p.parent for p in UNSEEN.glob("*/MANIFEST.json"))

# Disagreements between irlint and a verified manifest entry, keyed (case, kind, index).
KNOWN: dict[tuple[str, str, int], str] = {}


def _manifest(case: Path) -> dict:
    return json.loads((case / "MANIFEST.json").read_text(encoding="utf-8"))


def _entries(kind: str, hints: bool = False) -> list:
    out = []
    for case in CASES:
        for i, entry in enumerate(_manifest(case).get(kind, [])):
            if hints and "hint_contains" not in entry:
                continue
            marks = []
            if hints and (case.name, kind, i) in KNOWN:
                marks = [pytest.mark.xfail(strict=True, reason=KNOWN[(case.name, kind, i)])]
            out.append(pytest.param(case, entry, id=f"{case.name}/{kind}[{i}]", marks=marks))
    return out


def test_fixtures_present():
    assert len(CASES) >= 2
    for case in CASES:
        data = _manifest(case)
        assert data["made_by"].startswith("llama_tiny.py ")
        for name in data["files"]:
            assert (case / name).is_file(), name


@pytest.mark.parametrize("case,entry", _entries("expected"))
def test_expected_finding_is_reported(case, entry):
    found = _findings(_target(case, entry))
    rules = _rules_of(entry)
    hits = [f for f in found if f.rule in rules and _on_entry(f, entry)]
    assert hits, (f"{entry['file']}: no {sorted(rules)} finding on "
                  f"{entry.get('node') or entry.get('scope_contains')}; got "
                  f"{[(f.rule, f.node, f.scope) for f in found]}")
    if entry.get("severity") == "benign":
        assert not [f for f in found if f.rule == "recompute-not-applied" and _on_entry(f, entry)]


@pytest.mark.parametrize("case,entry", _entries("expected", hints=True))
def test_hint_names_the_select_recompute_key(case, entry):
    found = _findings(_target(case, entry))
    hints = [f.hint for f in found if f.rule in _rules_of(entry) and _on_entry(f, entry)]
    assert hints
    assert any(entry["hint_contains"] in h for h in hints), hints


@pytest.mark.parametrize("case,entry", _entries("true_negatives"))
def test_true_negative_is_not_reported(case, entry):
    found = _findings(_target(case, entry))
    bad = [f for f in found if _on_entry(f, entry) and ("rule" not in entry or f.rule == entry["rule"])]
    assert bad == [], [(f.rule, f.node, f.scope, f.message) for f in bad]


@pytest.mark.parametrize("path", sorted(UNSEEN.glob("*/*.ir")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_reader_counts_match_header(path):
    ir = read_ir(str(path))
    assert [str(d) for d in ir.diagnostics] == []
    head = path.read_text(encoding="utf-8")
    cnodes = re.search(r"^Total number of cnodes: (\d+)$", head, re.M)
    subgraphs = re.search(r"^# Total subgraphs: (\d+)$", head, re.M)
    assert cnodes and ir.cnode_count == int(cnodes.group(1))
    assert subgraphs and len(ir.subgraphs) == int(subgraphs.group(1))
