"""``irlint diff BEFORE AFTER`` on real pairs of dumps: findings fixed / new / unchanged by
fingerprint, nodes matched across recompiles, kept bytes per layer, recompute and in_strategy
changes, the JSON contract, exit codes."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from click.testing import CliRunner
from conftest import CORPUS

from irlint.cli import main
from irlint.read.reader import read_ir
from irlint.runner.diff import match_nodes

F32 = 4
FFN_SILU = FFN_MUL = 16 * 64 * F32  # (16, 64) fp32: what recomputing SiLU and Mul frees in s3


def diff(*args, cwd=CORPUS, monkeypatch=None):
    monkeypatch.chdir(cwd)
    result = CliRunner().invoke(main, ["diff", *map(str, args), "-n"])
    return result


def diff_json(before, after, monkeypatch, cwd=CORPUS):
    result = diff(before, after, "--format", "json", cwd=cwd, monkeypatch=monkeypatch)
    return result.exit_code, json.loads(result.stdout)


def test_s2_to_s3_fixes_both_rc002_drops_the_kept_bytes_and_recomputes_the_reshapes(monkeypatch, snapshot):
    code, out = diff_json("s2_ffn_3d_reshape_blocks", "s3_ffn_3d_reshape_fixed", monkeypatch)
    assert code == 0
    assert [(f["code"], f["op"]) for f in out["fixed"]] == [("RC002", "SiLU"), ("RC002", "Mul")]
    assert out["new"] == [] and out["unchanged"] == []
    (rank,) = out["ranks"]
    assert rank["memory"]["before_total"] - rank["memory"]["after_total"] == FFN_SILU + FFN_MUL
    assert rank["memory"]["layers"] == [
        {
            "layer": "outside",
            "before": 18432,
            "after": 18432 - FFN_SILU - FFN_MUL,
            "tensors_before": 5,
            "tensors_after": 3,
        }
    ]
    changed = {(c["op"], c["scope"].rsplit("/", 2)[-2]): c for c in rank["recompute_changed"]}
    # the guide's fix: the two Reshapes next to SiLU and Mul are now recomputed
    for reshape in (("Reshape", "w1-Linear"), ("Reshape", "w2-Linear")):
        assert changed[reshape]["before"]["applied"] is False and changed[reshape]["after"]["applied"] is True
    for op in ("SiLU", "Mul"):
        c = next(c for c in rank["recompute_changed"] if c["op"] == op)
        assert c["before"] == {"requested": "select", "applied": False, "kept": True, "kept_bytes": 4096}
        assert c["after"] == {"requested": "select", "applied": True, "kept": False, "kept_bytes": 0}
    assert rank["in_strategy_changed"] == []
    assert out == snapshot


def test_the_other_way_round_the_findings_are_new_and_the_exit_code_is_1(monkeypatch):
    code, out = diff_json("s3_ffn_3d_reshape_fixed", "s2_ffn_3d_reshape_blocks", monkeypatch)
    assert code == 1
    assert [f["code"] for f in out["new"]] == ["RC002", "RC002"] and out["fixed"] == []


def test_parallel_pair_where_one_strategy_changes(monkeypatch, snapshot):
    # x @ w1 -> ReLU -> @ w2 over 8 devices: only mm1's in_strategy differs between the two runs
    code, out = diff_json("par-mismatch-mm_rows8_to_cols8", "par-fixed-mm_col_row_mp8", monkeypatch)
    assert code == 0
    assert [f["code"] for f in out["fixed"]] == ["PC001"] and out["new"] == []
    (rank,) = out["ranks"]
    assert rank["rank"] == 0
    assert [(c["instance"], c["before"], c["after"]) for c in rank["in_strategy_changed"]] == [
        ("mm1", "((8, 1), (1, 1))", "((1, 1), (1, 8))")
    ]
    # the redistribution ops and their backward transpose exist only before
    only_before = sorted(n["op"] for n in rank["nodes"]["before_only_nodes"])
    assert {"AllGather", "StridedSlice", "StridedSliceGrad", "ReduceScatter"} <= set(only_before)
    assert rank["nodes"]["after_only"] == 0
    assert out == snapshot


def test_findings_are_shaped_as_in_the_lint_json(monkeypatch):
    _, out = diff_json("s2_ffn_3d_reshape_blocks", "s3_ffn_3d_reshape_fixed", monkeypatch)
    lint = json.loads(CliRunner().invoke(main, ["s2_ffn_3d_reshape_blocks", "--format", "json", "-n"]).stdout)
    assert [set(f) for f in out["fixed"]] == [set(f) for f in lint["findings"]]
    assert [f["fingerprint"] for f in out["fixed"]] == [f["fingerprint"] for f in lint["findings"]]


def test_a_dump_against_itself_matches_every_node_by_unique_id(monkeypatch):
    code, out = diff_json("s2_ffn_3d_reshape_blocks", "s2_ffn_3d_reshape_blocks", monkeypatch)
    assert code == 0 and out["fixed"] == [] and out["new"] == [] and len(out["unchanged"]) == 2
    nodes = out["ranks"][0]["nodes"]
    assert nodes["unique_ids_stable"] and nodes["matched_by_unique_id"] > 0
    assert nodes["before_only"] == nodes["after_only"] == 0
    assert out["ranks"][0]["recompute_changed"] == [] and out["ranks"][0]["in_strategy_changed"] == []


def _renumbered(text: str, by: int) -> str:
    """The same graph with every %N and every unique_id moved (as another compile numbers them)."""
    text = re.sub(r"%(\d+)\b", lambda m: f"%{int(m.group(1)) + by}", text)
    return re.sub(r'(unique_id: ")(\d+)"', lambda m: f'{m.group(1)}{int(m.group(2)) + by}"', text)


def test_nodes_are_matched_by_what_survives_a_recompile_never_by_their_number(tmp_path):
    src = CORPUS / "s2_ffn_3d_reshape_blocks" / "21_validate_0076.ir"
    other = tmp_path / "21_validate_0076.ir"
    other.write_text(_renumbered(src.read_text(encoding="utf-8"), 7), encoding="utf-8")
    before, after = read_ir(str(src)), read_ir(str(other))
    match = match_nodes(before, after)
    assert not match.before_only and not match.after_only
    assert not match.unique_ids_stable  # shifted ids name other nodes: position among equals decides
    for b, a in match.pairs:
        assert (before[b]["op"], before[b]["scope"]) == (after[a]["op"], after[a]["scope"])
        assert int(after[a]["id"][1:]) == int(before[b]["id"][1:]) + 7


def test_stage_files_pair_by_stage_name_not_number(tmp_path, monkeypatch):
    renamed = tmp_path / "after"
    renamed.mkdir()
    for f in (CORPUS / "s2_ffn_3d_reshape_blocks").glob("*.ir"):
        # another MindSpore version numbers the stages differently
        name = re.sub(r"^(\d+)_", lambda m: f"{int(m.group(1)) + 2}_", f.name)
        name = re.sub(r"_(\d{4})\.ir$", lambda m: f"_{int(m.group(1)) + 31:04d}.ir", name)
        shutil.copy(f, renamed / name)
    code, out = diff_json(CORPUS / "s2_ffn_3d_reshape_blocks", renamed, monkeypatch, cwd=tmp_path)
    assert code == 0
    rank = out["ranks"][0]
    assert rank["after"]["file"] == "after/23_validate_0107.ir"
    assert rank["stages"] == {"paired": 5, "before_only": [], "after_only": []}
    assert len(out["unchanged"]) == 2 and out["fixed"] == out["new"] == []


def test_rank_folders_pair_by_rank_and_a_missing_rank_is_named(tmp_path, monkeypatch):
    after = tmp_path / "after"
    shutil.copytree(CORPUS / "par-mismatch-ffn_col_col", after)
    shutil.rmtree(after / "rank_7")
    code, out = diff_json(CORPUS / "par-mismatch-ffn_col_col", after, monkeypatch, cwd=tmp_path)
    assert code == 0
    assert [r["rank"] for r in out["ranks"]] == list(range(7))
    assert all(r["before"]["file"].endswith(f"rank_{r['rank']}/21_validate_0082.ir") for r in out["ranks"])
    assert len(out["notes"]) == 1 and out["notes"][0].startswith("rank 7: only in BEFORE")


def test_text_report_names_what_changed(monkeypatch):
    result = diff("par-mismatch-mm_rows8_to_cols8", "par-fixed-mm_col_row_mp8", monkeypatch=monkeypatch)
    assert result.exit_code == 0
    assert "Findings: 1 fixed, 0 new, 0 unchanged" in result.stdout
    assert "in_strategy changed:" in result.stdout and "((8, 1), (1, 1)) -> ((1, 1), (1, 8))" in result.stdout
    # bytes for a person (binary units, 3 significant figures) and the change in percent
    assert "activations kept for backward: 1.50 KiB -> 1.00 KiB (-512 bytes, -33%)" in result.stdout
    lines = result.stdout.splitlines()
    # the tables: a column per side, the change, in percent, and for collectives the op counts
    assert "    layer        before       after      change       %" in lines
    assert "    outside    1.50 KiB    1.00 KiB  -512 bytes    -33%" in lines
    assert "    kind               before       after      change       %      ops" in lines
    assert "    AllGather        7.00 KiB     0 bytes   -7.00 KiB   -100%     1->0" in lines
    assert "    AllReduce        17.5 KiB    14.0 KiB   -3.50 KiB    -20%     3->2" in lines


@pytest.mark.parametrize(
    "before, after, message",
    [
        ("no-such-folder", "s2_ffn_3d_reshape_blocks", "no such file or folder"),
        ("s2_ffn_3d_reshape_blocks", "../schemas", "no graph IR dumps"),
    ],
)
def test_unusable_input_exits_2_with_a_message(monkeypatch, before, after, message):
    result = diff(before, after, monkeypatch=monkeypatch)
    assert result.exit_code == 2 and message in result.stderr
    assert "Traceback" not in result.output


def test_damaged_dump_exits_2_but_still_reports(tmp_path, monkeypatch):
    src = (CORPUS / "s2_ffn_3d_reshape_blocks" / "21_validate_0076.ir").read_bytes()
    bad = tmp_path / "21_validate_0076.ir"
    bad.write_bytes(src[: len(src) * 2 // 3])  # cut mid-graph
    result = diff(
        CORPUS / "s2_ffn_3d_reshape_blocks" / "21_validate_0076.ir",
        bad,
        "--format",
        "json",
        monkeypatch=monkeypatch,
        cwd=tmp_path,
    )
    assert result.exit_code == 2
    out = json.loads(result.stdout)
    assert out["diagnostics"] and out["ranks"]


def test_mindformers_llama_where_w2_turns_column_parallel(monkeypatch):
    # the same MindFormers Llama (dp2 x mp4) with only w2's strategy changed: a new PC002 (info,
    # so the gate stays open), and w2's MatMul is the one op whose in_strategy changed
    code, out = diff_json("par-mindformers-llama_dp2_mp4", "par-mindformers-llama_dp2_mp4_wrong_w2", monkeypatch)
    assert code == 0
    assert [(f["code"], f["severity"]) for f in out["new"]] == [("PC002", "info")] and out["fixed"] == []
    (rank,) = out["ranks"]
    assert [(c["op"], c["scope"].rsplit("/", 2)[-2], c["before"], c["after"]) for c in rank["in_strategy_changed"]] == [
        ("MatMul", "w2-Linear", "((2, 4), (1, 4))", "((2, 1), (4, 1))")
    ]
    assert rank["nodes"]["matched"] > 400
    assert {n["op"] for n in rank["nodes"]["after_only_nodes"]} >= {"AllGather", "Split", "Concat"}


def test_same_script_compiled_by_mindspore_2_9_and_2_10_differs_only_in_numbering(monkeypatch):
    # stage files numbered 20_validate_0075 (2.9) and 21_validate_0076 (2.10): paired by name
    ms29 = CORPUS.parent / "diff" / "s2_ffn_3d_reshape_blocks_ms2.9"
    code, out = diff_json(ms29, CORPUS / "s2_ffn_3d_reshape_blocks", monkeypatch)
    assert code == 0
    assert out["fixed"] == out["new"] == [] and [f["code"] for f in out["unchanged"]] == ["RC002", "RC002"]
    (rank,) = out["ranks"]
    assert (rank["before"]["stage"], rank["after"]["stage"]) == ("validate", "validate")
    assert rank["before"]["file"].endswith("20_validate_0075.ir") and rank["after"]["file"].endswith(
        "21_validate_0076.ir"
    )
    assert rank["stages"] == {"paired": 5, "before_only": [], "after_only": []}
    assert rank["nodes"]["before_only"] == rank["nodes"]["after_only"] == 0 and rank["nodes"]["matched"] == 35
    assert rank["memory"]["before_total"] == rank["memory"]["after_total"]
    assert rank["recompute_changed"] == rank["in_strategy_changed"] == []


@pytest.mark.parametrize(
    "before, after",
    [
        ("s2_ffn_3d_reshape_blocks", "s3_ffn_3d_reshape_fixed"),
        ("par-mismatch-mm_rows8_to_cols8", "par-fixed-mm_col_row_mp8"),
        ("par-mismatch-ffn_col_col", "par-mismatch-ffn_mul_disagrees_8ranks"),
        ("par-mindformers-llama_dp2_mp4", "par-mindformers-llama_dp2_mp4_wrong_w2"),
    ],
)
def test_diff_json_matches_its_schema(monkeypatch, before, after):
    import jsonschema
    from conftest import TESTS

    schema = json.loads((TESTS / "fixtures" / "schemas" / "irlint-diff-1.json").read_text(encoding="utf-8"))
    _, out = diff_json(before, after, monkeypatch)
    jsonschema.validate(out, schema)


def test_a_folder_without_a_final_graph_cannot_be_compared(tmp_path, monkeypatch):
    early = tmp_path / "early"
    early.mkdir()
    shutil.copy(CORPUS / "s2_ffn_3d_reshape_blocks" / "12_pipeline_split_0013.ir", early)
    result = diff(CORPUS / "s2_ffn_3d_reshape_blocks", early, monkeypatch=monkeypatch, cwd=tmp_path)
    assert result.exit_code == 2
    assert "no final-stage graph" in result.stderr and "only in BEFORE" in result.stderr


def test_backward_nodes_sharing_a_forward_id_pair_in_dump_order():
    # the two gradient MatMuls of mm1 (dx, dw) share forward_unique_id 3800 and a scope path
    path = str(CORPUS / "par-mismatch-mm_rows8_to_cols8" / "rank_0" / "21_validate_0082.ir")
    before, after = read_ir(path), read_ir(path)
    match = match_nodes(before, after)
    assert match.unique_ids_stable and not match.before_only and not match.after_only
    assert all(before[b]["line"] == after[a]["line"] for b, a in match.pairs)
    assert match.by_unique_id == sum(
        1 for k in before.cnodes() if {"unique_id", "forward_unique_id"} & set(before[k].get("primal_attrs") or {})
    )


def test_communication_per_collective_kind_before_and_after(monkeypatch):
    # the rows->columns gather (AllGather 7.0 KiB) and its backward ReduceScatter are gone after the
    # fix; the row-parallel AllReduce of mm2 and its backward stay, the w1 mirror AllReduce goes
    _, out = diff_json("par-mismatch-mm_rows8_to_cols8", "par-fixed-mm_col_row_mp8", monkeypatch)
    comm = out["ranks"][0]["communication"]
    kinds = {k["kind"]: (k["before"], k["after"], k["ops_before"], k["ops_after"]) for k in comm["kinds"]}
    assert kinds["AllGather"] == (7168, 0, 1, 0) and kinds["ReduceScatter"] == (7168, 0, 1, 0)
    assert kinds["AllReduce"][2:] == (3, 2)
    assert comm["before_total"] - comm["after_total"] == 7168 + 7168 + kinds["AllReduce"][0] - kinds["AllReduce"][1]


def test_the_report_is_never_written_over_a_dump(tmp_path, monkeypatch):
    dump = tmp_path / "21_validate_0076.ir"
    shutil.copy(CORPUS / "s3_ffn_3d_reshape_fixed" / "21_validate_0076.ir", dump)
    before = dump.read_bytes()
    result = diff(CORPUS / "s2_ffn_3d_reshape_blocks", dump, "-o", dump, monkeypatch=monkeypatch, cwd=tmp_path)
    assert result.exit_code == 2 and "is an input of this run" in result.stderr
    assert dump.read_bytes() == before
