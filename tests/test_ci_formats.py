"""CI formats: a rank whose finding was merged into rank 0's is a failing JUnit test case too, and
``--format github`` says when it goes past the annotations GitHub shows of one step."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from click.testing import CliRunner
from conftest import CORPUS, TESTS

from irlint.cli import main

RANKS8 = CORPUS / "par-mismatch-ffn_mul_disagrees_8ranks"  # one graph on 8 ranks, findings merged "on ranks 0–7"
MANY = TESTS / "fixtures" / "recompute" / "mf-pp2_interleave_irlint_fix_round0"


def run(*args: str):
    return CliRunner().invoke(main, ["-n", *map(str, args)])


def test_junit_fails_every_rank_a_merged_finding_names():
    result = run(RANKS8, "--format", "junit")
    assert result.exit_code == 1
    cases = ET.fromstring(result.stdout).iter("testcase")
    failing = {c.get("name", "").split("/")[-2] for c in cases if c.find("failure") is not None}
    assert failing == {f"rank_{r}" for r in range(8)}


def test_junit_keeps_a_rank_the_finding_does_not_name_passing(tmp_path):
    import shutil

    folder = tmp_path / "run"
    for r in (0, 1):
        shutil.copytree(RANKS8 / f"rank_{r}", folder / f"rank_{r}")
    (folder / "rank_1" / "21_validate_0082.ir").write_text(
        (CORPUS / "s1_ffn_2d" / "21_validate_0076.ir").read_text(encoding="utf-8"), encoding="utf-8"
    )
    result = run(folder, "--format", "junit")
    cases = {c.get("name", "").split("/")[-2]: c for c in ET.fromstring(result.stdout).iter("testcase")}
    assert cases["rank_0"].find("failure") is not None and cases["rank_1"].find("failure") is None


def test_github_says_when_annotations_go_past_what_one_step_shows():
    result = CliRunner().invoke(main, ["-n", "--no-group", "--format", "github", str(MANY)])
    lines = result.stdout.splitlines()
    warnings = [line for line in lines if line.startswith("::warning ")]
    assert len(warnings) > 10
    assert lines[0].startswith("::notice title=irlint::") and "GitHub shows 10 annotations" in lines[0]
    assert f"irlint: warning: {len(warnings)} warnings: GitHub shows 10" in result.stderr
    few = CliRunner().invoke(main, ["-n", "--format", "github", str(CORPUS / "s2_ffn_3d_reshape_blocks")])
    assert "GitHub shows" not in few.stdout + few.stderr
