"""Every kind of input a user's machine hands irlint: renamed, truncated, symlinked, compressed,
unreadable, piped. None may pass as clean unread, none may crash the run."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

import irlint.runner.discover
import irlint.runner.streams
from irlint.cli import main
from irlint.runner.discover import discover_inputs

S2 = Path(__file__).parent / "fixtures" / "corpus" / "s2_ffn_3d_reshape_blocks"
VALIDATE = S2 / "21_validate_0076.ir"


def run(*args, **kw):
    return CliRunner().invoke(
        main,
        ["--no-cache", *map(str, args)] if args and args[0] != "inspect" else list(map(str, args)),
        catch_exceptions=False,
        **kw,
    )


def lint_json(*args, **kw):
    result = run(*args, "--format", "json", **kw)
    return result.exit_code, json.loads(result.stdout)


def codes(data) -> set[str]:
    return {f["code"] for f in data["findings"]}


@pytest.fixture(scope="module")
def expected() -> set[str]:
    """What the folder as MindSpore named it gives."""
    code, data = lint_json(S2)
    assert code == 1 and "RC002" in codes(data)  # the Reshape that blocks SiLU/Mul recompute
    return codes(data)


# --- item 1: a dump is decided by content, and its stage by name when the name says it ---------
@pytest.mark.parametrize("name", ["21_validate.ir", "graph.ir", "21_validate_0076.IR", "rank0_21_validate_0076.ir"])
def test_a_renamed_dump_alone_in_a_folder_is_read(tmp_path, expected, name):
    shutil.copy(VALIDATE, tmp_path / name)
    code, data = lint_json(tmp_path)
    assert code == 1 and codes(data) == expected
    assert data["summary"]["files"] == 1


def test_a_dump_without_a_stage_in_its_name_is_read_next_to_placed_ones(tmp_path):
    shutil.copytree(S2, tmp_path / "g")
    shutil.copy(VALIDATE, tmp_path / "g" / "graph.ir")
    files = discover_inputs([str(tmp_path / "g")]).files
    assert [f.placed for f in files if f.path.endswith("graph.ir")] == [False]
    code, data = lint_json(tmp_path / "g")
    # one finding per problem per folder: the renamed copy does not double them
    _, plain = lint_json(S2)
    assert len(data["findings"]) == len(plain["findings"])


def test_files_checked_counts_only_files_read(tmp_path):
    _, data = lint_json(S2)
    assert data["summary"]["files"] == 1  # only validate is read of the five stage files
    result = run(S2)
    assert "(1 file checked)" in result.output


# --- item 2: a truncated final stage falls back to the earlier complete ones ----------------------
def test_a_truncated_final_stage_falls_back_to_the_next_stage(tmp_path, expected):
    folder = tmp_path / "s2t"
    shutil.copytree(S2, folder)
    (folder / VALIDATE.name).write_bytes(VALIDATE.read_bytes()[:20000])
    code, data = lint_json(folder)
    assert code == 2
    assert "IR007" in {d["code"] for d in data["diagnostics"]}
    assert "RC002" in codes(data)
    assert any("opt_pass" in f["file"] or "graph_build" in f["file"] for f in data["findings"])


# --- item 3: symlinks are followed -------------------------------------------------------------
def test_a_folder_of_symlinked_dumps_and_a_symlinked_rank_folder(tmp_path, expected):
    only = tmp_path / "onlysym"
    only.mkdir()
    (only / VALIDATE.name).symlink_to(VALIDATE)
    code, data = lint_json(only)
    assert code == 1 and codes(data) == expected
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    (ranks / "rank_0").symlink_to(S2, target_is_directory=True)
    code, data = lint_json(ranks / "rank_0")  # a named link is followed
    assert code == 1 and codes(data) == expected
    shutil.copytree(S2, ranks / "rank_1")
    (ranks / "rank_2").symlink_to(ranks / "rank_1", target_is_directory=True)  # a link within: followed
    # a link out of the named folder to a folder of dumps is followed (issue 31: rank folders
    # linked from the nodes of a cluster)
    code, data = lint_json(ranks)
    assert code == 1 and codes(data) == expected and data["diagnostics"] == []
    assert data["summary"]["files"] == 2


def test_a_symlink_loop_ends(tmp_path):
    folder = tmp_path / "g"
    shutil.copytree(S2, folder)
    (folder / "again").symlink_to(folder, target_is_directory=True)
    code, data = lint_json(folder)
    assert code == 1 and data["summary"]["files"] == 1


# --- item 6, 13, 16: what cannot be read is said, and the rest is linted -------------------------
def test_a_sub_folder_that_can_be_listed_but_not_entered(tmp_path, monkeypatch, expected):
    # the tests run as root, who can enter anything: fail the way the OS does for `chmod 644 dir`
    shutil.copytree(S2, tmp_path / "good")
    locked = tmp_path / "locked"
    locked.mkdir()
    shutil.copy(VALIDATE, locked / VALIDATE.name)
    real_stat = os.stat

    def stat(p, *a, **kw):
        if Path(p).parent == locked:
            raise PermissionError(13, "Permission denied", str(p))
        return real_stat(p, *a, **kw)

    monkeypatch.setattr(irlint.runner.discover.os, "stat", stat)
    code, data = lint_json(tmp_path)
    assert code == 2
    assert codes(data) == expected
    assert [(d["code"], Path(d["file"]).parent.name) for d in data["diagnostics"]] == [("IR001", "locked")]
    result = run("inspect", tmp_path)
    assert result.exit_code == 2 and "locked" in result.output and "permission denied" in result.output


@pytest.mark.parametrize(
    "content, reason",
    [
        (b"\x00\x01" * 50, "1 binary .ir file"),
        (b"", "1 empty .ir file"),
    ],
)
def test_a_folder_without_a_dump_says_what_it_found(tmp_path, content, reason):
    (tmp_path / "21_validate_0076.ir").write_bytes(content)
    result = run(tmp_path)
    assert result.exit_code == 2
    assert "no graph IR dumps" in result.output and reason in result.output


def test_inspect_lists_an_unreadable_dump(tmp_path, monkeypatch):
    shutil.copytree(S2, tmp_path / "g")
    bad = tmp_path / "g" / VALIDATE.name
    real_read_head = irlint.runner.discover._read_head

    def read_head(path):
        if Path(path) == bad:  # as open() fails on a file without read permission (tests run as root)
            raise PermissionError(13, "Permission denied")
        return real_read_head(path)

    monkeypatch.setattr(irlint.runner.discover, "_read_head", read_head)
    result = run("inspect", tmp_path / "g")
    assert result.exit_code == 2
    assert VALIDATE.name in result.output and "permission denied" in result.output


# --- item 14: compressed dumps -------------------------------------------------------------------
@pytest.mark.parametrize("suffix, compress", [(".gz", gzip.compress), (".bz2", bz2.compress), (".xz", lzma.compress)])
def test_compressed_dumps_are_read(tmp_path, expected, suffix, compress):
    folder = tmp_path / "g"
    shutil.copytree(S2, folder)
    (folder / (VALIDATE.name + suffix)).write_bytes(compress(VALIDATE.read_bytes()))
    VALIDATE_copy = folder / VALIDATE.name
    VALIDATE_copy.unlink()
    # a compressed final stage is read, not silently replaced by an earlier stage file
    code, data = lint_json(folder)
    assert code == 1 and codes(data) == expected
    assert all(f["file"].endswith(VALIDATE.name + suffix) for f in data["findings"])
    # the text report shows the dump lines from the compressed file
    text = run(folder / (VALIDATE.name + suffix)).output
    assert re.search(r"\d+ │ %\d+\(", text)


def test_a_damaged_compressed_dump_is_reported(tmp_path):
    data = gzip.compress(VALIDATE.read_bytes())
    (tmp_path / (VALIDATE.name + ".gz")).write_bytes(data[:40] + b"\x00" * 40)
    code, out = lint_json(tmp_path / (VALIDATE.name + ".gz"))
    assert code == 2 and out["diagnostics"]


def test_zstd_without_a_reader_is_named(tmp_path, monkeypatch):
    monkeypatch.setattr(irlint.runner.streams, "_zstd_module", lambda: None)
    (tmp_path / (VALIDATE.name + ".zst")).write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00" * 20)
    result = run(tmp_path)
    assert result.exit_code == 2 and "zstd" in result.output


# --- item 15: standard input ----------------------------------------------------------------------
def test_standard_input_with_a_display_name(expected):
    result = run("-", "--stdin-filename", "graph/21_validate_0076.ir", "--format", "json", input=VALIDATE.read_bytes())
    data = json.loads(result.stdout)
    assert result.exit_code == 1 and codes(data) == expected
    assert {f["file"] for f in data["findings"]} == {"graph/21_validate_0076.ir"}
    text = run("-", input=VALIDATE.read_bytes()).output
    assert "<stdin>" in text and re.search(r"\d+ │ %\d+\(", text)  # dump lines shown from the buffer


def test_standard_input_compressed():
    result = run("-", "--format", "json", input=gzip.compress(VALIDATE.read_bytes()))
    assert result.exit_code == 1 and codes(json.loads(result.stdout))


def test_standard_input_that_is_not_a_dump():
    result = run("-", input=b"hello\n")
    assert result.exit_code == 2 and "IR002" in result.output


# --- item 17: one name per file in every format -----------------------------------------------------
def test_findings_and_diagnostics_name_a_file_the_same_way(tmp_path, monkeypatch):
    folder = tmp_path / "g"
    shutil.copytree(S2, folder)
    (folder / VALIDATE.name).write_bytes(VALIDATE.read_bytes()[:20000])
    monkeypatch.chdir(tmp_path)
    _, out = lint_json(folder.resolve(), "--all-stages")  # typed absolute, below the working directory
    assert out["findings"] and out["diagnostics"]
    names = {f["file"] for f in out["findings"]} | {d["file"] for d in out["diagnostics"]}
    names |= {r["file"] for f in out["findings"] for r in f["related"]}
    assert all(n.startswith("g" + os.sep) for n in names), names


@pytest.mark.slow
def test_dev_stdin_from_a_pipe(tmp_path):
    import subprocess
    import sys

    for args in (["/dev/stdin"], ["-", "--stdin-filename", "21_validate_0076.ir"]):
        proc = subprocess.run(
            [sys.executable, "-m", "irlint", "--no-cache", *args, "--format", "json"],
            input=VALIDATE.read_bytes(),
            capture_output=True,
            cwd=tmp_path,
            timeout=120,
        )
        assert proc.returncode == 1, proc.stderr
        assert "RC002" in codes(json.loads(proc.stdout))
        assert not list(tmp_path.iterdir())  # nothing written but the report


def test_the_api_report_of_a_compressed_dump_shows_its_lines(tmp_path):
    from irlint import Config, lint
    from irlint.reporters import render

    gz = tmp_path / (VALIDATE.name + ".gz")
    gz.write_bytes(gzip.compress(VALIDATE.read_bytes()))
    text = render(lint(str(gz), Config(cache=False, jobs=1)), "text")
    assert re.search(r"\d+ │ %\d+\(", text)


def test_a_folder_of_only_compressed_dumps_is_linted(tmp_path, expected):
    (tmp_path / (VALIDATE.name + ".gz")).write_bytes(gzip.compress(VALIDATE.read_bytes()))
    code, data = lint_json(tmp_path)
    assert code == 1 and codes(data) == expected


def test_a_folder_whose_only_sub_folder_cannot_be_listed_says_so(tmp_path, monkeypatch):
    locked = tmp_path / "rank_0"
    locked.mkdir()
    shutil.copy(VALIDATE, locked / VALIDATE.name)
    real_scandir = os.scandir

    def scandir(path="."):
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    result = run(tmp_path, "--format", "concise")
    assert result.exit_code == 2
    assert "found only 1 sub-folder that cannot be listed" in result.output
    assert "rank_0:1:1: IR001 [error] cannot list folder: permission denied" in result.output


# --- issue 21 item 17: blanks at line ends, a byte order mark, a .txt name --------------------------
@pytest.mark.parametrize(
    "edit",
    [
        lambda data: data.replace(b"\n", b"  \n"),  # trailing spaces on every line
        lambda data: data.replace(b"\n", b" \t\r\n"),  # and CRLF
        lambda data: b"\xef\xbb\xbf" + data,  # a UTF-8 byte order mark
    ],
)
def test_blanks_at_line_ends_and_a_byte_order_mark_read_as_the_dump(tmp_path, edit):
    dump = tmp_path / VALIDATE.name
    dump.write_bytes(edit(VALIDATE.read_bytes()))
    (_, plain), (code, edited) = lint_json(VALIDATE), lint_json(dump)
    assert code == 1 and edited["diagnostics"] == []
    strip = [(f["line"], f["message"], f["scope"], f["fingerprint"]) for f in plain["findings"]]
    assert [(f["line"], f["message"], f["scope"], f["fingerprint"]) for f in edited["findings"]] == strip
    folder = run(tmp_path)
    assert folder.exit_code == 1 and "IR0" not in folder.output


def test_a_dump_saved_as_txt_in_a_folder_is_read(tmp_path):
    shutil.copy(VALIDATE, tmp_path / "validate_dump.txt")
    (tmp_path / "notes.txt").write_text("not a dump\n")
    result = run(tmp_path, "--format", "concise")
    assert result.exit_code == 1 and result.output.count("RC002") == 2, result.output


def test_standard_input_is_read_in_blocks_not_whole(monkeypatch):
    """Issue 21 item 16: a 391 MB dump took 1.37 GB on standard input, 0.99 GB as a file."""
    import io

    import irlint.runner.streams as streams

    data = VALIDATE.read_bytes()
    sizes: list[int | None] = []

    class Pipe(io.RawIOBase):
        def __init__(self):
            self.stream = io.BytesIO(data)

        def readable(self):
            return True

        def read(self, size=-1):
            sizes.append(size)
            return self.stream.read(size if size is not None and size >= 0 else -1)

    monkeypatch.setattr(streams, "SPOOL_BLOCK", 4096, raising=False)
    streams.forget_buffers()
    streams.read_stdin(Pipe())
    assert sizes and all(s is not None and 0 < s <= 4096 for s in sizes)  # never "read it all"
    found = discover_inputs(["-"], "graph/21_validate_0076.ir")
    assert found.files[0].size == len(data)
    with streams.open_dump("-") as a, streams.open_dump("-") as b:
        assert a.read(100) == data[:100] and b.read(50) == data[:50]  # readers of their own
        a.seek(len(data) - 10)
        assert a.read() == data[-10:] and b.read(50) == data[50:100]
    streams.forget_buffers()
