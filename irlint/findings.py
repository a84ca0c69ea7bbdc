"""Findings: what rules report, and the report a lint run returns."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from .diagnostics import Diagnostic

# the severities that fail a run (exit 1); info findings are reported and do not
FAILING_SEVERITIES = ("error", "warning")

SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True, slots=True)
class Related:
    """A node of the chain that explains a finding."""

    file: str
    line: int
    node: str
    op: str
    scope: str
    graph: str = ""
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "line": self.line,
            "node": self.node,
            "op": self.op,
            "scope": self.scope,
            "graph": self.graph,
            "note": self.note,
        }


# The kinds of redistribution waste a finding can name (``Finding.waste_kinds``): ``irlint comm``
# counts the bytes of the findings that name one as waste. CONTRIBUTING.md says how to add a kind.
WASTE_KINDS = frozenset(
    {
        "gather-then-slice",  # a gather whose result is sliced back
        "gather-resplit",  # a gather whose result is split again on another dim
        "allreduce-then-slice",  # an AllReduce whose result is sliced (a ReduceScatter would do)
        "alltoall-undone",  # an AlltoAll a later one undoes
        "split-concat-round-trip",  # a Split whose pieces a Concat puts back together
        "permutation-as-gather",  # a change of device axes paid as a gather
        "round-trip",  # a re-layout and its inverse around one op
        "alltoall-round-trip",  # the same, made of AlltoAlls
        "gather-compute-slice",  # a gather, a compute op on every rank, then a slice
        "repeated-gather",  # the same tensor gathered again
        "full-gather",  # a whole activation gathered on every rank for a column-parallel MatMul
    }
)


@dataclass(frozen=True, slots=True)
class WastedBytes:
    """Bytes one collective receives that a consistent strategy would not move."""

    graph: str
    node: str
    op: str
    bytes: int


@dataclass(frozen=True, slots=True)
class SourceLine:
    """The model line that creates an op (its file and line)."""

    path: str
    line: int


@dataclass(frozen=True, slots=True)
class NoKeyOp:
    """An op a recompute fix needs that no select_recompute key can tag, with its model line."""

    node: str
    op: str
    source: str


@dataclass(frozen=True, slots=True)
class RecomputeFix:
    """The select_recompute keys a finding needs added (as the dump names the ops), with what the
    fix plan counts them by: the finding's decoder layer and the layers of its file (a pipeline
    stage's share), and the ops no key can tag. ``replaces``: keys (as the dump names the cell) the
    added ones take the place of, which must go: a one-op cell's key, whose recompute MindSpore
    puts over the primitive's own tag (a cell's output is never recomputed)."""

    keys: tuple[str, ...]
    layer: int | None = None
    stage_layers: tuple[int, ...] = ()
    no_key: tuple[NoKeyOp, ...] = ()
    replaces: tuple[str, ...] = ()
    # keys among ``keys`` the dump shows applied already (the op carries their tag): the config has them
    applied: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class OpFix:
    """A change to one op in the model code: its new in_strategy (a shard() line), the device-axis
    order of its Layout (``device_matrix``, with the tuple it is sharded with), or its neighbour's
    Layout (``in_layout``). Only ``node``: the op whose placement is to change, the hint says how."""

    node: str
    in_strategy: str = ""
    device_matrix: str = ""
    in_layout: str = ""
    source: SourceLine | None = None


@dataclass(frozen=True, slots=True)
class RootFix:
    """What removes a root cause of re-layouts: one sequence per data-parallel replica
    (``batch_size``), or for a tuple-sharded op beside a Layout the config option that removes
    the op, the neighbours' Layout, or the device-axis order that places the blocks alike."""

    batch_size: int | None = None  # runner_config.batch_size
    sequences_per_replica: int | None = None
    keep_global_batch_with: tuple[str, ...] = ()
    cell: str = ""
    op: str = ""
    node: str = ""
    in_strategy: str = ""
    keeps_tuple: bool = False  # with device_matrix: the op keeps its tuple
    device_matrix: str = ""
    source: SourceLine | None = None
    config: str = ""  # "option: value" that removes the op
    layout: str = ""


@dataclass(frozen=True, slots=True)
class RootCauseFix:
    """A cause several chains share (rules.redistribution.root_cause): its kind, why, and fix."""

    kind: str
    why: str
    fix: RootFix


@dataclass(frozen=True, slots=True)
class PipelineFix:
    """MindFormers' pipeline ``offset`` a stage-imbalance finding plans (per stage; per chunk, then
    stage, with interleave), with each stage's peak device bytes and FLOPs per micro batch now and
    after it, in stage order: the lint's ``fix_plan.pipeline``."""

    offset: tuple[Any, ...]
    stage_peak_bytes_now: tuple[int, ...]
    stage_peak_bytes_after: tuple[int, ...]
    stage_flops_now: tuple[int, ...]
    stage_flops_after: tuple[int, ...]

    @classmethod
    def of(cls, data: dict[str, Any]) -> PipelineFix:
        """From ``fix_plan.pipeline``'s JSON form (lists)."""

        def frozen(v: Any) -> Any:
            return tuple(frozen(x) for x in v) if isinstance(v, (list, tuple)) else v

        return cls(
            offset=frozen(data["offset"]),
            stage_peak_bytes_now=tuple(int(x) for x in data["stage_peak_bytes_now"]),
            stage_peak_bytes_after=tuple(int(x) for x in data["stage_peak_bytes_after"]),
            stage_flops_now=tuple(int(x) for x in data["stage_flops_now"]),
            stage_flops_after=tuple(int(x) for x in data["stage_flops_after"]),
        )

    def data(self) -> dict[str, Any]:
        """``fix_plan.pipeline``'s JSON form."""

        def listed(v: Any) -> Any:
            return [listed(x) for x in v] if isinstance(v, tuple) else v

        return {
            "offset": listed(self.offset),
            "stage_peak_bytes_now": list(self.stage_peak_bytes_now),
            "stage_peak_bytes_after": list(self.stage_peak_bytes_after),
            "stage_flops_now": list(self.stage_flops_now),
            "stage_flops_after": list(self.stage_flops_after),
        }


@dataclass(frozen=True, slots=True)
class Fixes:
    """What resolves a finding, as the fix plan (irlint.fixplan) folds it: keys to add to
    select_recompute, op changes in the model code (the first is the finding's own, the others
    the ops to reshard with it), an auto-parallel context setting, the root cause's fix, a key to
    take out (a by-hand step: irlint fix names the user's own)."""

    recompute: RecomputeFix | None = None
    ops: tuple[OpFix, ...] = ()
    context: str = ""  # set_auto_parallel_context setting, "name=value"
    root_cause: RootCauseFix | None = None
    drop_select_recompute: tuple[str, ...] = ()
    pipeline: PipelineFix | None = None  # the layers moved between pipeline stages


NO_FIXES = Fixes()  # a finding with nothing to change


@dataclass(frozen=True, slots=True)
class ChainStep:
    """One op of a redistribution chain, with the bytes it receives per rank."""

    node: str
    op: str
    in_type: str
    out_type: str
    moved_bytes: int


@dataclass(frozen=True, slots=True)
class CommWaste:
    """Redistribution bytes a finding is about, per step and rank: ``bytes`` a consistent strategy
    would not move (or, ``received``, what the scheme costs), of the ``step_received`` the step's
    collectives receive; received forward (``moved``) and by the backward transpose, per step."""

    bytes: int
    step_received: int | None = None
    moved: int | None = None
    backward_moved: int | None = None
    received: bool = False  # the bytes are the scheme's cost, not waste
    steps: tuple[ChainStep, ...] | None = None

    @property
    def comm_bytes(self) -> int:
        """Bytes received forward and backward."""
        return (self.moved or 0) + (self.backward_moved or 0)


@dataclass(frozen=True, slots=True)
class Stake:
    """Activation bytes at stake beyond the finding's own (``Finding.bytes_at_stake``): summed over
    the ``layers`` with the same problem and, in a pipeline stage, per micro batch."""

    total: int
    layers: int
    micro_batches: int = 1
    in_flight: int = 1
    per_micro_batch: int = 0


@dataclass(frozen=True, slots=True)
class OpFlops:
    node: str
    op: str
    graph: str
    flops: int | None


@dataclass(frozen=True, slots=True)
class FixCost:
    """The FLOPs a recompute fix re-spends per step (matrix and element-wise apart), of the step's."""

    flops: int
    matrix_flops: int
    elementwise_flops: int
    step_flops: int
    step_share: float
    ops: tuple[OpFlops, ...] = ()


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem a rule found at a node of a dump."""

    code: str
    rule: str
    severity: str
    file: str
    line: int
    graph: str
    node: str
    op: str
    scope: str
    message: str
    hint: str = ""
    column: int = 1
    related: tuple[Related, ...] = ()
    stage: str = ""
    # what makes the problem the same across re-dumps: never node ids or line numbers
    identity: tuple[Any, ...] = ()
    ranks: tuple[int, ...] = ()
    # ((key, value), ...) rule-specific facts for machine formats only (the JSON writer's "extra",
    # beside the typed facts below): nothing downstream reads them
    facts: tuple[Any, ...] = ()
    bytes_at_stake: int | None = None  # activation bytes the problem keeps alive (irlint.accounts.memory)
    source: tuple[str, int] | None = None  # (path, line) of the model code that made the node (its trace)
    # the model's names for the node (irlint.model.layers): its decoder layer ("3", "outside", or
    # "" when unknown) and cell path as the weights name it ("model.layers.3.feed_forward.w2")
    layer: str = ""
    model_path: str = ""
    # the headline's parts a rule states (irlint.headline): the cause in a clause, and the fix in
    # a few words (a select_recompute key, a strategy); the message is the evidence
    cause: str = ""
    fix: str = ""
    # a finding that stands for several occurrences of one root cause (irlint.runner.group): each
    # occurrence as its own finding, this one first
    members: tuple[Finding, ...] = ()
    # redistribution waste (``irlint comm``): the kinds the finding names (WASTE_KINDS) and, per
    # collective, the bytes a consistent strategy would not move
    waste_kinds: tuple[str, ...] = ()
    wasted: tuple[WastedBytes, ...] = ()
    # the configuration that applies the fix, ready to paste (YAML, an in_strategy line); "" if none
    snippet: str = ""
    # what resolves it (the fix plan), the redistribution bytes it is about, the activation bytes
    # at stake beyond its own and what the fix re-spends in compute
    fixes: Fixes = field(default_factory=Fixes)
    waste: CommWaste | None = None
    stake: Stake | None = None
    fix_cost: FixCost | None = None
    # the model the graph compiled (its network cell's class, irlint.model.layers.network_class): in
    # the fingerprint, so a baseline of one model hides nothing of another's dump
    model: str = ""

    def __post_init__(self) -> None:
        unknown = set(self.waste_kinds) - WASTE_KINDS
        if unknown:
            raise ValueError(f"not a waste kind (irlint.findings.WASTE_KINDS): {', '.join(sorted(unknown))}")
        if self.wasted and not self.waste_kinds:
            raise ValueError("wasted bytes need the waste kind that explains them")

    @property
    def occurrences(self) -> tuple[Finding, ...]:
        """Every finding this one stands for (itself when it stands for one)."""
        return self.members or (self,)

    @property
    def layers(self) -> tuple[str, ...]:
        """The resolved layers of its occurrences, numbers first in order."""
        found = {o.layer for o in self.occurrences if o.layer}
        return tuple(sorted(found, key=lambda x: (not x.isdigit(), int(x) if x.isdigit() else 0, x)))

    @property
    def headline(self) -> str:
        from .headline import headline

        return headline(self)

    @property
    def full_message(self) -> str:
        """The headline (its first sentence), then the evidence."""
        return f"{self.headline}. {self.message}" if self.message else self.headline

    @property
    def fingerprint(self) -> str:
        import hashlib  # here: a lint groups by fingerprint_text, and loading OpenSSL's hashes is part of a start

        return hashlib.sha256(self.fingerprint_text.encode("utf-8")).hexdigest()[:20]

    @property
    def fingerprint_text(self) -> str:
        """What the fingerprint is a hash of: findings with the same text are the same problem, in
        whichever stage file the rule read it (the stage before, when the final one was cut short)."""
        # the model path where the graph told it, not the printed scope (which lazy_inline
        # shortens); class names left out (a renamed class is the same problem). The chain counts
        # by its ops: where they sit is the printed scope again, and the identity says what matters
        where = self.model_path or model_names(scope_path(self.scope))
        parts = [self.rule, self.op, where] + ([f"model={self.model}"] if self.model else [])
        parts += (
            [r.op for r in self.related]
            if self.model_path
            else [f"{r.op}@{model_names(scope_path(r.scope))}" for r in self.related]
        )
        parts += [model_names(repr(x)) for x in self.identity]
        return "\x1f".join(parts)

    @property
    def unmodelled_fingerprint(self) -> str:
        """The fingerprint as baselines of format 1 hold it: without the model."""
        import hashlib

        return hashlib.sha256(replace(self, model="").fingerprint_text.encode("utf-8")).hexdigest()[:20]

    @property
    def staged_fingerprint(self) -> str:
        """The fingerprint as the first baselines of format 1 hold it: with the stage name after the
        rule (and without the model)."""
        import hashlib

        rule, _, rest = replace(self, model="").fingerprint_text.partition("\x1f")
        return hashlib.sha256(f"{rule}\x1f{self.stage}\x1f{rest}".encode()).hexdigest()[:20]

    @property
    def problem(self) -> tuple[Any, ...]:
        """The same problem seen in several stage files of one folder: the chain around it may
        differ between stages (a backend inserts Casts), the rule, op, scope and identity do not."""
        return (self.rule, self.op, self.model_path or scope_path(self.scope), self.identity)

    def with_(self, **changes: Any) -> Finding:
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "code": self.code,
            "rule": self.rule,
            "severity": self.severity,
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "graph": self.graph,
            "node": self.node,
            "op": self.op,
            "scope": self.scope,
            "headline": self.headline,
            "message": self.full_message,
            "evidence": self.message,
            "hint": self.hint,
            "fix": self.fix,
            "fingerprint": self.fingerprint,
            "stage": self.stage,
            "layer": self.layer,
            "model_path": self.model_path,
            "related": [r.to_dict() for r in self.related],
        }
        if self.ranks:
            out["ranks"] = list(self.ranks)
        from .findings_json import extra_data  # the typed facts and the rule's own, as the contract names them

        extra = extra_data(self)
        if extra:
            out["extra"] = extra
        if self.bytes_at_stake is not None:
            out["bytes_at_stake"] = self.bytes_at_stake
        if self.source is not None:
            out["source"] = {"path": self.source[0], "line": self.source[1]}
        if self.members:
            out["layers"] = list(self.layers)
            out["occurrences"] = [o.occurrence() for o in self.members]
        if self.waste_kinds:
            out["waste_kinds"] = list(self.waste_kinds)
        if self.snippet:
            out["snippet"] = self.snippet
        return out

    def occurrence(self) -> dict[str, Any]:
        """Where one occurrence of a grouped finding is, for tools."""
        out = {
            "file": self.file,
            "line": self.line,
            "node": self.node,
            "graph": self.graph,
            "scope": self.scope,
            "layer": self.layer,
            "model_path": self.model_path,
            "fingerprint": self.fingerprint,
        }
        if self.ranks:
            out["ranks"] = list(self.ranks)
        if self.bytes_at_stake is not None:
            out["bytes_at_stake"] = self.bytes_at_stake
        return out


_CLASS = re.compile(r"([\w.]+)-[A-Za-z_][\w]*")


def model_names(text: str) -> str:
    """Scope parts without their class names (``feed_forward-FeedForward`` -> ``feed_forward``)."""
    return _CLASS.sub(r"\1", text)


def scope_path(scope: str) -> str:
    """The scope without the per-dump op suffix ("/MatMul-op12"), which renumbers between runs."""
    head, _, last = scope.rpartition("/")
    if head and "-op" in last:
        return head
    return scope


@dataclass
class Report:
    """What a lint found, in the files it checked, with the rules that ran."""

    findings: list[Finding] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    rules: list[Any] = field(default_factory=list)  # the Rule objects that ran
    notes: list[str] = field(default_factory=list)  # about the run, not the input (e.g. a cache not used)
    # findings silenced by a [[suppress]] entry: (finding, the entry's reason), counted in every format
    suppressed: list[tuple[Finding, str]] = field(default_factory=list)
    # a checked file that holds the same graph as another -> the file that was read for both
    shared: dict[str, str] = field(default_factory=dict)
    # files whose results the lint cache gave (a fact of the run, not of the input: in no report)
    cache_hits: int = 0
    # [[suppress]] entries that silenced nothing in this run (irlint.runner.config.Suppression)
    unused_suppressions: list[Any] = field(default_factory=list)

    @property
    def graphs_read(self) -> int:
        """Files checked that were read or looked up, not given another file's findings."""
        return len(self.files) - len(self.shared)

    def by_rule(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for f in self.findings:
            counts[f.code] = counts.get(f.code, 0) + 1
        return dict(sorted(counts.items()))
