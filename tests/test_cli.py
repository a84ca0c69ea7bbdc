"""The command line: exit codes, options, subcommands, the editor regexp from the README."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from cli_rules import DUMP, FOLDER, tiny_rules  # noqa: F401 - fixture
from click.testing import CliRunner

import irlint.cli.app
import irlint.cli.check
import irlint.cli.inspect
import irlint.runner.discover
import irlint.runner.workers
from irlint.cli import main
from irlint.runner.config import Config

README = Path(__file__).parent.parent / "README.md"


def run(*args, **kw):
    return CliRunner().invoke(main, list(args), catch_exceptions=False, **kw)


# --- exit codes -----------------------------------------------------------------------------------
def test_findings_exit_1(tiny_rules):
    result = run(DUMP)
    assert result.exit_code == 1, result.output
    assert "Found 3 findings in 1 file" in result.output


def test_clean_exit_0(tiny_rules):
    result = run("fixtures/corpus/full-folder-1layer/00_bootstrap_0000.ir")  # no MatMul in it
    assert result.exit_code == 0, result.output
    assert "No findings (1 file checked)" in result.output


def test_no_rule_selected_exit_2(tiny_rules):
    result = run(DUMP, "--ignore", "TS001")  # TS002 is off by default
    assert result.exit_code == 2, result.output
    assert "nothing checked: no rule is selected" in result.output


def test_info_findings_alone_exit_0(tiny_rules, tmp_path):
    result = run(DUMP, "--select", "TS002")  # TS002 is an info rule
    assert result.exit_code == 0, result.output
    assert "a return" in result.output and "Found" in result.output
    cfg = tmp_path / "irlint.toml"
    cfg.write_text('severity = { TS002 = "warning" }\n')
    assert run(DUMP, "--select", "TS002", "--config", str(cfg)).exit_code == 1


def test_exit_zero(tiny_rules):
    assert run(DUMP, "--exit-zero").exit_code == 0


def test_missing_path_exit_2(tiny_rules):
    result = run("no/such/folder")
    assert result.exit_code == 2
    assert "no such file or folder" in result.output
    assert "Traceback" not in result.output


def test_empty_folder_exit_2(tiny_rules, tmp_path):
    (tmp_path / "notes.txt").write_text("not a dump")
    result = run(str(tmp_path))
    assert result.exit_code == 2
    assert "no graph IR dumps" in result.output


def test_non_ir_file_by_name_exit_2(tiny_rules, tmp_path):
    bad = tmp_path / "model.ir"
    bad.write_text("this is not a dump\n")
    result = run(str(bad), "--format", "concise")
    assert result.exit_code == 2
    assert re.search(r"model\.ir:1:1: IR002 \[error\] not a graph IR dump", result.output)


@pytest.mark.parametrize("damage", ["truncated", "invalid-utf8", "long-line"])
def test_damaged_dump_is_still_linted_but_exits_2(tiny_rules, tmp_path, damage):
    data = Path(DUMP).read_bytes()
    lines = data.splitlines(keepends=True)
    if damage == "truncated":
        data = data[: len(data) * 2 // 3]
    elif damage == "invalid-utf8":
        at = next(i for i, ln in enumerate(lines) if b"scope" in ln.lower())
        lines[at] = lines[at].replace(b"Default", b"Def\xffault", 1)
        data = b"".join(lines)
    else:
        at = next(i for i, ln in enumerate(lines) if ln.startswith(b"  %"))
        data = b"".join(lines[:at] + [b"y" * (5 * 1024 * 1024) + b"\n"] + lines[at:])
    dump = tmp_path / Path(DUMP).name
    dump.write_bytes(data)
    result = run(str(dump), "--format", "concise", "--exit-zero")
    assert result.exit_code == 2, result.output
    assert re.search(r":\d+:1: IR0\d\d \[", result.output)
    assert "Traceback" not in result.output
    if damage != "truncated":  # the rest of the dump was linted
        assert re.search(r": TS001 \[", result.output)


def test_unreadable_folder_exit_2(tiny_rules, tmp_path, monkeypatch):
    # the tests run as root, who can read anything: deny access the way the OS would report it
    locked = tmp_path / "locked"
    shutil.copytree(FOLDER, locked)
    real_access = os.access
    monkeypatch.setattr(
        irlint.runner.discover.os, "access", lambda p, mode: False if Path(p) == locked else real_access(p, mode)
    )
    result = run(str(locked))
    assert result.exit_code == 2
    assert "permission denied" in result.output


def test_internal_error_exit_2_without_traceback(tiny_rules, monkeypatch):
    def boom(files, diagnostics, config):
        raise RuntimeError("something broke")

    monkeypatch.setattr(irlint.cli.check, "lint_files", boom)
    result = CliRunner().invoke(main, [DUMP])
    assert result.exit_code == 2
    assert "internal error: RuntimeError: something broke" in result.output
    assert "Traceback" not in result.output
    result = CliRunner().invoke(main, [DUMP, "--debug"])
    assert result.exit_code == 2 and "Traceback" in result.output


def test_bad_option_exit_2(tiny_rules):
    assert run(DUMP, "--format", "xml").exit_code == 2


def test_unknown_selector_exit_2(tiny_rules):
    result = run(DUMP, "--select", "XX999")
    assert result.exit_code == 2 and "--select: unknown rule selector 'XX999'" in result.output


def test_unknown_selector_in_config_names_file_and_key(tiny_rules, tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text('[tool.irlint]\nselect = ["QQ"]\n')
    shutil.copy(DUMP, tmp_path)
    monkeypatch.chdir(tmp_path)
    result = run(Path(DUMP).name)
    assert result.exit_code == 2
    assert result.output.startswith("irlint: pyproject.toml: [tool.irlint] select: unknown rule selector 'QQ'")


def test_invalid_config_exit_2(tiny_rules, tmp_path):
    cfg = tmp_path / "irlint.toml"
    cfg.write_text('severity = { TS001 = "fatal" }\n')
    result = run(DUMP, "--config", str(cfg))
    assert result.exit_code == 2
    assert "severity of 'TS001' must be one of error, warning, info" in result.output


# --- options --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args, codes",
    [
        ([], {"TS001"}),
        (["--select", "TS002"], {"TS002"}),
        (["--select", "every-return,forward-matmul"], {"TS001", "TS002"}),
        (["--select", "TS", "--ignore", "forward-matmul"], {"TS002"}),
        (["--extend-select", "TS002"], {"TS001", "TS002"}),
        (["--extend-select", "TS002", "--ignore", "TS0"], {"TS002"}),  # the more specific selector wins
        (["--ignore", "TS0"], set()),
    ],
)
def test_selection(tiny_rules, args, codes):
    result = run(DUMP, "--format", "json", *args)
    assert {f["code"] for f in json.loads(result.stdout)["findings"]} == codes
    assert result.exit_code == 2 if not codes else result.exit_code in (0, 1)


@pytest.mark.parametrize(
    "file, args, codes",
    [
        ('ignore = ["TS001"]', ["--select", "TS001"], {"TS001"}),  # --select beats the file's ignore
        ('extend-select = ["TS002"]', ["--select", "TS001"], {"TS001"}),  # ... and its extend-select
        ('select = ["TS002"]', ["--select", "TS001"], {"TS001"}),
        ('select = ["TS002"]', ["--select", "TS", "--ignore", "TS002"], {"TS001"}),
        ('ignore = ["TS001"]', ["--extend-select", "TS002"], {"TS002"}),  # without --select the file applies
    ],
)
def test_select_option_replaces_the_config_selection(tiny_rules, tmp_path, file, args, codes):
    cfg = tmp_path / "irlint.toml"
    cfg.write_text(file + "\n")
    result = run(DUMP, "--config", str(cfg), "--format", "json", *args)
    assert {f["code"] for f in json.loads(result.output)["findings"]} == codes


def test_output_writes_only_the_named_file(tiny_rules, tmp_path):
    target = tmp_path / "out" / "report.sarif"
    target.parent.mkdir()
    result = run(DUMP, "--format", "sarif", "--output", str(target))
    assert result.exit_code == 1
    assert result.output == ""
    assert json.loads(target.read_text())["version"] == "2.1.0"
    assert [p.name for p in tmp_path.rglob("*") if p.is_file()] == ["report.sarif"]


def test_text_has_no_colour_when_piped_or_no_color(tiny_rules):
    for env in ({}, {"NO_COLOR": "1"}):
        assert "\x1b[" not in run(DUMP, env=env).output


def test_text_to_a_file_or_pipe_is_not_cut(tiny_rules, tmp_path):
    report = tmp_path / "report.txt"
    run(DUMP, "-o", str(report))
    for text in (report.read_text(encoding="utf-8"), run(DUMP).output):  # CliRunner: not a TTY
        scopes = re.findall(r"(?:context|        ) \d+ %\d+ \w+  (\S+)", text)
        assert len(scopes) == 4 and all(s.endswith("-op0") or s.endswith("-op1") for s in scopes)
        assert max(len(line) for line in text.splitlines()) > 120


def test_inspect_table_keeps_whole_file_names(tiny_rules, monkeypatch):
    names = sorted(str(p) for p in Path(FOLDER).glob("*.ir"))
    out = run("inspect", FOLDER).output  # not a TTY: as wide as needed
    assert all(name in out for name in names)
    from rich.console import Console

    # a narrow terminal: the file column folds onto more lines instead of cutting the name
    monkeypatch.setattr(irlint.cli.inspect, "console", lambda: Console(width=70, no_color=True, highlight=False))
    out = run("inspect", FOLDER).output
    cells = [line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│")]
    assert "".join(cells) == "".join(
        name
        for name in [r["file"] for r in map(json.loads, run("inspect", FOLDER, "--format", "json").output.splitlines())]
    )


def test_statistics(tiny_rules, snapshot):
    result = run(DUMP, "--statistics", "--format", "concise")
    assert result.output == snapshot
    assert result.output.split() == ["3", "TS001", "forward-matmul"]


@pytest.mark.parametrize("paths, label", [([DUMP], "1 file"), ([DUMP, f"{FOLDER}/graph_build_0_0094.ir"], "2 files")])
def test_progress_bar_counts_files(tiny_rules, monkeypatch, paths, label):
    from rich.progress import Progress

    labels = []
    real_add_task = Progress.add_task
    monkeypatch.setattr(
        Progress,
        "add_task",
        lambda self, description, **kw: labels.append(description) or real_add_task(self, description, **kw),
    )
    monkeypatch.setattr(irlint.cli.check, "PROGRESS_MIN_BYTES", 0)
    monkeypatch.setattr(irlint.cli.check.sys.stderr, "isatty", lambda: True)
    irlint.cli.check._lint_with_progress(
        irlint.cli.check.discover_inputs(paths), Config(cache=False, jobs=1), show=True
    )
    assert labels == [label]


def test_quiet_has_no_summary(tiny_rules):
    result = run(DUMP, "--quiet")
    assert "Found" not in result.output and "MatMul gives" in result.output


def test_options_reach_the_config(tiny_rules, monkeypatch):
    seen = {}

    def fake_lint(files, diagnostics, config):
        seen.update(jobs=config.jobs, cache=config.cache, all_stages=config.all_stages)
        return irlint.runner.engine.lint_files(files, diagnostics, config)

    monkeypatch.setattr(irlint.cli.check, "lint_files", fake_lint)
    run(DUMP, "--jobs", "3", "--no-cache", "--all-stages")
    assert seen == {"jobs": 3, "cache": False, "all_stages": True}


def test_folder_and_rank_subfolders(tiny_rules, tmp_path):
    for rank in (0, 1):
        (tmp_path / f"rank_{rank}").mkdir()
        shutil.copy(DUMP, tmp_path / f"rank_{rank}" / Path(DUMP).name)
    (tmp_path / "rank_0" / "notes.md").write_text("skipped quietly")
    data = json.loads(run(str(tmp_path), "--format", "json").output)
    assert data["summary"]["files"] == 2
    assert len(data["findings"]) == 3 and all(f["ranks"] == [0, 1] for f in data["findings"])
    assert data["diagnostics"] == []


# --- baseline -------------------------------------------------------------------------------------
def test_baseline_round_trip(tiny_rules, tmp_path):
    baseline = tmp_path / "irlint-baseline.json"
    warn = tmp_path / "irlint.toml"
    warn.write_text('severity = { TS002 = "warning" }\n')
    result = run(DUMP, "--write-baseline", str(baseline))
    assert result.exit_code == 0
    # issue 21: not "No findings (… hidden by the baseline)": they were just written
    assert f"Wrote 3 findings to the baseline {baseline} (1 file checked)." in result.output
    assert "No findings" not in result.output and "hidden" not in result.output
    entries = json.loads(baseline.read_text())["findings"]
    assert [e["code"] for e in entries] == ["TS001"] * 3 and all(e["scope"] for e in entries)
    result = run(DUMP, "--baseline", str(baseline))
    assert result.exit_code == 0, result.output
    assert "3 known findings hidden by the baseline" in result.output
    # a new problem (here: a newly enabled rule) fails again, and only it is reported
    result = run(
        DUMP, "--baseline", str(baseline), "--extend-select", "TS002", "--format", "json", "--config", str(warn)
    )
    assert result.exit_code == 1
    assert {f["code"] for f in json.loads(result.output)["findings"]} == {"TS002"}


def test_bad_baseline_exit_2(tiny_rules, tmp_path):
    bad = tmp_path / "b.json"
    bad.write_text("[1, 2]")
    result = run(DUMP, "--baseline", str(bad))
    assert result.exit_code == 2 and "not an irlint baseline" in result.output


# --- the editor regexp in the README matches every line of --format concise ------------------------
def _readme_problem_matcher() -> re.Pattern:
    section = README.read_text(encoding="utf-8").split("## In your editor (VS Code)", 1)[1].split("\n## ", 1)[0]
    literal = re.search(r'"regexp":\s*("(?:[^"\\]|\\.)*")', section).group(1)
    return re.compile(json.loads(literal))


def test_readme_problem_matcher_matches_concise(tiny_rules, tmp_path):
    matcher = _readme_problem_matcher()
    bad = tmp_path / "broken.ir"
    bad.write_text("garbage\n")
    out = run(DUMP, str(bad), "--format", "concise", "--extend-select", "TS002").output.splitlines()
    assert len(out) >= 4
    for line in out:
        m = matcher.match(line)
        assert m, line
        assert m.group(4) in ("TS001", "TS002", "IR002") and m.group(5) in ("error", "warning", "info")


# --- subcommands ----------------------------------------------------------------------------------
def test_help_shows_how_to_lint_and_the_lint_options(tiny_rules):
    out = run("--help", prog_name="irlint").output
    flat = " ".join(out.split())  # click re-wraps the text to the terminal
    assert "Usage: irlint [OPTIONS] PATH..." in flat and "runs the `check` command" in flat
    assert "write `irlint check rules`" in flat and "`irlint check --help`" in flat
    for option in ("--format", "--select", "--baseline", "--exit-zero", "--output"):
        assert option in out
    assert run("-h", prog_name="irlint").output == out


def test_check_names_a_path_that_looks_like_a_command(tiny_rules, tmp_path, monkeypatch):
    (tmp_path / "rules").mkdir()
    shutil.copy(DUMP, tmp_path / "rules")
    monkeypatch.chdir(tmp_path)
    result = run("check", "rules", "--format", "concise")
    assert result.exit_code == 1 and result.output.startswith("rules/21_validate_0076.ir:")
    assert "forward-matmul" in run("rules").output  # without check: the command


def test_rules_table_and_json(tiny_rules):
    out = run("rules").output
    assert "TS001" in out and "forward-matmul" in out and "off" in out
    rows = json.loads(run("rules", "--format", "json").output)
    assert [(r["code"], r["default"], r["severity"]) for r in rows] == [
        ("TS001", True, "warning"),
        ("TS002", False, "info"),
    ]


@pytest.mark.parametrize("name", ["TS001", "ts001", "forward-matmul"])
def test_explain(tiny_rules, name):
    result = run("explain", name)
    assert result.exit_code == 0
    assert result.output.startswith("TS001 forward-matmul (warning, on by default)")
    assert "How to fix" in result.output and "Reads stages (best first): validate" in result.output


def test_explain_unknown_exit_2(tiny_rules):
    result = run("explain", "NOPE1")
    assert result.exit_code == 2 and "irlint rules" in result.output


def test_config_show(tiny_rules, tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.irlint]\nignore = ["TS001"]\n[tool.irlint.severity]\nTS002 = "error"\n'
    )
    monkeypatch.chdir(tmp_path)
    out = run("config", "--show").output
    assert out.startswith(f"# from {tmp_path / 'pyproject.toml'}")
    assert 'ignore = ["TS001"]' in out and 'TS002 = "error"' in out


def test_config_found_upward_from_path(tiny_rules, tmp_path):
    dumps = tmp_path / "run1" / "graph"
    dumps.mkdir(parents=True)
    shutil.copy(DUMP, dumps)
    (tmp_path / "irlint.toml").write_text(
        'extend-select = ["TS002"]\nseverity = { forward-matmul = "error" }\n'
        '[[suppress]]\nrule = "TS001"\nscope = "w3-Linear"\nreason = "known, tracked elsewhere"\n'
    )
    data = json.loads(run(str(dumps), "--format", "json").output)
    matmuls = [f for f in data["findings"] if f["code"] == "TS001"]
    assert len(matmuls) == 2 and all(f["severity"] == "error" and "w3-Linear" not in f["scope"] for f in matmuls)
    assert any(f["code"] == "TS002" for f in data["findings"])


def test_inspect_still_reports_its_fields(tiny_rules):
    rows = [json.loads(line) for line in run("inspect", DUMP, "--format", "json").output.splitlines()]
    assert set(rows[0]) == {"file", "stage", "subgraphs", "cnodes", "params", "edges", "diagnostics"}


def test_pre_commit_hook_definition():
    text = (Path(__file__).parent.parent / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    fields = dict(line.strip().lstrip("- ").split(": ", 1) for line in text.splitlines() if ": " in line)
    assert fields["id"] == "irlint" and fields["entry"] == "irlint"
    files = re.compile(fields["files"])
    assert files.search("graph/rank_0/21_validate_0076.ir") and not files.search("graph/notes.irx")
    # every name the command line reads as a dump (issue 21: .ir.gz and .IR were skipped)
    for name in ("21_validate_0076.IR", "21_validate_0076.ir.gz", "g.ir.bz2", "g.ir.xz", "g.Ir.GZ", "g.ir.zst"):
        assert files.search(f"graph/{name}"), name
    for name in ("notes.irx", "g.ir.bak", "g.gz", "report.ir.json"):
        assert not files.search(f"graph/{name}"), name


@pytest.mark.parametrize("args", [["{locked}"], ["config", "{locked}"]])
def test_unlistable_folder_is_no_internal_error(tiny_rules, tmp_path, monkeypatch, args):
    # root can list anything: make the folder behave as mode 000 does for a user (stat inside fails)
    locked = tmp_path / "nolist"
    shutil.copytree(FOLDER, locked)
    real_stat, real_access = os.stat, os.access  # os.stat: what pathlib and os.path look with

    def stat(path, *a, **kw):
        name = os.fspath(path) if isinstance(path, (str, os.PathLike)) else None
        if isinstance(name, str) and locked in Path(os.path.abspath(name)).parents:
            raise PermissionError(13, "Permission denied", name)
        return real_stat(path, *a, **kw)

    monkeypatch.setattr(os, "stat", stat)
    monkeypatch.setattr(
        irlint.runner.discover.os, "access", lambda p, mode: False if Path(p) == locked else real_access(p, mode)
    )
    result = CliRunner().invoke(main, [a.format(locked=locked) for a in args])
    assert "internal error" not in result.output, result.output
    if args[0] == "config":
        assert result.exit_code == 0
    else:
        assert result.exit_code == 2 and "permission denied" in result.output


def test_config_of_a_path_is_what_its_lint_uses(tiny_rules, tmp_path, monkeypatch):
    elsewhere, cwd = tmp_path / "elsewhere", tmp_path / "cwd"
    elsewhere.mkdir()
    cwd.mkdir()
    shutil.copy(DUMP, elsewhere)
    (cwd / "irlint.toml").write_text('ignore = ["TS001"]\n')
    monkeypatch.chdir(cwd)
    assert run("config", str(elsewhere)).output.strip() == f"from {cwd / 'irlint.toml'}"
    result = run(str(elsewhere), "--format", "json")  # the cwd's ignore applied: no rule left
    assert result.exit_code == 2 and "no rule is selected" in result.output
    (elsewhere / "irlint.toml").write_text('extend-select = ["TS002"]\n')
    assert run("config", str(elsewhere)).output.strip() == f"from {elsewhere / 'irlint.toml'}"


def test_license_file_matches_the_declared_license():
    root = Path(__file__).parent.parent
    text = (root / "LICENSE").read_text(encoding="utf-8")
    assert " ".join(text.split()[:6]) == "Apache License Version 2.0, January 2004"
    assert "END OF TERMS AND CONDITIONS" in text
    assert 'license = { text = "Apache-2.0" }' in (root / "pyproject.toml").read_text(encoding="utf-8")


def test_explain_an_input_problem_code():
    from irlint.diagnostics import EXPLANATIONS, KINDS

    assert set(EXPLANATIONS) == set(KINDS)
    result = run("explain", "IR007")
    assert result.exit_code == 0 and "truncated" in result.output and "killed" in result.output


def test_a_missing_dependency_is_named_not_an_internal_error(tiny_rules, monkeypatch):
    def lint(*a, **kw):
        raise ModuleNotFoundError("No module named 'platformdirs'", name="platformdirs")

    monkeypatch.setattr(irlint.cli.check, "lint_files", lint)
    result = CliRunner().invoke(main, [DUMP])
    assert result.exit_code == 2
    assert "'platformdirs' is missing" in result.output and "pip install" in result.output
    assert "internal error" not in result.output and "Traceback" not in result.output


# --- issue 11: what a ruff user reaches for, and never a wrong or lost result ---------------------
@pytest.mark.parametrize("option", ["--select", "--extend-select", "--ignore"])
def test_an_empty_selector_is_a_usage_error(tiny_rules, option):
    result = run(DUMP, option, "")
    assert result.exit_code == 2 and "empty rule selector" in result.output
    assert run(DUMP, option, " , ").exit_code == 2


def test_junit_fails_on_line_level_input_problems(tiny_rules, tmp_path):
    data = Path(DUMP).read_bytes()
    dump = tmp_path / Path(DUMP).name
    dump.write_bytes(data[: len(data) * 2 // 3])
    result = run(str(dump), "--format", "junit", "--ignore", "TS001")
    assert result.exit_code == 2
    assert 'errors="1"' in result.output and "IR007" in result.output


def _disk_fills_up(monkeypatch):
    """Writes of reports and baselines fail after 10 bytes, as on a full disk."""
    real_fdopen = os.fdopen

    class Full:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *a):
            self.f.close()

        def write(self, text):
            self.f.write(text[:10])
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(irlint.reporters.os, "fdopen", lambda fd, *a, **kw: Full(real_fdopen(fd, *a, **kw)))


def test_output_folder_is_created_and_the_write_is_atomic(tiny_rules, tmp_path, monkeypatch):
    out = tmp_path / "sub" / "none" / "out.txt"
    assert run(DUMP, "-o", str(out)).exit_code == 1
    good = out.read_text()
    assert "MatMul gives" in good
    # a full disk while writing: the previous report stays whole, no temporary file is left
    _disk_fills_up(monkeypatch)
    result = run(DUMP, "-o", str(out), "--format", "json")
    assert result.exit_code == 2 and "No space left" in result.output
    assert out.read_text() == good
    assert sorted(p.name for p in out.parent.iterdir()) == ["out.txt"]


def test_a_baseline_is_written_atomically(tiny_rules, tmp_path, monkeypatch):
    baseline = tmp_path / "b.json"
    assert run(DUMP, "--write-baseline", str(baseline)).exit_code == 0
    before = baseline.read_text()
    _disk_fills_up(monkeypatch)
    result = run(DUMP, "--ignore", "TS001", "--write-baseline", str(baseline))
    assert result.exit_code == 2 and "No space left" in result.output
    assert baseline.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.json"]


def test_an_output_that_cannot_be_written_fails_before_the_lint(tiny_rules, tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    called = []
    monkeypatch.setattr(irlint.cli.check, "lint_files", lambda *a: called.append(1))
    result = run(DUMP, "-o", str(blocker / "out.txt"))
    assert result.exit_code == 2 and "cannot create its folder" in result.output and not called


def test_ctrl_c_exits_130_and_sigterm_143(tiny_rules, monkeypatch):
    def interrupted(*a):
        raise KeyboardInterrupt

    monkeypatch.setattr(irlint.cli.check, "lint_files", interrupted)
    result = CliRunner().invoke(main, [DUMP])
    assert result.exit_code == 130 and "interrupted" in result.output

    def terminated(*a):
        os.kill(os.getpid(), irlint.cli.app.signal.SIGTERM)

    monkeypatch.setattr(irlint.cli.check, "lint_files", terminated)
    result = CliRunner().invoke(main, [DUMP])
    assert result.exit_code == 143 and "terminated" in result.output
    assert irlint.cli.app.signal.getsignal(irlint.cli.app.signal.SIGTERM) is not irlint.cli.app._on_sigterm


def test_exit_codes_are_in_the_help_and_the_readme():
    for args in ([], ["check"]):
        text = " ".join(CliRunner().invoke(main, [*args, "--help"]).output.split())
        assert "130 interrupted" in text and "2 usage error" in text
    readme = README.read_text()
    assert "| 130 |" in readme and "| 143 |" in readme


def test_config_of_a_missing_path_is_an_error(tmp_path):
    result = CliRunner().invoke(main, ["config", str(tmp_path / "nonexist")])
    assert result.exit_code == 2 and "no such file or folder" in result.output


def test_rules_with_a_broken_plugin_exits_2_and_names_it(monkeypatch):
    import irlint.rule as rule_module

    class Broken:
        name = "broken-plugin"

        def load(self):
            raise ImportError("boom")

    monkeypatch.setattr(rule_module, "entry_points", lambda group: [Broken()])
    rule_module._load_rules.cache_clear()
    try:
        result = CliRunner().invoke(main, ["rules"])
    finally:
        rule_module._load_rules.cache_clear()
    assert result.exit_code == 2 and "broken-plugin" in result.output and "boom" in result.output


def test_config_show_uses_the_layout_of_its_file_and_says_cache_and_jobs(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.irlint]\nselect = ["RC"]\n[tool.irlint.severity]\nRC002 = "error"\n'
    )
    monkeypatch.setenv("IRLINT_CACHE_DIR", str(tmp_path / "cachehere"))
    result = CliRunner().invoke(main, ["config", str(tmp_path), "--show"])
    assert result.exit_code == 0
    assert "[tool.irlint]" in result.output and "[tool.irlint.severity]" in result.output
    assert str(tmp_path / "cachehere") in result.output and "worker process" in result.output
    import tomllib

    assert tomllib.loads(result.output)["tool"]["irlint"]["severity"] == {"RC002": "error"}


def test_jobs_are_capped_at_the_cores_and_it_is_said(tiny_rules, monkeypatch):
    monkeypatch.setattr(irlint.runner.workers, "_cores", lambda: 2)
    result = run(DUMP, "--jobs", "64")
    assert "capped to 2" in result.output
    assert irlint.runner.engine.capped_jobs(64) == 2 and irlint.runner.engine.capped_jobs(1) == 1


def test_ruff_conventions(tiny_rules, tmp_path):
    assert run("-V").output.startswith("irlint, version")
    assert run(DUMP, "-e").exit_code == 0
    assert run(DUMP, "--output-format", "concise").output == run(DUMP, "--format", "concise").output
    cache = tmp_path / "c"
    assert run(DUMP, "--cache-dir", str(cache)).exit_code == 1 and any(cache.rglob("*"))
    assert run(DUMP, "-n", "--cache-dir", str(tmp_path / "n")).exit_code == 1 and not (tmp_path / "n").exists()
    result = CliRunner().invoke(main, ["clean", "--cache-dir", str(cache)])
    assert result.exit_code == 0 and "removed" in result.output
    assert not [p for p in cache.rglob("*") if p.is_file()]
    lines = [json.loads(x) for x in run(DUMP, "--format", "json-lines").output.splitlines()]
    assert [x["type"] for x in lines] == ["finding"] * 3
    gitlab = json.loads(run(DUMP, "--format", "gitlab").output)
    assert len({i["fingerprint"] for i in gitlab}) == 3 and gitlab[0]["location"]["lines"]["begin"] > 0


def test_show_files_says_what_is_read_and_why(tiny_rules, tmp_path):
    shutil.copytree(FOLDER, tmp_path / "g")
    shutil.copy(DUMP, tmp_path / "g" / "graph.ir")
    result = run(str(tmp_path / "g"), "--show-files")
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert any(ln.startswith("read") and "21_validate_0076.ir" in ln and "TS001" in ln for ln in lines)
    assert any(ln.startswith("read") and "graph.ir" in ln and "does not say its stage" in ln for ln in lines)
    assert any(ln.startswith("skip") and "opt_pass_19" in ln for ln in lines)


@pytest.mark.parametrize(
    "env, flag, colored",
    [
        ({}, [], False),
        ({"FORCE_COLOR": "1"}, [], True),
        ({"FORCE_COLOR": "1", "NO_COLOR": "1"}, [], False),
        ({}, ["--color", "always"], True),
        ({"FORCE_COLOR": "1"}, ["--color", "never"], False),
    ],
)
def test_color_option_and_force_color(tiny_rules, monkeypatch, env, flag, colored):
    for key in ("FORCE_COLOR", "NO_COLOR"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert ("\x1b[" in run(DUMP, *flag).output) == colored


def test_the_docs_describe_the_ci_script_and_the_cache_as_they_are():
    contributing = " ".join((README.parent / "CONTRIBUTING.md").read_text(encoding="utf-8").split())
    usage = " ".join((README.parent / "docs" / "usage.md").read_text(encoding="utf-8").split())
    assert "does exactly this" not in contributing
    assert "--upgrade pip" in contributing and "-p no:cacheprovider" in contributing
    help_text = " ".join(CliRunner().invoke(main, ["check", "--help"]).output.split())
    assert "parse cache" not in help_text
    assert "keyed by its content, the rules and irlint's version" in help_text
    assert "keyed by the file's content, the rules and irlint's own version" in usage


# --- issue 21 item 2: -o / --write-baseline write to what the path names, never over an input ---------
def test_output_through_a_symlink_writes_its_target(tiny_rules, tmp_path):
    target = tmp_path / "reports" / "latest.txt"
    target.parent.mkdir()
    target.write_text("old report\n")
    link = tmp_path / "report.txt"
    link.symlink_to(target)
    for option in ("-o", "--write-baseline"):
        assert run(DUMP, option, str(link)).exit_code in (0, 1)
        assert link.is_symlink() and os.readlink(link) == str(target)
        assert "old report" not in target.read_text() and target.read_text().strip()
    assert json.loads(target.read_text())["irlint-baseline"] == 2


def test_output_to_a_fifo_is_written_into_it(tiny_rules, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        result = run(DUMP, "--format", "concise", "-o", str(fifo))
        assert result.exit_code == 1, result.output
        assert fifo.is_fifo()
        received = os.read(reader, 1 << 16).decode()
    finally:
        os.close(reader)
    assert received.count("TS001") == 3


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="mknod needs root")
def test_output_to_a_device_is_written_into_it(tiny_rules, tmp_path):
    import stat

    device = tmp_path / "null"
    os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    for option in ("-o", "--write-baseline"):
        assert run(DUMP, option, str(device)).exit_code in (0, 1)
        assert stat.S_ISCHR(device.stat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"]


@pytest.mark.parametrize("target", ["/proc/self/fd/1", "/dev/stdout"])
def test_output_to_standard_output_by_name_writes_to_the_stream(tmp_path, target):
    import subprocess
    import sys

    out = tmp_path / "captured.txt"
    with open(out, "w") as stream:
        before = os.fstat(stream.fileno()).st_ino
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "irlint",
                str(Path(__file__).parent / DUMP),
                "--format",
                "concise",
                "-n",
                "-o",
                target,
            ],
            stdout=stream,
            stderr=subprocess.PIPE,
            text=True,
        )
    assert done.returncode == 1, done.stderr
    assert out.stat().st_ino == before and "RC002" in out.read_text()
    assert os.path.islink("/dev/stdout")


def test_output_onto_an_input_dump_is_refused(tiny_rules, tmp_path):
    folder = tmp_path / "ow"
    shutil.copytree(Path(__file__).parent / FOLDER, folder)
    dump = folder / "21_validate_0076.ir"
    text = dump.read_bytes()
    link = tmp_path / "report.txt"
    link.symlink_to(dump)
    for args in (["-o", str(dump)], ["--write-baseline", str(dump)], ["-o", str(link)]):
        for path in (folder, dump):
            result = run(str(path), *args)
            assert result.exit_code == 2 and "is an input of this run" in result.output, result.output
            assert dump.read_bytes() == text
    baseline = tmp_path / "b.json"
    assert run(DUMP, "--write-baseline", str(baseline)).exit_code == 0
    result = run(DUMP, "--baseline", str(baseline), "-o", str(baseline))
    assert result.exit_code == 2 and "--baseline file" in result.output
    assert json.loads(baseline.read_text())["irlint-baseline"] == 2


@pytest.mark.parametrize("fmt", ["text", "html"])
def test_a_file_that_could_not_be_read_is_never_called_clean(tmp_path, fmt):
    junk = tmp_path / "21_validate_0001.ir"
    junk.write_bytes(b"# IR entry      : @x\n\x00\x01binary" * 50)
    out = tmp_path / "report.out"
    result = CliRunner().invoke(main, [str(junk), "--no-cache", "--format", fmt, "-o", str(out)])
    assert result.exit_code == 2, result.output
    text = out.read_text(encoding="utf-8")
    assert "IR009" in text
    assert "No findings in what could be read" in text
    assert "No findings (" not in text and "No findings.<" not in text
