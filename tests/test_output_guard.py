"""Every command that writes a file (lint -o, --write-baseline, memory -o, diff -o) shares one guard:
it never writes onto a dump it reads (named, through a link, or another stage file of the folder),
onto the baseline it reads, or twice onto one file (issue 31, items 1 and 14)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from irlint.cli import main

S2 = Path(__file__).parent / "fixtures" / "corpus" / "s2_ffn_3d_reshape_blocks"
S3 = Path(__file__).parent / "fixtures" / "corpus" / "s3_ffn_3d_reshape_fixed"


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def folder(tmp_path) -> Path:
    copy = tmp_path / "w"
    shutil.copytree(S2, copy)
    return copy


def _contents(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize("command", [["memory"], ["memory", "--format", "json"], ["check", "-n"]])
@pytest.mark.parametrize("target", ["21_validate_0076.ir", "link-to-validate", "12_pipeline_split_0013.ir"])
def test_a_report_is_never_written_onto_a_dump_of_the_folder_read(folder, tmp_path, command, target):
    (tmp_path / "link-to-validate").symlink_to(folder / "21_validate_0076.ir")
    where = tmp_path / target if target.startswith("link") else folder / target
    before = _contents(folder)
    result = run(*command, folder, "-o", where)
    assert result.exit_code == 2, result.output
    assert "is an input of this run" in result.output
    assert _contents(folder) == before


def test_memory_of_a_file_refuses_to_write_onto_it(folder):
    dump = folder / "21_validate_0076.ir"
    before = dump.read_bytes()
    result = run("memory", dump, "-o", dump)
    assert result.exit_code == 2 and "is an input of this run" in result.output
    assert dump.read_bytes() == before


def test_diff_refuses_before_reading_anything(folder, monkeypatch):
    # the guard runs before the lint of either side: nothing is read, nothing written
    import irlint.runner.engine as engine

    def no_lint(*a, **kw):
        raise AssertionError("linted before the output was checked")

    monkeypatch.setattr(engine, "lint_files", no_lint)
    dump = folder / "opt_pass_19_add_recomputation_0033.ir"
    before = dump.read_bytes()
    result = run("diff", S3, folder, "-n", "-o", dump)
    assert result.exit_code == 2 and "is an input of this run" in result.output
    assert dump.read_bytes() == before


@pytest.mark.parametrize("names", [("same.json", "same.json"), ("same.json", "./sub/../same.json")])
def test_report_and_baseline_onto_one_file_is_refused_and_nothing_is_written(tmp_path, names, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    result = run("-n", S2, "-o", names[0], "--write-baseline", names[1])
    assert result.exit_code == 2, result.output
    assert "--write-baseline" in result.output and "--output" in result.output
    assert not (tmp_path / "same.json").exists()


def test_report_and_baseline_onto_one_existing_file_through_a_link(tmp_path):
    target = tmp_path / "b.json"
    target.write_text("kept\n")
    (tmp_path / "alias.json").symlink_to(target)
    result = run("-n", S2, "-o", tmp_path / "alias.json", "--write-baseline", target)
    assert result.exit_code == 2, result.output
    assert target.read_text() == "kept\n"
