"""A forward redistribution chain that recompute runs again in backward: its copies are the same
waste a second time, priced into the forward chain's finding ("runs twice because of key K"), never
a finding of their own.

A select key that tags the model primitive after a chain (``attention\\.wq\\.reshape``) passes the tag
to the ops the parallel pass inserted for it; where backward reads that primitive's input (the weight
gradient MatMul), the recompute pass copies the whole chain into the backward half
(``duplicated: Bool(1)``; lazy_inline: in ◂ with the forward node's ``unique_id``). The copy reads a
saved value through ``Depend {recompute_insert}`` and ends at a backward op with no strategy.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from irlint.accounts.received import received_bytes
from irlint.model import IRFile
from irlint.read.values import TensorType

from .chain import MOVING_OPS
from .wording import size


@dataclass
class Rerun:
    """The recomputed copies of one chain's moving ops and the keys that asked for them."""

    copies: list[tuple[int, int]] = field(default_factory=list)  # (copy node, bytes it receives)
    keys: list[str] = field(default_factory=list)  # select keys
    causes: list[str] = field(default_factory=list)  # the other settings: full-layer recompute and its kin

    @property
    def bytes(self) -> int:
        return sum(b for _, b in self.copies)

    def text(self, verb: str = "runs") -> str:
        """``runs twice because of key K: +N KiB in backward`` (empty when nothing is re-run)."""
        if not self.copies:
            return ""
        named = [f"key{'s' if len(self.keys) > 1 else ''} {', '.join(self.keys)}"] if self.keys else []
        named += [_CAUSES.get(c, c) for c in self.causes]
        return f"{verb} twice because of {' and '.join(named) or 'a recompute tag'}: +{size(self.bytes)} in backward"


# what re-runs a collective that no select key asked for (``irlint.accounts.recompute_comm.asked_by``)
_CAUSES = {
    "recompute": "full-layer recompute",
    # Cell.recompute() recomputes the parallel pass's communication unless told mp_comm_recompute=False,
    # and MindFormers 2.1.0's LayerSetting passes the config's mp_comm_recompute to no layer
    "mp_comm_recompute": "full-layer recompute, which recomputes the layer's communication too "
    "(Cell.recompute's mp_comm_recompute, on by default)",
    "parallel_optimizer_comm_recompute": "parallel_optimizer_comm_recompute",
}


def rerun_of(ir: IRFile, nodes: list[int]) -> Rerun:
    """The recomputed copies of ``nodes``' moving ops (forward ops of a chain), with what they receive."""
    from irlint.accounts.recompute_comm import asked_by

    out = Rerun()
    for k in nodes:
        if ir[k]["op"] not in MOVING_OPS:
            continue
        copies = ir.copy_of(k)
        for c in copies:
            out.copies.append((c, received_bytes(ir, c) or 0))
        if copies:
            key, via = asked_by(ir, k)
            if via in _CAUSES:
                if via not in out.causes:
                    out.causes.append(via)
            elif via != "cell" and key not in out.keys:
                out.keys.append(key)
    return out


def is_copy(ir: IRFile, nodes: list[int]) -> bool:
    """A chain whose moving ops are all recompute copies: the forward chain's finding prices it."""
    moving = [k for k in nodes if ir[k]["op"] in MOVING_OPS]
    return bool(moving) and all(ir.is_recompute_copy(k) for k in moving)


def kept_type(ir: IRFile, nodes: list[int]) -> TensorType | None:
    """What the chain hands on when every reader is in backward (a weight-gradient MatMul, which has
    no strategy): the output type of its last op whose output leaves the chain, else None."""
    inside = set(nodes)
    for k in sorted(nodes, key=lambda k: ir[k].get("line", 0), reverse=True):
        out: TensorType | None = ir[k].get("out_type")
        if out is not None and any(u not in inside for u in ir.consumers(k)):
            return out
    return None
