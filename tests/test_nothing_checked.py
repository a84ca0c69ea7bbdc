"""A clean result means "read and clean" (issue 21): renamed dumps are read, a run that checked
nothing says why and exits 2, and each compile of a folder is linted."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from irlint.cli import main
from irlint.model.stages import stage_of
from irlint.runner.discover import discover

CORPUS = Path(__file__).parent / "fixtures" / "corpus"
WITH_FINDINGS = CORPUS / "s2_ffn_3d_reshape_blocks" / "21_validate_0076.ir"  # two RC002
CLEAN = CORPUS / "s3_ffn_3d_reshape_fixed" / "21_validate_0076.ir"


def run(*args):
    return CliRunner().invoke(main, [*map(str, args), "-n", "--format", "concise"])


@pytest.mark.parametrize(
    "name",
    [
        "result_21_validate_0076.ir",
        "myrun-21_validate_0076.ir",
        "21_validate_0076.backup.ir",
        "rank0_21_validate_0076.IR",
        "21_validate_0076.ir.txt",
        "21_validate_0076.txt",
    ],
)
def test_a_renamed_dump_in_a_folder_is_read_as_its_stage(tmp_path, name):
    assert stage_of(name).name == "validate" and stage_of(name).seq == 76
    shutil.copy(WITH_FINDINGS, tmp_path / name)
    result = run(tmp_path)
    assert result.exit_code == 1, result.output
    assert result.output.count("RC002") == 2


def test_a_folder_whose_stages_no_rule_reads_is_not_clean(tmp_path):
    shutil.copy(WITH_FINDINGS, tmp_path / "12_pipeline_split_0013.ir")
    result = run(tmp_path)
    assert result.exit_code == 2
    assert "nothing checked" in result.output and "pipeline_split" in result.output and "--all-stages" in result.output
    shown = CliRunner().invoke(main, [str(tmp_path), "--show-files"])
    assert shown.exit_code == 2 and "nothing would be checked" in shown.output
    text = CliRunner().invoke(main, [str(tmp_path), "-n"])
    assert "No findings" not in text.output and "Nothing checked" in text.output
    assert run(tmp_path, "--all-stages").exit_code == 1


def test_no_selected_rule_is_not_clean(tmp_path):
    for path in (WITH_FINDINGS.parent, WITH_FINDINGS):
        result = run(path, "--select", "RC", "--ignore", "RC")
        assert result.exit_code == 2 and "no rule is selected" in result.output


def test_each_compile_of_a_folder_is_linted(tmp_path):
    shutil.copy(WITH_FINDINGS, tmp_path / "21_validate_0076.ir")
    shutil.copy(CLEAN, tmp_path / "21_validate_0150.ir")  # a later compile of the same process
    result = run(tmp_path)
    assert result.exit_code == 1, result.output
    assert result.output.count("21_validate_0076.ir") == 2 and "0150" not in result.output
    shown = CliRunner().invoke(main, [str(tmp_path), "--show-files"])
    assert shown.output.count("read  ") == 2 and "skip" not in shown.output, shown.output
    text = CliRunner().invoke(main, [str(tmp_path), "-n"])
    assert "(2 files checked" in text.output


def test_compiles_are_told_apart_by_stage_order():
    from irlint.runner.engine import compiles

    files, _ = discover([str(CORPUS / "llama-recompute-modes")])
    assert len(compiles(files)) == 1  # one compile: front-end stages, then the backend's
    names = [
        "00_parse_0000.ir",
        "21_validate_0076.ir",
        "graph_build_0_0079.ir",
        "graph_build_1_0080.ir",
        "00_parse_0081.ir",
        "06_add_attr_0090.ir",
        "21_validate_0150.ir",
        "21_validate_0160.ir",
    ]

    class F:
        def __init__(self, name):
            self.stage, self.placed = stage_of(name), True
            self.name = name

    groups = compiles([F(n) for n in names])
    assert [[f.name for f in g] for g in groups] == [names[:4], names[4:7], names[7:]]


def test_show_files_says_why_an_earlier_stage_is_skipped():
    shown = CliRunner().invoke(main, [str(CORPUS / "llama-recompute-modes"), "--show-files"])
    assert shown.exit_code == 0
    skipped = [line for line in shown.output.splitlines() if "opt_pass_19" in line]
    assert skipped and "instead" in skipped[0] and "21_validate_0076.ir" in skipped[0], shown.output


@pytest.mark.parametrize("name", ["rank_0_graph.ir", "net_1_model.ir", "graph.ir", "my_2_runs.ir"])
def test_a_name_without_a_stage_file_in_it_is_read_by_every_rule(name):
    assert not stage_of(name).known  # numbers inside a name are no stage without MindSpore's sequence


def test_a_renamed_dump_of_unknown_stage_in_a_folder_is_read_by_every_rule(tmp_path):
    shutil.copy(WITH_FINDINGS, tmp_path / "rank_0_graph.ir")
    result = run(tmp_path)
    assert result.exit_code == 1 and result.output.count("RC002") == 2, result.output
