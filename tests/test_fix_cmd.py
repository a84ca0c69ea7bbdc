"""``irlint fix CONFIG.yaml DUMP...`` on real MindFormers 2.1.0 configs (tests/fixtures/mindformers-configs)."""

from __future__ import annotations

import os
import re
import shutil
import stat

import pytest
from click.testing import CliRunner
from conftest import CORPUS, TESTS

import irlint.cli
from irlint.mfyaml import apply_plan

CONFIGS = TESTS / "fixtures" / "mindformers-configs"
MF = TESTS / "fixtures" / "recompute" / "par-rc-mf_dp2_mp4_select_blocked"
PP = TESTS / "fixtures" / "recompute" / "par-rc-pp2_dp2_mp2_micro4_select"
SHIPPED = sorted(p.name for p in CONFIGS.glob("*.yaml"))


def run(*args):
    return CliRunner().invoke(irlint.cli.main, ["fix", *map(str, args), "--no-cache"])


def copy(tmp_path, name):
    target = tmp_path / name
    shutil.copyfile(CONFIGS / name, target)
    return target


def _block_lines(text: str) -> set[int]:
    """Line numbers (0-based) of the recompute_config block."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("recompute_config:"))
    end = next((i for i in range(start + 1, len(lines)) if lines[i][:1] not in ("", " ", "#")), len(lines))
    return set(range(start, end))


@pytest.mark.parametrize("name", SHIPPED)
def test_diff_changes_only_recompute_config_and_writes_nothing(tmp_path, name):
    path = copy(tmp_path, name)
    before = path.read_bytes()
    result = run(path, MF, "--diff", "--force")  # a Llama dump: most shipped configs are of other models
    assert result.exit_code == 1, result.stderr
    assert path.read_bytes() == before
    minus = [ln[1:] for ln in result.stdout.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    plus = [ln[1:] for ln in result.stdout.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    assert plus
    old = before.decode().splitlines()
    block = _block_lines(before.decode())
    assert all(old.index(ln) in block for ln in minus)
    assert any("attention\\.reshape" in ln for ln in plus)


@pytest.mark.parametrize("name", SHIPPED)
def test_a_config_needing_nothing_round_trips_byte_identical(name):
    text = (CONFIGS / name).read_text(encoding="utf-8")
    assert apply_plan(text, {"select_recompute": []}).text == text


def test_list_form_keeps_the_users_keys_comments_and_quoting_and_adds_only_what_is_missing(tmp_path):
    path = copy(tmp_path, "qwen3_select_list.yaml")
    mode = 0o640
    os.chmod(path, mode)
    result = run(path, MF)
    assert result.exit_code == 0, result.stderr
    text = path.read_text(encoding="utf-8")
    line = next(ln for ln in text.splitlines() if "select_recompute:" in ln)
    assert line.replace("]  #", "] #") == (
        "  select_recompute: ['feed_forward\\.mul', \"feed_forward\\\\.w1\\\\.activation\\\\.silu\", "
        "'attention\\.merger_head_transpose', 'attention\\.reshape', 'feed_forward\\.w1\\.reshape', "
        "'feed_forward\\.w2\\.reshape'] # user's list"
    )
    assert "  # the SiLU/Mul keys (MindFormers' Llama defaults)\n" in text
    assert stat.S_IMODE(os.stat(path).st_mode) == mode
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary file left
    # a second run has nothing to add: every key is matched by the file's own
    again = run(path, MF)
    assert again.exit_code == 0 and path.read_text(encoding="utf-8") == text
    assert "already covered" in again.stderr


def test_a_users_pattern_that_matches_the_key_is_not_added_again(tmp_path):
    path = copy(tmp_path, "qwen3_select_list.yaml")
    text = path.read_text(encoding="utf-8").replace("'feed_forward\\.mul'", "'feed_forward\\.w.\\.reshape'")
    edit = apply_plan(text, {"select_recompute": ["feed_forward\\.w1\\.reshape", "attention\\.reshape"]})
    assert edit.added == ["attention\\.reshape"]
    assert edit.covered == ["feed_forward\\.w1\\.reshape (by 'feed_forward\\.w.\\.reshape')"]


def test_dict_form_gets_new_keys_for_every_layer(tmp_path):
    path = copy(tmp_path, "qwen3_select_dict.yaml")
    assert run(path, MF).exit_code == 0
    text = path.read_text(encoding="utf-8")
    assert "    'feed_forward\\.mul': True   # every layer\n" in text
    assert "    'attention\\.reshape': True\n" in text or "    attention\\.reshape: True\n" in text


def test_per_stage_form_raises_the_counts_the_pipeline_dump_needs(tmp_path):
    path = copy(tmp_path, "qwen3_select_per_stage.yaml")
    result = run(path, PP, "--diff")
    assert result.exit_code == 1
    assert "-    'feed_forward\\.w1\\.reshape': [1, 1]   # the first layer of each stage" in result.stdout
    assert "+    'feed_forward\\.w1\\.reshape': [2, 2]   # the first layer of each stage" in result.stdout
    assert "+    'feed_forward\\.w2\\.reshape': [2, 2]" in result.stdout
    assert "select_comm_recompute" not in "".join(ln for ln in result.stdout.splitlines() if ln[:1] in "+-")
    assert "raise per-stage counts feed_forward\\.w1\\.reshape: [1, 1] -> [2, 2]" in result.stderr


@pytest.mark.parametrize(
    "dump, printed",
    [
        (
            CORPUS / "par-mismatch-ffn_col_col",
            "/home/user/llm/parallel/mismatch/gen.py:60: ops.MatMul().shard(((1, 8), (1, 8)))",
        ),
        (
            CORPUS / "par-mismatch-attn_dropout_tuple",
            "/home/user/llm/parallel/comm/par_comm_gen.py:162: order the device axes of the Layout: "
            'Layout((2, 2, 2), ("dp", "tp", "cp"))',
        ),
    ],
    ids=["strategy", "layout"],
)
def test_model_code_changes_are_printed_with_the_model_line_not_written(tmp_path, dump, printed):
    path = copy(tmp_path, "qwen3_select_list.yaml")
    before = path.read_bytes()
    result = run(path, dump)
    assert result.exit_code == 1  # left to do by hand
    assert path.read_bytes() == before
    assert printed in result.stderr


def test_a_key_to_drop_is_named_as_the_user_wrote_it(tmp_path):
    """MindFormers' RMSNorm down-cast, tagged by the user's 'attention_norm\\.rcast', prints as
    `cast` (its two Casts are one primitive): RC003 asks to drop 'attention_norm\\.cast', a key the
    config does not hold. irlint fix names the user's key instead, and the real recompile without
    it (the `_dropped` fixture: the same config less that key) has no RC003."""
    here = TESTS / "fixtures" / "recompute"
    path = tmp_path / "cfg.yaml"
    shutil.copyfile(here / "mf-dp2_mp4_rcast_recomputed" / "cfg.yaml", path)
    before = path.read_bytes()
    result = run(path, here / "mf-dp2_mp4_rcast_recomputed")
    assert result.exit_code == 1 and path.read_bytes() == before  # a key to take out: by hand
    (line,) = [ln for ln in result.stderr.splitlines() if "RC003" in ln]
    assert (
        "select_recompute - 'attention_norm\\.rcast'" in line
        and "the dump names the op 'attention_norm\\.cast'" in line
    )
    # the dict form (key -> True or per-stage counts) names it alike
    keys = re.search(r"select_recompute: \[(.*)\]", before.decode()).group(1).split(", ")
    as_dict = re.sub(
        r"select_recompute: \[.*\]",
        "select_recompute: {" + ", ".join(f"{k}: True" for k in keys) + "}",
        before.decode(),
    )
    path.write_text(as_dict, encoding="utf-8")
    (line,) = [ln for ln in run(path, here / "mf-dp2_mp4_rcast_recomputed").stderr.splitlines() if "RC003" in ln]
    assert "select_recompute - 'attention_norm\\.rcast'" in line and path.read_text(encoding="utf-8") == as_dict
    dropped = (here / "mf-dp2_mp4_rcast_dropped" / "cfg.yaml").read_text(encoding="utf-8")
    assert dropped == before.decode().replace(" 'attention_norm\\.rcast',", "")
    lint = CliRunner().invoke(irlint.cli.main, [str(here / "mf-dp2_mp4_rcast_dropped"), "--format", "concise", "-n"])
    assert "RC003" not in lint.stdout


# --- bad input: clear message, exit 2, nothing written ----------------------------------------------


def _unchanged(path, before):
    return path.read_bytes() == before


def test_yaml_that_does_not_parse(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("recompute_config:\n  select_recompute: [a, b\n")
    result = run(path, MF)
    assert result.exit_code == 2 and "is not valid YAML" in result.stderr and "Traceback" not in result.stderr
    assert path.read_text() == "recompute_config:\n  select_recompute: [a, b\n"


def test_no_recompute_config(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("seed: 0\nmodel: {}\n")
    result = run(path, MF)
    assert result.exit_code == 2 and "has no recompute_config" in result.stderr
    assert path.read_text() == "seed: 0\nmodel: {}\n"


def test_a_link_is_not_written_through(tmp_path):
    real = copy(tmp_path, "qwen3_select_list.yaml")
    before = real.read_bytes()
    link = tmp_path / "link.yaml"
    link.symlink_to(real)
    result = run(link, MF)
    assert result.exit_code == 2 and "symbolic link" in result.stderr
    assert _unchanged(real, before) and link.is_symlink()


def test_a_read_only_config(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root may write a read-only file")
    path = copy(tmp_path, "qwen3_select_list.yaml")
    os.chmod(path, 0o444)
    result = run(path, MF)
    assert result.exit_code == 2 and "read-only" in result.stderr


def test_a_read_only_config_even_as_root(tmp_path, monkeypatch):
    path = copy(tmp_path, "qwen3_select_list.yaml")
    before = path.read_bytes()
    real_access = os.access
    monkeypatch.setattr(
        os, "access", lambda p, m, **kw: False if str(p) == str(path) and m & os.W_OK else real_access(p, m, **kw)
    )
    result = run(path, MF)
    assert result.exit_code == 2 and "read-only" in result.stderr and _unchanged(path, before)


def test_one_of_the_dumps_given_as_the_config(tmp_path):
    dump = tmp_path / "21_validate_0093.ir"
    shutil.copyfile(MF / "rank_0" / "21_validate_0093.ir", dump)
    before = dump.read_bytes()
    result = run(dump, MF)
    assert result.exit_code == 2 and "graph dump" in result.stderr and _unchanged(dump, before)
    linked = tmp_path / "cfg.yaml"  # the same file under a config's name
    os.link(dump, linked)
    result = run(linked, tmp_path)
    assert result.exit_code == 2 and "one of the dumps" in result.stderr and dump.read_bytes() == before


def test_a_dump_that_is_not_there(tmp_path):
    path = copy(tmp_path, "qwen3_select_list.yaml")
    before = path.read_bytes()
    result = run(path, tmp_path / "nowhere")
    assert result.exit_code == 2 and _unchanged(path, before)


# --- the loop, end to end on real MindFormers 2.1.0 compiles (tests/fixtures/recompute/README.md) -----

ROUND0 = TESTS / "fixtures" / "recompute" / "mf-dp2_mp4_irlint_fix_round0"
ROUND1 = TESTS / "fixtures" / "recompute" / "mf-dp2_mp4_irlint_fix_round1"


def _kept(folder) -> dict:
    import json

    result = CliRunner().invoke(irlint.cli.main, ["memory", str(folder), "--format", "json"])
    return {layer["layer"]: layer["kept_bytes"] for layer in json.loads(result.stdout)["files"][0]["layers"]}


def _one_round(tmp_path, round0, round1, exit_code=0):
    """``irlint fix`` on a copy of round 0's config: the config round 1 was compiled with is what it
    writes, but for the spacing before the line's comment, which the edit now leaves as it was
    (round 1's config was written by a re-serialisation of the block). The config written and the
    run's result."""
    cfg = tmp_path / "cfg.yaml"
    shutil.copyfile(round0 / "cfg.yaml", cfg)
    result = run(cfg, round0)
    assert result.exit_code == exit_code, result.stderr
    written = cfg.read_text(encoding="utf-8").splitlines()
    compiled = (round1 / "cfg.yaml").read_text(encoding="utf-8").splitlines()
    old = (round0 / "cfg.yaml").read_text(encoding="utf-8").splitlines()
    assert len(written) == len(compiled) == len(old)
    for mine, theirs, was in zip(written, compiled, old):
        if mine != theirs:
            assert re.sub(r"\]\s+#", "] #", mine) == theirs and re.sub(r"\[.*\]", "", mine) == re.sub(
                r"\[.*\]", "", was
            )
    return cfg, result


def test_one_round_fixes_every_recompute_finding_and_frees_what_the_findings_priced(tmp_path):
    import json

    _one_round(tmp_path, ROUND0, ROUND1)
    # one finding per occurrence: each prices its own layer
    lint0 = json.loads(
        CliRunner().invoke(irlint.cli.main, [str(ROUND0), "--format", "json", "-n", "--no-group"]).stdout
    )
    lint1 = CliRunner().invoke(irlint.cli.main, [str(ROUND1), "--format", "json", "-n"])
    assert lint1.exit_code == 0 and json.loads(lint1.stdout)["findings"] == []
    priced: dict = {}
    for f in lint0["findings"]:
        layer = str(f["extra"]["layer"])
        priced[layer] = priced.get(layer, 0) + f["bytes_at_stake"]
    before, after = _kept(ROUND0), _kept(ROUND1)
    assert {layer: before[layer] - after[layer] for layer in priced} == priced == {"0": 5120, "1": 5120}


PP0 = TESTS / "fixtures" / "recompute" / "mf-pp2_dp2_mp2_irlint_fix_round0"
PP1 = TESTS / "fixtures" / "recompute" / "mf-pp2_dp2_mp2_irlint_fix_round1"


def test_one_round_on_a_pipeline_and_the_per_stage_counts(tmp_path):
    import json

    _, result = _one_round(tmp_path, PP0, PP1)
    # every layer of both stages (0-3, 4-7) is blocked: the per-stage form covers all four of each
    assert "'feed_forward\\.w1\\.reshape': [4, 4]" in result.stderr
    grouped = json.loads(CliRunner().invoke(irlint.cli.main, [str(PP0), "--format", "json", "-n"]).stdout)
    lint0 = json.loads(CliRunner().invoke(irlint.cli.main, [str(PP0), "--format", "json", "-n", "--no-group"]).stdout)
    lint1 = json.loads(CliRunner().invoke(irlint.cli.main, [str(PP1), "--format", "json", "-n"]).stdout)
    assert lint1["findings"] == [] and len(lint0["findings"]) == 24
    # grouped by root cause, the same 24 occurrences
    assert len(grouped["findings"]) < 24 and grouped["summary"]["occurrences"] == 24
    # what a layer frees per micro batch is what its findings priced per micro batch
    per_layer: dict = {}
    for f in lint0["findings"]:
        per_layer.setdefault(str(f["extra"]["layer"]), 0)
        per_layer[str(f["extra"]["layer"])] += f["bytes_at_stake"] // f["extra"]["micro_batches_in_flight"]
    for rank, layers in (("rank_0", "0123"), ("rank_4", "4567")):
        before, after = _kept(PP0 / rank), _kept(PP1 / rank)
        assert {layer: before[layer] - after[layer] for layer in layers} == {
            layer: per_layer[layer] for layer in layers
        }


IL0 = TESTS / "fixtures" / "recompute" / "mf-pp2_interleave_irlint_fix_round0"
IL1 = TESTS / "fixtures" / "recompute" / "mf-pp2_interleave_irlint_fix_round1"


def _lint_json(*args) -> dict:
    import json

    return json.loads(CliRunner().invoke(irlint.cli.main, [*map(str, args), "--format", "json", "-n"]).stdout)


def _memory_json(folder) -> dict:
    import json

    result = CliRunner().invoke(irlint.cli.main, ["memory", str(folder), "--format", "json"])
    return {f["file"].split("/")[-2]: f for f in json.loads(result.stdout)["files"]}


def test_one_round_on_an_interleaved_pipeline_and_the_per_chunk_counts(tmp_path):
    _, result = _one_round(tmp_path, IL0, IL1)
    plan = _lint_json(IL0)["fix_plan"]["recompute"]
    # stage 0 holds layers 0-1 (chunk 0) and 4-5 (chunk 1), stage 1 layers 2-3 and 6-7: MindFormers'
    # [chunk][stage] form, each count from that chunk's first layer on the stage
    assert plan["stages"] == [[0, 1, 4, 5], [2, 3, 6, 7]]
    assert plan["chunks"] == [[[0, 1], [2, 3]], [[4, 5], [6, 7]]]
    assert set(map(str, plan["select_recompute_per_stage"].values())) == {"[[2, 2], [2, 2]]"}
    assert "[[2, 2], [2, 2]]" in result.stderr
    lint0, lint1 = _lint_json(IL0, "--no-group"), _lint_json(IL1)
    assert lint1["findings"] == [] and len(lint0["findings"]) == 24


def test_interleaved_prices_are_what_the_peak_loses():
    """One model of what is in flight: each finding prices its layer's bytes per micro batch times
    the micro batches of its chunk in flight at the stage's peak; summed, that is the peak drop the
    recompile measured (irlint memory and irlint diff), and per layer the per-micro-batch drop."""
    import json

    lint0 = _lint_json(IL0, "--no-group")["findings"]
    before, after = _memory_json(IL0), _memory_json(IL1)
    # at rank 0's peak, 4 micro batches of chunk 0 (layers 0-1) and 1 of chunk 1 (layers 4-5) wait
    held = {tuple(c["layers"]): c["in_flight_at_peak"] for c in before["rank_0"]["chunks"]}
    # (chunk 1 computes its own causal mask: a model cell outside the layers)
    assert held == {("0", "1", "outside"): 4, ("4", "5", "outside"): 1}
    for rank, drop in (("rank_0", 102_400), ("rank_4", 61_440)):
        mine = [f for f in lint0 if f"/{rank}/" in f["file"]]
        assert sum(f["bytes_at_stake"] for f in mine) == drop
        assert before[rank]["peak_kept_bytes"] - after[rank]["peak_kept_bytes"] == drop
        per_layer: dict = {}
        for f in mine:
            e = f["extra"]
            assert f["bytes_at_stake"] == e["bytes_at_stake_per_micro_batch"] * e["micro_batches_in_flight"]
            per_layer[str(e["layer"])] = per_layer.get(str(e["layer"]), 0) + e["bytes_at_stake_per_micro_batch"]
            # the total is in the same unit: the same finding's bytes_at_stake over its layers
            peers = [g for g in mine if (g["code"], g["op"]) == (f["code"], f["op"])]
            assert e["bytes_at_stake_total"] == sum(g["bytes_at_stake"] for g in peers)
        kept0 = {r["layer"]: r["kept_bytes"] for r in before[rank]["layers"]}
        kept1 = {r["layer"]: r["kept_bytes"] for r in after[rank]["layers"]}
        assert {layer: kept0[layer] - kept1[layer] for layer in per_layer} == per_layer
    diff = json.loads(CliRunner().invoke(irlint.cli.main, ["diff", str(IL0), str(IL1), "--format", "json"]).stdout)
    s = diff["summary"]
    assert s["fixed"] == 3 and s["new"] == 0
    assert s["peak_kept_bytes_before"] - s["peak_kept_bytes_after"] == sum(f["bytes_at_stake"] for f in diff["fixed"])
    assert sum(f["bytes_at_stake"] for f in diff["fixed"]) == 102_400 + 61_440


def test_per_stage_counts_under_interleave_are_raised_in_the_per_chunk_form(tmp_path):
    """A per-stage count ([1, 1]) is split over the chunks as MindFormers splits it (chunk 0 first)
    and raised to the dump's [chunk][stage] need; a [chunk][stage] value that covers it is kept."""
    text = (IL0 / "cfg.yaml").read_text()
    line = next(x for x in text.splitlines() if x.startswith("  select_recompute:"))
    mine = (
        "  select_recompute: {'feed_forward\\.mul': [4, 4], 'feed_forward\\.w1\\.activation\\.silu': [4, 4], "
        "'feed_forward\\.w1\\.reshape': [1, 1], 'attention\\.reshape': [[2, 2], [2, 2]]}"
    )
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(text.replace(line, mine))
    result = run(cfg, IL0)
    assert result.exit_code == 0
    assert "feed_forward\\.w1\\.reshape: [1, 1] -> [[2, 2], [2, 2]]" in result.stderr
    assert "attention\\.reshape (by 'attention\\.reshape')" in result.stderr
    # new keys quoted as the user's are
    assert "'attention\\.merger_head_transpose': [[2, 2], [2, 2]]" in cfg.read_text()
    from irlint.mfyaml import load

    got = load(cfg.read_text())["recompute_config"]["select_recompute"]
    assert {k: [list(r) if isinstance(r, list) else r for r in v] for k, v in got.items()} == {
        "feed_forward\\.mul": [4, 4],
        "feed_forward\\.w1\\.activation\\.silu": [4, 4],
        "feed_forward\\.w1\\.reshape": [[2, 2], [2, 2]],
        "attention\\.reshape": [[2, 2], [2, 2]],
        "attention\\.merger_head_transpose": [[2, 2], [2, 2]],
        "feed_forward\\.w2\\.reshape": [[2, 2], [2, 2]],
    }


def test_pipeline_prices_are_what_the_peak_loses_without_interleave():
    """The same unit without interleave: a stage's findings sum to its peak drop (rank 0 holds 2
    micro batches in flight at its peak, rank 4 one), and irlint diff says the same."""
    import json

    lint0 = _lint_json(PP0, "--no-group")["findings"]
    before, after = _memory_json(PP0), _memory_json(PP1)
    for rank, drop in (("rank_0", 81_920), ("rank_4", 40_960)):
        assert sum(f["bytes_at_stake"] for f in lint0 if f"/{rank}/" in f["file"]) == drop
        assert before[rank]["peak_kept_bytes"] - after[rank]["peak_kept_bytes"] == drop
    diff = json.loads(CliRunner().invoke(irlint.cli.main, ["diff", str(PP0), str(PP1), "--format", "json"]).stdout)
    s = diff["summary"]
    assert s["peak_kept_bytes_before"] - s["peak_kept_bytes_after"] == sum(f["bytes_at_stake"] for f in diff["fixed"])


SP0 = TESTS / "fixtures" / "recompute" / "mf-dp2_mp4_sp_irlint_fix_round0"
SP1 = TESTS / "fixtures" / "recompute" / "mf-dp2_mp4_sp_irlint_fix_round1"


def test_one_round_under_sequence_parallel_and_the_price_net_of_what_the_fix_keeps(tmp_path):
    """Llama dp2 x mp4 with use_seq_parallel and MindFormers' default keys (select and comm): one
    round leaves no RC finding. w1's key also tags the AllGather chain that replaced w1's input
    Reshape; MindSpore recomputes it and keeps the AllGather's input (1,024 bytes per layer), so the
    SiLU's fix frees 2,048 - 1,024 bytes, and each layer 4,096 in all, what the findings price."""
    # exit 1: the batch-merge PC001 asks for runner_config.batch_size, printed only
    _one_round(tmp_path, SP0, SP1, exit_code=1)
    lint0 = [f for f in _lint_json(SP0, "--no-group")["findings"] if f["code"].startswith("RC")]
    lint1 = [f for f in _lint_json(SP1)["findings"] if f["code"].startswith("RC")]
    assert lint1 == [] and len(lint0) == 6
    silu = [f for f in lint0 if f["op"] == "SiLU"]
    assert [f["extra"]["fix_keeps"][0]["op"] for f in silu] == ["AllGather", "AllGather"]
    assert [f["bytes_at_stake"] for f in silu] == [1024, 1024]
    per_layer: dict = {}
    for f in lint0:
        per_layer[str(f["extra"]["layer"])] = per_layer.get(str(f["extra"]["layer"]), 0) + f["bytes_at_stake"]
    before, after = _kept(SP0), _kept(SP1)
    assert {layer: before[layer] - after[layer] for layer in per_layer} == per_layer == {"0": 4096, "1": 4096}


def test_the_interleaved_documents_follow_their_schemas():
    import json

    import jsonschema

    schemas = TESTS / "fixtures" / "schemas"

    def schema(name):
        return json.loads((schemas / name).read_text(encoding="utf-8"))

    jsonschema.validate(_lint_json(IL0)["fix_plan"], schema("irlint-fix-plan-1.json"))
    memory = json.loads(CliRunner().invoke(irlint.cli.main, ["memory", str(IL0), "--format", "json"]).stdout)
    jsonschema.validate(memory, schema("irlint-memory-1.json"))
    assert all(len(f["chunks"]) == 2 for f in memory["files"])
    diff = json.loads(CliRunner().invoke(irlint.cli.main, ["diff", str(IL0), str(IL1), "--format", "json"]).stdout)
    jsonschema.validate(diff, schema("irlint-diff-1.json"))


QWEN0 = TESTS / "fixtures" / "recompute" / "mf-qwen3-dp2_mp4_irlint_fix_round0"
QWEN1 = TESTS / "fixtures" / "recompute" / "mf-qwen3-dp2_mp4_irlint_fix_round1"


def test_one_round_on_a_qwen3_mcore_compile_with_the_models_own_names(tmp_path):
    import json

    cfg, result = _one_round(tmp_path, QWEN0, QWEN1)
    # the one key added is built from the mcore cell that reads the weight, never a Llama name
    assert "select_recompute: ['mlp\\.mul', 'mlp\\.activation_func\\.silu', 'mlp\\.linear_fc2\\.reshape']" in (
        cfg.read_text()
    )
    assert "feed_forward" not in result.stderr
    lint0 = json.loads(CliRunner().invoke(irlint.cli.main, [str(QWEN0), "--format", "json", "-n", "--no-group"]).stdout)
    lint1 = json.loads(CliRunner().invoke(irlint.cli.main, [str(QWEN1), "--format", "json", "-n"]).stdout)
    assert lint1["findings"] == [] and [f["code"] for f in lint0["findings"]] == ["RC002", "RC002"]
    priced: dict = {}
    for f in lint0["findings"]:
        priced[str(f["extra"]["layer"])] = priced.get(str(f["extra"]["layer"]), 0) + f["bytes_at_stake"]
    before, after = _kept(QWEN0), _kept(QWEN1)
    assert {layer: before[layer] - after[layer] for layer in before} == {**priced, "outside": 0}
    assert priced == {"0": 2048, "1": 2048}


def test_an_expert_parallel_relayout_sets_parallel_enable_alltoall_and_only_that_line(tmp_path):
    path = copy(tmp_path, "pretrain_telechat3_36b.yaml")
    before = path.read_text(encoding="utf-8").splitlines()
    result = run(path, CORPUS / "par-mismatch-mf_moe_gather_dispatch")
    assert result.exit_code == 0, result.stderr  # nothing left by hand
    after = path.read_text(encoding="utf-8").splitlines()
    changed = [(a, b) for a, b in zip(before, after) if a != b]
    assert len(before) == len(after) and len(changed) == 1
    assert changed[0][0].split("#")[0].strip() == "enable_alltoall: False"
    assert changed[0][1].split("#")[0].strip() == "enable_alltoall: True"
    assert "set parallel.enable_alltoall: False -> True" in result.stderr


_SILU = "mlp\\.activation_func\\.silu"
_REPLACE = {
    "select_recompute": [_SILU + "\\.silu"],
    "replace": [{"key": _SILU, "by": [_SILU + "\\.silu"], "findings": []}],
}


def test_a_one_op_cells_key_is_replaced_by_its_primitives_in_a_list():
    text = "recompute_config:\n  recompute: False\n  select_recompute: ['mlp\\.activation_func\\.silu', 'mlp\\.mul']\n"
    edit = apply_plan(text, _REPLACE)
    assert edit.added == [_SILU + "\\.silu"] and edit.dropped == [(_SILU, f"'{_SILU}\\.silu'")]
    assert "select_recompute: ['mlp\\.mul', 'mlp\\.activation_func\\.silu\\.silu']" in edit.text


def test_a_one_op_cells_key_is_taken_out_of_a_dict_and_a_key_naming_the_primitive_stays():
    text = (
        "recompute_config:\n  select_recompute:\n    'mlp\\.activation_func\\.silu': True\n"
        "    'mlp\\.activation_func\\.silu\\.silu': True\n    'mlp\\.mul': [1, 1]\n"
    )
    edit = apply_plan(text, _REPLACE)
    assert [k for k, _ in edit.dropped] == [_SILU] and edit.added == []
    assert "'mlp\\.activation_func\\.silu': True" not in edit.text
    assert "'mlp\\.activation_func\\.silu\\.silu': True" in edit.text and "'mlp\\.mul': [1, 1]" in edit.text


def test_nothing_is_taken_out_when_no_user_key_names_the_cell():
    text = "recompute_config:\n  select_recompute: ['mlp\\.mul']\n"
    edit = apply_plan(text, _REPLACE)
    assert edit.dropped == [] and edit.added == [_SILU + "\\.silu"]
