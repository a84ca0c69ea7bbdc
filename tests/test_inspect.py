"""``irlint inspect``: what irlint reads in each dump, pinned on real fixtures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from irlint.cli import main

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def in_fixtures(monkeypatch):
    monkeypatch.chdir(FIXTURES)


@pytest.mark.parametrize(
    "target",
    [
        "corpus/s2_ffn_3d_reshape_blocks",
        "corpus/llama-recompute-modes/graph_build_0_0094.ir",
        "corpus/ffn-jit-grad/01_type_inference_0001.ir",
        "corpus/full-folder-1layer",
    ],
)
def test_inspect_json(in_fixtures, snapshot, target):
    result = CliRunner().invoke(main, ["inspect", target, "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines()]
    for row in rows:
        header = Path(row["file"]).read_text(encoding="utf-8").split("Total number of cnodes: ", 1)[1]
        assert row["cnodes"] == int(header.split("\n", 1)[0])  # MindSpore's own count
        assert row["diagnostics"] == []
    assert rows == snapshot


def test_inspect_reports_diagnostics_and_exits_2(tmp_path):
    src = (FIXTURES / "corpus" / "s1_ffn_2d" / "21_validate_0076.ir").read_bytes()
    bad = tmp_path / "21_validate_0076.ir"
    bad.write_bytes(src[: len(src) // 2])
    result = CliRunner().invoke(main, ["inspect", str(bad), "--format", "json"])
    assert result.exit_code == 2
    row = json.loads(result.output.splitlines()[0])
    assert row["diagnostics"] and {d["kind"] for d in row["diagnostics"]} & {"truncated", "bad-record"}
    assert all(Path(d["file"]).resolve() == bad.resolve() and d["line"] > 0 for d in row["diagnostics"])


def test_inspect_of_a_folder_without_dumps_exits_2(tmp_path):
    (tmp_path / "notes.txt").write_text("not a dump")
    result = CliRunner().invoke(main, ["inspect", str(tmp_path)])
    assert result.exit_code == 2
    assert "no graph IR dumps" in result.output
