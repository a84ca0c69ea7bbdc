"""Every loaded rule's VALID / INVALID IR snippets, in Fixit's style: an INVALID example names each
finding it must give (its node and what the rule says in the headline, its cause and its fix), a
VALID one gives none, and each snippet is a complete dump the reader reads without a diagnostic."""

from __future__ import annotations

import pytest

from irlint.rule import Invalid, Says, example_text, load_rules

RULES = load_rules(plugins=False)
CASES = [(cls, kind, i) for cls in RULES for kind in ("INVALID", "VALID") for i in range(len(getattr(cls, kind)))]


def test_every_rule_carries_examples():
    missing = [cls.code for cls in RULES if not cls.INVALID or not cls.VALID]
    assert missing == []


def test_every_invalid_example_names_what_it_must_say():
    unnamed = [
        f"{cls.code} INVALID {i}" for cls in RULES for i, x in enumerate(cls.INVALID) if not isinstance(x, Invalid)
    ]
    assert unnamed == []
    assert all(x.says for cls in RULES for x in cls.INVALID if isinstance(x, Invalid))


@pytest.mark.parametrize("cls,kind,index", CASES, ids=[f"{c.code}-{k}-{i}" for c, k, i in CASES])
def test_rule_example(cls, kind, index, ir_from_text):
    example = getattr(cls, kind)[index]
    ir = ir_from_text(example_text(example))
    assert [str(d) for d in ir.diagnostics] == []
    found = [f for f in cls().check(ir) if f.code == cls.code]
    if kind == "INVALID":
        assert found, f"{cls.code} INVALID example {index} yields no finding"
        if isinstance(example, Invalid):
            assert [Says(f.node, f.cause, f.fix) for f in found] == list(example.says)
    else:
        assert found == [], f"{cls.code} VALID example {index} yields {[f.message for f in found]}"
