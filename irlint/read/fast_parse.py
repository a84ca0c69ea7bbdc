"""The grammar's common forms without Lark: the same values, a fifth of the time, and no parser to load.

``grammar/ir.lark`` is small: words, strings, the marks ``:`` ``=`` ``*`` and bracketed groups of
comma-separated items. ``parse`` reads a piece with one regex for its tokens (Lark's terminals, in
the order its lexer tries them: ``->`` first) and a recursive descent over them, and builds the values
with the same callbacks the LALR parser calls (``tree_values.ToValues``), so a piece it reads gives
the value Lark's parse gives. It returns None, and the piece goes to Lark, whenever it is not sure:
a text the lexer or the grammar would refuse (Lark's error then says where), and the rare forms in
which a mark would outlive its item (``a: b: c``, a mark among a call's top-level terms).
``tests/test_fast_parse.py`` compares both parsers on every piece of the corpus.
"""

from __future__ import annotations

import re
from typing import Any

from .tree_values import Angle, Brace, Brack, Mark, Paren, ToValues, juxtapose, plain, word_value

# Lark's terminals (``standalone_parser``'s MEMO): ARROW, STRING, WORD, then single characters; the
# ignored blanks before each. Any other character (a newline, an unclosed quote) matches nothing.
_TOKEN = re.compile(
    r"[ \t]*(?:(->)|"
    r"""((?:"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'))|"""
    r"""([^\s,()\[\]{}<>:=*"']+)|"""
    r"([(\[{<])|([)\]}>])|(,)|([:=*]))"
)
_ARROW, _STRING, _WORD, _OPEN, _CLOSE, _COMMA, _MARK = range(1, 8)
_GROUPS = {"(": (")", Paren), "[": ("]", Brack), "{": ("}", Brace), "<": (">", Angle)}
_MARKS = {":": Mark.COLON, "=": Mark.EQUAL, "*": Mark.STAR}
_ITEM = ToValues().item


class _Refused(Exception):
    """The piece goes to Lark."""


def _tokens(text: str) -> list[tuple[int, Any]]:
    out: list[tuple[int, Any]] = []
    end = 0
    for m in _TOKEN.finditer(text):
        if m.start() != end:
            raise _Refused
        end = m.end()
        kind = m.lastindex or 0
        value = m.group(kind)
        if kind == _WORD:
            out.append((kind, word_value(value)))
        elif kind == _STRING:
            out.append((kind, value[1:-1]))
        elif kind == _MARK:
            out.append((kind, _MARKS[value]))
        else:
            out.append((kind, value))
    if end != len(text) and text[end:].strip(" \t"):
        raise _Refused
    return out


class _Descent:
    """One piece's tokens read into values; ``i`` is the next token."""

    __slots__ = ("toks", "i", "n")

    def __init__(self, toks: list[tuple[int, Any]]) -> None:
        self.toks, self.i, self.n = toks, 0, len(toks)

    def terms(self) -> list:
        """``term*`` up to a comma, a closing bracket, an arrow or the end."""
        toks, out = self.toks, []
        while self.i < self.n:
            kind, value = toks[self.i]
            if kind == _WORD or kind == _STRING or kind == _MARK:
                out.append(value)
                self.i += 1
            elif kind == _OPEN:
                out.append(self.group())
            else:
                break
        return out

    def group(self) -> Any:
        toks = self.toks
        close, cls = _GROUPS[toks[self.i][1]]
        self.i += 1
        items: list = []
        first = True
        while True:
            if self.i >= self.n:
                raise _Refused  # the piece ends inside the group
            kind, value = toks[self.i]
            if kind == _CLOSE:
                if value != close:
                    raise _Refused
                self.i += 1
                return cls(tuple(items))
            if kind == _COMMA:
                if first:
                    raise _Refused  # "(," : the first item is not optional
                self.i += 1
                continue
            terms = self.terms()
            if not terms:
                raise _Refused
            items.append(_item(terms))
            first = False
            if self.i < self.n and toks[self.i][0] == _COMMA:
                self.i += 1
            elif self.i < self.n and toks[self.i][0] != _CLOSE:
                raise _Refused


def _item(terms: list) -> Any:
    """The ``item`` callback, unless a mark would be kept in its value."""
    if len(terms) > 1:
        marks = [i for i, t in enumerate(terms) if type(t) is Mark]
        if marks:
            colon = next((i for i in marks if i > 0 and terms[i] is Mark.COLON), -1)
            if colon > 0:
                if marks[-1] > colon:
                    raise _Refused  # "a: b: c": the value would hold the mark
            elif len(terms) >= 3 and terms[1] is Mark.EQUAL and marks[-1] > 1:
                raise _Refused
    return _ITEM(terms)


def parse(text: str, start: str) -> Any:
    """The value of ``text`` read from ``start`` as Lark's parser gives it, or None (then ask Lark)."""
    try:
        toks = _tokens(text)
        if not toks:
            return None
        d = _Descent(toks)
        if start == "call" or start == "value":
            terms = d.terms()
            if d.i != d.n or not terms or any(type(t) is Mark for t in terms):
                return None
            return terms if start == "call" else juxtapose(terms)
        if start == "types":
            if toks[0] != (_OPEN, "("):
                return None
            ins = d.group()
            if d.i == d.n:
                return [ins]
            if toks[d.i][0] != _ARROW or d.i + 1 >= d.n or toks[d.i + 1] != (_OPEN, "("):
                return None
            d.i += 1
            outs = d.group()
            return [ins, outs] if d.i == d.n else None
        if start == "attrs":
            if toks[0] != (_OPEN, "{"):
                return None
            block = d.group()
            return plain(block) if d.i == d.n else None
        if start == "param":
            if toks[0][0] != _WORD or d.n < 3 or toks[1] != (_MARK, Mark.COLON):
                return None
            d.i = 2
            terms = d.terms()
            return [toks[0][1], *terms] if terms and d.i == d.n else None
        if start == "header":
            if toks[0][0] != _WORD or toks[-1] != (_OPEN, "{"):
                return None
            d.i, d.n = 1, d.n - 1
            terms = d.terms()
            return [toks[0][1], *terms] if terms and d.i == d.n else None
    except (_Refused, RecursionError):
        return None
    return None
