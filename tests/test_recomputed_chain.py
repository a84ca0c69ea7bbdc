"""A forward redistribution chain recompute runs again in backward (rules/redistribution/
recomputed_chain.py): priced into the forward chain's PC001 finding, never reported apart.

Real case ``mf-cp2_b2_select_wq_reshape`` (MindFormers 2.1.0 Llama, dp2 x mp2 x cp2, 2 sequences per
dp replica, ``select_recompute: ['attention\\.wq\\.reshape']``): the batch-merge chain before wq
(attention_norm -> AllGather over cp -> ... -> wq's Reshape -> StridedSlice) carries the Reshape's tag
and is copied into the backward half, where the copy feeds wq's weight-gradient MatMul. Hand count of
each copy's AllGather: (1, 2, 1, 8, 64) -> (2, 2, 1, 8, 64) float32 over 2 ranks: 8192 - 4096 = 4096
bytes, one per layer. The chains' own collectives and backward transposes waste 180224 bytes per step,
16 KiB more than without the key (``par-mindformers-llama_cp2_b2``): the tagged wq chain is no longer
merged with wk/wv's and gathers on its own (4096 bytes forward + 4096 backward per layer).
"""

from __future__ import annotations

from conftest import TESTS
from irlint.rules.redistribution.discovery import collect_chain
from irlint.rules.redistribution.recomputed_chain import is_copy, kept_type, rerun_of

from irlint.accounts.comm import account, redistribution_findings
from irlint.findings_json import extra_data
from irlint.runner.discover import discover
from irlint.runner.engine import read_dump

CASE = TESTS / "fixtures" / "recompute" / "mf-cp2_b2_select_wq_reshape"


def _ir():
    (f,) = discover([str(CASE)])[0]
    return read_dump(f)


def _node(ir, node, half):
    return next(k for k in ir.cnodes() if ir[k]["id"] == node and half in ir[k]["graph"])


def test_rerun_is_priced_into_the_forward_chain_with_its_key():
    ir = _ir()
    (finding,) = [f for f in redistribution_findings(ir) if f.code == "PC001"]
    extra = extra_data(finding)
    assert extra["recompute"] == {"keys": [r"attention\.wq\.reshape"], "bytes": 2 * 4096, "copies": ["%378", "%170"]}
    assert extra["waste_bytes"] == 180224 + 2 * 4096
    assert r"run twice because of key attention\.wq\.reshape: +8.00 KiB in backward" in finding.message
    by_node = {o["node"]: o for o in extra["occurrences"]}
    for forward, copy in (("%18", "%378"), ("%182", "%170")):
        assert by_node[forward]["recompute"] == {"keys": [r"attention\.wq\.reshape"], "bytes": 4096, "copies": [copy]}
        assert r"runs twice because of key attention\.wq\.reshape: +4.00 KiB" in by_node[forward]["message"]
    # never reported apart: no finding, no occurrence, anchored in the backward half
    assert not any("◂" in o["graph"] for o in extra["occurrences"])
    assert "? bytes" not in finding.message and not any("? bytes" in o["message"] for o in extra["occurrences"])


def test_comm_counts_the_copies_as_the_findings_waste():
    ir = _ir()
    acc = account(ir)
    copies = {ir[c.node]["id"]: c for c in acc.collectives if c.rerun is not None}
    assert set(copies) == {"%170", "%378"}
    assert all(c.waste_bytes == c.received_bytes == 4096 and c.findings == ["PC001"] for c in copies.values())
    assert {c.rerun.key for c in copies.values()} == {r"attention\.wq\.reshape"}
    assert acc.waste_bytes == 180224 + 8192


def test_copy_chain_reads_as_a_copy_and_still_has_bytes_kept():
    ir = _ir()
    chain = collect_chain(ir, _node(ir, "%378", "◂"))
    assert is_copy(ir, chain.nodes)
    assert chain.consumers == []  # its reader, wq's weight-gradient MatMul, is backward
    kept = kept_type(ir, chain.nodes)  # the StridedSlice's (16, 64) float32
    assert kept is not None and kept.nbytes == 16 * 64 * 4
    forward = collect_chain(ir, _node(ir, "%18", "▸"))
    assert not is_copy(ir, forward.nodes)
    assert [(ir[c]["id"], b) for c, b in rerun_of(ir, forward.nodes).copies] == [("%378", 4096)]
