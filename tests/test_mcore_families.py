"""What the graph means on MindFormers' mcore families, compiled from MindFormers' own shipped pretrain
configs (``fixtures/corpus-gen/par_mcore_shipped_gen.py``): TeleChat3 with pipeline interleave and
select recompute (``recompute/mf-telechat3-pp2_irlint_fix_round0`` / ``_round1``) and DeepSeek-V3 MLA
with pipeline interleave and the shipped full recompute (``recompute/mf-deepseek3-pp2_full_recompute``).
The nodes sampled here were read by hand in the dumps (the MANIFESTs say what each shows)."""

from __future__ import annotations

import gzip
import json
import re
import shutil
from dataclasses import dataclass
from functools import cache

import pytest
from click.testing import CliRunner
from conftest import TESTS
from irlint.rules.recompute.evidence import RecomputeFacts
from irlint.rules.recompute.feed_forward import find_feed_forwards

import irlint.cli
from irlint.accounts import comm, memory
from irlint.model.layers import OUTSIDE, Places, layer_of_any, linear_name, model_path, weight_name
from irlint.runner.discover import discover
from irlint.runner.engine import read_dump

RECOMPUTE = TESTS / "fixtures" / "recompute"
TC0 = RECOMPUTE / "mf-telechat3-pp2_irlint_fix_round0"
TC1 = RECOMPUTE / "mf-telechat3-pp2_irlint_fix_round1"
DS = RECOMPUTE / "mf-deepseek3-pp2_full_recompute"
STAGE0 = "rank_0/21_validate_0095.ir.gz"
# rank 0's layer 0: forward half ▸1499, backward half ◂1499
FWD0 = "@3170_3165_3126_3071_1563_▸1499_1455_CR_307_CR_mindformers_parallel_core_training_graph_base_models_gpt_gpt_model_GPTModel_construct_13324"
BWD0 = "@3171_3166_3127_3072_1564_◂1499_1455_CR_307_CR_mindformers_parallel_core_training_graph_base_models_gpt_gpt_model_GPTModel_construct_13322"
LLAMA_WORDS = re.compile(r"\bw[123]\b|w1\+w3")


def _ir(path):
    (f,) = discover([str(path)])[0]  # reads a .ir.gz as the commands do
    return read_dump(f)


def _node(ir, graph: str, nid: str) -> int:
    return next(k for k, d in ir.nodes.items() if d.get("graph") == graph and d.get("id") == nid)


def _lint(*args) -> dict:
    result = CliRunner().invoke(irlint.cli.main, [*map(str, args), "--format", "json", "-n"])
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def tc0():
    return _ir(TC0 / STAGE0)


# --- the model's answers on nodes read by hand ------------------------------------------------
@pytest.mark.parametrize(
    "nid,op,path,linear",
    [
        # the Linear's MatMul: Load(%para99_▸CR_decoder.layers.0.mlp.linear_fc2.weight), printed Default/MatMul-op3
        ("%111", "MatMul", "decoder.layers.0.mlp.linear_fc2", "linear_fc2"),
        # RowParallelLinear's input Cast (layers.py:641) and the ReduceScatter after the MatMul: its forward links
        ("%107", "Cast", "decoder.layers.0.mlp.linear_fc2", None),
        ("%112", "ReduceScatter", "decoder.layers.0.mlp.linear_fc2", None),
        # the SwiGlu's Mul: printed Default/Mul-op2, its gradient op's scope names activation_func
        ("%105", "Mul", "decoder.layers.0.mlp.activation_func", None),
        # the MLP's own Reshape folded with linear_fc2's: no weight, no link, no printed cell: unknown,
        # not the neighbour's
        ("%106", "Reshape", "decoder.layers.0", None),
        # linear_fc1's MatMul (printed with its cells)
        ("%97", "MatMul", "decoder.layers.0.mlp.linear_fc1", "linear_fc1"),
    ],
)
def test_telechat3_forward_nodes_half_layer_cell_and_linear(tc0, nid, op, path, linear):
    k = _node(tc0, FWD0, nid)
    assert tc0[k]["op"] == op
    assert not tc0.is_backward(k) and not tc0.is_recompute_copy(k)
    assert model_path(tc0, k) == ("0", path)
    if linear is not None:
        assert linear_name(tc0, k) == linear


def test_telechat3_weight_reached_through_the_outer_graphs_cast(tc0):
    param = _node(tc0, FWD0, "%para99_▸CR_decoder.layers.0.mlp.linear_fc2.weight")
    # the outer graph passes %0 = Cast(%para9_decoder.layers.0.mlp.linear_fc2.weight)
    assert [tc0[a]["op"] for a in tc0.inputs_of_kind(param, "call_in")] == ["Cast"]
    assert weight_name(tc0, param) == "decoder.layers.0.mlp.linear_fc2.weight"


def test_telechat3_backward_reader_is_backward_and_belongs_to_linear_fc2(tc0):
    reader = _node(tc0, BWD0, "%4")
    assert tc0.is_backward(reader)
    assert tc0.forward_of(reader) == _node(tc0, FWD0, "%111")


def test_telechat3_a_mirror_gradient_is_counted_in_its_weights_layer(tc0):
    # %165 = AllReduce(%164) {grad_mirror_MirrorMicroStepOperator} (line 5702), Gradients/Default/Grad_…: its
    # forward_unique_id names a mirror op the dump does not hold; mirror_user_id names the weight
    (k,) = [k for k in tc0.nodes_by_op("AllReduce") if tc0[k].get("line") == 5702]
    assert tc0.is_backward(k) and tc0.forward_of(k) is None
    assert layer_of_any(tc0, k) == "0"
    (c,) = [c for c in comm.account(tc0).collectives if c.node == k]
    assert c.layer == "0"


def test_telechat3_feed_forward_linears_are_named_by_the_models_cells(tc0):
    facts = RecomputeFacts.of(tc0)
    ffn = next(f for f in find_feed_forwards(tc0, facts) if f.gate_mul == _node(tc0, FWD0, "%105"))
    assert ffn.names == {"gate": "linear_fc1", "up": "linear_fc1", "down": "linear_fc2"}
    assert ffn.role(_node(tc0, FWD0, "%107")) == "linear_fc2"
    assert Places.of(tc0).place(_node(tc0, FWD0, "%111")).cells_from == "weights"


# --- findings, keys and the fix loop ------------------------------------------------------------
def test_telechat3_findings_speak_the_models_names():
    found = _lint(TC0, "--no-group")["findings"]
    rc002 = [f for f in found if f["code"] == "RC002"]
    assert sorted(f["extra"]["layer"] for f in rc002) == [0, 1, 2, 3]
    for f in found:
        assert f["model_path"].startswith("decoder.layers."), f["model_path"]  # no wrapper cells
        lines = [f["headline"], *(r["note"] for r in f["related"])]
        assert not [ln for ln in lines if LLAMA_WORDS.search(ln)], lines
    for f in rc002:
        assert f["model_path"].endswith(".mlp.activation_func")
        # the cell path gives way first when the whole sentence is over the headline's 160 characters
        assert f["headline"].startswith(("Mul in mlp.activation_func, layer", "Mul, layer")), f["headline"]
        assert "recompute blocked by linear_fc2's" in f["headline"]
        notes = [r["note"] for r in f["related"]]
        assert notes[:4] == [
            "blocking Reshape (linear_fc2), not recomputed",
            "blocking Cast (linear_fc2), not recomputed",
            "MatMul linear_fc1 (gate and up fused)",
            "MatMul linear_fc2",
        ]
        assert f["extra"]["select_recompute"] == ["mlp\\.linear_fc2\\.cast"]


def _dump_weights(folder) -> set[str]:
    names = set()
    for path in folder.glob("rank_*/*.ir.gz"):
        text = gzip.decompress(path.read_bytes()).decode("utf-8", "replace")
        names.update(re.findall(r"%para\d+_((?:decoder|model)\.layers\.\d+\.[\w.]+)", text))
    return names


def _key_names_cells(key: str, weights: set[str]) -> bool:
    """MindFormers' matching: the key split on ``\\.``, each segment but the last fullmatched against
    the cells from the layer down (here: as the dump's parameter names spell them)."""
    cells = key.split("\\.")[:-1]
    for name in weights:
        below = re.sub(r"\A.*?\.layers\.\d+\.", "", name).split(".")[:-1]
        if len(below) >= len(cells) and all(re.fullmatch(s, c) for s, c in zip(cells, below)):
            return True
    return False


def test_every_key_irlint_prints_names_cells_of_the_model():
    lint = _lint(TC0, "--no-group")
    keys = {k for f in lint["findings"] for k in f["extra"].get("select_recompute", [])}
    keys |= set(lint["fix_plan"]["recompute"]["select_recompute"])
    keys |= set(re.findall(r"'((?:[\w]+\\\.)+\w+)'", " ".join(f["hint"] for f in lint["findings"])))
    weights = _dump_weights(TC0)
    assert keys == {"mlp\\.linear_fc2\\.cast"}
    assert all(_key_names_cells(k, weights) for k in keys), keys
    assert lint["fix_plan"]["recompute"]["no_key"] == []


def _kept_per_layer(folder) -> dict:
    result = CliRunner().invoke(irlint.cli.main, ["memory", str(folder), "--format", "json"])
    files = json.loads(result.stdout)["files"]
    return {
        f["file"].split("/")[-2]: ({x["layer"]: x["kept_bytes"] for x in f["layers"]}, f["peak_kept_bytes"])
        for f in files
    }


def test_telechat3_irlint_fix_adds_linear_fc2_cast_and_the_recompile_frees_what_was_priced(tmp_path):
    cfg = tmp_path / "cfg.yaml"
    shutil.copyfile(TC0 / "cfg.yaml", cfg)
    result = CliRunner().invoke(irlint.cli.main, ["fix", str(cfg), str(TC0), "--no-cache"])
    assert result.exit_code == 0, result.stderr
    # the config round 1 was compiled with is exactly what irlint fix writes
    assert cfg.read_bytes() == (TC1 / "cfg.yaml").read_bytes()
    assert "added to select_recompute: 'mlp\\.linear_fc2\\.cast'" in result.stderr
    assert _lint(TC1)["findings"] == []
    found = _lint(TC0, "--no-group")["findings"]
    before, after = _kept_per_layer(TC0), _kept_per_layer(TC1)
    for rank in ("rank_0", "rank_4"):
        mine = [f for f in found if f"/{rank}/" in f["file"] and f["code"] == "RC002"]
        per_layer = {str(f["extra"]["layer"]): f["extra"]["bytes_at_stake_per_micro_batch"] for f in mine}
        (kept0, peak0), (kept1, peak1) = before[rank], after[rank]
        # each layer frees what its finding priced per micro batch (1 KiB), the peak what they priced
        assert {layer: kept0[layer] - kept1[layer] for layer in per_layer} == per_layer
        assert set(per_layer.values()) == {1024}
        assert peak0 - peak1 == sum(f["bytes_at_stake"] for f in mine)


# --- the family matrix ---------------------------------------------------------------------------
# One row per MindFormers family irlint is tried on (issue 39): legacy Llama, Mixtral-style MoE Llama,
# GLM2 and GLM4 (MindFormers trains GLM4 with the legacy ChatGLM2 class), and the mcore Qwen3,
# Qwen3-MoE, DeepSeek-V3, TeleChat3 and TeleChat3-MoE. ``same``: groups of (rank, layer) that are
# the same layer of the same class at the same place of their stage (a stage's last layer hands its
# output to the next stage, the model's last to the final norm), so memory and comm must price
# them alike.
@dataclass(frozen=True)
class Family:
    folder: str
    mcore: bool  # the model names its Linears linear_fc1/linear_fc2...: no Llama w1/w2/w3 printed
    moe: bool
    same: tuple[tuple[tuple[str, str], ...], ...] = ()


FAMILIES = {
    "llama": Family("mf-dp2_mp4_irlint_fix_round0", False, False, ((("rank_0", "0"), ("rank_0", "1")),)),
    "llama-pp2-interleave": Family(
        "mf-pp2_interleave_irlint_fix_round0",
        False,
        False,
        ((("rank_0", "0"), ("rank_0", "4")), (("rank_0", "1"), ("rank_0", "5")), (("rank_4", "2"), ("rank_4", "6"))),
    ),
    "llama-pp2": Family(
        "mf-pp2_dp2_mp2_irlint_fix_round0",
        False,
        False,
        (tuple(("rank_0", str(n)) for n in range(3)), tuple(("rank_4", str(n)) for n in range(4, 8))),
    ),
    "llama-sp": Family("mf-dp2_mp4_sp_comm_recompute", False, False, ((("rank_0", "0"), ("rank_0", "1")),)),
    "mixtral": Family("mf-moe-dp4_mp2_ep2_ffn_recompute", False, True, ((("rank_0", "0"), ("rank_0", "1")),)),
    "glm2": Family("mf-glm2-dp4_mp2_slice_blocked", False, False, ((("rank_0", "0"), ("rank_0", "1")),)),
    "glm4": Family("mf-glm4-pp2_select", False, False, ((("rank_4", "2"), ("rank_4", "3")),)),
    "qwen3": Family("mf-qwen3-dp2_mp4_irlint_fix_round0", True, False, ((("rank_0", "0"), ("rank_0", "1")),)),
    "qwen3-moe": Family("mf-qwen3-moe-dp4_mp2_ep2_experts", True, True, ((("rank_0", "0"), ("rank_0", "1")),)),
    "qwen3-moe-nodrop": Family(
        "mf-qwen3-moe-dp4_mp2_ep2_experts_nodrop", True, True, ((("rank_0", "0"), ("rank_0", "1")),)
    ),
    "qwen3-moe-pp2-full": Family("mf-qwen3-moe-pp2_full_recompute", True, True),
    "deepseek3": Family("mf-deepseek3-dp4_mp2_ep2_select_true_round0", True, True),
    "deepseek3-pp2": Family("mf-deepseek3-pp2_irlint_fix_round0", True, True),
    "telechat3": Family(
        "mf-telechat3-pp2_irlint_fix_round0",
        True,
        False,
        ((("rank_0", "0"), ("rank_0", "2"), ("rank_4", "1"), ("rank_4", "3")),),
    ),
    "telechat3-moe": Family("mf-telechat3-moe-pp2_select_true", True, True),
    "telechat3-moe-full": Family("mf-telechat3-moe-pp2_full_recompute", True, True),
}
# where two layers of a group truly differ, read in the dumps (not a booking of the accounts):
# each is pinned by a test of its own below that checks the difference is exactly that
UNEQUAL = {
    ("llama-sp", "memory"): "a real difference: layer 0's output (the residual Add-op1, %123) is kept because "
    "layer 1's attention_norm input Cast is recomputed (select_comm_recompute) and reads it; layer 1's output "
    "feeds norm_out, whose gathered input (a Concat, outside) backward keeps instead",
    ("qwen3-moe", "comm"): "a real difference: the embedding's Dropout has its own layout, so layer 0 re-lays "
    "out the embedding's output for its residual and its input_layernorm (AllGather and two AlltoAlls each, "
    "printed in layer 0) and the norm's ones have gradients; layer 1 reads layer 0's Add in the layer's layout "
    "(the nodrop compile has neither)",
}


def _family_files(family: Family) -> list:
    return sorted((RECOMPUTE / family.folder).glob("rank_*/*.ir.gz"))


@pytest.fixture(scope="module")
def family_irs():
    cache: dict = {}

    def get(folder: str, rank: str = "rank_0"):
        if (folder, rank) not in cache:
            cache[folder, rank] = _ir(next(p for p in sorted((RECOMPUTE / folder / rank).iterdir()) if ".ir" in p.name))
        return cache[folder, rank]

    return get


def _graph_node(ir, graph_part: str, nid: str) -> int:
    return next(k for k, d in ir.nodes.items() if graph_part in d.get("graph", "") and d.get("id") == nid)


# (family, graph of the node (a part of its name), node, op, half, layer, cell path, Linear role):
# read in the dump (rank 0, the line given); a backward node's layer and cell are those of the
# forward node it belongs to (its forward_unique_id), given as (graph, node) in place of the path
SAMPLES = [
    # Load(%para59_▸CR_model.layers.0.feed_forward.w2.weight) -> %83 Cast -> %84 MatMul, line 1650
    ("llama", "▸", "%84", "MatMul", "forward", "0", "model.layers.0.feed_forward.w2", "w2"),
    # %78 SiLU, Default/SiLU-op0 (line 1567), its Reshape after it printed in w1-Linear
    ("llama", "▸", "%78", "SiLU", "forward", "0", "model.layers.0.feed_forward.w1.activation", None),
    # %30 MatMul (line 4087) forward_node_name MatMul_56024: layer 1's w2 MatMul %155 (line 2999)
    ("llama", "◂", "%30", "MatMul", "backward", "1", ("▸", "%155"), None),
    # feed_forward-MoEV2/ffn-LlamaFeedForward/w2-Linear/BatchMatMul-op0 (line 1998), the experts' w2
    ("mixtral", "▸", "%98", "BatchMatMul", "forward", "0", "model.layers.0.feed_forward.ffn.w2", "w2"),
    # the router's Dense (line 1131) reads model.layers.0.feed_forward.router.dense.weight
    ("mixtral", "▸", "%59", "MatMul", "forward", "0", "model.layers.0.feed_forward.router.dense", "dense"),
    # %165 Mul, Default/Mul-op0 (line 2410): the SwiGLU's Mul, tagged by mlp\.activation_func\.mul
    ("glm2", "▸", "%165", "Mul", "forward", "0", "transformer.encoder.layers.0.mlp.activation_func", None),
    # query_key_value-Linear/MatMul-op0 (line 230)
    (
        "glm2",
        "▸",
        "%10",
        "MatMul",
        "forward",
        "0",
        "transformer.encoder.layers.0.self_attention.query_key_value",
        "query_key_value",
    ),
    # %28 MatMul (line 5349) forward_unique_id of layer 1's dense_4h_to_h MatMul %332 (line 4721)
    ("glm2", "◂", "%28", "MatMul", "backward", "1", ("▸", "%332"), None),
    # %199 AllGather (line 2840) prints layer 0's apply_rotary_emb_classic (one compiled rotary cell) but sits
    # between layer 1's Transpose %197 and layer 1's Reshape %202
    (
        "glm2",
        "▸",
        "%199",
        "AllGather",
        "forward",
        "1",
        "transformer.encoder.layers.1.self_attention.apply_rotary_emb_classic",
        None,
    ),
    # %178 Cast (line 2593, transformer-ChatGLM2Model/Cast-op9: a cell on the way to the layers) of layer
    # 1's input_layernorm output
    ("glm2", "▸", "%178", "Cast", "forward", "1", "transformer.encoder.layers.1", None),
    # %118 Mul (line 2011, Default/Mul-op0, recompute: Bool(1)) -> %119 StridedSlice -> %120 Reshape -> %122
    ("glm4", "▸", "%118", "Mul", "forward", "0", "transformer.encoder.layers.0.mlp.activation_func", None),
    # %119 StridedSlice (line 2014, instance strided_slice, forward_comm_node_unique_id, no trace)
    ("glm4", "▸", "%119", "StridedSlice", "forward", "0", "transformer.encoder.layers.0.mlp.dense_4h_to_h", None),
    ("glm4", "▸", "%122", "MatMul", "forward", "0", "transformer.encoder.layers.0.mlp.dense_4h_to_h", "dense_4h_to_h"),
    # %157 MatMul (line 6366) reads %para122_equiv_89_CNode_7561, the Partial argument of %120
    ("glm4", "◂", "%157", "MatMul", "backward", "0", ("▸", "%122"), None),
    # Default/MatMul-op1 (line 2882), Load(%para..._▸CR_decoder.layers.0.mlp.linear_fc2.weight)
    ("qwen3", "▸", "%125", "MatMul", "forward", "0", "decoder.layers.0.mlp.linear_fc2", "linear_fc2"),
    # the AllReduce after it (Default/AllReduce-op2, line 2888)
    ("qwen3", "▸", "%126", "AllReduce", "forward", "0", "decoder.layers.0.mlp.linear_fc2", None),
    # Default/SiLU-op0 (line 2737); its SiLUGrad's scope names activation_func
    ("qwen3", "▸", "%118", "SiLU", "forward", "0", "decoder.layers.0.mlp.activation_func", None),
    # %20 MatMul (line 6722) prints layer 1's linear_qkv Grad_MatMul scope, yet its forward_unique_id
    # 120361 is %236 (line 5380), the output_layer's MatMul
    ("qwen3", "◂", "%20", "MatMul", "backward", "outside", ("▸", "%236"), None),
    # the embedding's Dropout (line 184, Default/Dropout-op0, no trace): between the embedding's Transpose
    # and its embedding_dropout TupleGetItem, the embedding's, not layer 0's (its weights are the nearest)
    ("qwen3", "▸", "%12", "Dropout", "forward", "outside", "", None),
    # the re-layout into layer 0's hidden Dropout (line 4046, Default/AllGather-op2): from the MLP's
    # output Depend to the Dropout whose TupleGetItem prints 0-TransformerLayer/hidden_states_dropout
    ("qwen3-moe", "▸", "%235", "AllGather", "forward", "0", "decoder.layers.0", None),
    # the MoE dispatch's Concat (line 2789, recompute_Default/Concat-op0) of layer 0's Transpose output
    ("qwen3-moe", "▸", "%144", "Concat", "forward", "0", "decoder.layers.0", None),
    # experts-FFNGroupedGEMM/GroupedMatmul-op0 (line 3564)
    ("qwen3-moe", "▸", "%197", "GroupedMatmul", "forward", "0", "decoder.layers.0.mlp.experts", None),
    # %134 (line 10987) prints 0-TransformerLayer/mlp-MoELayer/experts-FFNGroupedGEMM/Grad_GroupedMatmul, yet
    # its forward_unique_id is layer 1's %402 GroupedMatmul (line 7053, recompute_…/1-TransformerLayer/…)
    ("qwen3-moe", "◂", "%134", "GroupedMatmul", "backward", "1", ("▸", "%402"), None),
    # %185 (line 14738) prints 0-TransformerLayer (the compiled cell) but is the gradient of layer 1's
    # %366 GroupedMatmul (line 9280, 1-TransformerLayer): forward_unique_id
    ("qwen3-moe-pp2-full", "◂", "%185", "GroupedMatmul", "backward", "1", ("▸", "%366"), None),
    # Default/MatMul-op1 (line 3497) reads decoder.layers.0.mlp.linear_fc2.weight (layer 0 dense)
    ("deepseek3", "▸", "%139", "MatMul", "forward", "0", "decoder.layers.0.mlp.linear_fc2", "linear_fc2"),
    ("deepseek3", "▸", "%300", "GroupedMatmul", "forward", "1", "decoder.layers.1.mlp.experts", None),
    # Gradients/Default/Grad_MatMul/MatMul-op3 (line 10189) of layer 1's shared expert linear_fc2 (line 7966)
    ("deepseek3", "◂", "%44", "MatMul", "backward", "1", ("▸", "%354"), None),
    # Default/MatMul-op1 (line 4002): Load(%para130_▸CR_decoder.layers.0.mlp.linear_fc2.weight)
    ("telechat3-moe", "▸", "%141", "MatMul", "forward", "0", "decoder.layers.0.mlp.linear_fc2", "linear_fc2"),
    # FusedSwiGlu's Swiglu (line 3941, Default/Swiglu-op0, recompute: Bool(1) set by the model code)
    ("telechat3-moe", "▸", "%137", "Swiglu", "forward", "0", "decoder.layers.0.mlp.activation_func", None),
    ("telechat3-moe", "▸", "%317", "GroupedMatmul", "forward", "1", "decoder.layers.1.mlp.experts", None),
    # %6 MatMul (line 10194) forward_unique_id 356468: %371 (line 9269), the shared expert's linear_fc2
    ("telechat3-moe", "◂", "%6", "MatMul", "backward", "1", ("▸", "%371"), None),
    # the embedding's output Cast (line 237, embedding-LanguageModelEmbedding/Cast-op0): nearer to layer
    # 0's weights than to the embedding table, but the embedding's
    ("telechat3-moe-full", "▸", "%13", "Cast", "forward", "outside", "embedding", None),
    # the pipeline's micro batch slice (micro_inputs-CellList/0-_MicroBatch/StridedSlice-op1): no layer
    ("telechat3-moe-full", "_TrainGradAccuStepCell_", "%23", "StridedSlice", "forward", "outside", None, None),
]


@pytest.mark.parametrize("name,graph,nid,op,half,layer,path,role", SAMPLES)
def test_family_matrix_the_models_answers_on_nodes_read_by_hand(
    family_irs, name, graph, nid, op, half, layer, path, role
):
    ir = family_irs(FAMILIES[name].folder)
    k = _graph_node(ir, graph, nid)
    assert ir[k]["op"] == op
    assert ir.is_backward(k) is (half == "backward")
    if half == "backward":
        forward = _graph_node(ir, *path)
        assert ir.forward_of(k) == forward
        k = forward
    assert model_path(ir, k)[0] == layer
    if isinstance(path, str):
        assert model_path(ir, k) == (layer, path)
    if role is not None:
        assert linear_name(ir, k) == role


@cache
def _family_lint_of(folder: str) -> dict:
    return _lint(RECOMPUTE / folder, "--no-group")


def _family_lint(family: Family) -> dict:
    return _family_lint_of(family.folder)  # read only by the tests


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_family_matrix_headlines_and_model_paths_speak_the_models_names(name):
    family = FAMILIES[name]
    lint = _family_lint(family)
    layers = _layer_lists(RECOMPUTE / family.folder)
    for f in lint["findings"]:
        path = f["model_path"]
        # the model's own path: a layer's from its parameter names' prefix, no wrapper cell before it
        assert path.split(".")[0] not in ("network", "_backbone", "Default"), path
        if f["extra"].get("layer") is not None:
            assert any(path.startswith(f"{p}.{f['extra']['layer']}") for p in layers), (path, layers)
        if family.mcore:
            lines = [f["headline"], *(r["note"] for r in f["related"])]
            assert not [ln for ln in lines if LLAMA_WORDS.search(ln)], lines


def _layer_lists(folder) -> set[str]:
    """The parameter names' paths to the layer lists (``model.layers``, ``transformer.encoder.layers``)."""
    found = set()
    for path in folder.glob("rank_*/*.ir.gz"):
        text = gzip.decompress(path.read_bytes()).decode("utf-8", "replace")
        found.update(re.findall(r"%para\d+_[▸◂]?(?:CR_)?((?:\w+\.)*layers)\.\d+\.", text))
    return {p for p in found if not p.startswith(("accu_grads.", "moments.", "adam_", "accum."))}


def _dump_cells(folder) -> set[str]:
    """The cell paths below a layer the dump shows: its parameter names and its printed scopes."""
    cells = set()
    for path in folder.glob("rank_*/*.ir.gz"):
        text = gzip.decompress(path.read_bytes()).decode("utf-8", "replace")
        for name in re.findall(r"%para\d+_[▸◂]?(?:CR_)?((?:\w+\.)*layers\.\d+\.[\w.]+)", text):
            cells.add(re.sub(r"\A.*?\.layers\.\d+\.", "", name).rsplit(".", 1)[0])
        for scope in re.findall(r"/\d+-[A-Za-z]\w*/((?:\w+-\w+/)+)", text):
            cells.add(".".join(p.split("-", 1)[0] for p in scope.strip("/").split("/")))
    return cells


def _key_names_cells_of(key: str, cells: set[str]) -> bool:
    parts = key.split("\\.")[:-1]
    return any(
        len(c.split(".")) >= len(parts) and all(re.fullmatch(p, s) for p, s in zip(parts, c.split("."))) for c in cells
    )


def _key_tags_an_op(key: str, ir) -> bool:
    """A forward op of the cell the key names (the model's cell path, from the layer down) that its
    last part names: the op's instance name, or its primitive where the dump prints none or the
    parallel pass renamed it (``redistribution_op_…``), as ``reshape`` names a Reshape."""
    *cells, attr = key.split("\\.")
    for k, d in ir.nodes.items():
        if d.get("kind") != "cnode" or ir.is_backward(k) or ir.is_recompute_copy(k):
            continue
        if not (re.fullmatch(attr, str(d.get("instance") or "")) or re.fullmatch(attr, d["op"].lower())):
            continue
        layer, path = model_path(ir, k)
        below = path.split(f".{layer}.", 1)[1].split(".") if f".{layer}." in path else []
        if len(below) == len(cells) and all(re.fullmatch(p, c) for p, c in zip(cells, below)):
            return True
    return False


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_family_matrix_every_key_irlint_prints_names_cells_and_tags_an_op(name, family_irs):
    family = FAMILIES[name]
    lint = _family_lint(family)
    keys = {k for f in lint["findings"] for k in f["extra"].get("select_recompute", [])}
    keys |= set(lint["fix_plan"]["recompute"]["select_recompute"])
    keys |= set(re.findall(r"'((?:[\w]+\\\.)+\w+)'", " ".join(f["hint"] for f in lint["findings"])))
    cells = _dump_cells(RECOMPUTE / family.folder)
    assert all(_key_names_cells_of(k, cells) for k in keys), (keys, sorted(cells))
    irs = [family_irs(family.folder, p.parent.name) for p in _family_files(family)]
    assert all(any(_key_tags_an_op(k, ir) for ir in irs) for k in keys), keys


def _account(command: str, folder) -> dict:
    result = CliRunner().invoke(irlint.cli.main, [command, str(folder), "--format", "json"])
    return {f["file"].split("/")[-2]: f for f in json.loads(result.stdout)["files"]}


SAME = [
    pytest.param(name, command, group, id=f"{name}-{command}-{'-'.join(layer for _, layer in group)}")
    for name, family in sorted(FAMILIES.items())
    for group in family.same
    for command in ("memory", "comm")
    if (name, command) not in UNEQUAL  # their own tests pin the difference
]


@pytest.mark.parametrize("name,command,group", SAME)
def test_family_matrix_identical_layers_give_identical_figures(name, command, group):
    files = _account(command, RECOMPUTE / FAMILIES[name].folder)
    fields = (
        ("kept_bytes", "tensors")
        if command == "memory"
        else ("received_bytes", "forward_bytes", "backward_bytes", "recompute_bytes", "collectives")
    )
    figures = []
    for rank, layer in group:
        (row,) = [r for r in files[rank]["layers"] if r["layer"] == layer]
        figures.append(tuple(row[f] for f in fields))
    assert len(set(figures)) == 1, dict(zip(group, figures))


def _reader_layer(ir, reader: int, originals: dict) -> str:
    """The layer of a backward reader: that of the forward op it repeats or differentiates."""
    forward = originals.get(reader) or ir.forward_of(reader) or reader
    return Places.of(ir).layer(forward)[0]


def test_llama_sp_layers_differ_by_exactly_the_output_layer_0_hands_to_layer_1s_recomputed_norm(family_irs):
    ir = family_irs(FAMILIES["llama-sp"].folder)
    report = memory.account(ir)
    originals = ir.originals()
    rows = {r.layer: r for r in report.layers()}
    # kept by layer 0, read only by layer 1's backward: %123 = Add(%79, %122) (Add-op1, line 1777),
    # read by the recomputed copy of layer 1's attention_norm Cast (%124 = Cast(%123), recompute: Bool(1))
    handed = [
        t for t in report.kept if t.layer == "0" and {_reader_layer(ir, r, originals) for r in t.readers} == {"1"}
    ]
    assert [(ir[t.tensor.node]["id"], ir[t.tensor.node]["op"]) for t in handed] == [("%123", "Add")]
    assert all(ir.is_recompute_copy(r) and ir[r]["op"] == "Cast" for t in handed for r in t.readers)
    # layer 1's output goes to norm_out, whose input chain is not recomputed: backward keeps its
    # Concat (outside), no tensor of layer 1 is read by the final norm
    assert not [
        t for t in report.kept if t.layer == "1" and {_reader_layer(ir, r, originals) for r in t.readers} == {OUTSIDE}
    ]
    assert (rows["0"].kept_bytes - sum(t.nbytes for t in handed), rows["0"].tensors - 1) == (
        rows["1"].kept_bytes,
        rows["1"].tensors,
    )


_RELAYOUT_OPS = frozenset({"Reshape", "StridedSlice", "AllGather", "AlltoAll", "Cast", "TupleGetItem"})


def _relays_out_from_outside(ir, k: int) -> bool:
    """A collective whose input is re-laid out from a tensor made outside the layers: its
    producers followed through re-layout ops and Casts reach an op of no layer."""
    node = k
    for _ in range(16):
        ins = [u for u in ir.producers(node) if ir[u]["kind"] == "cnode"][:1]
        if not ins:
            return False
        node = ins[0]
        if ir[node]["op"] not in _RELAYOUT_OPS or Places.of(ir).layer(node)[0] == OUTSIDE:
            return Places.of(ir).layer(node)[0] == OUTSIDE
    return False


def test_qwen3_moe_layers_differ_by_exactly_layer_0s_relayouts_of_the_embeddings_output(family_irs):
    fields = ("collectives", "forward_bytes", "backward_bytes", "waste_bytes", "recompute_bytes")
    for folder, count in (("mf-qwen3-moe-dp4_mp2_ep2_experts", 6), ("mf-qwen3-moe-dp4_mp2_ep2_experts_nodrop", 0)):
        ir = family_irs(folder)
        acc = comm.account(ir)
        rows = {r.layer: r for r in acc.layers()}
        # %23..%25 (the residual's, fp16) and %30..%32 (input_layernorm's, fp32): AllGather, AlltoAll,
        # AlltoAll of the embedding Dropout's output, printed in layer 0's scope
        entry = {
            c.node
            for c in acc.collectives
            if c.layer == "0" and not c.backward and _relays_out_from_outside(ir, c.node)
        }
        assert len(entry) == count
        assert {ir[k]["op"] for k in entry} <= {"AllGather", "AlltoAll"}
        extra = [c for c in acc.collectives if c.node in entry or (c.backward and c.transposes in entry)]
        assert all(c.layer == "0" for c in extra)
        row0 = {f: getattr(rows["0"], f) for f in fields}
        row0["collectives"] -= len(extra)
        row0["forward_bytes"] -= sum(c.received_bytes or 0 for c in extra if not c.backward)
        row0["backward_bytes"] -= sum(c.received_bytes or 0 for c in extra if c.backward)
        row0["waste_bytes"] -= sum(c.waste_bytes for c in extra)
        assert row0 == {f: getattr(rows["1"], f) for f in fields}


def _backward_lines(path) -> set[int]:
    """The lines of a dump's backward nodes, read from the text: the lazy_inline backward halves
    (``◂`` graphs) and the ``Gradients/`` scopes."""
    lines, backward, node = set(), False, None
    for n, line in enumerate(gzip.decompress(path.read_bytes()).decode("utf-8", "replace").splitlines(), 1):
        if line.startswith("subgraph @"):
            backward = "◂" in line.split("(", 1)[0]
        elif line.startswith("  %"):
            node = n
            if backward:
                lines.add(n)
        elif "# Fullname with scope: (Gradients/" in line and node is not None:
            lines.add(node)
    return lines


@pytest.mark.parametrize("name", [n for n, f in sorted(FAMILIES.items()) if f.moe])
def test_family_matrix_moe_memory_keeps_no_backward_node(name):
    family = FAMILIES[name]
    result = CliRunner().invoke(
        irlint.cli.main, ["memory", str(RECOMPUTE / family.folder), "--format", "json", "--top", "100000"]
    )
    for f in json.loads(result.stdout)["files"]:
        backward = _backward_lines(RECOMPUTE / family.folder / f["file"].split("/")[-2] / f["file"].split("/")[-1])
        kept = {t["line"]: t for t in f["top"]}
        assert kept and f["total_kept_bytes"] == sum(t["bytes"] for t in f["top"])
        assert not [t for line, t in kept.items() if line in backward]


# --- GLM: the SwiGLU Mul sliced for the row-parallel dense_4h_to_h -------------------------------
GLM_SLICED = {
    "mf-glm2-dp4_mp2_slice_blocked": 2,  # Mul -> StridedSlice {redistribution_op_…} -> Reshape -> MatMul
    "mf-glm2-dp2_mp4_slice_blocked": 2,
    "mf-glm4-pp2_select": 4,  # Mul -> StridedSlice {strided_slice, forward_comm_node_unique_id} -> Reshape
    "mf-glm4-pp2_mp4_select": 4,  # Mul -> Reshape {reshape} -> StridedSlice {strided_slice} -> MatMul
}
_RELAYOUT = frozenset({"Reshape", "StridedSlice", "AllGather", "Split", "Concat", "TupleGetItem"})


def _sliced_muls(ir) -> list[int]:
    """The tagged Muls whose output reaches dense_4h_to_h's MatMul only through re-layout ops, at least
    one of them a slice the parallel pass inserted."""
    found = []
    for k in ir.nodes_by_op("Mul"):
        if ir.is_backward(k) or (ir[k].get("primitive_attrs") or {}).get("recompute") is not True:
            continue
        frontier, seen, reached = [(k, False)], {k}, False
        while frontier and not reached:
            node, inserted = frontier.pop()
            for c in ir.consumers(node):
                d = ir[c]
                if d.get("kind") != "cnode" or c in seen or ir.is_backward(c) or ir.is_recompute_copy(c):
                    continue
                seen.add(c)
                if d["op"] == "MatMul" and linear_name(ir, c) == "dense_4h_to_h":
                    reached = reached or inserted
                elif d["op"] in _RELAYOUT:
                    frontier.append((c, inserted or ir.is_inserted_slice(c)))
        if reached:
            found.append(k)
    return found


@pytest.mark.parametrize("folder,count", sorted(GLM_SLICED.items()))
def test_glm_every_mul_sliced_for_dense_4h_to_h_is_rc002_with_the_linears_reshape_key(folder, count):
    found = {
        (f["file"].split("/")[-2], f["graph"], f["node"]): f
        for f in _lint(RECOMPUTE / folder, "--no-group")["findings"]
    }
    muls = []
    for path in sorted((RECOMPUTE / folder).glob("rank_*/*.ir.gz")):
        ir = _ir(path)
        muls += [(path.parent.name, ir[k]["graph"], ir[k]["id"]) for k in _sliced_muls(ir)]
    assert len(muls) == count
    for mul in muls:
        f = found[mul]
        assert f["code"] == "RC002", f["headline"]
        assert f["extra"]["select_recompute"] == ["mlp\\.dense_4h_to_h\\.reshape"]
        assert f["model_path"].endswith(".mlp.activation_func")


GLM0, GLM1 = RECOMPUTE / "mf-glm4-pp2_select", RECOMPUTE / "mf-glm4-pp2_select_round1"
GLM1F = RECOMPUTE / "mf-glm4-pp2_select_irlint_fix_round1"  # the recompile with what irlint fix writes now
RC_WARNINGS = ("RC001", "RC002", "RC003")


def test_glm4_irlint_fix_replaces_the_silu_cell_key_and_the_recompile_frees_what_was_priced(tmp_path):
    cfg = tmp_path / "cfg.yaml"
    shutil.copyfile(GLM0 / "cfg.yaml", cfg)
    result = CliRunner().invoke(irlint.cli.main, ["fix", str(cfg), str(GLM0), "--no-cache"])
    # exit 1: dense_h_to_4h's strategy (PC002) is a model-code change, printed, not written
    assert result.exit_code == 1 and "not written, change it in the model code" in result.stderr
    assert cfg.read_bytes() == (GLM1F / "cfg.yaml").read_bytes()  # what round 1' was compiled with
    assert "took out of select_recompute: 'mlp\\.activation_func\\.silu'" in result.stderr
    assert "'mlp\\.dense_4h_to_h\\.reshape'" in result.stderr
    # MindFormers logs "Set select recompute on at layer N: mlp.activation_func.mul,
    # mlp.activation_func.silu.silu, mlp.dense_4h_to_h.reshape": SiLU, Mul, slice and Reshape are copied
    assert [f for f in _lint(GLM1F, "--no-group")["findings"] if f["code"] in RC_WARNINGS] == []
    mine = [f for f in _lint(GLM0, "--no-group")["findings"] if f["code"] in RC_WARNINGS]
    priced: dict[str, int] = {}
    for f in mine:
        layer = str(f["extra"]["layer"])
        priced[layer] = priced.get(layer, 0) + f["extra"]["bytes_at_stake_per_micro_batch"]
    assert sorted(f["op"] for f in mine) == ["Mul"] * 4 + ["SiLU"] * 4
    before, after = _kept_per_layer(GLM0), _kept_per_layer(GLM1F)
    freed = {}
    for rank in ("rank_0", "rank_4"):
        (kept0, _), (kept1, _) = before[rank], after[rank]
        freed.update({layer: kept0[layer] - kept1[layer] for layer in kept0 if layer.isdigit()})
    # the Mul's 2,048 bytes (RC002) and the SiLU's 4,096 (RC001) per layer and micro batch
    assert freed == priced == {"0": 6144, "1": 6144, "2": 6144, "3": 6144}


def test_glm4_round0_silu_fix_replaces_the_cell_key():
    found = [f for f in _lint(GLM0, "--no-group")["findings"] if f["code"] == "RC001"]
    assert len(found) == 4
    for f in found:
        assert f["extra"]["select_recompute"] == ["mlp\\.activation_func\\.silu\\.silu"]
        assert f["extra"]["replaces_select_recompute"] == ["mlp\\.activation_func\\.silu"]
    plan = _lint(GLM0)["fix_plan"]["recompute"]
    assert [(r["key"], r["by"]) for r in plan["replace"]] == [
        ("mlp\\.activation_func\\.silu", ["mlp\\.activation_func\\.silu\\.silu"])
    ]


def test_glm4_silu_with_its_cell_and_primitive_keys_is_fixed_by_taking_the_cell_key_out(tmp_path):
    # round 1 of the old fix: both keys; MindSpore logs "All nodes in the graph ..._ChatGLM2SiLU_construct_...
    # are the output nodes, which are set to not be recomputed" and the Mul's copy %162 reads the SiLU's
    # output through %161 Depend(%para135_Parameter_10689) {recompute_insert}: the pass's own Depend
    found = [f for f in _lint(GLM1, "--no-group")["findings"] if f["code"] in RC_WARNINGS]
    assert sorted((f["code"], f["op"]) for f in found) == [("RC001", "SiLU"), ("RC001", "SiLU")]
    for f in found:
        assert f["fix"] == "select_recompute - 'mlp\\.activation_func\\.silu'"
        assert "blocking op" not in f["hint"] and "non-recomputed Depend" not in f["message"]
        assert f["extra"]["blocking"] == []
        assert f["extra"]["replaces_select_recompute"] == ["mlp\\.activation_func\\.silu"]
        depends = [r for r in f["related"] if r["op"] == "Depend"]
        assert depends and all("blocks nothing" in r["note"] for r in depends)
    cfg = tmp_path / "cfg.yaml"
    shutil.copyfile(GLM1 / "cfg.yaml", cfg)
    CliRunner().invoke(irlint.cli.main, ["fix", str(cfg), str(GLM1), "--no-cache"])
    # the cell's key out, the rest kept: the config of the clean recompile
    assert cfg.read_bytes() == (GLM1F / "cfg.yaml").read_bytes()


@pytest.mark.parametrize("case", [GLM0, GLM1, GLM1F, RECOMPUTE / "mf-pp2_dp2_mp2_irlint_fix_round0", TC0])
def test_a_recompute_insert_depend_is_never_a_blocker(case):
    for f in _lint(case, "--no-group")["findings"]:
        if not f["code"].startswith("RC"):
            continue
        assert "non-recomputed Depend" not in f["message"], f["message"]
        named = {r["node"] for r in f["related"] if "keeps the output alive" in r["note"]}
        assert all(r["op"] != "Depend" for r in f["related"] if r["node"] in named)


# --- DeepSeek-V3 MLA under a pipeline -----------------------------------------------------------
def test_deepseek3_q_path_reshape_is_named_by_its_own_linear():
    ir = _ir(DS / STAGE0)
    graph = next(g for g in ir.subgraphs if "_▸2203_" in g)
    matmul, reshape = _node(ir, graph, "%22"), _node(ir, graph, "%23")
    # %22 MatMul reads Load(%para175_▸CR_decoder.layers.0.self_attention.linear_q_down_proj.weight);
    # %23 Reshape (recompute_Default/Reshape-op61) is its output Reshape
    assert ir.producers(reshape)[0] == matmul
    assert model_path(ir, matmul) == ("0", "decoder.layers.0.self_attention.linear_q_down_proj")
    assert model_path(ir, reshape) == ("0", "decoder.layers.0.self_attention.linear_q_down_proj")


def test_deepseek3_shipped_full_recompute_has_no_finding():
    assert _lint(DS)["findings"] == []


def test_a_key_that_recomputes_an_op_is_not_to_be_dropped_for_an_unused_tag_it_also_sets():
    # round 1: 'mlp\.linear_fc2\.cast' tags RowParallelLinear's input Cast (recomputed) and its output
    # Cast after the ReduceScatter (the same primitive; backward does not read it)
    found = _lint(TC1, "--no-group", "--extend-select", "RC004")["findings"]
    casts = [f for f in found if f["code"] == "RC004" and f["op"] == "Cast"]
    assert len(casts) == 4
    for f in casts:
        assert f["hint"].startswith("Keep 'mlp\\.linear_fc2\\.cast': it also tags ")
        assert f["fix"] == ""


DS0 = RECOMPUTE / "mf-deepseek3-pp2_irlint_fix_round0"
DS1 = RECOMPUTE / "mf-deepseek3-pp2_irlint_fix_round1"


def test_deepseek3_q_path_finding_is_named_by_linear_q_down_proj_and_its_fix_frees_what_was_priced(tmp_path):
    found = _lint(DS0, "--no-group")["findings"]
    assert [(f["code"], f["op"], f["model_path"]) for f in found] == [
        ("RC001", "Reshape", f"decoder.layers.{n}.self_attention.linear_q_down_proj") for n in (2, 0)
    ]
    assert all(f["extra"]["select_recompute"] == ["self_attention\\.q_layernorm\\.cast"] for f in found)
    assert len(_lint(DS0)["findings"]) == 1  # one root cause: one finding for both layers
    cfg = tmp_path / "cfg.yaml"
    shutil.copyfile(DS0 / "cfg.yaml", cfg)
    result = CliRunner().invoke(irlint.cli.main, ["fix", str(cfg), str(DS0), "--no-cache"])
    assert result.exit_code == 0, result.stderr
    assert cfg.read_bytes() == (DS1 / "cfg.yaml").read_bytes()
    assert [f for f in _lint(DS1)["findings"] if f["code"] in ("RC001", "RC002", "RC003")] == []
    (kept0, peak0), (kept1, peak1) = _kept_per_layer(DS0)["rank_0"], _kept_per_layer(DS1)["rank_0"]
    per_layer = {str(f["extra"]["layer"]): f["extra"]["bytes_at_stake_per_micro_batch"] for f in found}
    assert {layer: kept0[layer] - kept1[layer] for layer in per_layer} == per_layer == {"0": 512, "2": 512}
    assert peak0 - peak1 == sum(f["bytes_at_stake"] for f in found) == 2560


DSF = RECOMPUTE / "mf-deepseek3-dp4_mp2_ep2_full_recompute"


def test_full_layer_recompute_copies_without_duplicated_are_copies_and_no_request():
    ir = _ir(DSF / STAGE0)
    half = next(g for g in ir.subgraphs if "_◂1210_" in g)
    facts = RecomputeFacts.of(ir)
    for nid in ("%59", "%154", "%610"):
        k = _node(ir, half, nid)
        d = ir[k]
        # need_cse_after_recompute and a unique_id, no duplicated mark: read by hand in the ◂ half
        assert d["cnode_attrs"].get("need_cse_after_recompute") is True and "duplicated" not in d["cnode_attrs"]
        assert ir.is_recompute_copy(k) and facts.request(k) is None
    assert _lint(DSF)["findings"] == []


# --- DeepSeek-V3 MLA + MoE, pp2 with interleave, both stages (mf-deepseek3-pp2_select_both_stages) ------
# ``par_mcore_shipped_gen.py --only deepseek3_pp2_select_both --ranks 0,4``: the shipped YAML with the
# mcore SiLU/Mul select keys and first_k_dense_replace 3 (an MoE layer on stage 0 stops MindSpore 2.10
# on stage 1). Stage 0 (rank_0) holds layers 0 and 2, stage 1 (rank_4) layers 1 and 3 (MoE).
DSB = RECOMPUTE / "mf-deepseek3-pp2_select_both_stages"
DS_PP1 = RECOMPUTE / "mf-deepseek3-pp1_select"  # the same model and keys without a pipeline: data 4
Q_DOWN = "self_attention.linear_q_down_proj"


def _q_path_reshapes(ir) -> dict[str, int]:
    """Layer -> the forward Reshape that reads linear_q_down_proj's MatMul output, found by the weight
    the MatMul reads (the model's answer is not used to find them)."""
    out = {}
    for mm in ir.nodes_by_op("MatMul"):
        if ir.is_backward(mm) or ir.is_recompute_copy(mm):
            continue
        names = [weight_name(ir, p) or "" for p in ir.producers(mm)]
        layer = next((n.split(".")[2] for n in names if n.endswith(f"{Q_DOWN}.weight")), None)
        if layer is None:
            continue
        (reshape,) = [u for u in ir.consumers(mm) if ir[u].get("op") == "Reshape" and not ir.is_backward(u)]
        out[layer] = reshape
    return out


def test_deepseek3_pp2_both_stages_q_path_reshapes_are_named_by_linear_q_down_proj():
    # read by hand: rank_4's %8 MatMul (scope .../3-TransformerLayer/self_attention-MLASelfAttention/
    # linear_q_down_proj-...) -> %9 Reshape (8, 32) -> (8, 1, 32), printed Default/Reshape-op1
    seen = {}
    for rank in ("rank_0", "rank_4"):
        ir = _ir(DSB / rank / "21_validate_0095.ir.gz")
        for layer, reshape in _q_path_reshapes(ir).items():
            seen[layer] = rank
            assert model_path(ir, reshape) == (layer, f"decoder.layers.{layer}.{Q_DOWN}")
    assert seen == {"0": "rank_0", "2": "rank_0", "1": "rank_4", "3": "rank_4"}


def test_deepseek3_model_path_is_the_same_with_and_without_a_pipeline():
    # the pp1 compile (no PipelineCellWithMultiOutputs, TrainOneStepCell) names every layer's q-path
    # Reshape as the stages of the pp2 compile do, and lints to the same findings
    def paths(irs):
        return {layer: model_path(ir, r) for ir in irs for layer, r in _q_path_reshapes(ir).items()}

    pp1 = paths([_ir(DS_PP1 / "rank_0/21_validate_0097.ir.gz")])
    pp2 = paths([_ir(DSB / rank / "21_validate_0095.ir.gz") for rank in ("rank_0", "rank_4")])
    assert pp1 == pp2 == {n: (n, f"decoder.layers.{n}.{Q_DOWN}") for n in "0123"}

    def found(case):
        return sorted((f["model_path"], f["fix"]) for f in _lint(case, "--no-group")["findings"])

    assert found(DS_PP1) == found(DSB)


def test_deepseek3_pp2_both_stages_one_finding_per_root_cause():
    found = _lint(DSB)["findings"]
    assert [(f["code"], f["op"], f["model_path"]) for f in found] == [
        ("RC001", "Reshape", f"decoder.layers.0.{Q_DOWN}")
    ]
    (f,) = found
    assert f["layers"] == ["0", "1", "2", "3"]
    assert f["extra"]["select_recompute"] == ["self_attention\\.q_layernorm\\.cast"]
    # every occurrence is its layer's q-path Reshape, on the stage that holds the layer
    where = {(o["file"].split("/")[-2], o["layer"], o["model_path"]) for o in f["occurrences"]}
    assert where == {
        ("rank_0", "0", f"decoder.layers.0.{Q_DOWN}"),
        ("rank_0", "2", f"decoder.layers.2.{Q_DOWN}"),
        ("rank_4", "1", f"decoder.layers.1.{Q_DOWN}"),
        ("rank_4", "3", f"decoder.layers.3.{Q_DOWN}"),
    }
    ungrouped = _lint(DSB, "--no-group")["findings"]
    assert len(ungrouped) == 4 and {g["fix"] for g in ungrouped} == {f["fix"]}
    assert not any(LLAMA_WORDS.search(g["headline"] + g["hint"]) for g in ungrouped)
