"""Findings and diagnostics as plain JSON values and back (the cache's entries), checked on the way back: a value of
the wrong shape raises ValueError. The file an entry is about is stored as a placeholder, so a finding read back
names the file by whatever it is called in this run."""

from __future__ import annotations

from typing import Any, TypeGuard

from .diagnostics import Diagnostic
from .findings import (
    ChainStep,
    CommWaste,
    Finding,
    FixCost,
    Fixes,
    NoKeyOp,
    OpFix,
    OpFlops,
    PipelineFix,
    RecomputeFix,
    Related,
    RootCauseFix,
    RootFix,
    SourceLine,
    Stake,
    WastedBytes,
)

# Finding fields that are tuples of arbitrary plain values (identity, extra) keep their types: a
# tuple is {"t": [...]}, a dict {"d": {...}}, so a finding read back has the same fingerprint.
_HERE = ""  # stands for the file the entry is about, whatever it is called in this run


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise TypeError("not a finite number")
        return value
    if isinstance(value, tuple):
        return {"t": [_plain(v) for v in value]}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"d": {k: _plain(v) for k, v in value.items()}}
    raise TypeError(f"{type(value).__name__} is not a plain value")


def _unplain(value: Any) -> Any:
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, list):
        return [_unplain(v) for v in value]
    if isinstance(value, dict) and len(value) == 1:
        if isinstance(value.get("t"), list):
            return tuple(_unplain(v) for v in value["t"])
        if isinstance(value.get("d"), dict):
            return {k: _unplain(v) for k, v in value["d"].items()}
    raise ValueError("not a cache value")


# --- a finding's typed facts as the JSON contract's ``extra`` (every output's one writer) and back


def extra_data(f: Finding) -> dict[str, Any]:
    """The finding's facts under the contract's ``extra`` key, by key: its rule's own (``facts``)
    and its typed fixes, waste and stake, named as the contract names them."""
    out: dict[str, Any] = dict(f.facts)
    fixes = f.fixes
    if fixes.recompute is not None:
        rc = fixes.recompute
        out.update(select_recompute=list(rc.keys), layer=rc.layer, stage_layers=list(rc.stage_layers))
        if rc.no_key:
            out["no_key"] = [{"node": o.node, "op": o.op, "source": o.source} for o in rc.no_key]
        if rc.replaces:
            out["replaces_select_recompute"] = list(rc.replaces)
        if rc.applied:
            out["applied_select_recompute"] = list(rc.applied)
    if fixes.context:
        out["fix"] = {"set_auto_parallel_context": fixes.context}
    elif fixes.ops:
        out["fix"] = op_fix_data(fixes.ops[0])
        if len(fixes.ops) > 1:
            out["also_fix"] = [op_fix_data(o) for o in fixes.ops[1:]]
    if fixes.root_cause is not None:
        rc_ = fixes.root_cause
        out["root_cause"] = {"kind": rc_.kind, "why": rc_.why, "fix": root_fix_data(rc_.fix)}
    if fixes.drop_select_recompute:
        out["drop_select_recompute"] = list(fixes.drop_select_recompute)
    if fixes.pipeline is not None:
        out["pipeline"] = fixes.pipeline.data()
    if f.waste is not None:
        w = f.waste
        out["waste_bytes"] = w.bytes
        if w.step_received is not None:
            out["step_received_bytes"] = w.step_received
        if w.moved is not None:
            out["moved_bytes"] = w.moved
        if w.backward_moved is not None:
            out["backward_moved_bytes"] = w.backward_moved
        if w.received:
            out["cost_kind"] = "received"
        if w.steps is not None:
            out["steps"] = [
                {"node": s.node, "op": s.op, "in": s.in_type, "out": s.out_type, "moved_bytes": s.moved_bytes}
                for s in w.steps
            ]
        out["waste"] = [{"graph": x.graph, "node": x.node, "op": x.op, "bytes": x.bytes} for x in f.wasted]
    if f.stake is not None:
        out.update(bytes_at_stake_total=f.stake.total, layers_with_problem=f.stake.layers)
        if f.stake.micro_batches > 1:
            out.update(
                micro_batches=f.stake.micro_batches,
                micro_batches_in_flight=f.stake.in_flight,
                bytes_at_stake_per_micro_batch=f.stake.per_micro_batch,
            )
    if f.fix_cost is not None:
        c = f.fix_cost
        out["fix_cost"] = {
            "flops": c.flops,
            "matrix_flops": c.matrix_flops,
            "elementwise_flops": c.elementwise_flops,
            "step_flops": c.step_flops,
            "step_share": c.step_share,
            "ops": [{"node": o.node, "op": o.op, "graph": o.graph, "flops": o.flops} for o in c.ops],
        }
    return dict(sorted(out.items()))


def source_data(src: SourceLine) -> dict[str, Any]:
    return {"path": src.path, "line": src.line}


def op_fix_data(fix: OpFix) -> dict[str, Any]:
    """An op change as the contract's ``fix`` holds it."""
    out: dict[str, Any] = {"node": fix.node}
    if fix.device_matrix:
        out["device_matrix"] = fix.device_matrix
    if fix.in_strategy:
        out["in_strategy"] = fix.in_strategy
    if fix.in_layout:
        out["in_layout"] = fix.in_layout
    if fix.source is not None:
        out["source"] = source_data(fix.source)
    return out


def root_fix_data(fix: RootFix) -> dict[str, Any]:
    """A root cause's fix as the contract's ``root_cause.fix`` holds it."""
    if fix.batch_size is not None:
        return {
            "runner_config.batch_size": fix.batch_size,
            "sequences_per_replica": fix.sequences_per_replica,
            "keep_global_batch_with": list(fix.keep_global_batch_with),
        }
    out: dict[str, Any] = {"cell": fix.cell}
    if fix.device_matrix:
        out.update(
            op=fix.op,
            node=fix.node,
            in_strategy=fix.in_strategy,
            keeps_tuple=fix.keeps_tuple,
            device_matrix=fix.device_matrix,
        )
        if fix.source is not None:
            out["source"] = source_data(fix.source)
    if fix.config:
        out["config"] = fix.config
    if fix.layout:
        out["layout"] = fix.layout
    return out


def typed_facts(extra: dict[str, Any]) -> dict[str, Any]:
    """``extra_data``'s inverse: the Finding fields (``facts``, ``fixes``, ``waste``, ``stake``,
    ``fix_cost``) an ``extra`` holds. Raises ValueError on a value of the wrong shape."""
    try:
        return _typed_facts(dict(extra))
    except (KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"extra: {e}") from None


def _source(value: Any) -> SourceLine | None:
    return None if value is None else SourceLine(str(value["path"]), _int_value(value["line"]))


def _int_value(value: Any) -> int:
    if not _is_int(value):
        raise TypeError("not an integer")
    return int(value)


def _op_fix(d: dict[str, Any]) -> OpFix:
    return OpFix(
        node=str(d["node"]),
        in_strategy=str(d.get("in_strategy", "")),
        device_matrix=str(d.get("device_matrix", "")),
        in_layout=str(d.get("in_layout", "")),
        source=_source(d.get("source")),
    )


def _root_fix(d: dict[str, Any]) -> RootFix:
    if "runner_config.batch_size" in d:
        return RootFix(
            batch_size=_int_value(d["runner_config.batch_size"]),
            sequences_per_replica=d["sequences_per_replica"],
            keep_global_batch_with=tuple(str(x) for x in d["keep_global_batch_with"]),
        )
    return RootFix(
        cell=str(d["cell"]),
        op=str(d.get("op", "")),
        node=str(d.get("node", "")),
        in_strategy=str(d.get("in_strategy", "")),
        keeps_tuple=bool(d.get("keeps_tuple", False)),
        device_matrix=str(d.get("device_matrix", "")),
        source=_source(d.get("source")),
        config=str(d.get("config", "")),
        layout=str(d.get("layout", "")),
    )


def _typed_facts(d: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    recompute = None
    if "select_recompute" in d:
        recompute = RecomputeFix(
            keys=tuple(str(k) for k in d.pop("select_recompute")),
            layer=d.pop("layer"),
            stage_layers=tuple(_int_value(x) for x in d.pop("stage_layers")),
            no_key=tuple(NoKeyOp(str(o["node"]), str(o["op"]), str(o["source"])) for o in d.pop("no_key", ())),
            replaces=tuple(str(k) for k in d.pop("replaces_select_recompute", ())),
            applied=tuple(str(k) for k in d.pop("applied_select_recompute", ())),
        )
    context = ""
    ops: tuple[OpFix, ...] = ()
    fix = d.pop("fix", None)
    if isinstance(fix, dict) and "set_auto_parallel_context" in fix:
        context = str(fix["set_auto_parallel_context"])
    elif fix is not None:
        ops = (_op_fix(fix), *(_op_fix(x) for x in d.pop("also_fix", ())))
    cause = d.pop("root_cause", None)
    root = None if cause is None else RootCauseFix(str(cause["kind"]), str(cause["why"]), _root_fix(cause["fix"]))
    drop = tuple(str(k) for k in d.pop("drop_select_recompute", ()))
    plan = d.pop("pipeline", None)
    out["fixes"] = Fixes(recompute, ops, context, root, drop, None if plan is None else PipelineFix.of(plan))
    if "waste_bytes" in d:
        steps = d.pop("steps", None)
        received = d.get("cost_kind") == "received"
        if received:
            del d["cost_kind"]
        d.pop("waste", None)  # the finding's ``wasted``
        out["waste"] = CommWaste(
            bytes=_int_value(d.pop("waste_bytes")),
            step_received=d.pop("step_received_bytes", None),
            moved=d.pop("moved_bytes", None),
            backward_moved=d.pop("backward_moved_bytes", None),
            received=received,
            steps=None
            if steps is None
            else tuple(
                ChainStep(str(s["node"]), str(s["op"]), str(s["in"]), str(s["out"]), _int_value(s["moved_bytes"]))
                for s in steps
            ),
        )
    if "bytes_at_stake_total" in d:
        many = "micro_batches" in d
        out["stake"] = Stake(
            total=_int_value(d.pop("bytes_at_stake_total")),
            layers=_int_value(d.pop("layers_with_problem")),
            micro_batches=_int_value(d.pop("micro_batches")) if many else 1,
            in_flight=_int_value(d.pop("micro_batches_in_flight")) if many else 1,
            per_micro_batch=_int_value(d.pop("bytes_at_stake_per_micro_batch")) if many else 0,
        )
    cost = d.pop("fix_cost", None)
    if cost is not None:
        out["fix_cost"] = FixCost(
            flops=cost["flops"],
            matrix_flops=cost["matrix_flops"],
            elementwise_flops=cost["elementwise_flops"],
            step_flops=cost["step_flops"],
            step_share=cost["step_share"],
            ops=tuple(OpFlops(str(o["node"]), str(o["op"]), str(o["graph"]), o["flops"]) for o in cost["ops"]),
        )
    out["facts"] = tuple(sorted(d.items()))
    return out


_FINDING_TEXT = (
    "code",
    "rule",
    "severity",
    "graph",
    "node",
    "op",
    "scope",
    "message",
    "hint",
    "stage",
    "layer",
    "model_path",
    "model",
    "cause",
    "fix",
    "snippet",
)
_RELATED_TEXT = ("node", "op", "scope", "graph", "note")


def _file_data(name: str, display: str) -> str:
    return _HERE if name == display else name


def _file_name(stored: object, display: str) -> str:
    if not isinstance(stored, str):
        raise ValueError("file")
    return display if stored == _HERE else stored


def finding_data(f: Finding, display: str) -> dict[str, Any]:
    data = {k: getattr(f, k) for k in _FINDING_TEXT}
    data.update(
        file=_file_data(f.file, display),
        line=f.line,
        column=f.column,
        ranks=list(f.ranks),
        bytes_at_stake=f.bytes_at_stake,
        source=list(f.source) if f.source else None,
        identity=_plain(f.identity),
        extra=_plain(extra_data(f)),
        waste_kinds=list(f.waste_kinds),
        wasted=[[w.graph, w.node, w.op, w.bytes] for w in f.wasted],
        related=[
            {**{k: getattr(r, k) for k in _RELATED_TEXT}, "file": _file_data(r.file, display), "line": r.line}
            for r in f.related
        ],
    )
    for k in _FINDING_TEXT:
        if not isinstance(data[k], str):
            raise TypeError(k)
    return data


def finding_from_data(data: object, display: str) -> Finding:
    if not isinstance(data, dict):
        raise ValueError("finding")
    identity, extra = _unplain(data["identity"]), _unplain(data["extra"])
    if isinstance(extra, tuple):  # written by a version before the typed facts: ((key, value), ...)
        extra = dict(extra)
    ranks = as_list(data["ranks"])
    stake = data.get("bytes_at_stake")
    source = data.get("source")
    if source is not None:
        if not (isinstance(source, list) and len(source) == 2 and isinstance(source[0], str) and _is_int(source[1])):
            raise ValueError("finding")
        source = (source[0], source[1])
    if not (
        isinstance(identity, tuple)
        and isinstance(extra, dict)
        and all(_is_int(r) for r in ranks)
        and (stake is None or _is_int(stake))
    ):
        raise ValueError("finding")
    kinds, wasted = as_list(data["waste_kinds"]), [as_list(w) for w in as_list(data["wasted"])]
    if not (
        all(isinstance(k, str) for k in kinds)
        and all(len(w) == 4 and all(isinstance(x, str) for x in w[:3]) and _is_int(w[3]) for w in wasted)
    ):
        raise ValueError("finding")
    texts: dict[str, Any] = {k: _text(data, k) for k in _FINDING_TEXT}
    return Finding(
        **texts,
        file=_file_name(data["file"], display),
        line=_int(data, "line"),
        column=_int(data, "column"),
        ranks=tuple(ranks),
        identity=identity,
        bytes_at_stake=stake,
        source=source,
        waste_kinds=tuple(kinds),
        wasted=tuple(WastedBytes(*w) for w in wasted),
        **typed_facts(extra),
        related=tuple(_related(r, display) for r in as_list(data["related"])),
    )


def _related(data: object, display: str) -> Related:
    if not isinstance(data, dict):
        raise ValueError("related")
    return Related(
        **{k: _text(data, k) for k in _RELATED_TEXT}, file=_file_name(data["file"], display), line=_int(data, "line")
    )


def diagnostic_data(d: Diagnostic, display: str) -> dict[str, Any]:
    return {
        "file": _file_data(d.file, display),
        "line": d.line,
        "code": d.code,
        "message": d.message,
        "excerpt": d.excerpt,
    }


def diagnostic_from_data(data: object, display: str) -> Diagnostic:
    if not isinstance(data, dict):
        raise ValueError("diagnostic")
    return Diagnostic(
        _file_name(data["file"], display),
        _int(data, "line"),
        _text(data, "code"),
        _text(data, "message"),
        _text(data, "excerpt"),
    )


def as_list(value: object) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError("not a list")
    return value


def _text(data: dict[str, Any], key: str) -> str:
    value = data[key]
    if not isinstance(value, str):
        raise ValueError(key)
    return value


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _int(data: dict[str, Any], key: str) -> int:
    value = data[key]
    if not _is_int(value):
        raise ValueError(key)
    return value
