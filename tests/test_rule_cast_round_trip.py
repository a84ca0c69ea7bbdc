"""DT001 (cast-round-trip): its examples, and the cases of the corpus it names."""

from __future__ import annotations

from pathlib import Path

import pytest

from irlint.read.reader import read_ir
from irlint.rule import example_text, load_rules

RULE = next(cls for cls in load_rules(plugins=False) if cls.code == "DT001")
SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def test_the_invalid_example_is_found_and_the_valid_one_is_clean(ir_from_text):
    flagged = list(RULE().check(ir_from_text(example_text(RULE.INVALID[0]))))
    assert [(f.code, f.node, f.op) for f in flagged] == [("DT001", "%1", "Cast")]
    assert "nothing else reads the copy" in flagged[0].message
    assert list(RULE().check(ir_from_text(example_text(RULE.VALID[0])))) == []


# the same MindFormers Llama (dp2 x mp4, select recompute): the corpus case, and the lazy_inline
# compile under tests/fixtures, where the Add that reads the copy is in the outer graph's call
LLAMA_CASES = [
    pytest.param(
        SHARED / "par-rc-dp2_mp4_select_blocked" / "rank_0" / "21_validate_0082.ir",
        ("%4", [("%3", "Cast"), ("%2", "Gather"), ("%39", "Add")], "%2"),
        marks=pytest.mark.skipif(not SHARED.is_dir(), reason="needs ../shared"),
        id="corpus",
    ),
    pytest.param(
        FIXTURES / "recompute" / "par-rc-mf_dp2_mp4_select_blocked" / "rank_0" / "21_validate_0093.ir",
        ("%13", [("%4", "Cast"), ("%3", "Gather"), ("%72", "Add"), ("%230", "Partial")], "%3"),
        id="lazy_inline",
    ),
]


@pytest.mark.parametrize("path,expected", LLAMA_CASES)
def test_mindformers_embedding_cast_back_by_the_first_norm(path, expected):
    # the embedding's Float32 Gather cast to Float16 (compute dtype), cast back by layer 0's RMSNorm;
    # the residual Add reads the Float16 copy, so the down-cast stays
    node, related, source = expected
    found = list(RULE().check(read_ir(str(path))))
    assert [(f.node, f.layer) for f in found] == [(node, "0")]
    f = found[0]
    assert f.cause.startswith("Float32->Float16->Float32 round trip")
    assert [(r.node, r.op) for r in f.related] == related
    assert f.fix == f"read {source} (Float32) instead" and "stays for its other readers" in f.hint
    assert "8.00 KiB" in f.message


def test_no_round_trip_no_finding():
    # Casts of single-device Llamas in the rule's stage (s4's graph_build has round trips the
    # optimizer folds before validate: the rule reads validate)
    paths = [
        p
        for case in ("llama-cast", "s4_cast_rmsnorm")
        for p in sorted((FIXTURES / "corpus" / case).glob("*validate*.ir"))
    ]
    assert paths
    for path in paths:
        assert list(RULE().check(read_ir(str(path)))) == [], path


def test_off_by_default_and_in_the_plan_by_hand(lint_paths):
    case = FIXTURES / "recompute" / "par-rc-mf_dp2_mp4_select_blocked" / "rank_0"
    assert not [f for f in lint_paths([case]).findings if f.code == "DT001"]
    from irlint.fixplan import fix_plan

    report = lint_paths([case], extend_select=["DT001"])
    found = [f for f in report.findings if f.code == "DT001"]
    plan = fix_plan(found)
    assert [(r["code"], r["node"], r["fix"]) for r in plan["by_hand"]] == [
        ("DT001", "%13", "read %3 (Float32) instead")
    ]
