from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from irlint.model.stages import BACKEND, FRONTEND, OPT_PASS, OTHER, stage_of
from irlint.runner.discover import InputError, discover

FULL = Path(__file__).parent / "fixtures" / "corpus" / "full-folder-1layer"


def test_folder_walk_keeps_graph_ir_and_skips_actor_sets():
    files, diags = discover([str(FULL)])
    names = sorted(Path(f.path).name for f in files)
    assert "trace_code_graph_0095" in names  # graph IR without the .ir suffix
    assert "MANIFEST.json" not in names
    assert not any("actor_set" in f.path for f in files)
    assert diags == []
    assert all(not f.explicit for f in files)


def test_a_file_named_directly_is_explicit(tmp_path):
    files, _ = discover([str(FULL / "21_validate_0076.ir")])
    assert len(files) == 1 and files[0].explicit and files[0].stage.name == "validate"


def test_missing_path_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        discover([str(tmp_path / "nope")])


def test_rank_folders_are_recognised(tmp_path):
    for r in (0, 1):
        d = tmp_path / f"rank_{r}"
        d.mkdir()
        (d / "21_validate_0076.ir").write_bytes((FULL / "21_validate_0076.ir").read_bytes())
    files, _ = discover([str(tmp_path)])
    assert sorted(f.rank for f in files) == [0, 1]


@pytest.mark.parametrize(
    "name, family, stage, seq",
    [
        ("21_validate_0076.ir", FRONTEND, "validate", 76),
        ("31_validate_0035.ir", FRONTEND, "validate", 35),
        ("opt_pass_19_add_recomputation_0033.ir", OPT_PASS, "add_recomputation", 33),
        ("23_add_recomputation_0027.ir", FRONTEND, "add_recomputation", 27),
        ("hwopt_common_final_graph_0_0091.ir", BACKEND, "hwopt_common_final_graph_0", 91),
        ("graph_build_0_0094.ir", BACKEND, "graph_build", 94),
        ("trace_code_graph_0095", BACKEND, "trace_code_graph", 95),
        ("after_opt_7___main___Net_construct_125_0013.ir", OTHER, "after_opt_7___main___Net_construct_125", 13),
        ("07_parallel-infer-symbol_0008.ir", FRONTEND, "parallel-infer-symbol", 8),
    ],
)
def test_stage_from_file_name(name, family, stage, seq):
    s = stage_of(name)
    assert (s.family, s.name, s.seq) == (family, stage, seq)


def test_dumps_of_older_versions_are_found_in_a_folder():
    versions = Path(__file__).parent / "fixtures" / "versions"
    files, diags = discover([str(versions)])
    assert len(files) == len(list(versions.glob("*.ir"))) == 11
    assert diags == []


def test_a_path_inside_an_unlistable_folder_is_an_input_error(monkeypatch, tmp_path):
    target = tmp_path / "nolist" / "21_validate_0076.ir"
    real_stat = os.stat  # what pathlib and os.path look with

    def stat(path, *a, **kw):
        if isinstance(path, (str, os.PathLike)) and Path(os.fspath(path)) == target:
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_stat(path, *a, **kw)

    monkeypatch.setattr(os, "stat", stat)
    with pytest.raises(InputError, match="permission denied"):
        discover([str(target)])


def test_one_dump_reached_several_ways_is_found_once(tmp_path):
    # through its folder, a symlinked folder, a symlink next to it, and by name: one file to read
    import shutil

    real = tmp_path / "real"
    real.mkdir()
    shutil.copy(FULL / "21_validate_0076.ir", real / "21_validate_0076.ir")
    (real / "22_validate_0077.ir").symlink_to(real / "21_validate_0076.ir")
    (tmp_path / "linked").symlink_to(real, target_is_directory=True)
    files, diags = discover([str(real), str(tmp_path / "linked"), str(real / "21_validate_0076.ir")])
    assert diags == [] and [Path(f.path).name for f in files] == ["21_validate_0076.ir"]
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(FULL / "21_validate_0076.ir", other / "21_validate_0076.ir")  # a copy is another file
    files, _ = discover([str(real), str(other)])
    assert [f.folder for f in files] == [str(real), str(other)]


def _run(tmp_path: Path, ranks: dict[str, list[str]]) -> Path:
    dump = Path(__file__).parent / "fixtures" / "corpus" / "ffn-jit-grad" / "31_validate_0035.ir"
    for rank, names in ranks.items():
        (tmp_path / rank).mkdir(parents=True)
        for name in names:
            (tmp_path / rank / name).write_bytes(dump.read_bytes())
    return tmp_path


def test_a_rank_whose_compile_stopped_before_its_final_graph_is_an_input_problem(tmp_path):
    # MindSpore 2.10 stops one pipeline stage's compile (GetCellBySend) while the others finish: that
    # rank's folder ends at an earlier stage, and what irlint reads there is a graph the step never ran
    from click.testing import CliRunner

    import irlint.cli

    run = _run(
        tmp_path,
        {
            "rank_0": ["23_add_recomputation_0027.ir", "31_validate_0035.ir"],
            "rank_4": ["13_optimize_0087.ir", "14_detach_backward_0088.ir"],
        },
    )
    files, diags = discover([str(run)])
    (d,) = [d for d in diags if d.code == "IR017"]
    assert d.file.endswith("rank_4/14_detach_backward_0088.ir")  # the last file it wrote
    assert "rank 4's dumps stop" in d.message and "rank 0 of the same run wrote 31_validate_0035.ir" in d.message
    result = CliRunner().invoke(irlint.cli.main, [str(run), "--format", "concise"])
    assert result.exit_code == 2 and "IR017" in result.output
    summary = json.loads(CliRunner().invoke(irlint.cli.main, [str(run), "--format", "json"]).stdout)["summary"]
    assert summary["files"] == 2 and summary["diagnostics"] == 1  # rank 4's last graph is still linted


@pytest.mark.parametrize(
    "ranks",
    [
        {"rank_0": ["13_optimize_0087.ir"]},  # one folder of some stages only: a copy, nothing to compare
        {"rank_0": ["13_optimize_0087.ir"], "rank_4": ["14_detach_backward_0088.ir"]},  # no rank finished
        {"rank_0": ["31_validate_0035.ir"], "rank_4": ["graph_build_0_0094.ir"]},  # a kernel graph comes after
    ],
)
def test_no_unfinished_compile_without_a_rank_that_finished(tmp_path, ranks):
    _, diags = discover([str(_run(tmp_path, ranks))])
    assert not [d for d in diags if d.code == "IR017"]
