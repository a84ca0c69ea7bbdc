"""Every real dump reads completely: no diagnostics, and the CNode count MindSpore printed."""

from __future__ import annotations

from pathlib import Path

import pytest

from irlint.read.reader import read_ir
from irlint.runner.discover import discover

FIXTURES = Path(__file__).parent / "fixtures" / "corpus"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "corpus"


def _dumps(root: Path) -> list[str]:
    if not root.is_dir():
        return []
    files, _ = discover([str(root)])
    return sorted(f.path for f in files)


# real dumps (the corpus and runs the rules were not written against) and the synthetic parallel ones
FIXTURE_ROOTS = (FIXTURES, FIXTURES.parent / "unseen", FIXTURES.parent / "synthetic")
FIXTURE_DUMPS = [p for root in FIXTURE_ROOTS for p in _dumps(root)]


def test_fixture_corpus_is_there():
    assert len(FIXTURE_DUMPS) > 100


@pytest.mark.parametrize("path", FIXTURE_DUMPS, ids=lambda p: str(Path(p).relative_to(FIXTURES.parent)))
def test_fixture_dump_reads_completely(path):
    from irlint.runner.engine import read_dump

    (found,) = discover([path])[0]
    ir = read_dump(found)  # compressed fixtures (the MindFormers MoE dumps) are read as they are
    assert [d.to_dict() for d in ir.diagnostics] == []
    assert ir.header["total_cnodes"] == ir.cnode_count
    assert len(ir.subgraphs) == ir.header["total_subgraphs"]


@pytest.mark.slow
def test_shared_corpus_reads_completely():
    dumps = _dumps(SHARED)
    if not dumps:
        pytest.skip("../shared/corpus is not here (a clone of the project alone)")
    bad = []
    for path in dumps:
        ir = read_ir(path)
        if ir.diagnostics or ir.header.get("total_cnodes") != ir.cnode_count:
            bad.append((path, ir.cnode_count, ir.header.get("total_cnodes"), ir.diagnostics[:2]))
    assert bad == []


def _model(ir) -> tuple:
    g = ir.graph
    return (
        repr(list(g.nodes(data=True))),
        repr(list(g.edges(keys=True, data=True))),
        [d.to_dict() for d in ir.diagnostics],
        ir.traces,
        ir.header,
        ir.attrs,
    )


@pytest.mark.parametrize("name", ["llama-cast/21_validate_0076.ir", "s2_ffn_3d_reshape_blocks/21_validate_0076.ir"])
def test_block_boundaries_do_not_change_what_is_read(tmp_path, monkeypatch, name):
    # the scanner reads 256 KiB blocks; with 61-byte blocks nearly every line, trace run and
    # multi-line tensor record crosses a boundary, and the file's last line has no newline
    import irlint.read.scanner

    data = (FIXTURES / name).read_bytes().rstrip(b"\n")
    path = tmp_path / "21_validate_0076.ir"
    path.write_bytes(data)
    whole = read_ir(str(path))
    monkeypatch.setattr(irlint.read.scanner, "BLOCK_BYTES", 61)
    small = read_ir(str(path))
    assert _model(small) == _model(whole)
    assert whole.cnode_count == whole.header["total_cnodes"] and whole.traces
    last = max(whole.traces.values(), key=lambda t: t[2])
    assert last[2] <= len(data)
    assert whole.trace(max(whole.traces, key=lambda k: whole.traces[k][2]))


def test_block_boundaries_with_bad_and_good_utf8(tmp_path, monkeypatch):
    # the scanner reuses one buffer: a block after one with invalid (or non-ASCII) bytes must be
    # judged by its own bytes, and each bad line reported once, whatever the block size
    import irlint.read.scanner

    lines = (FIXTURES / "llama-cast/21_validate_0076.ir").read_bytes().splitlines(keepends=True)
    scopes = [i for i, ln in enumerate(lines) if b"# Fullname with scope: (" in ln]
    lines[scopes[2]] = lines[scopes[2]].replace(b"Default", b"Def\xff\xfeult", 1)
    lines[scopes[5]] = lines[scopes[5]].replace(b"Default", "Défault".encode(), 1)
    path = tmp_path / "21_validate_0076.ir"
    path.write_bytes(b"".join(lines))
    whole = _model(read_ir(str(path)))
    assert [(d["line"], d["kind"]) for d in whole[2]] == [(scopes[2] + 1, "invalid-utf8")]
    for size in (61, 4096):
        monkeypatch.setattr(irlint.read.scanner, "BLOCK_BYTES", size)
        assert _model(read_ir(str(path))) == whole


@pytest.mark.slow
def test_whole_records_read_as_their_lines_one_by_one(monkeypatch):
    # the scanner hands most node records over whole; every fixture must read the same when
    # each of their lines is handed over on its own
    import irlint.read.scanner

    paths = [p for p in FIXTURE_DUMPS if "/synthetic/" not in p]
    whole = [_model(read_ir(p)) for p in paths]
    monkeypatch.setattr(irlint.read.scanner, "RECORDS", False)
    by_line = [_model(read_ir(p)) for p in paths]
    assert [p for p, a, b in zip(paths, whole, by_line) if a != b] == []


def test_unbalanced_node_lines_read_as_their_lines_one_by_one(tmp_path, monkeypatch):
    # an unbalanced bracket in a node line followed by its type line ends the record there, both
    # when the scanner hands the record over whole and when each line goes on its own
    import irlint.read.scanner

    lines = (FIXTURES / "llama-cast/21_validate_0076.ir").read_bytes().splitlines(keepends=True)
    named = [
        i
        for i, ln in enumerate(lines)
        if ln.startswith(b"  %") and b"{instance name: " in ln and lines[i + 1].startswith(b"      : ")
    ]
    lines[named[0]] = lines[named[0]].replace(b"{instance name: ", b"{instance name: half(", 1)
    lines[named[1]] = lines[named[1]].replace(b") {instance name: ", b" {instance name: ", 1)  # no grammar reads it
    path = tmp_path / "21_validate_0076.ir"
    path.write_bytes(b"".join(lines))
    whole = _model(read_ir(str(path)))
    monkeypatch.setattr(irlint.read.scanner, "RECORDS", False)
    assert _model(read_ir(str(path))) == whole
    assert [(d["line"], d["kind"]) for d in whole[2]][:1] == [(named[1] + 1, "bad-record")]


def test_names_and_type_lines_of_whole_records_read_as_their_lines_one_by_one(tmp_path, monkeypatch):
    # a whole record's node line is cut where the scanner matched it, unless its name holds other
    # than ASCII (a no-break space is a space to NODE_LINE: that record is refused either way); its
    # first type line, read once, is reused by its bytes, a damaged one is reported each time
    import irlint.read.scanner

    lines = (FIXTURES / "llama-cast/21_validate_0076.ir").read_bytes().splitlines(keepends=True)
    named = [i for i, ln in enumerate(lines) if ln.startswith(b"  %") and lines[i + 1].startswith(b"      : ")]
    lines[named[0]] = lines[named[0]].replace(b") = ", b"\xc2\xa0x) = ", 1)
    lines[named[1]] = lines[named[1]].replace(b") = ", b"\xc3\xa9) = ", 1)  # a name of other letters reads
    bad = lines[named[2] + 1].replace(b"<", b"<<", 1)
    lines[named[2] + 1] = lines[named[3] + 1] = bad
    path = tmp_path / "21_validate_0076.ir"
    path.write_bytes(b"".join(lines))
    whole = _model(read_ir(str(path)))
    monkeypatch.setattr(irlint.read.scanner, "RECORDS", False)
    assert _model(read_ir(str(path))) == whole
    found = [(d["line"], d["kind"]) for d in whole[2]]
    assert (named[0] + 1, "bad-record") in found and (named[1] + 1, "bad-record") not in found
    assert (named[2] + 2, "bad-record") in found and (named[3] + 2, "bad-record") in found


@pytest.mark.slow
def test_record_recipes_give_what_the_pieces_parse_to(monkeypatch):
    # a record's value is refilled from the parse of its template; on every real dump each new
    # template's first record must give the same value as the parse of its own pieces
    import irlint.read.record
    import irlint.read.templates

    monkeypatch.setattr(irlint.read.templates, "VERIFY_RECIPES", True)
    monkeypatch.setattr(irlint.read.templates, "RECIPE_MISMATCHES", [])
    irlint.read.record.clear_memos()
    try:
        for path in FIXTURE_DUMPS + _dumps(SHARED):
            read_ir(path)
        assert len(irlint.read.templates._RECIPES) > 1000
        assert irlint.read.templates.RECIPE_MISMATCHES == []
    finally:
        irlint.read.record.clear_memos()  # the recipes built while checking


def _type_lines(paths: list[str]) -> set[str]:
    lines = set()
    for p in paths:
        with open(p, "rb") as f:
            lines.update(raw[8:].decode("utf-8", "replace").strip() for raw in f if raw.startswith(b"      : "))
    return lines


@pytest.mark.slow
@pytest.mark.parametrize("root", [FIXTURES.parent, SHARED], ids=["fixtures", "shared"])
def test_type_lines_read_entry_by_entry_equal_the_whole_line_parse(root):
    from irlint.read import record

    if not root.is_dir():
        pytest.skip(f"{root} is not there")
    paths = [str(p) for p in root.rglob("*.ir")]
    flat = 0
    for body in _type_lines(paths):
        fast = record._flat_type_line(body)
        if fast is not None:
            flat += 1
            assert repr(fast) == repr(record._parse_type_line(body)), body
    assert flat > 1000  # nearly every type line is flat
