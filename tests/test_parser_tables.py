"""The parse tables shipped in irlint/read/parser_tables.py: made from this grammar, used when they
fit, never when the grammar or Lark changed, and parsing the same as a parser built at start."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import lark
import pytest

from irlint.read import grammar_file, parser_tables, syntax
from irlint.read.reader import read_ir

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"


def _script():
    spec = importlib.util.spec_from_file_location("parser_tables_script", ROOT / "scripts" / "parser_tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def fresh_parser():
    """``syntax._parser`` made again in the test (and again after it, as it was)."""
    syntax._parser.cache_clear()
    yield syntax._parser
    syntax._parser.cache_clear()


def test_the_shipped_tables_are_those_of_the_grammar():
    # fails after an edit of grammar/ir.lark (or of the parser options) until the script is run again
    assert parser_tables.KEY == syntax.tables_key(grammar_file.grammar_text(), parser_tables.LARK), (
        "grammar/ir.lark changed: run python scripts/parser_tables.py")


def test_the_shipped_tables_are_what_the_script_writes():
    if lark.__version__ != parser_tables.LARK:
        pytest.skip(f"tables made with Lark {parser_tables.LARK}, this is {lark.__version__}: irlint builds "
                    "its parser at start until python scripts/parser_tables.py is run with this Lark")
    shipped = (ROOT / "irlint" / "read" / "parser_tables.py").read_text(encoding="utf-8")
    assert _script().tables_source(grammar_file.grammar_text()) == shipped


def test_the_script_writes_the_same_file_whatever_the_hash_seed(tmp_path):
    import subprocess

    texts = set()
    for seed in ("1", "2"):
        code = ("import sys; sys.path.insert(0, sys.argv[1]); import parser_tables as p; "
                "from irlint.read.grammar_file import grammar_text; print(p.tables_source(grammar_text()))")
        proc = subprocess.run([sys.executable, "-c", code, str(ROOT / "scripts")], capture_output=True, text=True,
                              env={"PYTHONHASHSEED": seed, "PATH": ""}, timeout=120)
        assert proc.returncode == 0, proc.stderr
        texts.add(proc.stdout)
    assert len(texts) == 1


def test_a_start_loads_the_tables_instead_of_building(fresh_parser, monkeypatch):
    if lark.__version__ != parser_tables.LARK:
        pytest.skip(f"tables made with Lark {parser_tables.LARK}, this is {lark.__version__}")

    def no_build(grammar):
        raise AssertionError("built the parser although the shipped tables fit")

    monkeypatch.setattr(syntax, "build_parser", no_build)
    assert syntax.parse_value("Tensor(shape=[2], dtype=Float32)").name == "Tensor"
    assert fresh_parser().parse("{a: I64(1)}", start="attrs") == {"a": 1}


def _built(monkeypatch) -> list[str]:
    built = []
    real = syntax.build_parser
    monkeypatch.setattr(syntax, "build_parser", lambda grammar: built.append(grammar) or real(grammar))
    return built


def test_an_edited_grammar_is_built_not_loaded(fresh_parser, monkeypatch):
    # an editable install after an edit of grammar/ir.lark: the shipped tables are stale
    edited = grammar_file.grammar_text().replace('STAR: "*"', 'STAR: "*" | "#"')
    assert edited != grammar_file.grammar_text()
    monkeypatch.setattr(syntax, "grammar_text", lambda: edited)
    built = _built(monkeypatch)
    assert fresh_parser().parse("(a # b)", start="value") == ("a # b",)   # the edit took effect
    assert built == [edited]


def test_tables_of_another_lark_are_not_used(fresh_parser, monkeypatch):
    monkeypatch.setattr(lark, "__version__", "0.0.1")
    built = _built(monkeypatch)
    assert fresh_parser().parse("{a: I64(1)}", start="attrs") == {"a": 1}
    assert len(built) == 1


def test_without_the_tables_the_parser_is_built(fresh_parser, monkeypatch):
    import irlint.read

    monkeypatch.setitem(sys.modules, "irlint.read.parser_tables", None)   # its import fails
    monkeypatch.delattr(irlint.read, "parser_tables")
    built = _built(monkeypatch)
    assert fresh_parser().parse("{a: I64(1)}", start="attrs") == {"a": 1}
    assert len(built) == 1


# --- the loaded parser and a built one agree on every piece the reader parses ---------------------
_BROKEN = [
    ("call", "PrimFunc_Add(%1, %2"), ("call", "PrimFunc_Add(%1, %2))"), ("attrs", "{a: (1, 2}"),
    ("types", "(<Tensor[Float32], (2)>) ->"), ("param", "%para1_x <Tensor[Float32]>"), ("value", "a = = b"),
    ("header", "subgraph @g("), ("call", ""), ("value", "'unclosed"), ("attrs", "{a: b} }"),
]


def _pieces(monkeypatch, lark_parses) -> list[tuple[str, str]]:
    """Every (text, start) the reader hands Lark while reading the fixture dumps."""
    from irlint.runner.discover import discover

    # templates share most parses: each new one's real text is parsed too (and checked against it)
    monkeypatch.setattr(syntax, "VERIFY_RECIPES", True)
    # other MindSpore versions, unseen dumps and dump formats, and one corpus case: about 750 pieces
    roots = ("versions", "unseen", "dump-formats", "synthetic", "corpus/s2_ffn_3d_reshape_blocks")
    files, _ = discover([str(FIXTURES / root) for root in roots])
    for f in files:
        read_ir(f.path)
    return list(dict.fromkeys(lark_parses))


def _outcome(parser, text: str, start: str):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(syntax, "_parser", lambda: parser)
        try:
            return "value", repr(syntax._parse(text, start))
        except syntax.GrammarError as exc:   # what the reader reports of a piece Lark refuses
            return "error", str(exc), exc.column


def test_loaded_and_built_parsers_agree(monkeypatch, lark_parses):
    if lark.__version__ != parser_tables.LARK:
        pytest.skip(f"tables made with Lark {parser_tables.LARK}, this is {lark.__version__}")
    grammar = grammar_file.grammar_text()
    loaded, built = syntax._load_tables(grammar), syntax.build_parser(grammar)
    assert loaded is not None
    pieces = _pieces(monkeypatch, lark_parses) + _BROKEN
    assert len(pieces) > 700
    outcomes = [(_outcome(loaded, t, s), _outcome(built, t, s)) for t, s in pieces]
    assert sum(a[0] == "error" for a, _ in outcomes) >= len(_BROKEN)
    assert [(t, s, a) for (t, s), (a, b) in zip(pieces, outcomes) if a != b] == []
