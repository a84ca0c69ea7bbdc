"""Findings compared in the model's names on real compiles of one model in the forms a user's code
takes without its problems changing (tests/fixtures/names, made by
``tests/fixtures/corpus-gen/mf_names_gen.py``: MindFormers 2.1.0 Llama, dp 2 x mp 4, the default
select_recompute keys): MindFormers' lazy_inline form, the FFN class renamed
(``LlamaFeedForward`` -> ``FeedForward``), lazy_inline disabled, and both. A baseline written on one
and read on another hides every finding and leaves none fixed; ``irlint diff`` says 0 new, 0 fixed."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import TESTS

from irlint.cli import main

NAMES = TESTS / "fixtures" / "names"
BASE = NAMES / "names_base"
OTHERS = ("names_renamed", "names_no_lazy_inline", "names_renamed_no_lazy_inline")


def run(*args: str):
    return CliRunner().invoke(main, [*args])


def dump_text(case: str) -> str:
    (path,) = (NAMES / case / "rank_0").glob("21_validate_*.ir.gz")
    return gzip.decompress(path.read_bytes()).decode("utf-8")


def findings(case: str, *args: str) -> list[dict]:
    result = run(str(NAMES / case), "--format", "json", "-n", *args)
    assert result.exit_code == 1, result.output
    return json.loads(result.stdout)["findings"]


def test_the_pairs_differ_in_the_names_the_dump_prints():
    base = dump_text("names_base")
    assert "feed_forward-LlamaFeedForward" in base and "feed_forward-FeedForward" not in base
    for case in ("names_renamed", "names_renamed_no_lazy_inline"):
        text = dump_text(case)
        assert "feed_forward-FeedForward" in text and "feed_forward-LlamaFeedForward" not in text
    # lazy_inline prints most ops of a layer as `Default/<op>`; without it the full cell path
    lazy = {f["scope"] for f in findings("names_base", "--no-group")}
    full = {f["scope"] for f in findings("names_renamed_no_lazy_inline", "--no-group")}
    assert all("layers-CellList" not in s for s in lazy)
    assert all("layers-CellList" in s for s in full) and any("feed_forward-FeedForward" in s for s in full)


@pytest.mark.parametrize("other", OTHERS)
@pytest.mark.parametrize("grouping", [(), ("--no-group",)], ids=["grouped", "per-occurrence"])
def test_a_baseline_of_one_form_hides_every_finding_of_the_other(tmp_path, other, grouping):
    baseline = tmp_path / "baseline.json"
    written = run(str(BASE), "-n", "--write-baseline", str(baseline), *grouping)
    assert written.exit_code == 0, written.output
    before = findings("names_base", *grouping)
    after = findings(other, *grouping)
    assert len(before) == len(after) == (6 if grouping else 3)
    assert sorted(f["model_path"] for f in before) == sorted(f["model_path"] for f in after)
    read = run(str(NAMES / other), "-n", "--baseline", str(baseline), "--format", "json", *grouping)
    assert read.exit_code == 0, read.output
    assert json.loads(read.stdout)["findings"] == []


@pytest.mark.parametrize("other", OTHERS)
def test_diff_of_the_same_model_in_another_form_is_0_new_0_fixed(other):
    result = run("diff", str(BASE), str(NAMES / other), "--format", "json")
    d = json.loads(result.stdout)
    assert (len(d["new"]), len(d["fixed"]), len(d["unchanged"])) == (0, 0, 3)
    assert result.exit_code == 0
