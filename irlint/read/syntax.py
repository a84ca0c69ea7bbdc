"""Lark glue: parses with the LALR parser of ``grammar/ir.lark`` and turns its trees into Python values.

The reader (``irlint.read.reader``) calls ``parse_call``, ``parse_attrs``, ``parse_types``,
``parse_param`` and ``parse_header`` on pieces of a record. Each is memoised on a template of
its text in which node ids and string literals are blanked out, because real dumps repeat the
same shapes thousands of times (one decoder layer per layer, one attribute set per op kind).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from . import tree_values
from .grammar_file import grammar_text
from .parser import GrammarError
from .templates import memo_parse
from .tree_values import Brace, Brack, Group, Paren, apply, plain, source, unkey
from .values import Call, GraphRef, TensorType

__all__ = [
    "GrammarError",
    "grammar_text",
    "parse_call",
    "parse_attrs",
    "parse_types",
    "parse_param",
    "parse_header",
    "parse_value",
]


def parse_call(text: str) -> tuple[Any, tuple]:
    """``PrimFunc_MatMul(%0, %1)`` -> (callee, argument tuple)."""
    terms = memo_parse(text, "call")
    args = terms[-1] if terms else None
    if not isinstance(args, Group) or args.bracket != "(":
        raise GrammarError("a call needs an argument list in parentheses")
    callee = terms[:-1]
    if not callee:
        raise GrammarError("a call needs a callee")
    try:
        return _callee(callee), tuple(unkey(a) for a in args)
    except RecursionError:  # values are walked recursively, as the parse itself is
        raise GrammarError("nesting too deep") from None


def _callee(terms: list) -> Any:
    """The callee of a call: a primitive name, ``call @g``, ``%3``, ``%0[@@g]``, ``$(@g:n)``."""
    if len(terms) == 2 and terms[0] == "call" and isinstance(terms[1], GraphRef):
        return terms[1]
    if len(terms) == 2 and isinstance(terms[1], Group):
        return apply(terms[0], terms[1])
    if len(terms) == 1:
        return terms[0]
    if len(terms) >= 4 and _is_colon(terms[1]) and _is_colon(terms[2]) and type(terms[3]) is str:
        # 1.x-2.0 name a primitive with its class: "DoSignaturePrimitive::S-Prim-Sub{prim_type=1}[attrs]",
        # "Primitive::Return{prim_type=1}"; the braces hold the class's type tag
        name = terms[3][7:] if terms[3].startswith("S-Prim-") else terms[3]
        attrs = [t for t in terms[4:] if isinstance(t, Brack)]
        if len(attrs) + sum(isinstance(t, Brace) for t in terms[4:]) == len(terms) - 4:
            return apply(name, attrs[0]) if len(attrs) == 1 else name
    # as text, not repr: a template's blanks inside must stay what they are to be filled back
    return " ".join(source(t) for t in terms)


def _is_colon(term: Any) -> bool:
    return isinstance(term, tree_values._TOKENS) and term.type == "COLON"


def parse_attrs(text: str) -> dict:
    """``{recompute: Bool(1), recompute_id: I64(3)}`` -> ``{"recompute": True, "recompute_id": 3}``."""
    value = memo_parse(text, "attrs")
    if isinstance(value, dict):
        return value
    if value == []:
        return {}
    raise GrammarError("an attribute block holds key: value pairs")


@lru_cache(maxsize=65536)
def parse_types(text: str) -> tuple[tuple[TensorType, ...], tuple[TensorType, ...] | None]:
    """``(<T1>, <T2>) -> (<T>)`` -> (input types, output types); a Return's ``(<T>)`` has no arrow."""
    parts = memo_parse(text, "types")
    ins = tuple(_tensor_type(t) for t in parts[0])
    outs = tuple(_tensor_type(t) for t in parts[1]) if len(parts) > 1 else None
    return ins, outs


def parse_param(text: str) -> tuple[str, list]:
    """``%para1_x: <Tensor[Float32], (2, 8)> : [2, 8]`` -> (name, fields after the first colon)."""
    items = memo_parse(text, "param")
    name, fields = items[0], [t for t in items[1:] if not isinstance(t, tree_values._TOKENS)]
    return str(name), [plain(f) if isinstance(f, Group) else f for f in fields]


@lru_cache(maxsize=65536)  # the value is immutable; every stage file repeats the subgraph headers
def parse_header(text: str) -> tuple[str, str | None, tuple]:
    """``subgraph @g parent: [subgraph @p](%para1_x) {`` -> (name, parent, parameter refs)."""
    items = memo_parse(text, "header")  # headers differ in their names: one parse per shape
    words = [t for t in items if not isinstance(t, (*tree_values._TOKENS, Group))]
    groups = [t for t in items if isinstance(t, Group)]
    if len(words) < 2 or words[0] != "subgraph" or not isinstance(words[1], GraphRef) or not groups:
        raise GrammarError("not a subgraph header")
    parent = None
    for g in groups:
        if isinstance(g, Brack):
            parent = next((str(v).split()[-1] for v in g if isinstance(v, str) and "@" in str(v)), None)
    params = tuple(unkey(p) for p in groups[-1]) if isinstance(groups[-1], Paren) else ()
    return str(words[1]), parent, params


def parse_value(text: str) -> Any:
    return memo_parse(text, "value")


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
            shape: tuple[int, ...] | None = tuple(int(d) for d in m.group(3).replace(" ", "").split(",") if d)
            return TensorType(m.group(1) or "Tensor", m.group(2), shape, raw)
    head = value.args[0]
    dtype: str | None
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
