"""What a lint loads: a run pays only for the modules its work needs (start-up is most of a small lint)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

S2 = Path(__file__).parent / "fixtures" / "corpus" / "s2_ffn_3d_reshape_blocks"
VALIDATE = S2 / "21_validate_0076.ir"

# a lint in a fresh interpreter; prints its exit code, its report and the modules it loaded
_LINT = """
import sys
from click.testing import CliRunner
from irlint.cli import main
result = CliRunner().invoke(main, sys.argv[1:])
modules = sorted(sys.modules)
import json
print(json.dumps({"code": result.exit_code, "output": result.output, "modules": modules}))
"""


def _lint(*args) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", _LINT, "--no-cache", *args], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_a_clean_quiet_lint_prints_nothing_and_loads_no_rich():
    run = _lint("-q", "--select", "PC001", str(VALIDATE))
    assert run["code"] == 0 and run["output"] == ""
    assert "rich" not in run["modules"]
    assert "irlint.cli.memory" not in run["modules"]  # the `memory` command's module
    assert "irlint.read.reader" in run["modules"]  # it did read the dump


def test_a_lint_with_findings_renders_with_rich_only_for_colour():
    run = _lint("-q", str(VALIDATE))
    assert run["code"] == 1 and "RC002" in run["output"]
    assert "rich" not in run["modules"]  # to a pipe or file: plain text, as rich would print it
    run = _lint("-q", "--color", "always", str(VALIDATE))
    assert run["code"] == 1 and "\x1b[" in run["output"]
    assert "rich" in run["modules"]


def test_a_lint_never_loads_networkx():
    # the model is plain dicts; networkx (the largest import of a lint) is loaded only for a rule
    # that reads ``ir.graph``
    for args in (("-q", str(VALIDATE)), ("-q", "--all-stages", "--format", "json", str(S2))):
        run = _lint(*args)
        assert run["code"] == 1 and "RC002" in run["output"]
        assert "networkx" not in run["modules"]
        assert "irlint.read.reader" in run["modules"]


# what a default lint of a folder (its validate only, text report to a file) must not load: other
# commands, formats and runner parts, the dedup of files that share a graph, the plugin lookup, the
# communication account (the rules need only ``irlint.accounts.received``), Lark (the shipped standalone
# parser needs none of it, nor its logging and pickle), the hashes of the cache and of fingerprints
_NOT_IN_A_DEFAULT_LINT = (
    "networkx",
    "rich",
    "jinja2",
    "importlib.metadata",
    "json",
    "irlint.runner.dedup",
    "irlint.runner.diff",
    "lark",
    "hashlib",
    "_hashlib",
    "logging",
    "pickle",
    "irlint.runner.cache",  # --no-cache
    "irlint.findings_json",  # the cache's entries
    "pkgutil",  # the built-in rules' folders are listed directly
    "difflib",  # click's suggestions for an unknown option, built on the way to each short option
    "irlint.cli.memory",
    "irlint.cli.comm",
    "irlint.cli.diff",
    "irlint.accounts.comm",
    # every command but check is its own module, imported when used (show_files: check --show-files)
    *(f"irlint.cli.{cmd}" for cmd in ("rules", "explain", "config", "clean", "inspect", "cost", "fix", "show_files")),
    *(
        f"irlint.reporters.{fmt}"
        for fmt in ("concise", "json", "json_lines", "sarif", "github", "gitlab", "junit", "html", "svg")
    ),
)


def test_a_default_lint_of_a_folder_loads_only_what_it_uses(tmp_path):
    out = tmp_path / "report.txt"
    run = _lint("-q", "-o", str(out), str(S2))  # --no-cache: json is the cache's
    assert run["code"] == 1 and "RC002" in out.read_text()
    assert "irlint.reporters.text" in run["modules"] and "irlint.read.reader" in run["modules"]
    assert [m for m in _NOT_IN_A_DEFAULT_LINT if m in run["modules"]] == []


def test_the_irlint_program_writes_a_report_without_tempfile(tmp_path):
    # as the console script runs (click's test runner itself loads tempfile): the report is still
    # replaced atomically, through a temporary file of its own
    out = tmp_path / "report.txt"
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: print(' '.join(sorted(sys.modules)), file=sys.stderr))\n"
        "from irlint.cli import run\n"
        "sys.argv = ['irlint', *sys.argv[1:]]\n"
        "run()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, "--no-cache", "-q", "-o", str(out), str(S2)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1 and "RC002" in out.read_text()
    assert [p.name for p in tmp_path.iterdir()] == ["report.txt"]  # no temporary file left behind
    modules = proc.stderr.splitlines()[-1].split()
    assert "irlint.read.reader" in modules
    assert [m for m in (*_NOT_IN_A_DEFAULT_LINT, "tempfile", "shutil") if m in modules] == []


def test_files_that_share_a_graph_load_dedup(tmp_path):
    for name in ("21_validate_0076.ir", "copy_21_validate_0076.ir"):
        (tmp_path / name).write_bytes(VALIDATE.read_bytes())
    run = _lint("-q", "--all-stages", str(tmp_path))
    assert run["code"] == 1 and "irlint.runner.dedup" in run["modules"]


def test_stage_names_as_mindspore_writes_them_need_no_suffix_patterns():
    from irlint.model import stages

    stages._with_suffix.cache_clear()
    assert stages.stage_of("rank0_21_validate_0076.ir.gz").name == "validate"
    assert stages.stage_of("opt_pass_19_add_recomputation_0033.ir").name == "add_recomputation"
    assert stages._with_suffix.cache_info().currsize == 0
    assert stages.stage_of("21_validate_0076.backup.ir").name == "validate"  # a copy's suffix
    assert stages._with_suffix.cache_info().currsize == 1


def test_the_memory_command_is_loaded_when_used():
    from click.testing import CliRunner

    from irlint.cli import main

    result = CliRunner().invoke(main, ["memory", "--format", "json", str(VALIDATE)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)
    assert "memory" in CliRunner().invoke(main, ["--help"]).output


# --- third-party rules: importlib.metadata is loaded only when some distribution may declare them --
_PLUGIN = '''
from irlint.rule import Rule


class EveryReturn(Rule):
    """Flags every Return (a test plugin)."""
    code = "XP001"
    name = "every-return"
    summary = "a test plugin"

    def check(self, ir):
        for key, data in ir.graph.nodes(data=True):
            if data.get("kind") == "return":
                yield self.finding(ir, key, "a return")
'''


def _install_plugin(site: Path) -> None:
    (site / "xp_rules.py").write_text(_PLUGIN)
    info = site / "xp_rules-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: xp-rules\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[console_scripts]\nxp = xp_rules:main\n\n[irlint.rules]\nevery-return = xp_rules\n"
    )


def test_a_plugin_installed_on_sys_path_is_loaded(tmp_path, monkeypatch):
    from irlint import rule as rule_module

    _install_plugin(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    rule_module._load_rules.cache_clear()
    try:
        assert rule_module._may_declare("irlint.rules")
        assert "XP001" in {cls.code for cls in rule_module.load_rules()}
        assert "XP001" not in {cls.code for cls in rule_module.load_rules(plugins=False)}
    finally:
        rule_module._load_rules.cache_clear()


def test_where_no_distribution_declares_rules_none_is_looked_up(tmp_path, monkeypatch):
    from irlint.rule import _may_declare

    site = tmp_path / "site"
    site.mkdir()
    other = site / "other-2.0.dist-info"
    other.mkdir()
    (other / "entry_points.txt").write_text("[console_scripts]\nirlint.rules = other:main\n")
    (site / "single-1.0.egg-info").write_text("Metadata-Version: 1.1\n")  # an egg-info file, no folder
    monkeypatch.setattr(sys, "path", [str(site), str(tmp_path / "missing")])
    assert not _may_declare("irlint.rules")
    egg = tmp_path / "xp_rules-1.0-py3.11.egg"
    (egg / "EGG-INFO").mkdir(parents=True)
    (egg / "EGG-INFO" / "entry_points.txt").write_text("[irlint.rules]\nx = xp_rules\n")
    monkeypatch.setattr(sys, "path", [str(site), str(egg)])
    assert _may_declare("irlint.rules")
    archive = tmp_path / "packages.zip"
    archive.write_bytes(b"PK\x05\x06" + bytes(18))  # a zip on sys.path could hold anything
    monkeypatch.setattr(sys, "path", [str(site), str(archive)])
    assert _may_declare("irlint.rules")


def test_a_lint_loads_importlib_metadata_only_for_possible_plugins():
    code = (
        "import sys\nfrom irlint import rule\nrule.load_rules()\n"
        "print(('importlib.metadata' in sys.modules) == rule._may_declare('irlint.rules'))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip() == "True", proc.stderr


def test_importing_irlint_loads_no_engine_until_a_name_is_used():
    code = (
        "import sys, irlint\n"
        "before = 'irlint.runner.engine' in sys.modules or 'irlint.findings' in sys.modules\n"
        "from irlint import Config, Finding, Related, Report, lint\n"
        "import irlint.runner.engine as engine, irlint.findings as findings\n"
        "assert lint is engine.lint and Finding is findings.Finding and Report is findings.Report\n"
        "assert {'Config', 'lint'} <= set(dir(irlint))\n"
        "print(before)\n"
    )
    proc = _python(code)
    assert proc.stdout.strip() == "False"
    import irlint

    try:
        irlint.no_such_name  # noqa: B018 - the attribute access is the test
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("irlint.no_such_name should not exist")


def test_the_program_sets_the_collector_before_it_loads_the_cli():
    # the console script's module sets the collector for the program before the CLI is loaded;
    # importing the CLI as a library leaves the caller's thresholds as they were
    code = (
        "import gc, sys\n"
        "seen = {}\n"
        "class Watch:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        seen.setdefault(name, gc.get_threshold())\n"
        "sys.meta_path.insert(0, Watch())\n"
        "from irlint.program import run\n"
        "print(seen['irlint.cli'][0], seen['click'][0])\n"
    )
    proc = _python(code)
    assert proc.stdout.split() == ["200000", "200000"]
    proc = subprocess.run(
        [sys.executable, "-c", "import gc, irlint.cli, irlint.cli.check; print(gc.get_threshold())"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.stdout.strip() == str(__import__("gc").get_threshold())


def _python(code: str) -> subprocess.CompletedProcess:
    """``code`` run by a new interpreter (a fresh module table), which must succeed."""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc
