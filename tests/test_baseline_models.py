"""Baselines across models: a fingerprint names the model its graph compiled, so a baseline of one
model hides nothing of another's dump (a baseline of format 1, written before, still matches the
dumps it was written on); part of a group in the baseline is counted and said."""

from __future__ import annotations

import functools
import json

from click.testing import CliRunner
from conftest import TESTS

from irlint.cli import main
from irlint.runner.baseline import new_findings, read_baseline, write_baseline
from irlint.runner.config import Config
from irlint.runner.engine import lint

LLAMA = TESTS / "fixtures" / "recompute" / "aliased-scopes-l4"  # MindFormers LlamaForCausalLM
OTHER = TESTS / "fixtures" / "recompute" / "ms271-attn-ffn"  # another model (CausalLM), same problems by name


@functools.cache
def _lint(path):
    return tuple(lint([str(path)], Config(cache=False, jobs=1)).findings)


def _findings(path):
    return list(_lint(path))


def test_two_models_whose_findings_read_alike_have_different_fingerprints():
    a, b = _findings(LLAMA), _findings(OTHER)
    ao = {o.unmodelled_fingerprint for f in a for o in f.occurrences}
    bo = {o.unmodelled_fingerprint for f in b for o in f.occurrences}
    assert ao & bo  # alike without the model: what let one model's baseline hide the other's finding
    assert {o.model for f in a for o in f.occurrences} == {"LlamaForCausalLM"}
    assert not {o.fingerprint for f in a for o in f.occurrences} & {o.fingerprint for f in b for o in f.occurrences}


def test_a_baseline_of_one_model_hides_nothing_of_another(tmp_path):
    baseline = tmp_path / "llama.json"
    write_baseline(baseline, _findings(LLAMA))
    other = _findings(OTHER)
    assert new_findings(other, read_baseline(baseline)) == other
    result = CliRunner().invoke(main, ["-n", str(OTHER), "--baseline", str(baseline), "--format", "json"])
    assert json.loads(result.stdout)["summary"]["baselined"] == 0


def test_a_format_1_baseline_still_matches_the_dumps_it_was_written_on(tmp_path):
    found = _findings(LLAMA)
    entries = [{"fingerprint": o.unmodelled_fingerprint} for f in found for o in f.occurrences]
    baseline = tmp_path / "old.json"
    baseline.write_text(json.dumps({"irlint-baseline": 1, "findings": entries}), encoding="utf-8")
    assert new_findings(found, read_baseline(baseline)) == []


def test_part_of_a_group_in_the_baseline_is_counted_and_said(tmp_path):
    found = _findings(LLAMA)
    group = next(f for f in found if len(f.occurrences) > 1)
    baseline = tmp_path / "part.json"
    write_baseline(baseline, [group.occurrences[0]])
    result = CliRunner().invoke(main, ["-n", str(LLAMA), "--baseline", str(baseline)])
    assert "1 known occurrence of the findings shown hidden by the baseline" in result.output
    assert "known finding" not in result.output  # none hidden whole
