"""The template memo of the reader: each shape of text is parsed once, and its values are rebuilt by
generated code for every text of that shape.

What a template is. Real dumps repeat the same pieces thousands of times, differing only in node
ids, parameter names, string literals, ``key=name`` values, ``I64(N)`` scalars and graph names
(one decoder layer per layer, one attribute set per op kind). ``_template`` cuts those out
(``_VOLATILE``) and puts a numbered blank in each place; the cut texts are the fills::

    PrimFunc_MatMul(%1, %para4_w, "x")
    -> template 'PrimFunc_MatMul(%\x000, %\x001, "\x002")', fills ['%1', '%para4_w', '"x"']

A blank is a control character the grammar reads as part of a word or string (``%\x00N`` a node
reference, ``\x00N`` inside a string, ``=\x01N`` a ``key=name`` value, ``\x02N`` a scalar such as
``I64(981)``, ``@\x03N`` a graph name, ``\x05N`` a free variable's name); N numbers the blank, so
that filling it back does not depend on the order the parser builds values. The template is parsed
like any text (``irlint.read.parser``); the values hold the blanks, for instance
``['PrimFunc_MatMul', _Paren((Ref('%\x000'), Ref('%\x001'), '\x002'))]``.

Refilling. ``_plan`` walks the parsed template once and records, per part, ``None`` (no blank and
nothing mutable: the part is shared by every text of the shape) or how to rebuild it (a reference, a
string with blanks, a scalar, a tuple/list/dict/``Call``/``TensorType`` to rebuild part by part).
``_refill`` follows that plan with the fills of one text.

Generated code. A template seen a second time gets a recipe: ``_builder`` writes the plan as one
Python expression (``_BuilderSource``) and compiles ``lambda f: <expression>`` with ``eval``, so a
shape is rebuilt by tuple, list and dict displays instead of a recursive walk. The source is built
only from the parse of a template (never from dump text: fills reach the function as the argument
``f``), and only these names are in scope: ``f`` the fills, ``c`` the non-literal constants of this
template, ``R`` ``Ref``, ``G`` ``GraphRef``, ``T`` ``_fill_text`` (a string around blanks), ``I``
``_int_value`` (``I64(981)`` -> 981), ``TT`` ``TensorType``, ``FV`` ``FreeVar``, ``C`` ``Call``.
For the call above the generated function is::

    lambda f: ['PrimFunc_MatMul', c[0]((R(f[0]), R(f[1]), f[2][1:-1], ))]    # c[0] is _Paren

and for the attribute block ``{instance_name: "matmul", id: I64(981)}``::

    lambda f: {'instance_name': f[0][1:-1], 'id': I(f[1])}

An expression over ``MAX_BUILDER_SOURCE`` characters (or one the compiler refuses) is not compiled:
that template is refilled by ``_refill``. ``VERIFY_RECIPES`` (set by the tests) checks every new
recipe against a plain parse of its first text.

Two memos use this: ``_memo_parse`` for one piece of a record (a call, an attribute block, a type
list), whose template is parsed piece by piece (``_parse_piece``: a call's arguments one by one, so
that the same argument in calls of other primitives is parsed once), and ``memo_by_template`` for a
whole record, keyed on its text between the blanks and the kind of each blank.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache, partial
from operator import itemgetter
from typing import Any

from .parser import GrammarError, _parse
from .tree_values import _Paren, _word, is_plain_name
from .values import Call, FreeVar, GraphRef, Ref, TensorType

# Templates: node ids, parameter names, string literals and ``key=name`` values (``ref_key=``)
# vary between otherwise identical pieces; the parse of the rest is shared. Each blank is
# numbered, so that filling it back does not depend on the order the transformer builds values.
_W = r"[^\s,()\[\]{}<>:=*\"']"  # a character of a WORD (grammar/ir.lark)
# Every alternative starts with a literal character, so the regex engine skips to the next
# candidate in C (faster than lookbehinds first). A ``=name`` blank keeps its "=".
_VOLATILE = re.compile(
    rf"%(?<!{_W}%){_W}+"  # %12, %para3_x: Ref words
    r'|"(?:[^"\\\n]|\\.)*"'  # "strings"
    rf'|=(?!(?:None|(?i:inf|nan))(?!{_W}))[^\s,()\[\]{{}}<>:=*"\'%@\d+\-.]{_W}*(?=\s*[,)\]}}>]|\s*\Z)'  # =name
    rf"|I(?<!{_W}I)(?:8|16|32|64)\(-?\d+\)|U(?<!{_W}U)(?:8|16|32|64)\(-?\d+\)"  # I64(981): ids differ per layer
    # $(@g:para3_x): a free variable, blanked as a graph name and a name (a word that stays a string)
    rf'|\$(?<!{_W}\$)\(@{_W}+:(?!(?:None|(?i:inf|nan))(?!{_W}))[^\s,()\[\]{{}}<>:=*"\'%@\d+\-.]{_W}*\)'
    rf"|@(?<!{_W}@){_W}+"  # @g, @@g: graph names
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
_NAME_SLOT = "\x05"  # the name of a free variable, in $(@\x03N:\x05N): both parts of one blank


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
            return blank[2 : blank.index(":")] if blank[0] == "$" else blank
        blank = fills[int(m.group(6))]
        return blank[blank.index(":") + 1 : -1]

    return _SLOT.sub(fill, text)


# A refill plan mirrors a parsed template: None where a part holds no blank and nothing mutable
# (that part is shared, as immutable values may be), otherwise how to rebuild it.
_REF_PLAN, _TEXT_PLAN, _GRAPH_PLAN = "ref", "text", "graph"


def _int_value(scalar: str) -> int:
    """``I64(981)`` -> 981."""
    return int(scalar[scalar.index("(") + 1 : -1])


def _plan(value: Any) -> Any:
    kind = type(value)
    if kind is Ref:
        return _REF_PLAN if "\x00" in value else None
    if kind is GraphRef:
        return _GRAPH_PLAN if "\x03" in value else None
    if kind is str:
        if value[:1] == _INT_SLOT and value[1:].isdigit():
            return ("int", int(value[1:]))  # I64(<blank>): the number itself
        return _TEXT_PLAN if _has_blank(value) else None
    if isinstance(value, list):
        return ("list", [_plan(v) for v in value])
    if isinstance(value, dict):
        return ("dict", [(_plan(k), _plan(v)) for k, v in value.items()])
    if isinstance(value, tuple):
        parts: Any = [_plan(v) for v in value]
        return ("tuple", parts) if any(p is not None for p in parts) else None
    if isinstance(value, Call):
        parts = (
            _plan(value.name),
            _plan(value.args),
            [_plan(v) for _, v in value.kwargs],
            [_plan(k) for k, _ in value.kwargs],
        )
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
        return TensorType(
            _refill(value.kind, parts[0], fills),
            _refill(value.dtype, parts[1], fills),
            value.shape,
            _refill(value.raw, parts[2], fills),
        )
    if tag == "freevar":
        return FreeVar(_refill(value.graph, parts[0], fills), _refill(value.name, parts[1], fills))
    name, args, values, keys = parts
    return Call(
        _refill(value.name, name, fills),
        _refill(value.args, args, fills),
        tuple((_refill(k, kp, fills), _refill(v, vp, fills)) for (k, v), vp, kp in zip(value.kwargs, values, keys)),
        value.bracket,
    )


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
        digits = m.group(m.lastindex or 0)
        numbers.append(digits)
        return f"{m.group()[: -len(digits)]}{len(numbers) - 1}"

    return _SLOT.sub(local, text), numbers


def _relabel(value: Any, numbers: list[str]) -> Any:
    """``value`` with the blank numbered i in its strings numbered ``numbers[i]``."""
    if isinstance(value, str):
        if _has_blank(value):
            new = _SLOT.sub(
                lambda m: f"{m.group()[: -len(m.group(m.lastindex or 0))]}{numbers[int(m.group(m.lastindex or 0))]}",
                value,
            )
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
        return Call(
            _relabel(value.name, numbers), _relabel(value.args, numbers), _relabel(value.kwargs, numbers), value.bracket
        )
    if kind is TensorType:
        return TensorType(
            _relabel(value.kind, numbers), _relabel(value.dtype, numbers), value.shape, _relabel(value.raw, numbers)
        )
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
                return _parse(text, start)  # the error, with the columns of the real piece
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
                items.append(text[start : m.start()].strip(" \t"))
                return items if all(items) else None
        elif mark == "," and depth == 1:
            items.append(text[start : m.start()].strip(" \t"))
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
    names = {
        "c": source.consts,
        "R": Ref,
        "G": GraphRef,
        "T": _fill_text,
        "I": _int_value,
        "TT": TensorType,
        "FV": FreeVar,
        "C": Call,
    }
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
            return repr(v)  # a constant of the compiled code: no lookup when the builder runs
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
    recipe: Any = _RECIPES.get(key, _NOT_SEEN)
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
        value = parse(text)  # a GrammarError here is the real text's, with its columns
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
