"""PC001 redundant-redistribution-chain on the synthetic parallel dumps (tests/fixtures/synthetic,
written by make_parallel_fixtures.py in the real text format)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import portable
from irlint.rules.redistribution import discovery, simulation
from irlint.rules.redistribution.redundant_chain import RedundantRedistributionChain

from irlint.findings_json import extra_data
from irlint.read.reader import read_ir
from irlint.rule import example_text
from irlint.runner.config import Config
from irlint.runner.engine import lint

SYNTH = Path(__file__).parent / "fixtures" / "synthetic"
WRONG = SYNTH / "ffn_wrong_strategy_synthetic"
FIXED = SYNTH / "ffn_fixed_strategy_synthetic"
PATTERNS = SYNTH / "redistribution_patterns_synthetic"
RANKS = SYNTH / "ffn_wrong_strategy_ranks_synthetic"


def findings(path: Path):
    ir = read_ir(str(path))
    assert ir.diagnostics == []
    return list(RedundantRedistributionChain().check(ir))


def by_kind(found):
    out = {}
    for f in found:
        for kind in extra_data(f)["kinds"]:
            out.setdefault(kind, []).append(f)
    return out


@pytest.mark.parametrize("path", sorted(SYNTH.rglob("*.ir")), ids=lambda p: str(p.relative_to(SYNTH)))
def test_fixtures_read_cleanly_and_counts_match(path):
    ir = read_ir(str(path))
    assert ir.diagnostics == []
    assert ir.header["total_cnodes"] == ir.cnode_count


def test_gather_split_concat_slice_chain_is_flagged():
    (f,) = findings(WRONG / "21_validate_0076.ir")
    extra = extra_data(f)
    assert f.code == "PC001" and f.op == "AllGather"
    assert extra["kinds"] == ["gather-then-slice"]
    # 7 foreign (16, 8) float32 pieces arrive, a (2, 64) float32 slice survives
    assert extra["moved_bytes"] == 7 * 16 * 8 * 4
    assert extra["surviving_bytes"] == 2 * 64 * 4
    forward = [r for r in f.related if not r.scope.startswith("Gradients/")]
    assert [r.op for r in forward] == ["Mul", "Split", "Concat", "StridedSlice", "MatMul"]
    assert "((8, 1), (1, 1))" in f.hint and "set MatMul (w2-Linear) to in_strategy ((1, 8), (1, 8))" in f.hint
    # the Square after w2 reads rows split 8: the hint says that one layout change is left
    assert "1 other layout change around the two ops would remain" in f.hint
    assert f.scope.startswith("Default/") and "w2-Linear" in f.scope


def test_backward_transpose_is_part_of_the_finding_not_a_finding_of_its_own():
    (f,) = findings(WRONG / "21_validate_0076.ir")
    backward = [r for r in f.related if r.scope.startswith("Gradients/")]
    assert [r.op for r in backward] == ["AllGather", "StridedSlice"]
    assert all(r.note.startswith("backward transpose") for r in backward)
    extra = extra_data(f)
    assert extra["backward_moved_bytes"] == 7 * 2 * 64 * 4
    assert "7.00 KiB per step in all" in f.message


def test_pattern_kinds_each_flagged():
    kinds = by_kind(findings(PATTERNS / "21_validate_0076.ir"))
    assert set(kinds) == {"alltoall-undone", "gather-resplit", "repeated-gather"}
    (a2a,) = kinds["alltoall-undone"]
    assert [r.op for r in a2a.related] == ["MatMul", "AlltoAll", "Softmax"]
    (resplit,) = kinds["gather-resplit"]
    assert extra_data(resplit)["surviving_bytes"] == 2 * 64 * 2
    (twice,) = kinds["repeated-gather"]
    assert extra_data(twice)["gathers"] == 2
    assert {r.scope.rsplit("/", 2)[-2] for r in twice.related if r.note.startswith("consumer")} == {
        "wq-Linear",
        "wk-Linear",
    }


def test_corrected_strategy_and_scheme_communication_are_silent():
    ir = read_ir(str(FIXED / "21_validate_0076.ir"))
    present = {ir[k]["op"] for k in ir.cnodes()}
    # the fixture does hold every kind of communication the scheme needs
    assert {"AllReduce", "AllGather", "ReduceScatter", "_MirrorOperator", "_VirtualDiv", "Send", "Receive"} <= present
    assert list(RedundantRedistributionChain().check(ir)) == []


def test_user_slice_after_gather_with_own_strategy_is_not_part_of_a_chain():
    found = findings(PATTERNS / "21_validate_0076.ir")
    for f in found:
        for r in f.related:
            if r.op == "StridedSlice":
                assert r.note.startswith("producer")


@pytest.mark.parametrize("folder", [WRONG, PATTERNS], ids=lambda p: f"{p.name}-PC001")
def test_snapshot_of_flagged_fixtures(folder, snapshot):
    found = findings(folder / "21_validate_0076.ir")
    assert [portable(f.to_dict(), SYNTH) for f in found] == snapshot


def test_folder_reports_each_chain_once():
    report = lint([str(WRONG)], Config(select=["PC001"]))
    pc = [f for f in report.findings if f.code == "PC001"]
    assert len(pc) == 1
    assert pc[0].file.endswith("21_validate_0076.ir")


def test_rank_folders_merge_into_one_finding():
    report = lint([str(RANKS)], Config(select=["PC001"]))
    pc = [f for f in report.findings if f.code == "PC001"]
    assert len(pc) == 1
    assert pc[0].ranks == (0, 1)


def test_examples(tmp_path):
    rule = RedundantRedistributionChain()
    for i, text in enumerate(map(example_text, rule.VALID + rule.INVALID)):
        path = tmp_path / f"{i}" / "21_validate_0001.ir"
        path.parent.mkdir()
        path.write_text(text, encoding="utf-8")
        ir = read_ir(str(path))
        assert ir.diagnostics == []
        n = len(list(rule.check(ir)))
        assert (n == 0) if i < len(rule.VALID) else (n >= 1)


# --- round trips and their near misses ---------------------------------------------------------

ROUND_TRIPS = SYNTH / "redistribution_round_trips_synthetic" / "21_validate_0076.ir"
NEAR_MISSES = SYNTH / "redistribution_near_misses_synthetic" / "21_validate_0076.ir"


def node(ir, op, nth=0):
    return ir.nodes_by_op(op)[nth]


def test_split_concat_round_trip_is_flagged_without_communication():
    (f,) = by_kind(findings(ROUND_TRIPS))["split-concat-round-trip"]
    extra = extra_data(f)
    assert f.op == "Split" and extra["kinds"] == ["split-concat-round-trip"]
    assert extra["moved_bytes"] == 0 and extra["entry"] == extra["exit"] == "Float16(16, 8)"
    assert [r.op for r in f.related] == ["MatMul", "Concat", "SiLU"]
    assert "along axis 1 only reassemble" in f.message and "no communication" in f.message


def test_alltoall_pair_around_reshape_is_flagged_with_a_strategy_hint():
    (f,) = by_kind(findings(ROUND_TRIPS))["alltoall-undone"]
    assert f.op == "AlltoAll"
    assert [r.op for r in f.related] == ["Mul", "Reshape", "AlltoAll", "Softmax"]
    assert "around Reshape Float16(2, 4, 2, 16)->Float16(4, 2, 2, 16)" in f.message
    # producer outputs (1, 1, 1, 8), the consumer asks for (1, 1, 8, 1): a concrete fix, not "they agree"
    assert "set Softmax (attention-Attention) to in_strategy ((1, 1, 1, 8),)" in f.hint
    assert "already agree" not in f.hint
    # 7/8 of each (4, 2, 2, 16) float16 output arrives from other ranks, twice
    assert extra_data(f)["moved_bytes"] == 2 * (2 * 4 * 2 * 16 * 2) * 7 // 8


def test_near_misses_are_silent():
    ir = read_ir(str(NEAR_MISSES))
    assert ir.diagnostics == []
    assert list(RedundantRedistributionChain().check(ir)) == []


def test_near_miss_split_feeds_different_compute_ops():
    ir = read_ir(str(NEAR_MISSES))
    split = node(ir, "Split")
    users = [u for item in ir.consumers(split) for u in ir.consumers(item)]
    assert sorted(ir[u]["op"] for u in users) == ["Neg", "SiLU"]
    assert not ir.nodes_by_op("Concat")


def test_compute_between_two_alltoall_breaks_the_run():
    """MoE dispatch / combine: reverse dims on one group, so only the expert MatMul between them
    keeps the pair from being an undo."""
    ir = read_ir(str(NEAR_MISSES))
    single, dispatch, combine = ir.nodes_by_op("AlltoAll")
    assert simulation._alltoall_dims(ir, combine)[:2] == simulation._alltoall_dims(ir, dispatch)[1::-1]
    assert simulation._alltoall_dims(ir, combine)[2:] == simulation._alltoall_dims(ir, dispatch)[2:]
    assert discovery.collect_chain(ir, dispatch).nodes == [dispatch]
    assert discovery.collect_chain(ir, combine).nodes == [combine]
    (expert,) = ir.nodes_by_op("BatchMatMul")
    # even inside one run, the walk back from combine stops at the compute op
    assert simulation._alltoall_undone(ir, {dispatch, expert, combine}, combine) is None
    # the lone AlltoAll before Softmax is a real layout change: its run is that one op
    assert discovery.collect_chain(ir, single).nodes == [single]


def test_reshape_that_splits_a_moved_dim_stops_the_undo():
    ir = read_ir(str(ROUND_TRIPS))
    reshape = node(ir, "Reshape")
    assert simulation._reshape_kept_dims(ir, reshape) == {2: 2, 3: 3}
    first, second = ir.nodes_by_op("AlltoAll")
    members = {first, reshape, second}
    assert simulation._alltoall_undone(ir, members, second) == first
    # (2, 4, 2, 16) -> (4, 2, 4, 8) cuts dim 3: the second AlltoAll no longer moves the same data
    src = ir[reshape]["in_types"][0]
    ir[reshape]["out_type"] = type(src)(src.kind, src.dtype, (4, 2, 4, 8), src.raw)
    assert simulation._alltoall_undone(ir, members, second) is None


def test_snapshot_of_round_trips(snapshot):
    assert [portable(f.to_dict(), SYNTH) for f in findings(ROUND_TRIPS)] == snapshot
