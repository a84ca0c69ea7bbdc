"""Rebuilding the values of a parsed template (``irlint.read.templates``) with the fills of one text.

Refilling. ``fill_plan`` walks the parsed template once and records, per part, ``None`` (no blank and
nothing mutable: the part is shared by every text of the shape) or how to rebuild it (a reference, a
string with blanks, a scalar, a tuple/list/dict/``Call``/``TensorType`` to rebuild part by part).
``refill_value`` follows that plan with the fills of one text.

Generated code. A template seen a second time gets a recipe: ``fill_builder`` writes the plan as one
Python expression (``_BuilderSource``) and compiles ``lambda f: <expression>`` with ``eval``, so a
shape is rebuilt by tuple, list and dict displays instead of a recursive walk. The source is built
only from the parse of a template (never from dump text: fills reach the function as the argument
``f``), and only these names are in scope: ``f`` the fills, ``c`` the non-literal constants of this
template, ``R`` ``Ref``, ``G`` ``GraphRef``, ``T`` ``_fill_text`` (a string around blanks), ``I``
``_int_value`` (``I64(981)`` -> 981), ``TT`` ``TensorType``, ``FV`` ``FreeVar``, ``C`` ``Call``.
For the call ``PrimFunc_MatMul(%1, %para4_w, "x")`` (its template is in ``irlint.read.templates``)
the generated function is::

    lambda f: ['PrimFunc_MatMul', c[0]((R(f[0]), R(f[1]), f[2][1:-1], ))]    # c[0] is _Paren

and for the attribute block ``{instance_name: "matmul", id: I64(981)}``::

    lambda f: {'instance_name': f[0][1:-1], 'id': I(f[1])}

An expression over ``MAX_BUILDER_SOURCE`` characters (or one the compiler refuses) is not compiled:
that template is refilled by ``refill_value``. ``templates.VERIFY_RECIPES`` (set by the tests) checks every new
recipe against a plain parse of its first text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .values import Call, FreeVar, GraphRef, Ref, TensorType

# The blanks of a template (``templates._template`` puts them in): N numbers the blank.
REF_SLOT = "%\x00"
STR_SLOT = "\x00"
WORD_SLOT = "\x01"
INT_SLOT = "\x02"
GRAPH_SLOT = "@\x03"
NAME_SLOT = "\x05"  # the name of a free variable, in $(@\x03N:\x05N): both parts of one blank


SLOT = re.compile("%\x00(\\d+)|\x00(\\d+)|\x01(\\d+)|\x02(\\d+)|@\x03(\\d+)|\x05(\\d+)")


def has_blank(text: str) -> bool:
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

    return SLOT.sub(fill, text)


# A refill plan mirrors a parsed template: None where a part holds no blank and nothing mutable
# (that part is shared, as immutable values may be), otherwise how to rebuild it.
_REF_PLAN, _TEXT_PLAN, _GRAPH_PLAN = "ref", "text", "graph"


def _int_value(scalar: str) -> int:
    """``I64(981)`` -> 981."""
    return int(scalar[scalar.index("(") + 1 : -1])


def fill_plan(value: Any) -> Any:
    kind = type(value)
    if kind is Ref:
        return _REF_PLAN if "\x00" in value else None
    if kind is GraphRef:
        return _GRAPH_PLAN if "\x03" in value else None
    if kind is str:
        if value[:1] == INT_SLOT and value[1:].isdigit():
            return ("int", int(value[1:]))  # I64(<blank>): the number itself
        return _TEXT_PLAN if has_blank(value) else None
    if isinstance(value, list):
        return ("list", [fill_plan(v) for v in value])
    if isinstance(value, dict):
        return ("dict", [(fill_plan(k), fill_plan(v)) for k, v in value.items()])
    if isinstance(value, tuple):
        parts: Any = [fill_plan(v) for v in value]
        return ("tuple", parts) if any(p is not None for p in parts) else None
    if isinstance(value, Call):
        parts = (
            fill_plan(value.name),
            fill_plan(value.args),
            [fill_plan(v) for _, v in value.kwargs],
            [fill_plan(k) for k, _ in value.kwargs],
        )
        if parts[0] is None and parts[1] is None and not any(parts[2]) and not any(parts[3]):
            return None
        return ("call", parts)
    if kind is TensorType:
        parts = (fill_plan(value.kind), fill_plan(value.dtype), fill_plan(value.raw))
        return ("type", parts) if any(p is not None for p in parts) else None
    if kind is FreeVar:
        parts = (fill_plan(value.graph), fill_plan(value.name))
        return ("freevar", parts) if any(p is not None for p in parts) else None
    return None


def refill_value(value: Any, plan: Any, fills: list[str]) -> Any:
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
        return value.__class__([v if p is None else refill_value(v, p, fills) for v, p in zip(value, parts)])
    if tag == "list":
        return [v if p is None else refill_value(v, p, fills) for v, p in zip(value, parts)]
    if tag == "dict":
        return {
            refill_value(k, kp, fills): refill_value(v, vp, fills) for (k, v), (kp, vp) in zip(value.items(), parts)
        }
    if tag == "type":
        return TensorType(
            refill_value(value.kind, parts[0], fills),
            refill_value(value.dtype, parts[1], fills),
            value.shape,
            refill_value(value.raw, parts[2], fills),
        )
    if tag == "freevar":
        return FreeVar(refill_value(value.graph, parts[0], fills), refill_value(value.name, parts[1], fills))
    name, args, values, keys = parts
    return Call(
        refill_value(value.name, name, fills),
        refill_value(value.args, args, fills),
        tuple(
            (refill_value(k, kp, fills), refill_value(v, vp, fills))
            for (k, v), vp, kp in zip(value.kwargs, values, keys)
        ),
        value.bracket,
    )


_SLOT_ONLY = re.compile("(%\x00|\x00|\x01|\x02)(\\d+)\\Z")
MAX_BUILDER_SOURCE = 20_000


def fill_builder(value: Any, plan: Any) -> Callable[[list[str]], Any] | None:
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
