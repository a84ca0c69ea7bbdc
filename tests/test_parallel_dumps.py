"""Real semi_auto_parallel dumps (MindSpore 2.10, 8 devices): read whole, redundant chains
(PC001) and full gathers (PC002) found with the content the user needs, scheme communication
silent, identical chains of rank_N/ folders reported once."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import CORPUS, SHARED_CORPUS, portable, quiet_config
from irlint.rules.redistribution.full_gather import StrategyMismatchFullGather
from irlint.rules.redistribution.redundant_chain import RedundantRedistributionChain

from irlint.findings_json import extra_data
from irlint.read.reader import read_ir
from irlint.rule import example_text
from irlint.runner.discover import discover
from irlint.runner.engine import lint

ROWS_TO_COLS = CORPUS / "par-mismatch-mm_rows8_to_cols8" / "rank_0" / "21_validate_0082.ir"
COL_ROW = CORPUS / "par-fixed-mm_col_row_mp8"
COL_COL = CORPUS / "par-mismatch-ffn_col_col"
MUL_8RANKS = CORPUS / "par-mismatch-ffn_mul_disagrees_8ranks"
WRONG_WO = SHARED_CORPUS / "par-llama_mp-dp2_mp4_optpar_wrong_wo" / "rank_0" / "21_validate_0082.ir"


def _par_dumps() -> list:
    roots = [p for root in (CORPUS, SHARED_CORPUS) if root.is_dir() for p in sorted(root.glob("par-*"))]
    return [f for root in roots for f in discover([str(root)])[0]]


@pytest.mark.slow
def test_every_parallel_dump_reads_whole():
    from irlint.runner.engine import read_dump

    dumps = _par_dumps()
    assert len(dumps) >= 30  # the fixtures alone hold 30 par-* files
    bad = []
    for f in dumps:  # the MindFormers MoE dumps are gzip-compressed
        path, ir = f.path, read_dump(f)
        if ir.diagnostics or ir.header.get("total_cnodes") != ir.cnode_count:
            bad.append((path, ir.cnode_count, ir.header.get("total_cnodes"), [str(d) for d in ir.diagnostics[:2]]))
    assert bad == []


def _check(rule, path: Path):
    ir = read_ir(str(path))
    return ir, list(rule.check(ir))


# --- PC001 on the rows -> columns chain -----------------------------------------------------------


def test_rows_to_cols_chain_in_order_with_bytes_and_its_backward_transpose():
    ir, (f,) = _check(RedundantRedistributionChain(), ROWS_TO_COLS)
    extra = extra_data(f)
    assert (f.node, f.op) == ("%3", "AllGather")
    assert [(s["node"], s["op"], s["in"], s["out"], s["moved_bytes"]) for s in extra["steps"]] == [
        ("%3", "AllGather", "Float32(8, 32)", "Float32(64, 32)", 7 * 8 * 32 * 4),
        ("%4", "StridedSlice", "Float32(64, 32)", "Float32(64, 4)", 0),
    ]
    assert extra["surviving_bytes"] == 64 * 4 * 4
    # StridedSliceGrad pads back, the ReduceScatter named after the AllGather moves the same 7/8 again
    assert extra["backward"] == ["%15", "%16"]
    assert extra["backward_moved_bytes"] == 7 * 8 * 32 * 4
    assert "14.0 KiB per step in all" in f.message
    assert (extra["producer_strategy"], extra["consumer_strategy"]) == ("((8, 1), (1, 1))", "((1, 8),)")


def test_rows_to_cols_hint_changes_the_producer_not_the_relu():
    """ReLU ((8, 1)) would only move the chain in front of mm2 ((1, 8), (8, 1)); mm1 column-parallel
    is the layout of par-fixed-mm_col_row_mp8, which has no chain."""
    _, (f,) = _check(RedundantRedistributionChain(), ROWS_TO_COLS)
    assert "set MatMul mm1 (net-TwoMatMul) to in_strategy ((1, 1), (1, 8))" in f.hint
    assert "every other neighbour of the two ops still in agreement" in f.hint
    assert extra_data(f)["fix"] == {
        "node": "%2",
        "in_strategy": "((1, 1), (1, 8))",
        "source": {"path": "/home/user/llm/parallel/mismatch/gen.py", "line": 48},
    }
    fixed = read_ir(str(COL_ROW / "rank_0" / "21_validate_0082.ir"))
    (mm1,) = [k for k in fixed.nodes_by_op("MatMul") if fixed[k].get("instance") == "mm1"]
    assert fixed[mm1]["primitive_attrs"]["in_strategy"] == ((1, 1), (1, 8))


def test_scheme_communication_of_the_fixed_strategy_is_silent():
    report = lint([str(COL_ROW)], quiet_config())
    assert [f.code for f in report.findings if f.code.startswith("PC")] == []
    ir = read_ir(str(COL_ROW / "rank_0" / "21_validate_0082.ir"))
    assert ir.nodes_by_op("AllReduce"), "the fixture does hold the row-parallel AllReduce and its backward"


# --- ranks ------------------------------------------------------------------------------------------


def test_chains_of_eight_ranks_with_different_groups_and_offsets_are_reported_once():
    ranks = {r: read_ir(str(MUL_8RANKS / f"rank_{r}" / "21_validate_0082.ir")) for r in (0, 5)}
    groups = {r: {ir[k]["primitive_attrs"]["group"] for k in ir.nodes_by_op("AllGather")} for r, ir in ranks.items()}
    begins = {r: [ir[k]["args"][1] for k in ir.nodes_by_op("StridedSlice")] for r, ir in ranks.items()}
    assert groups[0].isdisjoint(groups[5]) and begins[0] != begins[5]  # the ranks do differ
    report = lint([str(MUL_8RANKS)], quiet_config())
    pc = [f for f in report.findings if f.code.startswith("PC")]
    assert [(f.code, f.node, f.ranks) for f in pc] == [("PC001", n, tuple(range(8))) for n in ("%4", "%18", "%29")]
    assert "group of 4" in pc[0].message and "4-6301172352641561019" not in pc[0].message


def test_all_three_chains_around_the_mul_name_the_same_fix():
    _, found = _check(RedundantRedistributionChain(), MUL_8RANKS / "rank_3" / "21_validate_0082.ir")
    assert len(found) == 3
    for f in found:
        assert "set Mul (net-FeedForward) to in_strategy ((2, 4), (2, 4))" in f.hint
        assert extra_data(f)["fix"]["node"] == "%28"


def test_col_col_folder_gives_one_full_gather_finding_on_ranks_0_to_7():
    report = lint([str(COL_COL)], quiet_config())
    assert [(f.code, f.node, f.ranks) for f in report.findings] == [("PC002", "%6", tuple(range(8)))]


# --- PC002 ------------------------------------------------------------------------------------------


def test_full_gather_before_column_parallel_w2():
    ir, (f,) = _check(StrategyMismatchFullGather(), COL_COL / "rank_0" / "21_validate_0082.ir")
    extra = extra_data(f)
    assert f.severity == "info"
    assert extra["fix"] == {
        "node": "%19",
        "in_strategy": "((1, 8), (1, 8))",
        "source": {"path": "/home/user/llm/parallel/mismatch/gen.py", "line": 60},
    }
    assert extra["moved_bytes"] == 7 * 64 * 8 * 4 and extra["gathered_bytes"] == 64 * 64 * 4
    assert extra["backward_moved_bytes"] == 7 * 64 * 8 * 4
    # the AllReduce a row-parallel w2 needs moves, on a ring, what the gather moves
    assert "one AllReduce of the Float32(64, 32) output over 8 ranks (ring: 14.0 KiB per rank)" in f.hint
    assert [r.node for r in f.related if r.note.startswith("backward transpose")] == ["%26", "%36", "%37"]


def test_pc001_stays_silent_on_the_full_gather():
    _, found = _check(RedundantRedistributionChain(), COL_COL / "rank_0" / "21_validate_0082.ir")
    assert found == []


@pytest.mark.skipif(not WRONG_WO.is_file(), reason="../shared/corpus is not here")
def test_both_gathers_of_a_column_parallel_wo_are_one_finding():
    _, found = _check(StrategyMismatchFullGather(), WRONG_WO)
    (f,) = found
    assert extra_data(f)["gathers"] == 2
    assert extra_data(f)["fix"]["in_strategy"] == "((2, 4), (1, 4))"
    assert "layers-CellList/1-DecoderLayer/attention-Attention/wo-Linear" in f.scope


# one snapshot per rule and fixture
REAL_SNAPSHOTS = [
    (path, rule)
    for path in (
        ROWS_TO_COLS,
        MUL_8RANKS / "rank_0" / "21_validate_0082.ir",
        COL_COL / "rank_0" / "21_validate_0082.ir",
        CORPUS / "par-auto-ffn_sharding_propagation_wrong_w3" / "rank_0" / "21_validate_0083.ir",
    )
    for rule in (RedundantRedistributionChain, StrategyMismatchFullGather)
]


@pytest.mark.parametrize(
    "path,rule", REAL_SNAPSHOTS, ids=[f"{p.relative_to(CORPUS).parts[0]}-{r.code}" for p, r in REAL_SNAPSHOTS]
)
def test_snapshot_of_findings_on_real_parallel_fixtures(path, rule, snapshot):
    ir = read_ir(str(path))
    assert [portable(f.to_dict(), CORPUS) for f in rule().check(ir)] == snapshot


# --- the dumps made for issue 9 (tests/fixtures/corpus-gen/par_extra_gen.py) ---------------------


def _only(case: str) -> Path:
    (path,) = sorted((CORPUS / case / "rank_0").glob("21_validate_*.ir"))
    return path


def test_allreduce_whose_result_is_sliced_points_to_a_reduce_scatter():
    _, (f,) = _check(RedundantRedistributionChain(), _only("par-mismatch-allreduce_then_rows"))
    extra = extra_data(f)
    assert (f.node, f.op, extra["kinds"]) == ("%5", "AllReduce", ["allreduce-then-slice"])
    # ring AllReduce of Float32(64, 16) over 8 ranks: 2 * 7/8 * 4 KiB; a ReduceScatter half of it
    assert extra["moved_bytes"] == 2 * 7 * 64 * 16 * 4 // 8
    assert "a ReduceScatter over the same 8 ranks would receive 3.50 KiB instead of 7.00 KiB" in f.message
    assert "give MatMul mm2 (net-Net) (in_strategy ((1, 8), (8, 1))) out_strategy ((8, 1),)" in f.hint
    assert extra["backward"] == ["%14", "%15"]


def test_sequence_parallel_communication_is_the_scheme():
    """The out_strategy the hint above asks for is what this dump has: a ReduceScatter, no slice."""
    ir, found = _check(RedundantRedistributionChain(), _only("par-fixed-ffn_seq_parallel"))
    assert found == [] and list(StrategyMismatchFullGather().check(ir)) == []
    (mm2,) = [k for k in ir.nodes_by_op("MatMul") if ir[k].get("instance") == "mm2" and not ir.is_backward(k)]
    assert ir[mm2]["primitive_attrs"]["out_strategy"] == ((8, 1),)
    assert "ReduceScatter" in [ir[u]["op"] for u in ir.consumers(mm2)]
    assert not ir.nodes_by_op("StridedSlice")[1:], "only the full_batch input slice"


def test_strategies_set_by_sharding_propagation_are_read_from_the_trailing_block():
    ir, found = _check(RedundantRedistributionChain(), _only("par-auto-ffn_sharding_propagation"))
    assert found == []
    matmuls = [k for k in ir.nodes_by_op("MatMul") if not ir.is_backward(k)]
    propagated = [k for k in matmuls if "in_strategy" not in (ir[k].get("primitive_attrs") or {})]
    assert propagated, "propagation printed some strategies only after cnode_primal_attrs"
    from irlint.rules.redistribution.layouts import strategy

    assert {strategy(ir, k) for k in matmuls} == {((1, 1), (8, 1)), ((1, 8), (1, 8))}


def test_expert_dispatch_by_gather_and_slice_names_enable_alltoall():
    _, found = _check(RedundantRedistributionChain(), _only("par-mismatch-moe_gather_dispatch"))
    assert [f.node for f in found] == ["%3", "%18"]
    for f in found:
        assert "enable_alltoall=True" in f.hint and "receiving 7.00 KiB instead of 56.0 KiB" in f.hint
        assert extra_data(f)["fix"] == {"set_auto_parallel_context": "enable_alltoall=True"}


def test_alltoall_dispatch_and_combine_around_the_experts_are_silent():
    ir, found = _check(RedundantRedistributionChain(), _only("par-fixed-moe_alltoall_dispatch"))
    assert found == []
    assert len([k for k in ir.nodes_by_op("AlltoAll") if not ir.is_backward(k)]) == 2


def test_mindformers_pipeline_stages_read_whole_and_stay_silent():
    """MindFormers 2.1 Llama, 2 pipeline stages, lazy_inline: ▸ forward and ◂ backward halves."""
    folder = CORPUS / "par-mindformers-llama_pp2_mp4"
    for rank in (0, 4):
        (path,) = sorted((folder / f"rank_{rank}").glob("21_validate_*.ir"))
        ir = read_ir(str(path))
        assert ir.diagnostics == [] and ir.header["total_cnodes"] == ir.cnode_count
        assert any("▸" in g for g in ir.subgraphs) and any("◂" in g for g in ir.subgraphs)
        assert ir.nodes_by_op("Send") and ir.nodes_by_op("Receive")
        assert [
            k for k in ir.nodes_by_op("AllReduce") if ir[k].get("instance") == "grad_mirror_MirrorMicroStepOperator"
        ]
    report = lint([str(folder)], quiet_config())
    assert [f for f in report.findings if f.code.startswith("PC")] == []


def test_one_redistribution_shared_by_two_readers_is_one_chain():
    """MindSpore 2.10 gathers once for two readers of one layout: one finding naming both."""
    _, (f,) = _check(RedundantRedistributionChain(), _only("par-mismatch-rows_to_cols_two_readers"))
    assert "its 2 readers ReLU (net-Net), GeLU (net-Net)" in f.message
    assert [r.node for r in f.related if r.note.startswith("consumer")] == ["%5", "%6"]
    assert "set MatMul mm1 (net-Net) to in_strategy ((1, 1), (1, 8))" in f.hint
    assert "repeated-gather" not in extra_data(f)["kinds"]


def test_mindformers_column_parallel_w2_is_one_full_gather_finding_with_its_own_strategy():
    """The fix PC002 derives is the strategy MindFormers itself gives w2: ((dp, mp), (1, mp))."""
    ir, found = _check(StrategyMismatchFullGather(), _only("par-mindformers-llama_dp2_mp4_wrong_w2"))
    (f,) = found
    assert extra_data(f)["gathers"] == 2 and extra_data(f)["fix"]["in_strategy"] == "((2, 4), (1, 4))"
    assert "1-LLamaDecodeLayer/feed_forward-LlamaFeedForward/w2-Linear" in f.scope
    # the Partial that hands the gathered activation to the backward half is not a reader
    assert not [r for r in f.related if r.op == "Partial"]
    ok = read_ir(str(_only("par-mindformers-llama_dp2_mp4")))
    assert list(StrategyMismatchFullGather().check(ok)) == []


def test_a_strategy_of_an_unseen_form_is_no_strategy(ir_from_text):
    """Unknown constructs never crash a rule: a strategy that is not tuples of ints is ignored."""
    from irlint.rules.redistribution.layouts import strategy

    text = example_text(RedundantRedistributionChain.INVALID[0]).replace(
        "in_strategy: ((8, 1), (1, 1))", 'in_strategy: "8x1"'
    )
    ir = ir_from_text(text)
    assert ir.diagnostics == []
    (mm1,) = ir.nodes_by_op("MatMul")
    assert strategy(ir, mm1) is None
    (f,) = RedundantRedistributionChain().check(ir)  # the chain is still found, the hint is generic
    assert "in_strategy ?" in f.hint


def test_related_nodes_of_a_backward_subgraph_say_their_graph():
    """Node ids restart in every subgraph: the ◂ backward half's %31 is not the ▸ forward half's."""
    from irlint.reporters import render

    folder = CORPUS / "par-mindformers-llama_dp2_mp4_wrong_w2"
    report = lint([str(folder)], quiet_config())
    (f,) = [f for f in report.findings if f.code == "PC002"]
    assert "▸" in f.graph
    back = [r for r in f.related if r.note.startswith("backward transpose")]
    assert back and all("◂" in r.graph for r in back)
    assert all(r.graph for r in f.related)
    text = render(report, "text")
    assert f"graph {f.node} in {f.graph}" in text
    for r in back:
        assert f"{r.node} {r.op} in {r.graph}" in text
    forward = [r for r in f.related if r.graph == f.graph]
    assert forward and all(f"{r.node} {r.op}  " in text for r in forward)  # same graph: not repeated
    sarif = render(report, "sarif")
    assert all(f"{r.node} {r.op} in {r.graph}" in sarif for r in f.related)


# --- the dumps made for issue 18 (tests/fixtures/corpus-gen/par_comm_gen.py) ---------------------


def test_scheme_reduce_scatter_before_a_wasteful_relayout_is_neither_anchor_nor_waste():
    """mm2's sequence-parallel ReduceScatter %12 hands rows on; the ReLU reads columns. The waste
    starts at the AllGather %13; %12 and its backward AllGather %51 are scheme."""
    ir, found = _check(RedundantRedistributionChain(), _only("par-mismatch-sp_then_cols"))
    first, second = sorted(found, key=lambda f: f.line)
    assert (first.node, first.op) == ("%13", "AllGather") and (second.node, second.op) == ("%16", "AllGather")
    extra = extra_data(first)
    assert extra["scheme"] == ["%12"] and [s["node"] for s in extra["steps"]] == ["%13", "%14"]
    assert [(w["node"], w["bytes"]) for w in extra["waste"]] == [("%13", 7 * 8 * 32 * 4), ("%50", 7 * 8 * 32 * 4)]
    assert extra["waste_bytes"] == 2 * 7168
    assert "MatMul mm2 (net-FFN), after the scheme ReduceScatter" in first.message
    assert any(r.node == "%12" and r.note.startswith("scheme, not waste") for r in first.related)
    assert not any(r.node == "%51" for f in found for r in f.related)
    # 8 collectives of 7168 bytes, the loss AllReduce (2·7/8·4) and the norm weight's gradient (2·7/8·128)
    assert extra["step_received_bytes"] == 8 * 7168 + 7 + 224
    assert "24.9% of the 56.2 KiB this step's collectives receive per rank" in first.message
    assert sum(extra_data(f)["waste_bytes"] for f in found) == 4 * 7168


def test_the_consistent_sequence_parallel_net_has_no_finding():
    ir, found = _check(RedundantRedistributionChain(), _only("par-fixed-sp_then_rows"))
    assert found == [] and list(StrategyMismatchFullGather().check(ir)) == []


def test_gather_before_a_replicated_router_and_slice_after_it_is_one_round_trip():
    """The gather is used whole and the slice moves nothing: only together are they waste, with
    7/8 of the gate's compute."""
    _, (f,) = _check(RedundantRedistributionChain(), _only("par-mismatch-gate_gather_slice"))
    extra = extra_data(f)
    assert (f.node, f.op, extra["kinds"]) == ("%3", "AllGather", ["gather-compute-slice"])
    assert extra["discarded_compute"] == "7/8" and extra["layout"] == "(8, 1)"
    assert {k: v for k, v in extra["fix"].items() if k != "source"} == {"node": "%5", "in_strategy": "((8, 1), (1, 1))"}
    assert extra["fix"]["source"]["line"] == 72  # the model line that creates the op to change
    gathered = 7 * 8 * 32 * 4  # (8, 32) -> (64, 32), and its ReduceScatter %16 in backward
    assert [(w["node"], w["bytes"]) for w in extra["waste"]] == [("%3", gathered), ("%16", gathered)]
    assert "7/8 of its compute is thrown away" in f.message


def test_slice_before_a_relu_gathered_straight_back_is_one_round_trip():
    _, (f,) = _check(RedundantRedistributionChain(), _only("par-mismatch-slice_relu_gather"))
    extra = extra_data(f)
    assert (f.node, extra["kinds"]) == ("%4", ["round-trip"])
    assert [r.node for r in f.related[:3]] == ["%1", "%2", "%3"]  # producer, slice, the ReLU
    assert "set ReLU (net-Net) to in_strategy ((1, 1),)" in f.hint
    assert extra["waste_bytes"] == 2 * 7 * 8 * 32 * 4


def test_alltoall_undone_by_the_inverse_alltoall_after_a_relu_is_one_round_trip():
    _, (f,) = _check(RedundantRedistributionChain(), _only("par-mismatch-alltoall_relu_back"))
    extra = extra_data(f)
    assert (f.node, f.op, extra["kinds"]) == ("%2", "AlltoAll", ["alltoall-round-trip"])
    assert extra["backward"] == ["%15", "%17"]
    assert extra["waste_bytes"] == 4 * (64 * 8 * 4 * 7 // 8)  # two AlltoAll forward, two backward
    assert "set ReLU (net-Net) to in_strategy ((1, 8),)" in f.hint


def test_runs_wasteful_on_their_own_are_not_reported_again_as_a_round_trip():
    for case in ("par-mismatch-sp_then_cols", "par-mismatch-ffn_mul_disagrees_8ranks"):
        _, found = _check(RedundantRedistributionChain(), _only(case))
        assert not [f for f in found if extra_data(f)["kinds"][0].endswith(("round-trip", "compute-slice"))]


def test_same_split_counts_on_other_device_axes_is_a_permutation_paid_as_a_full_gather():
    """add1 and add2 use layout("tp", "dp"); the ReLU between them the tuple (4, 2): same counts,
    other ranks. The hint names the ReLU and the Layout, never 'the strategies already agree'."""
    ir, found = _check(RedundantRedistributionChain(), _only("par-mismatch-layout_permutation"))
    assert [(f.node, extra_data(f)["kinds"]) for f in found] == [
        ("%5", ["permutation-as-gather"]),
        ("%20", ["permutation-as-gather"]),
    ]
    for f in found:
        extra = extra_data(f)
        assert extra["fix"] == {"node": "%18", "in_layout": 'layout("tp", "dp") of Layout((2, 4), ("dp", "tp"))'}
        assert "ReLU (net-Net) (in_strategy ((4, 2),)) places its blocks differently" in f.hint
        assert 'in_strategy=(layout("tp", "dp"),)' in f.hint and "already agree" not in f.hint
        assert "gathering it whole (8x)" in f.message and "the local shape Float32(8, 16) is the same" in f.message
        # three gathers over groups of 2: (8, 16) -> (2, 16, 32) is 8x; 7/8 of 4 KiB forward, as much backward
        assert extra["waste_bytes"] == 2 * (512 + 1024 + 2048)
    from irlint.rules.redistribution.layouts import placements

    (relu,) = [k for k in ir.nodes_by_op("ReLU") if not ir.is_backward(k)]
    (add1, _) = sorted((k for k in ir.nodes_by_op("Add") if not ir.is_backward(k)), key=lambda k: ir[k]["line"])
    assert placements(ir, add1)[0] == (((4, 1),), ((2, 4),))  # tp: 4 ranks 1 apart; dp: 2 ranks 4 apart
    assert placements(ir, relu)[0] == (((4, 2),), ((2, 1),))  # a tuple: dim 0 on the outer axis


def test_the_consistent_layout_net_has_no_finding():
    ir, found = _check(RedundantRedistributionChain(), _only("par-fixed-layout_consistent"))
    assert found == [] and list(StrategyMismatchFullGather().check(ir)) == []


# --- MindFormers 2.1.0 MoE (tests/fixtures/corpus-gen/par_mf_moe_gen.py, gzip-compressed dumps) --


def _mf_moe(case: str):
    from irlint.runner.discover import discover
    from irlint.runner.engine import read_dump

    (f,) = discover([str(CORPUS / case)])[0]
    return read_dump(f)


def test_mindformers_moe_dispatch_and_combine_alltoall_are_scheme():
    ir = _mf_moe("par-fixed-mf_moe_alltoall")
    assert len([k for k in ir.nodes_by_op("AlltoAll") if not ir.is_backward(k)]) == 4
    assert list(RedundantRedistributionChain().check(ir)) == [] and list(StrategyMismatchFullGather().check(ir)) == []


def test_mindformers_router_with_a_replicated_strategy_wastes_its_gather_and_compute():
    """Layer 0's router dense ((1, 1), (1, 1)): the tokens are gathered over the 4 dp ranks and
    3/4 of the router's result sliced away; layer 1's router keeps MindFormers' strategy."""
    ir = _mf_moe("par-mismatch-mf_moe_router_replicated")
    (f,) = RedundantRedistributionChain().check(ir)
    extra = extra_data(f)
    assert (f.node, f.op, extra["kinds"], extra["discarded_compute"]) == (
        "%57",
        "AllGather",
        ["gather-compute-slice"],
        "3/4",
    )
    assert "0-LLamaDecodeLayer/feed_forward-MoEV2/router-Router/dense-Dense" in f.scope and "▸" in f.graph
    assert "set MatMul (dense-Dense) to in_strategy ((4, 1), (1, 1))" in f.hint
    assert "RmsNorm" in f.message  # the op that made the layout, not the TupleGetItem after it
    # (1, 16, 64) -> (4, 16, 64) fp32 over 4 ranks: 3/4 of 16 KiB, and the ReduceScatter in the ◂ half
    assert extra["waste_bytes"] == 2 * 12288
    assert all("◂" in r.graph for r in f.related if r.note.startswith("backward transpose"))


def test_mindformers_expert_relayout_by_gather_counts_only_what_one_alltoall_would_not_move():
    ir = _mf_moe("par-mismatch-mf_moe_gather_dispatch")
    found = list(RedundantRedistributionChain().check(ir))
    assert [f.node for f in found] == ["%84", "%102", "%200", "%218"]
    for f in found:
        assert "enable_alltoall=True" in f.hint and "receiving 8.00 KiB instead of 16.0 KiB" in f.hint
        assert "the expert-parallel re-layout itself is scheme (one AlltoAll: 8.00 KiB)" in f.message
        assert extra_data(f)["waste_bytes"] == 2 * (16384 - 8192)


def test_mindformers_sequence_parallel_reduce_scatter_is_scheme_and_the_relayout_after_it_waste():
    """MindFormers' own SP strategies: the 2-D rows-split-8 ReduceScatter output is re-laid to the
    residual Add's (2, 4, 1); the ReduceScatters and the SP AllGathers (same instance name as the
    re-layout gathers) are scheme."""
    ir = _mf_moe("par-mindformers-llama_seq_parallel")
    found = list(RedundantRedistributionChain().check(ir))
    # issue 30: the four re-layouts have one root cause (2 sequences per dp replica, the sequence
    # split by SP): one finding at the first, the four chains its occurrences
    assert [(f.node, f.op) for f in found] == [("%60", "AllGather")]
    (f,) = found
    extra = extra_data(f)
    assert extra["root_cause"]["kind"] == "batch-merge"
    assert [o["node"] for o in extra["occurrences"]] == ["%60", "%91", "%140", "%171"]
    assert {"%60", "%91", "%140", "%171"} <= {r.node for r in f.related}
    assert "runner_config.batch_size: 1" in f.hint
    scatters = {ir[k]["id"] for k in ir.nodes_by_op("ReduceScatter") if not ir.is_backward(k)}
    assert scatters == {"%58", "%89", "%138", "%169"}
    for occurrence in extra["occurrences"]:
        assert occurrence["scheme"] and set(occurrence["scheme"]) <= scatters
        assert not {w["node"] for w in occurrence["waste"]} & scatters
        assert occurrence["waste_bytes"] == 2 * 6144  # the gather over 4 ranks, and its ReduceScatter in backward
    assert "enable_alltoall" not in f.hint  # no experts here
    assert extra["waste_bytes"] == 4 * 2 * 6144


# --- a permutation on a 4-D attention tensor: a tuple-sharded Dropout between Layout-sharded ops ----


def test_a_4d_permutation_after_a_batchmatmul_names_the_device_axis_order_dropout_can_take():
    """score and context BatchMatMuls place (B, N, S, S) with layout("dp", "tp", "cp", "None"), the
    Dropout between them the tuple (2, 2, 2, 1): N and S on swapped device axes. The producer is a
    BatchMatMul and, for the second chain, the Dropout's TupleGetItem; MindSpore 2.10 refuses a
    Layout on Dropout, so the hint orders the Layout's device axes as a tuple places dims (the
    compile with that Layout, par-fixed-attn_dropout_reordered, has no chain). Both chains are the
    Dropout's tuple: one finding for the cause."""
    _, (f,) = _check(RedundantRedistributionChain(), _only("par-mismatch-attn_dropout_tuple"))
    extra = extra_data(f)
    assert extra["root_cause"]["kind"] == "tuple-beside-layout" and extra["chains"] == 2
    assert extra["root_cause"]["fix"]["device_matrix"] == 'Layout((2, 2, 2), ("dp", "tp", "cp"))'
    assert "MindSpore does not shard Dropout with a Layout" in f.hint and "already agree" not in f.hint
    assert [o["node"] for o in extra["occurrences"]] == ["%8", "%24"]
    for occurrence in extra["occurrences"]:
        assert occurrence["kinds"] == ["permutation-as-gather"]
        assert occurrence["fix"] == {"node": "%22", "device_matrix": 'Layout((2, 2, 2), ("dp", "tp", "cp"))'}
        # rank = 4 dp + 2 cp + tp: the block read is the block held where cp == tp
        assert (
            "ranks 1–2, 5–6 read a block another rank holds (sending it there receives 4.00 KiB"
            in (occurrence["message"])
        )
        assert "the other 4 of 8 ranks read the block they hold" in occurrence["message"]
        # AllGathers of 4 KiB and 8 KiB forward, the two ReduceScatters backward
        assert occurrence["waste_bytes"] == 2 * (4096 + 8192)
    assert extra["waste_bytes"] == 2 * 2 * (4096 + 8192)
    ir, found = _check(RedundantRedistributionChain(), _only("par-fixed-attn_dropout_reordered"))
    assert found == [] and list(StrategyMismatchFullGather().check(ir)) == []
    # a point-wise op that takes a Layout gets it, its broadcast input unsplit (the compile with it,
    # par-fixed-attn_scale_layout, has no chain)
    _, found = _check(RedundantRedistributionChain(), _only("par-mismatch-attn_scale_tuple"))
    assert [(f.node, extra_data(f)["kinds"]) for f in found] == [
        ("%8", ["permutation-as-gather"]),
        ("%24", ["permutation-as-gather"]),
    ]
    for f in found:
        assert 'in_strategy=(layout("dp", "tp", "cp", "None"), layout("None", "None", "None", "None"))' in f.hint
    ir, found = _check(RedundantRedistributionChain(), _only("par-fixed-attn_scale_layout"))
    assert found == [] and list(StrategyMismatchFullGather().check(ir)) == []


def test_mindformers_dropout_tuple_on_half_the_devices_is_one_root_cause_with_every_byte():
    """The Dropout's (dp, mp, 1, 1) leaves S whole and N on the cp axis: both chains are the tuple's
    (40 KiB per step with the backward), and the fix gives the tuple S's split too."""
    _, (f,) = _check(RedundantRedistributionChain(), _only("par-mismatch-attn_dropout_dp_mp"))
    extra = extra_data(f)
    assert extra["root_cause"]["kind"] == "tuple-beside-layout" and extra["chains"] == 2
    assert extra["root_cause"]["fix"] == {
        "cell": "Attention",
        "op": "Dropout",
        "node": "%21",
        "in_strategy": "((2, 2, 2, 1),)",
        "keeps_tuple": False,  # the tuple takes S's split too
        "device_matrix": 'Layout((2, 2, 2), ("dp", "tp", "cp"))',
    }
    assert extra["waste_bytes"] == (4096 + 8192) * 2 + 8192 * 2
    assert "dim 2, split by BatchMatMul score (net-Attention), is whole in the tuple" in f.message
    assert "on 4 of 8 ranks the block read is one another rank holds" in f.message


# --- round trips across a run of point-wise ops, under auto_parallel's sharding propagation ---------


def test_a_column_split_output_gathered_before_propagated_pointwise_ops_and_sliced_after():
    """GeLU given ((1, 1),) between column-parallel mm1 and row-parallel mm2; propagation gives the
    Add and the Mul its layout. One round trip across the three ops, priced with the backward
    ReduceScatter and the 7/8 of their compute the slice throws away; the hint sets the GeLU, the
    only op of the run with a strategy of its own (par-auto-propagation_cols_fixed is that compile:
    no redistribution left). PC002 leaves the gather alone: it is not used whole."""
    ir, found = _check(RedundantRedistributionChain(), _only("par-auto-propagation_cols_gathered"))
    (f,) = found
    extra = extra_data(f)
    assert (f.node, extra["kinds"], extra["region"]) == ("%2", ["round-trip"], ["%16", "%17"])
    assert extra["fix"]["node"] == "%14" and extra["fix"]["in_strategy"] == "((1, 8),)"
    assert extra["waste_bytes"] == 2 * 7 * 64 * 64 * 4 // 8 and extra["discarded_compute"] == "7/8"
    assert "sharding propagation then gives Add (net), Mul (net) (no strategy of their own)" in f.hint
    assert list(StrategyMismatchFullGather().check(ir)) == []
    for case in ("par-auto-propagation_cols_fixed", "par-auto-propagation_residual_fixed"):
        ir, found = _check(RedundantRedistributionChain(), _only(case))
        assert found == [] and list(StrategyMismatchFullGather().check(ir)) == []


def test_a_replicated_residual_sliced_for_propagated_ops_and_gathered_again():
    _, (f,) = _check(RedundantRedistributionChain(), _only("par-auto-propagation_residual_sliced"))
    extra = extra_data(f)
    assert (f.node, extra["kinds"], extra["region"]) == ("%6", ["round-trip"], ["%4", "%5"])
    assert extra["fix"]["node"] == "%3" and extra["fix"]["in_strategy"] == "((1, 1),)"
    # the AllGather of (8, 32) -> (64, 32) and its ReduceScatter; the slice and its grad are local
    assert extra["waste_bytes"] == 2 * 7 * 64 * 32 * 4 // 8 and extra["discarded_compute"] is None
    assert "StridedSlice Float32(64, 32)->Float32(8, 32) before them" in f.message


def test_under_semi_auto_the_whole_run_is_resharded_and_the_fix_plan_says_so():
    """Without propagation the Add and the Mul keep their data-parallel default unless given a
    strategy: the hint and the fix plan change all three (par-fixed-semi_residual_fixed is that
    compile: no redistribution)."""
    from irlint.fixplan import fix_plan

    ir, (f,) = _check(RedundantRedistributionChain(), _only("par-mismatch-semi_residual_sliced"))
    extra = extra_data(f)
    assert (f.node, extra["region"], extra["fix"]["node"]) == ("%6", ["%4", "%5"], "%3")
    assert [(x["node"], x["in_strategy"]) for x in extra["also_fix"]] == [
        ("%4", "((1, 1), (1, 1))"),
        ("%5", "((1, 1), (1, 1))"),
    ]
    plan = fix_plan([f], fingerprints=False)
    assert [s["shard"] for s in plan["strategies"]] == [
        "ops.ReLU().shard(((1, 1),))",
        "ops.Add().shard(((1, 1), (1, 1)))",
        "ops.Mul().shard(((1, 1), (1, 1)))",
    ]
    ir, found = _check(RedundantRedistributionChain(), _only("par-fixed-semi_residual_fixed"))
    assert found == [] and list(StrategyMismatchFullGather().check(ir)) == []


def test_w1_and_w3_disagreeing_under_propagation_are_two_chains_with_one_fix():
    """auto_parallel with w3 given ((8, 1), (1, 1)) beside a column-parallel w1 ((1, 1), (8, 1)): the
    norm follows w3, so the full_batch input is sliced for it and its output gathered whole again for
    w1 while w3 reads it split (%0 -> norm -> %5), and SiLU's columns (w1's) are gathered whole and
    sliced to the Mul's rows (w3's, %9 ... %21). Both hints set w3 to w1's strategy, one line of the
    fix plan; par-auto-ffn_sharding_propagation_w3_fixed is that compile: no redistribution. The
    loss's gather of the Add's rows (%26) is read whole, not redundant."""
    from irlint.fixplan import fix_plan

    ir, found = _check(RedundantRedistributionChain(), _only("par-auto-ffn_sharding_propagation_wrong_w3"))
    by_node = {f.node: f for f in found}
    assert sorted(by_node) == ["%5", "%9"]
    trip = extra_data(by_node["%5"])
    # AllGather Float32(8, 32) -> (64, 32) over 8 ranks and its backward ReduceScatter %55: 7 KiB each
    assert (trip["kinds"], trip["backward"], trip["waste_bytes"]) == (["round-trip"], ["%55"], 2 * 7 * 8 * 32 * 4)
    assert "Mul norm (net-FFN) (in_strategy ((8, 1), (1,))) computes a slice of a tensor every rank holds whole" in (
        by_node["%5"].message
    )
    assert "for MatMul mm3 (net-FFN), which reads its result split" in by_node["%5"].message
    assert "that graph input %para1_inputs0 already produced" in by_node["%5"].message
    for f in found:
        extra = extra_data(f)
        assert (extra["fix"]["node"], extra["fix"]["in_strategy"]) == ("%4", "((1, 1), (8, 1))")
        assert "set MatMul mm3 (net-FFN) to in_strategy ((1, 1), (8, 1)), the strategy of MatMul mm1 (net-FFN)" in (
            f.hint
        )
    assert [s["shard"] for s in fix_plan(found, fingerprints=False)["strategies"]] == [
        "ops.MatMul().shard(((1, 1), (8, 1)))"
    ]
    assert list(StrategyMismatchFullGather().check(ir)) == []
    ir, found = _check(RedundantRedistributionChain(), _only("par-auto-ffn_sharding_propagation_w3_fixed"))
    assert found == [] and list(StrategyMismatchFullGather().check(ir)) == []
    moved = [k for k in ir.cnodes() if str(ir[k].get("instance") or "").startswith("redistribution_op")]
    assert moved == []


# --- MindFormers Qwen3-MoE under sequence parallel: the Dropout's tuple beside the Layouts ---------

QWEN_MOE = CORPUS.parent / "recompute" / "mf-qwen3-moe-dp4_mp2_ep2_experts"


def _dump(case: Path, tmp_path: Path):
    """The case's rank 0 validate file, unzipped: the source traces are read from the file on demand."""
    import gzip

    (gz,) = sorted((case / "rank_0").glob("21_validate_*.ir.gz"))
    plain = tmp_path / f"{case.name}.ir"
    plain.write_bytes(gzip.decompress(gz.read_bytes()))
    return read_ir(str(plain))


def test_mindformers_sequence_parallel_dropout_is_one_permutation_cause_removed_by_hidden_dropout(tmp_path):
    """MindFormers' mcore Dropout is sharded (cp*tp, dp, 1) beside layout("cp_tp", "dp", "None") and
    the embedding's Transpose ((dp, cp*tp, 1), perm (1, 0, 2)): the same split counts with S and B on
    swapped device axes, so each of the 5 DropoutExt is re-laid at its input and its output. The
    placement reaches the chain ends through the Transpose's perm and through the Cast, TupleGetItem
    and Depend without a strategy; the two chains into the Dropout after attention leave a
    row-parallel MatMul without a strategy and join the cause by their op. 11 chains, 75 KiB with the
    backward (hand count: 12 + 3 + 12 in the embedding, 4 x 6 per layer); hidden_dropout: 0.0
    removes the Dropouts, and the compile with it (..._nodrop) has no chain."""
    ir = _dump(QWEN_MOE, tmp_path)
    (f,) = RedundantRedistributionChain().check(ir)
    extra = extra_data(f)
    assert extra["root_cause"]["kind"] == "tuple-beside-layout" and extra["chains"] == 11
    assert extra["root_cause"]["fix"]["config"] == "hidden_dropout: 0.0"
    assert f.hint.startswith("hidden_dropout: 0.0 (model_config;") and "already agree" not in f.hint
    assert extra["waste_bytes"] == 75 * 1024
    ends = [o["message"].split(" between ", 2)[-1].split(":", 1)[0] for o in extra["occurrences"]]
    assert ends[0] == "Transpose (embedding-LanguageModelEmbedding) and DropoutExt dropout (Default)"
    assert sum(e.startswith("Depend (self_attention-SelfAttention) and DropoutExt") for e in ends) == 2
    assert sum(e.startswith("TupleGetItem (hidden_states_dropout-Dropout) and AddExt") for e in ends) == 4
    # joined by their op, with no claim the producer's placement could not back
    joined = [o["message"] for o in extra["occurrences"] if "Depend (self_attention" in o["message"]]
    assert len(joined) == 2
    for message in joined:
        assert "the op whose tuple is the root cause" in message and "trade blocks is not claimed" in message
        assert "one AlltoAll would" not in message
    # rank = 2 dp + tp after the Transpose, 4 S-block + B-block in the Dropout: ranks 0 and 7 read
    # their own block (rank 1's slice begins at 1 on the gathered dim; checked on the rank 1 and 6 dumps)
    first = extra["occurrences"][0]
    assert first["kinds"] == ["permutation-as-gather"]
    assert "ranks 1–6 read a block another rank holds" in first["message"]
    assert "the other 2 of 8 ranks read the block they hold" in first["message"]
    fixed = _dump(QWEN_MOE.with_name(QWEN_MOE.name + "_nodrop"), tmp_path)
    assert list(RedundantRedistributionChain().check(fixed)) == []
    assert list(StrategyMismatchFullGather().check(fixed)) == []
    # the AlltoAlls of the re-layouts are gone (22 forward in the dump with the Dropouts); what the pass
    # still inserts is the sequence-parallel AllGather before each column-parallel Linear and the loss's

    def relayout_alltoalls(dump):
        return [
            k
            for k in dump.nodes_by_op("AlltoAll")
            if str(dump[k].get("instance") or "").startswith("redistribution_op") and not dump.is_backward(k)
        ]

    assert len(relayout_alltoalls(ir)) == 22 and relayout_alltoalls(fixed) == []
