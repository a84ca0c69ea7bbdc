"""The run's fix plan (issue 29): keys built only from each dump's own names, to add to the
user's; per-stage counts under a pipeline; strategy changes with the model line."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest
from conftest import CORPUS, TESTS, quiet_config

from irlint.findings_json import extra_data
from irlint.fixplan import fix_plan, plan_text
from irlint.runner.engine import lint

RECOMPUTE = TESTS / "fixtures" / "recompute"
UNSEEN = TESTS / "fixtures" / "unseen"
SCHEMA = json.loads((TESTS / "fixtures" / "schemas" / "irlint-fix-plan-1.json").read_text(encoding="utf-8"))


def plan_of(*paths):
    report = lint([str(p) for p in paths], quiet_config())
    plan = fix_plan(report.findings)
    jsonschema.validate(plan, SCHEMA)
    return report, plan


def test_mindformers_llama_gets_every_key_of_the_run_once_and_only_keys_to_add():
    _, plan = plan_of(RECOMPUTE / "par-rc-mf_dp2_mp4_select_blocked")
    # the user's own keys (feed_forward\.mul, feed_forward\.w1\.activation\.silu) are never repeated
    assert plan["recompute"]["select_recompute"] == [
        r"attention\.merger_head_transpose",
        r"attention\.reshape",
        r"feed_forward\.w1\.reshape",
        r"feed_forward\.w2\.reshape",
    ]
    # the folded merge-heads + wo Reshape: the attention's key, not wo's, which never tags it
    assert r"attention\.wo\.reshape" not in plan_text(plan)
    by_key = {k["key"]: k for k in plan["recompute"]["keys"]}
    assert by_key[r"feed_forward\.w1\.reshape"]["layers"] == [0, 1]
    assert "select_recompute_per_stage" not in plan["recompute"]  # no pipeline


def test_round_one_dump_asks_only_for_the_folded_reshape_key():
    # the same model recompiled with the earlier hints' keys (wo's among them): one key is left
    _, plan = plan_of(RECOMPUTE / "mf-dp2_mp4_select_irlint_keys")
    assert plan["recompute"]["select_recompute"] == [r"attention\.reshape"]


def test_pipeline_per_stage_counts_come_from_the_blocked_layers_of_each_stage():
    # layers 0-1 on stage 0, 2-3 on stage 1; the user's keys cover the first layer of each stage
    # ([1, 1]): layers 1 and 3 are blocked, so the counts are [2, 2], not a new key
    _, plan = plan_of(TESTS / "fixtures" / "recompute" / "par-rc-pp2_dp2_mp2_micro4_select")
    rc = plan["recompute"]
    assert rc["stages"] == [[0, 1], [2, 3]]
    assert rc["select_recompute_per_stage"] == {
        r"feed_forward\.w1\.reshape": [2, 2],
        r"feed_forward\.w2\.reshape": [2, 2],
    }
    assert "per pipeline stage" in plan_text(plan)


def test_one_stage_of_a_pipeline_gives_no_per_stage_counts_it_cannot_know():
    _, plan = plan_of(TESTS / "fixtures" / "recompute" / "par-rc-pp2_dp2_mp2_micro4_select" / "rank_4")
    assert "select_recompute_per_stage" not in plan["recompute"]
    assert "every pipeline stage" in plan["recompute"]["per_stage_note"]


def test_llama_legacy_and_glm_keys_are_their_own_cell_names():
    _, llama = plan_of(CORPUS / "llama-recompute-modes" / "21_validate_0076.ir")
    assert r"feed_forward\.w2\.reshape" in llama["recompute"]["select_recompute"]
    assert r"feed_forward\.activation\.silu" in llama["recompute"]["select_recompute"]  # one-op cell
    _, glm = plan_of(RECOMPUTE / "mf-glm2-select")
    keys = glm["recompute"]["select_recompute"]
    assert r"mlp\.dense_4h_to_h\.reshape" in keys
    assert any(k.startswith(r"mlp\.activation_func\.") for k in keys)
    assert not any("feed_forward" in k for k in keys)


def test_no_cell_names_keys_from_the_weights_or_none_with_the_op_and_its_line():
    # a plain MindSpore FeedForward (no MindFormers, no decoder layers, no cell names in the scopes):
    # no key, each blocking Reshape's .recompute() call by hand, where the FeedForward calls the Linear
    _, plan = plan_of(CORPUS / "s7_ffn_3d_function_grad" / "31_validate_0032.ir")
    rc = plan["recompute"]
    assert rc["select_recompute"] == [] and not rc["no_key"]
    assert sorted((r["fix"], r["source"]["line"]) for r in plan["by_hand"]) == [
        ("self.w1.reshape.recompute()", 64),
        ("self.w2.reshape.recompute()", 66),
    ]
    assert "recompute_config" not in plan_text(plan)


_SCOPE_CELLS = re.compile(r"(?:^|/)([A-Za-z_][\w]*)-[A-Za-z_]\w*")


def _cells_below_layer(scope: str) -> str:
    parts = scope.split("/")
    idx = max((i for i, p in enumerate(parts) if re.match(r"\d+-", p)), default=-1)
    return ".".join(p.split("-", 1)[0] for p in parts[idx + 1 :] if "-" in p and not re.search(r"-op\d+$", p))


CASES = [
    RECOMPUTE / d
    for d in (
        "par-rc-mf_dp2_mp4_select_blocked",
        "mf-dp2_mp4_select_irlint_keys",
        "mf-glm2-select",
        "par-rc-pp2_dp2_mp2_micro4_select",
        "mf-qwen3-dp2_mp4_irlint_fix_round0",
    )
]
CASES += [
    CORPUS / "llama-recompute-modes",
    CORPUS / "s2_ffn_3d_reshape_blocks",
    UNSEEN / "attn-transpose",
    UNSEEN / "glm-fused",
    UNSEEN / "qwen-select",
]


def _weights_read(case, f) -> set[str]:
    """Cell paths below the layer of the weights the finding's related MatMuls read
    (``decoder.layers.0.mlp.linear_fc2.weight`` -> ``mlp.linear_fc2``): where the printed scopes
    name no cell (mcore), the key is built from them."""
    from irlint.model.layers import weight_name
    from irlint.runner.discover import discover
    from irlint.runner.engine import read_dump

    out = set()
    for group in discover([str(case)]):
        for dump in group:
            ir = read_dump(dump)
            if not str(ir.path).endswith(f.file.split("/")[-1]):
                continue
            by_id = {(d.get("graph", "").lstrip("@"), d.get("id", "")): k for k, d in ir.nodes.items()}
            for r in f.related:
                k = by_id.get((r.graph.lstrip("@"), r.node))
                if k is None or ir[k].get("op") != "MatMul":
                    continue
                frontier = ir.producers(k)
                for _ in range(4):  # through the weight's Load / Cast
                    params = [p for p in frontier if ir[p]["kind"] == "param"]
                    for p in params:
                        m = re.search(r"\.\d+\.(.+)\.weight$", weight_name(ir, p) or "")
                        if m:
                            out.add(m.group(1))
                    frontier = [q for p in frontier if ir[p]["kind"] == "cnode" for q in ir.producers(p)]
    return out


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_every_key_names_a_cell_path_the_finding_itself_shows(case):
    report, plan = plan_of(case)
    for f in report.findings:
        keys = extra_data(f).get("select_recompute") or []
        paths = {_cells_below_layer(s) for s in [f.scope] + [r.scope for r in f.related]}
        paths |= _weights_read(case, f)
        for key in keys:
            cells = key.rsplit(r"\.", 1)[0].replace("\\.", ".")
            # the key's cells are a run of cells some scope of the finding prints (the blocked op's,
            # or for a folded Reshape its caller's)
            assert any(f".{cells}." in f".{p}." for p in paths), (f.code, f.node, key, paths)
    text = " ".join(f.hint for f in report.findings)
    assert "check them against your model" not in text


def test_strategy_change_is_a_shard_line_with_the_model_line_that_creates_the_op():
    _, plan = plan_of(CORPUS / "par-mismatch-ffn_col_col")
    s = plan["strategies"][0]
    assert s["shard"] == "ops.MatMul().shard(((1, 8), (1, 8)))"
    assert s["source"] == {"path": "/home/user/llm/parallel/mismatch/gen.py", "line": 60}
    assert "created at /home/user/llm/parallel/mismatch/gen.py:60" in plan_text(plan)


def test_an_op_that_carries_the_tag_itself_gets_no_key():
    # attn-transpose layer 1: merger_head_transpose %98 is tagged (its primitive says recompute:
    # Bool(1)) yet blocked with the folded Reshape %99: only the Reshape's key is asked for
    report, _ = plan_of(UNSEEN / "attn-transpose" / "21_validate_0076.ir")
    f = next(o for g in report.findings for o in g.occurrences if o.node == "%97")
    assert extra_data(f)["select_recompute"] == [r"attention\.reshape"]
    assert (
        "%98 Transpose (/work/scratch/rc/gen2/llama_tiny.py:121) already carries the recompute tag: no key for it"
        in f.hint
    )


def test_text_and_html_show_the_plan_once_at_the_top(tmp_path):
    from click.testing import CliRunner

    import irlint.cli

    case = str(RECOMPUTE / "par-rc-mf_dp2_mp4_select_blocked")
    text = CliRunner().invoke(irlint.cli.main, [case, "-n", "-q"]).output
    assert text.startswith("Fix plan (every finding at once)\n") and text.count("Fix plan") == 1
    assert "select_recompute: ['attention\\.merger_head_transpose', 'attention\\.reshape', " in text
    page = tmp_path / "r.html"
    CliRunner().invoke(irlint.cli.main, [case, "-n", "--format", "html", "-o", str(page)])
    html = page.read_text(encoding="utf-8")
    assert html.count('id="fix-plan"') == 1 and html.count('data-target="fix-plan"') == 1
    assert html.index('id="fix-plan"') < html.index("Findings, costliest first")


@pytest.mark.parametrize("case", ["mf-pp2_dp2_mp2_irlint_fix_round0", "par-rc-mf_dp2_mp4_select_blocked"])
def test_the_plan_is_the_same_whether_findings_are_grouped_or_not(case):
    # a grouped finding stands for one occurrence per layer: the plan reads every layer's
    grouped = lint([str(RECOMPUTE / case)], quiet_config())
    config = quiet_config()
    config.group = False
    single = lint([str(RECOMPUTE / case)], config)
    assert len(grouped.findings) < len(single.findings)
    assert fix_plan(grouped.findings) == fix_plan(single.findings)


# one case for each section a fix can land in: recompute keys, strategies, config keys (a root
# cause, an expert-parallel context setting), Layouts (a root cause's device-axis order, a chain's
# own Layout), and fixes by hand (a key to drop, a cell's primitive, one gather for every consumer)
FIX_CASES = [
    RECOMPUTE / "par-rc-mf_dp2_mp4_select_blocked",
    CORPUS / "par-mismatch-ffn_col_col",
    CORPUS / "par-mismatch-mf_moe_gather_dispatch",
    CORPUS / "par-mismatch-moe_gather_dispatch",
    CORPUS / "par-mismatch-attn_dropout_tuple",
    CORPUS / "par-mismatch-attn_dropout_dp_mp",
    CORPUS / "par-mismatch-attn_scale_tuple",
    CORPUS / "llama-cast",
    RECOMPUTE / "plain-ffn_one_op_silu_cell",  # a by-hand model-code row
    TESTS / "fixtures" / "synthetic" / "redistribution_patterns_synthetic",
]


@pytest.mark.parametrize("case", FIX_CASES, ids=lambda p: p.name)
def test_every_finding_with_a_fix_is_in_the_plan(case):
    report, plan = plan_of(case)
    with_fix = [o for f in report.findings for o in f.occurrences if o.fix]
    assert with_fix, "the case must have a finding with a fix"
    listed = {
        x
        for section in (plan["strategies"], plan["config"], plan["layouts"], plan["by_hand"], plan["recompute"]["keys"])
        for row in section
        for x in (row.get("findings") or [row.get("finding")])
    }
    for o in with_fix:
        assert o.fingerprint in plan["resolves"], (o.code, o.fix)
        assert o.fingerprint in listed, (o.code, o.fix)


def test_an_expert_parallel_relayout_plans_mindformers_parallel_enable_alltoall():
    report, plan = plan_of(CORPUS / "par-mismatch-mf_moe_gather_dispatch")
    [row] = plan["config"]
    assert (row["key"], row["value"], row["written_by_fix"]) == ("parallel.enable_alltoall", True, True)
    assert "set_auto_parallel_context(enable_alltoall=True)" in row["note"]
    # the headline's fix is the hint's: every finding of the run says the same
    assert {f.fix for f in report.findings} == {"enable_alltoall=True"}
    assert "parallel:\n  enable_alltoall: True" in plan_text(plan)


def test_the_headline_fix_of_an_expert_relayout_is_the_hints_not_a_strategy():
    # a strategy change exists for these chains too, but the hint keeps the expert layout
    report, _ = plan_of(CORPUS / "par-mismatch-moe_gather_dispatch")
    assert report.findings and all(
        f.fix == "enable_alltoall=True" and "enable_alltoall=True" in f.hint for f in report.findings
    )


@pytest.mark.parametrize(
    "case, keeps",
    [("par-mismatch-attn_dropout_tuple", True), ("par-mismatch-attn_dropout_dp_mp", False)],
)
def test_a_dropout_beside_a_layout_plans_the_layout_device_axis_order(case, keeps):
    _, plan = plan_of(CORPUS / case)
    [row] = plan["layouts"]
    assert row["op"] == "Dropout" and row["cell"] == "Attention"
    assert row["device_matrix"] == 'Layout((2, 2, 2), ("dp", "tp", "cp"))'
    assert row["in_strategy"] == "((2, 2, 2, 1),)"
    assert ("keeps its tuple" in row["change"]) is keeps
    assert not plan["config"] and not plan["strategies"] and not plan["by_hand"]
    assert "# Layout, in the model code" in plan_text(plan)


def test_a_chain_whose_op_takes_the_neighbours_layout_plans_that_layout():
    _, plan = plan_of(CORPUS / "par-mismatch-attn_scale_tuple")
    [row] = plan["layouts"]
    assert row["op"] == "Mul" and row["change"].startswith("shard Mul with Layout((2, 2, 2)")


def test_fixes_no_yaml_holds_are_planned_by_hand_with_the_model_line():
    _, plan = plan_of(CORPUS / "llama-cast")
    rows = {r["fix"]: r for r in plan["by_hand"]}
    assert set(rows) == {r"select_recompute - 'attention_norm\.rcast'", r"select_recompute - 'ffn_norm\.rcast'"}
    assert all(
        r["code"] == "RC003" and r["source"] == {"path": "/home/user/llm/llama_tiny.py", "line": 77}
        for r in rows.values()
    )
    assert r"# by hand, at /home/user/llm/llama_tiny.py:77: select_recompute - 'ffn_norm\.rcast'" in plan_text(plan)


def test_a_plain_mindspore_one_op_cell_is_fixed_in_the_model_code_not_by_a_key():
    """LeNet (no MindFormers) with self.pool.recompute() on the one-op nn.MaxPool2d cell: the plan is
    the .recompute() call on the primitive, at the line that calls the cell; no select_recompute key."""
    report, plan = plan_of(RECOMPUTE / "lenet-pool_twice_blocked")
    assert [(f.code, f.node) for f in report.findings for f in f.occurrences] == [("RC001", "%3"), ("RC001", "%7")]
    assert plan["recompute"]["select_recompute"] == [] and not plan["recompute"]["no_key"]
    [row] = plan["by_hand"]
    assert row["fix"] == "self.pool.max_pool.recompute() in place of self.pool.recompute()"
    assert row["source"] == {"path": "/home/user/lenet/lenet_pool_recompute.py", "line": 46}
    text = plan_text(plan)
    assert "select_recompute" not in text and "recompute_config" not in text
    assert "lenet_pool_recompute.py:46: self.pool.max_pool.recompute()" in text


def test_config_lines_spell_values_as_the_config_and_irlint_fix_do():
    from irlint.fixplan import yaml_text
    from irlint.mfyaml import yaml_text as fix_spelling

    assert fix_spelling is yaml_text  # one spelling for the plan's lines and irlint fix's messages
    rows = [
        ("model.model_config.hidden_dropout", "0.0"),  # a fix's raw spelling: YAML's float, not the string '0.0'
        ("model.model_config.offset", [1, -1]),
        ("model.model_config.use_rope_slice", False),
        ("runner_config.batch_size", 1),
    ]
    plan = {
        "recompute": {"select_recompute": [], "no_key": []},
        "strategies": [],
        "config": [
            {"key": k, "value": v, "why": "w", "cause": "c", "written_by_fix": True, "note": ""} for k, v in rows
        ],
    }
    lines = plan_text(plan).splitlines()
    for leaf in ("hidden_dropout: 0.0 ", "offset: [1, -1] ", "use_rope_slice: False ", "batch_size: 1 "):
        assert any(line.strip().startswith(leaf) for line in lines), (leaf, lines)
    assert yaml_text("0.0") == "'0.0'" and yaml_text(None) == "null" and yaml_text(True, lower=True) == "true"


def test_a_key_whose_tag_the_op_carries_is_not_listed_to_add():
    # GLM4 recompiled with both the one-op SiLU cell's key and its primitive's: the primitive is tagged
    # (recompute: Bool(1)) inside the recomputed cell, so only the cell's key has to go
    report, plan = plan_of(RECOMPUTE / "mf-glm4-pp2_select_round1")
    rc = plan["recompute"]
    (row,) = [k for k in rc["keys"] if k["key"] == r"mlp\.activation_func\.silu\.silu"]
    assert row["applied"] is True
    assert [r["key"] for r in rc["replace"]] == [r"mlp\.activation_func\.silu"]
    text = plan_text(plan)
    assert "add to your own keys" not in text and "silu\\.silu' (its tag is there already) takes its place" in text
    # a one-op cell whose primitive is not tagged yet still gets its primitive's key to add
    _, first = plan_of(RECOMPUTE / "mf-glm4-pp2_select")
    keys = {k["key"]: k for k in first["recompute"]["keys"]}
    assert r"mlp\.activation_func\.silu\.silu" in keys and not any(k.get("applied") for k in keys.values())
    assert first["recompute"]["replace"] and "add to your own keys" in plan_text(first)
