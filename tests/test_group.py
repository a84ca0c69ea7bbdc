"""One problem, one finding, one line (issue 28): findings grouped by root cause, a headline in the
model's names first, suppressions and baselines by model path, one byte formatter."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import TESTS, quiet_config

from irlint.cli import main
from irlint.findings import CommWaste
from irlint.headline import MAX, layers_text
from irlint.runner.config import Suppression
from irlint.runner.engine import lint
from irlint.units import human_bytes, human_share, percent_change

CASES = TESTS / "fixtures" / "recompute"
MF = CASES / "par-rc-mf_dp2_mp4_select_blocked" / "rank_0" / "21_validate_0093.ir"
SHARED = TESTS.parent.parent / "shared" / "corpus"
MODES = TESTS / "fixtures" / "corpus" / "llama-recompute-modes"


def run(*args):
    return CliRunner().invoke(main, [*args, "--no-cache", "-j", "1"], catch_exceptions=False)


# --- units -----------------------------------------------------------------------------------------
def test_one_byte_formatter_binary_units_three_significant_figures():
    assert [human_bytes(n) for n in (0, 912, 1024, 5632, 168960, 1048575, int(1.21 * 2**30), 70 * 2**40)] == [
        "0 bytes",
        "912 bytes",
        "1.00 KiB",
        "5.50 KiB",
        "165 KiB",
        "1.00 MiB",
        "1.21 GiB",
        "70.0 TiB",
    ]
    assert human_bytes(-512) == "-512 bytes" and human_bytes(None) == "? bytes"
    assert [percent_change(*p) for p in ((1536, 1024), (100, 103), (0, 5), (7, 7))] == ["-33%", "+3%", "new", "+0%"]
    # one share formatter too (the comm account, the PC findings, the cost report and RC fixes' compute)
    assert [human_share(*p) for p in ((1, 8), (1, 3000), (0, 5), (5, 0), (2, 2))] == [
        "12.5%",
        "<0.1%",
        "0%",
        "0%",
        "100.0%",
    ]


def test_layers_are_named_as_spans():
    assert layers_text(("0", "1", "2", "5")) == "layers 0–2, 5"
    assert layers_text(("3",)) == "layer 3"
    assert layers_text(tuple(str(i) for i in range(0, 40, 3))) == "14 layers in 0–39"
    assert layers_text(("outside",)) == ""


# --- grouping --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def folder32(tmp_path_factory):
    """The issue's 32-layer folder: llama-recompute-modes with its layers copied (bench/gen_dump.py)."""
    out = tmp_path_factory.mktemp("gen32") / "g32"
    subprocess.run(
        [
            sys.executable,
            str(TESTS.parent / "bench" / "gen_dump.py"),
            "--input",
            str(MODES),
            "--layers",
            "32",
            "--out",
            str(out),
        ],
        check=True,
        capture_output=True,
    )
    return out


def test_a_32_layer_folder_reports_each_problem_once(folder32):
    text = run(str(folder32)).output
    assert len(text.splitlines()) <= 40, text
    assert "Found 2 findings (31 occurrences) in 1 file" in text
    assert "layers 0, 2, 4–31" in text and "165 KiB kept" in text
    concise = run("--format", "concise", "-q", str(folder32)).output.splitlines()
    # the message after the path fits (the path is the test's temporary folder, longer under xdist)
    assert len(concise) == 2 and all(len(line.split(": ", 1)[1]) <= 200 for line in concise)
    data = json.loads(run("--format", "json", str(folder32)).output)
    assert len(data["findings"]) == 2 and data["summary"]["occurrences"] == 31
    rc002 = next(f for f in data["findings"] if f["code"] == "RC002")
    assert len(rc002["occurrences"]) == 30 and rc002["bytes_at_stake"] == sum(
        o["bytes_at_stake"] for o in rc002["occurrences"]
    )
    assert [o["layer"] for o in rc002["occurrences"]] == ["0", "2", *map(str, range(4, 32))]
    assert len({(o["file"], o["line"], o["node"]) for o in rc002["occurrences"]}) == 30
    # --no-group: one per occurrence, as before
    flat = json.loads(run("--format", "json", "--no-group", str(folder32)).output)
    assert len(flat["findings"]) == 31 and all("occurrences" not in f for f in flat["findings"])


def test_group_config_key(folder32, tmp_path):
    config = tmp_path / "irlint.toml"
    config.write_text("group = false\n")
    out = run("--format", "concise", "-q", "--config", str(config), str(folder32)).output
    assert len(out.splitlines()) == 31


def test_sarif_one_result_per_root_cause_with_every_occurrence(folder32):
    from test_reporters import _sarif_validator

    data = json.loads(run("--format", "sarif", str(folder32)).output)
    _sarif_validator().validate(data)
    results = data["runs"][0]["results"]
    assert len(results) == 2
    rc002 = next(r for r in results if r["ruleId"] == "RC002")
    also = [loc for loc in rc002["relatedLocations"] if loc["message"]["text"].startswith("also here")]
    assert len(also) == 29 and len(rc002["properties"]["occurrences"]) == 30


def test_text_context_is_labelled_not_drawn_as_a_path(folder32):
    text = run(str(folder32)).output
    assert "↳" not in text and re.search(r"^\s+context \d+ %\d+ ", text, re.MULTILINE)
    assert re.search(r"^\s+why Mul is tagged for recompute", text, re.MULTILINE)  # the evidence, labelled


def _cases() -> list[Path]:
    roots = [TESTS / "fixtures" / "corpus", TESTS / "fixtures" / "recompute", TESTS / "fixtures" / "unseen"]
    if SHARED.is_dir():
        roots.append(SHARED)
    return sorted(p for root in roots if root.is_dir() for p in root.iterdir() if p.is_dir())


@pytest.mark.parametrize("case", _cases(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_line_short_and_headline_first(case, monkeypatch):
    monkeypatch.chdir(TESTS.parent.parent if case.is_relative_to(SHARED) else TESTS)
    report = lint([str(case)], quiet_config(extend_select=["RC004"]))
    from irlint.reporters import RenderContext, render

    # the message after the path: a path is never shortened, the message's parts are (the whole
    # line's 200 characters from the case's own folder: test_headline_fit)
    for f, line in zip(report.findings, render(report, "concise", RenderContext(rules=[])).splitlines(), strict=False):
        message = line.split(f" {f.code} [{f.severity}] ", 1)[1]
        assert len(message) <= 200 and "…" not in message, line
    for f in report.findings:
        assert len(f.headline) <= MAX and f.full_message.startswith(f.headline + ". ")
        # the deciding facts stay in the evidence and in JSON
        d = f.to_dict()
        assert d["node"] and d["line"] and d["evidence"] == f.message


def test_recomputed_copy_in_backward_is_one_finding_whose_cost_counts_both():
    from irlint.findings import Finding
    from irlint.runner.group import by_root_cause

    def pc(scope, line, waste, layer):
        return Finding(
            "PC001",
            "redundant-redistribution-chain",
            "warning",
            "f.ir",
            line,
            "@g",
            f"%{line}",
            "AllGather",
            scope,
            "m",
            identity=(("AllGather",), scope.rsplit("/", 1)[0]),
            waste=CommWaste(waste),
            layer=layer,
            model_path=f"model.layers.{layer}.attention",
        )

    forward = pc("Default/network-N/model-M/layers-CellList/0-L/attention-A/AllGather-op0", 10, 4096, "0")
    copy = pc("recompute_Default/network-N/model-M/layers-CellList/0-L/attention-A/AllGather-op3", 90, 4096, "0")
    other = pc("Default/network-N/model-M/layers-CellList/1-L/attention-A/AllGather-op1", 50, 4096, "1")
    (group,) = by_root_cause([forward, copy, other])
    assert [o.line for o in group.occurrences] == [10, 90, 50]
    assert "12.0 KiB/step wasted" in group.headline and "layers 0–1 (3 occurrences)" in group.headline


# --- the model's names ----------------------------------------------------------------------------
def test_findings_carry_layer_and_model_path():
    report = lint([str(MF)], quiet_config(group=False))
    assert {(f.layer, f.model_path) for f in report.findings if f.op == "SiLU"} == {
        ("0", "model.layers.0.feed_forward.w1.activation"),
        ("1", "model.layers.1.feed_forward.w1.activation"),
    }
    # lazy_inline: the printed scope names no cell (Default/SiLU-op0)
    assert all(re.fullmatch(r"Default/SiLU-op\d+", f.scope) for f in report.findings if f.op == "SiLU")


def test_suppression_by_model_path_on_a_lazy_inline_dump():
    config = quiet_config(
        group=False,
        suppress=[
            Suppression(path=r"layers\.1\.feed_forward", reason="known"),
            Suppression(scope="layers-CellList/7-", reason="stale"),
        ],
    )
    report = lint([str(MF)], config)
    silenced = {(f.layer, f.model_path.rsplit(".layers.", 1)[1]) for f, _ in report.suppressed}
    assert silenced == {("1", "1.feed_forward.w1.activation"), ("1", "1.feed_forward")}
    assert not [f for f in report.findings if f.layer == "1" and ".feed_forward" in f.model_path]
    assert [s.scope for s in report.unused_suppressions] == ["layers-CellList/7-"]
    assert any("matched no finding" in note and "layers-CellList/7-" in note for note in report.notes)
    # `scope` matches the model path too: the printed-scope form lazy_inline does not print still works
    report = lint([str(MF)], quiet_config(group=False, suppress=[Suppression(scope=r"layers\.0\.attention")]))
    assert [f.node for f, _ in report.suppressed] == ["%64"] and not report.unused_suppressions


def test_unused_suppression_is_reported_by_the_cli(tmp_path):
    config = tmp_path / "irlint.toml"
    config.write_text('[[suppress]]\npath = "layers\\\\.9\\\\.nothing"\n')
    result = CliRunner().invoke(
        main, ["--config", str(config), "--no-cache", "--format", "json", str(MF)], catch_exceptions=False
    )
    assert "[[suppress]] entry path 'layers\\\\.9\\\\.nothing' matched no finding" in result.stderr
    assert json.loads(result.stdout)["summary"]["unused_suppressions"] == ["path 'layers\\\\.9\\\\.nothing'"]


def test_html_per_layer_chart_uses_the_resolved_layer(tmp_path):
    out = tmp_path / "r.html"
    run("--format", "html", "-o", str(out), str(MF))
    page = out.read_text(encoding="utf-8")
    chart = page[page.index("per layer") :]
    assert "layer 0" in chart and "layer 1" in chart and ">outside<" not in chart


def test_baseline_and_diff_survive_a_class_rename(tmp_path):
    # the same graph with its model classes renamed (what a class rename changes in a dump: the
    # ``name-Class`` parts of every scope)
    renamed = tmp_path / "renamed" / "21_validate_0093.ir"
    renamed.parent.mkdir()
    text = MF.read_text(encoding="utf-8")
    assert "feed_forward-LlamaFeedForward" in text
    renamed.write_text(
        text.replace("LlamaFeedForward", "FeedForward").replace("LLamaAttention", "Attention"), encoding="utf-8"
    )
    baseline = tmp_path / "b.json"
    assert run(str(MF), "--write-baseline", str(baseline)).exit_code == 0
    result = run(str(renamed), "--baseline", str(baseline), "--format", "json")
    assert result.exit_code == 0 and json.loads(result.output)["findings"] == []
    diff = CliRunner().invoke(main, ["diff", str(MF), str(renamed), "--format", "json"], catch_exceptions=False)
    out = json.loads(diff.output)
    assert out["new"] == [] and out["fixed"] == [] and out["unchanged"]


def test_baseline_matches_a_group_occurrence_by_occurrence(folder32, tmp_path):
    baseline = tmp_path / "b.json"
    run(str(folder32), "--write-baseline", str(baseline))
    entries = json.loads(baseline.read_text())["findings"]
    assert len(entries) == 31 and all(e["model_path"] for e in entries)
    # one occurrence dropped from the baseline: the group comes back with that occurrence alone
    data = json.loads(baseline.read_text())
    data["findings"] = [e for e in data["findings"] if ".layers.7." not in e["model_path"] or e["code"] != "RC002"]
    baseline.write_text(json.dumps(data))
    new = json.loads(run(str(folder32), "--baseline", str(baseline), "--format", "json").output)["findings"]
    assert [(f["code"], f["layer"]) for f in new] == [("RC002", "7")] and "occurrences" not in new[0]


# --- small CLI conventions -------------------------------------------------------------------------
def test_a_mistyped_command_is_suggested_not_linted(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["memroy", "x"])
    assert result.exit_code == 2
    assert "memroy: no such file or folder, nor a command; did you mean `irlint memory`?" in result.output
    # a path of that name is linted as ever
    (tmp_path / "memroy").mkdir()
    result = CliRunner().invoke(main, ["memroy", "--no-cache"])
    assert "did you mean" not in result.output and "no graph IR dumps" in result.output


# --- reports that agree ----------------------------------------------------------------------------
def test_memory_headline_is_per_device_and_the_html_has_the_pipeline_figures(tmp_path):
    pipeline = CASES / "par-rc-pp2_dp2_mp2_micro4_select"
    text = CliRunner().invoke(main, ["memory", str(pipeline)], catch_exceptions=False).output
    # two pipeline stages live on two devices: the largest one, not their sum (the device peak, then what it keeps)
    lines = text.splitlines()
    assert lines[0].startswith("Device peak: 1.31 MiB on rank 0, stage 0; ")
    assert "Largest device: 76.6 KiB kept for backward at its peak (rank 0, 2 of 4 micro batches in flight)" in lines
    out = tmp_path / "m.html"
    CliRunner().invoke(main, ["memory", str(pipeline), "--format", "html", "-o", str(out)], catch_exceptions=False)
    page = out.read_text(encoding="utf-8")
    assert "Largest device: 76.6 KiB kept for backward at its peak" in page
    assert (
        "2 of 4 micro batches in flight, peak 76.6 KiB" in page
        and "1 of 4 micro batches in flight, peak 60.5 KiB" in page
    )
    assert "all files" not in page


def test_comm_headline_gives_the_share_of_waste():
    folder = TESTS / "fixtures" / "corpus" / "par-mismatch-ffn_mul_disagrees_8ranks"
    text = CliRunner().invoke(main, ["comm", str(folder)], catch_exceptions=False).output
    # the issue's hand count: 36 KiB of the 54 KiB rank 0 receives per step are the PC findings' waste
    assert text.splitlines()[0] == "Redistribution waste: 36.0 KiB of 54.0 KiB received per rank and step (67%), rank 0"
    assert "bytes of waste" not in text and "36.0 KiB" in text


def test_comm_writes_its_report_with_o(tmp_path):
    folder = TESTS / "fixtures" / "corpus" / "par-mismatch-ffn_mul_disagrees_8ranks"
    out = tmp_path / "sub" / "comm.json"
    result = CliRunner().invoke(main, ["comm", str(folder), "--format", "json", "-o", str(out)], catch_exceptions=False)
    assert result.exit_code == 0 and result.output == ""
    assert json.loads(out.read_text())["files"][0]["waste_bytes"] == 36 * 1024
