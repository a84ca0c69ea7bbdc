"""The whole device: each rank's predicted peak of device memory against MindSpore's DryRun (the memory
tracker's peak of used memory), the budget rule and the pipeline offset plan.

The fixtures ``fixtures/dryrun/*`` are a MindFormers 2.1.0 Llama (hidden 256, vocabulary 4096, sequence 128,
fp16 compute, nn.Momentum) compiled and stepped under DryRun (MS_SIMULATION_LEVEL=1) on 8 simulated devices:
each rank's validate dump (gzipped) and the tracker's peak of used memory (``TRUTH.json``, with the layout):
pp4 x dp2 with 8 micro batches (``pp4``), the same with the offset [-1, 1, 1, -1] (``pp4_off_0110``) and with
full recompute (``pp4_rc``; with that offset ``pp4_rc_off_0110``), dp2 x mp4 without a pipeline (``dp2mp4``) and
with optimizer parallel (``dp2mp4_opt``), pp2 x dp4 with 2 interleave chunks (``pp2_vpp2``: 4 layers;
``pp2_vpp2_l8``: 8 layers, and ``pp2_vpp2_l8_off`` with the per-chunk offset planned for it)."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner
from conftest import TESTS

from irlint.accounts.device import PARTS, block, config_device_memory, param_role, parse_device_memory
from irlint.cli import main

DRYRUN = TESTS / "fixtures" / "dryrun"
PP4 = DRYRUN / "pp4"
SHARED_PP4 = TESTS.parent.parent / "shared" / "dryrun" / "pp4"
SCHEMAS = TESTS / "fixtures" / "schemas"
QWEN = TESTS / "fixtures" / "mindformers-configs" / "finetune_qwen3.yaml"
GLM4 = TESTS / "fixtures" / "mindformers-configs" / "finetune_glm4_9b.yaml"  # sets num_layers and the budget


def run(*args):
    return CliRunner().invoke(main, [*map(str, args)], catch_exceptions=False)


def memory_json(folder: Path, *args) -> dict:
    result = run("memory", folder, "--format", "json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def truth(folder: Path) -> dict[int, int]:
    data = json.loads((folder / "TRUTH.json").read_text(encoding="utf-8"))
    if "tracker_peak_used_bytes" in data:
        return {int(k): v for k, v in data["tracker_peak_used_bytes"].items()}
    return {int(k): v["tracker_peak_used_bytes"] for k, v in data["ranks"].items()}


def _within_3_percent(folder: Path) -> None:
    files = memory_json(folder)["files"]
    expected = truth(folder)
    assert sorted(f["rank"] for f in files) == sorted(expected)
    for f in files:
        assert abs(f["device_peak_bytes"] / expected[f["rank"]] - 1) < 0.03, (f["rank"], f["device_peak_bytes"])
        assert sum(f["device_peak_parts"].values()) == f["device_peak_bytes"]
        assert f["device_peak_source"] == "frontend dump"


@pytest.mark.parametrize("run", sorted(p.name for p in DRYRUN.iterdir() if p.is_dir()))
def test_device_peak_within_3_percent_of_dryrun_on_every_rank(run):
    _within_3_percent(DRYRUN / run)


@pytest.mark.skipif(not SHARED_PP4.exists(), reason="../shared/dryrun is not here")
def test_device_peak_within_3_percent_of_dryrun_on_the_shared_run():
    _within_3_percent(SHARED_PP4)


def test_device_peak_parts_and_where():
    files = {f["rank"]: f for f in memory_json(PP4)["files"]}
    assert [files[r]["pipeline_stage"] for r in (0, 2, 4, 6)] == [0, 1, 2, 3]
    first, last = files[0], files[6]
    assert list(first["device_peak_parts"]) == list(PARTS)
    # the first stage: 4 micro batches in flight, each with its own fp16 weight copies, more than its activations
    assert first["micro_batches_in_flight"] == 4
    assert first["device_peak_parts"]["weight_copies"] > first["device_peak_parts"]["activations"]
    assert "Grad_MatMul" in first["device_peak_at"]
    # the last stage peaks at the loss's forward: vocabulary-sized temporaries, nothing backward keeps
    assert "loss-CrossEntropyLoss" in last["device_peak_at"] and "Gradients" not in last["device_peak_at"]
    assert last["device_peak_parts"]["temporaries"] > 4 * 1024**2
    # parameters, moments and accumulation buffers are alike in bytes (one fp32 copy each)
    parts = first["device_peak_parts"]
    assert parts["parameters"] == parts["gradients"] and 0 <= parts["optimizer_states"] - parts["parameters"] <= 3 * 512


def test_memory_json_validates_with_the_budget():
    data = memory_json(PP4, "--max-device-memory", "0.5GB")
    assert data["max_device_memory_bytes"] == 512 * 1024**2
    schema = json.loads((SCHEMAS / "irlint-memory-1.json").read_text(encoding="utf-8"))
    jsonschema.validate(data, schema)


def test_memory_text_headline_names_the_largest_device_against_the_budget():
    result = run("memory", PP4, "--max-device-memory", "0.06GB")
    first = result.output.splitlines()[0]
    assert first.startswith("Device peak: 64.6 MiB on rank 0, stage 0 against max_device_memory 61.4 MiB (over by")
    assert "(predicted from the frontend dump)" in first
    html = run("memory", PP4, "--format", "html").output
    assert "Device peak: 64.6 MiB on rank 0, stage 0" in html


def test_weight_copy_note_says_a_stage_makes_them_per_micro_batch():
    text = run("memory", PP4).output
    assert "not the batch" not in text
    assert "makes them again for each micro batch in flight" in text


def test_budget_syntax():
    assert parse_device_memory("58GB") == 58 * 1024**3
    assert parse_device_memory("0.5GB") == 512 * 1024**2
    assert parse_device_memory(" 1024MB ") == 1024**3
    for bad in ("58", "58 GiB", "-1GB", "0GB", "GB", "1.2.3GB"):
        with pytest.raises(ValueError):
            parse_device_memory(bad)
    result = CliRunner().invoke(main, ["memory", str(PP4), "--max-device-memory", "lots"])
    assert result.exit_code == 2 and "not a device memory size" in result.output and "Traceback" not in result.output


def test_budget_from_the_config(tmp_path):
    assert config_device_memory(QWEN.read_text(encoding="utf-8")) == "58GB"
    data = memory_json(PP4, "--config", GLM4)
    assert data["max_device_memory_bytes"] == 58 * 1024**3
    assert memory_json(PP4, "--config", GLM4, "--max-device-memory", "0.5GB")["max_device_memory_bytes"] == 2**29
    bad = tmp_path / "bad.yaml"
    bad.write_text(GLM4.read_text(encoding="utf-8").replace('"58GB"', '"a lot"'), encoding="utf-8")
    result = CliRunner().invoke(main, ["memory", str(PP4), "--config", str(bad)])
    assert result.exit_code == 2 and "context.max_device_memory" in result.output


def test_param_roles_and_blocks():
    assert param_role("para65_▸accu_grads.lm_head.weight") == "gradients"
    assert param_role("para61_moments.model.layers.7.feed_forward.w2.weight") == "optimizer_states"
    assert param_role("para3_global_step") == "optimizer_states"
    assert param_role("para3_model.layers.6.attention.wq.weight") == "parameters"
    # the memory pool's blocks (MindSpore's tracker): 4 B -> 512, 1 KiB -> 1.5 KiB, 64 KiB -> 64.5 KiB
    assert [block(4), block(1024), block(65536), block(0)] == [512, 1536, 66048, 0]


# --- device-memory-over-budget --------------------------------------------------------------------


def lint_json(*args) -> dict:
    result = CliRunner().invoke(main, [*map(str, args), "--format", "json", "-n"])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def peaks() -> dict[int, int]:
    return {f["rank"]: f["device_peak_bytes"] for f in memory_json(PP4)["files"]}


def test_budget_just_under_one_stage_finds_that_stage_only():
    p = peaks()
    rank = max(p, key=lambda r: p[r])
    budget = f"{(p[rank] - 1024) / 1024**3:.9f}GB"
    found = lint_json(PP4, "--select", "DM001", "--max-device-memory", budget)["findings"]
    assert [f["code"] for f in found] == ["DM001"]
    assert f"rank {rank} (pipeline stage 0)" in found[0]["message"] and "exceeds" in found[0]["message"]
    assert "recompute" in found[0]["hint"] and "offset" in found[0]["hint"]


def test_budget_above_every_peak_finds_nothing():
    budget = f"{(max(peaks().values()) + 1024**2) / 1024**3:.6f}GB"
    assert lint_json(PP4, "--select", "DM001", "--max-device-memory", budget)["findings"] == []
    # no budget: nothing to check, and the lint says why instead of passing
    result = CliRunner().invoke(main, [str(PP4), "--select", "DM001", "-n"])
    assert result.exit_code == 2 and "nothing to check without --max-device-memory (DM001)" in result.output


def test_budget_under_two_stages_finds_both():
    p = peaks()
    budget = f"{(sorted(p.values())[-2] - 1024) / 1024**3:.9f}GB"
    found = lint_json(PP4, "--select", "DM001", "--max-device-memory", budget)["findings"]
    assert sorted(re.search(r"rank (\d+)", f["message"]).group(1) for f in found) == ["0", "6"]


# --- pipeline-stage-imbalance --------------------------------------------------------------------


def test_offset_plan_lowers_the_worst_stage():
    data = lint_json(PP4, "--select", "PP001")
    assert [f["code"] for f in data["findings"]] == ["PP001"]
    plan = data["fix_plan"]["pipeline"]
    assert plan["offset"] == [-1, 1, 1, -1] and sum(plan["offset"]) == 0
    assert all(len(plan[k]) == 4 for k in plan)
    assert max(plan["stage_peak_bytes_after"]) < max(plan["stage_peak_bytes_now"])
    assert max(plan["stage_flops_after"]) < max(plan["stage_flops_now"])
    # the first and last stages (embedding; head and loss) are the heaviest now
    now = plan["stage_peak_bytes_now"]
    assert sorted(range(4), key=lambda i: -now[i])[:2] == [0, 3]
    change = next(c for c in data["fix_plan"]["config"] if c["key"] == "model.model_config.offset")
    assert change["value"] == [-1, 1, 1, -1] and change["written_by_fix"]
    jsonschema.validate(data["fix_plan"], json.loads((SCHEMAS / "irlint-fix-plan-1.json").read_text(encoding="utf-8")))


def test_one_stage_alone_is_no_imbalance():
    # one stage's graph is no run to balance: not read again, and a lint of that rule alone says why
    assert lint_json(PP4 / "rank_2", "--select", "PP001,RC001")["findings"] == []
    result = CliRunner().invoke(main, [str(PP4 / "rank_2"), "--select", "PP001", "-n"])
    assert result.exit_code == 2 and "a run of 2 or more distinct graphs (PP001)" in result.output


def test_fix_writes_the_offset(tmp_path):
    config = tmp_path / "qwen3.yaml"
    shutil.copy(QWEN, config)
    result = CliRunner().invoke(main, ["fix", str(config), str(PP4), "--select", "PP001", "--no-cache"])
    assert result.exit_code == 0, result.output
    assert "    offset: [-1, 1, 1, -1]\n" in config.read_text(encoding="utf-8")


def test_ranks_of_one_graph_are_read_once_and_found_each(tmp_path):
    run_dir = tmp_path / "pp4"
    shutil.copytree(PP4, run_dir)
    shutil.copytree(run_dir / "rank_0", run_dir / "rank_1")  # stage 0's other data-parallel rank: the same graph
    budget = f"{(peaks()[0] - 1024) / 1024**3:.9f}GB"
    found = lint_json(run_dir, "--select", "DM001,PP001", "--max-device-memory", budget)["findings"]
    dm = sorted(Path(f["file"]).parent.name for f in found if f["code"] == "DM001")
    assert dm == ["rank_0", "rank_1"]
    pp = [f for f in found if f["code"] == "PP001"]
    assert len(pp) == 1 and pp[0]["extra"]["stage_ranks"] == [[0, 1], [2], [4], [6]]


def test_without_a_pipeline_the_peak_is_in_backward_with_the_gradients_alive():
    (f,) = memory_json(DRYRUN / "dp2mp4")["files"]
    assert f["pipeline_stage"] is None and f["micro_batches"] == 1
    assert f["device_peak_at"].startswith("Gradients/")
    parts = f["device_peak_parts"]
    assert parts["gradients"] == 0  # no accumulation buffers: the gradients alive are kernel outputs
    assert parts["temporaries"] > parts["activations"] + parts["weight_copies"]


def test_optimizer_parallel_is_offered_where_it_is_off_and_priced():
    def ways(run: str) -> list[dict]:
        (f,) = lint_json(DRYRUN / run, "--select", "DM001", "--max-device-memory", "0.01GB")["findings"]
        return f["extra"]["ways_down"]

    off = {w["way"]: w["saves_bytes"] for w in ways("dp2mp4")}
    on = {w["way"] for w in ways("dp2mp4_opt")}
    assert "optimizer parallel" in off and "optimizer parallel" not in on
    # DryRun: 35,079,168 -> 24,199,680 B with it on; the price is the states and weights it shards
    measured = truth(DRYRUN / "dp2mp4")[0] - truth(DRYRUN / "dp2mp4_opt")[0]
    assert 0.8 < off["optimizer parallel"] / measured < 1.1


def test_full_recompute_is_priced_as_the_recompile_measured():
    # pp4 recompiled with recompute: True (pp4_rc): DryRun's peak drops 4.8-10.9 MB per stage; the price
    # is the layers' kept tensors and weight copies gone, the peak moved to what is left (the update, the
    # loss): counting the activations at the peak alone gave 0.51-0.93 of it
    found = lint_json(PP4, "--select", "DM001", "--max-device-memory", "0.01GB")["findings"]
    measured = {r: truth(PP4)[r] - truth(DRYRUN / "pp4_rc")[r] for r in truth(PP4)}
    assert len(found) == len(measured) == 4
    for f in found:
        rank = int(re.search(r"rank_(\d+)", f["file"]).group(1))
        price = {w["way"]: w["saves_bytes"] for w in f["extra"]["ways_down"]}["recompute"]
        assert 0.97 < price / measured[rank] < 1.05, (rank, price, measured[rank])


@pytest.mark.parametrize(("run", "recompiled"), [("pp4", "pp4_off_0110"), ("pp4_rc", "pp4_rc_off_0110")])
def test_the_planned_offset_recompiled_lowers_the_worst_stage_as_predicted(run, recompiled):
    plan = lint_json(DRYRUN / run, "--select", "PP001")["fix_plan"]["pipeline"]
    config = json.loads((DRYRUN / recompiled / "TRUTH.json").read_text(encoding="utf-8"))["config"]
    assert config["offset"] == plan["offset"]
    after = truth(DRYRUN / recompiled)
    stages = [after[r] for r in sorted(after)]
    assert max(stages) < max(truth(DRYRUN / run).values())
    # the plan's figures: within 3% of the recompiled stages (a 1-layer first stage peaks at its embedding gradient;
    # with full recompute the middle stages peak at the update, in their gradients scaled for it)
    assert all(abs(p / t - 1) < 0.03 for p, t in zip(plan["stage_peak_bytes_after"], stages))


def test_interleave_counts_each_chunk_in_flight_and_plans_no_offset():
    files = {f["rank"]: f for f in memory_json(DRYRUN / "pp2_vpp2")["files"]}
    assert [len(f["chunks"]) for f in files.values()] == [2, 2]
    assert lint_json(DRYRUN / "pp2_vpp2", "--select", "PP001,RC001")["findings"] == []  # offsets per chunk: not planned


def test_run_findings_come_from_the_cache_the_second_time(tmp_path, monkeypatch):
    from irlint.runner import lint_file
    from irlint.runner.config import Config
    from irlint.runner.engine import lint

    run_dir = tmp_path / "pp4"
    shutil.copytree(PP4, run_dir)
    for f in run_dir.rglob("*.gz"):  # older than the cache's racy window: their content hashes are kept
        os.utime(f, (f.stat().st_mtime - 3600, f.stat().st_mtime - 3600))
    budget = peaks()[0] - 1024

    def findings(max_bytes: int) -> list[tuple[str, str]]:
        config = Config(
            select=["DM001", "PP001"], cache_dir=str(tmp_path / "cache"), jobs=1, max_device_memory=max_bytes
        )
        report = lint(run_dir, config)
        assert len(report.files) == 4  # checked, read or answered by the cache
        return sorted((f.code, f.message) for f in report.findings)

    first = findings(budget)
    assert [c for c, _ in first] == ["DM001", "PP001"]

    def no_read(f):
        raise AssertionError(f"read again: {f.path}")

    monkeypatch.setattr(lint_file, "read_dump", no_read)
    assert findings(budget) == first
    monkeypatch.undo()
    # another budget is another key: computed, not taken from the entry of the first
    assert [c for c, _ in findings(budget + 2048)] == ["PP001"]


def test_interleave_plans_the_offset_per_chunk_and_the_recompile_agrees():
    from irlint.accounts.pipeline_plan import plan_offset

    plan = plan_offset(_stages("pp2_vpp2_l8"))
    assert plan is not None
    # MindFormers' per-chunk form: fewer layers in the first chunk, whose micro batches wait longest
    assert plan.offset == [[-1, -1], [1, 1]] and plan.layers_after == plan.layers_now == [4, 4]
    recompiled = DRYRUN / "pp2_vpp2_l8_off"
    assert json.loads((recompiled / "TRUTH.json").read_text(encoding="utf-8"))["config"]["offset"] == plan.offset
    before, after = truth(DRYRUN / "pp2_vpp2_l8"), truth(recompiled)
    assert max(after.values()) < max(before.values())
    assert all(abs(p / after[r] - 1) < 0.03 for p, r in zip(plan.peak_after, sorted(after)))


def _stages(run: str):
    from irlint.accounts.pipeline_plan import run_stages
    from irlint.runner.discover import discover_inputs
    from irlint.runner.lint_file import read_dump

    files = discover_inputs([str(DRYRUN / run)], None).files
    return run_stages([(read_dump(f), f.rank, f.display) for f in files])


# (a compile, the same recompiled with other layers per stage or chunk), both ways
RECOMPILED = [
    ("pp4", "pp4_off_0110"),
    ("pp4_off_0110", "pp4"),
    ("pp4_rc", "pp4_rc_off_0110"),
    ("pp4_rc_off_0110", "pp4_rc"),
    ("pp2_vpp2_l8", "pp2_vpp2_l8_off"),
    ("pp2_vpp2_l8_off", "pp2_vpp2_l8"),
]


@pytest.mark.parametrize(("run", "recompiled"), RECOMPILED)
def test_each_stage_with_other_layers_is_predicted_within_3_percent_of_the_recompile(run, recompiled):
    from irlint.accounts.pipeline_plan import peak_with

    now, after = _stages(run), _stages(recompiled)
    expected = truth(DRYRUN / recompiled)
    assert [s.ranks for s in now] == [s.ranks for s in after] == [[r] for r in sorted(expected)]
    for s, r in zip(now, after):
        counts = r.chunk_layers or [len(r.layers)]
        assert counts != (s.chunk_layers or [len(s.layers)])
        # with no move the prediction is the stage's own walk
        assert peak_with(s, s.chunk_layers or [len(s.layers)]) == s.peak_bytes
        predicted = peak_with(s, counts)
        assert abs(predicted / expected[r.ranks[0]] - 1) < 0.03, (s.index, predicted / expected[r.ranks[0]])
        # the extrapolation alone: against the walk of the recompiled dump (a 1-layer first stage's peak is at its
        # embedding gradient, not at the turn)
        assert abs(predicted / r.peak_bytes - 1) < 0.01, (s.index, predicted / r.peak_bytes)


def test_a_lint_of_one_graph_without_a_budget_loads_no_device_account():
    import subprocess
    import sys

    code = (
        "import sys\nfrom click.testing import CliRunner\nfrom irlint.cli import main\n"
        f"CliRunner().invoke(main, ['-q', '--no-cache', {str(PP4 / 'rank_0')!r}])\n"
        "print([m for m in sys.modules if m in ('irlint.accounts.device', 'irlint.accounts.pipeline_plan')])"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip() == "[]", proc.stderr
