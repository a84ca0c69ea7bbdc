"""The parser shipped in irlint/read/standalone_parser.py (Lark's standalone LALR parser of the grammar):
made from this grammar and these options, used when it fits (without importing Lark), never when the
grammar or options changed, and parsing the same as a parser the installed Lark builds."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import lark
import pytest

from irlint.read import grammar_file, parser, standalone_parser, syntax, templates
from irlint.read.reader import read_ir

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"


def _script():
    spec = importlib.util.spec_from_file_location("standalone_parser_script", ROOT / "scripts" / "standalone_parser.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _skip_unless_made_by_this_lark():
    if lark.__version__ != standalone_parser.__version__:
        pytest.skip(
            f"parser made with Lark {standalone_parser.__version__}, this is {lark.__version__}: "
            "run python scripts/standalone_parser.py with this Lark"
        )


@pytest.fixture
def fresh_parser():
    """``parser._parser`` made again in the test (and again after it, as it was)."""
    parser._parser.cache_clear()
    yield parser._parser
    parser._parser.cache_clear()


def test_the_shipped_parser_is_that_of_the_grammar():
    # fails after an edit of grammar/ir.lark (or of the parser options) until the script is run again
    assert standalone_parser.GRAMMAR == grammar_file.grammar_text(), (
        "grammar/ir.lark changed: run python scripts/standalone_parser.py"
    )
    assert standalone_parser.OPTIONS == parser.PARSER_OPTIONS, (
        "PARSER_OPTIONS changed: run python scripts/standalone_parser.py"
    )


def test_the_shipped_parser_is_what_the_script_writes():
    _skip_unless_made_by_this_lark()
    shipped = (ROOT / "irlint" / "read" / "standalone_parser.py").read_text(encoding="utf-8")
    assert _script().standalone_source(grammar_file.grammar_text()) == shipped


def test_the_script_writes_the_same_file_whatever_the_hash_seed():
    texts = set()
    for seed in ("1", "2"):
        code = (
            "import sys; sys.path.insert(0, sys.argv[1]); import standalone_parser as p; "
            "from irlint.read.grammar_file import grammar_text; print(p.standalone_source(grammar_text()))"
        )
        proc = subprocess.run(
            [sys.executable, "-c", code, str(ROOT / "scripts")],
            capture_output=True,
            text=True,
            env={"PYTHONHASHSEED": seed, "PATH": ""},
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        texts.add(proc.stdout)
    assert len(texts) == 1


def test_the_shipped_parser_needs_no_lark():
    code = (
        "import sys; from irlint.read import parser, syntax; p = parser._parser(); "
        "print(type(p).__module__, 'lark' in sys.modules, syntax.parse_attrs('{a: I64(1), b: x}'))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split(maxsplit=2) == ["irlint.read.standalone_parser", "False", "{'a': 1, 'b': 'x'}\n"]


def test_a_start_loads_the_shipped_parser_instead_of_building(fresh_parser, monkeypatch):
    def no_build(grammar):
        raise AssertionError("built the parser although the shipped one fits")

    monkeypatch.setattr(parser, "build_parser", no_build)
    assert syntax.parse_value("Tensor(shape=[2], dtype=Float32)").name == "Tensor"
    assert fresh_parser().parse("{a: I64(1)}", start="attrs") == {"a": 1}


def test_the_shipped_parser_does_not_depend_on_the_installed_lark(fresh_parser, monkeypatch):
    # it carries its own copy of Lark's parsing code: another installed Lark changes nothing
    monkeypatch.setattr(lark, "__version__", "0.0.1")
    built = _built(monkeypatch)
    assert fresh_parser().parse("{a: I64(1)}", start="attrs") == {"a": 1}
    assert built == []


def _built(monkeypatch) -> list[str]:
    built = []
    real = parser.build_parser
    monkeypatch.setattr(parser, "build_parser", lambda grammar: built.append(grammar) or real(grammar))
    return built


def test_an_edited_grammar_is_built_not_loaded(fresh_parser, monkeypatch):
    # an editable install after an edit of grammar/ir.lark: the shipped parser is stale
    edited = grammar_file.grammar_text().replace('STAR: "*"', 'STAR: "*" | "#"')
    assert edited != grammar_file.grammar_text()
    monkeypatch.setattr(parser, "grammar_text", lambda: edited)
    built = _built(monkeypatch)
    built_parser = fresh_parser()
    assert type(built_parser) is lark.Lark
    assert built_parser.parse("(a # b)", start="value") == ("a # b",)  # the edit took effect
    assert built_parser.parse("{k: (a # b)}", start="attrs") == {"k": ("a # b",)}  # Lark's tokens known as such
    with pytest.raises(parser.GrammarError, match="column 3"):  # and its errors as errors
        parser.parse_rule("a ) b", "value")
    assert built == [edited]


def test_other_parser_options_are_built_not_loaded(fresh_parser, monkeypatch):
    monkeypatch.setattr(parser, "PARSER_OPTIONS", {**parser.PARSER_OPTIONS, "maybe_placeholders": True})
    built = _built(monkeypatch)
    assert fresh_parser().parse("{a: I64(1)}", start="attrs") == {"a": 1}
    assert len(built) == 1


def test_without_the_shipped_parser_it_is_built(fresh_parser, monkeypatch):
    import irlint.read

    monkeypatch.setitem(sys.modules, "irlint.read.standalone_parser", None)  # its import fails
    monkeypatch.delattr(irlint.read, "standalone_parser")
    built = _built(monkeypatch)
    assert fresh_parser().parse("{a: I64(1)}", start="attrs") == {"a": 1}
    assert len(built) == 1


# --- the shipped parser and a built one agree on every piece the reader parses --------------------
_BROKEN = [
    ("call", "PrimFunc_Add(%1, %2"),
    ("call", "PrimFunc_Add(%1, %2))"),
    ("attrs", "{a: (1, 2}"),
    ("types", "(<Tensor[Float32], (2)>) ->"),
    ("param", "%para1_x <Tensor[Float32]>"),
    ("value", "a = = b"),
    ("header", "subgraph @g("),
    ("call", ""),
    ("value", "'unclosed"),
    ("attrs", "{a: b} }"),
    ("value", "(a, [b}, c)"),
    ("types", "(<Tensor[F32]>) -> -> (<T>)"),
]


def _pieces(monkeypatch, grammar_parses) -> list[tuple[str, str]]:
    """Every (text, start) the reader hands Lark while reading every fixture dump."""
    from irlint.runner.discover import discover

    # templates share most parses: each new one's real text is parsed too (and checked against it)
    monkeypatch.setattr(templates, "VERIFY_RECIPES", True)
    files, _ = discover([str(FIXTURES)])
    for f in files:
        read_ir(f.path)
    return list(dict.fromkeys(grammar_parses))


def _outcome(text: str, start: str):
    try:
        return ["value", repr(parser.parse_rule(text, start))]
    except parser.GrammarError as exc:  # what the reader reports of a piece Lark refuses
        return ["error", str(exc), exc.column]


# the shipped parser alone, in a fresh interpreter (no Lark imported, no Lark token or error class known)
_SHIPPED_OUTCOMES = """
import json, sys
from irlint.read import parser

def outcome(text, start):
    try:
        return ["value", repr(parser.parse_rule(text, start))]
    except parser.GrammarError as exc:
        return ["error", str(exc), exc.column]

outcomes = [outcome(text, start) for text, start in json.load(sys.stdin)]
assert "lark" not in sys.modules and type(parser._parser()).__module__ == "irlint.read.standalone_parser"
json.dump(outcomes, sys.stdout)
"""


@pytest.mark.slow
def test_shipped_and_built_parsers_agree(monkeypatch, grammar_parses):
    pieces = _pieces(monkeypatch, grammar_parses) + [(t, s) for s, t in _BROKEN]
    assert len(pieces) > 1500  # about 1,900
    proc = subprocess.run(
        [sys.executable, "-c", _SHIPPED_OUTCOMES], input=json.dumps(pieces), capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    shipped = json.loads(proc.stdout)
    built_parser = parser.build_parser(grammar_file.grammar_text())
    monkeypatch.setattr(parser, "_parser", lambda: built_parser)
    built = [json.loads(json.dumps(_outcome(t, s))) for t, s in pieces]
    assert sum(o[0] == "error" for o in built[-len(_BROKEN) :]) >= len(_BROKEN) - 1  # "a = = b" parses
    assert [(p, a, b) for p, a, b in zip(pieces, shipped, built) if a != b] == []
