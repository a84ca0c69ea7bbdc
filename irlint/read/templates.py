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
``['PrimFunc_MatMul', Paren((Ref('%\x000'), Ref('%\x001'), '\x002'))]``.

Refilling a parsed template with the fills of one text, and the code generated for it, are
``irlint.read.refill``.

Two memos use this: ``memo_parse`` for one piece of a record (a call, an attribute block, a type
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

from .parser import GrammarError, parse_rule
from .refill import (
    GRAPH_SLOT,
    INT_SLOT,
    NAME_SLOT,
    REF_SLOT,
    SLOT,
    STR_SLOT,
    WORD_SLOT,
    fill_builder,
    fill_plan,
    has_blank,
    refill_value,
)
from .tree_values import Paren, is_plain_name, word_value
from .values import Call, FreeVar, Ref, TensorType

# Templates: node ids, parameter names, string literals and ``key=name`` values (``ref_key=``)
# vary between otherwise identical pieces; the parse of the rest is shared. Each blank is
# numbered, so that filling it back does not depend on the order the transformer builds values.
_W = r"[^\s,()\[\]{}<>:=*\"']"  # a character of a WORD (grammar/ir.lark)
# Every alternative starts with a literal character, so the regex engine skips to the next
# candidate in C (faster than lookbehinds first). A ``=name`` blank keeps its "=".
_VOLATILE_PATTERN = (
    rf"%(?<!{_W}%){_W}+"  # %12, %para3_x: Ref words
    r'|"(?:[^"\\\n]|\\.)*"'  # "strings"
    rf'|=(?!(?:None|(?i:inf|nan))(?!{_W}))[^\s,()\[\]{{}}<>:=*"\'%@\d+\-.]{_W}*(?=\s*[,)\]}}>]|\s*\Z)'  # =name
    rf"|I(?<!{_W}I)(?:8|16|32|64)\(-?\d+\)|U(?<!{_W}U)(?:8|16|32|64)\(-?\d+\)"  # I64(981): ids differ per layer
    # $(@g:para3_x): a free variable, blanked as a graph name and a name (a word that stays a string)
    rf'|\$(?<!{_W}\$)\(@{_W}+:(?!(?:None|(?i:inf|nan))(?!{_W}))[^\s,()\[\]{{}}<>:=*"\'%@\d+\-.]{_W}*\)'
    rf"|@(?<!{_W}@){_W}+"  # @g, @@g: graph names
)
# One compile (a few hundred microseconds): ``split`` keeps the cut texts through the group, and
# ``sub`` reads the whole match, which is the group.
_VOLATILE = _VOLATILE_SPLIT = re.compile(f"({_VOLATILE_PATTERN})")
# A string scan can pass an escaped quote: with an unclosed string, _VOLATILE would rescan the rest
# of the text from every quote (quadratic). No dump prints one; such a text is parsed as it is.
_ESCAPED_QUOTE = '\\"'
# A piece this long (a MakeTuple of a million operands) is parsed as it is: its template, fills and
# cached parse would hold several times its size, for a shape that never repeats.
MAX_TEMPLATE_CHARS = 64 * 1024


def _template(text: str) -> tuple[str, list[str]]:
    fills: list[str] = []

    def blank(m: re.Match) -> str:
        s = m.group(0)
        n = len(fills)
        fills.append(s)
        if s[0] == "%":
            return f"{REF_SLOT}{n}"
        if s[0] == '"':
            return f'"{STR_SLOT}{n}"'
        if s[0] == "@":
            return f"{GRAPH_SLOT}{n}"
        if s[0] == "$":
            return f"$({GRAPH_SLOT}{n}:{NAME_SLOT}{n})"
        if s[-1] == ")":
            return f"{INT_SLOT}{n}"
        return f"={WORD_SLOT}{n}"

    return _VOLATILE.sub(blank, text), fills


@lru_cache(maxsize=65536)
def _parse_marked(text: str, start: str) -> Any:
    # the pieces of a record's template (memo_by_template parses one per new record shape): the
    # same call or attribute block recurs in many record shapes; values are shared, never mutated
    return parse_rule(text, start)


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

    return SLOT.sub(local, text), numbers


def _relabel(value: Any, numbers: list[str]) -> Any:
    """``value`` with the blank numbered i in its strings numbered ``numbers[i]``."""
    if isinstance(value, str):
        if has_blank(value):
            new = SLOT.sub(
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
    """``parse_rule``, shared: a call whose callee is a plain name (``PrimFunc_Mul(%0, %1)``) is
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
                return [name, Paren([_parse_argument(item) for item in items])]
            except GrammarError:
                return parse_rule(text, start)  # the error, with the columns of the real piece
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
    if len(terms) != 2 or type(terms[1]) is not Paren or len(terms[1]) != 1:
        raise GrammarError("not one argument")
    value = terms[1][0]
    return value if not numbers else _relabel(value, numbers)


@lru_cache(maxsize=65536)
def _parse_template(template: str, start: str) -> tuple[Any, Any]:
    value = _parse_piece(template, start)
    return value, fill_plan(value)


def memo_parse(text: str, start: str) -> Any:
    if len(text) > MAX_TEMPLATE_CHARS:
        return _long_call(text) if start == "call" else parse_rule(text, start)
    if has_blank(text) or _ESCAPED_QUOTE in text:
        return _parse_blanked(text, start)  # would be mistaken for blanks, or too slow to blank
    template, fills = _template(text)
    try:
        value, plan = _parse_template(template, start)
    except GrammarError:
        return parse_rule(text, start)  # the error, with columns and text of the real piece
    if not fills:
        return value
    return refill_value(value, plan, fills)


# ``MakeTuple(%1, %2, ...)``: a primitive applied to node references only, the one kind of piece
# that runs to megabytes (a tuple of every gradient); read without the grammar, each reference once.
_REF_WORD = rf"%{_W}+"
_PLAIN_CALL = re.compile(rf"({_W}+)\(({_REF_WORD}(?:, {_REF_WORD})*)\)\Z")


def _long_call(text: str) -> Any:
    m = _PLAIN_CALL.match(text)
    if m is None or type(word_value(m.group(1))) is not str:
        return parse_rule(text, "call")
    refs: dict[str, Ref] = {}
    args = tuple([refs.get(r) or refs.setdefault(r, Ref(r)) for r in m.group(2).split(", ")])
    return [m.group(1), Paren(args)]


_FIRST = itemgetter(0)
_RECIPES: dict[tuple[str, str, str], Callable[[list[str]], Any] | None] = {}
_NOT_SEEN = object()
MAX_RECIPES = 65536


# Tests set this: every new recipe is then checked against the parse of the pieces of its first
# text, and a mismatch is recorded (and that template is never memoised). A recipe is built from
# the parse of the template, the same way each piece of a record is (``memo_parse``); checking
# it while reading would parse every new template twice (most of the cost of a first lint).
VERIFY_RECIPES = False
RECIPE_MISMATCHES: list[tuple[str, str]] = []


def memo_by_template(kind: str, text: str, parse: Callable[[str], Any]) -> Any:
    """``parse(text)``, computed once for all texts that differ only in blanks (node ids, strings,
    ``key=name`` values, ``I64(N)``): a whole record, a type line. The first text of a template
    parses the template and compiles its refill (a recipe); texts whose template does not parse
    are parsed as they are."""
    if (
        len(text) > MAX_TEMPLATE_CHARS
        or "\x00" in text
        or "\x01" in text
        or "\x02" in text
        or "\x03" in text
        or "\x05" in text  # has_blank, inline: this runs once a record
        or _ESCAPED_QUOTE in text
    ):
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
        plan = fill_plan(shape)
    except GrammarError:
        recipe = None
    else:
        # most templates of a small dump occur once: compile the refill when one comes back
        recipe = _Deferred(key, shape, plan) if not VERIFY_RECIPES else fill_builder(shape, plan)
    if recipe is None:
        value = parse(text)  # a GrammarError here is the real text's, with its columns
    else:
        value = refill_value(shape, plan, fills)
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
        recipe = fill_builder(self.shape, self.plan) or partial(refill_value, self.shape, self.plan)
        if _RECIPES.get(self.key) is self:
            _RECIPES[self.key] = recipe
        return recipe(fills)
