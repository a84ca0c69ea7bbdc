"""Root causes of redistribution chains (issue 30) on real MindFormers 2.1.0 compiles: the chains one
config choice makes are one PC001 finding with every chain as an occurrence, counted whole, and the
hint names the config that removes the cause. Byte figures are the hand counts of the manifests."""

from __future__ import annotations

import pytest
from conftest import CORPUS, quiet_config
from irlint.rules.redistribution.redundant_chain import RedundantRedistributionChain

from irlint.accounts.received import received_bytes
from irlint.findings_json import extra_data
from irlint.runner.discover import discover
from irlint.runner.engine import lint, read_dump


def _file(case: str, rank: int = 0):
    (f,) = [f for group in discover([str(CORPUS / case / f"rank_{rank}")]) for f in group if f.stage.name == "validate"]
    return read_dump(f)


def _found(case: str, rank: int = 0):
    return list(RedundantRedistributionChain().check(_file(case, rank)))


@pytest.mark.parametrize("rank", [0, 1, 2])
def test_batch_merge_is_one_finding_with_every_chain(rank):
    """dp2 x mp2 x cp2, 2 sequences per dp replica: 10 chains per layer and one before lm_head,
    the same on ranks of every cp and mp index."""
    (f,) = _found("par-mindformers-llama_cp2_b2", rank)
    extra = extra_data(f)
    assert extra["root_cause"]["kind"] == "batch-merge"
    assert extra["root_cause"]["fix"]["runner_config.batch_size"] == 1
    assert extra["root_cause"]["fix"]["sequences_per_replica"] == 2
    assert f.node == "%18" and extra["chains"] == 21
    assert [o["node"] for o in extra["occurrences"]][:10] == [
        "%18",
        "%29",
        "%49",
        "%84",
        "%96",
        "%114",
        "%125",
        "%133",
        "%139",
        "%151",
    ]
    # hand count: 38912 bytes forward per layer, 4096 before lm_head, the same again backward
    assert extra["waste_bytes"] == 2 * (2 * 38912 + 4096) == 163840
    assert "runner_config.batch_size: 1" in f.hint and "gradient_accumulation_steps" in f.hint
    assert "enable_alltoall" not in f.hint and "make the two strategies agree" not in f.hint
    # every chain's nodes are evidence of the one finding
    assert {o["node"] for o in extra["occurrences"]} <= {r.node for r in f.related}


def test_batch_merge_on_several_ranks_is_one_finding_on_those_ranks():
    report = lint([str(CORPUS / "par-mindformers-llama_cp2_b2")], quiet_config())
    hits = [f for f in report.findings if f.code == "PC001"]
    assert len(hits) == 1 and hits[0].ranks == (0, 1, 2)


@pytest.mark.parametrize("case", ["par-mindformers-llama_cp2_b1", "par-mindformers-llama_sp_b1"])
def test_one_sequence_per_replica_has_no_chain(case):
    assert _found(case) == []


def test_sequence_parallel_batch_merge():
    (f,) = _found("par-mindformers-llama_seq_parallel")
    extra = extra_data(f)
    assert extra["root_cause"]["kind"] == "batch-merge" and extra["chains"] == 4
    assert extra["waste_bytes"] == 4 * 2 * 6144


def test_rope_tuple_beside_layout_is_one_finding_with_q_and_k():
    (f,) = _found("par-mindformers-llama_cp2_b1_rope_slice")
    extra = extra_data(f)
    cause = extra["root_cause"]
    assert cause["kind"] == "tuple-beside-layout"
    assert cause["fix"]["cell"] == "RotaryEmbedding" and cause["fix"]["config"] == "use_rope_slice: False"
    assert cause["fix"]["layout"] == 'layout("dp", "mp", "cp", "None") of Layout((2, 2, 2), ("dp", "cp", "mp"))'
    # q and k, into the slice and out of the concat, 2 layers
    assert [o["node"] for o in extra["occurrences"]] == ["%26", "%35", "%57", "%66", "%137", "%146", "%165", "%174"]
    assert extra["waste_bytes"] == (3072 + 2048) * 2 * 2 * 2 == 40960
    assert f.hint.startswith("use_rope_slice: False")
    assert "batch-merge" not in f.message


def test_gather_resplit_makes_no_claim_about_which_block():
    """The slice's begin depends on the rank (0 on cp index 0, 16 on cp index 1 here): a message
    about what it keeps must hold on every rank, so it says how much, never which."""
    for rank in (0, 1, 2):
        (f,) = _found("par-mindformers-llama_cp2_b2", rank)
        assert "already had" not in f.message
        assert all("already had" not in o["message"] for o in extra_data(f)["occurrences"])


def test_two_causes_in_one_compile_are_two_findings():
    found = _found("par-mindformers-llama_cp2_b2_rope_slice")
    causes = {extra_data(f)["root_cause"]["kind"]: extra_data(f) for f in found}
    assert len(found) == 2 and set(causes) == {"batch-merge", "tuple-beside-layout"}
    assert causes["batch-merge"]["chains"] == 21 and causes["batch-merge"]["waste_bytes"] == 163840
    # 2 sequences per rank: twice the RoPE bytes of the 1-sequence compile
    assert causes["tuple-beside-layout"]["chains"] == 8 and causes["tuple-beside-layout"]["waste_bytes"] == 2 * 40960


def test_pre_cse_copies_of_step_parallel_end_are_not_findings():
    """step_parallel_end prints one AllGather per RoPE slice (global shapes, no output type);
    CSE merges them before 21_validate: nothing is received twice."""
    (f,) = [
        f
        for group in discover([str(CORPUS / "par-mindformers-llama_cp2_b2_rope_slice" / "rank_0")])
        for f in group
        if f.stage.name == "step_parallel_end"
    ]
    ir = read_dump(f)
    gathers = [k for k in ir.nodes_by_op("AllGather") if ir[k]["id"] in ("%57", "%337")]
    assert len(gathers) == 2 and all(not received_bytes(ir, k) for k in gathers)
    found = list(RedundantRedistributionChain().check(ir))
    assert not [x for x in found if "repeated-gather" in extra_data(x).get("kinds", ())]


class _Nodes(dict):
    """The two ends of a chain, as the rule reads them: op, kind and in_strategy."""


def _merge_cause(rows: int, local: tuple, add_strategy: tuple):
    from irlint.rules.redistribution.chain import Chain
    from irlint.rules.redistribution.root_cause import batch_merge

    from irlint.read.values import TensorType

    ir = _Nodes(
        {
            1: {"kind": "cnode", "op": "MatMul", "id": "%1", "scope": "a/wo-Linear/MatMul-op0"},
            2: {
                "kind": "cnode",
                "op": "Add",
                "id": "%2",
                "scope": "a/Add-op0",
                "primitive_attrs": {"in_strategy": (add_strategy, add_strategy)},
            },
        }
    )
    chain = Chain(
        nodes=[],
        producer=1,
        consumers=[(2, 0)],
        entry=TensorType("Tensor", "Float32", (rows, 64), ""),
        exit=TensorType("Tensor", "Float32", local, ""),
    )
    return batch_merge(ir, chain)


def test_batch_merge_needs_rows_cut_inside_a_replica_and_more_than_one_sequence():
    # 2 sequences per replica, sequence split 2, rows split 4 (dp x cp): the cause
    assert _merge_cause(16, (2, 8, 64), (2, 2, 1)).key == ("batch-merge", 2)
    # rows split by the batch only (whole sequences): a plain mismatch, batch_size 1 would not help
    assert _merge_cause(32, (2, 8, 64), (2, 2, 1)) is None
    # one sequence per replica: no cause
    assert _merge_cause(8, (1, 8, 64), (2, 2, 1)) is None
    # sequence not split
    assert _merge_cause(16, (2, 16, 64), (2, 1, 1)) is None
