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
