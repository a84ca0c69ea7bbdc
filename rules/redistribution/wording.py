"""How an op and a value read in a finding: ``who`` names an op as the user named it, ``fmt`` a layout
or strategy, ``size`` a byte count."""

from __future__ import annotations

from typing import Any

from irlint.findings import Related, scope_path
from irlint.model import IRFile
from irlint.read.values import TensorType
from irlint.rule import related_node
from irlint.units import human_bytes

INSERTED_PREFIXES = ("redistribution_op", "forward_op", "grad", "parallel_optimizer", "_Mirror", "_Virtual")


def short_who(ir: IRFile, key: int | None) -> str:
    """``who`` for a headline: the cell without its class (``MatMul (w2)``)."""
    from irlint.findings import model_names

    return model_names(who(ir, key))


def who(ir: IRFile, key: int | None) -> str:
    """An op as the user named it: the op, its own instance name when the model gave one, the cell."""
    if key is None:
        return "?"
    data = ir[key]
    scope = scope_path(data.get("scope", ""))
    cell = scope.rsplit("/", 1)[-1] if scope else ""
    op = data.get("op", data["kind"])
    inst = data.get("instance") or ""
    named = inst and inst.lower() != str(op).lower() and not inst.startswith(INSERTED_PREFIXES) and not inst.isdigit()
    label = f"{op} {inst}" if named else str(op)
    return f"{label} ({cell})" if cell else label


def note(ir: IRFile, key: int, text: str) -> Related:
    return related_node(ir, key, text)


size = human_bytes  # the one byte formatter of every report (irlint.units)


def fmt(value: object) -> str:
    if value is None:
        return "?"
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(fmt(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    return str(value)


def first_in(ir: IRFile, key: int) -> TensorType | None:
    return (ir[key].get("in_types") or (None,))[0]


def as_int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def placement_text(placed: tuple[Any, ...]) -> str:
    parts = []
    for d, axes in enumerate(placed):
        if axes:
            parts.append(f"dim {d} over " + " x ".join(f"{n} ranks {stride} apart" for n, stride in axes))
    return ", ".join(parts) or "not split"
