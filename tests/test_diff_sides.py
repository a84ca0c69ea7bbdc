"""``irlint diff`` claims only what it read: a finding is not "fixed" when AFTER could not read the
file where its rule's evidence is final (truncated, missing: an earlier stage was read instead); the
same problem read from that earlier stage matches; a folder holding two compiles is compared
compile to compile (issue 31, items 3 and 4)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from irlint.cli import main

CORPUS = Path(__file__).parent / "fixtures" / "corpus"
S2 = CORPUS / "s2_ffn_3d_reshape_blocks"
S3 = CORPUS / "s3_ffn_3d_reshape_fixed"
VALIDATE = "21_validate_0076.ir"
KEPT_S2, KEPT_S3 = 18432, 10240


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def diff_json(before, after, *more):
    result = run("diff", before, after, "-n", "--format", "json", *more)
    return result.exit_code, json.loads(result.stdout)


def _codes(findings) -> list[tuple[str, str]]:
    return sorted((f["code"], f["op"]) for f in findings)


@pytest.fixture(params=["truncated", "missing"])
def damaged(request, tmp_path) -> Path:
    """S2 with its validate file cut mid-graph, or gone: its rules read cse_after_recomputation."""
    folder = tmp_path / request.param
    shutil.copytree(S2, folder)
    validate = folder / VALIDATE
    if request.param == "missing":
        validate.unlink()
    else:
        text = validate.read_bytes()
        validate.write_bytes(text[: len(text) * 2 // 3])
    return folder


def test_nothing_is_fixed_from_an_after_that_fell_back(damaged):
    code, out = diff_json(S2, damaged)
    assert out["fixed"] == [] and out["new"] == []
    # the same problems, read from the stage before validate, match BEFORE's
    assert _codes(out["unchanged"]) == [("RC002", "Mul"), ("RC002", "SiLU")]
    assert out["incomplete"] and {i["side"] for i in out["incomplete"]} == {"after"}
    assert "RC002" in out["incomplete"][0]["rules"]
    (rank,) = out["ranks"]
    # the memory account is not taken from a cut file
    assert rank["after"]["stage"] != "validate"
    assert code == (2 if damaged.name == "truncated" else 0)
    text = run("diff", S2, damaged, "-n").stdout
    assert re.search(r"^AFTER incomplete: ", text, re.M), text


def test_the_damaged_side_as_before(damaged):
    # its problems, read from the stage before validate, are all matched: none fixed, none new
    code, back = diff_json(damaged, S2)
    assert back["new"] == [] and back["fixed"] == [] and len(back["unchanged"]) == 2
    assert {i["side"] for i in back["incomplete"]} == {"before"}


def test_findings_gone_where_after_could_not_read_are_unverified(tmp_path):
    # AFTER: the fixed model (S3) whose validate file is cut: its RC002s are gone in the stage
    # read instead too, yet they are not claimed fixed from a file that was not read whole
    after = tmp_path / "after"
    shutil.copytree(S3, after)
    text = (after / VALIDATE).read_bytes()
    (after / VALIDATE).write_bytes(text[: len(text) // 2])
    code, out = diff_json(S2, after)
    assert out["fixed"] == [] and _codes(out["unverified_fixed"]) == [("RC002", "Mul"), ("RC002", "SiLU")]
    assert out["summary"]["unverified_fixed"] == 2 and code == 2
    complete = diff_json(S2, S3)[1]
    assert _codes(complete["fixed"]) == [("RC002", "Mul"), ("RC002", "SiLU")] and complete["unverified_fixed"] == []


def test_a_baseline_matches_the_problems_of_a_folder_that_fell_back(damaged, tmp_path):
    baseline = tmp_path / "baseline.json"
    assert run("-n", S2, "--write-baseline", baseline).exit_code == 0
    result = run("-n", damaged, "--baseline", baseline, "--format", "json")
    data = json.loads(result.stdout)
    assert data["findings"] == [] and data["summary"]["baselined"] == 2


def test_a_baseline_written_before_the_fingerprint_left_out_the_stage_still_matches(tmp_path):
    # version 1 baselines hold fingerprints of rule, stage, op, scope and chain
    import hashlib

    from irlint.runner.config import Config
    from irlint.runner.engine import lint

    findings = lint([str(S2)], Config(cache=False)).findings
    old = [
        hashlib.sha256(
            "\x1f".join([f.rule, f.stage, *f.with_(model="").fingerprint_text.split("\x1f")[1:]]).encode()
        ).hexdigest()[:20]
        for f in findings
    ]
    baseline = tmp_path / "old.json"
    baseline.write_text(json.dumps({"irlint-baseline": 1, "findings": [{"fingerprint": fp} for fp in old]}))
    result = run("-n", S2, "--baseline", baseline, "--format", "json")
    assert result.exit_code == 0 and json.loads(result.stdout)["summary"]["baselined"] == 2


# --- item 4: two compiles in one folder ----------------------------------------------------------
@pytest.fixture
def recompiled(tmp_path) -> Path:
    """S2's compile, then S3's in the same folder (numbered on: one process compiled twice)."""
    folder = tmp_path / "after"
    shutil.copytree(S2, folder)
    for f in S3.glob("*.ir"):
        head, _, number = f.stem.rpartition("_")
        shutil.copy(f, folder / f"{head}_{int(number) + 100:04d}.ir")
    return folder


def test_two_compiles_in_after_compare_the_newest_with_findings_and_memory_alike(recompiled):
    code, out = diff_json(S2, recompiled)
    assert _codes(out["fixed"]) == [("RC002", "Mul"), ("RC002", "SiLU")] and out["unchanged"] == []
    (rank,) = out["ranks"]
    assert rank["after"]["file"].endswith("21_validate_0176.ir")
    assert (rank["memory"]["before_total"], rank["memory"]["after_total"]) == (KEPT_S2, KEPT_S3)
    (which,) = out["compiles"]
    assert which["side"] == "after" and which["compiles"] == 2 and which["compared"] == 2
    assert code == 0
    text = run("diff", S2, recompiled, "-n").stdout
    assert "the newest of 2 compiles" in text.splitlines()[1]


def test_the_compile_to_compare_can_be_chosen(recompiled):
    code, out = diff_json(S2, recompiled, "--compile", "1")
    assert out["fixed"] == [] and _codes(out["unchanged"]) == [("RC002", "Mul"), ("RC002", "SiLU")]
    (rank,) = out["ranks"]
    assert rank["after"]["file"].endswith(VALIDATE)
    assert rank["memory"]["after_total"] == KEPT_S2
    assert out["compiles"][0]["compared"] == 1
    result = run("diff", S2, recompiled, "-n", "--compile", "3")
    assert result.exit_code == 2 and "--compile 3: " in result.stderr and "holds 2 compiles" in result.stderr


def test_the_new_keys_match_the_schema(recompiled, tmp_path):
    import jsonschema

    schema = json.loads((Path(__file__).parent / "fixtures" / "schemas" / "irlint-diff-1.json").read_text())
    after = tmp_path / "cut"
    shutil.copytree(S3, after)
    text = (after / VALIDATE).read_bytes()
    (after / VALIDATE).write_bytes(text[: len(text) // 2])
    for before, later in ((S2, recompiled), (S2, after)):
        out = diff_json(before, later)[1]
        assert out["compiles"] or out["incomplete"]
        jsonschema.validate(out, schema)


def test_the_html_page_says_it_too(tmp_path):
    after = tmp_path / "cut"
    shutil.copytree(S3, after)
    text = (after / VALIDATE).read_bytes()
    (after / VALIDATE).write_bytes(text[: len(text) // 2])
    page = run("diff", S2, after, "-n", "--format", "html").stdout
    assert "AFTER incomplete: " in page and "Findings fixed? (not verified) (2)" in page


def test_a_rank_whose_final_file_is_cut_keeps_the_problem_it_shares_with_the_other_ranks(tmp_path):
    # rank 3's validate file cut mid-graph: the problem is read whole from its earlier stage, not
    # from the cut file (whose chain is cut too), so it merges with the other ranks and is not "new"
    rank_0 = CORPUS / "par-mismatch-mm_rows8_to_cols8" / "rank_0"
    before, after = tmp_path / "before", tmp_path / "after"
    for rank in range(4):
        shutil.copytree(rank_0, before / f"rank_{rank}")
    shutil.copytree(before, after)
    cut = after / "rank_3" / "21_validate_0082.ir"
    cut.write_bytes(cut.read_bytes()[: cut.stat().st_size // 2])
    code, out = diff_json(before, after)
    assert out["new"] == out["fixed"] == out["unverified_new"] == out["unverified_fixed"] == []
    assert [f["ranks"] for f in out["unchanged"]] == [list(range(4))]
    assert {(i["side"], i["rank"]) for i in out["incomplete"]} == {("after", 3)}


def test_a_finding_read_from_a_cut_file_with_nothing_to_stand_in_is_not_called_new(tmp_path):
    # only validate files: rank 3's cut one is all there is, and the chain it gives is cut
    par = CORPUS / "par-mismatch-ffn_col_col"
    after = tmp_path / "after"
    shutil.copytree(par, after)
    cut = after / "rank_3" / "21_validate_0082.ir"
    cut.write_bytes(cut.read_bytes()[: cut.stat().st_size // 2])
    code, out = diff_json(par, after)
    assert out["new"] == [] and [f["file"] for f in out["unverified_new"]] == [str(cut)]
    assert code == 2
    text = run("diff", par, after, "-n").stdout
    assert ", 1 new? (" in text.splitlines()[2] and "\n  new?      PC002" in text
