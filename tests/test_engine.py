"""The lint run: stage choice per rule, one finding per problem per folder, broken rules."""
from __future__ import annotations

import shutil
from pathlib import Path

import irlint.engine as engine
from irlint.config import Config
from irlint.rule import Rule, load_rules

CORPUS = Path(__file__).parent / "fixtures" / "corpus"
S2 = CORPUS / "s2_ffn_3d_reshape_blocks"


class _Broken(Rule):
    code = "XX999"
    name = "always-crashes"
    summary = "a rule with a bug"

    def check(self, ir):
        raise KeyError("no such attribute")
        yield  # pragma: no cover


def _config(**kw):
    return Config(cache=False, jobs=1, plugins=False, **kw)


def test_a_crashing_rule_becomes_a_diagnostic_and_the_others_still_run(monkeypatch):
    monkeypatch.setattr(engine, "load_rules", lambda plugins=True: [*load_rules(plugins=False), _Broken])
    report = engine.lint([str(S2 / "21_validate_0076.ir")], _config())
    assert [d.code for d in report.diagnostics] == ["IR011"]
    assert "XX999" in report.diagnostics[0].message and "KeyError" in report.diagnostics[0].message
    assert {f.code for f in report.findings} >= {"RC001", "RC002"}


def test_a_folder_reads_only_the_stage_each_rule_needs():
    files, _ = engine.discover([str(S2)])
    rules = engine.active_rules(_config())
    todo = engine.plan(files, rules)
    assert sorted(Path(p).name for p in todo) == ["21_validate_0076.ir"]
    todo_all = engine.plan(files, rules, all_stages=True)
    assert len(todo_all) == len(files) == 5


def test_one_finding_per_problem_per_folder_even_with_all_stages():
    per_file = sum(len(engine.lint([f], _config()).findings) for f in map(str, sorted(S2.glob("*.ir"))))
    folder = engine.lint([str(S2)], _config(all_stages=True)).findings
    # opt_pass_19, opt_pass_20, validate (and graph_build for the Mul) each show the same problems
    assert per_file > len(folder)
    keys = [(f.rule, f.op, f.with_(stage="").fingerprint) for f in folder]
    assert len(keys) == len(set(keys))


def test_identical_rank_folders_are_reported_once_with_their_ranks(tmp_path):
    for r in range(4):
        shutil.copytree(S2, tmp_path / f"rank_{r}")
    single = engine.lint([str(S2)], _config()).findings
    merged = engine.lint([str(tmp_path)], _config()).findings
    assert len(merged) == len(single)
    assert all(f.ranks == (0, 1, 2, 3) for f in merged)
