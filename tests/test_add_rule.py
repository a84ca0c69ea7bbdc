"""scripts/add_rule.py: the skeleton it writes is a rule whose examples hold, and it overwrites nothing."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from irlint.rule import Invalid, Says, example_text

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "add_rule.py"


def _script(repo: Path):
    spec = importlib.util.spec_from_file_location("add_rule_under_test", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.REPO = repo  # written under a scratch tree, not the checkout
    return module


def test_the_skeleton_is_a_rule_whose_examples_hold(tmp_path, ir_from_text, capsys):
    script = _script(tmp_path)
    assert script.main(["ZZ901", "toy-skeleton-rule", "--family", "recompute", "--summary", "A toy."]) == 0
    rule_file = tmp_path / "rules" / "recompute" / "toy_skeleton_rule.py"
    assert (tmp_path / "tests" / "test_rule_toy_skeleton_rule.py").is_file()
    assert not (tmp_path / "docs").exists()  # the page is generated from the docstring
    assert "scripts/gen_rule_docs.py" in capsys.readouterr().out
    spec = importlib.util.spec_from_file_location("toy_skeleton_rule", rule_file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    cls = module.ToySkeletonRule
    assert (cls.code, cls.name, cls.default_enabled) == ("ZZ901", "toy-skeleton-rule", False)
    example = cls.INVALID[0]
    assert isinstance(example, Invalid)
    found = list(cls().check(ir_from_text(example.code)))
    assert [Says(f.node, f.cause, f.fix) for f in found] == list(example.says)
    ir = ir_from_text(example_text(cls.VALID[0]))
    assert ir.diagnostics == [] and list(cls().check(ir)) == []
    # a second run finds its files and writes nothing
    before = rule_file.read_text()
    assert script.main(["ZZ902", "toy-skeleton-rule", "--family", "recompute"]) == 2
    assert rule_file.read_text() == before
    assert "exists already" in capsys.readouterr().err


def test_a_taken_code_or_a_bad_name_is_refused(tmp_path, capsys):
    script = _script(tmp_path)
    assert script.main(["RC001", "some-new-rule"]) == 2
    assert "taken by a built-in rule: RC001" in capsys.readouterr().err
    assert script.main(["rc1", "Bad_Name"]) == 2
    assert not (tmp_path / "rules").exists()
    sys.modules.pop("add_rule_under_test", None)
