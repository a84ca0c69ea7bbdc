"""Files that hold the same graph are read once: every member still gets the findings and diagnostics
it would get read on its own, under its own name, stage, rank and line numbers."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import CORPUS, SHARED_CORPUS

import irlint.runner.check as check
import irlint.runner.engine as engine
import irlint.runner.same_graph as same_graph
import irlint.runner.workers as workers
from irlint.cli import main
from irlint.rule import Rule
from irlint.runner import dedup
from irlint.runner.config import Config
from irlint.runner.discover import discover_inputs
from irlint.runner.hashes import content_hash

ROOT = Path(__file__).resolve().parents[1]
GEN = ROOT / "bench" / "gen_rank_folder.py"
COL_COL = CORPUS / "par-mismatch-ffn_col_col"
VALIDATE = COL_COL / "rank_0" / "21_validate_0082.ir"


def _per_file(paths, all_stages: bool, dedup_on: bool, jobs: int = 1):
    """Each checked file with its findings and diagnostics, before grouping, and what was shared."""
    found = discover_inputs([str(p) for p in paths], None)
    config = Config(cache=False, jobs=jobs, all_stages=all_stages, dedup=dedup_on, plugins=False)
    todo = engine.plan(found.files, engine.active_rules(config), all_stages)
    shared: dict[str, str] = {}
    files = [f for f in found.files if f.path in todo]
    out = [
        (f.display, [x.to_dict() for x in fs], [d.to_dict() for d in ds])
        for f, fs, ds in engine.check_files(files, todo, config, shared)
    ]
    return out, shared


def _report(paths, **kw):
    report = engine.lint([str(p) for p in paths], Config(cache=False, jobs=1, plugins=False, **kw))
    return ([f.to_dict() for f in report.findings], [d.to_dict() for d in report.diagnostics], report)


def _prints(data: bytes) -> str:
    return dedup.graph_hash(io.BytesIO(data))


# --- what is masked ------------------------------------------------------------------------------------
def test_only_process_specific_values_are_masked_and_no_line_moves():
    text = VALIDATE.read_bytes()
    other = (
        text.replace(b"compile_phase: train.", b"compile_phase: train.9999999")
        .replace(b": 0x", b": 0xabcdef12", 1)
        .replace(b"Total number of nodes: ", b"Total number of nodes: 7")
    )
    assert other != text and _prints(other) == _prints(text)
    masked = dedup.MASKED.sub(dedup._mask, b"\n" + text)
    assert masked.count(b"\n") == text.count(b"\n") + 1  # values are masked within their line
    assert masked.count(b"#") - text.count(b"#") == len(dedup.MASKED.findall(b"\n" + text)) >= 3
    # anything else is another graph: a node line, the cnode total, a masked line's name, an added line
    for changed in (
        text.replace(b"AllGather(", b"AllReduce(", 1),
        text.replace(b"Total number of cnodes: ", b"Total number of cnodes: 1"),
        text.replace(b"compile_phase: train.", b"compile_phase_x: train.", 1),
        text.replace(b"\n", b"\n\n", 1),
        text + b"\n",
    ):
        assert _prints(changed) != _prints(text)


def test_the_hash_does_not_depend_on_where_blocks_end(monkeypatch):
    text = VALIDATE.read_bytes()
    other = text.replace(b"compile_phase: train.1", b"compile_phase: train.22222")
    expected = _prints(text)
    for size in (4096, 4099, 65536):
        monkeypatch.setattr(dedup, "BLOCK", size)
        assert _prints(text) == expected and _prints(other) == expected


# --- identical results ----------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("all_stages", [False, True])
def test_findings_and_diagnostics_are_the_same_with_and_without_dedup_on_the_corpus(all_stages):
    folders = sorted(p for p in SHARED_CORPUS.iterdir() if p.is_dir()) if SHARED_CORPUS.is_dir() else []
    # a trimmed copy of a shared case adds nothing but time
    folders += sorted(p for p in CORPUS.iterdir() if p.is_dir() and p.name not in {f.name for f in folders})
    shared_any = False
    for folder in folders:
        on, shared = _per_file([folder], all_stages, True)
        off, none = _per_file([folder], all_stages, False)
        assert on == off, folder
        assert not none
        shared_any |= bool(shared)
        if not all_stages:
            assert _report([folder])[:2] == _report([folder], dedup=False)[:2], folder
    assert shared_any


@pytest.fixture(scope="module")
def many_ranks(tmp_path_factory):
    """24 ranks of two real jobs, each rank a separate process's copy; in the second job
    (sub-groups of 4) ranks differ in group names and rank lists, so they are not all one graph."""
    out = tmp_path_factory.mktemp("ranks")
    for case in ("par-mismatch-ffn_col_col", "par-mismatch-ffn_mul_disagrees_8ranks"):
        subprocess.run(
            [sys.executable, str(GEN), "--input", str(CORPUS / case), "--ranks", "24", "--out", str(out / case)],
            check=True,
            capture_output=True,
        )
    return out


@pytest.mark.slow
@pytest.mark.skipif(not GEN.exists(), reason="bench/gen_rank_folder.py is not here")
@pytest.mark.parametrize("all_stages", [False, True])
def test_a_generated_many_rank_folder_gives_every_rank_its_own_findings(many_ranks, all_stages):
    folders = sorted(many_ranks.iterdir())
    on, shared = _per_file(folders, all_stages, True)
    off, _ = _per_file(folders, all_stages, False)
    assert on == off
    assert len(on) - len(shared) <= len(on) / 4  # far fewer graphs read than files checked
    # every rank's findings name its own file, at the lines of its own file
    files = {display for display, findings, _ in on if findings}
    assert any("rank_23" in name for name in files) and any("rank_0" in name for name in files)
    for display, findings, _ in on:
        lines = Path(display).read_text().splitlines()
        for f in findings:
            assert f["file"] == display
            assert f["node"] and lines[f["line"] - 1].lstrip().startswith(f["node"])
    with_dedup, without = _report(folders, all_stages=all_stages), _report(folders, all_stages=all_stages, dedup=False)
    assert with_dedup[:2] == without[:2]
    assert with_dedup[2].graphs_read == len(on) - len(shared) and not without[2].shared


@pytest.mark.skipif(not GEN.exists(), reason="bench/gen_rank_folder.py is not here")
def test_ranks_with_a_rank_dependent_graph_are_separate_classes(many_ranks):
    folder = many_ranks / "par-mismatch-ffn_mul_disagrees_8ranks"
    on, shared = _per_file([folder], False, True)
    reps = {shared.get(p, p) for p in (str(folder / f"rank_{r}" / "21_validate_0082.ir") for r in range(24))}
    # rank r shares the graph of rank r % 8 at most: group names and slice offsets differ otherwise
    assert 1 < len(reps) <= 8
    for member, rep in shared.items():  # a class is content with the process's values masked, nothing else
        assert _prints(Path(member).read_bytes()) == _prints(Path(rep).read_bytes())
        assert int(Path(member).parent.name[5:]) % 8 == int(Path(rep).parent.name[5:]) % 8


def test_each_class_is_read_once(many_ranks, monkeypatch):
    read: list[str] = []
    check_one = check.check_one
    monkeypatch.setattr(check, "check_one", lambda f, *a: read.append(f.path) or check_one(f, *a))
    on, shared = _per_file(sorted(many_ranks.iterdir()), True, True)
    assert sorted(read) == sorted({display for display, _, _ in on} - set(shared))


@pytest.mark.parametrize("workers_hash", [False, True])
def test_worker_processes_give_the_same_results(many_ranks, monkeypatch, workers_hash):
    monkeypatch.setattr(workers, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(same_graph, "POOL_HASH_MIN_BYTES", 0 if workers_hash else 1 << 60)
    folders = sorted(many_ranks.iterdir())
    assert _per_file(folders, True, True, jobs=2)[0] == _per_file(folders, True, False, jobs=1)[0]


# --- stages and plugins -----------------------------------------------------------------------------------
class _StageSaying(Rule):
    """Test probe: a plugin rule whose message depends on the file's stage."""

    code = "TST911"
    name = "test-stage-saying"

    def check(self, ir):
        first = next(iter(ir.cnodes()), None)
        if first is not None:
            yield self.finding(ir, first, f"seen in {ir.stage.name}")


def test_a_plugin_rule_never_shares_results_across_stages(tmp_path, monkeypatch):
    folder = tmp_path / "graph"
    folder.mkdir()
    data = VALIDATE.read_bytes()
    for name in ("13_optimize_0074.ir", "21_validate_0082.ir"):
        (folder / name).write_bytes(data)
    monkeypatch.setattr(engine, "active_rules", lambda config: [_StageSaying()])
    on, shared = _per_file([folder], True, True)
    assert not shared
    assert [f["evidence"] for _, findings, _ in on for f in findings] == ["seen in optimize", "seen in validate"]


def test_built_in_rules_share_results_across_stages_with_each_stage_named(tmp_path):
    folder = tmp_path / "graph"
    shutil.copytree(CORPUS / "s2_ffn_3d_reshape_blocks", folder)
    validate = next(folder.glob("21_validate_*.ir"))
    shutil.copy(validate, folder / "20_copy_of_validate_0075.ir")
    on, shared = _per_file([folder], True, True)
    off, _ = _per_file([folder], True, False)
    assert on == off
    assert shared.get(str(validate)) == str(folder / "20_copy_of_validate_0075.ir") or shared.get(
        str(folder / "20_copy_of_validate_0075.ir")
    ) == str(validate)
    stages = {f["stage"] for display, findings, _ in on if "copy_of" in display for f in findings}
    assert stages == {"copy_of_validate"} or stages == {"20_copy_of_validate"}


# --- what the user sees -----------------------------------------------------------------------------------
def test_summary_and_show_files_say_how_many_graphs_were_read_and_which_ranks_share_one(monkeypatch, tmp_path):
    monkeypatch.setenv("IRLINT_CACHE_DIR", str(tmp_path / "cache"))
    runner = CliRunner()
    result = runner.invoke(main, ["check", "--no-cache", str(COL_COL)])
    assert "(8 files checked, 1 distinct graph read" in result.output
    result = runner.invoke(main, ["check", "--no-cache", "--no-dedup", str(COL_COL)])
    assert "(8 files checked)" in result.output or "(8 files checked," in result.output
    assert "distinct" not in result.output
    shown = runner.invoke(main, ["check", "--show-files", str(COL_COL)]).output
    assert "8 files, 1 distinct graph read" in shown
    assert f"same graph  {os.path.relpath(VALIDATE)}: 8 files, ranks 0-7" in shown
    assert "same graph" not in runner.invoke(main, ["check", "--show-files", "--no-dedup", str(COL_COL)]).output


def test_a_rerun_is_answered_from_the_cache_for_every_member(monkeypatch, tmp_path, many_ranks):
    folder = many_ranks / "par-mismatch-ffn_col_col"
    for path in folder.rglob("*.ir"):  # an old mtime: the cache trusts a stat only once it cannot change
        st = path.stat()
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - 10**10))
    config = Config(cache=True, cache_dir=str(tmp_path / "cache"), jobs=1, plugins=False)
    first = engine.lint([str(folder)], config)
    calls = []
    monkeypatch.setattr(check, "check_one", lambda *a, **k: calls.append(a) or (_ for _ in ()).throw(AssertionError))
    monkeypatch.setattr(dedup, "graph_hash", lambda *a, **k: calls.append(a) or (_ for _ in ()).throw(AssertionError))
    second = engine.lint([str(folder)], config)
    assert not calls
    assert [f.to_dict() for f in second.findings] == [f.to_dict() for f in first.findings]
    assert len(second.files) == len(first.files) == 24


def test_the_config_file_can_turn_it_off(tmp_path, monkeypatch):
    monkeypatch.setenv("IRLINT_CACHE_DIR", str(tmp_path / "cache"))
    runner = CliRunner()
    config = tmp_path / "irlint.toml"
    config.write_text("dedup = false\n")
    result = runner.invoke(main, ["check", "--no-cache", "--config", str(config), str(COL_COL)])
    assert "(8 files checked)" in result.output
    assert "dedup = false" in runner.invoke(main, ["config", "--config", str(config), "--show"]).output
    config.write_text('dedup = "no"\n')
    result = runner.invoke(main, ["check", "--no-cache", "--config", str(config), str(COL_COL)])
    assert result.exit_code == 2 and "'dedup' must be true or false" in result.output


@pytest.mark.skipif(not GEN.exists(), reason="bench/gen_rank_folder.py is not here")
def test_show_files_names_a_stage_file_whose_graph_differs_by_rank(many_ranks):
    runner = CliRunner()
    folder = many_ranks / "par-mismatch-ffn_mul_disagrees_8ranks"
    shown = runner.invoke(main, ["check", "--show-files", str(folder)]).output
    # sub-groups of 4: group names and slice offsets differ, the copies of one real rank do not
    assert "differs by rank  21_validate_0082.ir: 8 graphs (ranks 0,8,16; ranks 1,9,17;" in shown
    assert (
        "differs by rank"
        not in runner.invoke(main, ["check", "--show-files", str(many_ranks / "par-mismatch-ffn_col_col")]).output
    )


def test_bytes_seen_before_are_not_hashed_again_masked(tmp_path, monkeypatch):
    data = VALIDATE.read_bytes()
    for rank, text in enumerate((data, data, data.replace(b"compile_phase: train.1", b"compile_phase: train.2"))):
        (tmp_path / f"rank_{rank}").mkdir()
        (tmp_path / f"rank_{rank}" / VALIDATE.name).write_bytes(text)
    masked: list = []
    graph_hash = dedup.graph_hash
    monkeypatch.setattr(dedup, "graph_hash", lambda stream: masked.append(stream) or graph_hash(stream))
    on, shared = _per_file([tmp_path], False, True)
    assert len(masked) == 2 and len(shared) == 2
    assert [d for d, _, _ in on] == [str(tmp_path / f"rank_{r}" / VALIDATE.name) for r in range(3)]


def test_the_json_summary_counts_the_graphs_read(tmp_path, monkeypatch):
    import json

    monkeypatch.setenv("IRLINT_CACHE_DIR", str(tmp_path / "cache"))
    runner = CliRunner()
    for extra, graphs in (([], 1), (["--no-dedup"], 8)):
        out = runner.invoke(main, ["check", "--no-cache", "--format", "json", *extra, str(COL_COL)]).output
        summary = json.loads(out)["summary"]
        assert (summary["files"], summary["graphs_read"]) == (8, graphs)


# --- without a cache: files of one size compared, not hashed ----------------------------------------------
def _ranks(tmp_path, texts):
    for rank, text in enumerate(texts):
        (tmp_path / f"rank_{rank}").mkdir()
        (tmp_path / f"rank_{rank}" / VALIDATE.name).write_bytes(text)
    return [str(tmp_path / f"rank_{rank}" / VALIDATE.name) for rank in range(len(texts))]


@pytest.mark.parametrize("piece", [4096, same_graph.COMPARE_BYTES])
def test_files_of_one_size_share_a_graph_only_when_their_bytes_or_masked_text_agree(tmp_path, monkeypatch, piece):
    monkeypatch.setattr(same_graph, "COMPARE_BYTES", piece)
    data = VALIDATE.read_bytes()
    at = data.rindex(b"sense_flag")
    late = data[:at] + b"sense_flaG" + data[at + 10 :]  # same size, differs in its last piece only
    early = data.replace(b"Default/", b"Defaulx/", 1)
    phase = data.replace(b"compile_phase: train.1", b"compile_phase: train.2")
    assert len({len(t) for t in (data, late, early, phase)}) == 1 and len({data, late, early, phase}) == 4
    paths = _ranks(tmp_path, (data, late, data, early, late, phase, early, data))
    masked: list = []
    graph_hash = dedup.graph_hash
    monkeypatch.setattr(dedup, "graph_hash", lambda stream: masked.append(stream) or graph_hash(stream))
    on, shared = _per_file([tmp_path], False, True)
    assert shared == {
        paths[2]: paths[0],
        paths[4]: paths[1],
        paths[5]: paths[0],
        paths[6]: paths[3],
        paths[7]: paths[0],
    }
    # each content once, and the last copy of the first again: hashed, not compared, once two differed
    assert len(masked) == 5
    off, _ = _per_file([tmp_path], False, False)
    assert on == off


def test_files_of_sizes_no_other_has_are_hashed_masked_only_and_still_share_a_graph(tmp_path, monkeypatch):
    data = VALIDATE.read_bytes()
    longer = data.replace(b"compile_phase: train.1", b"compile_phase: train.12345")
    paths = _ranks(tmp_path, (data, longer, data.replace(b"Default/", b"Default/x", 1)))
    stored: list = []
    monkeypatch.setattr(
        same_graph, "content_hash", lambda path: stored.append(path) or (_ for _ in ()).throw(AssertionError)
    )
    on, shared = _per_file([tmp_path], False, True)
    assert shared == {paths[0]: paths[1]} and not stored  # the larger file is read
    assert on == _per_file([tmp_path], False, False)[0]


def test_a_file_of_a_size_group_is_compared_with_the_first_then_hashed(tmp_path):
    data = VALIDATE.read_bytes()
    other = data.replace(b"Default/", b"Defaulx/", 1)
    paths = _ranks(tmp_path, (data, data, other, data, other, data))
    missing = str(tmp_path / "gone.ir")
    sha = content_hash(paths[2])
    assert same_graph.same_or_hashed(paths[0], paths[1:3]) == [True, sha]
    # once two differ, the rest are hashed: a copy of the first too (its masked hash still joins them)
    assert same_graph.same_or_hashed(paths[0], [paths[2], missing, paths[3], paths[4]]) == [
        sha,
        None,
        content_hash(paths[3]),
        sha,
    ]
    assert same_graph.same_or_hashed(missing, paths[:2]) == [content_hash(paths[0])] * 2
