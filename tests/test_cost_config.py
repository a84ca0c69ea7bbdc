"""``irlint cost/memory --config CONFIG.yaml`` (issue 33, item 2): the depth and pipeline stages read
from a MindFormers config (tests/fixtures/mindformers-configs, copied from the 2.1.0 wheel) instead
of --layers."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import CORPUS, TESTS

import irlint.cli
from irlint.accounts.projection import stage_depths
from irlint.mfyaml import YamlError, depth, stage_layers

CONFIGS = TESTS / "fixtures" / "mindformers-configs"
GLM4 = CONFIGS / "finetune_glm4_9b.yaml"  # num_layers: 40, pipeline_stage: 4
PP2 = TESTS / "fixtures" / "recompute" / "par-rc-pp2_dp2_mp2_micro4_select"  # ranks 0 (layers 0-1) and 4 (layers 2-3)
ONE = CORPUS / "llama-recompute-modes"


def run(*args):
    return CliRunner().invoke(irlint.cli.main, [*map(str, args)])


def as_json(*args) -> dict:
    result = run(*args, "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def variant(tmp_path, layers: str, stages: str) -> str:
    """The GLM4 config with another depth and number of stages (its two lines edited)."""
    text = GLM4.read_text(encoding="utf-8")
    assert "    num_layers: 40\n" in text and "  pipeline_stage: 4\n" in text
    path = tmp_path / "cfg.yaml"
    path.write_text(
        text.replace("    num_layers: 40\n", f"    {layers}\n").replace("  pipeline_stage: 4\n", f"  {stages}\n"),
        encoding="utf-8",
    )
    return str(path)


def test_depth_of_the_shipped_configs():
    assert depth(GLM4.read_text(encoding="utf-8")) == (40, 4)
    # the mcore configs read the depth from pretrained_model_dir's config.json: none to read here
    with pytest.raises(YamlError, match="--layers"):
        depth((CONFIGS / "finetune_qwen3.yaml").read_text(encoding="utf-8"))


def test_depth_from_num_hidden_layers_and_without_a_pipeline(tmp_path):
    path = variant(tmp_path, "num_hidden_layers: 28", "# no pipeline_stage")
    assert depth(open(path, encoding="utf-8").read()) == (28, 1)


def test_mindformers_splits_the_layers_evenly_the_remainder_on_the_last_stages():
    assert stage_layers(40, 4) == [10, 10, 10, 10]
    assert stage_layers(42, 4) == [10, 10, 11, 11]
    assert sum(stage_layers(81, 8)) == 81


def test_the_config_split_replaces_the_proportional_one():
    sets = [{"0", "1", "2"}, {"3"}]
    assert stage_depths(sets, 8) == [(6, 0), (2, 6)]  # as the dump holds them
    assert stage_depths(sets, 8, [4, 4]) == [(4, 0), (4, 4)]  # as the config places them
    assert stage_depths(sets, 8, [2, 3, 3]) == [(6, 0), (2, 6)]  # another number of stages: the dump's


@pytest.mark.parametrize("command", ["cost", "memory"])
def test_config_projects_as_layers_n_on_one_device(command, tmp_path):
    cfg = variant(tmp_path, "num_layers: 80", "pipeline_stage: 1")
    by_config = as_json(command, ONE, "--config", cfg)
    by_layers = as_json(command, ONE, "--layers", "80")
    assert [f["projected"] for f in by_config["files"]] == [f["projected"] for f in by_layers["files"]]
    assert by_config["files"][0]["projected"]["layers"] == 80
    assert by_config["config"] == {"path": cfg, "num_layers": 80, "pipeline_stage": 1, "layers_per_stage": None}
    assert "config" not in by_layers


@pytest.mark.parametrize("command", ["cost", "memory"])
def test_config_gives_each_pipeline_stage_its_layers(command, tmp_path):
    cfg = variant(tmp_path, "num_layers: 40", "pipeline_stage: 2")
    out = as_json(command, PP2, "--config", cfg)
    import jsonschema

    jsonschema.validate(
        out, json.loads((TESTS / "fixtures" / "schemas" / f"irlint-{command}-1.json").read_text(encoding="utf-8"))
    )
    by_rank = {f["rank"]: f["projected"] for f in out["files"]}
    assert (by_rank[0]["layers"], by_rank[4]["layers"]) == (20, 20)
    assert by_rank[0]["blocks"][0]["layers"].startswith("0-") and by_rank[4]["blocks"][0]["layers"].startswith("20-")
    assert out["config"]["layers_per_stage"] == [20, 20] and "note" not in out["config"]


def test_a_config_with_another_number_of_stages_is_said(tmp_path):
    out = as_json("cost", PP2, "--config", GLM4)
    assert "the dump shows 2" in out["config"]["note"]
    text = run("cost", PP2, "--config", GLM4).output
    assert f"Depth from {GLM4}: 40 decoder layers, 4 pipeline stages of [10, 10, 10, 10] layers." in text
    assert "projected" in text


@pytest.mark.parametrize("command", ["cost", "memory"])
def test_bad_configs_exit_2_with_one_line(command, tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("model: [unclosed\n", encoding="utf-8")
    cases = [
        (["--config", str(CONFIGS / "finetune_qwen3.yaml")], "num_layers"),
        (["--config", str(broken)], "not valid YAML"),
        (["--config", str(tmp_path / "missing.yaml")], "cannot read"),
        (["--config", str(GLM4), "--layers", "8"], "not both"),
    ]
    for args, said in cases:
        result = run(command, ONE, *args)
        assert result.exit_code == 2, (args, result.output)
        assert said in result.stderr and "Traceback" not in result.output
