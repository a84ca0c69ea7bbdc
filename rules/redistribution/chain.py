"""What a redistribution chain is, for the PC rules: the ops tensor redistribution inserts (and the
ones it never counts), the record of one chain (``Chain``) and of the bytes it moves for nothing
(``Waste``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from irlint.findings import NO_FIXES, CommWaste, Finding, Fixes
from irlint.model import IRFile
from irlint.model.ops import ALLTOALL_OPS, FLAGGED_MATMUL_OPS, GATHER_OPS
from irlint.read.values import TensorType

if TYPE_CHECKING:
    from irlint.rule import Rule

COMM_OPS = GATHER_OPS | ALLTOALL_OPS | {"ReduceScatter"}
SLICE_OPS = frozenset({"StridedSlice", "Slice"})
# local ops tensor redistribution inserts around the communication
LOCAL_OPS = frozenset({"Split", "Concat", "Reshape", "Transpose", "TupleGetItem", "MakeTuple"}) | SLICE_OPS
CHAIN_OPS = COMM_OPS | LOCAL_OPS
MOVING_OPS = COMM_OPS | {"AllReduce"}  # what the byte counts cover
# forward collectives that complete partial sums (row-parallel MatMul, sequence-parallel
# out_strategy): the parallel scheme, whatever instance name they carry
SCHEME_REDUCE_OPS = frozenset({"ReduceScatter", "AllReduce"})
# ops that hand a weight through unchanged on its way to a consumer
WEIGHT_PATH_OPS = frozenset({"Load", "Depend", "_MirrorOperator", "_MirrorMiniStepOperator", "_VirtualDiv", "Cast"})
QUIET_IN_RELATED = frozenset({"TupleGetItem", "MakeTuple"})


class Waste(NamedTuple):
    """Bytes a redistribution chain moves for nothing, and why."""

    kind: str
    nodes: tuple[int, ...]
    text: str
    alltoall_bytes: int | None = None  # what one AlltoAll would receive for the same re-layout


@dataclass
class Chain:
    """A run of redistribution ops from a producer to its consumers."""

    nodes: list[int]  # redistribution ops in dump order
    producer: int | None = None
    consumers: list[tuple[int, int]] = field(default_factory=list)  # (consumer, argument position)
    entry: TensorType | None = None
    exit: TensorType | None = None
    moved: int = 0
    wastes: list[Waste] = field(default_factory=list)
    hint: str | None = None  # set where the fix is not a change of in_strategy
    # scheme collectives between the producer and the run (a sequence-parallel ReduceScatter, the
    # AllReduce of a row-parallel MatMul): the configuration needs them, they are never waste
    scheme: list[int] = field(default_factory=list)
    # bytes of each wasteful collective that the right scheme op would still move (a ReduceScatter
    # in place of an AllReduce whose result is sliced)
    kept_by_scheme: int = 0

    @property
    def source(self) -> int:
        """The producer, for chains discovery gave one (every chain a finding is built from)."""
        if self.producer is None:
            raise ValueError(f"redistribution chain {self.nodes} has no producer")
        return self.producer

    @property
    def entry_shape(self) -> tuple[Any, ...]:
        return (self.entry.shape or ()) if self.entry is not None else ()

    @property
    def exit_shape(self) -> tuple[Any, ...]:
        return (self.exit.shape or ()) if self.exit is not None else ()

    def span(self, ir: IRFile) -> list[int]:
        """The wasteful part of the run: from the first op a waste names to the last, in order."""
        named = {k for w in self.wastes for k in w.nodes}
        at = [i for i, k in enumerate(self.nodes) if k in named]
        return self.nodes[min(at) : max(at) + 1] if at else []


MATMUL_OPS = FLAGGED_MATMUL_OPS  # the model's vocabulary: read by their transpose flags
# every input of the same rank is read in the output's layout
ELEMENTWISE_OPS = frozenset(
    {
        "Mul",
        "Add",
        "Sub",
        "RealDiv",
        "Div",
        "Maximum",
        "Minimum",
        "Pow",
        "SiLU",
        "ReLU",
        "GeLU",
        "FastGeLU",
        "Sigmoid",
        "Tanh",
        "Exp",
        "Neg",
        "Square",
        "Sqrt",
        "Rsqrt",
        "Cast",
        "Erf",
        "Log",
        "Abs",
        "AddN",
        "SquaredDifference",
        "LeakyReLU",
        "Swish",
    }
)
# ops without a strategy that hand their input's layout on (a forward_op AllReduce completes a
# row-parallel MatMul's partial sums; the layout is the MatMul's)
LAYOUT_KEEPING_OPS = frozenset({"AllReduce", "Cast", "Depend", "Load", "_VirtualDiv", "RealDiv", "TupleGetItem"})


def waste_finding(
    rule: Rule,
    ir: IRFile,
    anchor: int,
    message: str,
    facts: dict[str, Any],
    waste: CommWaste,
    fixes: Fixes = NO_FIXES,
    **fields: Any,
) -> Finding:
    """A redistribution finding about ``waste`` (its bytes per collective in ``fields["wasted"]``),
    with the shard() lines of its op fix to paste when that is an in_strategy."""
    from irlint.rule import strategy_snippet

    found = rule.finding(ir, anchor, message, facts=facts, waste=waste, fixes=fixes, **fields)
    return found.with_(snippet=strategy_snippet(found.related, fixes.ops[0] if fixes.ops else None))
