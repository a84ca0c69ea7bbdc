"""Evidence that ends: the text report shows a finding's first chain and counts the rest; SARIF keeps
the key related locations (at most the 100 GitHub shows), each linked from the message (GitHub
shows only linked ones), and names each rule's documentation page."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
from click.testing import CliRunner
from conftest import CORPUS, quiet_config

from irlint.cli import main
from irlint.reporters import RenderContext, sarif

TWO_ROOT_CAUSES = CORPUS / "par-mindformers-llama_cp2_b2_rope_slice"  # 2 PC001 findings of 21 and 8 chains
SCHEMA = Path(__file__).parent / "fixtures" / "schemas" / "sarif-schema-2.1.0.json"


def _lint():
    from irlint.runner.engine import lint

    return lint([str(TWO_ROOT_CAUSES)], quiet_config())


def test_a_two_finding_pc001_text_report_shows_first_chains_and_counts_the_rest():
    result = CliRunner().invoke(main, ["--no-cache", str(TWO_ROOT_CAUSES)])
    lines = result.output.splitlines()
    assert result.exit_code == 1 and "Found 2 findings" in result.output
    assert len(lines) < 80
    assert any(
        line.strip() == "+282 more context nodes (20 more chains): every one in --format json or html" for line in lines
    )
    assert any("(7 more chains)" in line for line in lines)
    assert not any(re.search(r"chain 2 of \d+", line) for line in lines)  # the first chain only


def test_sarif_keeps_at_most_100_key_related_locations_each_linked_from_the_message():
    report = _lint()
    assert max(len(f.related) for f in report.findings) > 100
    data = sarif.as_dict(report, RenderContext())
    jsonschema.validate(data, json.loads(SCHEMA.read_text(encoding="utf-8")))
    for result in data["runs"][0]["results"]:
        related = result["relatedLocations"]
        assert len(related) <= sarif.RELATED_MAX
        text = result["message"]["text"]
        linked = {int(n) for n in re.findall(r"\]\((\d+)\)", text)}
        assert linked == {r["id"] for r in related}
        # the first chain's nodes come first: its head is the finding's own chain
        assert related[0]["message"]["text"].split(" ")[0] == result["properties"]["node"]
        assert "more in --format json" in text
        # literal brackets are escaped, so only the links read as links
        bare = re.sub(r"\[(?:\\.|[^\\\]])*\]\(\d+\)", "", text)
        assert not re.search(r"(?<!\\)[\[\]]", bare)


def test_sarif_rules_link_their_documentation_page(monkeypatch):
    monkeypatch.setattr(sarif, "docs_url", lambda: "https://irlint.example/")
    data = sarif.as_dict(_lint(), RenderContext())
    rules = data["runs"][0]["tool"]["driver"]["rules"]
    assert rules and all(r["helpUri"] == f"https://irlint.example/rules/{r['id']}/" for r in rules)
    monkeypatch.setattr(sarif, "docs_url", lambda: "")
    rules = sarif.as_dict(_lint(), RenderContext())["runs"][0]["tool"]["driver"]["rules"]
    assert not any("helpUri" in r for r in rules)  # no page to name: no made-up address


def test_the_documentation_url_comes_from_the_installed_package_metadata(monkeypatch):
    from email.message import Message
    from importlib import metadata

    def package(urls):
        meta = Message()
        for u in urls:
            meta["Project-URL"] = u
        return lambda name: meta

    monkeypatch.setattr(
        metadata,
        "metadata",
        package(["Repository, https://git.example/irlint", "Documentation, https://docs.example/x"]),
    )
    assert sarif.docs_url() == "https://docs.example/x/"
    data = sarif.as_dict(_lint(), RenderContext())
    jsonschema.Draft7Validator(json.loads(SCHEMA.read_text(encoding="utf-8"))).validate(data)
    assert {r["helpUri"] for r in data["runs"][0]["tool"]["driver"]["rules"]} >= {"https://docs.example/x/rules/PC001/"}
    # a Homepage or Repository alone is not the documentation; nor is an address that is not a web one
    monkeypatch.setattr(metadata, "metadata", package(["Homepage, https://git.example/irlint", "Docs, file:///tmp"]))
    assert sarif.docs_url() == ""
    assert not any(
        "helpUri" in r for r in sarif.as_dict(_lint(), RenderContext())["runs"][0]["tool"]["driver"]["rules"]
    )
