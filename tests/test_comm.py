"""The communication account (irlint/comm.py) and ``irlint comm``, against hand counts on real
parallel dumps (MindSpore 2.10, 8 devices, fp32: 4 bytes an element).

Each figure is derived from the generator's shapes: a ring AllReduce over n ranks receives
2·(n-1)/n of its input, an AllGather its output minus its input, a ReduceScatter its input minus
its output, a Receive its output.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import CORPUS, SHARED_CORPUS, TESTS

from irlint.accounts.comm import account, as_dict, received_bytes, redistribution_findings
from irlint.cli import main
from irlint.findings_json import extra_data
from irlint.read.reader import read_ir
from irlint.runner.discover import discover

F32 = 4
SCHEMA = TESTS / "fixtures" / "schemas" / "irlint-comm-1.json"


def _only(case: str) -> Path:
    (path,) = sorted((CORPUS / case / "rank_0").glob("21_validate_*.ir"))
    return path


def run(*args):
    return CliRunner().invoke(main, ["comm", *map(str, args)], catch_exceptions=False)


def by_node(acc, ir):
    return {ir[c.node]["id"]: c for c in acc.collectives}


# --- the model ---------------------------------------------------------------------------------


def test_consistent_sequence_parallel_net_has_no_waste_and_the_wrong_one_the_pc_total():
    """Same net, one strategy apart (the ReLU after w2): the wrong one's scheme is the consistent
    one's whole communication, the rest is exactly what the PC findings name."""
    good = account(read_ir(str(_only("par-fixed-sp_then_rows"))))
    ir = read_ir(str(_only("par-mismatch-sp_then_cols")))
    bad = account(ir)
    seq = 64 * 32 * F32 * 7 // 8  # an (8, 32) <-> (64, 32) gather or scatter over 8 ranks: 7168
    # SP AllGather %3, SP ReduceScatter %12 and their transposes; loss AllReduce of a scalar
    # (2·7/8·4 = 7); the norm weight's gradient AllReduce (2·7/8·128 = 224)
    assert good.waste_bytes == 0
    assert good.received_bytes == good.scheme_bytes == 4 * seq + 7 + 224
    assert bad.waste_bytes == sum(extra_data(f)["waste_bytes"] for f in bad.findings) == 4 * seq
    assert bad.scheme_bytes == good.received_bytes
    assert bad.received_bytes == 8 * seq + 7 + 224
    assert sorted(ir[c.node]["id"] for c in bad.collectives if c.waste_bytes) == ["%13", "%16", "%47", "%50"]


def test_backward_collectives_name_the_forward_op_they_transpose():
    ir = read_ir(str(_only("par-mismatch-sp_then_cols")))
    nodes = by_node(account(ir), ir)
    transposed = {n: ir[c.transposes]["id"] for n, c in nodes.items() if c.transposes is not None}
    # grad_redistribution ReduceScatters of the AllGathers, the SP AllGather of the ReduceScatter
    assert transposed == {"%47": "%16", "%50": "%13", "%51": "%12", "%65": "%3"}
    assert [n for n, c in nodes.items() if not c.backward] == ["%3", "%12", "%13", "%16", "%31"]


def test_allreduce_that_is_sliced_wastes_what_a_reduce_scatter_would_not_move():
    ir = read_ir(str(_only("par-mismatch-allreduce_then_rows")))
    acc = account(ir)
    nodes = by_node(acc, ir)
    whole = 64 * 16 * F32
    ring, scatter = 2 * whole * 7 // 8, whole * 7 // 8
    assert nodes["%5"].received_bytes == ring and nodes["%5"].waste_bytes == ring - scatter
    assert nodes["%15"].waste_bytes == ring - scatter  # its gradforward AllReduce
    assert nodes["%9"].waste_bytes == 0  # the loss AllReduce
    (f,) = acc.findings
    assert extra_data(f)["waste_bytes"] == acc.waste_bytes == 2 * (ring - scatter)


def test_full_gather_of_pc002_is_counted_as_waste():
    ir = read_ir(str(_only("par-mismatch-ffn_col_col")))
    acc = account(ir)
    (f,) = acc.findings
    assert f.code == "PC002"
    gathered = 64 * 64 * F32 * 7 // 8  # (64, 8) -> (512, 8) forward, its ReduceScatter backward
    assert acc.waste_bytes == extra_data(f)["waste_bytes"] == 2 * gathered


def test_receive_counts_its_output_and_send_nothing():
    """MindFormers Llama with 2 pipeline stages: a Receive gets the tensor its type line names, a
    Send receives nothing."""
    ir = read_ir(str(sorted((CORPUS / "par-mindformers-llama_pp2_mp4" / "rank_0").glob("21_validate_*.ir"))[0]))
    sends, receives = ir.nodes_by_op("Send"), ir.nodes_by_op("Receive")
    assert sends and receives
    assert {received_bytes(ir, k) for k in sends} == {0}
    for k in receives:
        assert received_bytes(ir, k) == ir[k]["out_type"].nbytes > 0
    kinds = {c.kind for c in account(ir).collectives}
    assert "Send/Receive" in kinds


def _par_files() -> list:
    roots = [p for root in (CORPUS, SHARED_CORPUS) if root.is_dir() for p in sorted(root.glob("par-*"))]
    return [f for root in roots for f in discover([str(root)])[0] if f.stage.name == "validate"]


def test_every_finding_byte_is_counted_once_and_consistent_cases_have_no_waste():
    from irlint.runner.engine import read_dump

    files = _par_files()
    assert len(files) >= 20
    for f in files:  # the MindFormers MoE dumps are gzip-compressed
        path, ir = f.path, read_dump(f)
        assert ir.diagnostics == [], path
        acc = account(ir)
        named = sum(extra_data(x).get("waste_bytes", 0) for x in acc.findings)
        assert acc.waste_bytes == named, path
        assert acc.scheme_bytes + acc.waste_bytes == acc.received_bytes
        if "par-fixed-" in path or path.endswith("llama_dp2_mp4/rank_0/21_validate_0093.ir"):
            assert acc.waste_bytes == 0, path


def test_account_takes_the_findings_it_is_given():
    ir = read_ir(str(_only("par-mismatch-sp_then_cols")))
    assert account(ir, findings=[]).waste_bytes == 0
    assert account(ir, findings=redistribution_findings(ir)).waste_bytes == 4 * 7168


# --- the command ---------------------------------------------------------------------------------


def test_comm_json_contract():
    data = json.loads(run(CORPUS / "par-mismatch-sp_then_cols", "--format", "json").output)
    assert data["version"] == 1
    (entry,) = data["files"]
    assert entry["stage"] == "validate" and entry["rank"] == 0
    assert (entry["received_bytes"], entry["scheme_bytes"], entry["waste_bytes"]) == (57575, 28903, 28672)
    assert entry["received_bytes"] == entry["forward_bytes"] + entry["backward_bytes"]
    assert [r["layer"] for r in entry["layers"]] == ["outside"]
    assert [k["kind"] for k in entry["by_kind"]] == ["AllGather", "ReduceScatter", "AllReduce"]
    assert [(f["code"], f["node"], f["waste_bytes"], f["share"]) for f in entry["findings"]] == [
        ("PC001", "%13", 14336, "24.9%"),
        ("PC001", "%16", 14336, "24.9%"),
    ]
    (rs,) = [c for c in entry["collectives"] if c["node"] == "%12"]
    assert (rs["kind"], rs["direction"], rs["group_size"], rs["waste_bytes"]) == ("ReduceScatter", "forward", 8, 0)


@pytest.mark.parametrize(
    "case",
    [
        "par-mismatch-sp_then_cols",
        "par-mindformers-llama_pp2_mp4",
        "par-mindformers-llama_dp2_mp4_wrong_w2",
        "par-mismatch-moe_gather_dispatch",
        "par-fixed-moe_alltoall_dispatch",
    ],
)
def test_comm_json_matches_its_schema(case):
    import jsonschema

    result = run(CORPUS / case, "--format", "json")
    assert result.exit_code == 0
    jsonschema.validate(json.loads(result.output), json.loads(SCHEMA.read_text(encoding="utf-8")))


def test_comm_json_snapshot_of_a_consistent_and_a_wrong_case(snapshot, monkeypatch):
    monkeypatch.chdir(CORPUS)  # paths are shown relative to the working directory
    for case in ("par-fixed-sp_then_rows", "par-mismatch-sp_then_cols"):
        result = run(case, "--format", "json")
        assert result.exit_code == 0
        assert json.loads(result.output) == snapshot(name=case)


def test_comm_text_snapshot(snapshot, monkeypatch):
    monkeypatch.chdir(CORPUS)
    result = run("par-mismatch-sp_then_cols", "--top", "4")
    assert result.exit_code == 0
    assert result.output == snapshot


def test_comm_layers_of_a_mindformers_model_and_a_table_per_stage_graph():
    data = json.loads(run(CORPUS / "par-mindformers-llama_pp2_mp4", "--format", "json").output)
    assert [f["rank"] for f in data["files"]] == [0, 4]
    # stage 0 holds decoder layer 0, stage 1 layer 1
    assert [[r["layer"] for r in f["layers"]] for f in data["files"]] == [["0", "outside"], ["1", "outside"]]
    text = run(CORPUS / "par-mindformers-llama_pp2_mp4").output
    # two pipeline stages, two graphs: a table each, never a column per rank (issue 42)
    assert "per layer (rank 0)" in text and "per layer (rank 4)" in text and "(rank 4)" not in text.split("┃")[1]


def test_comm_help_says_what_is_counted():
    text = run("--help").output
    assert "Not counted" in text and "scheme" in text and "Waste" in text


def test_comm_without_final_stage_fails_cleanly(tmp_path):
    (tmp_path / "00_bootstrap_0000.ir").write_text("# IR entry: @main\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["comm", str(tmp_path)])
    assert result.exit_code == 2 and "no final-stage graph dump" in result.output


def test_account_as_plain_data_for_other_commands():
    ir = read_ir(str(_only("par-fixed-sp_then_rows")))
    data = as_dict(ir, account(ir))
    json.dumps(data)  # plain data, nothing else
    assert data["waste_bytes"] == 0 and data["received_bytes"] == 4 * 7168 + 7 + 224


def test_mindformers_moe_account_alltoall_scheme_and_router_waste():
    from irlint.runner.engine import read_dump

    def load(case):
        (f,) = discover([str(CORPUS / case)])[0]
        return read_dump(f)

    good, bad = account(load("par-fixed-mf_moe_alltoall")), account(load("par-mismatch-mf_moe_router_replicated"))
    assert good.waste_bytes == 0
    kinds = good.by_kind()
    # dispatch and combine in both layers, and their four backward AlltoAlls: (n-1)/n of 16 KiB over 2
    assert kinds["AlltoAll"]["ops"] == 8 and kinds["AlltoAll"]["forward_bytes"] == 4 * 8192
    assert bad.waste_bytes == 2 * 12288
    assert bad.received_bytes - bad.waste_bytes - good.received_bytes == 0


# --- the HTML page (issue 28) ------------------------------------------------------------------


def test_comm_html_page_states_the_headline_share_of_waste_and_the_tables(tmp_path):
    from irlint.reporters.account_lines import comm_headline as headline

    case = CORPUS / "par-mismatch-ffn_mul_disagrees_8ranks"
    files = json.loads(run(case, "--format", "json").output)["files"]
    counted = [e for e in files if e["read"] != "not"]
    out = tmp_path / "page" / "comm.html"
    result = run(case, "--format", "html", "-o", out)
    assert result.exit_code == 0 and result.output == ""
    html = out.read_text(encoding="utf-8")
    assert html.lower().startswith("<!doctype html>") and "<link" not in html and "src=" not in html  # self-contained
    busiest = max(counted, key=lambda e: e["received_bytes"])
    share = f"{busiest['waste_bytes'] / busiest['received_bytes']:.0%}"
    assert busiest["waste_bytes"] and f'<div class="n">{share}</div>' in html
    assert headline(counted) in html and share in headline(counted)
    for e in counted:  # one section per file, its findings and its kinds
        assert e["file"] in html
        for f in e["findings"]:
            assert f"(line {f['line']})" in html and f["share"] in html
    assert html.count('<tr class="total">') == len(counted)


def test_comm_html_of_a_consistent_case_says_no_waste_and_of_a_graph_without_collectives_says_so():
    files = json.loads(run(CORPUS / "par-fixed-layout_consistent", "--format", "json").output)["files"]
    assert any(e.get("collectives") for e in files) and not any(e.get("waste_bytes") for e in files)
    html = run(CORPUS / "par-fixed-layout_consistent", "--format", "html").output
    assert '<div class="n">0%</div>' in html and "<h3>Largest collectives</h3>" in html
    html = run(CORPUS / "s2_ffn_3d_reshape_blocks", "--format", "html").output
    assert "No collective communication in this graph." in html
