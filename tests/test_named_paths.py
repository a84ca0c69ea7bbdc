"""The paths a user names: a folder named twice or with its sub-folder is read once; a path that
cannot be used is an input problem in the report, and the rest is linted; a folder of links to rank
folders elsewhere (a cluster collected from nodes) is read (issue 31, items 5, 6 and 17)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from irlint.cli import main
from irlint.runner.discover import discover_inputs

S2 = Path(__file__).parent / "fixtures" / "corpus" / "s2_ffn_3d_reshape_blocks"
PAR = Path(__file__).parent / "fixtures" / "corpus" / "par-mismatch-mm_rows8_to_cols8"


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def lint_json(*args):
    result = run("-n", *args, "--format", "json")
    return result.exit_code, json.loads(result.stdout)


def _findings(data) -> list:
    return [(f["code"], f["file"], f["line"], f.get("ranks")) for f in data["findings"]]


# --- item 5: a folder named twice, or with its sub-folder -----------------------------------------
@pytest.fixture
def graph(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "graph"
    for rank in (0, 3):
        shutil.copytree(PAR / "rank_0", folder / f"rank_{rank}")
    monkeypatch.chdir(tmp_path)
    return folder


@pytest.mark.parametrize("second", ["graph", "./graph", "ABS", "graph/", "graph/rank_3", "graph/rank_0/"])
def test_a_folder_named_twice_or_with_its_sub_folder_is_read_once(graph, second):
    alone = lint_json("graph")
    both = lint_json("graph", str(graph) if second == "ABS" else second)
    assert both[0] == alone[0] == 1, both
    assert _findings(both[1]) == _findings(alone[1])
    assert both[1]["summary"]["files"] == alone[1]["summary"]["files"]
    assert both[1]["diagnostics"] == []


def test_the_sub_folder_first_then_the_folder(graph):
    alone = lint_json("graph")
    both = lint_json("graph/rank_3", "graph")
    assert both[0] == 1 and both[1]["summary"]["files"] == alone[1]["summary"]["files"]


def test_inspect_of_a_folder_named_twice(graph):
    alone = run("inspect", "graph", "--format", "json")
    both = run("inspect", "graph", "./graph", "graph/rank_3", "--format", "json")
    assert both.exit_code == alone.exit_code == 0, both.output
    assert both.stdout == alone.stdout


# --- item 6: one unusable path among good ones ----------------------------------------------------
@pytest.mark.parametrize("bad", ["missing", "empty", "links", "loop"])
def test_an_unusable_path_is_an_input_problem_and_the_rest_is_reported(tmp_path, monkeypatch, bad):
    monkeypatch.chdir(tmp_path)
    shutil.copytree(S2, tmp_path / "good")
    if bad == "empty":
        (tmp_path / "empty").mkdir()
    elif bad == "links":
        (tmp_path / "links").mkdir()
        (tmp_path / "links" / "a").symlink_to("/", target_is_directory=True)
        (tmp_path / "links" / "b").symlink_to(tmp_path / "nowhere")
    elif bad == "loop":  # a link to a link back to it: no internal error from the config search
        (tmp_path / "loop").symlink_to(tmp_path / "loop2")
        (tmp_path / "loop2").symlink_to(tmp_path / "loop")
    alone = lint_json("good")
    result = run("-n", bad, "good", "--format", "sarif", "-o", "x.sarif")
    assert result.exit_code == 2, result.output
    sarif = json.loads((tmp_path / "x.sarif").read_text())
    (sarif_run,) = sarif["runs"]
    assert len(sarif_run["results"]) == len(alone[1]["findings"]) == 2
    notes = sarif_run["invocations"][0]["toolExecutionNotifications"]
    assert bad in [n["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].split("/")[0] for n in notes]
    assert sarif_run["invocations"][0]["executionSuccessful"] is False
    code, data = lint_json(bad, "good")
    assert code == 2 and _findings(data) == _findings(alone[1])
    problem = next(d for d in data["diagnostics"] if d["file"] == bad)
    assert problem["code"] in ("IR001", "IR002")
    concise = run("-n", bad, "good", "--format", "concise")
    assert concise.exit_code == 2 and f"{bad}:1:1: {problem['code']}" in concise.stdout


def test_a_missing_path_alone_still_writes_the_machine_report(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run("-n", "missing", "--format", "sarif", "-o", "x.sarif")
    assert result.exit_code == 2
    notes = json.loads((tmp_path / "x.sarif").read_text())["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert [(n["descriptor"]["id"], n["message"]["text"]) for n in notes] == [("IR001", "no such file or folder")]
    assert "no such file or folder" in run("-n", "missing").output


# --- item 17: folder links ------------------------------------------------------------------------
@pytest.fixture
def cluster(tmp_path, monkeypatch) -> Path:
    """cluster/rank_N -> nodeN/graph, as ranks collected from the nodes of a job are."""
    for rank in (0, 1):
        shutil.copytree(PAR / "rank_0", tmp_path / f"node{rank}" / "graph")
    (tmp_path / "cluster").mkdir()
    for rank in (0, 1):
        (tmp_path / "cluster" / f"rank_{rank}").symlink_to(tmp_path / f"node{rank}" / "graph", target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    return tmp_path / "cluster"


def test_a_cluster_folder_of_links_to_rank_folders_is_read(cluster):
    code, data = lint_json("cluster")
    assert code == 1 and data["diagnostics"] == []
    assert data["summary"]["files"] == 2
    assert [f["ranks"] for f in data["findings"]] == [[0, 1]]
    shown = run("-n", "cluster", "--show-files")
    assert shown.exit_code == 0, shown.output
    for rank in (0, 1):
        assert f"link  cluster/rank_{rank} -> {cluster.parent / f'node{rank}' / 'graph'}" in shown.output


def test_links_are_followed_once_and_cycles_end(cluster):
    (cluster / "rank_2").symlink_to(cluster.parent / "node0" / "graph", target_is_directory=True)  # again
    (cluster.parent / "node1" / "graph" / "back").symlink_to(cluster, target_is_directory=True)  # a cycle
    found = discover_inputs(["cluster"])
    reals = [os.path.realpath(f.path) for f in found.files]
    per_rank = len(list((PAR / "rank_0").iterdir()))
    assert len(reals) == len(set(reals)) == 2 * per_rank and found.diagnostics == []
    assert sorted(link for link, _ in found.links) == ["cluster/rank_0", "cluster/rank_1"]


def test_a_link_to_a_folder_without_dumps_is_named_with_how_to_read_it(cluster, tmp_path):
    home = tmp_path / "home"
    (home / "deep" / "graph").mkdir(parents=True)
    shutil.copy(PAR / "rank_0" / "21_validate_0082.ir", home / "deep" / "graph")
    (home / "notes.txt").write_text("hello\n")
    (cluster / "home").symlink_to(home, target_is_directory=True)
    (cluster / "root").symlink_to("/", target_is_directory=True)
    code, data = lint_json("cluster")
    assert code == 2 and data["summary"]["files"] == 2
    problems = sorted((d["file"], d["code"]) for d in data["diagnostics"])
    assert problems == [("cluster/home", "IR001"), ("cluster/root", "IR001")]
    for d in data["diagnostics"]:
        assert "irlint cluster/*" in d["message"] and "-L/--follow-links" in d["message"]
    (cluster / "root").unlink()  # -L follows every link: not one to the whole file system
    code, data = lint_json("cluster", "-L", "--select", "PC")
    assert data["summary"]["files"] == 3 and not any(d["file"] == "cluster/home" for d in data["diagnostics"])


def test_a_folder_of_links_that_lead_nowhere_says_so(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c").mkdir()
    for name in ("a", "b"):
        (tmp_path / "c" / name).symlink_to(tmp_path, target_is_directory=True)
    code, data = lint_json("c")
    assert code == 2
    folder = next(d for d in data["diagnostics"] if d["file"] == "c")
    assert "2 links to folders that hold no graph IR dump" in folder["message"]


def test_a_link_that_leads_nowhere_is_named(cluster):
    # a rank folder linked from a node that is not mounted must not vanish from the run
    (cluster / "rank_2").symlink_to(cluster.parent / "node2" / "graph", target_is_directory=True)
    code, data = lint_json("cluster")
    assert code == 2 and data["summary"]["files"] == 2
    (problem,) = data["diagnostics"]
    assert (problem["file"], problem["code"]) == ("cluster/rank_2", "IR001")
    assert "node2/graph, which does not exist" in problem["message"]


@pytest.mark.parametrize("command", ["memory", "comm"])
def test_memory_and_comm_report_the_usable_paths_too(tmp_path, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    shutil.copytree(S2, tmp_path / "good")
    result = run(command, "missing", "good", "--format", "json")
    assert result.exit_code == 2
    assert [f["file"] for f in json.loads(result.stdout)["files"]] == ["good/21_validate_0076.ir"]
    assert "missing:0: unreadable: no such file or folder" in result.stderr
