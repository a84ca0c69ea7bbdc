"""Small things a user meets (issue 42): the --fix hint, --color and -q on the account commands,
bidirectional controls escaped, the cost JSON's read state, a projection to fewer layers,
suppressions called unused, the diff header of one file, files passed by name by the hook."""

from __future__ import annotations

import shutil

from click.testing import CliRunner
from conftest import CORPUS

from irlint.cli import main

BLOCKS = CORPUS / "s2_ffn_3d_reshape_blocks"


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_fix_as_an_option_points_to_the_fix_command():
    result = run("--fix", BLOCKS)
    assert result.exit_code == 2
    assert "irlint fix CONFIG DUMP" in result.output and "--config" not in result.output
    assert "irlint fix CONFIG DUMP" in run("check", "-n", "--fix", BLOCKS).output
    assert run("-n", BLOCKS, "--", "--fix").exit_code != 0  # after --, a path like any other


def test_account_commands_take_color_and_quiet():
    for command in ("memory", "comm", "cost"):
        plain = run(command, BLOCKS)
        assert plain.exit_code == 0, plain.output
        assert "\x1b[" not in plain.output and "Counted:" in plain.output
        colored = run(command, "--color", "always", BLOCKS)
        assert colored.exit_code == 0 and "\x1b[" in colored.output, command
        quiet = run(command, "-q", BLOCKS)
        assert quiet.exit_code == 0 and "Counted:" not in quiet.output, command
        assert quiet.output.splitlines()[0] == plain.output.splitlines()[0]  # the figures stay


def _bidi_folder(tmp_path):
    """A dump whose scope lines hold U+202E and U+2066, under a folder whose name holds U+202E."""
    folder = tmp_path / "run\u202ex"
    folder.mkdir()
    text = (BLOCKS / "21_validate_0076.ir").read_text(encoding="utf-8")
    (folder / "21_validate_0076.ir").write_text(
        text.replace("feed_forward-LlamaFeedForward/", "feed_forward-LlamaFeedForward/\u2066ab\u202e/"),
        encoding="utf-8",
    )
    return folder


def test_bidirectional_controls_are_escaped_in_every_printed_format(tmp_path):
    folder = _bidi_folder(tmp_path)
    for fmt in ("text", "concise", "github", "junit", "html"):
        result = run("-n", "--format", fmt, folder)
        assert result.exit_code == 1, (fmt, result.output)
        assert "\u202e" not in result.output and "\u2066" not in result.output, fmt
        assert "\\u202e" in result.output, fmt


def test_cost_json_says_how_each_file_was_read(tmp_path):
    import json

    folder = tmp_path / "cut"
    folder.mkdir()
    data = (BLOCKS / "21_validate_0076.ir").read_bytes()
    (folder / "21_validate_0076.ir").write_bytes(data[: len(data) // 2])
    result = run("cost", "--format", "json", folder)
    (entry,) = json.loads(result.stdout)["files"]
    assert entry["read"] == "partly" and entry["diagnostics"]  # a truncated rank's figures are flagged
    whole = json.loads(run("cost", "--format", "json", BLOCKS).stdout)["files"]
    assert [(f["read"], f["diagnostics"]) for f in whole] == [("whole", [])]


def test_a_projection_to_fewer_layers_than_dumped_takes_the_first_ones():
    from irlint.accounts.projection import layer_blocks

    assert layer_blocks(["0", "1", "2", "3"], 2) == [(0, 0, "0"), (1, 1, "1")]
    assert layer_blocks(["0", "1"], 4) == [(0, 1, "0"), (2, 3, "1")]  # more: each dumped layer a block
    l4 = CORPUS.parent / "recompute" / "aliased-scopes-l4"
    text = run("cost", "--layers", "2", l4).output
    rows = [line for line in text.splitlines() if line.startswith("│ 0 ") or line.startswith("│ 1 ")]
    assert [r.split("│")[2].strip() for r in rows[-2:]] == ["0", "1"]  # from dumped layers 0 and 1


def _suppressed_lint(tmp_path, entries: str, *args: str):
    config = tmp_path / "irlint.toml"
    config.write_text(entries, encoding="utf-8")
    return CliRunner().invoke(main, ["--config", str(config), "-n", *args, str(BLOCKS)])


def test_a_second_suppression_of_the_same_findings_is_not_called_unused(tmp_path):
    both = (
        '[[suppress]]\nrule = "RC002"\nscope = "feed_forward"\n\n[[suppress]]\nrule = "RC002"\nscope = "FeedForward"\n'
    )
    result = _suppressed_lint(tmp_path, both)
    assert "suppressed" in result.output and "matched no finding" not in result.stderr


def test_a_suppression_of_a_rule_that_did_not_run_is_not_called_unused(tmp_path):
    entry = '[[suppress]]\nrule = "RC002"\nscope = "feed_forward"\n'
    result = _suppressed_lint(tmp_path, entry, "--select", "RC001")
    assert "matched no finding" not in result.stderr
    stale = _suppressed_lint(tmp_path, '[[suppress]]\nrule = "RC002"\nscope = "no_such_cell"\n')
    assert "matched no finding" in stale.stderr  # a rule that ran, a pattern that names nothing


def test_the_diff_header_names_a_one_file_compile_once(tmp_path):
    after = tmp_path / "after"
    shutil.copytree(BLOCKS, after)
    shutil.copy(CORPUS / "s3_ffn_3d_reshape_fixed" / "21_validate_0076.ir", after / "21_validate_0176.ir")
    text = run("diff", "-n", BLOCKS, after).stdout
    header = next(line for line in text.splitlines() if line.startswith("Compared in AFTER"))
    assert "the newest of 2 compiles" in header
    assert "…" not in header and header.count("21_validate_0176.ir") == 1, header


def test_stage_files_named_one_by_one_count_each_problem_once(tmp_path):
    import json

    files = sorted(BLOCKS.glob("*.ir"))  # as a pre-commit hook passes them
    assert len(files) > 2
    summary = json.loads(run("-n", "--format", "json", *files).stdout)["summary"]
    assert (summary["findings"], summary["occurrences"]) == (2, 2)
    assert "occurrences" not in run("-n", *files).output
    # two dumps of one stage side by side, named by name: each keeps its findings
    other = tmp_path / "21_validate_0077.ir"
    shutil.copy(BLOCKS / "21_validate_0076.ir", other)
    shutil.copy(BLOCKS / "21_validate_0076.ir", tmp_path / "21_validate_0076.ir")
    two = json.loads(
        run("-n", "--no-dedup", "--no-group", "--format", "json", tmp_path / "21_validate_0076.ir", other).stdout
    )
    assert two["summary"]["findings"] == 4
