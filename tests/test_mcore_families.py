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

import pytest
from click.testing import CliRunner
from conftest import TESTS
from irlint.rules.recompute.evidence import RecomputeFacts
from irlint.rules.recompute.feed_forward import find_feed_forwards

import irlint.cli
from irlint.model.layers import Places, linear_name, model_path, weight_name
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
