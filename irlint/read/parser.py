"""Loading the parser: the standalone LALR parser shipped with irlint (or, for an edited grammar, one
built by the installed Lark), and ``parse_rule``, which parses one piece of a record: with
``irlint.read.fast_parse`` (the same values, no parser to load), with Lark when it refuses the piece."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from . import fast_parse, tree_values
from .grammar_file import grammar_text
from .tree_values import ToValues, know


class GrammarError(ValueError):
    """A piece of a record the grammar does not accept; ``column`` is 1-based within the piece."""

    def __init__(self, message: str, column: int | None = None):
        super().__init__(message)
        self.column = column


# How the parser is built from the grammar; the shipped parser (``standalone_parser``) records them.
PARSER_OPTIONS = {
    "parser": "lalr",
    "lexer": "basic",
    "start": ["call", "attrs", "types", "param", "header", "value"],
    "maybe_placeholders": False,
}


@lru_cache(maxsize=1)
def _parser() -> Any:
    grammar = grammar_text()
    return _load_shipped(grammar) or build_parser(grammar)


def build_parser(grammar: str) -> Any:
    """The LALR parser made from the grammar by the installed Lark (building it and importing Lark are
    a share of a start: the shipped parser spares a lint both)."""
    import lark
    from lark.exceptions import LarkError

    know(lark.Token, LarkError)
    return lark.Lark(grammar, transformer=ToValues(), **PARSER_OPTIONS)


def _load_shipped(grammar: str) -> Any:
    """The standalone parser shipped with irlint (``scripts/standalone_parser.py`` writes it), or None
    when it was made from another grammar or other options (an edited checkout)."""
    try:
        from . import standalone_parser as shipped
    except ImportError:
        return None
    if shipped.GRAMMAR != grammar or shipped.OPTIONS != PARSER_OPTIONS:
        return None
    know(shipped.Token, shipped.LarkError)
    return shipped.Lark_StandAlone(transformer=ToValues())


# Deeper nesting than any dump prints (real ones stay under 10) is refused before Lark: the
# values built from it would be walked recursively (templates, refills, hashes, repr).
MAX_NESTING = 100
_BRACKET = re.compile(r"""[(\[{<]|[)\]}>]|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'""")


_BRACKET_ONLY = re.compile(r"[(\[{<]|[)\]}>]")


def nesting(text: str) -> int:
    """How deep brackets nest in ``text`` (outside string literals; ``->`` closes nothing)."""
    depth = deepest = 0
    # with escaped quotes a string scan could pass the next quote, from every quote (quadratic):
    # then brackets in strings count too
    for m in (_BRACKET_ONLY if "\\" in text else _BRACKET).finditer(text):
        c = m.group()
        if c in "([{<":
            depth += 1
            if depth > deepest:
                deepest = depth
        elif c in ")]}>" and depth and not (c == ">" and m.start() and text[m.start() - 1] == "-"):
            depth -= 1
    return deepest


def parse_rule(text: str, start: str) -> Any:
    # only a text with that many opening brackets can nest that deep: counted in C
    if (
        text.count("(") + text.count("[") + text.count("{") + text.count("<") > MAX_NESTING
        and nesting(text) > MAX_NESTING
    ):
        raise GrammarError(f"brackets nested deeper than {MAX_NESTING}")
    value = fast_parse.parse(text, start)  # the common forms, without loading Lark
    if value is not None:
        return value
    try:
        return _parser().parse(text, start=start)
    except tree_values._PARSE_ERRORS as exc:
        column = getattr(exc, "column", None)
        raise GrammarError(_describe(exc, text), column if isinstance(column, int) else None) from None
    except RecursionError:
        raise GrammarError("nesting too deep") from None


def _describe(exc: Exception, text: str) -> str:
    token = getattr(exc, "token", None)
    if token is not None and getattr(token, "type", "") == "$END":
        return "unexpected end of record (unbalanced brackets?)"
    column = getattr(exc, "column", None)
    if isinstance(column, int) and column > 0:
        near = text[max(0, column - 1) : column + 19]
        return f"unexpected text at column {column}: {near!r}"
    return type(exc).__name__
