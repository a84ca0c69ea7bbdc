"""The activation-memory model (irlint/memory.py) and ``irlint memory``, against hand counts.

Every expected figure below is derived by hand from the model's configuration (the corpus-gen
script that made the dump), term by term; the dump only decides which tensors MindSpore keeps,
and the comments name them. Byte sizes: fp32 4, fp16 2, bool 1, int32 4.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import CORPUS, TESTS

from irlint.accounts.memory import account, bytes_at_stake, layer_of
from irlint.cli import main
from irlint.findings_json import extra_data
from irlint.read.reader import read_ir

GPT = TESTS / "fixtures" / "memory"
F32, F16 = 4, 2


def kept(case: str, name: str = "21_validate_0076.ir") -> dict[str, int]:
    report = account(read_ir(str(CORPUS / case / name)))
    return {row.layer: row.kept_bytes for row in report.layers()}


def saved(case: str, name: str = "21_validate_0076.ir") -> dict[str, int]:
    report = account(read_ir(str(CORPUS / case / name)))
    return {row.layer: row.recompute_saved_bytes for row in report.layers()}


# --- the FeedForward scenarios: x (2, 8, 32) fp32, hidden 64, loss mean(ffn(x)^2) ------------------

TOKENS, DIM, HIDDEN = 2 * 8, 32, 64
FFN_W1 = FFN_W3 = FFN_SILU = FFN_MUL = TOKENS * HIDDEN * F32  # (16, 64) fp32 each
FFN_OUT = TOKENS * DIM * F32  # w2 output, read by Square's backward


def test_s2_keeps_silu_and_mul_because_the_reshapes_block_their_recompute():
    # w1 and w3 MatMul outputs (SiLUGrad, the gate Mul's backward), SiLU and Mul (read through
    # their Reshapes by the Mul backward and w2's weight gradient), the FFN output (Square grad).
    # The input x is a graph input: not counted.
    assert kept("s2_ffn_3d_reshape_blocks") == {"outside": FFN_W1 + FFN_W3 + FFN_SILU + FFN_MUL + FFN_OUT}
    assert saved("s2_ffn_3d_reshape_blocks") == {"outside": 0}


def test_s1_two_d_ffn_recomputes_silu_and_mul_and_s7_is_s2_compiled_as_a_function():
    assert kept("s1_ffn_2d") == {"outside": FFN_W1 + FFN_W3 + FFN_OUT}
    assert saved("s1_ffn_2d") == {"outside": FFN_SILU + FFN_MUL}
    assert kept("s7_ffn_3d_function_grad", "31_validate_0032.ir") == kept("s2_ffn_3d_reshape_blocks")


def test_s3_recomputes_silu_and_mul_and_s2_minus_s3_is_what_the_fix_saves():
    assert kept("s3_ffn_3d_reshape_fixed") == {"outside": FFN_W1 + FFN_W3 + FFN_OUT}
    assert saved("s3_ffn_3d_reshape_fixed") == {"outside": FFN_SILU + FFN_MUL}
    # the guide's fix (recompute the Reshapes as well) saves exactly the SiLU and Mul outputs
    assert (
        kept("s2_ffn_3d_reshape_blocks")["outside"] - kept("s3_ffn_3d_reshape_fixed")["outside"]
        == FFN_SILU + FFN_MUL
        == 8192
    )


def test_s4_recomputed_downcast_keeps_its_fp32_input():
    # x (2, 8, 32) fp16 -> wi -> RMSNorm(32) -> wq (48) -> Add -> Neg -> RMSNorm(48), recompute cell
    # -> Cast fp32 -> Square -> mean.
    tokens = 16
    wi_out = tokens * 32 * F16  # checkpoint of the recomputed up-cast
    rsqrt = tokens * 1 * F32  # attention_norm 1/rms, (2, 8, 1)
    norm_fp32 = tokens * 32 * F32  # x * rsqrt: kept because the down-cast after it is recomputed
    norm_out = tokens * 32 * F16  # Mul by weight: wq's input
    neg_out = tokens * 48 * F16  # checkpoint of the ffn_norm recompute cell
    loss_in = tokens * 48 * F32  # Cast to fp32 before Square
    assert kept("s4_cast_rmsnorm") == {"outside": wi_out + rsqrt + norm_fp32 + norm_out + neg_out + loss_in}
    # recomputed: the up-cast (fp32), the down-cast (fp16), and ffn_norm's Cast, Rsqrt, down-cast
    assert saved("s4_cast_rmsnorm") == {
        "outside": tokens * 32 * F32 + tokens * 32 * F16 + tokens * 48 * F32 + tokens * 1 * F32 + tokens * 48 * F16
    }


# --- the tiny Llama (corpus-gen/llama_tiny.py): batch 1, fp16 compute, fp32 residual stream ---------


def llama_layer(s: int, h: int, heads: int, ff: int, ffn_kept: int) -> int:
    """One decoder layer of llama_tiny.py (b = 1) without recompute in its attention.
    ``ffn_kept``: how many of w1, w3, SiLU and the gate Mul outputs (s x ff fp16) backward keeps."""
    norm = s * h * F32 + s * F32 + s * h * F16  # x*rsqrt (fp32), rsqrt (s, 1), down-cast (q/k/v or w1/w3 input)
    qkv_heads = 3 * s * h * F16  # the transposed q, k, v
    softmax = heads * s * s * F32  # softmax in fp32 (SoftmaxBackward reads its output)
    probs = heads * s * s * F16  # cast to fp16 for probs x v
    merged = s * h * F16  # merged heads: wo's input
    residual = s * h * F32  # attention residual add: ffn_norm's input
    output = s * h * F32  # the layer output: the next norm's input
    return 2 * norm + qkv_heads + softmax + probs + merged + residual + output + ffn_kept * s * ff * F16


def llama_outside(s: int, h: int, vocab: int) -> int:
    embedding = s * h * F32  # Gather output: layer 0's norm input
    norm_out = s * h * F32 + s * F32 + s * h * F16  # final RMSNorm, as in a layer
    loss = 3 * s * vocab * F32  # logits cast, Exp, Sub (log-softmax)
    loss += s * F32 + s * F32 + 1 * F32  # ReduceMax, SumExt per row, SumExt total
    loss += s * 1 + s * 4  # Equal (bool) and MaskedFill (int32) of the labels
    return embedding + norm_out + loss


S, H, HEADS, FF, VOCAB = 16, 64, 4, 64 * 11 // 4, 128
FF_OUT = S * FF * F16


def test_llama_recompute_modes_per_layer():
    # layer 0 select: SiLU recomputed, the Mul blocked by w2's Reshape (w1, w3, Mul kept)
    # layer 1 select+rs: SiLU and Mul recomputed (w1, w3 kept); layer 2 select-cell: nothing
    # recomputed (w1, w3, SiLU, Mul kept); layer 3 full: only its output is kept
    assert kept("llama-recompute-modes") == {
        "0": llama_layer(S, H, HEADS, FF, 3),
        "1": llama_layer(S, H, HEADS, FF, 2),
        "2": llama_layer(S, H, HEADS, FF, 4),
        "3": S * H * F32,
        "outside": llama_outside(S, H, VOCAB),
    }
    assert llama_layer(S, H, HEADS, FF, 3) == 51840
    assert saved("llama-recompute-modes") == {
        "0": FF_OUT,
        "1": 2 * FF_OUT,
        "2": 0,
        "outside": 0,
        # everything the layer would keep (SiLU included, as layer 2 shows) but its output
        "3": llama_layer(S, H, HEADS, FF, 4) - S * H * F32,
    }


def test_llama_2d_and_cast_layers():
    assert kept("llama-2d") == {
        "0": llama_layer(S, H, HEADS, FF, 2),
        "1": llama_layer(S, H, HEADS, FF, 4),
        "outside": llama_outside(S, H, VOCAB),
    }
    # cast / downcast tags on the RMSNorm casts change nothing by the validate stage: the compiler
    # folds the tagged up-casts away (layer 0), and the tagged down-casts got no copy (layer 1: no
    # "duplicated: Bool(1)" in the file), so every layer keeps what an untagged one does
    assert kept("llama-cast") == {str(i): llama_layer(S, H, HEADS, FF, 4) for i in range(3)} | {
        "outside": llama_outside(S, H, VOCAB)
    }


def test_full_folder_one_layer():
    # llama_tiny.py --modes select --hidden 16 --seq 8: ff = 44; as layer 0 of llama-recompute-modes
    s, h, ff = 8, 16, 16 * 11 // 4
    assert kept("full-folder-1layer") == {"0": llama_layer(s, h, HEADS, ff, 3), "outside": llama_outside(s, h, VOCAB)}
    assert saved("full-folder-1layer")["0"] == s * ff * F16


# --- GPT layers against Korthikanti et al. 2022 -------------------------------------------------


def gpt_layer_terms(mode: str, s: int, b: int, h: int, a: int) -> dict[str, int]:
    """What MindSpore keeps for one GPT layer of bench/gpt_layer.py (all fp16), term by term."""
    sbh, as2b, sb = s * b * h, a * s * s * b, s * b
    if mode == "full":
        return {"layer output (next layer's input)": 2 * sbh}
    terms = {
        "LayerNorm 1 output (q/k/v input)": 2 * sbh,
        "LayerNorm 1 mean, 1/std (fp32)": 2 * 4 * sb,
        "Q": 2 * sbh,
        "K": 2 * sbh,
        "V": 2 * sbh,
        "merged heads (output projection input)": 2 * sbh,
        "attention output dropout mask (fp16)": 2 * sbh,
        "residual add (LayerNorm 2 input)": 2 * sbh,
        "LayerNorm 2 output (fc1 input)": 2 * sbh,
        "LayerNorm 2 mean, 1/std (fp32)": 2 * 4 * sb,
        "GeLU input": 8 * sbh,
        "GeLU output (fc2 input)": 8 * sbh,
        "MLP dropout mask (fp16)": 2 * sbh,
        "layer output (next layer's input)": 2 * sbh,
    }
    if mode == "none":  # selective recompute rebuilds these from Q, K, V
        terms |= {
            "softmax output": 2 * as2b,
            "attention dropout mask (fp16)": 2 * as2b,
            "attention dropout output": 2 * as2b,
        }
    return terms


def korthikanti(mode: str, s: int, b: int, h: int, a: int) -> float:
    sbh = s * b * h
    return {"none": sbh * (34 + 5 * a * s / h), "selective": 34 * sbh, "full": 2 * sbh}[mode]


GPT_CASES = [(16, 2, 64, 4), (32, 1, 64, 8), (8, 4, 32, 2)]


@pytest.mark.parametrize("s,b,h,a", GPT_CASES)
def test_gpt_layer_matches_the_paper_once_mindspore_terms_are_named(s, b, h, a):
    report = account(read_ir(str(GPT / f"gpt-s{s}-b{b}-h{h}-a{a}" / "21_validate_0076.ir")))
    by_layer = {row.layer: row for row in report.layers()}
    sbh, as2b, sb = s * b * h, a * s * s * b, s * b
    for i, mode in enumerate(("none", "selective", "full")):
        figure = by_layer[str(i)].kept_bytes
        assert figure == sum(gpt_layer_terms(mode, s, b, h, a).values())
        # the differences from the paper, term by term: dropout masks at 2 bytes instead of 1
        # (attention mask a*s*s*b, two hidden masks s*b*h) and LayerNorm's fp32 statistics
        differences = {"none": as2b + 2 * sbh + 16 * sb, "selective": 2 * sbh + 16 * sb, "full": 0}[mode]
        assert figure == korthikanti(mode, s, b, h, a) + differences
        assert abs(figure - korthikanti(mode, s, b, h, a)) / korthikanti(mode, s, b, h, a) < 0.12
    # selective recompute saves the softmax output, the dropout mask and the dropout output
    assert by_layer["1"].recompute_saved_bytes == 6 * as2b


def test_gpt_kept_tensors_are_the_ones_backward_reads():
    ir = read_ir(str(GPT / "gpt-s16-b2-h64-a4" / "21_validate_0076.ir"))
    report = account(ir)
    layer0 = sorted((ir[t.tensor.node]["op"], t.tensor.index, t.nbytes) for t in report.kept if t.layer == "0")
    assert layer0 == sorted(
        [
            ("LayerNorm", 0, 4096),
            ("LayerNorm", 1, 128),
            ("LayerNorm", 2, 128),  # ln1: y, mean, rstd
            ("LayerNorm", 0, 4096),
            ("LayerNorm", 1, 128),
            ("LayerNorm", 2, 128),  # ln2
            ("Transpose", None, 4096),
            ("Transpose", None, 4096),
            ("Transpose", None, 4096),  # Q, K, V
            ("Transpose", None, 4096),  # merged heads
            ("Softmax", None, 4096),
            ("Dropout", 0, 4096),
            ("Dropout", 1, 4096),  # probs, dropped, mask
            ("Dropout", 1, 4096),
            ("Dropout", 1, 4096),  # hidden dropout masks
            ("Add", None, 4096),
            ("Add", None, 4096),  # residual, layer output
            ("Add", None, 16384),
            ("GeLU", None, 16384),  # fc1 (bias add), GeLU
        ]
    )


def test_bytes_at_stake_walks_no_layers_and_the_shared_report_gives_the_same_ones():
    # the recompute rules ask the account for bytes only: the layer of each kept tensor (a walk
    # to the nearest weights per tensor) is looked up when first read, not for every tensor
    from irlint.accounts.memory import cached_account
    from irlint.model.layers import Places

    path = str(GPT / "gpt-s16-b2-h64-a4" / "21_validate_0076.ir")
    ir = read_ir(path)
    ln = next(k for k in ir.nodes_by_op("LayerNorm"))
    assert bytes_at_stake(ir, ln) > 0
    assert not Places.of(ir)._near
    shared, own = cached_account(ir), account(read_ir(path))
    rows = lambda r: [(t.tensor, t.nbytes, t.layer) for t in (*r.kept, *r.saved, *r.weight_copies)]  # noqa: E731
    assert rows(shared) == rows(own)
    assert {t.layer for t in shared.kept} >= {"0", "1"}
    del ir
    assert [(t.tensor, t.layer) for t in shared.kept] == [(t.tensor, t.layer) for t in own.kept]  # outlives its file


# one of each shape: a plain validate, a pipeline stage (lazy_inline halves and their Partial), a CPU
# kernel graph (expanded grad ops), a function compiled with ms.grad (subgraph calls)
PER_NODE = [
    GPT / "gpt-s16-b2-h64-a4" / "21_validate_0076.ir",
    TESTS / "fixtures" / "recompute" / "par-rc-pp2_dp2_mp2_micro4_select" / "rank_0" / "21_validate_0091.ir",
    CORPUS / "llama-recompute-modes" / "graph_build_0_0094.ir",
    CORPUS / "s7_ffn_3d_function_grad" / "31_validate_0032.ir",
]


@pytest.mark.parametrize("path", PER_NODE, ids=lambda p: p.parent.name)
def test_a_node_is_priced_from_its_own_readers_as_the_whole_account_prices_it(path):
    # the recompute rules price a few nodes of a file: each from the backward readers reachable from
    # it, the same entries (bytes, readers in order) as the whole-file account, which is never built
    from irlint.accounts.memory import kept_of
    from irlint.accounts.weights import is_weight_derived, weight_derived

    whole = read_ir(str(path))
    by_node: dict[int, list] = {}
    for t in account(whole).kept:
        by_node.setdefault(t.tensor.node, []).append((t.tensor, t.nbytes, t.readers))
    weights = weight_derived(whole)
    ir = read_ir(str(path))
    for k in ir.nodes:
        assert [(t.tensor, t.nbytes, t.readers) for t in kept_of(ir, k)] == by_node.get(k, [])
        assert is_weight_derived(ir, k) == (k in weights)
    assert "_memory_report" not in ir.__dict__ and "_weight_derived" not in ir.__dict__


RECURSIVE = """# IR entry: @1_main_1
# Params:
%para1_w: <Ref[Tensor[Float32]], (4, 4), ref_key=w, is_parameter>  :  has_default
%para2_x: <Tensor[Float32], (4, 4)> : [4, 4]

subgraph @2_loop_2(%para3_a, %para4_b) {
  %0(CNode_1) = PrimFunc_Cast(%para3_a, I64(42))
      : (<Tensor[Float32], (4, 4)>, <Int64, NoShape>) -> (<Tensor[Float16], (4, 4)>)
      # Fullname with scope: (Default/Cast-op0)
  %1(CNode_2) = call @2_loop_2(%0, %para4_b)
      : (<Tensor[Float16], (4, 4)>, <Tensor[Float32], (4, 4)>) -> (<Tensor[Float16], (4, 4)>)
      # Fullname with scope: (Default/2_loop_2-op0)
  %2(CNode_3) = PrimFunc_Mul(%1, %para4_b)
      : (<Tensor[Float16], (4, 4)>, <Tensor[Float32], (4, 4)>) -> (<Tensor[Float16], (4, 4)>)
      # Fullname with scope: (Default/Mul-op0)
  Return(%2)
      : (<Tensor[Float16], (4, 4)>)
      # Fullname with scope: (Default/Return-op0)
}

subgraph @1_main_1() {
  %0(CNode_4) = call @2_loop_2(%para1_w, %para2_x)
      : (<Tensor[Float32], (4, 4)>, <Tensor[Float32], (4, 4)>) -> (<Tensor[Float16], (4, 4)>)
      # Fullname with scope: (Default/2_loop_2-op1)
  Return(%0)
      : (<Tensor[Float16], (4, 4)>)
      # Fullname with scope: (Default/Return-op1)
}
"""


def test_a_weight_copy_on_a_cycle_through_calls_is_the_whole_walks_answer(ir_from_text):
    # the recursive call's parameter takes the weight and the Cast of itself: on such a cycle the
    # whole-file walk's order decides, so the per-node answer falls back to it
    from irlint.accounts.weights import is_weight_derived, weight_derived

    weights = weight_derived(ir_from_text(RECURSIVE))
    fell_back = set()
    for k in ir_from_text(RECURSIVE).nodes:
        ir = ir_from_text(RECURSIVE)
        assert is_weight_derived(ir, k) == (k in weights)
        if "_weight_derived" in ir.__dict__:
            fell_back.add(ir[k].get("id"))
    assert {"%para3_a", "%0"} <= fell_back and "%para1_w" not in fell_back


def test_layer_of_scope():
    assert layer_of("Default/network-CausalLM/model-Model/layers-CellList/12-DecoderLayer/Add-op1") == "12"
    assert layer_of("recompute_Default/model-Model/layers-CellList/3-DecoderLayer/x") == "3"
    assert layer_of("Default/network-CausalLM/lm_head-Linear/MatMul-op0") == "outside"


def test_bytes_at_stake_is_the_kept_output_of_a_node():
    ir = read_ir(str(CORPUS / "s2_ffn_3d_reshape_blocks" / "21_validate_0076.ir"))
    silu = next(k for k in ir.nodes_by_op("SiLU"))
    square = next(k for k in ir.nodes_by_op("Square"))
    assert bytes_at_stake(ir, silu) == FFN_SILU
    assert bytes_at_stake(ir, square) == 0  # the loss square's output is not read by backward


# --- the command ------------------------------------------------------------------------------


def run(*args):
    return CliRunner().invoke(main, ["memory", *map(str, args)], catch_exceptions=False)


def test_memory_json_contract():
    result = run(CORPUS / "llama-recompute-modes", "--format", "json", "--top", "3")
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert data["version"] == 1
    (entry,) = data["files"]
    assert entry["file"].endswith("21_validate_0076.ir") and entry["stage"] == "validate"
    assert entry["rank"] is None
    assert entry["total_kept_bytes"] == sum(r["kept_bytes"] for r in entry["layers"])
    assert [r["layer"] for r in entry["layers"]] == ["0", "1", "2", "3", "outside"]
    assert set(entry["layers"][0]) >= {"layer", "kept_bytes", "tensors", "recompute_saved_bytes"}
    assert len(entry["top"]) == 3
    first = entry["top"][0]
    assert set(first) >= {"node", "op", "shape", "dtype", "bytes", "scope", "read_by"}
    assert first["bytes"] == first["shape"][0] * first["shape"][1] * first["shape"][2] * F32


@pytest.mark.parametrize(
    "path",
    [
        CORPUS / "llama-recompute-modes",
        GPT / "gpt-s8-b4-h32-a2",
        TESTS / "fixtures" / "synthetic" / "ffn_wrong_strategy_ranks_synthetic",
    ],
)
def test_memory_json_matches_its_schema(path):
    import jsonschema

    schema = json.loads((TESTS / "fixtures" / "schemas" / "irlint-memory-1.json").read_text(encoding="utf-8"))
    jsonschema.validate(json.loads(run(path, "--format", "json").output), schema)


def test_memory_ranks_of_two_graphs_get_a_table_each():
    result = run(TESTS / "fixtures" / "synthetic" / "ffn_wrong_strategy_ranks_synthetic", "--format", "json")
    assert [f["rank"] for f in json.loads(result.output)["files"]] == [0, 1]
    text = run(TESTS / "fixtures" / "synthetic" / "ffn_wrong_strategy_ranks_synthetic").output
    assert "per layer (rank 0)" in text and "per layer (rank 1)" in text and "kept bytes (rank" not in text


def test_memory_text_snapshot(snapshot, monkeypatch):
    monkeypatch.chdir(CORPUS)  # paths are shown relative to the working directory
    result = run("llama-recompute-modes", "--top", "5")
    assert result.exit_code == 0
    assert result.output == snapshot


def test_memory_help_says_what_is_counted():
    text = run("--help").output
    assert "Not counted" in text and "parameters" in text and "recompute saved" in text


def test_memory_without_final_stage_fails_cleanly(tmp_path):
    (tmp_path / "12_pipeline_split_0013.ir").write_bytes(
        (CORPUS / "s2_ffn_3d_reshape_blocks" / "12_pipeline_split_0013.ir").read_bytes()
    )
    result = CliRunner().invoke(main, ["memory", str(tmp_path)])
    assert result.exit_code == 2 and "no final-stage graph dump" in result.output
    assert run(tmp_path / "missing").exit_code == 2


def test_memory_of_a_file_that_is_no_dump_reports_it(tmp_path):
    (tmp_path / "21_validate_0076.ir").write_text("hello\n", encoding="utf-8")
    result = run(tmp_path / "21_validate_0076.ir")
    assert result.exit_code == 2 and "not a graph IR dump" in result.output and "Activations" not in result.output


def test_memory_of_a_graph_without_backward_says_nothing_is_kept():
    result = run(TESTS / "fixtures" / "versions" / "2.1_validate.ir")
    assert result.exit_code == 0 and "nothing is kept for backward" in result.output


def test_formula_table_script_runs():
    sys.path.insert(0, str(TESTS.parent / "bench"))
    try:
        import memory_formula
    finally:
        sys.path.pop(0)
    rows = memory_formula.rows()
    assert len(rows) == 9 and all(r["irlint"] == r["explained"] for r in rows)


@pytest.mark.parametrize("folder", sorted(p.name for p in GPT.iterdir() if p.is_dir()))
def test_gpt_fixture_manifests(folder):
    manifest = json.loads((GPT / folder / "MANIFEST.json").read_text(encoding="utf-8"))
    report = account(read_ir(str(GPT / folder / "21_validate_0076.ir")))
    rows = {row.layer: row for row in report.layers()}
    assert {k: rows[k].kept_bytes for k in manifest["expected_kept_bytes"]} == manifest["expected_kept_bytes"]
    assert {k: rows[k].recompute_saved_bytes for k in manifest["expected_recompute_saved_bytes"]} == manifest[
        "expected_recompute_saved_bytes"
    ]


# --- bytes at stake on the recompute findings ----------------------------------------------------


def test_recompute_findings_state_bytes_per_layer_and_across_layers(lint_paths):
    report = lint_paths([CORPUS / "llama-recompute-modes" / "21_validate_0076.ir"])
    found = [o for f in report.findings for o in f.occurrences]  # each occurrence of a grouped finding
    stakes = {
        (f.code, f.node): (f.bytes_at_stake, extra_data(f)["bytes_at_stake_total"])
        for f in found
        if f.code in ("RC001", "RC002")
    }
    # the gate Mul (s x ff fp16) is blocked in layers 0 and 2; the one-op SiLU cell only in layer 2
    # (one problem, one finding: the blocked Mul is RC002's alone)
    assert stakes == {
        ("RC002", "%60"): (FF_OUT, 2 * FF_OUT),
        ("RC002", "%189"): (FF_OUT, 2 * FF_OUT),
        ("RC001", "%184"): (FF_OUT, FF_OUT),
    }
    mul = next(f for f in found if f.node == "%60" and f.code == "RC002")
    assert "5.50 KiB at stake in this layer, 11.0 KiB across the 2 layers" in mul.message
    assert mul.to_dict()["bytes_at_stake"] == FF_OUT
    # one finding for both layers: the bytes summed, each occurrence in JSON
    (group,) = [f for f in report.findings if f.code == "RC002"]
    data = group.to_dict()
    assert data["bytes_at_stake"] == 2 * FF_OUT and data["layers"] == ["0", "2"]
    assert [(o["node"], o["layer"], o["bytes_at_stake"]) for o in data["occurrences"]] == [
        ("%60", "0", FF_OUT),
        ("%189", "2", FF_OUT),
    ]
    assert group.headline.startswith("Mul in feed_forward, layers 0, 2: ") and "11.0 KiB kept" in group.headline


def test_recomputed_downcast_costs_its_input_minus_its_output(lint_paths):
    report = lint_paths([CORPUS / "s4_cast_rmsnorm" / "21_validate_0076.ir"])
    (downcast,) = [f for f in report.findings if f.code == "RC003"]
    # the fp32 x*rsqrt (16 x 32 x 4) is kept for the copy instead of the fp16 cast (16 x 32 x 2)
    assert downcast.bytes_at_stake == 16 * 32 * F32 - 16 * 32 * F16


def test_text_report_puts_the_costliest_finding_first():
    from irlint.findings import Finding, Report
    from irlint.reporters import RenderContext, render

    def finding(line, stake):
        return Finding(
            code="RC001",
            rule="recompute-not-applied",
            severity="warning",
            file="a.ir",
            line=line,
            graph="@g",
            node=f"%{line}",
            op="Mul",
            scope="s",
            message=f"at line {line}",
            bytes_at_stake=stake,
        )

    text = render(
        Report(findings=[finding(10, 64), finding(20, None), finding(30, 4096)], files=["a.ir"]),
        "text",
        RenderContext(width=100),
    )
    assert text.index("at line 30") < text.index("at line 10") < text.index("at line 20")


# --- outsized-kept-activation (AM001) ----------------------------------------------------------


def test_outsized_rule_flags_the_fp32_softmax_of_each_layer_not_recomputed():
    from irlint.rules.outsized_activation import OutsizedKeptActivation

    ir = read_ir(str(CORPUS / "llama-recompute-modes" / "21_validate_0076.ir"))
    found = list(OutsizedKeptActivation().check(ir))
    # layers 0-2 keep their fp32 softmax (1, 4, 16, 16); layer 3 is fully recomputed
    assert [(f.op, extra_data(f)["layer"], f.bytes_at_stake) for f in found] == [
        ("Softmax", str(i), HEADS * S * S * F32) for i in range(3)
    ]
    assert "flash attention" in found[0].hint


def test_outsized_rule_share_of_layer():
    from irlint.rules.outsized_activation import OutsizedKeptActivation

    ir = read_ir(str(GPT / "gpt-s16-b2-h64-a4" / "21_validate_0076.ir"))
    assert list(OutsizedKeptActivation().check(ir)) == []  # fp16 throughout, no tensor above 25%
    rule = OutsizedKeptActivation()
    rule.max_layer_share = 0.15
    # GeLU input and output (8 s b h each) are 19% of layer 0 and 22% of layer 1; the fully
    # recomputed layer 2 keeps one tensor and is never judged
    assert sorted((f.op, extra_data(f)["layer"]) for f in rule.check(ir)) == [
        ("Add", "0"),
        ("Add", "1"),
        ("GeLU", "0"),
        ("GeLU", "1"),
    ]


def test_outsized_rule_is_off_by_default(lint_paths):
    report = lint_paths([CORPUS / "llama-recompute-modes" / "21_validate_0076.ir"])
    assert not [f for f in report.findings if f.code == "AM001"]
    report = lint_paths([CORPUS / "llama-recompute-modes" / "21_validate_0076.ir"], extend_select=["AM001"])
    assert len([o for f in report.findings for o in f.occurrences if f.code == "AM001"]) == 3


def test_a_kept_tensor_of_unknown_size_is_named_not_guessed(ir_from_text):
    from irlint.rules.outsized_activation import SOFTMAX_FP32_KEPT

    ir = ir_from_text(
        SOFTMAX_FP32_KEPT.replace(
            "-> (<Tensor[Float32], (1, 4, 16, 16)>)\n      # Fullname with scope: (Default",
            "-> (<Tensor[Float32], (-1, 4, 16, 16)>)\n      # Fullname with scope: (Default",
            1,
        )
    )
    report = account(ir)
    assert [ir[t.tensor.node]["op"] for t in report.unsized] == ["Softmax"]
    assert report.total_kept_bytes == 0
    result = run(ir.path)
    # the file is named as discovery displays it (relative or absolute, by where the tests run)
    assert re.search(r"21_validate_0076\.ir:\d+\b.*kept tensor of unknown size", result.output)
    assert json.loads(run(ir.path, "--format", "json").output)["files"][0]["unsized"][0]["op"] == "Softmax"


def test_memory_reads_compressed_dumps_and_stdin(tmp_path):
    import gzip

    src = CORPUS / "s2_ffn_3d_reshape_blocks" / "21_validate_0076.ir"
    plain = json.loads(run(src, "--format", "json").output)["files"][0]
    packed = tmp_path / "21_validate_0076.ir.gz"
    packed.write_bytes(gzip.compress(src.read_bytes()))
    from_gz = json.loads(run(packed, "--format", "json").output)["files"][0]
    piped = CliRunner().invoke(main, ["memory", "-", "--format", "json"], input=src.read_bytes())
    assert piped.exit_code == 0, piped.output
    from_stdin = json.loads(piped.output)["files"][0]
    assert plain["total_kept_bytes"] > 0
    for entry in (from_gz, from_stdin):
        assert (entry["total_kept_bytes"], entry["layers"], entry["top"]) == (
            plain["total_kept_bytes"],
            plain["layers"],
            plain["top"],
        )


def test_memory_of_several_cases_is_one_table_per_case():
    # issue 21: `irlint memory corpus/` printed one table with eight columns labelled `kept bytes (rank 0)`
    cases = ["par-mismatch-ffn_col_col", "par-mindformers-llama_dp2_mp4", "llama-cast"]
    result = run(*(CORPUS / c for c in cases), "--top", "1")
    assert result.exit_code == 0, result.output
    text = result.output
    assert text.count("Activations kept for backward, per layer") == 3
    assert [
        line.split("/")[-2 if "rank_*" in line else -1] for line in text.splitlines() if line.startswith("== ")
    ] == sorted(cases)
    tables = text.split("Activations kept for backward, per layer")[1:]
    heads = [t.split("\n")[2] for t in tables]  # the column header row of each table
    assert all(h.count("kept bytes") == 1 for h in heads)  # one column each, never one per rank
    assert "ranks 0–7: same graph (8 files" in text  # the 8 ranks of one graph share a table (issue 42)


# --- the kept bytes the findings are about (issue 28) ------------------------------------------

PIPELINE = TESTS / "fixtures" / "recompute" / "par-rc-pp2_dp2_mp2_micro4_select"


@pytest.mark.parametrize("path", [CORPUS / "llama-recompute-modes", PIPELINE, CORPUS / "s3_ffn_3d_reshape_fixed"])
def test_at_stake_column_is_what_a_default_lint_of_the_same_files_prices(path):
    """Per file, layer and rule: the sum of bytes_at_stake over the lint's occurrences (--no-group)."""
    files = json.loads(run(path, "--format", "json").output)["files"]
    lint = CliRunner().invoke(main, [str(path), "--format", "json", "--no-group", "-n"])
    expected: dict[tuple, int] = {}
    for f in json.loads(lint.stdout)["findings"]:
        if f.get("bytes_at_stake"):
            key = (Path(f["file"]).name, f["layer"] or layer_of(f["scope"]), f["code"])
            expected[key] = expected.get(key, 0) + f["bytes_at_stake"]
    shown = {
        (Path(e["file"]).name, row["layer"], code): n
        for e in files
        for row in e["layers"]
        for code, n in row["at_stake_bytes"].items()
    }
    assert shown == expected
    for e in files:  # the file's totals are its rows'
        totals: dict[str, int] = {}
        for row in e["layers"]:
            for code, n in row["at_stake_bytes"].items():
                totals[code] = totals.get(code, 0) + n
        assert e["at_stake_bytes"] == totals
    # RC002 on layers 0 and 2 of the modes case, none on the fixed FFN
    assert bool(expected) == (path.name != "s3_ffn_3d_reshape_fixed")


def test_at_stake_columns_in_text_and_html():
    data = json.loads(run(CORPUS / "llama-recompute-modes", "--format", "json").output)["files"][0]
    codes = sorted(data["at_stake_bytes"])
    assert codes == ["RC001", "RC002"]
    text = run(CORPUS / "llama-recompute-modes").output
    assert all(f"{code} at stake" in text for code in codes) and "At stake:" in text
    html = run(CORPUS / "llama-recompute-modes", "--format", "html").output
    assert all(f'<th class="num at-stake">{code} at stake</th>' in html for code in codes)
    # the card: the largest device's bytes named by findings
    assert 'class="card at-stake"' in html
    quiet = run(CORPUS / "s3_ffn_3d_reshape_fixed").output
    assert "at stake" not in quiet and "At stake" not in quiet


def test_memory_html_has_the_pipeline_in_flight_and_peak_figures_the_text_shows():
    import re as _re

    from irlint.units import human_bytes

    files = json.loads(run(PIPELINE, "--format", "json").output)["files"]
    html = run(PIPELINE, "--format", "html").output
    text = run(PIPELINE).output
    rows = _re.findall(r'<tr class="(in-flight|peak)"><td>[^<]*</td><td class="num">([^<]*)</td>', html)
    expected = [
        (kind, value)
        for e in files
        for kind, value in (
            ("in-flight", f"× {e['micro_batches_in_flight']} of {e['micro_batches']}"),
            ("peak", human_bytes(e["peak_kept_bytes"])),
        )
    ]
    assert rows == expected and any(e["micro_batches_in_flight"] > 1 for e in files)
    for _, value in expected:
        assert value in text


def test_a_pipeline_rank_read_alone_keeps_the_stage_mindspore_gave_it():
    # the stage is the ops' own `stage` primal attribute, not the rank's place among the files given
    case = TESTS / "fixtures" / "recompute" / "mf-pp2_dp2_mp2_irlint_fix_round0"
    for folders, stages in (([case / "rank_4"], [1]), ([case], [0, 1])):
        result = CliRunner().invoke(main, ["memory", *map(str, folders), "--format", "json"])
        assert [f["pipeline_stage"] for f in json.loads(result.stdout)["files"]] == stages
