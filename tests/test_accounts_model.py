"""The accounts ask the model (issue 39, "accounts that add up"): forward or backward half from the
graph's links, the layer of a backward collective from the forward op it differentiates, a recompute
re-run named by its cause, one op vocabulary, and no account importing the rules."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import SHARED_CORPUS, TESTS

from irlint.accounts import comm, memory
from irlint.accounts.comm import as_dict
from irlint.model import IRFile
from irlint.model.layers import any_layer
from irlint.runner.discover import discover
from irlint.runner.engine import read_dump

RECOMPUTE = TESTS / "fixtures" / "recompute"
CORPUS_FIXTURES = TESTS / "fixtures" / "corpus"
REPO = Path(__file__).resolve().parent.parent


def _irs(case: Path) -> list[IRFile]:
    return [read_dump(f) for group in discover([str(case)]) for f in group]


# A forward Mul read twice by the loss Mul; its gradient is the sum of the two backward Muls'
# outputs: MindSpore prints that AddN and its MakeTuple with a plain ``Default/`` scope and no
# forward_unique_id (as gradient accumulation in MindFormers' compiles), and the gradient of the
# forward Mul (forward_node_name) reads it.
GRAD_SUM = """# IR entry: @1_main_1
# Params:
%para1_x: <Tensor[Float16], (4, 8)> : [4, 8]
%para2_dout: <Tensor[Float16], (4, 8)> : [4, 8]

subgraph @1_main_1() {
  %0(CNode_1) = PrimFunc_Mul(%para1_x, %para1_x) cnode_primal_attrs: {unique_id: "10"}
      : (<Tensor[Float16], (4, 8)>, <Tensor[Float16], (4, 8)>) -> (<Tensor[Float16], (4, 8)>)
      # Fullname with scope: (Default/network-Net/Mul-op0)
  %1(CNode_2) = PrimFunc_Mul(%0, %0) cnode_primal_attrs: {unique_id: "11"}
      : (<Tensor[Float16], (4, 8)>, <Tensor[Float16], (4, 8)>) -> (<Tensor[Float16], (4, 8)>)
      # Fullname with scope: (Default/network-Net/Mul-op1)
  %2(CNode_3) = PrimFunc_Mul(%para2_dout, %0) cnode_primal_attrs: {forward_node_name: "Mul_11", forward_unique_id: "11"}
      : (<Tensor[Float16], (4, 8)>, <Tensor[Float16], (4, 8)>) -> (<Tensor[Float16], (4, 8)>)
      # Fullname with scope: (Gradients/Default/network-Net/Grad_Mul/Mul-op0)
  %3(CNode_4) = PrimFunc_Mul(%0, %para2_dout) cnode_primal_attrs: {forward_node_name: "Mul_11", forward_unique_id: "11"}
      : (<Tensor[Float16], (4, 8)>, <Tensor[Float16], (4, 8)>) -> (<Tensor[Float16], (4, 8)>)
      # Fullname with scope: (Gradients/Default/network-Net/Grad_Mul/Mul-op1)
  %4(CNode_5) = MakeTuple(%2, %3)
      : (<Tensor[Float16], (4, 8)>, <Tensor[Float16], (4, 8)>) -> (<Tuple[Tensor[Float16]*2], TupleShape((4, 8), (4, 8))>)
      # Fullname with scope: (Default/MakeTuple-op1)
  %5(CNode_6) = PrimFunc_AddN(%4)
      : (<Tuple[Tensor[Float16]*2], TupleShape((4, 8), (4, 8))>) -> (<Tensor[Float16], (4, 8)>)
      # Fullname with scope: (Default/AddN-op0)
  %6(CNode_7) = PrimFunc_Mul(%5, %para1_x) cnode_primal_attrs: {forward_node_name: "Mul_10", forward_unique_id: "10"}
      : (<Tensor[Float16], (4, 8)>, <Tensor[Float16], (4, 8)>) -> (<Tensor[Float16], (4, 8)>)
      # Fullname with scope: (Gradients/Default/network-Net/Grad_Mul/Mul-op2)
  %7(CNode_8) = Depend(%1, %6)
      : (<Tensor[Float16], (4, 8)>, <Tensor[Float16], (4, 8)>) -> (<Tensor[Float16], (4, 8)>)
      # Fullname with scope: (Default/Depend-op0)
  Return(%7)
      : (<Tensor[Float16], (4, 8)>)
      # Fullname with scope: (Default/Return-op0)
}
"""


def _by_id(ir: IRFile) -> dict[str, int]:
    return {ir[k]["id"]: k for k in ir.cnodes()}


def test_a_node_fed_by_backward_nodes_is_backward_whatever_its_scope(ir_from_text):
    ir = ir_from_text(GRAD_SUM)
    k = _by_id(ir)
    assert [ir.is_backward(k[i]) for i in ("%0", "%1")] == [False, False]
    assert all(ir.is_backward(k[i]) for i in ("%2", "%3", "%4", "%5", "%6"))
    # a Depend ordering a forward value after a backward one passes the forward value on
    assert not ir.is_backward(k["%7"])


def test_memory_keeps_no_gradient_sum_for_backward(ir_from_text):
    ir = ir_from_text(GRAD_SUM)
    kept = {ir[t.tensor.node]["id"] for t in memory.account(ir).kept}
    assert kept == {"%0"}  # the AddN read by the forward Mul's gradient is backward's own


def test_real_compile_keeps_no_gradient_accumulation_addn():
    # MindFormers GLM2 (2.1.0): 8 AddN of Default/AddN-opN sum the two halves of a rotary
    # embedding's gradient, read by the Concat that is the gradient of a forward Split
    (ir,) = _irs(RECOMPUTE / "mf-glm2-select")
    addn = [k for k in ir.nodes_by_op("AddN") if ir[k]["scope"].startswith("Default/AddN")]
    assert len(addn) == 8 and all(ir.is_backward(k) for k in addn)
    report = memory.account(ir)
    assert not [t for t in report.kept if ir.is_backward(t.tensor.node)]
    assert not [t for t in report.kept if ir[t.tensor.node]["op"] in ("AddN", "UpdateState")]


def test_an_unmarked_op_of_the_lazy_inline_backward_half_is_backward():
    # MindFormers Llama, full recompute: the CrossEntropyLoss bprop in the backward half ◂ computes
    # %1 = Sub(%0 = Exp(log_softmax_result), one_hot), no Gradients/ scope, no forward_unique_id, fed
    # by no backward node (its inputs are the forward half's values through the Partial). It runs in
    # backward: not kept; the forward values it reads (LogSoftmax's Sub, the OneHot) are
    (ir,) = _irs(RECOMPUTE / "mf-dp2_mp4_full_recompute")
    by_line = {d.get("line"): k for k, d in ir.nodes.items() if d.get("kind") == "cnode"}
    exp, sub = by_line[741], by_line[744]
    assert (ir[exp]["op"], ir[sub]["op"]) == ("Exp", "Sub") and "◂" in ir[sub]["graph"]
    assert ir.is_backward(exp) and ir.is_backward(sub)
    kept = {ir[t.tensor.node].get("line"): t for t in memory.account(ir).kept}
    assert 744 not in kept and not [t for t in kept.values() if ir.is_backward(t.tensor.node)]
    # what ◂'s Exp and Sub read through the Partial: the log-softmax result and the one-hot labels
    assert (ir[by_line[624]]["op"], ir[by_line[663]]["op"]) == ("Sub", "OneHot")
    assert {624, 663} <= set(kept) and kept[624].nbytes == kept[663].nbytes == 32 * 32 * 4
    # the recompute copies there stay copies, not backward ops, and the pass's ordering Depends pass
    # forward values on
    copies = [k for k in ir.cnodes() if ir[k]["graph"] == ir[sub]["graph"] and ir.is_recompute_copy(k)]
    assert copies and not any(ir.is_backward(k) for k in copies)


def test_a_cells_own_bprop_is_backward_without_lazy_inline():
    # MindFormers Llama without lazy_inline: forward and backward in one graph, and _NLLLoss's own
    # bprop (loss.py:140, ``softmax_result = P.Exp()(log_softmax_result)``, then ``logits = softmax_result
    # - one_hot_label``) is inlined under the loss's forward scope with no mark; only its trace's
    # ``def bprop(`` frame and its backward readers tell
    (ir,) = _irs(TESTS / "fixtures" / "names" / "names_no_lazy_inline")
    by_line = {d.get("line"): k for k, d in ir.nodes.items() if d.get("kind") == "cnode"}
    exp, sub = by_line[4462], by_line[4475]
    assert (ir[exp]["op"], ir[sub]["op"]) == ("Exp", "Sub")
    assert "_nllloss-_NLLLoss" in ir[sub]["scope"] and not ir[sub]["scope"].startswith("Gradients/")
    assert ir.is_backward(exp) and ir.is_backward(sub)
    kept = {ir[t.tensor.node].get("line"): t for t in memory.account(ir).kept}
    assert 4475 not in kept and not [t for t in kept.values() if ir.is_backward(t.tensor.node)]
    # what the bprop reads is kept instead: the log-softmax result and the one-hot labels
    log_softmax, one_hot = ir.producers(exp)[0], ir.producers(sub)[1]
    assert (ir[log_softmax]["op"], ir[one_hot]["op"]) == ("Sub", "OneHot")
    assert {ir[log_softmax]["line"], ir[one_hot]["line"]} <= set(kept)
    # the forward ops of the loss around it stay forward: LogSoftmax's Exp and the loss's own Mul
    assert not ir.is_backward(log_softmax) and not ir.is_backward(one_hot)


def test_a_model_read_whole_still_reads_its_traces():
    # the account commands read a dump whole and close it; the select key of a primitive comes from
    # its trace (``self.silu(``), which a closed stream would have hidden: the key was then a guess
    from irlint.model.keys import node_select_key

    for name in ("mf-glm4-pp2_select/rank_0", "mf-glm2-select"):  # gzip and plain text
        (ir,) = _irs(RECOMPUTE / name)
        silu = [k for k in ir.cnodes() if ir[k]["op"] == "SiLU" and not ir.is_recompute_copy(k)]
        assert silu and ir.trace(silu[0])
        assert node_select_key(ir, silu[0])[1] is False  # read, not guessed


@pytest.mark.parametrize(
    "case",
    [
        "mf-pp2_dp2_mp2_irlint_fix_round0",
        "mf-pp2_interleave_irlint_fix_round0",
        "mf-telechat3-pp2_irlint_fix_round0",
        "par-mindformers-llama_dp2_mp4",  # no pipeline: 41,856 and 66,432 backward bytes before
        pytest.param(
            "par-llama_mp-dp2_mp4_optpar",
            marks=pytest.mark.skipif(not SHARED_CORPUS.is_dir(), reason="a case of ../shared/corpus only"),
        ),
    ],
)
def test_identical_layers_give_equal_comm_bytes(case):
    # lazy_inline prints one layer's scope on the gradients of every layer (and a reused cell's
    # gradient carries the first layer's without it): a backward collective is counted in the layer
    # of the forward op it is the gradient of
    seen = 0
    folder = next(d / case for d in (RECOMPUTE, CORPUS_FIXTURES, SHARED_CORPUS) if (d / case).is_dir())
    for ir in _irs(folder):
        if ir.stage.name != "validate":
            continue
        layers = [r for r in comm.account(ir).layers() if r.layer.isdigit()]
        assert len(layers) >= 2
        assert len({(r.forward_bytes, r.backward_bytes, r.recompute_bytes) for r in layers}) == 1, [
            (r.layer, r.forward_bytes, r.backward_bytes) for r in layers
        ]
        assert layers[0].backward_bytes > 0
        seen += 1
    assert seen


@pytest.mark.parametrize(
    "case",
    [
        "mf-pp2_dp2_mp2_irlint_fix_round0",
        "mf-telechat3-pp2_irlint_fix_round0",
        "mf-dp2_mp4_po_zero3_full",
        "mf-densetpl-pp2_full_recompute",  # its backward scopes name other layers' cells
    ],
)
def test_a_backward_nodes_model_path_is_its_forward_ops(case):
    # MindSpore's backward scopes can name another layer's cell (lazy_inline prints one layer's scope on
    # the gradients of every layer): a backward collective's model_path is its forward op's, so it agrees
    # with its layer; a mirror op's gradient takes the cell of the weight it reduces (mirror_user_id), a
    # recomputed copy the place of the op it rebuilds
    from irlint.model import primal_attr
    from irlint.model.layers import model_path

    checked = mirrors = 0
    for ir in _irs(RECOMPUTE / case):
        for c in comm.account(ir).collectives:
            k = c.node
            layer, path = model_path(ir, k)
            if ir.is_recompute_copy(k):  # a copy is where the op it rebuilds is
                assert (layer, path) == model_path(ir, ir.original_of(k)) and layer == c.layer
                continue
            if not ir.is_backward(k):
                continue
            assert layer == c.layer, (ir[k]["id"], layer, c.layer)
            forward = ir.forward_of(k)
            weight = primal_attr(ir[k], "mirror_user_id")
            if forward is not None and not ir.is_backward(forward):
                assert path == model_path(ir, forward)[1]
                checked += 1
            elif isinstance(weight, str) and "." in weight:
                assert path == weight.rsplit(".", 1)[0]
                mirrors += 1
            if layer.isdigit():
                assert f".{layer}." in path + ".", (ir[k]["id"], layer, path)
    assert checked and mirrors


def test_a_backward_collective_is_in_its_forward_ops_layer():
    for ir in _irs(RECOMPUTE / "mf-telechat3-pp2_irlint_fix_round0"):
        acc = comm.account(ir)
        by_node = {c.node: c for c in acc.collectives}
        moved = [c for c in acc.collectives if c.backward and c.transposes in by_node]
        assert moved
        for c in moved:
            assert c.layer == by_node[c.transposes].layer, ir[c.node]["id"]


@pytest.mark.parametrize(
    "case, causes",
    [
        # MindFormers Llama, full recompute (recompute: True, no select keys): wo's AllReduce the
        # parallel pass inserted runs again because of mp_comm_recompute
        ("mf-dp2_mp4_full_recompute", {("mp_comm_recompute", "mp_comm_recompute")}),
        # DeepSeek-V3, full recompute: the experts' AlltoAll and linear_proj's ReduceScatter (model code)
        # by the layer's recompute, the redistribution AllGathers by mp_comm_recompute
        (
            "mf-deepseek3-dp4_mp2_ep2_full_recompute",
            {("recompute", "recompute"), ("mp_comm_recompute", "mp_comm_recompute")},
        ),
        ("mf-deepseek3-pp2_full_recompute", {("recompute", "recompute"), ("mp_comm_recompute", "mp_comm_recompute")}),
        # a whole-cell select key and select_comm_recompute keep their keys
        (
            "mf-moe-dp4_mp2_ep2_ffn_recompute",
            {
                (r"feed_forward\.alltoall", "select_recompute"),
                (r"feed_forward\.ffn\.w2\.allreduce", "select_recompute"),
            },
        ),
        ("mf-dp2_mp4_sp_comm_recompute", {(r"ffn_norm\.norm", "select_comm_recompute")}),
    ],
)
def test_a_recompute_rerun_is_named_by_its_cause(case, causes):
    found = set()
    for ir in _irs(RECOMPUTE / case):
        found |= {(row["key"], row["via"]) for row in as_dict(ir, comm.account(ir))["recompute"]}
    assert found == causes


def test_full_recompute_reruns_are_priced_as_its_cause_not_as_a_key():
    # MindFormers' general dense template with recompute: True and mp_comm_recompute: False: MindFormers
    # 2.1.0 passes mp_comm_recompute to no layer (layer.recompute()), so the parallel pass's AllGathers are
    # recomputed all the same (20 copies on rank 0): PC001 names full-layer recompute, not a key to set
    from irlint.runner.engine import lint

    case = RECOMPUTE / "mf-densetpl-pp2_full_recompute"
    (ir0, _) = _irs(case)
    copies = [k for k in ir0.nodes_by_op("AllGather") if ir0.is_recompute_copy(k)]
    assert len(copies) == 20
    rows = {(row["key"], row["via"]) for row in as_dict(ir0, comm.account(ir0))["recompute"]}
    assert ("mp_comm_recompute", "mp_comm_recompute") in rows
    found = [f for f in lint([str(case)]).findings if f.code == "PC001"]
    assert found
    for f in found:
        assert "twice because of full-layer recompute, which recomputes the layer's communication too" in f.message
        assert "because of key mp_comm_recompute" not in f.message


def test_the_accounts_import_nothing_from_the_rules():
    for path in sorted((REPO / "irlint" / "accounts").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert "import_module" not in text, path.name
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom):
                assert not (node.module or "").startswith(("rules", "irlint.rules")), path.name
                assert not (node.level and (node.module or "").startswith("rules")), path.name


def test_one_definition_of_is_backward():
    defs = []
    for root in ("irlint", "rules"):
        for path in sorted((REPO / root).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.FunctionDef) and node.name == "is_backward":
                    defs.append((path.relative_to(REPO).as_posix(), node))
    # the model's; RecomputeFacts.is_backward only forwards to it
    assert [p for p, _ in defs if p != "rules/recompute/evidence.py"] == ["irlint/model/__init__.py"]
    for p, node in defs:
        if p == "rules/recompute/evidence.py":
            assert "self.ir.is_backward(k)" in ast.unparse(node)


def test_one_op_vocabulary():
    from irlint.rules.recompute import evidence
    from irlint.rules.redistribution import chain

    from irlint.accounts import flops
    from irlint.model import layers, ops

    assert "MatMulV2" in evidence.MATMUL_OPS and "MatMulV2" in flops.MATMUL_OPS and "MatMulV2" in chain.MATMUL_OPS
    assert evidence.MATMUL_OPS == layers.MATMUL_OPS == ops.MATMUL_OPS
    assert flops.MATMUL_OPS <= ops.MATMUL_OPS and chain.MATMUL_OPS <= ops.MATMUL_OPS


def test_layer_peers_do_not_need_a_list_called_layers():
    assert any_layer("Default/net-Net/blocks-CellList/3-Block/attn-Attention/MatMul-op2") == (
        "Default/net-Net/blocks-CellList/*-Block/attn-Attention/MatMul-op2"
    )
    assert any_layer("Default/network-CausalLM/model-Model/layers-CellList/12-DecoderLayer/Add-op1") == (
        "Default/network-CausalLM/model-Model/layers-CellList/*-DecoderLayer/Add-op1"
    )
    assert any_layer("Default/network-CausalLM/lm_head-Linear/MatMul-op0") is None
