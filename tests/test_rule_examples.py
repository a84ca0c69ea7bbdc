"""Every loaded rule's VALID / INVALID IR snippets: INVALID yields a finding of that rule, VALID
none, and each snippet is a complete dump the reader reads without a diagnostic."""

from __future__ import annotations

import pytest

from irlint.rule import load_rules

RULES = load_rules(plugins=False)
CASES = [(cls, kind, i) for cls in RULES for kind in ("INVALID", "VALID") for i in range(len(getattr(cls, kind)))]


def test_every_rule_carries_examples():
    missing = [cls.code for cls in RULES if not cls.INVALID or not cls.VALID]
    assert missing == []


@pytest.mark.parametrize("cls,kind,index", CASES, ids=[f"{c.code}-{k}-{i}" for c, k, i in CASES])
def test_rule_example(cls, kind, index, ir_from_text):
    ir = ir_from_text(getattr(cls, kind)[index])
    assert [str(d) for d in ir.diagnostics] == []
    found = [f for f in cls().check(ir) if f.code == cls.code]
    if kind == "INVALID":
        assert found, f"{cls.code} INVALID example {index} yields no finding"
    else:
        assert found == [], f"{cls.code} VALID example {index} yields {[f.message for f in found]}"
