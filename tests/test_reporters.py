"""Every output format pinned (syrupy) on a real dump, plus the contracts each format promises."""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
from cli_rules import DUMP, FOLDER, tiny_rules  # noqa: F401 - fixture

from irlint import Config, lint
from irlint.reporters import FORMATS, RenderContext, ranks_text, render
from irlint.reporters.github import escape_data, escape_property
from irlint.rule import load_rules

SCHEMA = Path(__file__).parent / "fixtures" / "schemas" / "sarif-schema-2.1.0.json"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture
def report(tiny_rules):
    return lint([DUMP], Config())


def ctx(**kw) -> RenderContext:
    return RenderContext(**{"width": 100, **kw})


@pytest.mark.parametrize("fmt", FORMATS)
def test_format_snapshot(report, snapshot, fmt):
    assert render(report, fmt, ctx()) == snapshot


@pytest.mark.parametrize("fmt", ["text", "concise"])
def test_statistics_snapshot(report, snapshot, fmt):
    assert render(report, fmt, ctx(statistics=True)) == snapshot


def test_text_statistics_without_findings_says_so(tiny_rules):
    clean = lint([DUMP], Config(ignore=["TS001"]))
    assert not clean.findings
    assert render(clean, "text", ctx(statistics=True)) == "No findings (1 file checked).\n"


def test_text_shows_the_dump_line_and_the_chain(report):
    out = render(report, "text", ctx(width=400))
    lines = Path(DUMP).read_text(encoding="utf-8").splitlines()
    for f in report.findings:
        assert lines[f.line - 1].strip()[:60] in out
        for r in f.related:
            assert f"{r.line} {r.node} {r.op}" in out
        assert f.hint in out


def test_text_without_a_width_prints_full_lines(report):
    """To a file or a pipe: scopes and chain lines whole, so a scope can be copied into a suppression."""
    lines = [line.strip() for line in render(report, "text", RenderContext()).splitlines()]
    assert not any(line.endswith("…") for line in lines if "│" not in line)  # only dump lines are clipped
    for f in report.findings:
        assert f"scope {f.scope}" in lines
        for r in f.related:
            assert any(line.endswith(f"{r.line} {r.node} {r.op}  {r.scope}") for line in lines)
    long = max((r for f in report.findings for r in f.related), key=lambda r: len(r.scope))
    assert len(long.scope) > 100
    # to a terminal of 100 columns the same chain line is cut
    narrow = render(report, "text", ctx(width=100))
    assert long.scope not in narrow and "…" in narrow


def test_text_colour_only_when_asked(report):
    assert not ANSI.search(render(report, "text", ctx()))
    assert ANSI.search(render(report, "text", ctx(color=True)))


def test_json_contract(report):
    data = json.loads(render(report, "json", ctx()))
    assert data["version"] == 1
    assert set(data) >= {"version", "findings", "diagnostics", "summary"}
    assert data["summary"] == {**data["summary"], "files": 1, "findings": 3, "by_rule": {"TS001": 3}}
    keys = {
        "code",
        "rule",
        "severity",
        "file",
        "line",
        "column",
        "graph",
        "node",
        "op",
        "scope",
        "message",
        "hint",
        "fingerprint",
        "related",
    }
    for f in data["findings"]:
        assert keys <= set(f)
        for r in f["related"]:
            assert {"file", "line", "node", "op", "scope"} <= set(r)


def test_the_format_docs_list_every_json_key(tiny_rules, tmp_path):
    for rank in (0, 1):
        shutil.copytree(FOLDER, tmp_path / f"rank_{rank}")
    (tmp_path / "rank_0" / "broken.ir").write_text("garbage\n")
    data = json.loads(render(lint([str(tmp_path)], Config()), "json", ctx()))
    keys = set(data) | set(data["tool"]) | set(data["summary"]) | {"extra"}  # extra: rule-specific, none here
    for f in data["findings"]:
        keys |= set(f) | {k for r in f["related"] for k in r}
    keys |= {k for d in data["diagnostics"] for k in d}
    assert data["diagnostics"] and any("ranks" in f for f in data["findings"])
    page = (Path(__file__).parent.parent / "docs" / "formats.md").read_text(encoding="utf-8")
    section = page.split("\n## JSON\n", 1)[1].split("\n## ", 1)[0]
    assert keys - set(re.findall(r'"(\w+)"', section)) == set()


def _sarif_validator():
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    return jsonschema.Draft7Validator(schema)


def test_sarif_validates_and_carries_rules_chain_fingerprints(report):
    data = json.loads(render(report, "sarif", ctx()))
    _sarif_validator().validate(data)
    run = data["runs"][0]
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert rules["TS001"]["name"] == "forward-matmul"
    assert "How to fix" in rules["TS001"]["help"]["text"]
    assert [r["partialFingerprints"]["irlintFingerprint/v3"] for r in run["results"]] == [
        f.fingerprint for f in report.findings
    ]
    chain = run["results"][1]["relatedLocations"]
    assert [loc["physicalLocation"]["region"]["startLine"] for loc in chain] == [
        r.line for r in report.findings[1].related
    ] + [report.findings[1].source[1]]
    # the last related location is the model line the node's source trace names
    assert chain[-1]["physicalLocation"]["artifactLocation"]["uri"].endswith("/llm_common.py")
    assert chain[-1]["message"]["text"].startswith("model code that made ")
    for result in run["results"]:
        assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == result["ruleId"]


def test_sarif_with_input_problems_validates(tiny_rules, tmp_path):
    bad = tmp_path / "notes.ir"
    bad.write_text("hello\n")
    report = lint([DUMP, str(bad)], Config())
    data = json.loads(render(report, "sarif", ctx()))
    _sarif_validator().validate(data)
    invocation = data["runs"][0]["invocations"][0]
    notes = invocation["toolExecutionNotifications"]
    assert notes[0]["descriptor"]["id"] == "IR002" and notes[0]["level"] == "error"
    assert invocation["executionSuccessful"] is False
    assert notes[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].startswith("file://")


def test_sarif_clean_run_is_successful(report):
    assert json.loads(render(report, "sarif", ctx()))["runs"][0]["invocations"][0]["executionSuccessful"] is True


def test_sarif_uris_are_percent_encoded(tiny_rules, tmp_path, monkeypatch):
    folder = tmp_path / "模型 图" / "graph é"
    folder.mkdir(parents=True)
    shutil.copy(DUMP, folder)
    monkeypatch.chdir(tmp_path)
    encoded = "%E6%A8%A1%E5%9E%8B%20%E5%9B%BE/graph%20%C3%A9/21_validate_0076.ir"
    far = tmp_path / "a" / "b" / "c"  # a file well outside the working directory is named absolutely
    far.mkdir(parents=True)
    for where, path, expected in (
        (tmp_path, "模型 图/graph é/21_validate_0076.ir", encoded),
        (tmp_path, str(folder / "21_validate_0076.ir"), encoded),
        (far, str(folder / "21_validate_0076.ir"), tmp_path.as_uri() + "/" + encoded),
    ):
        monkeypatch.chdir(where)
        data = json.loads(render(lint([path], Config()), "sarif", ctx()))
        _sarif_validator().validate(data)
        results = data["runs"][0]["results"]
        assert results and {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results} == {
            expected
        }


def test_github_escaping():
    assert escape_data("100% a\r\nb") == "100%25 a%0D%0Ab"
    assert escape_property("a,b:c%") == "a%2Cb%3Ac%25"


def test_github_annotations(report):
    out = render(report, "github", ctx()).splitlines()
    assert len(out) == 3
    pattern = re.compile(r"^::warning file=[^,:]+,line=(\d+),col=1,title=TS001 forward-matmul::(.*)$")
    for line, f in zip(out, report.findings):
        m = pattern.match(line)
        assert m and int(m.group(1)) == f.line
        # the headline and the fix, escaped (no raw line break), without the evidence
        assert "\n" not in m.group(2) and m.group(2).startswith(escape_data(f.headline))
        assert escape_data(f.message) not in m.group(2)


def test_junit_one_failing_testcase_per_file(tiny_rules):
    report = lint([FOLDER], Config())
    root = ET.fromstring(render(report, "junit", ctx()))
    cases = root.findall("./testsuite/testcase")
    assert [c.get("name") for c in cases] == report.files
    failing = [c for c in cases if c.find("failure") is not None]
    assert len(failing) == 1 and failing[0].find("failure").get("message") == "3 findings"
    assert root.get("failures") == "1" and root.get("tests") == str(len(report.files))


@pytest.mark.parametrize("fmt", ["concise", "github"])
def test_merged_ranks_are_named(tiny_rules, tmp_path, fmt):
    for rank in (0, 1):
        shutil.copytree(FOLDER, tmp_path / f"rank_{rank}")
    report = lint([str(tmp_path)], Config())
    assert report.findings and all(f.ranks == (0, 1) for f in report.findings)
    lines = render(report, fmt, ctx()).splitlines()
    assert len(lines) == len(report.findings)
    for line, f in zip(lines, report.findings):
        message = line.split("::", 2)[2] if fmt == "github" else line
        assert "on ranks 0–1: " in message and f.headline.split(": ")[0] in message


def test_ranks_text():
    assert ranks_text((0, 1, 2, 3, 6, 8, 9)) == "ranks 0-3,6,8-9"


# --- the real rules: regenerated with --snapshot-update once they exist -------------------------
REAL_DUMP = "fixtures/corpus/s2_ffn_3d_reshape_blocks/21_validate_0076.ir"


@pytest.mark.parametrize("fmt", ["text", "concise", "json", "sarif"])
def test_real_rules_snapshot(monkeypatch, snapshot, fmt):
    codes = {c.code for c in load_rules(plugins=False)}
    if not {"RC001", "RC002"} & codes:
        pytest.skip("the recompute rules are not in rules/ yet")
    monkeypatch.chdir(Path(__file__).parent)
    report = lint([REAL_DUMP], Config(plugins=False))
    assert report.findings, "the reshape-blocks fixture must produce recompute findings"
    out = render(report, fmt, ctx())
    if fmt == "sarif":
        _sarif_validator().validate(json.loads(out))
    assert out == snapshot


# --- issue 21: suppressions are counted in every format; JUnit agrees with the exit code --------------
def test_suppressed_findings_are_counted_in_every_format(tiny_rules):
    from irlint.runner.config import Suppression

    report = lint([DUMP], Config(suppress=[Suppression(scope=".*", reason="accepted for now")]))
    assert not report.findings and len(report.suppressed) == 3
    out = {fmt: render(report, fmt, ctx()) for fmt in FORMATS}
    assert "3 suppressed by [[suppress]]" in out["text"]
    assert "3 findings suppressed" in out["concise"] and "3 findings suppressed" in out["github"]
    data = json.loads(out["json"])
    assert data["summary"]["suppressed"] == 3
    assert [s["suppression"]["reason"] for s in data["suppressed"]] == ["accepted for now"] * 3
    assert [json.loads(x)["type"] for x in out["json-lines"].splitlines()] == ["suppressed"] * 3
    sarif = json.loads(out["sarif"])
    jsonschema.validate(sarif, json.loads(SCHEMA.read_text()))
    results = sarif["runs"][0]["results"]
    assert len(results) == 3 and all(r["suppressions"][0]["justification"] == "accepted for now" for r in results)
    junit = ET.fromstring(out["junit"])
    assert junit.find("testsuite/properties/property[@name='suppressed']").get("value") == "3"
    assert "3 findings" not in render(report, "concise", ctx(quiet=True))


def test_junit_does_not_fail_a_test_on_info_findings(tiny_rules):
    from click.testing import CliRunner

    from irlint.cli import main

    result = CliRunner().invoke(main, [DUMP, "--select", "TS002", "--format", "junit", "-n"])
    assert result.exit_code == 0  # TS002 is an info rule
    root = ET.fromstring(result.stdout)
    assert root.get("failures") == "0"
    case = root.find("testsuite/testcase")
    assert case.find("failure") is None and "TS002" in case.find("system-out").text


def test_ranks_are_in_the_headline(tiny_rules):
    report = lint([DUMP], Config())
    report.findings = [f.with_(cause="moves 7.0 KiB more", ranks=(0, 1, 2)) for f in report.findings[:1]]
    assert "MatMul in network.feed_forward.w3, on ranks 0–2: moves 7.0 KiB more" in render(report, "text", ctx())
    assert "MatMul in network.feed_forward.w3, on ranks 0–2: moves 7.0 KiB more" in render(report, "concise", ctx())


def test_source_lines_are_those_of_the_file(tmp_path):
    import random

    from irlint.reporters.source import SourceLines

    rng = random.Random(7)
    for _ in range(300):
        data = bytes(rng.choice(b"ab \n\n\r\xff") for _ in range(rng.randint(0, 80)))
        path = tmp_path / "x.ir"
        path.write_bytes(data)
        numbers = {rng.randint(-1, 30) for _ in range(rng.randint(0, 8))}
        lines = data.split(b"\n")
        if data.endswith(b"\n"):
            lines.pop()
        whole = {n: lines[n - 1].decode("utf-8", "replace").strip() for n in numbers if 0 < n <= len(lines)}
        assert SourceLines().whole_lines(str(path), numbers) == whole
        sources = SourceLines()
        sources.prefetch({str(path): numbers})
        assert all(sources.line(str(path), n) == (whole.get(n, "") if n > 0 else "") for n in numbers)
