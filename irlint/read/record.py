"""Parses the structured parts of one record: a node line, a type line, a parameter line.

Each function takes the text of one record (already joined when a printed tensor spans lines)
and returns plain Python values; the Lark grammar (``irlint.read.syntax``, memoised on templates)
parses the pieces. A piece the grammar does not accept raises ``GrammarError``.
"""

from __future__ import annotations

import enum
import re
from typing import Any, Final, TypeGuard

from . import refill, syntax, templates, tree_values
from .parser import GrammarError
from .syntax import parse_attrs, parse_call, parse_param, parse_types
from .templates import memo_by_template
from .values import Call, GraphRef, TensorType

__all__ = ["GrammarError", "NODE_LINE", "normalize_op", "parse_node", "parse_type_line", "parse_param_line"]

NODE_LINE = re.compile(r"  (%\d+)\(([^\s)]*)\) = (.*)\Z", re.S)
_ATTR_MARKERS = (" {instance name: ", " primitive_attrs: {", " cnode_attrs: {", " cnode_primal_attrs: {")
# A record whose only block is the parallel strategy: ``MakeTuple(%15, %16) {in_strategy: ((2, 4), ..)}``
_STRATEGY_ONLY = " {in_strategy: "


def normalize_op(raw: str) -> str:
    return raw[9:] if raw.startswith("PrimFunc_") else raw


def parse_node(rest: str) -> tuple[Any, tuple, str, str, dict]:
    """The right-hand side of a node line, ``PrimFunc_MatMul(%0, %1) {instance name: ..} ...``
    -> (callee, arguments, raw op, op, attribute blocks by label). ``GrammarError.column``
    counts from the start of ``rest``."""
    return memo_by_template("node", rest, _parse_node)


def _parse_node(rest: str) -> tuple[Any, tuple, str, str, dict]:
    cut = len(rest)
    marks = []
    for marker in _ATTR_MARKERS:
        pos = rest.find(marker)
        if pos >= 0:
            marks.append((pos, marker))
            cut = min(cut, pos)
    if not marks and rest.endswith("}"):
        pos = rest.find(_STRATEGY_ONLY)
        if pos >= 0:
            marks.append((pos, _STRATEGY_ONLY))
            cut = pos
    callee, args = parse_call(rest[:cut].rstrip())
    blocks = _attr_blocks(rest, sorted(marks)) if marks else {}
    if type(callee) is str:  # Ref and GraphRef are str subclasses: they are calls
        raw_op = callee
        op = normalize_op(callee)
    elif _bracket_attrs(callee):
        # analyze_fail.ir prints a primitive's attributes in brackets: Depend[side_effect_propagate: I64(1)](..),
        # 2.0's DoSignaturePrimitive::S-Prim-Sub{prim_type=1}[output_names=["output"]](..)
        raw_op = callee.name
        op = normalize_op(raw_op)
        attrs = blocks.setdefault("primitive_attrs", {})
        attrs.update(kv for d in callee.args for kv in d.items())
        attrs.update(callee.kwargs)
    else:
        raw_op = str(callee) if not isinstance(callee, GraphRef) else f"call {callee}"
        op = "call"
    return callee, args, raw_op, op, blocks


def _attr_blocks(rest: str, marks: list[tuple[int, str]]) -> dict:
    blocks: dict[str, Any] = {}
    for i, (pos, marker) in enumerate(marks):
        end = marks[i + 1][0] if i + 1 < len(marks) else len(rest)
        text = rest[pos:end].strip()
        if marker == _STRATEGY_ONLY:
            for group in _brace_groups(text):
                blocks.setdefault("parallel_info", {}).update(parse_attrs(group))
        elif marker == " {instance name: ":
            close = text.rfind("}")
            if close < 0:  # the line was cut inside the block: its other attributes are lost
                raise GrammarError("attribute block '{instance name: ' not closed (record cut?)", pos + 2)
            blocks["instance"] = text[len("{instance name: ") : close if close > 0 else len(text)].strip()
        else:
            label, _, body = text.partition(": ")
            first, *extra = _brace_groups(body)
            blocks[label] = parse_attrs(first)
            # Parallel dumps print the op's strategies last, as an unnamed block: {in_strategy: ...}
            for group in extra:
                blocks.setdefault("parallel_info", {}).update(parse_attrs(group))
    return blocks


def parse_type_line(body: str) -> tuple[tuple[TensorType, ...], TensorType | None]:
    """``(<T1>, <T2>) -> (<T>)`` -> (input types, output type); a Return's ``(<T>)`` is its input."""
    # Most type lines repeat exactly (one per layer), and their values are immutable: share them.
    value = _TYPE_LINES.get(body)
    if value is None:
        value = _flat_type_line(body) or memo_by_template("types", body, _parse_type_line)
        if len(_TYPE_LINES) < MAX_SHARED_TYPE_LINES:
            _TYPE_LINES[body] = value
    return value


_TYPE_LINES: dict[str, tuple] = {}
MAX_SHARED_TYPE_LINES = 65536
# A whole record's first type line as the scanner hands it (its bytes after "      : ") -> its
# types: filled by the reader after the line is read without a diagnostic (no decoding then).
TYPE_LINES_READ: dict[bytes, tuple] = {}

# A type line of flat entries (no "<" inside an entry). The long ones (a subgraph call's dozens of
# arguments, every shape a little different) never repeat as a whole, but their entries do: such
# a line is read entry by entry, each entry parsed once by the grammar.
_FLAT_TYPES = re.compile(r"\((<[^<>]*>(?:, <[^<>]*>)*)\)(?: -> \((<[^<>]*>(?:, <[^<>]*>)*)\))?\Z")
_FLAT_ENTRY = re.compile(r"<[^<>]*>")


def _flat_type_line(body: str) -> tuple[tuple[TensorType, ...], TensorType | None] | None:
    m = _FLAT_TYPES.match(body)
    if m is None:
        return None
    try:
        ins = tuple([_type_entry(t) for t in _FLAT_ENTRY.findall(m.group(1))])
        if m.group(2) is None:
            return ins, ins[0]
        outs = _FLAT_ENTRY.findall(m.group(2))
        return ins, _type_entry(outs[0])
    except GrammarError:
        return None  # the whole line's parse reports it, with its columns


def _type_entry(text: str) -> TensorType:
    value = _TYPE_ENTRIES.get(text)
    if value is None:
        value = _tuple_entry(text) or _shaped_entry(text) or _entry_parse(text)
        if len(_TYPE_ENTRIES) < MAX_SHARED_TYPE_LINES:
            _TYPE_ENTRIES[text] = value
    return value


# Entries that differ only in their shape (``<Tensor[Float16], (1, 4096)>`` and ``(8, 4096)``), their
# element type (``Tensor[Float32]``) or the names after the shape (``ref_key=w1``) share a skeleton.
# Its first entry is parsed with node references standing in for the shape and the element type
# (``<Tensor[%eFloat16], (%s1_4096)>``: blanks of the entry's template, so that parse is shared too);
# where the parse prints the stand-ins and names back, the next entries put their own. Only a name
# with brackets, then the shape as Python prints its numbers, then items after a comma: the shape
# is the type's second item, on its own. The lookahead checks the end once: without it every ", ("
# would rescan the rest (quadratic).
_SHAPED = re.compile(
    r"<(?=[^<>]*>\Z)(\w+(?:\[\w+)*)(\]*), \(((?:0|-?[1-9][0-9]*)(?:, (?:0|-?[1-9][0-9]*))*)?\)"
    r"((?:, [^<>]*)?>)\Z"
)


class _Unseen(enum.Enum):
    MARK = 0  # a skeleton not in its table yet


class _Word(enum.Enum):
    MARK = 0  # a skeleton's element type: the entry's bracketed name


_UNSEEN: Final = _Unseen.MARK
_WORD: Final = _Word.MARK
# (kind, element type or _WORD, the parse's text cut where the element type, the shape and the names
# go, which of them goes where), or None: the entry's own parse says what it is
_Proto = tuple[str, "str | _Word | None", tuple[str, ...], tuple[int, ...]]
_SKELETONS: dict[tuple[str, str, str, str], _Proto | None] = {}


def _shaped_entry(text: str) -> TensorType | None:
    m = _SHAPED.match(text)
    if m is None or refill.has_blank(text):  # (a blank's character in a text would join two skeletons)
        return None
    chain, closing, dims, tail = m.groups("")
    at = chain.rfind("[")
    word = chain[at + 1 :] if at > 0 else ""
    if word:
        plain = _PLAIN_WORDS.get(word)
        if plain is None:
            plain = _PLAIN_WORDS[word] = tree_values.is_plain_name(word) and word.isascii()
        if not plain:
            word = ""  # not a name the grammar keeps as it is written
    names = templates._VOLATILE_SPLIT.split(tail)  # (a tail without names: itself)
    skeleton = (
        chain[: at + 1] if word else chain,
        closing,
        "\x01".join(names[::2]),
        "".join([n[0] for n in names[1::2]]),
    )
    proto = _SKELETONS.get(skeleton, _UNSEEN)
    if proto is _UNSEEN:
        proto = _shaped_proto(chain, closing, dims, tail, at, word, names[1::2])
        if len(_SKELETONS) < MAX_SHARED_TYPE_LINES:
            _SKELETONS[skeleton] = proto
    if proto is None:
        return None
    kind, dtype, parts, order = proto
    fills = [word, dims, *names[1::2]]
    raw = parts[0] + "".join([fills[i] + part for i, part in zip(order, parts[1:])])
    shape = _SHAPES.get(dims)
    if shape is None:
        shape = tuple([int(d) for d in dims.split(", ")]) if dims else ()
        if len(_SHAPES) < MAX_SHARED_TYPE_LINES:
            _SHAPES[dims] = shape
    value = TensorType(kind, word if dtype is _WORD else dtype, shape, raw)
    return _verified(value, text) if templates.VERIFY_RECIPES else value


_PLAIN_WORDS: dict[str, bool] = {}  # an element type -> whether the grammar keeps it as written
_SHAPES: dict[str, tuple[int, ...]] = {}  # "8, 4096" -> (8, 4096)


def _shaped_proto(
    chain: str, closing: str, dims: str, tail: str, at: int, word: str, names: list[str]
) -> _Proto | None:
    """(kind, element type or _WORD, the parse's text cut where the element type, the shape and the
    names go, which goes where) from the parse of an entry with stand-ins; None when the parse
    does not print each of them back once, as it is written."""
    word_ref = f"%e{word}" if word else ""
    dims_ref = f"%s{dims.replace(', ', '_')}"
    try:
        value = _entry_parse(
            f"<{chain[: at + 1]}{word_ref}{closing}, ({dims_ref}){tail}"
            if word
            else f"<{chain}{closing}, ({dims_ref}){tail}"
        )
    except GrammarError:
        return None  # the entry's own parse reports it
    raw, dtype = value.raw, value.dtype
    if value.shape is not None or "%" in value.kind:
        return None
    element: str | _Word | None = dtype
    if word and dtype == word_ref:
        element = _WORD
    elif dtype is not None and "%" in dtype:
        return None
    spans = []
    for i, (stand, at_in) in enumerate([(word_ref, ""), (f"({dims_ref})", "("), *[(n, "") for n in names]]):
        if not stand:
            continue
        if raw.count(stand) != 1:
            return None
        start = raw.index(stand) + len(at_in)
        spans.append((start, start + len(stand) - (2 if at_in else 0), i))
    spans.sort()
    parts, end = [], 0
    for start, stop, _ in spans:
        if start < end:
            return None
        parts.append(raw[end:start])
        end = stop
    parts.append(raw[end:])
    return value.kind, element, tuple(parts), tuple(i for _, _, i in spans)


# Tuple entries that differ only in the numbers of their shapes, ``<Tuple[Tensor[Float32]*2],
# TupleShape((8, 128), (8, 128))>`` and ``TupleShape((1, 8), (1, 8))``: a tuple has no element type
# nor shape, so the grammar parses the first; the others are the same type, its text (as the parse
# prints it back) with their numbers. Only parenthesized numbers after a space, "(" or "," (not
# ``Bool(1)``, which is a value) and printed as Python prints them are blanked.
_TUPLE_SKELETONS: dict[str, tuple[str, ...] | None] = {}  # the parse's text split at its numbers
_NUMBER_TUPLE = re.compile(r"(?<![^\s(,])\((?:0|-?[1-9][0-9]*)(?:, (?:0|-?[1-9][0-9]*))*\)")


def _arity(m: re.Match) -> str:
    return "(" + "#" * (m.group().count(",") + 1) + ")"


def _tuple_entry(text: str) -> TensorType | None:
    if not text.startswith("<Tuple["):
        return None
    skeleton = _NUMBER_TUPLE.sub(_arity, text)
    proto = _TUPLE_SKELETONS.get(skeleton, _UNSEEN)
    if proto is _UNSEEN:
        value = _entry_parse(text)
        kept = (
            value.kind == "Tuple"
            and type(value.kind) is str
            and value.dtype is None
            and value.shape is None
            and type(value.raw) is str
            and _NUMBER_TUPLE.findall(value.raw) == _NUMBER_TUPLE.findall(text)
        )
        if len(_TUPLE_SKELETONS) < MAX_SHARED_TYPE_LINES:
            _TUPLE_SKELETONS[skeleton] = tuple(_NUMBER_TUPLE.split(value.raw)) if kept else None
        return value
    if proto is None:
        return None
    numbers = _NUMBER_TUPLE.findall(text)
    raw = "".join([p for pair in zip(proto, numbers) for p in pair]) + proto[-1]
    return _verified(TensorType("Tuple", None, None, raw), text)


def _entry_parse(text: str) -> TensorType:
    """A type entry's own parse (memoized by its template)."""
    return memo_by_template("type entry", f"({text})", _parse_one_type)


def _verified(value: TensorType, text: str) -> TensorType:
    """A type entry made from a shared parse, checked against the entry's own parse when recipes
    are verified (tests): a mismatch is recorded and the own parse returned."""
    if templates.VERIFY_RECIPES:
        direct = _entry_parse(text)
        if direct != value:
            templates.RECIPE_MISMATCHES.append(("type entry", text))
            return direct
    return value


def _parse_one_type(text: str) -> TensorType:
    ins, outs = parse_types(text)
    if len(ins) != 1 or outs is not None:
        raise GrammarError("not one type")
    return ins[0]


_TYPE_ENTRIES: dict[str, TensorType] = {}


def _parse_type_line(body: str) -> tuple[tuple[TensorType, ...], TensorType | None]:
    ins, outs = parse_types(body)
    if outs is None:
        return ins, ins[0] if ins else None
    return ins, outs[0] if outs else None


def parse_param_line(line: str) -> tuple[str, TensorType | None, bool]:
    """``%para1_x: <Tensor[Float32], (2, 8)> : [2, 8]`` -> (name, type, has a default value)."""
    # The one "<..>" of a line without strings is its type: read as a type entry (shared with the
    # entries that differ in shape or element type), the line with a stand-in type (shared by all
    # parameters); a line either part of which the grammar refuses is parsed whole (its error).
    start, end = line.find("<"), line.find(">")
    if 0 < start < end and line.count("<") == 1 and line.count(">") == 1 and '"' not in line and "'" not in line:
        head = _PARAM_HEAD.match(line, 0, start)  # the name: one word, as the grammar reads it
        if head is not None:
            try:
                out_type = _type_entry(line[start : end + 1])
                tail = line[end + 1 :]
                has_default = _PARAM_TAILS.get(tail)
                if has_default is None:
                    has_default = memo_by_template("param", f"%p: <T>{tail}", _parse_param_line)[2]
                    if len(_PARAM_TAILS) < MAX_SHARED_TYPE_LINES:
                        _PARAM_TAILS[tail] = has_default
            except GrammarError:
                pass
            else:
                return head.group(1), out_type, has_default
    return memo_by_template("param", line, _parse_param_line)


_PARAM_HEAD = re.compile(rf"(%{templates._W}+)[ \t]*:[ \t]*\Z")
_PARAM_TAILS: dict[str, bool] = {}  # what follows a parameter's type -> whether it has a default value


def _parse_param_line(line: str) -> tuple[str, TensorType | None, bool]:
    name, fields = parse_param(line)
    out_type = None
    types = [f for f in fields if isinstance(f, Call) and f.bracket == "<"]
    if len(types) == 1 and line.count("<") == 1 and line.count(">") == 1:
        # the one "<..>" of the line is that field: its parse is the type's (no second parse)
        out_type = syntax._tensor_type(types[0])
    elif types:
        try:
            out_type = parse_types(f"({_type_source(line)})")[0][0]
        except (GrammarError, IndexError):
            out_type = None
    return name, out_type, "has_default" in fields


def _brace_groups(text: str) -> list[str]:
    """``{a: 1} {b: 2}`` -> its top-level brace groups; anything else comes back whole."""
    if text.count("{") < 2:
        return [text]
    groups: list[str] = []
    depth, start, quote, prev = 0, 0, "", ""
    for i, ch in enumerate(text):
        if quote:
            if ch == quote and prev != "\\":
                quote = ""
        elif ch == '"':
            quote = ch
        elif ch == "{":
            if depth == 0:
                if text[start:i].strip():
                    return [text]
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                groups.append(text[start : i + 1])
                start = i + 1
        prev = ch
    if depth or text[start:].strip() or not groups:
        return [text]
    return groups


def _bracket_attrs(callee: Any) -> TypeGuard[Call]:
    return (
        isinstance(callee, Call)
        and callee.bracket == "["
        and type(callee.name) is str
        and bool(callee.args or callee.kwargs)
        and all(isinstance(a, dict) for a in callee.args)
    )


def _type_source(line: str) -> str:
    """The ``<...>`` type of a parameter line: ``%para1_x: <T> : [..]`` -> ``<T>``."""
    start = line.find("<")
    depth = 0
    for i in range(start, len(line)):
        c = line[i]
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
            if depth == 0:
                return line[start : i + 1]
    return line[start:]


def clear_memos() -> None:
    """Empty every memo of the reader (syntax's template recipes and parses, and the type lines,
    type entries, skeletons and parameter tails shared here): the next read parses as if it were
    the first. For tests and timings; a lint never needs it."""
    templates._RECIPES.clear()
    for cached in (templates._parse_template, templates._parse_marked, syntax.parse_types, syntax.parse_header):
        cached.cache_clear()
    for table in (
        _TYPE_LINES,
        TYPE_LINES_READ,
        _TYPE_ENTRIES,
        _PLAIN_WORDS,
        _SHAPES,
        _SKELETONS,
        _TUPLE_SKELETONS,
        _PARAM_TAILS,
    ):
        table.clear()
