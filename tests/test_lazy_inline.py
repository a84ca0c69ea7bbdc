"""Recompute evidence in lazy_inline and pipeline dumps (FINDINGS-recompute-parallel.md), one test per
evidence form, on the real MindSpore 2.10 compiles copied to tests/fixtures/recompute: real
MindFormers 2.1.0 LlamaForCausalLM (dp2 x mp4, select SiLU/Mul keys, no Reshape keys) and a 4-layer
Llama in two pipeline stages with 4 micro batches (layers 0 and 2 with the Reshape keys, 1 and 3
without). The forward half is ``@…▸…``, the backward half ``@…◂…``; ``%N`` restarts per subgraph.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import TESTS, quiet_config
from irlint.rules.recompute import evidence, keys

from irlint.accounts.memory import account
from irlint.cli import main
from irlint.findings_json import extra_data
from irlint.model.layers import Places
from irlint.model.pipeline import schedules
from irlint.read.reader import read_ir
from irlint.runner.engine import lint

CASES = TESTS / "fixtures" / "recompute"
MF = CASES / "par-rc-mf_dp2_mp4_select_blocked" / "rank_0" / "21_validate_0093.ir"
PP0 = CASES / "par-rc-pp2_dp2_mp2_micro4_select" / "rank_0" / "21_validate_0091.ir"
PP4 = CASES / "par-rc-pp2_dp2_mp2_micro4_select" / "rank_4" / "21_validate_0093.ir"
MF_KEYS = CASES / "mf-dp2_mp4_select_irlint_keys" / "rank_0" / "21_validate_0093.ir"
MF_FOLDED = CASES / "mf-dp2_mp4_select_irlint_keys_folded" / "rank_0" / "21_validate_0093.ir"


@pytest.fixture(scope="module")
def mf():
    return read_ir(str(MF))


@pytest.fixture(scope="module")
def pp0():
    return read_ir(str(PP0))


def half(ir, glyph: str) -> str:
    return next(name for name in ir.subgraphs if glyph in name)


def node(ir, node_id: str, glyph: str = "▸") -> int:
    graph = half(ir, glyph)
    return next(k for k in ir.subgraphs[graph].nodes if ir[k]["id"] == node_id)


def test_partial_binds_each_argument_to_the_backward_half_parameter_in_order(pp0, mf):
    # argument i of Partial(@◂…, a0, a1, …) is parameter i of ◂: the Partial's type line and ◂'s
    # parameters agree; in the pipeline dump the names do too (▸ %116(equiv_159_CNode_3969), the
    # Reshape after layer 1's SiLU, is ◂ %para171_equiv_159_CNode_3969)
    for ir in (pp0, mf):
        back = ir.subgraphs[half(ir, "◂")]
        partial = next(k for k in ir.nodes_by_op("Partial") if str(ir[k]["args"][0]) == back.name)
        args = ir.producers(partial)[1:]
        assert 0 < len(back.params) - len(args) <= 2  # the call of the Partial passes the rest (sens, monad)
        for i, (arg, param) in enumerate(zip(args, back.params)):
            bound = [u for u, _, kind in ir.graph.in_edges(param, data="kind") if kind == "call_in"]
            assert bound == [arg], (i, ir[param]["id"])
    named = [
        (pp0[p]["id"], pp0[a]["name"])
        for p, a in zip(pp0.subgraphs[half(pp0, "◂")].params, pp0.producers(next(iter(pp0.nodes_by_op("Partial"))))[1:])
        if pp0[a]["kind"] == "cnode" and pp0[a]["name"].startswith("equiv_")
    ]
    assert len(named) > 20 and all(pid.endswith("_" + name) for pid, name in named)
    param = next(p for p in pp0.subgraphs[half(pp0, "◂")].params if pp0[p]["id"] == "%para171_equiv_159_CNode_3969")
    assert [pp0[u]["id"] for u, _, kind in pp0.graph.in_edges(param, data="kind") if kind == "call_in"] == ["%116"]


def test_applied_is_a_duplicated_copy_in_the_backward_half_with_the_same_unique_id(pp0):
    # layer 0 (Reshape keys set): ▸ %56 SiLU unique_id 74512 has its copy in ◂; layer 1's %115 has none
    silu0, silu1 = node(pp0, "%56"), node(pp0, "%115")
    copies = pp0.copy_of(silu0)
    assert [pp0[c]["op"] for c in copies] == ["SiLU"]
    assert "◂" in pp0[copies[0]]["graph"] and pp0[copies[0]]["primal_attrs"]["unique_id"] == "74512"
    assert "recompute_id" not in pp0[copies[0]]["cnode_attrs"]
    assert pp0.copy_of(silu1) == []
    assert pp0.by_unique_id("74512") == silu0  # the forward node, not its copy


def test_kept_for_backward_is_read_in_the_backward_half_through_the_partial(pp0):
    # ▸ %115 SiLU -> %116 Reshape (untagged) -> Partial -> ◂ %7 Mul (Grad_Mul) reads it
    reads = evidence.kept_for_backward(pp0, node(pp0, "%115"))
    assert [(pp0[r.reader]["id"], pp0[r.reader]["op"]) for r in reads] == [("%7", "Mul")]
    assert "◂" in pp0[reads[0].reader]["graph"]
    assert [pp0[v]["id"] for v in evidence.RecomputeFacts.of(pp0).blocking_chain(reads)] == ["%116"]
    # layer 0's SiLU was recomputed: backward reads its copy, nothing keeps the forward one
    assert evidence.kept_for_backward(pp0, node(pp0, "%56")) == []


def test_a_recomputed_copy_reading_a_forward_value_keeps_it(pp0):
    # ◂ %96 Reshape is the copy of layer 0's w2 input Reshape; the copy of the SiLU before it is
    # recomputed too, so the copies read each other, never a kept forward SiLU
    facts = evidence.RecomputeFacts.of(pp0)
    assert facts.applied(node(pp0, "%57"))  # w1's output Reshape of layer 0, tagged by its key
    # the ffn_norm output cast of layer 0 (▸ %52 reshape input) is read by the recomputed copies:
    ffn_in = node(pp0, "%52")
    readers = [r.reader for r in evidence.kept_for_backward(pp0, pp0.producers(ffn_in)[0])]
    assert any(pp0.is_recompute_copy(r) for r in readers)


def test_layer_comes_from_the_links_and_the_cell_path_from_the_gradient(mf):
    places = Places.of(mf)
    # ▸ %86 / %165 SiLU print "Default/SiLU-op0/1"; their gradients (SiLUGrad, forward_unique_id)
    # both print layer 1 (the reused cell's scope); the ops around them (w1's MatMul before, the
    # Reshape printed in w1-Linear after) say 0 and 1, as the weights near them do
    for node_id, layer in (("%86", "0"), ("%165", "1")):
        where = places.place(node(mf, node_id))
        assert (where.layer, where.layer_from, where.cells_from) == (layer, "links", "gradient")
        assert places.base_layer(node(mf, node_id)) == (layer, "weights")
        assert where.cells == ("feed_forward-LlamaFeedForward", "w1-Linear", "activation-LlamaSiLU")
    # a scope that names its layer and agrees with the weights stays as printed
    assert places.layer(node(mf, "%87")) == ("0", "scope")


def test_select_recompute_keys_come_from_cell_path_and_op_never_from_redistribution_names(mf):
    # %87 = Reshape(SiLU) {instance name: redistribution_op_14378022683482822352} (…/w1-Linear)
    assert mf[node(mf, "%87")]["instance"].startswith("redistribution_op_")
    assert keys.node_select_key(mf, node(mf, "%87")) == (r"feed_forward\.w1\.reshape", False)
    assert keys.node_select_key(mf, node(mf, "%86")) == (r"feed_forward\.w1\.activation\.silu", False)
    assert keys.node_select_key(mf, node(mf, "%88")) == (r"feed_forward\.mul", False)
    report = lint([str(MF)], quiet_config())
    hints = " ".join(f.hint for f in report.findings)
    assert "redistribution_op" not in hints
    assert r"'feed_forward\.w1\.reshape'" in hints and r"'attention\.wo\.reshape'" in hints


def test_pipeline_schedule_counts_micro_batches_in_flight(pp0, mf):
    (stage0,) = schedules(pp0)
    assert (stage0.micro_batches, stage0.in_flight) == (4, 2)  # 1F1B on the first of 2 stages
    (stage1,) = schedules(read_ir(str(PP4)))
    assert (stage1.micro_batches, stage1.in_flight) == (4, 1)  # the last stage: F B F B …
    assert schedules(mf) == []  # one forward call: no pipeline


def test_kept_activation_of_a_pipeline_stage_is_priced_per_micro_batch_in_flight():
    report = lint([str(PP0)], quiet_config())
    silu = next(
        o
        for f in report.findings
        for o in f.occurrences
        if o.node == "%115" and o.rule == "reshape-blocks-silu-mul-recompute"
    )
    # one unit: the bytes at the stage's peak, the layer's per micro batch times its micro batches in flight then
    assert "4.00 KiB at stake, at the pipeline stage's peak: 2.00 KiB per micro batch" in silu.message
    assert "2 of this layer's 4 micro batches in flight then" in silu.message
    assert silu.bytes_at_stake == 4096
    extra = extra_data(silu)
    assert (extra["micro_batches_in_flight"], extra["bytes_at_stake_per_micro_batch"]) == (2, 2048)


def test_memory_accounts_lazy_inline_layers_and_weight_copies(mf):
    report = account(mf)
    rows = {r.layer: r for r in report.layers()}
    # every layer keeps its blocked SiLU and Mul (2 x (32, 32) fp16), placed by the weights
    layer_of = {mf[t.tensor.node]["id"]: t.layer for t in report.kept if "▸" in mf[t.tensor.node]["graph"]}
    assert (layer_of["%86"], layer_of["%88"], layer_of["%165"], layer_of["%167"]) == ("0", "0", "1", "1")
    assert rows["0"].kept_bytes == rows["1"].kept_bytes > 8192
    # fp16 copies of the weights handed through the call and the Partial are not activations
    weights = {mf[t.tensor.node]["id"] for t in report.weight_copies}
    assert "%182" in weights  # lm_head's weight Cast (128, 64) fp16
    assert report.micro_batches == 1 and report.peak_kept_bytes == report.total_kept_bytes


def test_a_weight_only_op_or_a_tuple_item_is_not_a_request(tmp_path):
    # the same real dump, with a weight's Cast (Cast(Load(wo.weight))) and RmsNorm's TupleGetItem
    # tagged as full recompute tags them: neither is reported (no activation passes through them)
    text = MF.read_text(encoding="utf-8")
    weight_cast = "= PrimFunc_Cast(%67, I64(42)) {instance name: cast} primitive_attrs: {output_names: [output], input_names: [x, dst_type]}"
    item = "%155(equiv_73_output) = TupleGetItem(%154, I64(0))"
    assert text.count(weight_cast) == 1 and text.count(item) == 1
    text = text.replace(weight_cast, weight_cast[:-1] + ", recompute: Bool(1)}")
    text = text.replace(item, item + " cnode_attrs: {recompute: Bool(1)}")
    dump = tmp_path / "21_validate_0093.ir"
    dump.write_text(text, encoding="utf-8")
    found = [o for f in lint([str(dump)], quiet_config(extend_select=["RC004"])).findings for o in f.occurrences]
    assert {f.node for f in found if f.graph.startswith("@1893")} == {"%64", "%86", "%88", "%143", "%165", "%167"}


def test_memory_text_of_a_pipeline_folder(snapshot):
    result = CliRunner().invoke(main, ["memory", str(PP0.parent.parent), "--top", "3"])
    assert result.exit_code == 0, result.output
    assert (
        result.output.replace(str(CASES), "<recompute>").replace("tests/fixtures/recompute", "<recompute>") == snapshot
    )


def test_memory_json_of_a_pipeline_stage_has_the_in_flight_figures():
    result = CliRunner().invoke(main, ["memory", str(PP0), "--format", "json", "--top", "0"])
    entry = json.loads(result.output)["files"][0]
    assert (entry["micro_batches"], entry["micro_batches_in_flight"]) == (4, 2)
    assert entry["peak_kept_bytes"] > entry["total_kept_bytes"]


def test_lazy_inline_findings(snapshot):
    report = lint([str(MF.parent.parent), str(PP0.parent.parent)], quiet_config())
    assert [
        (
            f.file.replace(str(CASES), "<recompute>").replace("tests/fixtures/recompute", "<recompute>"),
            f.graph[:24],
            f.node,
            f.rule,
            f.message,
            f.hint,
        )
        for group in report.findings
        for f in group.occurrences
    ] == snapshot


def test_the_keys_irlint_gives_free_what_its_findings_priced():
    # the same MindFormers model recompiled with the hint's keys (FeedForward + attention), then
    # with the folded-Reshape hint's key too: each layer's kept bytes drop by the findings' bytes
    findings = lint([str(MF)], quiet_config()).findings
    per_layer = sum(f.bytes_at_stake for f in findings) // 2
    assert per_layer == 2048 + 2048 + 1024  # SiLU, Mul (2 x (32, 32) fp16), PV BatchMatMul
    kept = [{r.layer: r.kept_bytes for r in account(read_ir(str(p))).layers()} for p in (MF, MF_KEYS, MF_FOLDED)]
    for layer in ("0", "1"):
        assert kept[0][layer] - kept[1][layer] == 4096  # the FeedForward keys
        assert kept[1][layer] - kept[2][layer] == 1024  # attention\.reshape
    assert kept[0]["outside"] == kept[1]["outside"] == kept[2]["outside"]
    assert [f.rule for f in lint([str(MF_FOLDED)], quiet_config()).findings] == []


def test_two_layers_default_scoped_problems_are_two_problems():
    # both SiLUs print "Default/SiLU-op<N>" (the op number renumbers between dumps): the identity
    # carries the layer and cells recovered from the graph instead
    silus = [o for f in lint([str(MF)], quiet_config()).findings for o in f.occurrences if o.op == "SiLU"]
    assert len({f.problem for f in silus}) == 2
    assert sorted(dict(enumerate(f.identity))[1] for f in silus) == [
        "model.layers.0.feed_forward.w1.activation",
        "model.layers.1.feed_forward.w1.activation",
    ]
