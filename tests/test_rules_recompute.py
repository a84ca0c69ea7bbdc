"""Boundary tests of the recompute rules (RC001-RC004) on real MindSpore 2.10 dumps, plus
snapshots of their findings."""

from __future__ import annotations

import functools

import gzip
import io

import pytest
from click.testing import CliRunner
from conftest import CORPUS, TESTS, portable, quiet_config
from irlint.rules.recompute import downcast, evidence, feed_forward, keys

import irlint.cli
from irlint.accounts.memory import bytes_at_stake
from irlint.findings_json import extra_data
from irlint.fixplan import fix_plan
from irlint.model.layers import Places
from irlint.read.reader import read_ir
from irlint.rule import example_text, load_rules
from irlint.runner.engine import lint

RULES = {cls.code: cls for cls in load_rules(plugins=False) if cls.code.startswith("RC")}


def read(case: str, name: str):
    return read_ir(str(CORPUS / case / name), display=f"{case}/{name}")


def check(ir, *codes):
    codes = codes or tuple(RULES)
    return [f for code in codes for f in RULES[code]().check(ir)]


def by(found, code):
    return sorted((f.node, f.op) for f in found if f.code == code)


# --- which files are judged ------------------------------------------------------------------------

FULL = CORPUS / "full-folder-1layer"
STAGE_FILES = sorted(p.name for p in FULL.glob("*.ir") if not p.name.startswith(("hwopt_", "graph_")))


@pytest.mark.parametrize("name", STAGE_FILES)
def test_decision_is_read_from_content_in_pipeline_order(name):
    """Every file from add_recomputation on shows the decision; none before it does."""
    ir = read("full-folder-1layer", name)
    facts = evidence.RecomputeFacts.of(ir)
    after = (ir.stage.family == "opt_pass" and ir.stage.index >= 19) or (
        ir.stage.family == "frontend" and ir.stage.index >= 13
    )
    assert facts.decided is after


def test_tag_before_the_recompute_pass_is_not_judged():
    # 22_environ_conv of the jit-grad pipeline already has the backward graph and the SiLU/Mul
    # primitive tags, but no cnode_attrs decision: a request only
    before = read("s7_ffn_3d_function_grad", "22_environ_conv_0023.ir")
    assert any(before.is_backward(k) for k in before.cnodes())
    assert check(before) == []
    after = read("s7_ffn_3d_function_grad", "23_add_recomputation_0024.ir")
    assert by(check(after), "RC002") == [("%6", "SiLU"), ("%8", "Mul")]
    assert by(check(after), "RC001") == []  # one problem, one finding: RC002 has them


def test_jit_grad_stage_names_pick_the_final_front_end_graph():
    report = lint([str(CORPUS / "s7_ffn_3d_function_grad")], quiet_config())
    rc = [f for f in report.findings if f.code.startswith("RC")]
    assert {f.file.rsplit("/", 1)[-1] for f in rc} == {"31_validate_0032.ir"}
    assert sorted((f.code, f.node) for f in rc) == [("RC002", "%6"), ("RC002", "%8")]


# --- RC001 / RC004 ---------------------------------------------------------------------------------


def test_applied_recompute_is_silent_and_copies_are_found():
    ir = read("s1_ffn_2d", "21_validate_0076.ir")
    silu = next(k for k in ir.nodes_by_op("SiLU") if not ir.is_recompute_copy(k))
    copies = ir.copy_of(silu)
    assert len(copies) == 1 and ir[copies[0]]["cnode_attrs"]["recompute_id"] == ir[silu]["cnode_attrs"]["recompute_id"]
    assert check(ir) == []


def test_reshape_blocked_silu_mul_is_one_finding_of_rc002():
    ir = read("s2_ffn_3d_reshape_blocks", "21_validate_0076.ir")
    assert check(ir, "RC001") == []
    silu = next(f for f in check(ir, "RC002") if f.op == "SiLU")
    assert "%7 Reshape" in silu.message and "%27 Mul" in silu.message
    assert [(r.node, r.op) for r in silu.related][:1] == [("%7", "Reshape")]
    # a plain MindSpore model without decoder layers: the fix is the call in the model code
    assert silu.fix == "self.w1.reshape.recompute()" and "select_recompute" not in silu.hint
    assert silu.source == ("/home/user/llm/llm_common.py", 64)  # `gate = self.w1(x)`


def test_benign_tag_is_rc004_and_only_when_enabled():
    path = str(CORPUS / "s4_cast_rmsnorm" / "21_validate_0076.ir")
    default = lint([path], quiet_config()).findings
    assert [f for f in default if f.code in ("RC001", "RC004") and f.node in ("%20", "%34")] == []
    enabled = lint([path], quiet_config(extend_select=["RC004"])).findings
    benign = [f for f in enabled if f.code == "RC004"]
    assert sorted((f.node, f.op, f.severity) for f in benign) == [("%20", "Add", "info"), ("%34", "ReduceMean", "info")]


def test_last_op_of_a_layer_tagged_by_primitive_is_benign():
    # llama-recompute-modes layer 1: w2's second Reshape (after the MatMul) shares the tagged
    # primitive; nothing in backward reads it
    ir = read("llama-recompute-modes", "21_validate_0076.ir")
    assert ("%130", "Reshape") in by(check(ir, "RC004"), "RC004")
    assert ("%130", "Reshape") not in by(check(ir, "RC001"), "RC001")


def test_cell_output_bool0_is_never_flagged_when_the_cell_recomputed_something():
    ir = read("s4_cast_rmsnorm", "21_validate_0076.ir")
    assert ir[next(k for k in ir.cnodes() if ir[k]["id"] == "%31")]["cnode_attrs"]["recompute"] is False
    assert [f for f in check(ir) if f.node == "%31"] == []


def test_one_op_recompute_cell_that_recomputed_nothing_is_flagged():
    ir = read("llama-recompute-modes", "21_validate_0076.ir")
    silu = [f for f in check(ir, "RC001") if f.node == "%184"]
    assert len(silu) == 1 and extra_data(silu[0])["request"] == "one-op-cell"
    assert "activation-SiLU" in silu[0].message
    # layer 3 (Cell.recompute() on the whole layer): the unneeded last ops are by design
    assert [f for f in check(ir) if "3-DecoderLayer/" in f.scope] == []


def test_one_op_cell_is_found_where_forward_scopes_print_layer_0():
    """A model whose decoder layers are one class prints layer 0's scope on the SiLU of every
    layer: the layer comes from the weights w1's MatMul reads, the one-op cell from structure."""
    path = TESTS / "fixtures" / "recompute" / "aliased-scopes-l4" / "21_validate_0076.ir.gz"
    ir = read_ir(str(path), stream=io.BytesIO(gzip.decompress(path.read_bytes())))
    facts = evidence.RecomputeFacts.of(ir)
    silus = {
        ir[k]["id"]: k
        for k in ir.cnodes()
        if ir[k]["op"] == "SiLU" and not ir.is_backward(k) and not ir.is_recompute_copy(k)
    }
    assert all("/0-DecoderLayer/" in ir[k]["scope"] for k in silus.values())  # the printed alias
    assert {i: facts.cell_path_of(k)[4] for i, k in silus.items()} == {
        "%55": "0-DecoderLayer",
        "%119": "1-DecoderLayer",
        "%183": "2-DecoderLayer",
        "%247": "3-DecoderLayer",
    }
    found = {f.node: f for f in check(ir, "RC001") if f.op == "SiLU"}
    assert sorted(found) == ["%119", "%183", "%247"]  # layer 0's SiLU was recomputed with its layer
    for layer, node in (("1", "%119"), ("2", "%183"), ("3", "%247")):
        f = found[node]
        assert extra_data(f)["request"] == "one-op-cell"
        # printed 0-DecoderLayer: the layer comes from the ops it is linked to (the weights say so too)
        assert f"layer {layer} (from the ops it is linked to)" in f.message
        assert Places.of(ir).base_layer(silus[node]) == (layer, "weights")
        assert f"{layer}-DecoderLayer/feed_forward-FeedForward/activation-SiLU," in f.message
        # the primitive's key, never the cell's
        assert "'feed_forward\\.activation\\.silu'" in f.hint and "'feed_forward\\.activation'" not in f.hint
    # an op between two layers reads both layers' weights: its printed layer stands
    add = next(k for k in ir.cnodes() if ir[k]["id"] == "%67" and not ir.is_backward(k))
    assert facts.cell_path_of(add)[4] == "0-DecoderLayer" and facts.is_kept_output(add)


def test_lazy_inline_one_op_cell_is_marked_only_by_need_cse_and_the_scope_prefix():
    """MindFormers' guide key ``feed_forward\\.w1\\.activation`` names the one-op LlamaSiLU cell; under
    lazy_inline its SiLU has no recompute attribute, and w1's recomputed output Reshape reads it in
    backward through the Partial."""
    path = TESTS / "fixtures" / "recompute" / "mf-dp2_mp4_one_op_cell" / "rank_0" / "21_validate_0093.ir.gz"
    ir = read_ir(str(path), stream=io.BytesIO(gzip.decompress(path.read_bytes())))
    facts = evidence.RecomputeFacts.of(ir)
    silu = next(k for k in ir.cnodes() if ir[k]["op"] == "SiLU" and ir[k]["id"] == "%79")
    assert ir[silu]["cnode_attrs"] == {"need_cse_after_recompute": True}
    assert facts.request(silu) == "one-op-cell"
    (read,) = facts.backward_readers(silu)
    assert ir.is_recompute_copy(read.reader) and ir[read.reader]["op"] == "Reshape"
    assert [ir[v]["op"] for v in read.chain] == ["Depend"]
    # the other uncopied recompute_ ops of the forward half belong to multi-op cells: no request
    others = [k for k in facts.tagged() if ir[k]["scope"].startswith("recompute_") and ir[k]["op"] != "SiLU"]
    assert others and all(
        facts.request(k) is None for k in others if not (ir[k].get("primitive_attrs") or {}).get("recompute")
    )


def test_a_slice_the_parallel_pass_inserted_blocks_and_the_hint_names_the_reshape_key():
    """GLM's SwiGLU Mul keeps the hidden dimension whole; the row-parallel dense_4h_to_h reads it split,
    so a StridedSlice {redistribution_op_...} sits between the Mul and the Partial: it blocks, has no key
    of its own, and takes the tag of the Linear's Reshape (the fixed compile copies all three). The
    FeedForward stays whole through the parallel pass's re-layouts (dense_h_to_4h's AllGather -> Split
    -> Concat, the slice before dense_4h_to_h): RC002's, not RC001's."""

    def lint_fixture(name):
        path = TESTS / "fixtures" / "recompute" / name / "rank_0" / "21_validate_0093.ir.gz"
        return read_ir(str(path), stream=io.BytesIO(gzip.decompress(path.read_bytes())))

    found = check(lint_fixture("mf-glm2-dp4_mp2_slice_blocked"), "RC001", "RC002")
    blocked = {f.node: f for f in found if f.code == "RC002"}
    assert sorted(blocked) == ["%165", "%327"] and len(found) == 2
    f = blocked["%165"]
    assert "%166 StridedSlice" in f.message and "%167 Reshape" in f.message
    assert "blocked by dense_4h_to_h's StridedSlice, dense_4h_to_h's Reshape" in f.headline
    assert "add 'mlp\\.dense_4h_to_h\\.reshape'" in f.hint and "stridedslice'" not in f.hint
    assert extra_data(f)["select_recompute"] == ["mlp\\.dense_4h_to_h\\.reshape"]
    assert "inserted by the parallel pass (redistribution_op_" in f.hint
    assert [r.op for r in f.related][:2] == ["StridedSlice", "Reshape"]
    assert check(lint_fixture("mf-glm2-dp4_mp2_slice_fixed"), "RC001", "RC002") == []


def test_a_one_op_cell_called_twice_with_only_checkpoint_marks_is_reported_per_call():
    """Plain MindSpore LeNet, self.pool.recompute() on the one-op MaxPool2d called after each conv: the
    file's only recompute marks are checkpoint: Bool(1) (no Bool(1), recompute_id or copy), and the
    two calls print one scope, yet each call is one op, never recomputed, read by MaxPoolGrad."""
    ir = read_ir(str(TESTS / "fixtures" / "recompute" / "lenet-pool_twice_blocked" / "31_validate_0035.ir"))
    facts = evidence.RecomputeFacts.of(ir)
    assert facts.decided
    pools = ir.nodes_by_op("MaxPool")
    assert [ir[k]["id"] for k in pools] == ["%3", "%7"]
    assert [facts.request(k) for k in pools] == ["one-op-cell", "one-op-cell"]
    found = check(ir)
    assert [(f.code, f.node) for f in found] == [("RC001", "%3"), ("RC001", "%7")]
    f = found[0]
    assert f.fix == "self.pool.max_pool.recompute() in place of self.pool.recompute()"
    assert "select_recompute key" not in f.hint and f.fixes.recompute is None
    assert f.source == ("/home/user/lenet/lenet_pool_recompute.py", 46)  # the cell's call, not pooling.py
    fixed = TESTS / "fixtures" / "recompute" / "lenet-pool_twice_fixed" / "31_validate_0032.ir"
    assert check(read_ir(str(fixed))) == []
    # compiled as a TrainOneStepCell the scopes name the cell (pool-MaxPool2d): still the call, no key
    cell = read_ir(str(TESTS / "fixtures" / "recompute" / "lenet-pool_twice_cell" / "21_validate_0076.ir"))
    named = check(cell)
    assert [(f.code, f.node, f.fix) for f in named] == [("RC001", n, f.fix) for n in ("%3", "%7")]
    assert all("pool\\.max_pool" not in f.hint and f.fixes.recompute is None for f in named)


def _gz(case, name="21_validate_0076.ir.gz"):
    path = TESTS / "fixtures" / "recompute" / case / name
    return read_ir(str(path), stream=io.BytesIO(gzip.decompress(path.read_bytes())))


def test_a_plain_mindspore_blocking_chain_is_fixed_in_the_model_code_not_by_a_key():
    """Plain MindSpore (no MindFormers, no recompute_config, no decoder layers): self.square.recompute()
    in two blocks, each Square kept for backward by the down Linear's untagged self.reshape. The fix is the
    .recompute() call on that primitive, written where the block calls self.down; following it (the
    _fixed compile) copies Square and Reshape, and frees what the findings priced."""
    ir = _gz("plain-reshape_chain_blocked")
    assert not keys.mindformers_model(ir)
    found = check(ir)
    assert [(f.code, f.node) for f in found] == [("RC001", "%4"), ("RC001", "%14")]
    for f in found:
        assert f.fix == "self.down.reshape.recompute()"
        assert f.source == ("/home/user/plain/plain_blocked_chain.py", 57)  # `self.down(h)` in Block.construct
        assert f.fixes.recompute is None and "select_recompute" not in f.hint and "recompute_config:" not in f.hint
        assert "write self.down.reshape.recompute() in the cell that calls self.down" in f.hint
    stake = sum(f.bytes_at_stake or 0 for f in found)
    fixed = _gz("plain-reshape_chain_fixed")
    assert check(fixed) == []
    from irlint.accounts.memory import account

    assert account(ir).total_kept_bytes - account(fixed).total_kept_bytes == stake == 2 * 4096


def test_a_plain_one_op_cell_that_calls_a_function_is_fixed_in_the_model_code():
    """self.silu = nn.SiLU() recomputed as a cell, under ms.value_and_grad: nn.SiLU calls
    ops.function.silu, so the cell holds no primitive (no self.silu.silu to tag): the change is made at
    the cell's call, no key. Followed (the _prim compile: self.silu = ops.auto_generate.SiLU(), its
    .recompute()), the SiLU is copied for backward and the priced bytes are freed."""
    from irlint.accounts.memory import account

    ir = read_ir(str(TESTS / "fixtures" / "recompute" / "plain-ffn_one_op_silu_cell" / "31_validate_0035.ir"))
    (f,) = [f for f in check(ir, "RC001") if f.op == "SiLU"]
    assert f.severity == "warning" and f.fix == "recompute the primitive inside the cell" and f.fixes.recompute is None
    assert f.source == ("/home/user/llm/ffn_one_op_silu.py", 45)  # `g = self.silu(self.w1(x2))`, not MindSpore's
    # the class MindSpore 2.10 holds PrimFunc_SiLU in (ops.SiLU does not exist there)
    assert "self.<name> = ops.auto_generate.SiLU()" in f.hint and "select_recompute" not in f.hint
    assert "self.silu.silu" not in f.hint
    fixed = read_ir(str(TESTS / "fixtures" / "recompute" / "plain-ffn_one_op_silu_prim" / "31_validate_0032.ir"))
    assert check(fixed, "RC001") == []
    assert any(fixed.is_recompute_copy(k) for k in fixed.nodes_by_op("SiLU"))
    assert account(ir).total_kept_bytes - account(fixed).total_kept_bytes == f.bytes_at_stake == 8192


@pytest.mark.parametrize(
    "path", ["corpus/ffn-jit-grad/31_validate_0035.ir", "recompute/plain-ffn_one_op_silu_prim_grad/31_validate_0032.ir"]
)
def test_an_op_no_forward_op_reads_cannot_be_recomputed_and_nothing_is_asked(path):
    """ms.grad w.r.t. the input returns no forward value: the forward ops after the SiLU are pruned and
    only the backward Mul reads it. MindSpore recomputes no node without a forward user
    (recompute_helper.cc HasForwardOutput), as a cell (ffn-jit-grad) or as a tagged primitive (the
    hint followed: still no copy): info, no fix, no bytes at stake."""
    ir = read_ir(str(TESTS / "fixtures" / path))
    (silu,) = [k for k in ir.nodes_by_op("SiLU")]
    assert not ir.read_by_forward(silu)
    assert all(ir[c]["scope"].startswith("Gradients/") for c in ir.consumers(silu))
    (f,) = [f for f in check(ir, "RC001") if f.op == "SiLU"]
    assert f.severity == "info" and dict(f.facts)["impact"] == "none"
    assert f.fix == "" and f.fixes.recompute is None and not f.bytes_at_stake
    assert "no forward op reads its output" in f.message and "Nothing to change" in f.hint
    plan = fix_plan([f])
    assert plan["recompute"]["select_recompute"] == [] and not plan.get("by_hand")


def test_a_mindformers_model_keeps_its_select_keys():
    case = TESTS / "fixtures" / "recompute" / "par-rc-mf_dp2_mp4_select_blocked"
    ir = read_ir(str(case / "rank_0" / "21_validate_0093.ir"))
    assert keys.mindformers_model(ir)
    reshapes = ir.nodes_by_op("Reshape")
    assert keys.model_code_hint(ir, reshapes[0], reshapes[:3]) is None


def test_a_multi_op_cells_outputs_read_from_one_input_are_one_call():
    """kept-output's cell returns transpose(x), scale(neg(x)): linked only by their input, still one
    call of three ops, so its Bool(0) outputs are kept by design."""
    ir = read_ir(str(TESTS / "fixtures" / "recompute" / "kept-output" / "21_validate_0076.ir"))
    facts = evidence.RecomputeFacts.of(ir)
    transpose = next(k for k in ir.nodes_by_op("Transpose") if ir[k]["id"] == "%3")
    assert facts.is_kept_output(transpose) and facts.request(transpose) is None


# --- RC002 -------------------------------------------------------------------------------------------


def test_recomputed_reshapes_silence_rc002():
    assert check(read("s3_ffn_3d_reshape_fixed", "21_validate_0076.ir")) == []
    llama = check(read("llama-recompute-modes", "21_validate_0076.ir"), "RC002")
    assert [f for f in llama if "1-DecoderLayer/" in f.scope] == []


def test_two_d_feed_forward_has_no_reshape_to_block():
    assert check(read("llama-2d", "21_validate_0076.ir"), "RC002") == []


def test_rc002_finds_the_structure_without_cell_names():
    ir = read("s7_ffn_3d_function_grad", "31_validate_0032.ir")
    mul = next(f for f in check(ir, "RC002") if f.op == "Mul")
    notes = [(r.node, r.op, r.note) for r in mul.related]
    assert notes[0] == ("%9", "Reshape", "blocking Reshape (w2), not recomputed")
    assert [n for n, op, _ in notes if op == "MatMul"][:3] == ["%5", "%2", "%11"]
    # a plain MindSpore model (no decoder layers): the fix is the .recompute() call the traces name,
    # w2's Reshape primitive where the FeedForward calls w2, and for the SiLU w1's (its output Reshape)
    silu = next(f for f in check(ir, "RC002") if f.op == "SiLU")
    assert (mul.fix, silu.fix) == ("self.w2.reshape.recompute()", "self.w1.reshape.recompute()")
    assert "select_recompute" not in extra_data(mul) and "recompute_config:" not in mul.hint
    # the keys a select_recompute config would need, from this dump's names only: no cell names in the
    # scopes, so from the weight w2's MatMul reads (never another model's naming); none for the Reshape
    # between SiLU and Mul, next to no weight (its op and model line)
    by_id = {ir[k]["id"]: k for k in ir.nodes_by_op("Reshape")}
    w2, between = keys.blocking_keys(ir, [by_id["%9"], by_id["%7"]])
    assert w2.key == "feed_forward\\.w2\\.reshape" and "is built from the weight its Linear reads" in w2.note
    assert between.key is None
    assert "no select_recompute key can be derived for %7 Reshape (/home/user/llm/llm_common.py:52)" in between.note


def test_rc002_on_cpu_backend_graph_with_expanded_silu():
    ir = read("s2_ffn_3d_reshape_blocks", "graph_build_0_0094.ir")
    assert by(check(ir, "RC002"), "RC002") == [("%9", "Mul")]


@pytest.mark.parametrize("name", ["graph_build_0_0094.ir", "hwopt_common_final_graph_0_0091.ir"])
def test_rc002_steps_over_backend_casts_around_fp16_matmuls(name):
    """CPU runs the Float16 MatMuls in Float32: the kernel graph wraps each one in
    ``is_backend_cast`` Casts (MatMul -> Cast -> Reshape -> Sigmoid/Mul ...). The FeedForward is
    still found by structure, and layers 0 and 2 (Mul tagged, w2 Reshape not) are flagged as in
    the validate file; layer 1 (reshapes recomputed) and 3 (full recompute) stay silent."""
    ir = read("llama-recompute-modes", name)
    ffns = feed_forward.find_feed_forwards(ir, evidence.RecomputeFacts.of(ir))
    assert len(ffns) == 4
    for ffn in ffns:
        casts = [v for v in ffn.roles if ir[v]["op"] == "Cast"]
        assert casts and all(_is_backend_cast(ir, c) for c in casts)
        assert ir[ffn.silu]["op"] == "Mul"  # SiLU expanded into x * Sigmoid(x)
    found = check(ir, "RC002")
    layers = sorted(f.scope.split("layers-CellList/")[1].split("-")[0] for f in found)
    assert layers == ["0", "2"]
    for f in found:
        assert f.op == "Mul"
        assert [r.op for r in f.related][:1] == ["Reshape"] and "w2-Linear" in f.related[0].scope
        # the merged primitive prints nn.Embedding's "reshape_flat"; the trace names Linear's "reshape"
        assert extra_data(f)["select_recompute"] == ["feed_forward\\.w2\\.reshape"]
    # one problem, one finding: RC001 leaves these Mul nodes to RC002
    assert not {f.node for f in found} & {f.node for f in check(ir, "RC001")}


def test_rc002_steps_over_model_casts_around_a_linear():
    """MindFormers' Linear casts its input and output itself (no is_backend_cast): those Casts are
    part of the FeedForward path too, so the same FeedForwards are found without the marker."""
    ir = read("llama-recompute-modes", "graph_build_0_0094.ir")
    for k in ir.nodes_by_op("Cast"):
        attrs = ir[k].get("primitive_attrs") or {}
        if attrs.get("is_backend_cast") is True:  # a new dict: parsed values may be shared
            ir[k]["primitive_attrs"] = {**attrs, "is_backend_cast": False}
    ffns = feed_forward.find_feed_forwards(ir, evidence.RecomputeFacts.of(ir))
    assert len(ffns) == 4 and not any(_is_backend_cast(ir, c) for f in ffns for c in f.roles)


def test_rc002_keys_come_from_scope_and_instance_name():
    scope = "Default/network-FeedForwardNet/feed_forward-LlamaFeedForward/w1-Linear/Reshape-op0"
    assert keys.select_key(scope, "reshape", "Reshape") == r"feed_forward\.w1\.reshape"
    layer = "Default/network-CausalLM/model-Model/layers-CellList/0-DecoderLayer/feed_forward-FeedForward/w2-Linear"
    assert keys.select_key(layer, "reshape_flat", "Reshape") == r"feed_forward\.w2\.reshape_flat"
    assert keys.select_key("Default/Reshape-op9", "reshape", "Reshape") is None


# --- select_recompute keys from the source trace (real MindSpore 2.10 lines) ------------------------

UNSEEN = TESTS / "fixtures" / "unseen"
# qwen-select 21_validate %61, the untagged down_proj Reshape, printed {instance name: reshape_flat}:
# MindSpore merged it with nn.Embedding's identical primitive. The call site says self.reshape.
MERGED_RESHAPE_TRACE = [
    "# In file /tmp/unseen/gen/llama_tiny.py:53~59, 4~49/    def construct(self, x):/",
    "# In file /tmp/unseen/gen/llama_tiny.py:55~56, 8~36/        if args.linear2d:/",
    "# In file /tmp/unseen/gen/llama_tiny.py:58, 24~51/        y = self.matmul(self.reshape(x, (b * s, d)), w)/",
]
# mix6 graph_build_0 %11 (kernel graph): the own source comes as a "code candidate" block
CODE_CANDIDATE_TRACE = [
    "# Corresponding code candidate:",
    "# In file /tmp/unseen/gen/llama_tiny.py:75~78, 4~64/    def construct(self, x):/",
    "# In file /tmp/unseen/gen/llama_tiny.py:78, 15~64/        return self.rcast(self.mul2(n, self.weight), ms.float16)/",
]
# qwen-select 21_validate %308 (backward Div): only its forward node's source is printed
FORWARD_CANDIDATE_TRACE = [
    "# Corresponding forward node candidate:",
    "# In file /tmp/unseen/gen/llama_tiny.py:229, 15~88/        return self.loss(self.reshape(logits, (-1, VOCAB)), self.reshape(labels, (-1,)))/",
    "# In file /tmp/unseen/gen/llama_tiny.py:229, 15~24/        return self.loss(self.reshape(logits, (-1, VOCAB)), self.reshape(labels, (-1,)))/",
]
SHARED_LINE = (
    "# In file /home/user/llm/llm_common.py:52, 15~41/        return self.reshape(x, out_shape)/"
    "<~~This line of code can be shared by multiple nodes, and may be duplicated./"
)


def _is_backend_cast(ir, k):
    """A Cast the CPU backend inserted around a Float32-only kernel (``is_backend_cast: Bool(1)``)."""
    return ir[k]["op"] == "Cast" and (ir[k].get("primitive_attrs") or {}).get("is_backend_cast") is True


def _node(ir, node_id, op):
    return next(k for k in ir.cnodes() if ir[k]["id"] == node_id and ir[k]["op"] == op)


def test_attribute_from_the_innermost_call_site():
    assert keys.attribute_from_trace(MERGED_RESHAPE_TRACE) == "reshape"
    assert keys.attribute_from_trace(CODE_CANDIDATE_TRACE) == "rcast"
    assert keys.attribute_from_trace([SHARED_LINE]) == "reshape"
    # columns are 0-based: one further in, the covered text is no `self.<attr>(` call
    shifted = MERGED_RESHAPE_TRACE[-1].replace(", 24~51/", ", 25~52/")
    assert keys.attribute_from_trace([shifted]) is None


def test_no_attribute_without_a_self_call_of_the_node_itself():
    assert keys.attribute_from_trace([]) is None
    # a backward node's trace block is its forward node's source, not its own
    assert keys.own_trace(FORWARD_CANDIDATE_TRACE) == []
    assert keys.attribute_from_trace(FORWARD_CANDIDATE_TRACE) is None
    assert keys.own_trace(MERGED_RESHAPE_TRACE[:1] + FORWARD_CANDIDATE_TRACE) == MERGED_RESHAPE_TRACE[:1]
    for line in [
        # functional call (nn.SiLU), a header line without columns, a multi-line statement
        "# In file /usr/local/lib/python3.11/site-packages/mindspore/nn/layer/activation.py:810, 15~32/        return ops.function.silu(x)/",
        "# In file /tmp/msvenv/lib/python3.11/site-packages/mindspore/ops/function/nn_func.py:4305~4399/def cross_entropy(input, target, weight=None, ignore_index=-100, reduction='mean', label_smoothing=0.0):/",
        "# In file /tmp/unseen/gen/llama_tiny.py:146~147, 8~54/        if args.swap_mul:/",
        "# Corresponding code candidate:",
    ]:
        assert keys.attribute_from_trace([line]) is None, line


def test_merged_instance_name_gives_way_to_the_trace():
    ir = read_ir(str(UNSEEN / "qwen-select" / "21_validate_0076.ir"))
    k = _node(ir, "%61", "Reshape")
    assert ir[k]["instance"] == "reshape_flat" and ir.trace(k)[-3:] == MERGED_RESHAPE_TRACE
    assert keys.primitive_name(ir, k) == ("reshape", False)
    assert keys.node_select_key(ir, k) == (r"mlp\.down_proj\.reshape", False)
    kernel = read_ir(str(UNSEEN / "mix6" / "graph_build_0_0094.ir"))
    cast = _node(kernel, "%11", "Cast")
    assert kernel[cast]["instance"] == "cast" and keys.primitive_name(kernel, cast) == ("rcast", False)


@pytest.mark.parametrize("case", ["qwen-select", "mix6"])
def test_trace_agrees_with_the_instance_name_of_tagged_primitives(case):
    ir = read_ir(str(UNSEEN / case / "21_validate_0076.ir"))
    tagged = [
        k
        for k in ir.cnodes()
        if (ir[k].get("primitive_attrs") or {}).get("recompute") is True and not ir.is_recompute_copy(k)
    ]
    named = [(ir[k]["instance"], keys.attribute_from_trace(ir.trace(k))) for k in tagged]
    named = [(inst, attr) for inst, attr in named if attr is not None]
    assert len(named) >= 4
    assert all(inst == attr for inst, attr in named), named


def test_before_the_merge_every_self_call_is_the_instance_name():
    """06_add_attr: no primitive is merged yet, so the printed instance name is the attribute the
    cell assigned; the trace must name the same one (this pins the 0-based start column)."""
    ir = read_ir(str(UNSEEN / "qwen-select" / "06_add_attr_0007.ir"))
    pairs = [
        (ir[k]["instance"], keys.attribute_from_trace(ir.trace(k)))
        for k in ir.cnodes()
        if ir[k].get("instance") and "/model-Model/" in ir[k].get("scope", "")
    ]
    pairs = [(inst, attr) for inst, attr in pairs if attr is not None]
    assert len(pairs) >= 100
    assert [p for p in pairs if p[0] != p[1]] == []


def test_key_is_the_same_before_and_after_the_merge():
    before = read_ir(str(UNSEEN / "qwen-select" / "06_add_attr_0007.ir"))
    after = read_ir(str(UNSEEN / "qwen-select" / "21_validate_0076.ir"))

    def reshape_keys(ir):
        return {
            ir[k]["scope"]: (ir[k]["instance"], keys.node_select_key(ir, k))
            for k in ir.nodes_by_op("Reshape")
            if ir[k].get("scope", "").endswith("down_proj-Linear/Reshape-op0") and not ir.is_backward(k)
        }

    b, a = reshape_keys(before), reshape_keys(after)
    assert b and set(b) <= set(a)
    # the select+rs layer's Reshape is tagged and keeps its name; the others print reshape_flat
    assert sorted(a[scope][0] for scope in b) == ["reshape", "reshape_flat", "reshape_flat", "reshape_flat"]
    for scope, (inst, key) in b.items():
        assert inst == "reshape"
        assert key == a[scope][1] == (r"mlp\.down_proj\.reshape", False)


def test_without_trace_the_instance_name_is_used_and_the_hint_says_it_is_a_guess():
    """A dump without source traces (or a kernel graph printing none for the node): the untagged
    Reshape's key falls back to the printed, here merged, instance name, flagged as a guess; the
    tagged Mul's instance name is trusted."""
    ir = read_ir(str(UNSEEN / "qwen-select" / "21_validate_0076.ir"))
    with_trace = [f for f in check(ir, "RC002") if "0-DecoderLayer/" in f.scope]
    ir.traces.clear()
    reshape, mul = _node(ir, "%61", "Reshape"), _node(ir, "%60", "Mul")
    assert keys.primitive_name(ir, reshape) == ("reshape_flat", True)
    assert keys.primitive_name(ir, mul) == ("mul", False)
    found = [f for f in check(ir, "RC002") if "0-DecoderLayer/" in f.scope]
    assert len(found) == len(with_trace) == 1
    assert extra_data(found[0])["select_recompute"] == [r"mlp\.down_proj\.reshape_flat"]
    assert "no source trace" in found[0].hint and "no source trace" not in with_trace[0].hint
    assert extra_data(with_trace[0])["select_recompute"] == [r"mlp\.down_proj\.reshape"]
    assert [f for f in check(ir, "RC001") if f.node == "%60"] == []  # RC002's alone


def test_untagged_primitive_without_instance_name_uses_the_op(ir_from_text):
    snippet = example_text(RULES["RC002"].INVALID[0])  # s7 31_validate trimmed: no traces, no cell names
    ir = ir_from_text(snippet.replace(" {instance name: reshape}", ""))
    k = _node(ir, "%5", "Reshape")
    assert keys.primitive_name(ir, k) == ("reshape", True)
    assert keys.node_select_key(ir, k) == (None, False)  # Default/Reshape-op9: no cell names


# --- backward readers ------------------------------------------------------------------------------


def test_backward_reader_is_named_by_the_forward_node_it_differentiates():
    """%675's scope says lm_head's Grad_MatMul, but its forward_unique_id is layer 0's down_proj
    MatMul %64: the message names that, the related node keeps MindSpore's scope."""
    ir = read_ir(str(UNSEEN / "qwen-select" / "21_validate_0076.ir"))
    f = next(f for f in check(ir, "RC002") if f.node == "%60")
    assert (
        "backward %675 MatMul (gradient of %64 MatMul in Default/network-CausalLM/model-Model/"
        "layers-CellList/0-DecoderLayer/mlp-FeedForward/down_proj-Linear) reads"
    ) in f.message
    reader = next(r for r in f.related if r.node == "%675")
    assert reader.scope.startswith("Gradients/Default/network-CausalLM/lm_head-Linear/Grad_MatMul/")
    assert reader.note == "backward reader of the saved tensor; gradient of %64 MatMul"
    # without forward_unique_id the reader is described by its scope, as MindSpore prints it
    k = _node(ir, "%675", "MatMul")
    ir[k]["primal_attrs"] = {}
    f = next(f for f in check(ir, "RC002") if f.node == "%60")
    assert "backward %675 MatMul (Gradients/Default/network-CausalLM/lm_head-Linear/Grad_MatMul/" in f.message
    assert next(r for r in f.related if r.node == "%675").note == "backward reader of the saved tensor"


def test_fingerprints_ignore_ids_and_scope_syntax_but_tell_layers_apart():
    opt = check(read("s2_ffn_3d_reshape_blocks", "opt_pass_19_add_recomputation_0033.ir"), "RC002")
    val = check(read("s2_ffn_3d_reshape_blocks", "21_validate_0076.ir"), "RC002")
    assert sorted(f.with_(stage="").fingerprint for f in opt) == sorted(f.with_(stage="").fingerprint for f in val)
    llama = check(read("llama-recompute-modes", "21_validate_0076.ir"), "RC002")
    assert len({f.fingerprint for f in llama}) == len(llama) == 2


# --- RC003 -------------------------------------------------------------------------------------------


def test_downcast_flagged_upcast_and_weight_casts_not():
    cast = check(read("llama-cast", "21_validate_0076.ir"), "RC003")
    assert by(cast, "RC003") == [("%113", "Cast"), ("%75", "Cast")]
    assert all("1-DecoderLayer/" in f.scope for f in cast)  # layer 0 tags up-casts only
    s4 = check(read("s4_cast_rmsnorm", "21_validate_0076.ir"), "RC003")
    # Cast-op0 (fp16->fp32), Cast-op2 (weight), ffn_norm casts (input recomputed too) are fine
    assert by(s4, "RC003") == [("%11", "Cast")]


def test_cast_dtype_falls_back_to_the_type_id_argument():
    ir = read("llama-cast", "21_validate_0076.ir")
    k = next(k for k in ir.cnodes() if ir[k]["id"] == "%75")
    ir[k]["out_type"] = None
    assert downcast.cast_types(ir, k) == ("Float32", "Float16")


# --- snapshots ------------------------------------------------------------------------------------

SNAPSHOT_FILES = [
    ("s2_ffn_3d_reshape_blocks", "21_validate_0076.ir"),
    ("s7_ffn_3d_function_grad", "graph_build_0_0050.ir"),
    ("s4_cast_rmsnorm", "21_validate_0076.ir"),
    ("llama-recompute-modes", "21_validate_0076.ir"),
    ("../unseen/attn-transpose", "21_validate_0076.ir"),
    ("../recompute/mf-glm2-select", "21_validate_0076.ir"),
]


# one snapshot per rule and fixture: a changed message is reviewed as its rule's, on its fixture
SNAPSHOTS = [(case, name, code) for case, name in SNAPSHOT_FILES for code in sorted(RULES)]


@functools.cache
def _snapshot_ir(case: str, name: str):
    return read(case, name)


@pytest.mark.parametrize(
    "case,name,code", SNAPSHOTS, ids=[f"{c.rsplit('/', 1)[-1]}-{code}" for c, _, code in SNAPSHOTS]
)
def test_findings_snapshot(case, name, code, snapshot):
    found = sorted(check(_snapshot_ir(case, name), code), key=lambda f: f.line)
    assert [portable(f.to_dict(), CORPUS) for f in found] == snapshot


@pytest.mark.parametrize("case", ["llama-cast", "unseen-mix6"])
def test_a_tagged_downcast_gets_one_consistent_finding(case):
    # recompute-not-applied would advise making the recompute apply, which is what raises memory
    folder = TESTS / "fixtures" / ("unseen/mix6" if case.startswith("unseen") else f"corpus/{case}")
    findings = lint([str(folder / "21_validate_0076.ir")], quiet_config()).findings
    downcasts = {f.node for f in findings if f.rule == "recompute-downcast"}
    assert len(downcasts) == 2
    assert not [f for f in findings if f.node in downcasts and f.rule != "recompute-downcast"]


# --- FINDINGS 2a on real dumps made for it (tests/fixtures/unseen, tests/fixtures/recompute) ------

RECOMPUTE = TESTS / "fixtures" / "recompute"


def test_transpose_after_a_tagged_batchmatmul_blocks_it_and_every_blocking_op_is_named():
    # attn-transpose layer 0: bmm2 tagged; %34 Transpose (merger_head_transpose) -> %35 Reshape
    # (wo) not recomputed; backward %655 MatMul (wo's weight gradient) reads %35
    ir = read_ir(str(UNSEEN / "attn-transpose" / "21_validate_0076.ir"))
    bmm = _node(ir, "%33", "BatchMatMul")
    kept = evidence.kept_for_backward(ir, bmm)
    assert [(ir[r.reader]["id"], [ir[v]["id"] for v in r.chain]) for r in kept] == [("%655", ["%34", "%35"])]
    found = [f for f in check(ir) if f.node == "%33"]
    assert [f.code for f in found] == ["RC001"]  # memory at stake, not the info-level unused tag
    f = found[0]
    assert "%34 Transpose" in f.message and "%35 Reshape" in f.message and "%655 MatMul" in f.message
    assert extra_data(f)["blocking"] == ["%34", "%35"]
    # %35 reads the 4-D Transpose and makes 2-D: the attention's own reshape and wo's folded into
    # one that keeps the attention's primitive, so wo's key would not tag it (layer 1 shows it)
    assert extra_data(f)["select_recompute"] == ["attention\\.merger_head_transpose", "attention\\.reshape"]
    assert "'attention\\.wo\\.reshape' does not" in f.hint


def test_a_tagged_but_not_recomputed_blocking_op_still_blocks():
    # layer 1: the Transpose %98 is tagged too but has no copy, so it is part of the chain
    ir = read_ir(str(UNSEEN / "attn-transpose" / "21_validate_0076.ir"))
    f = next(f for f in check(ir, "RC001") if f.node == "%97")
    assert extra_data(f)["blocking"] == ["%98", "%99"]


def test_walk_stops_at_a_multi_op_cell_output():
    # kept-output: Mul %2 tagged; its only way into backward is %3 Transpose, the Bool(0) output
    # of the three-op heads cell, which backward MatMul %23 reads
    ir = read_ir(str(RECOMPUTE / "kept-output" / "21_validate_0076.ir"))
    facts = evidence.RecomputeFacts.of(ir)
    mul, transpose = _node(ir, "%2", "Mul"), _node(ir, "%3", "Transpose")
    assert facts.is_kept_output(transpose)
    assert any(facts.is_backward(c) for c in ir.consumers(transpose))
    assert evidence.kept_for_backward(ir, mul) == []
    assert [(f.code, f.node) for f in check(ir)] == [("RC004", "%2")]


def test_one_op_cell_is_memory_at_stake_and_the_key_names_the_primitive_inside():
    ir = read_ir(str(UNSEEN / "glm-fused" / "21_validate_0076.ir"))
    silu = _node(ir, "%183", "SiLU")
    assert evidence.RecomputeFacts.of(ir).request(silu) == "one-op-cell"
    f = next(f for f in check(ir, "RC001") if f.node == "%183")
    assert "only op of its recompute cell" in f.message and "activation_func-SiLU" in f.message
    assert "select_recompute key 'mlp\\.activation_func\\.silu'" in f.hint


def test_one_op_cell_without_a_name_is_named_by_its_scope():
    """#11 item 20: ms.value_and_grad of a function-built net gives the cell scope ``recompute_/SiLU-op1``."""
    ir = read_ir(str(TESTS / "fixtures" / "recompute" / "plain-ffn_one_op_silu_cell" / "31_validate_0035.ir"))
    f = next(f for f in check(ir, "RC001") if f.node == "%4")
    assert "cell ," not in f.message and "cell  " not in f.message
    assert "recompute cell with no name (scope recompute_/SiLU-op1)" in f.message


def test_fused_gate_up_matmul_is_one_feed_forward():
    # glm-fused layer 0: dense_h_to_4h MatMul -> Split %55 -> TupleGetItem %56 (gate) / %58 (up)
    ir = read_ir(str(UNSEEN / "glm-fused" / "21_validate_0076.ir"))
    ffns = feed_forward.find_feed_forwards(ir, evidence.RecomputeFacts.of(ir))
    assert len(ffns) == 3 and all(f.w1 == f.w3 for f in ffns)
    first = min(ffns, key=lambda f: ir[f.gate_mul]["line"])
    assert ir[first.gate_mul]["id"] == "%59" and {ir[v]["op"] for v in first.roles} >= {"Split", "TupleGetItem"}
    found = check(ir, "RC002")
    assert sorted(f.node for f in found) == ["%185", "%59"]
    assert all(extra_data(f)["select_recompute"] == ["mlp\\.dense_4h_to_h\\.reshape"] for f in found)
    assert not {f.node for f in found} & {f.node for f in check(ir, "RC001")}


def test_sigmoid_expansion_fed_by_two_backend_casts_of_one_matmul():
    # ffn2d-kernel graph_build (Float16 kernel graph): %70 and %71 = Cast(%69 MatMul) each;
    # Sigmoid(%71) and Mul(%70, Sigmoid) are the SiLU
    ir = read_ir(str(UNSEEN / "ffn2d-kernel" / "graph_build_0_0094.ir"))
    ffns = feed_forward.find_feed_forwards(ir, evidence.RecomputeFacts.of(ir))
    silu = next(f for f in ffns if ir[f.silu]["id"] == "%73")
    x, sig = ir.producers(silu.silu)[:2]
    assert ir[sig]["op"] == "Sigmoid" and ir.producers(sig)[0] != x
    assert all(_is_backend_cast(ir, c) for c in (x, ir.producers(sig)[0]))
    assert ir[silu.w1]["id"] == "%69"
    assert len(ffns) == 2 and check(ir) == []  # the 2-D FeedForward's recompute applied


def test_downcast_is_judged_only_when_recomputed_or_held_back():
    # ffn-jit-grad %0: Float16 -> Float32 up-cast tagged, no copy, no backward reader: never RC003
    ir = read("ffn-jit-grad", "31_validate_0035.ir")
    assert check(ir, "RC003") == []
    # s4 %11 recomputed (recompute_id 2, copy %92): its Float32 input %10 stays alive
    s4 = check(read("s4_cast_rmsnorm", "21_validate_0076.ir"), "RC003")
    assert [(f.node, extra_data(f)["applied"]) for f in s4] == [("%11", True)]
    assert s4[0].message.startswith("Cast Float32 -> Float16 was recomputed")
    # llama-cast %75: tagged, no copy, held back only by the wq Reshape %76 backward reads
    cast = [f for f in check(read("llama-cast", "21_validate_0076.ir"), "RC003") if f.node == "%75"]
    assert len(cast) == 1 and not extra_data(cast[0])["applied"]
    assert "not recomputed only because non-recomputed %76 Reshape" in cast[0].message


def test_mindformers_glm2_keys_come_from_its_cell_paths_and_the_fix_applies():
    """MindFormers 2.1.0 ChatGLM2 (mf-glm2-select): the key for the one-op ChatGLM2SiLU cell names
    the primitive inside it, the fused FeedForward's key is dense_4h_to_h's Reshape; with exactly
    those keys (mf-glm2-fixed) the SiLU, Mul and Reshape get recompute_id and copies."""
    select = read_ir(str(RECOMPUTE / "mf-glm2-select" / "21_validate_0076.ir"))
    found = {(f.code, f.node): f for f in check(select, "RC001", "RC002", "RC003")}
    assert sorted(found) == [("RC001", "%196"), ("RC001", "%99"), ("RC002", "%101"), ("RC002", "%198")]
    assert "'mlp\\.activation_func\\.silu\\.silu'" in found["RC001", "%99"].hint
    keys = extra_data(found["RC002", "%101"])["select_recompute"]
    assert keys == ["mlp\\.dense_4h_to_h\\.reshape"]
    fixed = read_ir(str(RECOMPUTE / "mf-glm2-fixed" / "21_validate_0076.ir"))
    facts = evidence.RecomputeFacts.of(fixed)
    assert all(facts.applied(_node(fixed, n, op)) for n, op in (("%99", "SiLU"), ("%101", "Mul"), ("%102", "Reshape")))
    assert check(fixed, "RC001", "RC002", "RC003") == []


def test_mindspore_2_7_final_front_end_stage_is_found_by_its_name():
    """MindSpore 2.7.1 numbers the final front-end graph 19_validate: a folder lint judges it."""
    report = lint([str(RECOMPUTE / "ms271-attn-ffn")], quiet_config())
    assert {f.file.rsplit("/", 1)[-1] for f in report.findings} == {"19_validate_0072.ir"}
    assert sorted((o.code, o.node) for f in report.findings for o in f.occurrences) == [
        ("RC001", "%119"),
        ("RC001", "%33"),
        ("RC002", "%124"),
        ("RC002", "%188"),
        ("RC003", "%203"),
        ("RC003", "%241"),
    ]


def test_explain_documents_blocking_ops_and_one_op_cells():
    out = CliRunner().invoke(irlint.cli.main, ["explain", "RC001"]).output
    assert "Transpose" in out and "attention\\.merger_head_transpose" in out and "attention\\.wo\\.reshape" in out
    assert "One-op cells:" in out and "primitive inside the cell" in out
    assert "kept by design" in out


def test_a_folded_untagged_reshape_under_an_already_set_key_is_explained():
    # attn-transpose layer 1 sets attention\.wo\.reshape (it tags %103, after the MatMul), yet the
    # blocking %99 (wo's first Reshape, folded with the attention's own one) prints no tag
    ir = read_ir(str(UNSEEN / "attn-transpose" / "21_validate_0076.ir"))
    hints = {f.node: f.hint for f in check(ir, "RC001")}
    # the shapes prove the fold (4-D in, 2-D out): the caller's key, and why wo's does not tag it
    assert (
        "%99 Reshape" in hints["%97"]
        and "'attention\\.reshape' tags it, 'attention\\.wo\\.reshape' does not" in hints["%97"]
    )
    assert "already set" not in hints["%33"]  # layer 0 sets neither key: a key of layer 1 does not count


@pytest.mark.parametrize(
    "path",
    [
        UNSEEN / "attn-transpose" / "21_validate_0076.ir",
        TESTS / "fixtures" / "recompute" / "mf-dp2_mp4_select_irlint_keys_folded" / "rank_0" / "21_validate_0093.ir",
    ],
    ids=lambda p: p.parts[-2],
)
def test_a_tagged_key_is_looked_up_among_the_nodes_whose_cells_can_make_it(path):
    # folded_note asks for one (layer, key) per blocking op: the same node as the whole index of
    # tagged keys gives (found or not), naming only the tagged nodes whose printed cells start the key
    other = read_ir(str(path))
    whole = keys.tagged_keys(other)
    places = keys.Places.of(other)
    asked = {
        (places.layer(k)[0], keys.node_select_key(other, k)[0])
        for k in other.nodes_by_op("Reshape", "Transpose")
        if not other.is_backward(k) and not other.is_recompute_copy(k)
    }
    assert len(asked) > 4 and any(q in whole for q in asked) and any(q not in whole for q in asked)
    ir = read_ir(str(path))
    for layer, key in sorted(asked | set(whole), key=str):
        assert keys.tagged_with(ir, layer, key) == whole.get((layer, key))


def test_bytes_at_stake_of_a_transpose_blocked_op_are_the_kept_transpose_output():
    # attn-transpose layer 0: backward keeps %34's output (through the %35 Reshape view), not
    # %33's; recomputing %33 with its blocking ops frees those 1 x 4 x 16 x 16 fp16 bytes
    ir = read_ir(str(UNSEEN / "attn-transpose" / "21_validate_0076.ir"))
    bmm, transpose = _node(ir, "%33", "BatchMatMul"), _node(ir, "%34", "Transpose")
    assert (bytes_at_stake(ir, bmm), bytes_at_stake(ir, transpose)) == (0, 4 * 16 * 16 * 2)
    f = next(f for f in check(ir, "RC001") if f.node == "%33")
    assert f.bytes_at_stake == 4 * 16 * 16 * 2
    assert extra_data(f)["layers_with_problem"] == 2  # layer 1's bmm2 is blocked too


def test_following_the_one_op_cell_and_reshape_hints_frees_what_the_findings_priced():
    """aliased-scopes-l4 recompiled as the hints say (``llama_layers.py`` with the SiLU as a
    primitive that is tagged itself, and w2's input Reshape tagged): no RC finding is left, and
    each select layer keeps exactly the bytes RC001 and RC002 priced fewer."""
    from irlint.accounts.memory import account
    from irlint.runner.config import Config
    from irlint.runner.engine import lint

    base = TESTS / "fixtures" / "recompute" / "aliased-scopes-l4"
    fixed = TESTS / "fixtures" / "recompute" / "aliased-scopes-l4_fixed"
    before = lint([str(base)], Config(group=False))
    after = lint([str(fixed)], Config(group=False))
    assert not [f for f in after.findings if f.code.startswith("RC")]
    priced: dict[str, int] = {}
    for f in before.findings:
        if f.code in ("RC001", "RC002"):
            priced[f.layer] = priced.get(f.layer, 0) + (f.bytes_at_stake or 0)
    assert sorted(priced) == ["1", "2", "3"]

    def kept(folder):
        path = folder / "21_validate_0076.ir.gz"
        ir = read_ir(str(path), stream=io.BytesIO(gzip.decompress(path.read_bytes())))
        return {row.layer: row.kept_bytes for row in account(ir).layers()}

    old, new = kept(base), kept(fixed)
    assert {layer: old[layer] - new[layer] for layer in priced} == priced


def _kept_by_layer(folder) -> dict:
    import json

    result = CliRunner().invoke(irlint.cli.main, ["memory", str(folder), "--format", "json"])
    return {layer["layer"]: layer["kept_bytes"] for layer in json.loads(result.stdout)["files"][0]["layers"]}


def test_a_recomputed_downcast_is_priced_at_what_the_key_costs_on_a_real_compile():
    """MindFormers Llama dp2 x mp4 (lazy_inline) with `attention_norm\\.rcast` and the wq/wk/wv reshape
    keys: the RMSNorm's down-cast is recomputed and backward keeps its Float32 input. The RmsNorm's
    other output (rstd) is kept for RmsNormGrad, which says nothing about the input: RC003 prices
    4,096 bytes a layer, exactly what the same compile without the key keeps less."""
    here = TESTS / "fixtures" / "recompute"
    report = lint([str(here / "mf-dp2_mp4_rcast_recomputed")], quiet_config())
    (f,) = [f for f in report.findings if f.code == "RC003"]
    assert f.layers == ("0", "1") and f.bytes_at_stake == 2 * 4096
    with_key, without = (
        _kept_by_layer(here / "mf-dp2_mp4_rcast_recomputed"),
        _kept_by_layer(here / "mf-dp2_mp4_rcast_dropped"),
    )
    assert {layer: with_key[layer] - without[layer] for layer in with_key} == {"0": 4096, "1": 4096, "outside": 0}
    assert not [f for f in lint([str(here / "mf-dp2_mp4_rcast_dropped")], quiet_config()).findings if f.code == "RC003"]


def test_rc001_prices_net_of_the_inputs_its_fix_makes_backward_keep():
    """Real MindFormers Llama compiles, each priced against its recompile. wv's output Reshape tagged
    (`attention\\.wv\\.reshape`), kept through a Transpose: recomputing both would keep wv's MatMul
    output instead, and the recompile with `attention\\.transpose` keeps the same 62.0 KiB. So the
    finding saves nothing: info, no key (the run's fix plan is empty), and it says why. The merge-heads
    case: the findings of one run sum to what the recompile with `attention\\.reshape` frees (1 KiB a
    layer; 2 KiB a layer before, counted twice), and its Transpose, whose fix alone would keep the
    BatchMatMul's output instead, is info beside the BatchMatMul's finding that carries the key."""
    here = TESTS / "fixtures" / "recompute"
    report = lint([str(here / "mf-dp2_mp4_rcast_dropped")], quiet_config())
    (wv,) = [f for f in report.findings if f.code == "RC001"]
    assert wv.op == "Reshape" and wv.severity == "info" and not wv.bytes_at_stake and not wv.fix
    assert wv.hint.startswith("No key to add") and "MatMul's output (1.00 KiB)" in wv.hint
    assert fix_plan(report.findings)["recompute"]["select_recompute"] == []
    found = lint([str(here / "mf-dp2_mp4_select_irlint_keys")], quiet_config()).findings
    before = _kept_by_layer(here / "mf-dp2_mp4_select_irlint_keys")
    after = _kept_by_layer(here / "mf-dp2_mp4_select_irlint_keys_folded")
    freed = sum(before[layer] - after[layer] for layer in before)
    assert freed == 2048 and sum(f.bytes_at_stake or 0 for f in found if f.code == "RC001") == freed
    assert sorted((f.op, f.severity) for f in found if f.code == "RC001") == [
        ("BatchMatMul", "warning"),
        ("Transpose", "info"),
    ]
    assert fix_plan(found)["recompute"]["select_recompute"] == [r"attention\.reshape"]
