"""Lark's trees into Python values: the callbacks the LALR parser calls inline (``ToValues``) and the
bracketed groups they build, which juxtaposition turns into tuples, lists, dicts and ``Call`` values."""

from __future__ import annotations

import re
from typing import Any

from .values import Call, FreeVar, GraphRef, Ref

_NUMBER = re.compile(r"[-+]?(\d+\.?\d*(e[-+]?\d+)?|\.\d+(e[-+]?\d+)?|inf|nan)\Z", re.I)
_INT_SCALARS = {"I8", "I16", "I32", "I64", "U8", "U16", "U32", "U64"}
_FLOAT_SCALARS = {"F16", "F32", "F64", "BF16"}


def is_plain_name(text: str) -> bool:
    """A name the grammar reads as one word and keeps as the same string (not None, a number, a
    node or graph name): a callee or element type a shared parse may stand in for."""
    return text.isidentifier() and text != "None" and text.lower() not in ("inf", "nan")


def word_value(text: str) -> Any:
    first = text[0]
    if first == "%":
        return Ref(text)
    if first == "@":
        return GraphRef(text)
    if text == "None":
        return None
    if _NUMBER.match(text):
        try:
            return int(text)
        except ValueError:
            return float(text)
    return text


class Group(tuple):
    """A bracketed group before juxtaposition decides what it means."""

    __slots__ = ()
    bracket = "("


class Paren(Group):
    __slots__ = ()
    bracket = "("


class Brack(Group):
    __slots__ = ()
    bracket = "["


class Brace(Group):
    __slots__ = ()
    bracket = "{"


class Angle(Group):
    __slots__ = ()
    bracket = "<"


class _KeyValue(tuple):
    """``key: value`` inside a group (attribute dictionaries, ``NameSpace[Entry: 'x']``)."""

    __slots__ = ()


class _Keyword(tuple):
    """``key=value`` inside a group (``Tensor(shape=[..])``, ``ref_key=...``)."""

    __slots__ = ()


def plain(group: Group) -> Any:
    """A group standing alone: ``(..)`` is a tuple, ``[..]`` a list, ``{k: v}`` a dict."""
    items = list(group)
    if isinstance(group, Brace):
        if items and all(isinstance(i, _KeyValue) for i in items):
            return dict(items)
        return [unkey(i) for i in items]
    if isinstance(group, Brack):
        return [unkey(i) for i in items]
    if isinstance(group, Angle):
        return Call(
            "",
            tuple(unkey(i) for i in items if not isinstance(i, _Keyword)),
            tuple((k, v) for k, v in (i for i in items if isinstance(i, _Keyword))),
            "<",
        )
    return tuple(unkey(i) for i in items)


def unkey(item: Any) -> Any:
    if isinstance(item, _KeyValue):
        return {item[0]: item[1]}
    if isinstance(item, _Keyword):
        return f"{item[0]}={source(item[1])}"  # as text: a repr would hide a template's blanks
    if isinstance(item, Group):
        return plain(item)
    return item


def apply(head: Any, group: Group) -> Any:
    """Juxtaposition: ``I64(1)``, ``Tensor[Float32]``, ``[const vector]{1, 1}``, ``$(..)(..)``."""
    if isinstance(head, list) and isinstance(group, Brace):
        # "[const vector]{1, 1}": the bracket is a label, the braces hold the values
        return [unkey(i) for i in group]
    if head == "$" and len(group) == 1 and isinstance(group[0], _KeyValue):
        return FreeVar(str(group[0][0]), str(group[0][1]))
    args = tuple(unkey(i) for i in group if not isinstance(i, _Keyword))
    kwargs = tuple((i[0], i[1]) for i in group if isinstance(i, _Keyword))
    if isinstance(head, str) and group.bracket == "(" and len(args) == 1 and not kwargs:
        if head == "Bool" and args[0] in (0, 1):
            return bool(args[0])
        if head in _INT_SCALARS and isinstance(args[0], int):
            return args[0]
        if head in _FLOAT_SCALARS and isinstance(args[0], (int, float)):
            return float(args[0])
    return Call(head, args, kwargs, group.bracket)


def juxtapose(terms: list) -> Any:
    if len(terms) == 1:
        term = terms[0]
        return plain(term) if isinstance(term, Group) else term
    acc = terms[0]
    if isinstance(acc, Group):
        acc = plain(acc)
    words: list = []
    for term in terms[1:]:
        if isinstance(term, Group):
            if words:
                acc = " ".join(str(w) for w in [acc, *words])
                words = []
            acc = apply(acc, term)
        else:
            words.append(term)
    if words:
        # bare juxtaposed words: "const vector", numpy rows "1.0 2.0"
        return " ".join(str(w) for w in [acc, *words])
    return acc


_CLOSE = {"(": ")", "[": "]", "{": "}", "<": ">"}


def source(value: Any) -> str:
    """A parsed value written back as dump text (``plain`` of a group, ``Call``, a token)."""
    if isinstance(value, Group):
        value = plain(value)
    if isinstance(value, Call):
        items = [source(a) for a in value.args] + [f"{k}={source(v)}" for k, v in value.kwargs]
        return f"{source(value.name)}{value.bracket}{', '.join(items)}{_CLOSE[value.bracket]}"
    if isinstance(value, tuple):
        return f"({', '.join(source(v) for v in value)})"
    if isinstance(value, list):
        return f"[{', '.join(source(v) for v in value)}]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{source(k)}: {source(v)}" for k, v in value.items()) + "}"
    return str(value)


class Mark(str):
    """A mark of the grammar (``:``, ``=``, ``*``) as ``irlint.read.fast_parse`` reads it: what Lark's
    ``Token`` of that terminal is to the callbacks (a string with its terminal's name in ``type``)."""

    type = ""
    COLON: Mark
    EQUAL: Mark
    STAR: Mark


def _mark(text: str, terminal: str) -> Mark:
    mark = Mark(text)
    mark.type = terminal
    return mark


Mark.COLON, Mark.EQUAL, Mark.STAR = _mark(":", "COLON"), _mark("=", "EQUAL"), _mark("*", "STAR")

# The token and error classes of the parsers made so far: the shipped standalone parser
# (``standalone_parser``) and the installed Lark's (an edited checkout) each have their own; the
# marks of the fast parser.
_TOKENS: tuple[type[Any], ...] = (Mark,)
_PARSE_ERRORS: tuple[type[Exception], ...] = ()


def know(token: type, error: type[Exception]) -> None:
    global _TOKENS, _PARSE_ERRORS
    if token not in _TOKENS:
        _TOKENS = (*_TOKENS, token)
    if error not in _PARSE_ERRORS:
        _PARSE_ERRORS = (*_PARSE_ERRORS, error)


class ToValues:
    """Called inline by the LALR parser, looked up by rule and terminal name (no Transformer base:
    the standalone parser and Lark's each have their own)."""

    def WORD(self, token: str) -> Any:  # noqa: N802 - Lark names callbacks after terminals
        return word_value(str(token))

    def STRING(self, token: str) -> str:  # noqa: N802
        return str(token)[1:-1]

    def paren(self, items):
        return Paren(items[0] if items else ())

    def brack(self, items):
        return Brack(items[0] if items else ())

    def brace(self, items):
        return Brace(items[0] if items else ())

    def angle(self, items):
        return Angle(items[0] if items else ())

    def seq(self, items):
        return tuple(items)  # a None item is the value None: missing items never reach here

    def item(self, terms):
        for i, t in enumerate(terms):
            if isinstance(t, _TOKENS) and t.type == "COLON" and i > 0:
                key = " ".join(str(x) for x in terms[:i])
                rest = terms[i + 1 :]
                return _KeyValue((key, juxtapose(rest) if rest else None))
        if len(terms) >= 3 and isinstance(terms[1], _TOKENS) and terms[1].type == "EQUAL":
            return _Keyword((str(terms[0]), juxtapose(terms[2:])))
        return juxtapose([t for t in terms if not isinstance(t, _TOKENS)] or [str(terms[0])])

    def call(self, terms):
        return list(terms)

    def attrs(self, items):
        return plain(items[0])

    def types(self, items):
        return [t for t in items if not isinstance(t, _TOKENS)]

    def param(self, items):
        return list(items)

    def header(self, items):
        return list(items)

    def value(self, terms):
        return juxtapose([t for t in terms if not isinstance(t, _TOKENS)])
