"""Bad input never raises: it becomes a diagnostic with file and line, and the rest is read."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from irlint import diagnostics as D
from irlint.read.reader import read_ir

CASE = Path(__file__).parent / "fixtures" / "corpus" / "s2_ffn_3d_reshape_blocks" / "21_validate_0076.ir"
MULTI = Path(__file__).parent / "fixtures" / "corpus" / "llama-cast" / "21_validate_0076.ir"
RECORD = re.compile(rb"^  (%\d+\(|Return\()", re.M)


def _write(tmp_path: Path, data: bytes, name: str = "21_validate_0076.ir") -> str:
    p = tmp_path / name
    p.write_bytes(data)
    return str(p)


def _codes(ir) -> list[str]:
    return [d.code for d in ir.diagnostics]


@pytest.mark.parametrize("source", [CASE, MULTI], ids=["ffn", "llama-with-multiline-tensors"])
def test_truncated_at_many_offsets(tmp_path, source):
    data = source.read_bytes()
    total = len(RECORD.findall(data))
    for cut in list(range(0, len(data), max(1, len(data) // 60))) + [len(data) - 1]:
        part = data[:cut]
        ir = read_ir(_write(tmp_path, part))
        complete = len(RECORD.findall(part))
        # every record that is wholly before the cut is read (the last one may be cut mid-line)
        assert ir.cnode_count >= complete - 1, cut
        assert ir.cnode_count <= total
        for d in ir.diagnostics:
            assert d.file.endswith("21_validate_0076.ir") and d.line >= 0 and d.message
        if ir.cnode_count < total and cut > 200:
            assert D.TRUNCATED in _codes(ir) or D.BAD_RECORD in _codes(ir), cut


def test_junk_lines_are_reported_at_their_line_and_skipped(tmp_path):
    lines = CASE.read_bytes().splitlines(keepends=True)
    node_lines = [i for i, ln in enumerate(lines) if ln.startswith(b"  %")]
    targets = node_lines[3], node_lines[10]
    junk = [b"@@@ garbage that no dump has ###\n", b"  %99(x) = ???(((\n"]
    out = []
    expected = []
    for i, ln in enumerate(lines):
        if i in targets:
            k = targets.index(i)
            expected.append((len(out) + 1, junk[k]))
            out.append(junk[k])
        out.append(ln)
    ir = read_ir(_write(tmp_path, b"".join(out)))
    assert [(d.line, d.code) for d in ir.diagnostics] == [
        (expected[0][0], D.UNKNOWN_LINE),
        (expected[1][0], D.BAD_RECORD),
    ]
    assert ir.cnode_count == ir.header["total_cnodes"]


def test_invalid_utf8_is_replaced_and_reported(tmp_path):
    data = CASE.read_bytes()
    lines = data.splitlines(keepends=True)
    scope_at = next(i for i, ln in enumerate(lines) if b"# Scope: (" in ln or b"# Fullname with scope" in ln)
    lines[scope_at] = lines[scope_at].replace(b"Default", b"Def\xff\xfeult", 1)
    ir = read_ir(_write(tmp_path, b"".join(lines)))
    assert [(d.line, d.code) for d in ir.diagnostics] == [(scope_at + 1, D.INVALID_UTF8)]
    assert ir.cnode_count == ir.header["total_cnodes"]
    assert any("Def\ufffd\ufffdult" in ir.graph.nodes[k]["scope"] for k in ir.cnodes())


def test_invalid_utf8_in_a_source_trace_is_reported(tmp_path):
    lines = CASE.read_bytes().splitlines(keepends=True)
    at = next(i for i, ln in enumerate(lines) if ln.startswith(b"      # In file"))
    lines[at] = lines[at].rstrip(b"\n") + b"\xc3\x28\n"
    ir = read_ir(_write(tmp_path, b"".join(lines)))
    assert [(d.line, d.code) for d in ir.diagnostics] == [(at + 1, D.INVALID_UTF8)]


def test_binary_junk_is_not_read_as_a_dump(tmp_path):
    ir = read_ir(_write(tmp_path, bytes(range(256)) * 64))
    assert _codes(ir) == [D.BINARY] and ir.cnode_count == 0


def test_empty_and_foreign_files(tmp_path):
    assert _codes(read_ir(_write(tmp_path, b"", "a.ir"))) == [D.NOT_IR]
    foreign = read_ir(_write(tmp_path, b"[Device tensor stores]\n\tgraph_id:0\n", "b.ir"))
    assert _codes(foreign) == [D.NOT_IR] and "IR entry" in foreign.diagnostics[0].message


def test_a_50_mb_line_is_skipped_not_parsed(tmp_path):
    lines = CASE.read_bytes().splitlines(keepends=True)
    at = next(i for i, ln in enumerate(lines) if ln.startswith(b"  %"))
    lines.insert(at, b"x" * (50 * 1024 * 1024) + b"\n")
    ir = read_ir(_write(tmp_path, b"".join(lines)))
    assert [(d.line, d.code) for d in ir.diagnostics] == [(at + 1, D.LINE_TOO_LONG)]
    assert ir.cnode_count == ir.header["total_cnodes"]


def test_unreadable_path_is_a_diagnostic(tmp_path):
    ir = read_ir(str(tmp_path / "missing.ir"))
    assert _codes(ir) == [D.UNREADABLE]


def test_wrong_header_count_is_reported(tmp_path):
    data = CASE.read_bytes().replace(b"Total number of cnodes: 36", b"Total number of cnodes: 37")
    ir = read_ir(_write(tmp_path, data))
    assert _codes(ir) == [D.COUNT_MISMATCH]


def test_random_bytes_inside_a_dump_give_one_diagnostic_per_run_of_bad_lines(tmp_path):
    # issue 11 item 24: 3 KB of random bytes gave 44 diagnostics, one or two per garbage line
    import random

    lines = CASE.read_bytes().splitlines(keepends=True)
    node_lines = [i for i, ln in enumerate(lines) if ln.startswith(b"  %")]
    at = node_lines[5]
    noise = random.Random(11).randbytes(3 * 1024).rstrip(b"\n") + b"\n"
    data = b"".join(lines[:at]) + noise + b"".join(lines[at:])
    ir = read_ir(_write(tmp_path, data))
    n = noise.count(b"\n")
    assert len(ir.diagnostics) == 1, [(d.line, d.code, d.message) for d in ir.diagnostics]
    d = ir.diagnostics[0]
    assert d.line == at + 1 and d.code == D.UNKNOWN_LINE
    assert f"{n} consecutive lines" in d.message and f"lines {at + 1}-{at + n}" in d.message
    assert ir.cnode_count == ir.header["total_cnodes"]  # the records around the noise are read


def test_separate_bad_lines_stay_separate_diagnostics(tmp_path):
    lines = CASE.read_bytes().splitlines(keepends=True)
    node_lines = [i for i, ln in enumerate(lines) if ln.startswith(b"  %")]
    out = list(lines)
    for i in (node_lines[8], node_lines[4]):  # two runs of two lines each, far apart
        out[i:i] = [b"@@@ garbage one\n", b"@@@ garbage two\n"]
    ir = read_ir(_write(tmp_path, b"".join(out)))
    first, second = node_lines[4] + 1, node_lines[8] + 3
    assert [(d.line, d.code) for d in ir.diagnostics] == [(first, D.UNKNOWN_LINE), (second, D.UNKNOWN_LINE)]
    assert all("2 consecutive lines" in d.message for d in ir.diagnostics)
