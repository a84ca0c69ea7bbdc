"""CONTRIBUTING.md, followed as written: the files and names it points to exist, and its toy rule,
installed from the document's own code blocks as a plugin, is listed, explained and reported."""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "CONTRIBUTING.md"
FIXTURE = REPO / "tests" / "fixtures" / "corpus" / "s2_ffn_3d_reshape_blocks"
_PATH = re.compile(
    r"`((?:\.\./shared/|irlint/|rules/|tests/|grammar/|scripts/|bench/|docs/|\.ci/)[^`\s]*"
    r"|[A-Z]+\.md|pyproject\.toml|mkdocs\.yml)`"
)
_NAME = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*)(?:\(|`)")


def _prose() -> str:
    """The document without its fenced code blocks."""
    return re.sub(r"^```.*?^```", "", DOC.read_text(encoding="utf-8"), flags=re.S | re.M)


def _toy_files() -> dict[str, str]:
    """The code blocks the document marks as the toy rule's files: name -> text."""
    return dict(
        re.findall(r"<!-- toy-rule: (\S+) -->\n```\w*\n(.*?)^```", DOC.read_text(encoding="utf-8"), flags=re.S | re.M)
    )


def _exists(path: str) -> bool:
    where = REPO.parent / path[3:] if path.startswith("../") else REPO / path
    return bool(glob.glob(str(where)))


def test_every_path_it_names_exists():
    named = set(_PATH.findall(_prose()))
    assert len(named) > 30
    # the team's corpus beside the checkout: checked where it is, a clone of the project alone has none
    shared = (REPO.parent / "shared").is_dir()
    checked = {p for p in named if "<" not in p and (shared or not p.startswith("../shared/"))}
    assert len(checked) > 30
    assert sorted(p for p in checked if not _exists(p)) == []


def test_every_name_it_quotes_is_in_a_file_of_its_paragraph():
    # `_ATTR_MARKERS` (`irlint/read/record.py`): a name quoted beside files is defined or used in one of them
    missing = []
    for paragraph in _prose().split("\n\n"):
        files = [REPO / p for p in _PATH.findall(paragraph) if p.endswith(".py") and "<" not in p and _exists(p)]
        if not files:
            continue
        text = "".join(f.read_text(encoding="utf-8") for f in files)
        missing += [name for name in _NAME.findall(paragraph) if name not in text]
    assert missing == []


def test_the_default_run_runs_the_slow_tests_too():
    # the README's command is the whole suite: `slow` only lets a developer leave tests out
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    options = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]
    assert "-m" not in options["addopts"].split() and any(m.startswith("slow:") for m in options["markers"])


@pytest.mark.slow
def test_the_toy_rule_of_the_document_is_installed_and_reports(tmp_path, ir_from_text):
    files = _toy_files()
    assert set(files) == {"toy_rules.py", "entry_points.txt"}
    site = tmp_path / "site"
    info = site / "toy_rules-0.1.dist-info"
    info.mkdir(parents=True)
    (site / "toy_rules.py").write_text(files["toy_rules.py"], encoding="utf-8")
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-rules\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(files["entry_points.txt"], encoding="utf-8")

    # its examples hold, as tests/test_rule_examples.py checks the built-in rules'
    namespace: dict = {}
    exec(compile(files["toy_rules.py"], "toy_rules.py", "exec"), namespace)
    rule = namespace["EverySiLU"]
    for snippet in rule.VALID:
        ir = ir_from_text(snippet)
        assert ir.diagnostics == [] and list(rule().check(ir)) == []
    for snippet in rule.INVALID:
        assert [f.code for f in rule().check(ir_from_text(snippet))] == ["XT001"]

    # installed: irlint lists it, explains it and reports it on a real dump
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *sys.path])}

    def irlint(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "irlint", *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
        )

    assert "XT001" in irlint("rules").stdout
    assert "every SiLU of the forward graph" in irlint("explain", "XT001").stdout
    done = irlint("--no-cache", "--select", "XT001", "--format", "json", str(FIXTURE))
    assert done.returncode == 1, done.stderr
    findings = json.loads(done.stdout)["findings"]
    assert findings and {(f["code"], f["op"]) for f in findings} == {("XT001", "SiLU")}
