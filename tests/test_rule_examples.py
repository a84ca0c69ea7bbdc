"""Every loaded rule's VALID / INVALID IR snippets, in Fixit's style: an INVALID example names each
finding it must give (its node and what the rule says in the headline, its cause and its fix), a
VALID one gives none, and each snippet is a complete dump the reader reads without a diagnostic. A
run-level rule runs each snippet as a run of one file (with its ``EXAMPLE_CONFIG``); one whose
finding needs several files names a fixture folder (``INVALID_RUN``) that a lint of it must find."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from irlint.rule import Invalid, Says, example_text, load_rules
from irlint.run_rule import RunFile, RunRule
from irlint.runner.config import Config
from irlint.runner.engine import lint

RULES = load_rules(plugins=False)
CASES = [(cls, kind, i) for cls in RULES for kind in ("INVALID", "VALID") for i in range(len(getattr(cls, kind)))]
RUNS = [cls for cls in RULES if getattr(cls, "INVALID_RUN", None)]
FIXTURES = Path(__file__).parent / "fixtures"


def _found(cls, ir) -> list:
    if issubclass(cls, RunRule):
        config = Config(**getattr(cls, "EXAMPLE_CONFIG", {}))
        return list(cls().check_run([RunFile(SimpleNamespace(rank=None, display=ir.path, path=ir.path), ir)], config))
    return list(cls().check(ir))


def test_every_rule_carries_examples():
    missing = [cls.code for cls in RULES if not (cls.INVALID or getattr(cls, "INVALID_RUN", None)) or not cls.VALID]
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
    found = [f for f in _found(cls, ir) if f.code == cls.code]
    if kind == "INVALID":
        assert found, f"{cls.code} INVALID example {index} yields no finding"
        if isinstance(example, Invalid):
            assert [Says(f.node, f.cause, f.fix) for f in found] == list(example.says)
    else:
        assert found == [], f"{cls.code} VALID example {index} yields {[f.message for f in found]}"


@pytest.mark.parametrize("cls", RUNS, ids=[c.code for c in RUNS])
def test_run_rule_example(cls):
    report = lint(FIXTURES / cls.INVALID_RUN, Config(select=[cls.code], cache=False, jobs=1))
    assert [f.code for f in report.findings] == [cls.code]
