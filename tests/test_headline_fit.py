"""One-line findings written to fit, not cut (irlint.headline): over every case folder, linted from
the case's own folder as a user runs it, no headline has an ellipsis or passes 160 characters, a
finding with a fix keeps it whole on its concise line, and no concise line passes 200 characters.
``scripts/headline_fit.py`` runs the same check and prints what does not fit."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from irlint.findings import CommWaste, Finding, Report, WastedBytes
from irlint.headline import MAX, headline
from irlint.reporters import RenderContext
from irlint.reporters.concise import LINE_MAX, render

REPO = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("headline_fit", REPO / "scripts" / "headline_fit.py")
assert _spec and _spec.loader
fit = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fit)

SHARED = REPO.parent / "shared" / "corpus"
FIXTURES = sorted(p for p in (REPO / "tests" / "fixtures").glob("*/*") if p.is_dir() and "corpus-gen" not in p.parts)
SHARED_NAMES = [
    "aliased-scopes-l4",
    "par-llama_mp-dp2_mp4_optpar_wrong_wo",
    "par-mismatch-ffn_col_col",
    "par-rc-mf_dp2_mp4_select_blocked",
    "par-rc-pp2_dp2_mp2_micro4_select",
    "par-mismatch-mm_rows8_to_cols8",
]


@pytest.mark.slow
@pytest.mark.parametrize("case", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_fixture_case_has_whole_one_line_findings(case):
    assert list(fit.problems(case)) == []


@pytest.mark.slow
def test_every_shared_case_has_whole_one_line_findings():
    if not SHARED.is_dir():
        pytest.skip("no ../shared/corpus beside the repository")
    cases = sorted(p for p in SHARED.iterdir() if p.is_dir())
    assert cases
    assert [(c.name, t) for c in cases for t in fit.problems(c)] == []


def _chain_finding(**kw) -> Finding:
    base = {
        "code": "PC001",
        "rule": "redundant-redistribution-chain",
        "severity": "warning",
        "file": "rank_0/21_validate_0093.ir.gz",
        "line": 1496,
        "graph": "g",
        "node": "%1",
        "op": "AllGather",
        "scope": "Default/network/self_attention",
        "message": "evidence",
        "model_path": "model.layers.0.self_attention",
        "layer": "0",
        "cause": "AllGather between Tile tile_kv (self_attention) and BatchMatMul batch_matmul (core_attention): "
        "gather-then-slice",
        "fix": "BatchMatMul batch_matmul (core_attention) in_strategy ((1, 2, 1, 4), (1, 2, 1, 4))",
        "waste_kinds": ("gather-then-slice",),
        "wasted": (WastedBytes("g", "%1", "AllGather", 12288),),
        "waste": CommWaste(12288),
    }
    base.update(kw)
    return Finding(**base)


def test_a_long_cause_gives_way_to_its_kinds_phrase_and_the_fix_stays_whole():
    f = _chain_finding()
    text = headline(f)
    assert len(text) <= MAX and "…" not in text
    assert "gathered, then sliced back" in text and text.endswith(f"fix: {f.fix}")
    assert "12.0 KiB/step wasted" in text


def test_a_short_sentence_is_left_whole():
    f = _chain_finding(
        cause="AllGather between ReLU (net) and Add (net): gather-then-slice", fix="in_strategy ((1, 8),)"
    )
    assert headline(f) == (
        "AllGather in self_attention, layer 0: AllGather between ReLU (net) and Add (net): gather-then-slice; "
        "12.0 KiB/step wasted; fix: in_strategy ((1, 8),)"
    )


def test_a_long_path_shortens_the_message_not_the_path_and_keeps_the_fix():
    deep = "rank_0/" + "/".join(["a-very-long-folder-name"] * 1) + "/21_validate_0093.ir.gz"
    f = _chain_finding(file=deep, fix="Tile tile_kv (self_attention) in_strategy ((4, 2, 1, 1),)")
    assert len(deep + headline(f)) > LINE_MAX
    line = render(Report(findings=[f]), RenderContext()).splitlines()[0]
    assert line.startswith(deep + ":1496:1: PC001 [warning] ")
    assert len(line) <= LINE_MAX and "…" not in line and f"fix: {f.fix}" in line


def test_a_path_too_long_for_any_form_keeps_the_shortest_whole():
    deep = "x" * 190 + ".ir"
    f = _chain_finding(file=deep)
    line = render(Report(findings=[f]), RenderContext()).splitlines()[0]
    assert deep in line and "…" not in line and "fix: BatchMatMul batch_matmul" in line


def test_a_layout_fix_too_long_for_the_line_gives_up_its_device_matrix_not_its_layout():
    fix = 'ChatGLM2SelfAttention Layout layout("dp", "mp", "None", "cp") of Layout((1, 4, 1, 2), ("dp", "cp", "rep", "mp"))'
    f = _chain_finding(cause="tuple strategy beside a Layout (4 chains)", fix=fix, layer="", model_path="")
    text = headline(f)
    assert len(text) <= MAX and "…" not in text
    assert text.endswith('fix: ChatGLM2SelfAttention Layout layout("dp", "mp", "None", "cp")'), text
