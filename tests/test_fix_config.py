"""The fix plan's configuration changes (issue 29/30): the config keys of root-cause findings on the
real MindFormers 2.1.0 context-parallel compiles, in the plan (JSON, text, HTML), and what
``irlint fix`` does with them: ``use_rope_slice: False`` written where the config has the key,
``runner_config.batch_size`` only printed (it changes the global batch)."""

from __future__ import annotations

import json
import shutil

import jsonschema
import pytest
from click.testing import CliRunner
from conftest import CORPUS, TESTS, quiet_config

import irlint.cli
from irlint.fixplan import fix_plan, plan_text
from irlint.runner.engine import lint

SCHEMA = json.loads((TESTS / "fixtures" / "schemas" / "irlint-fix-plan-1.json").read_text(encoding="utf-8"))
GLM4 = TESTS / "fixtures" / "mindformers-configs" / "finetune_glm4_9b.yaml"
BOTH = CORPUS / "par-mindformers-llama_cp2_b2_rope_slice"  # batch merge and RoPE's tuple strategy
BATCH = CORPUS / "par-mindformers-llama_cp2_b2"  # batch merge only
ROPE = CORPUS / "par-mindformers-llama_cp2_b1_rope_slice"  # RoPE only
NONE = CORPUS / "par-mindformers-llama_cp2_b1"  # neither


def plan_of(path):
    plan = fix_plan(lint([str(path)], quiet_config()).findings)
    jsonschema.validate(plan, SCHEMA)
    return plan


@pytest.mark.parametrize(
    "case, keys",
    [
        (BOTH, {"runner_config.batch_size", "model.model_config.use_rope_slice"}),
        (BATCH, {"runner_config.batch_size"}),
        (ROPE, {"model.model_config.use_rope_slice"}),
        (NONE, set()),
    ],
)
def test_each_root_cause_brings_its_config_key_once(case, keys):
    plan = plan_of(case)
    assert {c["key"] for c in plan["config"]} == keys
    assert len(plan["config"]) == len(keys)
    for c in plan["config"]:
        assert c["findings"] and set(c["findings"]) <= set(plan["resolves"])
        if c["key"] == "runner_config.batch_size":
            assert (c["value"], c["written_by_fix"], c["cause"]) == (1, False, "batch-merge")
            assert "now 2" in c["why"] and "global batch" in c["note"]
        else:
            assert (c["value"], c["written_by_fix"], c["cause"]) == (False, True, "tuple-beside-layout")


def test_the_plan_block_shows_the_config_lines_in_text_and_html(tmp_path):
    text = CliRunner().invoke(irlint.cli.main, [str(BOTH), "-n", "-q"]).output
    block = text.split("\n\n", 1)[0]
    assert block.startswith("Fix plan (every finding at once)")
    # the dotted keys as the YAML they stand for (issue 42: the plan pastes into a config as it is)
    assert "  runner_config:\n    batch_size: 1   # one sequence per data-parallel replica (now 2)" in block
    assert "set it yourself" in block
    assert "  model:\n    model_config:\n      use_rope_slice: False   # " in block and "irlint fix writes it" in block
    page = tmp_path / "r.html"
    CliRunner().invoke(irlint.cli.main, [str(BOTH), "-n", "--format", "html", "-o", str(page)])
    html = page.read_text(encoding="utf-8")
    plan = html[html.index('id="fix-plan"') :]
    assert "use_rope_slice: False" in plan and "batch_size: 1" in plan and "runner_config:" in plan
    assert plan_text(plan_of(NONE)) == ""


def with_rope_slice(tmp_path) -> tuple:
    """The shipped GLM4 config with ``use_rope_slice: True`` under model_config (one line added)."""
    text = GLM4.read_text(encoding="utf-8")
    assert "    num_layers: 40\n" in text
    text = text.replace(
        "    num_layers: 40\n", "    num_layers: 40\n    use_rope_slice: True   # RoPE by slice/neg/concat\n"
    )
    path = tmp_path / "cfg.yaml"
    path.write_text(text, encoding="utf-8")
    return path, text


def fix(*args):
    return CliRunner().invoke(irlint.cli.main, ["fix", *map(str, args), "--no-cache"])


def test_fix_writes_use_rope_slice_and_only_prints_batch_size(tmp_path):
    path, before = with_rope_slice(tmp_path)
    shown = fix(path, BOTH, "--diff")
    assert shown.exit_code == 1 and path.read_text(encoding="utf-8") == before
    minus = [ln for ln in shown.stdout.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    plus = [ln for ln in shown.stdout.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    assert minus == ["-    use_rope_slice: True   # RoPE by slice/neg/concat"]
    assert plus == ["+    use_rope_slice: False   # RoPE by slice/neg/concat"]
    assert "would set model.model_config.use_rope_slice: True -> False" in shown.stderr
    assert "not written, set it yourself: runner_config.batch_size: 1" in shown.stderr

    done = fix(path, BOTH)
    # left to do by hand: the batch size
    assert done.exit_code == 1, done.output
    after = path.read_text(encoding="utf-8")
    assert after == before.replace("use_rope_slice: True   #", "use_rope_slice: False   #")
    assert "  batch_size: 1" in after  # runner_config untouched (it was 1 in the shipped config already)
    # applied once: nothing more to write for the RoPE cause
    again = fix(path, ROPE, "--diff")
    assert again.exit_code == 0 and again.stdout == "", again.output


def test_fix_never_adds_the_key_a_config_does_not_have(tmp_path):
    path = tmp_path / "cfg.yaml"
    shutil.copyfile(GLM4, path)
    before = path.read_bytes()
    result = fix(path, ROPE)
    assert result.exit_code == 1
    assert path.read_bytes() == before
    assert "model.model_config.use_rope_slice is not in the config" in result.stderr


def test_set_option_keeps_every_other_byte_and_the_spelling():
    from irlint.mfyaml import set_option

    text = "model:\n  model_config:\n    use_rope_slice: true  # x\n    other: 1\nrunner_config:\n  batch_size: 2\n"
    new, said = set_option(text, "model.model_config.use_rope_slice", False)
    assert new == text.replace("true  # x", "false  # x") and "-> false" in said
    assert set_option(new, "model.model_config.use_rope_slice", False) == (
        new,
        "model.model_config.use_rope_slice is False already",
    )
    assert set_option(text, "model.model_config", False)[0] == text  # a mapping is never replaced
