"""Dumps written with MS_DEV_DUMP_IR_FORMAT (issue 21 item 6): the same verdicts where the evidence is
there, a note on what cannot be judged, and a dump without attributes is not passed as clean."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from conftest import quiet_config

from irlint.cli import main
from irlint.findings_json import extra_data
from irlint.runner.engine import lint

FORMATS = Path(__file__).parent / "fixtures" / "dump-formats"


def _verdicts(report):
    # the key to drop is a cell path: it needs the scope lines that format leaves out (not a verdict)
    return sorted(
        (f.code, f.op, f.node, tuple(kv for kv in extra_data(f).items() if kv[0] != "drop_select_recompute"))
        for g in report.findings
        for f in g.occurrences
    )


def test_without_scope_lines_the_verdicts_are_those_of_the_default_format():
    default = lint([str(FORMATS / "default")], quiet_config(group=False))
    plain = lint([str(FORMATS / "format1")], quiet_config(group=False))
    assert len(default.findings) == 8 and {f.code for f in default.findings} == {"RC003"}
    assert _verdicts(plain) == _verdicts(default)  # bytes across the layers included
    assert len({f.fingerprint for f in plain.findings}) == 8  # told apart by the weights they come from
    assert not plain.diagnostics
    assert any("IR016" in note and "layer" in note for note in plain.notes)
    assert all("()" not in f.message for f in plain.findings)


def test_without_scope_lines_the_run_says_what_cannot_be_judged():
    result = CliRunner().invoke(main, [str(FORMATS / "format1"), "-n", "--format", "concise", "--no-group"])
    assert result.exit_code == 1
    assert result.output.count("IR016 no scope lines") == 1 and "MS_DEV_DUMP_IR_FORMAT=1" in result.output
    assert result.output.count("RC003") == 8
    # grouped by root cause (the layers told apart by their weights): the two casts, in layers 0–3
    result = CliRunner().invoke(main, [str(FORMATS / "format1"), "-n", "--format", "concise"])
    assert result.output.count("RC003") == 2 and result.output.count("layers 0–3") == 2


def test_a_dump_without_attributes_or_types_is_not_clean():
    for path in (FORMATS / "format0", FORMATS / "format0" / "21_validate_0076.ir"):
        result = CliRunner().invoke(main, [str(path), "-n", "--format", "concise"])
        assert result.exit_code == 2
        assert "IR015" in result.output and "MS_DEV_DUMP_IR_FORMAT=0" in result.output
    report = lint([str(FORMATS / "format0")], quiet_config())
    assert [d.code for d in report.diagnostics] == ["IR015"] and not report.findings


def test_explain_the_format_codes():
    for code in ("IR015", "IR016"):
        result = CliRunner().invoke(main, ["explain", code])
        assert result.exit_code == 0 and "MS_DEV_DUMP_IR_FORMAT" in result.output
