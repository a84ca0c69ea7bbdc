"""Python values for the IR value language: what the grammar's transformer produces."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class Ref(str):
    """A reference to a node or parameter: ``%3``, ``%para1_x``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Ref({str(self)!r})"


class GraphRef(str):
    """A reference to a subgraph: ``@g`` (``@@g`` in ``%0[@@g]`` forms keeps both signs)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"GraphRef({str(self)!r})"


@dataclass(frozen=True, slots=True)
class FreeVar:
    """``$(@g:CNode_86)``: a node of another (enclosing) subgraph, by its name."""

    graph: str
    name: str

    def __str__(self) -> str:
        return f"$({self.graph}:{self.name})"


@dataclass(frozen=True, slots=True)
class Call:
    """A juxtaposed form the value language has no special meaning for.

    ``Tensor(shape=[2], dtype=Float32, value=[...])`` is ``Call("Tensor", (), {...}, "(")``,
    ``UMonad[U]`` is ``Call("UMonad", ("U",), {}, "[")``.
    """

    name: Any
    args: tuple = ()
    kwargs: tuple = ()  # ((key, value), ...) keeps the dataclass hashable
    bracket: str = "("

    def kw(self, key: str, default: Any = None) -> Any:
        for k, v in self.kwargs:
            if k == key:
                return v
        return default

    def __str__(self) -> str:
        close = {"(": ")", "[": "]", "{": "}", "<": ">"}[self.bracket]
        parts = [dump_notation(a) for a in self.args] + [f"{k}={dump_notation(v)}" for k, v in self.kwargs]
        return f"{dump_notation(self.name)}{self.bracket}{', '.join(parts)}{close}"


@dataclass(frozen=True, slots=True)
class TensorType:
    """One entry of a type line: ``<Tensor[Float16], (512, 4096)>``.

    ``kind`` is ``Tensor``, ``Ref`` (a parameter reference), ``Tuple``, ``UMonad`` ... as printed;
    ``dtype`` the element type (``Float16``) when there is one; ``shape`` a tuple of ints, or None
    when the type has no shape (``NoShape``) or the shape is not a plain tuple.
    """

    kind: str
    dtype: str | None
    shape: tuple | None
    raw: str

    @property
    def nbytes(self) -> int | None:
        size = DTYPE_BYTES.get(self.dtype or "")
        if size is None or self.shape is None:
            return None
        n = size
        for d in self.shape:
            if not isinstance(d, int) or d < 0:
                return None
            n *= d
        return n

    def __str__(self) -> str:
        if self.dtype is None:
            return self.kind
        shape = "" if self.shape is None else "(" + ", ".join(str(d) for d in self.shape) + ")"
        return f"{self.dtype}{shape}"


DTYPE_BYTES = {
    "Float64": 8,
    "Float32": 4,
    "Float16": 2,
    "BFloat16": 2,
    "Int64": 8,
    "Int32": 4,
    "Int16": 2,
    "Int8": 1,
    "UInt64": 8,
    "UInt32": 4,
    "UInt16": 2,
    "UInt8": 1,
    "Bool": 1,
    "Complex64": 8,
    "Complex128": 16,
}

# MindSpore TypeId numbers as printed in ``Cast(x, I64(43))`` (mindspore/core/ir/dtype/type_id.h).
TYPE_ID_NAMES = {
    30: "Bool",
    31: "Int",
    32: "Int8",
    33: "Int16",
    34: "Int32",
    35: "Int64",
    37: "UInt8",
    38: "UInt16",
    39: "UInt32",
    40: "UInt64",
    41: "Float",
    42: "Float16",
    43: "Float32",
    44: "Float64",
    45: "BFloat16",
}


def dump_notation(value: Any) -> str:
    """Render a parsed value back in the dump's own notation (for messages)."""
    if value is True:
        return "Bool(1)"
    if value is False:
        return "Bool(0)"
    if value is None:
        return "None"
    if isinstance(value, tuple):
        return "(" + ", ".join(dump_notation(v) for v in value) + ")"
    if isinstance(value, list):
        return "[" + ", ".join(dump_notation(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {dump_notation(v)}" for k, v in value.items()) + "}"
    return str(value)
