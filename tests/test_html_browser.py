"""The HTML reports in a real browser: headless Chromium (Debian's ``chromium``) driven over the
DevTools protocol (``scripts/chromium_cdp.py``). Skipped when no chromium is installed, except in
CI (``CI`` set), where a missing browser fails the run."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import CORPUS, TESTS

from irlint.cli import main

sys.path.insert(0, str(TESTS.parent / "scripts"))
from chromium_cdp import Browser, find_chromium  # noqa: E402

IN_CI = os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


@pytest.fixture(scope="module")
def browser():
    if find_chromium() is None:
        if IN_CI:
            pytest.fail("chromium is not installed, and CI must run the browser test (.ci/run installs it)")
        pytest.skip(
            "chromium is not installed (apt-get install chromium): the HTML reports are not checked in a browser"
        )
    with Browser(width=1280, height=900) as b:
        yield b


def irlint(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, [*args])
    return result.exit_code, result.stdout


def page(tmp_path: Path, name: str, *args: str) -> tuple[Path, int]:
    out = tmp_path / name
    code, _ = irlint(*args, "-o", str(out))
    assert out.exists()
    return out, code


SHAPES = """(() => {
  const box = el => { const r = el.getBoundingClientRect(); return [Math.round(r.width), Math.round(r.height)]; };
  return {
    findings: [...document.querySelectorAll('article.finding')].map(a => ({
      id: a.id,
      chain: [...a.querySelectorAll('svg.chain')].map(svg => ({
        size: box(svg),
        nodes: [...svg.querySelectorAll('g.chain-node')].map(g => ({
          kind: g.getAttribute('class').split(' ')[1], size: box(g.querySelector('rect')),
          op: g.querySelector('text').textContent})),
        edges: svg.querySelectorAll('line').length,
        labels: [...svg.querySelectorAll(':scope > text')].map(t => t.textContent),
        marks: [...svg.querySelectorAll('g.chain-node > text')].map(t => t.textContent),
      })),
      snippet: (a.querySelector('.snippet pre') || {}).textContent || '',
      headline: (a.querySelector('p.headline') || {}).textContent || '',
      evidence: (a.querySelector('details.evidence') || {}).textContent || '',
      evidenceOpen: !!(a.querySelector('details.evidence') || {}).open,
      location: a.querySelector('.loc').textContent,
    })),
    bars: [...document.querySelectorAll('svg.bars rect.bar')].map(r => [r.querySelector('title').textContent, box(r)[0]]),
    cards: [...document.querySelectorAll('.card')].map(c => c.innerText.replace(/\\s+/g, ' ').trim().toLowerCase()),
  };
})()"""


def test_the_console_check_catches_a_broken_page(browser, tmp_path):
    broken = tmp_path / "broken.html"
    broken.write_text("<p>x</p><script>console.error('boom'); notDefined();</script>", encoding="utf-8")
    browser.open(broken)
    errors = browser.console_errors()
    assert any("boom" in e for e in errors) and any("notDefined" in e for e in errors)


def test_lint_report_renders_findings_chains_and_fix_snippets(browser, tmp_path, monkeypatch):
    monkeypatch.chdir(CORPUS)
    cases = ("par-mismatch-mm_rows8_to_cols8", "s2_ffn_3d_reshape_blocks")
    html, code = page(tmp_path, "lint.html", *cases, "--format", "html", "-n")
    assert code == 1
    _, raw = irlint(*cases, "--format", "json", "-n")
    expected = json.loads(raw)["findings"]
    browser.open(html)
    shown = browser.evaluate(SHAPES)
    assert browser.console_errors() == []
    assert len(shown["findings"]) == len(expected) == 3
    assert {f["location"] for f in shown["findings"]} == {f"{f['file']}:{f['line']}" for f in expected}
    for f in shown["findings"]:
        (chain,) = f["chain"]
        assert chain["size"][0] > 300 and chain["size"][1] > 50
        assert all(n["size"][0] > 100 and n["size"][1] > 30 for n in chain["nodes"])
        assert chain["edges"] == len(chain["nodes"]) - 1  # one arrow into every node but the first
    pc = next(f for f in shown["findings"] if "par-mismatch" in f["location"])
    (chain,) = pc["chain"]
    # producer -> AllGather -> StridedSlice -> consumer, and the backward transpose under it
    assert [n["op"] for n in chain["nodes"]] == [
        "MatMul",
        "AllGather",
        "StridedSlice",
        "ReLU",
        "StridedSliceGrad",
        "ReduceScatter",
    ]
    assert [n["kind"] for n in chain["nodes"]] == [
        "chain-producer",
        "chain-finding",
        "chain-step",
        "chain-consumer",
        "chain-backward",
        "chain-backward",
    ]
    # edges labelled with the tensor handed on and its bytes, and what the gather receives
    assert {"Float32(8, 32)", "1.00 KiB", "Float32(64, 32)", "8.00 KiB", "receives 7.00 KiB"} <= set(chain["labels"])
    assert "in_strategy = ((1, 1), (1, 8))" in pc["snippet"]
    rc = [f for f in shown["findings"] if "s2_ffn" in f["location"]]
    for f in rc:
        (chain,) = f["chain"]
        kinds = [n["kind"] for n in chain["nodes"]]
        assert kinds[0] == "chain-finding" and "chain-blocking" in kinds and kinds[-1] == "chain-backward"
        assert "not recomputed" in chain["marks"] and "kept for backward: 4.00 KiB" in chain["labels"]
        assert ".reshape.recompute()  # in the cell that calls self.w" in f["snippet"]  # plain MindSpore: model code
    # every card: the headline first, the evidence (node ids, printed scopes) folded under it
    by_location = {f"{e['file']}:{e['line']}": e for e in expected}
    for f in shown["findings"]:
        e = by_location[f["location"]]
        assert f["headline"] == e["headline"] and len(f["headline"]) <= 160
        assert e["evidence"][:60] in f["evidence"] and not f["evidenceOpen"]
    assert any(c.startswith("3 findings") for c in shown["cards"])


def test_copy_button_and_print(browser, tmp_path, monkeypatch):
    monkeypatch.chdir(CORPUS)
    html, _ = page(tmp_path, "lint.html", "s2_ffn_3d_reshape_blocks", "--format", "html", "-n")
    browser.open(html)
    label = browser.evaluate(
        "new Promise(done => { const b = document.querySelector('button.copy'); b.click();"
        " setTimeout(() => done(b.textContent), 500); })"
    )
    assert label in ("copied", "selected: Ctrl+C")
    assert (
        browser.evaluate("window.getSelection().toString()").startswith(
            "# by hand, at /home/user/llm/llm_common.py:64: self.w1.reshape.recompute()"  # the fix plan's (plain MindSpore)
        )
        or label == "copied"
    )
    pdf = browser.call("Page.printToPDF", {"printBackground": True})["data"]
    assert len(pdf) > 1000
    assert browser.console_errors() == []


def test_memory_report_draws_one_bar_per_layer(browser, tmp_path):
    html, code = page(tmp_path, "memory.html", "memory", str(CORPUS / "llama-recompute-modes"), "--format", "html")
    assert code == 0
    browser.open(html)
    shown = browser.evaluate(SHAPES)
    assert browser.console_errors() == []
    widths = {title.split(" kept bytes")[0]: w for title, w in shown["bars"]}
    assert list(widths) == ["layer 0", "layer 1", "layer 2", "layer 3", "outside"]
    # layer 2 keeps the most (57,472 bytes), layer 3 (whole layer recomputed) the least (4,096)
    assert max(widths, key=widths.get) == "layer 2" and min(widths, key=widths.get) == "layer 3"
    assert widths["layer 3"] < widths["layer 2"] / 10


def test_diff_report_shows_fixed_findings_and_before_after_bars(browser, tmp_path, monkeypatch):
    monkeypatch.chdir(CORPUS)
    html, code = page(
        tmp_path, "diff.html", "diff", "s2_ffn_3d_reshape_blocks", "s3_ffn_3d_reshape_fixed", "--format", "html", "-n"
    )
    assert code == 0
    browser.open(html)
    shown = browser.evaluate(SHAPES)
    assert browser.console_errors() == []
    assert len(shown["findings"]) == 2 and all(f["chain"] for f in shown["findings"])
    bars = dict(shown["bars"])
    before, after = bars["outside before: 18.0 KiB"], bars["outside after: 10.0 KiB"]
    assert 0 < after < before
    assert "2 findings fixed" in shown["cards"]
    text = browser.evaluate("document.body.innerText")
    assert "Recompute state changed" in text and "No new finding" in text


def test_parallel_diff_charts_the_communication_per_collective_kind(browser, tmp_path, monkeypatch):
    monkeypatch.chdir(CORPUS)
    html, code = page(
        tmp_path,
        "pdiff.html",
        "diff",
        "par-mismatch-mm_rows8_to_cols8",
        "par-fixed-mm_col_row_mp8",
        "--format",
        "html",
        "-n",
    )
    assert code == 0
    browser.open(html)
    shown = browser.evaluate(SHAPES)
    assert browser.console_errors() == []
    bars = dict(shown["bars"])
    # the gather and its backward ReduceScatter are gone; mm2's AllReduce stays
    assert bars["AllGather before: 7.00 KiB"] > 50 and bars["AllGather after: 0 bytes"] < 2
    assert bars["ReduceScatter before: 7.00 KiB"] > 50 and bars["ReduceScatter after: 0 bytes"] < 2
    assert 0 < bars["AllReduce after: 14.0 KiB"] < bars["AllReduce before: 17.5 KiB"]
    assert "31.5 kib → 14.0 kib communication received / rank / step" in shown["cards"]


TABLES = """(() => [...document.querySelectorAll('table')].map(t => ({
  cls: t.className,
  head: [...t.querySelectorAll('th')].map(th => th.textContent.trim()),
  rows: [...t.querySelectorAll('tr')].slice(1).map(tr => ({cls: tr.className,
    cells: [...tr.querySelectorAll('td')].map(td => td.innerText.trim())})),
  width: Math.round(t.getBoundingClientRect().width)})))()"""


def test_memory_report_shows_the_findings_bytes_and_the_pipeline_peak(browser, tmp_path):
    from irlint.units import human_bytes

    case = TESTS / "fixtures" / "recompute" / "par-rc-pp2_dp2_mp2_micro4_select"
    html, code = page(tmp_path, "pmemory.html", "memory", str(case), "--format", "html")
    assert code == 0
    _, raw = irlint("memory", str(case), "--format", "json")
    files = json.loads(raw)["files"]
    browser.open(html)
    shown = browser.evaluate(SHAPES)
    tables = [t for t in browser.evaluate(TABLES) if t["cls"] == "layers"]
    assert browser.console_errors() == []
    assert len(tables) == len(files) == 2
    codes = sorted({c for e in files for c in e["at_stake_bytes"]})
    assert codes  # RC002 on the blocked layers of both stages
    for table, e in zip(tables, files):
        assert table["head"] == ["layer", "kept bytes", "tensors", "recompute saved", *(f"{c} at stake" for c in codes)]
        rows = {r["cells"][0]: r["cells"] for r in table["rows"]}
        for row in e["layers"]:  # each layer's at-stake cell is its findings' bytes, blank without
            assert rows[row["layer"]][4:] == [
                human_bytes(row["at_stake_bytes"][c]) if row["at_stake_bytes"].get(c) else "" for c in codes
            ]
        # the figures the text report shows under the table: in flight and peak
        assert rows["in flight"][1] == f"× {e['micro_batches_in_flight']} of {e['micro_batches']}"
        assert rows["peak"][1] == human_bytes(e["peak_kept_bytes"])
        assert table["width"] <= 1280
    largest = max(files, key=lambda e: e["peak_kept_bytes"])
    assert (
        f"{human_bytes(largest['peak_kept_bytes']).lower()} kept for backward on the largest device, at its peak"
        in shown["cards"]
    )
    assert any(
        c.startswith(human_bytes(sum(largest["at_stake_bytes"].values())).lower() + " of it named by findings")
        for c in shown["cards"]
    )


def test_comm_report_states_the_waste_share_and_charts_scheme_and_waste(browser, tmp_path):
    from irlint.units import human_bytes

    case = CORPUS / "par-mismatch-ffn_mul_disagrees_8ranks"
    html, code = page(tmp_path, "comm.html", "comm", str(case), "--format", "html")
    assert code == 0
    _, raw = irlint("comm", str(case), "--format", "json")
    files = [e for e in json.loads(raw)["files"] if e["read"] != "not"]
    browser.open(html)
    shown = browser.evaluate(SHAPES)
    tables = browser.evaluate(TABLES)
    assert browser.console_errors() == []
    busiest = max(files, key=lambda e: e["received_bytes"])
    share = f"{busiest['waste_bytes'] / busiest['received_bytes']:.0%}"
    assert busiest["waste_bytes"] > 0
    assert f"{share} of the busiest device's communication is redistribution waste" in shown["cards"]
    assert (
        f"{human_bytes(busiest['waste_bytes'])} waste of {human_bytes(busiest['received_bytes'])} "
        f"received per rank and step"
    ).lower() in shown["cards"]
    # one bar per layer and series: waste bars as long as the waste (a layer without waste draws none)
    bars = dict(shown["bars"])
    e = files[0]
    for row in e["layers"]:
        name = f"layer {row['layer']}" if row["layer"].isdigit() else row["layer"]
        scheme, waste = (
            bars[f"{name} scheme: {human_bytes(row['scheme_bytes'])}"],
            bars[f"{name} waste: {human_bytes(row['waste_bytes'])}"],
        )
        assert (waste > 1) == (row["waste_bytes"] > 0) and (scheme > 1) == (row["scheme_bytes"] > 0)
    layers = [t for t in tables if t["cls"] == "layers"]
    assert len(layers) == len(files)
    total = next(r for r in layers[0]["rows"] if r["cls"] == "total")["cells"]
    assert total == [
        "total",
        *(human_bytes(e[f"{c}_bytes"]) for c in ("received", "scheme", "waste", "forward", "backward")),
    ]
    waste_rows = [t for t in tables if t["cls"] == "waste"]
    assert len(waste_rows) == sum(1 for e in files if e["findings"])
    assert all(t["width"] <= 1280 for t in tables if t["cls"] != "collectives")


# --- issue 42: what one page says in two places agrees; what is copied pastes ------------------------
def test_grouped_pc001_counts_the_waste_its_headline_names(browser, tmp_path, monkeypatch):
    monkeypatch.chdir(CORPUS)
    html, _ = page(tmp_path, "pc.html", "par-mindformers-llama_cp2_b2_rope_slice", "--format", "html", "-n")
    browser.open(html)
    row = browser.evaluate(
        "[...document.querySelectorAll('table.rules tr')].map(tr => [...tr.cells].map(c => c.textContent.trim()))"
        ".find(r => r[0] === 'PC001')"
    )
    heads = browser.evaluate("[...document.querySelectorAll('article.finding')].map(a => a.textContent)")
    assert any("160 KiB/step wasted" in h for h in heads)
    assert row[5] == "240 KiB"  # 160 + 80 KiB of the two root causes, not "0 bytes"
    assert browser.console_errors() == []


def test_the_copy_button_leaves_the_fix_plan_readable_and_the_plan_pastes_as_yaml(browser, tmp_path, monkeypatch):
    from ruamel.yaml import YAML

    monkeypatch.chdir(CORPUS)
    html, _ = page(tmp_path, "plan.html", "par-mindformers-llama_cp2_b2_rope_slice", "--format", "html", "-n")
    browser.open(html)
    box = browser.evaluate(
        """(() => { const pre = document.getElementById('fix-plan'), b = document.querySelector('button.copy');
        const r = pre.getBoundingClientRect(), s = getComputedStyle(pre), c = b.getBoundingClientRect();
        const range = document.createRange(); range.selectNodeContents(pre);
        const text = [...range.getClientRects()].map(q => [q.left, q.right, q.top, q.bottom]);
        const content = r.right - parseFloat(s.paddingRight) - parseFloat(s.borderRightWidth);
        return {button: [c.left, c.right, c.top, c.bottom], text, plan: pre.textContent, content}; })()"""
    )
    left, right, top, bottom = box["button"]
    overlaps = [t for t in box["text"] if t[0] < right and t[1] > left and t[2] < bottom and t[3] > top]
    assert box["text"] and overlaps == []  # no line of the plan under the button
    assert left >= box["content"]  # whatever the plan's lines: the text wraps before the button
    data = YAML(typ="safe").load(box["plan"])  # pasted as it is: YAML, the dotted keys nested
    assert data["runner_config"]["batch_size"] == 1
    assert data["model"]["model_config"]["use_rope_slice"] is False


def test_cost_page_counts_the_recompute_its_rows_list(browser, tmp_path, monkeypatch):
    monkeypatch.chdir(CORPUS)
    html, _ = page(tmp_path, "cost.html", "cost", "s1_ffn_2d", "--format", "html")
    browser.open(html)
    cards = browser.evaluate(
        "Object.fromEntries([...document.querySelectorAll('.card')].map(c => "
        "[c.querySelector('.k').textContent.trim(), c.querySelector('.n').textContent.trim()]))"
    )
    rows = browser.evaluate(
        "[...document.querySelectorAll('table')].find(t => t.textContent.includes('FLOPs re-spent'))"
        ".querySelectorAll('tr').length - 1"
    )
    assert rows >= 1
    assert cards["re-spent by recompute"] not in ("0 FLOP", "0 FLOPs")  # the rows re-spend 2,048 FLOPs
    assert browser.console_errors() == []
