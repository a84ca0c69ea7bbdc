"""Lark glue: parses with the LALR parser of ``grammar/ir.lark`` and turns its trees into Python values.

The reader (``irlint.read.reader``) calls ``parse_call``, ``parse_attrs``, ``parse_types``,
``parse_param`` and ``parse_header`` on pieces of a record. Each is memoised on a template of
its text in which node ids and string literals are blanked out, because real dumps repeat the
same shapes thousands of times (one decoder layer per layer, one attribute set per op kind).
"""
from __future__ import annotations

import re
from functools import lru_cache, partial
from operator import itemgetter
from collections.abc import Callable
from typing import Any

from .grammar_file import grammar_text
from .values import Call, FreeVar, GraphRef, Ref, TensorType

__all__ = [
    "GrammarError", "grammar_text", "parse_call", "parse_attrs", "parse_types", "parse_param",
    "parse_header", "parse_value",
]


class GrammarError(ValueError):
    """A piece of a record the grammar does not accept; ``column`` is 1-based within the piece."""

    def __init__(self, message: str, column: int | None = None):
        super().__init__(message)
        self.column = column


_NUMBER = re.compile(r"[-+]?(\d+\.?\d*(e[-+]?\d+)?|\.\d+(e[-+]?\d+)?|inf|nan)\Z", re.I)
_INT_SCALARS = {"I8", "I16", "I32", "I64", "U8", "U16", "U32", "U64"}
_FLOAT_SCALARS = {"F16", "F32", "F64", "BF16"}


def is_plain_name(text: str) -> bool:
    """A name the grammar reads as one word and keeps as the same string (not None, a number, a
    node or graph name): a callee or element type a shared parse may stand in for."""
    return text.isidentifier() and text != "None" and text.lower() not in ("inf", "nan")


def _word(text: str) -> Any:
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


class _Group(tuple):
    """A bracketed group before juxtaposition decides what it means."""

    __slots__ = ()
    bracket = "("


class _Paren(_Group):
    __slots__ = ()
    bracket = "("


class _Brack(_Group):
    __slots__ = ()
    bracket = "["


class _Brace(_Group):
    __slots__ = ()
    bracket = "{"


class _Angle(_Group):
    __slots__ = ()
    bracket = "<"


class _KeyValue(tuple):
    """``key: value`` inside a group (attribute dictionaries, ``NameSpace[Entry: 'x']``)."""

    __slots__ = ()


class _Keyword(tuple):
    """``key=value`` inside a group (``Tensor(shape=[..])``, ``ref_key=...``)."""

    __slots__ = ()


def _plain(group: _Group) -> Any:
    """A group standing alone: ``(..)`` is a tuple, ``[..]`` a list, ``{k: v}`` a dict."""
    items = list(group)
    if isinstance(group, _Brace):
        if items and all(isinstance(i, _KeyValue) for i in items):
            return dict(items)
        return [_unkey(i) for i in items]
    if isinstance(group, _Brack):
        return [_unkey(i) for i in items]
    if isinstance(group, _Angle):
        return Call("", tuple(_unkey(i) for i in items if not isinstance(i, _Keyword)),
                    tuple((k, v) for k, v in (i for i in items if isinstance(i, _Keyword))), "<")
    return tuple(_unkey(i) for i in items)


def _unkey(item: Any) -> Any:
    if isinstance(item, _KeyValue):
        return {item[0]: item[1]}
    if isinstance(item, _Keyword):
        return f"{item[0]}={_source(item[1])}"   # as text: a repr would hide a template's blanks
    if isinstance(item, _Group):
        return _plain(item)
    return item


def _apply(head: Any, group: _Group) -> Any:
    """Juxtaposition: ``I64(1)``, ``Tensor[Float32]``, ``[const vector]{1, 1}``, ``$(..)(..)``."""
    if isinstance(head, list) and isinstance(group, _Brace):
        # "[const vector]{1, 1}": the bracket is a label, the braces hold the values
        return [_unkey(i) for i in group]
    if head == "$" and len(group) == 1 and isinstance(group[0], _KeyValue):
        return FreeVar(str(group[0][0]), str(group[0][1]))
    args = tuple(_unkey(i) for i in group if not isinstance(i, _Keyword))
    kwargs = tuple((i[0], i[1]) for i in group if isinstance(i, _Keyword))
    if isinstance(head, str) and group.bracket == "(" and len(args) == 1 and not kwargs:
        if head == "Bool" and args[0] in (0, 1):
            return bool(args[0])
        if head in _INT_SCALARS and isinstance(args[0], int):
            return args[0]
        if head in _FLOAT_SCALARS and isinstance(args[0], (int, float)):
            return float(args[0])
    return Call(head, args, kwargs, group.bracket)


def _juxtapose(terms: list) -> Any:
    if len(terms) == 1:
        term = terms[0]
        return _plain(term) if isinstance(term, _Group) else term
    acc = terms[0]
    if isinstance(acc, _Group):
        acc = _plain(acc)
    words: list = []
    for term in terms[1:]:
        if isinstance(term, _Group):
            if words:
                acc = " ".join(str(w) for w in [acc, *words])
                words = []
            acc = _apply(acc, term)
        else:
            words.append(term)
    if words:
        # bare juxtaposed words: "const vector", numpy rows "1.0 2.0"
        return " ".join(str(w) for w in [acc, *words])
    return acc


# The token and error classes of the parsers made so far: the shipped standalone parser
# (``standalone_parser``) and the installed Lark's (an edited checkout) each have their own.
_TOKENS: tuple[type, ...] = ()
_PARSE_ERRORS: tuple[type[Exception], ...] = ()


def _know(token: type, error: type[Exception]) -> None:
    global _TOKENS, _PARSE_ERRORS
    if token not in _TOKENS:
        _TOKENS = (*_TOKENS, token)
    if error not in _PARSE_ERRORS:
        _PARSE_ERRORS = (*_PARSE_ERRORS, error)


class _ToValues:
    """Called inline by the LALR parser, looked up by rule and terminal name (no Transformer base:
    the standalone parser and Lark's each have their own)."""

    def WORD(self, token: str) -> Any:  # noqa: N802 - Lark names callbacks after terminals
        return _word(str(token))

    def STRING(self, token: str) -> str:  # noqa: N802
        return str(token)[1:-1]

    def paren(self, items):
        return _Paren(items[0] if items else ())

    def brack(self, items):
        return _Brack(items[0] if items else ())

    def brace(self, items):
        return _Brace(items[0] if items else ())

    def angle(self, items):
        return _Angle(items[0] if items else ())

    def seq(self, items):
        return tuple(items)  # a None item is the value None: missing items never reach here

    def item(self, terms):
        for i, t in enumerate(terms):
            if isinstance(t, _TOKENS) and t.type == "COLON" and i > 0:
                key = " ".join(str(x) for x in terms[:i])
                rest = terms[i + 1:]
                return _KeyValue((key, _juxtapose(rest) if rest else None))
        if len(terms) >= 3 and isinstance(terms[1], _TOKENS) and terms[1].type == "EQUAL":
            return _Keyword((str(terms[0]), _juxtapose(terms[2:])))
        return _juxtapose([t for t in terms if not isinstance(t, _TOKENS)] or [str(terms[0])])

    def call(self, terms):
        return list(terms)

    def attrs(self, items):
        return _plain(items[0])

    def types(self, items):
        return [t for t in items if not isinstance(t, _TOKENS)]

    def param(self, items):
        return list(items)

    def header(self, items):
        return list(items)

    def value(self, terms):
        return _juxtapose([t for t in terms if not isinstance(t, _TOKENS)])


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

    _know(lark.Token, LarkError)
    return lark.Lark(grammar, transformer=_ToValues(), **PARSER_OPTIONS)


def _load_shipped(grammar: str) -> Any:
    """The standalone parser shipped with irlint (``scripts/standalone_parser.py`` writes it), or None
    when it was made from another grammar or other options (an edited checkout)."""
    try:
        from . import standalone_parser as shipped
    except ImportError:
        return None
    if shipped.GRAMMAR != grammar or shipped.OPTIONS != PARSER_OPTIONS:
        return None
    _know(shipped.Token, shipped.LarkError)
    return shipped.Lark_StandAlone(transformer=_ToValues())


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


def _parse(text: str, start: str) -> Any:
    # only a text with that many opening brackets can nest that deep: counted in C
    if (text.count("(") + text.count("[") + text.count("{") + text.count("<") > MAX_NESTING
            and nesting(text) > MAX_NESTING):
        raise GrammarError(f"brackets nested deeper than {MAX_NESTING}")
    try:
        return _parser().parse(text, start=start)
    except _PARSE_ERRORS as exc:
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
        near = text[max(0, column - 1): column + 19]
        return f"unexpected text at column {column}: {near!r}"
    return type(exc).__name__


# Templates: node ids, parameter names, string literals and ``key=name`` values (``ref_key=``)
# vary between otherwise identical pieces; the parse of the rest is shared. Each blank is
# numbered, so that filling it back does not depend on the order the transformer builds values.
_W = r"[^\s,()\[\]{}<>:=*\"']"      # a character of a WORD (grammar/ir.lark)
# Every alternative starts with a literal character, so the regex engine skips to the next
# candidate in C (faster than lookbehinds first). A ``=name`` blank keeps its "=".
_VOLATILE = re.compile(
    rf'%(?<!{_W}%){_W}+'                                       # %12, %para3_x: Ref words
    r'|"(?:[^"\\\n]|\\.)*"'                                # "strings"
    rf'|=(?!(?:None|(?i:inf|nan))(?!{_W}))[^\s,()\[\]{{}}<>:=*"\'%@\d+\-.]{_W}*(?=\s*[,)\]}}>]|\s*\Z)'  # =name
    rf'|I(?<!{_W}I)(?:8|16|32|64)\(-?\d+\)|U(?<!{_W}U)(?:8|16|32|64)\(-?\d+\)'  # I64(981): ids differ per layer
    # $(@g:para3_x): a free variable, blanked as a graph name and a name (a word that stays a string)
    rf'|\$(?<!{_W}\$)\(@{_W}+:(?!(?:None|(?i:inf|nan))(?!{_W}))[^\s,()\[\]{{}}<>:=*"\'%@\d+\-.]{_W}*\)'
    rf'|@(?<!{_W}@){_W}+'                                      # @g, @@g: graph names
)
_VOLATILE_SPLIT = re.compile(f"({_VOLATILE.pattern})")
# A string scan can pass an escaped quote: with an unclosed string, _VOLATILE would rescan the rest
# of the text from every quote (quadratic). No dump prints one; such a text is parsed as it is.
_ESCAPED_QUOTE = '\\"'
# A piece this long (a MakeTuple of a million operands) is parsed as it is: its template, fills and
# cached parse would hold several times its size, for a shape that never repeats.
MAX_TEMPLATE_CHARS = 64 * 1024

_REF_SLOT = "%\x00"
_STR_SLOT = "\x00"
_WORD_SLOT = "\x01"
_INT_SLOT = "\x02"
_GRAPH_SLOT = "@\x03"
_NAME_SLOT = "\x05"   # the name of a free variable, in $(@\x03N:\x05N): both parts of one blank


def _template(text: str) -> tuple[str, list[str]]:
    fills: list[str] = []

    def blank(m: re.Match) -> str:
        s = m.group(0)
        n = len(fills)
        fills.append(s)
        if s[0] == "%":
            return f"{_REF_SLOT}{n}"
        if s[0] == '"':
            return f'"{_STR_SLOT}{n}"'
        if s[0] == "@":
            return f"{_GRAPH_SLOT}{n}"
        if s[0] == "$":
            return f"$({_GRAPH_SLOT}{n}:{_NAME_SLOT}{n})"
        if s[-1] == ")":
            return f"{_INT_SLOT}{n}"
        return f"={_WORD_SLOT}{n}"

    return _VOLATILE.sub(blank, text), fills


_SLOT = re.compile("%\x00(\\d+)|\x00(\\d+)|\x01(\\d+)|\x02(\\d+)|@\x03(\\d+)|\x05(\\d+)")


def _has_blank(text: str) -> bool:
    return "\x00" in text or "\x01" in text or "\x02" in text or "\x03" in text or "\x05" in text


def _fill_text(text: str, fills: list[str]) -> str:
    """A string the transformer built around blanks (a joined key, ``ref_key=\\x010``)."""

    def fill(m: re.Match) -> str:
        if m.group(1) is not None:
            return fills[int(m.group(1))]
        if m.group(2) is not None:
            return fills[int(m.group(2))][1:-1]
        if m.group(3) is not None:
            return fills[int(m.group(3))][1:]
        if m.group(4) is not None:
            return str(_int_value(fills[int(m.group(4))]))
        if m.group(5) is not None:
            blank = fills[int(m.group(5))]
            return blank[2:blank.index(":")] if blank[0] == "$" else blank
        blank = fills[int(m.group(6))]
        return blank[blank.index(":") + 1:-1]

    return _SLOT.sub(fill, text)


# A refill plan mirrors a parsed template: None where a part holds no blank and nothing mutable
# (that part is shared, as immutable values may be), otherwise how to rebuild it.
_REF_PLAN, _TEXT_PLAN, _GRAPH_PLAN = "ref", "text", "graph"


def _int_value(scalar: str) -> int:
    """``I64(981)`` -> 981."""
    return int(scalar[scalar.index("(") + 1:-1])


def _plan(value: Any) -> Any:
    kind = type(value)
    if kind is Ref:
        return _REF_PLAN if "\x00" in value else None
    if kind is GraphRef:
        return _GRAPH_PLAN if "\x03" in value else None
    if kind is str:
        if value[:1] == _INT_SLOT and value[1:].isdigit():
            return ("int", int(value[1:]))   # I64(<blank>): the number itself
        return _TEXT_PLAN if _has_blank(value) else None
    if isinstance(value, list):
        return ("list", [_plan(v) for v in value])
    if isinstance(value, dict):
        return ("dict", [(_plan(k), _plan(v)) for k, v in value.items()])
    if isinstance(value, tuple):
        parts = [_plan(v) for v in value]
        return ("tuple", parts) if any(p is not None for p in parts) else None
    if isinstance(value, Call):
        parts = (_plan(value.name), _plan(value.args), [_plan(v) for _, v in value.kwargs],
                 [_plan(k) for k, _ in value.kwargs])
        if parts[0] is None and parts[1] is None and not any(parts[2]) and not any(parts[3]):
            return None
        return ("call", parts)
    if kind is TensorType:
        parts = (_plan(value.kind), _plan(value.dtype), _plan(value.raw))
        return ("type", parts) if any(p is not None for p in parts) else None
    if kind is FreeVar:
        parts = (_plan(value.graph), _plan(value.name))
        return ("freevar", parts) if any(p is not None for p in parts) else None
    return None


def _refill(value: Any, plan: Any, fills: list[str]) -> Any:
    if plan is None:
        return value
    if plan is _REF_PLAN:
        return Ref(_fill_text(value, fills))
    if plan is _TEXT_PLAN:
        return _fill_text(value, fills)
    if plan is _GRAPH_PLAN:
        return GraphRef(_fill_text(value, fills))
    tag, parts = plan
    if tag == "int":
        return _int_value(fills[parts])
    if tag == "tuple":
        # keeps the group classes (_Paren, _KeyValue ...) that parse_call still needs
        return value.__class__([v if p is None else _refill(v, p, fills) for v, p in zip(value, parts)])
    if tag == "list":
        return [v if p is None else _refill(v, p, fills) for v, p in zip(value, parts)]
    if tag == "dict":
        return {_refill(k, kp, fills): _refill(v, vp, fills) for (k, v), (kp, vp) in zip(value.items(), parts)}
    if tag == "type":
        return TensorType(_refill(value.kind, parts[0], fills), _refill(value.dtype, parts[1], fills), value.shape,
                          _refill(value.raw, parts[2], fills))
    if tag == "freevar":
        return FreeVar(_refill(value.graph, parts[0], fills), _refill(value.name, parts[1], fills))
    name, args, values, keys = parts
    return Call(_refill(value.name, name, fills), _refill(value.args, args, fills),
                tuple((_refill(k, kp, fills), _refill(v, vp, fills))
                      for (k, v), vp, kp in zip(value.kwargs, values, keys)), value.bracket)


@lru_cache(maxsize=65536)
def _parse_marked(text: str, start: str) -> Any:
    # the pieces of a record's template (memo_by_template parses one per new record shape): the
    # same call or attribute block recurs in many record shapes; values are shared, never mutated
    return _parse(text, start)


def _parse_blanked(text: str, start: str) -> Any:
    """A piece of a record's template: its blanks are numbered from 0 for the parse, so that the
    same attribute block or type at another place of another record shape (``{unique_id: <blank 3>}``,
    ``{unique_id: <blank 5>}``) is parsed once, then given its own numbers back."""
    renumbered, numbers = _renumbered(text)
    value = _parse_piece(renumbered, start)
    if renumbered == text:
        return value
    return _relabel(value, numbers)


def _renumbered(text: str) -> tuple[str, list[str]]:
    """``text`` with its blanks numbered from 0, and the numbers they had."""
    numbers: list[str] = []

    def local(m: re.Match) -> str:
        digits = m.group(m.lastindex)
        numbers.append(digits)
        return f"{m.group()[:-len(digits)]}{len(numbers) - 1}"

    return _SLOT.sub(local, text), numbers


def _relabel(value: Any, numbers: list[str]) -> Any:
    """``value`` with the blank numbered i in its strings numbered ``numbers[i]``."""
    if isinstance(value, str):
        if _has_blank(value):
            new = _SLOT.sub(lambda m: f"{m.group()[:-len(m.group(m.lastindex))]}{numbers[int(m.group(m.lastindex))]}",
                            value)
            return new if type(value) is str else type(value)(new)
        return value
    kind = type(value)
    if kind is list:
        return [_relabel(v, numbers) for v in value]
    if kind is dict:
        return {_relabel(k, numbers): _relabel(v, numbers) for k, v in value.items()}
    if isinstance(value, tuple):
        return kind([_relabel(v, numbers) for v in value])
    if kind is Call:
        return Call(_relabel(value.name, numbers), _relabel(value.args, numbers),
                    _relabel(value.kwargs, numbers), value.bracket)
    if kind is TensorType:
        return TensorType(_relabel(value.kind, numbers), _relabel(value.dtype, numbers), value.shape,
                          _relabel(value.raw, numbers))
    if kind is FreeVar:
        return FreeVar(_relabel(value.graph, numbers), _relabel(value.name, numbers))
    return value


def _parse_piece(text: str, start: str) -> Any:
    """``_parse``, shared: a call whose callee is a plain name (``PrimFunc_Mul(%0, %1)``) is
    parsed with a stand-in name, as the calls of every primitive with the same arguments are,
    and its arguments one by one: the same argument recurs in calls of other arguments."""
    if start == "call":
        open_at = text.find("(")
        name = text[:open_at]
        if open_at > 0 and is_plain_name(name):
            try:
                items = _call_items(text, open_at)
                if items is None:
                    return [name, *_parse_marked(f"F{text[open_at:]}", start)[1:]]
                return [name, _Paren([_parse_argument(item) for item in items])]
            except GrammarError:
                return _parse(text, start)   # the error, with the columns of the real piece
    return _parse_marked(text, start)


# What decides where a call's arguments end: brackets and commas outside strings.
_ARGUMENT_MARKS = re.compile(r"""[()\[\]{}<>,]|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'""")
_OPENING = frozenset("([{<")
_CLOSING = frozenset(")]}>")


def _call_items(text: str, open_at: int) -> list[str] | None:
    """The arguments of ``name(a, f(b, c), [d])``: ``a``, ``f(b, c)``, ``[d]``; None unless
    ``text[open_at:]`` is one group in parentheses of one or more non-empty arguments, or when
    it holds a backslash (a string scan could pass an escaped quote: quadratic when unclosed)."""
    if "\\" in text:
        return None
    items: list[str] = []
    depth, start = 0, open_at + 1
    for m in _ARGUMENT_MARKS.finditer(text, open_at):
        mark = m.group()
        if mark in _OPENING:
            depth += 1
        elif mark in _CLOSING:
            depth -= 1
            if depth <= 0:
                if depth < 0 or m.end() != len(text) or mark != ")":
                    return None
                items.append(text[start:m.start()].strip(" \t"))
                return items if all(items) else None
        elif mark == "," and depth == 1:
            items.append(text[start:m.start()].strip(" \t"))
            start = m.end()
    return None


def _parse_argument(item: str) -> Any:
    """One argument of a call, parsed alone (as ``F(item)``) with its blanks numbered from 0."""
    renumbered, numbers = _renumbered(item)
    terms = _parse_marked(f"F({renumbered})", "call")
    if len(terms) != 2 or type(terms[1]) is not _Paren or len(terms[1]) != 1:
        raise GrammarError("not one argument")
    value = terms[1][0]
    return value if not numbers else _relabel(value, numbers)


@lru_cache(maxsize=65536)
def _parse_template(template: str, start: str) -> tuple[Any, Any]:
    value = _parse_piece(template, start)
    return value, _plan(value)


def _memo_parse(text: str, start: str) -> Any:
    if len(text) > MAX_TEMPLATE_CHARS:
        return _long_call(text) if start == "call" else _parse(text, start)
    if _has_blank(text) or _ESCAPED_QUOTE in text:
        return _parse_blanked(text, start)  # would be mistaken for blanks, or too slow to blank
    template, fills = _template(text)
    try:
        value, plan = _parse_template(template, start)
    except GrammarError:
        return _parse(text, start)  # the error, with columns and text of the real piece
    if not fills:
        return value
    return _refill(value, plan, fills)


# ``MakeTuple(%1, %2, ...)``: a primitive applied to node references only, the one kind of piece
# that runs to megabytes (a tuple of every gradient); read without the grammar, each reference once.
_REF_WORD = rf"%{_W}+"
_PLAIN_CALL = re.compile(rf"({_W}+)\(({_REF_WORD}(?:, {_REF_WORD})*)\)\Z")


def _long_call(text: str) -> Any:
    m = _PLAIN_CALL.match(text)
    if m is None or type(_word(m.group(1))) is not str:
        return _parse(text, "call")
    refs: dict[str, Ref] = {}
    args = tuple([refs.get(r) or refs.setdefault(r, Ref(r)) for r in m.group(2).split(", ")])
    return [m.group(1), _Paren(args)]


_SLOT_ONLY = re.compile("(%\x00|\x00|\x01|\x02)(\\d+)\\Z")
MAX_BUILDER_SOURCE = 20_000


def _builder(value: Any, plan: Any) -> Callable[[list[str]], Any] | None:
    """The refill of one template as a compiled lambda: a template's values are rebuilt by one
    Python expression (tuple, dict and list displays) instead of a recursive walk of its plan.
    None when the expression would be too large or too deep for the compiler."""
    source = _BuilderSource()
    text = source.expr(value, plan)
    if len(text) > MAX_BUILDER_SOURCE:
        return None
    names = {"c": source.consts, "R": Ref, "G": GraphRef, "T": _fill_text, "I": _int_value, "TT": TensorType, "FV": FreeVar, "C": Call}
    try:
        return eval(f"lambda f: {text}", names)  # noqa: S307 - our own source, built from a parse
    except (SyntaxError, RecursionError, MemoryError):
        return None


def _is_literal(v: Any) -> bool:
    """Whether ``repr(v)`` is Python source that evaluates to an equal value of the same type
    (exact types only: ``Ref`` is a ``str`` too)."""
    kind = type(v)
    if kind is str or kind is bool or kind is int or v is None:
        return True
    return kind is tuple and all(_is_literal(x) for x in v)


class _BuilderSource:
    """Writes the expression of a builder; ``f`` is the list of fills, ``c`` the shared constants.
    (A class rather than nested closures: those would form reference cycles, garbage that every
    full collection after a file has to find.)"""

    def __init__(self) -> None:
        self.consts: list = []

    def const(self, v: Any) -> str:
        if _is_literal(v):
            return repr(v)   # a constant of the compiled code: no lookup when the builder runs
        self.consts.append(v)
        return f"c[{len(self.consts) - 1}]"

    def text(self, v: str, as_ref: bool) -> str:
        m = _SLOT_ONLY.match(v)
        if m and (m.group(1) == "%\x00") == as_ref:
            n = m.group(2)
            if as_ref:
                return f"R(f[{n}])"
            return {"\x00": f"f[{n}][1:-1]", "\x01": f"f[{n}][1:]", "\x02": f"str(I(f[{n}]))"}[m.group(1)]
        return f"R(T({self.const(v)}, f))" if as_ref else f"T({self.const(v)}, f)"

    def expr(self, v: Any, p: Any) -> str:
        if p is None:
            return self.const(v)
        if p is _REF_PLAN:
            return self.text(v, True)
        if p is _TEXT_PLAN:
            return self.text(v, False)
        if p is _GRAPH_PLAN:
            return f"G(T({self.const(str(v))}, f))"
        expr = self.expr
        tag, parts = p
        if tag == "int":
            return f"I(f[{parts}])"
        if tag == "tuple":
            items = "".join(f"{expr(x, q)}, " for x, q in zip(v, parts))
            return f"({items})" if type(v) is tuple else f"{self.const(type(v))}(({items}))"
        if tag == "list":
            return "[" + ", ".join(expr(x, q) for x, q in zip(v, parts)) + "]"
        if tag == "dict":
            return "{" + ", ".join(f"{expr(k, kp)}: {expr(x, xp)}" for (k, x), (kp, xp) in zip(v.items(), parts)) + "}"
        if tag == "type":
            return f"TT({expr(v.kind, parts[0])}, {expr(v.dtype, parts[1])}, {self.const(v.shape)}, {expr(v.raw, parts[2])})"
        if tag == "freevar":
            return f"FV({expr(v.graph, parts[0])}, {expr(v.name, parts[1])})"
        name, args, values, keys = parts
        kwargs = "".join(f"({expr(k, kp)}, {expr(x, xp)}), " for (k, x), xp, kp in zip(v.kwargs, values, keys))
        return f"C({expr(v.name, name)}, {expr(v.args, args)}, ({kwargs}), {self.const(v.bracket)})"


_FIRST = itemgetter(0)
_RECIPES: dict[tuple[str, str, str], Callable[[list[str]], Any] | None] = {}
_NOT_SEEN = object()
MAX_RECIPES = 65536


# Tests set this: every new recipe is then checked against the parse of the pieces of its first
# text, and a mismatch is recorded (and that template is never memoised). A recipe is built from
# the parse of the template, the same way each piece of a record is (``_memo_parse``); checking
# it while reading would parse every new template twice (most of the cost of a first lint).
VERIFY_RECIPES = False
RECIPE_MISMATCHES: list[tuple[str, str]] = []


def memo_by_template(kind: str, text: str, parse: Callable[[str], Any]) -> Any:
    """``parse(text)``, computed once for all texts that differ only in blanks (node ids, strings,
    ``key=name`` values, ``I64(N)``): a whole record, a type line. The first text of a template
    parses the template and compiles its refill (a recipe); texts whose template does not parse
    are parsed as they are."""
    if len(text) > MAX_TEMPLATE_CHARS or _has_blank(text) or _ESCAPED_QUOTE in text:
        return parse(text)  # too long to repeat, would be mistaken for blanks, or too slow to blank
    # the key: the text between the blanks, plus the kind of each blank, told by its first
    # character (% " = I U); all in C, no Python call per blank
    parts = _VOLATILE_SPLIT.split(text)
    fills = parts[1::2]
    key = (kind, "\x01".join(parts[::2]), "".join(map(_FIRST, fills)))
    recipe = _RECIPES.get(key, _NOT_SEEN)
    if recipe is None:
        return parse(text)
    if recipe is not _NOT_SEEN:
        return recipe(fills)
    template, fills = _template(text)
    try:
        shape = parse(template)
        plan = _plan(shape)
    except GrammarError:
        recipe = None
    else:
        # most templates of a small dump occur once: compile the refill when one comes back
        recipe = _Deferred(key, shape, plan) if not VERIFY_RECIPES else _builder(shape, plan)
    if recipe is None:
        value = parse(text)   # a GrammarError here is the real text's, with its columns
    else:
        value = _refill(shape, plan, fills)
        if VERIFY_RECIPES:
            direct = repr(parse(text))
            if direct != repr(value) or direct != repr(recipe(fills)):
                RECIPE_MISMATCHES.append((kind, text))
                recipe, value = None, parse(text)
    if len(_RECIPES) < MAX_RECIPES:
        _RECIPES[key] = recipe
    return value


class _Deferred:
    """The recipe of a template seen once: compiled (in place) when it is used again."""

    __slots__ = ("key", "shape", "plan")

    def __init__(self, key: tuple, shape: Any, plan: Any) -> None:
        self.key, self.shape, self.plan = key, shape, plan

    def __call__(self, fills: list[str]) -> Any:
        # a template too large to compile is refilled by walking its plan
        recipe = _builder(self.shape, self.plan) or partial(_refill, self.shape, self.plan)
        if _RECIPES.get(self.key) is self:
            _RECIPES[self.key] = recipe
        return recipe(fills)


def parse_call(text: str) -> tuple[list, Any]:
    """``PrimFunc_MatMul(%0, %1)`` -> (callee terms, argument tuple)."""
    terms = _memo_parse(text, "call")
    args = terms[-1] if terms else None
    if not isinstance(args, _Group) or args.bracket != "(":
        raise GrammarError("a call needs an argument list in parentheses")
    callee = terms[:-1]
    if not callee:
        raise GrammarError("a call needs a callee")
    try:
        return _callee(callee), tuple(
            _unkey(a) for a in args
        )
    except RecursionError:   # values are walked recursively, as the parse itself is
        raise GrammarError("nesting too deep") from None


def _callee(terms: list) -> Any:
    """The callee of a call: a primitive name, ``call @g``, ``%3``, ``%0[@@g]``, ``$(@g:n)``."""
    if len(terms) == 2 and terms[0] == "call" and isinstance(terms[1], GraphRef):
        return terms[1]
    if len(terms) == 2 and isinstance(terms[1], _Group):
        return _apply(terms[0], terms[1])
    if len(terms) == 1:
        return terms[0]
    if len(terms) >= 4 and _is_colon(terms[1]) and _is_colon(terms[2]) and type(terms[3]) is str:
        # 1.x-2.0 name a primitive with its class: "DoSignaturePrimitive::S-Prim-Sub{prim_type=1}[attrs]",
        # "Primitive::Return{prim_type=1}"; the braces hold the class's type tag
        name = terms[3][7:] if terms[3].startswith("S-Prim-") else terms[3]
        attrs = [t for t in terms[4:] if isinstance(t, _Brack)]
        if len(attrs) + sum(isinstance(t, _Brace) for t in terms[4:]) == len(terms) - 4:
            return _apply(name, attrs[0]) if len(attrs) == 1 else name
    # as text, not repr: a template's blanks inside must stay what they are to be filled back
    return " ".join(_source(t) for t in terms)


def _is_colon(term: Any) -> bool:
    return isinstance(term, _TOKENS) and term.type == "COLON"


_CLOSE = {"(": ")", "[": "]", "{": "}", "<": ">"}


def _source(value: Any) -> str:
    """A parsed value written back as dump text (``_plain`` of a group, ``Call``, a token)."""
    if isinstance(value, _Group):
        value = _plain(value)
    if isinstance(value, Call):
        items = [_source(a) for a in value.args] + [f"{k}={_source(v)}" for k, v in value.kwargs]
        return f"{_source(value.name)}{value.bracket}{', '.join(items)}{_CLOSE[value.bracket]}"
    if isinstance(value, tuple):
        return f"({', '.join(_source(v) for v in value)})"
    if isinstance(value, list):
        return f"[{', '.join(_source(v) for v in value)}]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_source(k)}: {_source(v)}" for k, v in value.items()) + "}"
    return str(value)


def parse_attrs(text: str) -> dict:
    """``{recompute: Bool(1), recompute_id: I64(3)}`` -> ``{"recompute": True, "recompute_id": 3}``."""
    value = _memo_parse(text, "attrs")
    if isinstance(value, dict):
        return value
    if value == []:
        return {}
    raise GrammarError("an attribute block holds key: value pairs")


@lru_cache(maxsize=65536)
def parse_types(text: str) -> tuple[tuple[TensorType, ...], tuple[TensorType, ...] | None]:
    """``(<T1>, <T2>) -> (<T>)`` -> (input types, output types); a Return's ``(<T>)`` has no arrow."""
    parts = _memo_parse(text, "types")
    ins = tuple(_tensor_type(t) for t in parts[0])
    outs = tuple(_tensor_type(t) for t in parts[1]) if len(parts) > 1 else None
    return ins, outs


def parse_param(text: str) -> tuple[str, list]:
    """``%para1_x: <Tensor[Float32], (2, 8)> : [2, 8]`` -> (name, fields after the first colon)."""
    items = _memo_parse(text, "param")
    name, fields = items[0], [t for t in items[1:] if not isinstance(t, _TOKENS)]
    return str(name), [_plain(f) if isinstance(f, _Group) else f for f in fields]


@lru_cache(maxsize=65536)   # the value is immutable; every stage file repeats the subgraph headers
def parse_header(text: str) -> tuple[str, str | None, tuple]:
    """``subgraph @g parent: [subgraph @p](%para1_x) {`` -> (name, parent, parameter refs)."""
    items = _memo_parse(text, "header")   # headers differ in their names: one parse per shape
    words = [t for t in items if not isinstance(t, (*_TOKENS, _Group))]
    groups = [t for t in items if isinstance(t, _Group)]
    if len(words) < 2 or words[0] != "subgraph" or not isinstance(words[1], GraphRef) or not groups:
        raise GrammarError("not a subgraph header")
    parent = None
    for g in groups:
        if isinstance(g, _Brack):
            parent = next((str(v).split()[-1] for v in g if isinstance(v, str) and "@" in str(v)), None)
    params = tuple(_unkey(p) for p in groups[-1]) if isinstance(groups[-1], _Paren) else ()
    return str(words[1]), parent, params


def parse_value(text: str) -> Any:
    return _memo_parse(text, "value")


# MindSpore 1.x prints a type as element type "x" shape: <Tensor[Float32]x[const vector][2, 3]>,
# <Tensor[Float32]x()>, <Ref[Tensor[Float32]]x(2, 3)>; the value language joins the parts with spaces.
_X_TYPE = re.compile(r"<(?:(Ref)\[)?Tensor\[(\w+)\]\]? ?x ?(?:\[const vector\])?[\[(]([-\d, ]*)[\])]>\Z")


def _tensor_type(value: Any) -> TensorType:
    raw = _type_text(value)
    if not isinstance(value, Call) or value.bracket != "<" or not value.args:
        return TensorType(str(value), None, None, raw)
    if len(value.args) == 1:
        m = _X_TYPE.match(raw)
        if m:
            shape = tuple(int(d) for d in m.group(3).replace(" ", "").split(",") if d)
            return TensorType(m.group(1) or "Tensor", m.group(2), shape, raw)
    head = value.args[0]
    kind, dtype = (head.name, None) if isinstance(head, Call) else (str(head), None)
    if isinstance(head, Call) and head.args:
        inner = head.args[0]
        # Ref[Tensor[Float16]] and Tensor[Float16] both carry the element type innermost
        while isinstance(inner, Call) and inner.args:
            inner = inner.args[0]
        dtype = str(inner) if kind in ("Tensor", "Ref") else None
    shape = value.args[1] if len(value.args) > 1 else None
    if not (isinstance(shape, tuple) and all(isinstance(d, int) for d in shape)):
        shape = None
    return TensorType(str(kind), dtype, shape, raw)


def _type_text(value: Any) -> str:
    if isinstance(value, Call) and value.bracket == "<":
        return "<" + ", ".join([_type_text(a) for a in value.args] + [f"{k}={v}" for k, v in value.kwargs]) + ">"
    if isinstance(value, tuple):
        return "(" + ", ".join(_type_text(v) for v in value) + ")"
    return str(value)
