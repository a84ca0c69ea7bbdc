"""The contract between the redistribution rules and ``irlint comm``: a finding names its waste in
typed fields (``waste_kinds``, ``wasted``), the account reads those and nothing else, and the fix
to paste is the finding's ``snippet``."""

from __future__ import annotations

import pytest
from conftest import CORPUS

from irlint.accounts.comm import account, redistribution_findings
from irlint.findings import WASTE_KINDS, Finding, WastedBytes
from irlint.findings_json import extra_data
from irlint.read.reader import read_ir
from irlint.rule import load_rules

CASES = [
    "par-mismatch-sp_then_cols",
    "par-mismatch-gate_gather_slice",
    "par-mismatch-ffn_col_col",
    "par-mismatch-allreduce_then_rows",
    "par-mismatch-layout_permutation",
]


def _ir(case: str):
    (path,) = sorted((CORPUS / case / "rank_0").glob("21_validate_*.ir"))
    return read_ir(str(path))


@pytest.mark.parametrize("case", CASES)
def test_each_finding_names_its_waste_in_typed_fields(case):
    ir = _ir(case)
    found = redistribution_findings(ir)
    assert found
    for f in found:
        extra = extra_data(f)
        assert f.waste_kinds and set(f.waste_kinds) <= WASTE_KINDS
        assert [(w.graph, w.node, w.op, w.bytes) for w in f.wasted] == [
            (e["graph"], e["node"], e["op"], e["bytes"]) for e in extra["waste"]
        ]
        fix = extra.get("fix")
        if isinstance(fix, dict) and fix.get("in_strategy"):
            assert f"in_strategy = {fix['in_strategy']}" in f.snippet
            assert f.to_dict()["snippet"] == f.snippet
        assert f.to_dict()["waste_kinds"] == list(f.waste_kinds)


def test_the_rules_comm_runs_are_those_that_declare_waste_kinds():
    declared = {cls.code: set(cls.waste_kinds) for cls in load_rules(plugins=False) if cls.waste_kinds}
    assert set(declared) == {"PC001", "PC002"}
    assert set().union(*declared.values()) == WASTE_KINDS


def test_the_account_reads_the_typed_fields_not_the_code_or_extra():
    ir = _ir("par-mismatch-sp_then_cols")
    found = redistribution_findings(ir)
    counted = account(ir, found)
    assert counted.waste_bytes > 0
    # the same bytes under another code, without the rule's facts or its waste total: counted the same
    renamed = [f.with_(code="XX900", facts=(), waste=None) for f in found]
    assert account(ir, renamed).waste_bytes == counted.waste_bytes
    # extra["waste"] alone names no waste
    untyped = [f.with_(waste_kinds=(), wasted=()) for f in found]
    assert account(ir, untyped).waste_bytes == 0


def test_a_finding_cannot_name_an_unknown_kind_or_bytes_without_a_kind():
    base = Finding("PC001", "r", "warning", "f.ir", 1, "@g", "%1", "AllGather", "s", "m")
    wasted = (WastedBytes("@g", "%1", "AllGather", 8),)
    assert base.with_(waste_kinds=("gather-then-slice",), wasted=wasted).wasted == wasted
    with pytest.raises(ValueError, match="not a waste kind"):
        base.with_(waste_kinds=("made-up",))
    with pytest.raises(ValueError, match="need the waste kind"):
        base.with_(wasted=wasted)
