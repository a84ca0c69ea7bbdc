"""Accounts at cluster scale: ``irlint comm``, ``memory`` and ``cost`` show one set of tables per
distinct graph (ranks that hold the same graph, as the lint groups them, share one), never a column
per rank, folded to the width asked for, with model paths in their tables."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GEN = ROOT / "bench" / "gen_rank_folder.py"
SOURCE = ROOT / "tests" / "fixtures" / "corpus" / "par-mismatch-ffn_col_col"
RANKS = 24


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    out = tmp_path_factory.mktemp("ranks") / f"rank{RANKS}"
    subprocess.run(
        [sys.executable, str(GEN), "--input", str(SOURCE), "--ranks", str(RANKS), "--out", str(out)],
        check=True,
        capture_output=True,
    )
    return out


def _run(*args: str, columns: str = "120") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"} | ({"COLUMNS": columns} if columns else {})
    return subprocess.run(
        [sys.executable, "-m", "irlint", *args], capture_output=True, text=True, env=env, cwd=ROOT, check=False
    )


@pytest.mark.slow
@pytest.mark.parametrize("command", ["comm", "memory", "cost"])
def test_ranks_of_one_graph_share_one_table_that_fits_the_width(ranks, command):
    done = _run(command, str(ranks))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert f"ranks 0–{RANKS - 1}: same graph ({RANKS} files" in done.stdout
    assert len(lines) < 80 and max(map(len, lines)) <= 120
    assert "(rank 1)" not in done.stdout and "rank_1/" not in done.stdout  # no column, no line per rank
    assert not [ln for ln in lines if ln.lstrip().startswith("rank 1")]  # nor a device line per rank
    assert "Default/network" not in done.stdout  # printed scopes give way to model paths


def test_distinct_graphs_get_a_table_each_and_no_width_means_whole_lines():
    pp = ROOT / "tests" / "fixtures" / "corpus" / "par-mindformers-llama_pp2_mp4"
    done = _run("comm", str(pp), columns="")
    assert done.returncode == 0, done.stderr
    assert "Bytes received per rank and step, per layer (rank 0)" in done.stdout
    assert "Bytes received per rank and step, per layer (rank 4)" in done.stdout
    assert "received (rank" not in done.stdout  # a table per graph, not a column per rank
    assert any(len(line) > 200 for line in done.stdout.splitlines())  # the note: one line, not folded


@pytest.mark.slow
@pytest.mark.parametrize("command", ["comm", "memory", "cost"])
def test_the_html_pages_have_one_section_per_distinct_graph(ranks, command, tmp_path):
    page = tmp_path / f"{command}.html"
    done = _run(command, str(ranks), "--format", "html", "-o", str(page))
    assert done.returncode == 0, done.stderr
    html = page.read_text(encoding="utf-8")
    assert html.count('<h2 id="file-') == 1
    assert f"ranks 0–{RANKS - 1}: same graph ({RANKS} files)" in html
    assert f'<div class="n">{RANKS}</div><div class="k">files read</div>' in html
