"""The fast parser (``irlint.read.fast_parse``) against Lark's: the same values on every piece the
reader parses, a refusal wherever Lark refuses, and no Lark parser built to read a common dump."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from irlint.read import fast_parse, parser, record, tree_values
from irlint.read.reader import read_ir
from irlint.read.values import Call

FIXTURES = Path(__file__).parent / "fixtures"
STARTS = ["call", "attrs", "types", "param", "header", "value"]


def _same(a: Any, b: Any) -> bool:
    """Equal values of the same types all the way down (a mark is Lark's token of its terminal)."""
    if isinstance(a, tree_values._TOKENS) and isinstance(b, tree_values._TOKENS):
        return str(a) == str(b) and a.type == b.type
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return len(a) == len(b) and all(_same(k, j) and _same(a[k], b[j]) for k, j in zip(a, b))
    if isinstance(a, Call):
        return _same((a.name, a.args, a.kwargs), (b.name, b.args, b.kwargs)) and a.bracket == b.bracket
    if isinstance(a, float) and a != a:
        return b != b
    return a == b


def _lark(text: str, start: str) -> tuple[bool, Any]:
    try:
        return True, parser._parser().parse(text, start=start)
    except tree_values._PARSE_ERRORS:
        return False, None


def _disagreements(pieces: list[tuple[str, str]]) -> list[tuple[str, str]]:
    wrong = []
    for text, start in pieces:
        fast = fast_parse.parse(text, start)
        if fast is None:
            continue  # Lark reads it (or says why not)
        ok, value = _lark(text, start)
        if not ok or not _same(fast, value):
            wrong.append((start, text))
    return wrong


@pytest.fixture(scope="module")
def pieces() -> list[tuple[str, str]]:
    """Every (text, start) the reader parses while reading every fixture dump."""
    seen: dict[tuple[str, str], None] = {}
    fast = fast_parse.parse

    def recording(text: str, start: str) -> Any:
        seen[(text, start)] = None
        return fast(text, start)

    fast_parse.parse = recording
    try:
        for path in sorted(FIXTURES.glob("**/*.ir")):
            record.clear_memos()
            read_ir(str(path))
    finally:
        fast_parse.parse = fast
        record.clear_memos()
    return list(seen)


def test_the_fast_parser_reads_the_fixtures_as_lark_does(pieces):
    assert len(pieces) > 1000
    assert _disagreements(pieces) == []
    read = sum(fast_parse.parse(t, s) is not None for t, s in pieces)
    assert read > 0.95 * len(pieces)  # Lark is left the rare forms (1.x primitive classes)


@pytest.mark.slow
def test_the_fast_parser_refuses_what_lark_refuses_on_damaged_pieces(pieces):
    rnd = random.Random(28)
    marks = [*"()[]{}<>,:=*\"' \t\n\\", "->", "None", "inf", "-1", "1.5e-06", "\x00", "\x0b", "\x1c", "é"]
    damaged = []
    for _ in range(6000):
        text, start = rnd.choice(pieces)
        for _ in range(rnd.randint(1, 3)):
            i = rnd.randrange(len(text) + 1)
            op = rnd.random()
            if op < 0.4:
                text = text[:i] + rnd.choice(marks) + text[i:]
            elif op < 0.8:
                text = text[:i] + text[i + 1 :]
            else:
                text = text[:i] + text[i : i + 5] + text[i:]
        damaged.append((text, rnd.choice([start, start, *STARTS])))
    assert _disagreements(damaged) == []


def test_marks_that_would_outlive_their_item_go_to_lark():
    for text in ["{a: b: c}", "{a: =}", "(k=v=w)", "(k=*)"]:
        start = "attrs" if text[0] == "{" else "value"
        assert fast_parse.parse(text, start) is None
        assert _lark(text, start)[0]  # Lark reads them
    assert fast_parse.parse("DoSignaturePrimitive::S-Prim-Add{prim_type=1}(%0)", "call") is None


def test_reading_a_common_dump_builds_no_lark_parser():
    parser._parser.cache_clear()
    record.clear_memos()
    try:
        ir = read_ir(str(FIXTURES / "corpus" / "s2_ffn_3d_reshape_blocks" / "21_validate_0076.ir"))
        assert ir.nodes and not ir.diagnostics
        assert parser._parser.cache_info().currsize == 0
    finally:
        record.clear_memos()
