"""Every real dump reads completely: no diagnostics, and the CNode count MindSpore printed."""
from __future__ import annotations

from pathlib import Path

import pytest

from irlint.discover import discover
from irlint.reader import read_ir

FIXTURES = Path(__file__).parent / "fixtures" / "corpus"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "corpus"


def _dumps(root: Path) -> list[str]:
    if not root.is_dir():
        return []
    files, _ = discover([str(root)])
    return sorted(f.path for f in files)


# real dumps (the corpus and runs the rules were not written against) and the synthetic parallel ones
FIXTURE_ROOTS = (FIXTURES, FIXTURES.parent / "unseen", FIXTURES.parent / "synthetic")
FIXTURE_DUMPS = [p for root in FIXTURE_ROOTS for p in _dumps(root)]


def test_fixture_corpus_is_there():
    assert len(FIXTURE_DUMPS) > 100


@pytest.mark.parametrize("path", FIXTURE_DUMPS, ids=lambda p: str(Path(p).relative_to(FIXTURES.parent)))
def test_fixture_dump_reads_completely(path):
    ir = read_ir(path)
    assert [d.to_dict() for d in ir.diagnostics] == []
    assert ir.header["total_cnodes"] == ir.cnode_count
    assert len(ir.subgraphs) == ir.header["total_subgraphs"]


def test_shared_corpus_reads_completely():
    dumps = _dumps(SHARED)
    if not dumps:
        pytest.skip("../shared/corpus is not here (a clone of the project alone)")
    bad = []
    for path in dumps:
        ir = read_ir(path)
        if ir.diagnostics or ir.header.get("total_cnodes") != ir.cnode_count:
            bad.append((path, ir.cnode_count, ir.header.get("total_cnodes"), ir.diagnostics[:2]))
    assert bad == []
