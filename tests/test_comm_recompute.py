"""Communication recompute runs again in backward (irlint/accounts/recompute_comm.py), in
``irlint comm`` and ``irlint diff``, against hand counts on real MindFormers 2.1.0 compiles.

Hand counts, from each copy's type line and group (as a forward collective is counted):
- ``mf-dp2_mp4_sp_comm_recompute`` (sequence parallel, ``select_comm_recompute: ['.*\\.norm']``): per
  layer one AllGather copy (2, 4, 64) -> (8, 4, 64) float16 over 4 ranks: 4096 - 1024 = 3072 bytes.
- ``mf-moe-dp4_mp2_ep2_ffn_recompute`` (whole-cell key ``feed_forward``, the MoE cell): per layer two
  AlltoAll copies, output (1, 2, 2, 16, 64) float32 over split_count 2: 16384 / 2 = 8192 bytes each,
  and w2's AllReduce copy (1, 2, 32, 64) float32 over 2 ranks: 2 * 1/2 * 16384 = 16384 bytes.
- ``mf-qwen3-moe-dp4_mp2_ep2_experts`` (Qwen3-MoE mcore, whole-cell key ``mlp\\.experts``; the token
  dispatcher's AlltoAllV cells are built inside the experts' Morph and print ``Default/AlltoAllV-opN``):
  per layer the dispatch AlltoAllV copy sends (1536) float16 = 3072 bytes over the 2 peers of its
  (2) send list: 1536 received (balanced routing); the routing map's (24) float32: 96 / 2 = 48; the
  tokens-per-expert AlltoAll (1, 4) -> (2, 2) float32 over split_count 2: 16 / 2 = 8; the combine
  (dynamic input, the dispatch's lists swapped) 1536: 3128 bytes per layer, 6256 for the 2 layers.
- ``mf-dp2_mp4_po_zero3_full`` (full recompute, the parallel optimizer at zero3 with
  ``parallel_optimizer_comm_recompute``): per layer the AllGather copies of wq, wk, wv (16, 64) and wo
  (64, 16) float16 over 2 ranks receive 1024 bytes each, of w1, w3 (32, 64) and w2 (64, 32) 2048 each:
  10,240 per layer; wo's and w2's AllReduce copies (``mp_comm_recompute``) 6144 bytes each.
"""

from __future__ import annotations

import json

from click.testing import CliRunner
from conftest import TESTS

from irlint.accounts.comm import account, as_dict
from irlint.cli import main
from irlint.runner.discover import discover
from irlint.runner.engine import read_dump

RECOMPUTE = TESTS / "fixtures" / "recompute"
SP = RECOMPUTE / "mf-dp2_mp4_sp_comm_recompute"
MOE = RECOMPUTE / "mf-moe-dp4_mp2_ep2_ffn_recompute"
QWEN_MOE = RECOMPUTE / "mf-qwen3-moe-dp4_mp2_ep2_experts"
PO_ZERO3 = RECOMPUTE / "mf-dp2_mp4_po_zero3_full"
NO_COMM_RECOMPUTE = RECOMPUTE / "mf-dp2_mp4_select_irlint_keys_folded"
SCHEMA = TESTS / "fixtures" / "schemas"


def _ir(case):
    (f,) = discover([str(case)])[0]  # reads a .ir.gz as the commands do
    return read_dump(f)


def comm(*args):
    return CliRunner().invoke(main, ["comm", *map(str, args)], catch_exceptions=False)


def test_select_comm_recompute_allgather_is_priced_under_the_norms_key():
    ir = _ir(SP)
    data = as_dict(ir, account(ir))
    assert data["recompute_bytes"] == 2 * 3072
    (row,) = data["recompute"]
    assert (row["key"], row["via"], row["ops"], row["received_bytes"], row["layers"], row["by_kind"]) == (
        r"ffn_norm\.norm",
        "select_comm_recompute",
        2,
        6144,
        ["0", "1"],
        {"AllGather": 6144},
    )
    assert {r["layer"]: r["recompute_bytes"] for r in data["layers"]} == {"0": 3072, "1": 3072, "outside": 0}
    copies = [c for c in data["collectives"] if c["recompute_key"]]
    # each copy is a backward AllGather in the backward half, naming the forward AllGather it repeats
    assert sorted((c["node"], c["recomputes"]) for c in copies) == [("%240", "%85"), ("%61", "%190")]
    assert all(c["direction"] == "backward" and "◂" in c["graph"] and "▸" in c["recomputes_graph"] for c in copies)
    # the tagged forward AllGather nothing in backward re-runs (wo's output) is no re-run
    assert not any(c["node"] == "%74" and c["recompute_key"] for c in data["collectives"])


def test_whole_cell_key_reruns_the_expert_alltoall_in_backward():
    ir = _ir(MOE)
    acc = account(ir)
    data = as_dict(ir, acc)
    assert data["recompute_bytes"] == 2 * (2 * 8192 + 16384)
    rows = {r["key"]: r for r in data["recompute"]}
    assert rows[r"feed_forward\.alltoall"]["received_bytes"] == 4 * 8192
    assert rows[r"feed_forward\.alltoall"]["ops"] == 4
    assert rows[r"feed_forward\.ffn\.w2\.allreduce"]["received_bytes"] == 2 * 16384
    assert {r["via"] for r in data["recompute"]} == {"select_recompute"}
    # the key a whole-cell key matches as a prefix: every re-run is under the MoE cell
    assert all(k.startswith(r"feed_forward\.") for k in rows)
    # re-run bytes are part of the backward bytes, not added again
    assert data["received_bytes"] == data["forward_bytes"] + data["backward_bytes"]
    assert data["recompute_bytes"] <= data["backward_bytes"]
    assert acc.by_kind()["AlltoAll"]["backward_bytes"] >= 4 * 8192


def test_no_recomputed_communication_gives_zero_and_no_column():
    ir = _ir(NO_COMM_RECOMPUTE)
    data = as_dict(ir, account(ir))
    assert data["recompute_bytes"] == 0 and data["recompute"] == []
    text = comm(NO_COMM_RECOMPUTE, "--top", "0").output
    header = next(line for line in text.splitlines() if "received" in line and "backward" in line)
    assert "recompute" not in header and "Re-run in backward" not in text


def test_comm_text_shows_the_recompute_column_and_the_keys():
    text = comm(MOE, "--top", "0").output
    header = next(line for line in text.splitlines() if "received" in line and "backward" in line)
    total = next(line for line in text.splitlines() if line.startswith("│ total"))
    assert header.split()[-2] == "recompute" and total.split()[-3:-1] == ["64.0", "KiB"]
    assert "Re-run in backward by recompute, per key" in text
    assert r"feed_forward\.alltoall" in text and "AlltoAll 32.0 KiB" in text


def test_comm_json_with_reruns_matches_its_schema():
    import jsonschema

    schema = json.loads((SCHEMA / "irlint-comm-1.json").read_text(encoding="utf-8"))
    for case in (SP, MOE):
        result = comm(case, "--format", "json")
        assert result.exit_code == 0
        jsonschema.validate(json.loads(result.output), schema)


def test_diff_compares_recomputed_communication_per_key():
    import jsonschema

    result = CliRunner().invoke(
        main, ["diff", str(NO_COMM_RECOMPUTE), str(SP), "--format", "json"], catch_exceptions=False
    )
    data = json.loads(result.output)
    jsonschema.validate(data, json.loads((SCHEMA / "irlint-diff-1.json").read_text(encoding="utf-8")))
    (rank,) = data["ranks"]
    c = rank["communication"]
    assert (c["recompute_before"], c["recompute_after"]) == (0, 6144)
    assert c["recompute_keys"] == [
        {
            "key": r"ffn_norm\.norm",
            "via": "select_comm_recompute",
            "before": 0,
            "after": 6144,
            "ops_before": 0,
            "ops_after": 2,
        }
    ]
    text = CliRunner().invoke(main, ["diff", str(NO_COMM_RECOMPUTE), str(SP)], catch_exceptions=False).output
    assert "communication recompute runs again in backward: 0 bytes -> 6.00 KiB" in text


def test_the_experts_alltoallv_of_a_real_qwen3_moe_under_the_whole_cell_key():
    ir = _ir(QWEN_MOE)
    # MindSpore 2.10's symbol engine lines of an MoE validate file are read, nothing else is left over
    assert ir.diagnostics == [] and ir.symbol_engines
    data = as_dict(ir, account(ir))
    (row,) = data["recompute"]
    assert (row["key"], row["via"], row["ops"], row["received_bytes"], row["layers"]) == (
        r"mlp\.experts",
        "select_recompute",
        8,
        2 * 3128,
        ["0", "1"],
    )
    assert {r["layer"]: r["recompute_bytes"] for r in data["layers"]} == {"0": 3128, "1": 3128, "outside": 0}
    per_copy = sorted((c["layer"], c["op"], c["received_bytes"]) for c in data["collectives"] if c["recompute_key"])
    assert per_copy == sorted(
        [(layer, "AlltoAllV", 1536) for layer in "0011"]
        + [(layer, "AlltoAllV", 48) for layer in "01"]
        + [(layer, "AlltoAll", 8) for layer in "01"]
    )
    # the combine and the gradients (dynamic on both sides) take the dispatch's volume: none unsized,
    # and each AlltoAllV says its bytes are an estimate (text: one line naming them)
    assert all(c["received_bytes"] is not None for c in data["collectives"])
    estimated = [c for c in data["collectives"] if c["received_estimated"]]
    assert len(estimated) == 16 and {c["op"] for c in estimated} == {"AlltoAllV"}
    text = comm(QWEN_MOE).output
    assert "16 AlltoAllV of data-dependent size counted as (n-1)/n of what the rank sends" in text


def test_the_parallel_optimizers_allgather_rerun_is_named_by_its_option():
    # full recompute re-runs the layers, but the weights' AllGathers run again because of the parallel
    # optimizer's option: MindSpore names them parallel_optimizer_allgather and tags them recompute
    ir = _ir(PO_ZERO3)
    data = as_dict(ir, account(ir))
    rows = {row["key"]: row for row in data["recompute"]}
    assert set(rows) == {"parallel_optimizer_comm_recompute", "mp_comm_recompute"}
    po = rows["parallel_optimizer_comm_recompute"]
    assert (po["via"], po["ops"], po["received_bytes"], po["layers"], po["by_kind"]) == (
        "parallel_optimizer_comm_recompute",
        14,
        2 * 10240,
        ["0", "1"],
        {"AllGather": 2 * 10240},
    )
    assert rows["mp_comm_recompute"]["by_kind"] == {"AllReduce": 2 * 6144}
    gathers = [c for c in data["collectives"] if c["recompute_via"] == "parallel_optimizer_comm_recompute"]
    assert {c["instance"] for c in gathers} == {"parallel_optimizer_allgather"}
    assert all(c["direction"] == "backward" for c in gathers)
    text = comm(PO_ZERO3).output
    assert "parallel_optimizer_comm_recompute" in text
