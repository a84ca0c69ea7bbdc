"""Real MindSpore 2.10 dumps the rules were not written against (tests/fixtures/unseen).

Each folder holds a few stage files of one run of tests/fixtures/unseen/llama_tiny.py (command in
its MANIFEST.json) and a manifest in the corpus dialect, written from the configuration and checked
by hand against the dump. tests/test_corpus_manifests.py checks their entries and
tests/test_reader_corpus.py reads their files; this module checks that they are complete.
"""

from __future__ import annotations

import json

from conftest import TESTS

UNSEEN = TESTS / "fixtures" / "unseen"
CASES = sorted(p.parent for p in UNSEEN.glob("*/MANIFEST.json"))


def test_fixtures_present():
    assert len(CASES) >= 2
    for case in CASES:
        data = json.loads((case / "MANIFEST.json").read_text(encoding="utf-8"))
        assert data["made_by"].startswith("llama_tiny.py ")
        assert data["expected"] and data["true_negatives"]
        for name in data["files"]:
            assert (case / name).is_file(), name
