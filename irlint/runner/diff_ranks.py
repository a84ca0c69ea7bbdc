"""``irlint diff``, rank by rank: the final graphs of BEFORE and AFTER matched node by node (by what survives a
recompile, never by ``%N``), and what changed on the matched ops: memory kept for backward, recompute state,
``in_strategy``, communication and compute."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field

from ..accounts.memory import cached_account
from ..findings import scope_path
from ..model import IRFile
from .discover import DumpFile

# forward ops that only pass tensors on or order effects: never listed as changed
_BOOKKEEPING = frozenset({"Load", "UpdateState", "MakeTuple", "Depend", "TupleGetItem", "call", "Return"})
UNMATCHED_LISTED = 20
# a hash in the instance names parallel passes give the ops they insert
# ("redistribution_op_910280660132420711AllGather_"): it changes from compile to compile
HASH = re.compile(r"\d{6,}")  # unmatched nodes named per side (the counts are always whole)


# --- node identity across recompiles -------------------------------------------------------------


def node_key(ir: IRFile, key: int) -> tuple:
    """What identifies a CNode across two compiles of the same model: forward / backward /
    recomputed copy, the scope path (without the ``recompute_`` prefix ``Cell.recompute()`` adds
    and the per-dump ``-opN`` suffix), the op and the primitive's instance name."""
    d = ir[key]
    role = "copy" if ir.is_recompute_copy(key) else "backward" if ir.is_backward(key) else "forward"
    scope = d.get("scope", "").removeprefix("recompute_")
    return (role, scope_path(scope), d.get("op", ""), HASH.sub("#", d.get("instance") or ""))


def _uid(ir: IRFile, key: int) -> str | None:
    primal = ir[key].get("primal_attrs") or {}
    uid = primal.get("unique_id", primal.get("forward_unique_id"))
    return None if uid is None else f"{'b' if 'forward_unique_id' in primal else 'f'}{uid}"


@dataclass
class NodeMatch:
    pairs: list[tuple[int, int]] = field(default_factory=list)
    before_only: list[int] = field(default_factory=list)
    after_only: list[int] = field(default_factory=list)
    # whether unique_id / forward_unique_id were stable between the two dumps (then used first)
    unique_ids_stable: bool = False
    by_unique_id: int = 0


def match_nodes(before: IRFile, after: IRFile) -> NodeMatch:
    """Pair the CNodes of two dumps. Within each group of equal ``node_key``: first by
    ``unique_id`` / ``forward_unique_id`` when those are stable between the dumps (every id both
    dumps use names nodes of the same key: a re-dump, or a change that did not renumber), then
    by position among the equals (dump order). What is left is unmatched."""
    groups: dict[tuple, tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
    for side, ir in ((0, before), (1, after)):
        for k in sorted(ir.cnodes(), key=lambda k: (ir[k].get("line", 0), k)):
            groups[node_key(ir, k)][side].append(k)
    # a forward_unique_id names the forward op: several backward nodes share it (dx and dw)
    keys_of_uid: list[dict[str, set]] = [defaultdict(set), defaultdict(set)]
    for side, ir in ((0, before), (1, after)):
        for key, members in groups.items():
            for k in members[side]:
                uid = _uid(ir, k)
                if uid is not None:
                    keys_of_uid[side][uid].add(key)
    shared = keys_of_uid[0].keys() & keys_of_uid[1].keys()
    out = NodeMatch(unique_ids_stable=bool(shared) and all(keys_of_uid[0][u] == keys_of_uid[1][u] for u in shared))
    for _key, (olds, news) in groups.items():
        olds, news = list(olds), list(news)
        if out.unique_ids_stable:
            by_uid: dict[str | None, list[int]] = defaultdict(list)
            for k in news:
                by_uid[_uid(after, k)].append(k)
            for k in list(olds):
                uid = _uid(before, k)
                partners = by_uid.get(uid) if uid is not None else None
                if partners:
                    partner = partners.pop(0)  # equals with one id: in dump order
                    out.pairs.append((k, partner))
                    out.by_unique_id += 1
                    olds.remove(k)
                    news.remove(partner)
        out.pairs.extend(zip(olds, news))
        out.before_only.extend(olds[len(news) :])
        out.after_only.extend(news[len(olds) :])
    out.pairs.sort(key=lambda p: before[p[0]].get("line", 0))
    out.before_only.sort(key=lambda k: before[k].get("line", 0))
    out.after_only.sort(key=lambda k: after[k].get("line", 0))
    return out


# --- what changed on a matched op ----------------------------------------------------------------


def recompute_state(ir: IRFile, key: int) -> dict:
    """requested (how: select, cell, one-op-cell; None: not asked), applied (a recomputed copy
    exists), kept (the ``irlint memory`` account keeps its output for backward, with its bytes;
    a view such as a Reshape shares its source's tensor and is never kept itself)."""
    from ..accounts.memory import bytes_at_stake, kept_output
    from ..rules.recompute.evidence import RecomputeFacts

    facts = RecomputeFacts.of(ir)
    kept = kept_output(ir, key)
    return {
        "requested": facts.request(key),
        "applied": facts.applied(key),
        "kept": kept,
        "kept_bytes": bytes_at_stake(ir, key) if kept else 0,
    }


def in_strategy(ir: IRFile, key: int) -> str | None:
    """The ``in_strategy`` as the dump prints it (2.10 also prints it after the primal attrs)."""
    from ..read.values import dump_notation

    d = ir[key]
    found = (d.get("primitive_attrs") or {}).get("in_strategy")
    if found is None:
        found = (d.get("parallel_info") or {}).get("in_strategy")
    return None if found is None else dump_notation(found)


def _node_ref(ir: IRFile, key: int) -> dict:
    d = ir[key]
    return {
        "node": d.get("id", ""),
        "op": d.get("op", ""),
        "instance": d.get("instance") or "",
        "role": node_key(ir, key)[0],
        "scope": d.get("scope", ""),
        "line": d.get("line", 0),
    }


def communication_change(before: IRFile, after: IRFile) -> dict:
    """Bytes each collective kind receives per rank and step, before -> after (the ``irlint comm``
    account), with the share the redistribution findings name as waste."""
    from ..accounts.comm import account
    from ..accounts.recompute_comm import by_key

    accounts = {"before": account(before), "after": account(after)}
    kinds: dict[str, dict] = {}
    for side, acc in accounts.items():
        for kind, row in acc.by_kind().items():
            entry = kinds.setdefault(
                kind,
                {
                    "kind": kind,
                    "before": 0,
                    "after": 0,
                    "waste_before": 0,
                    "waste_after": 0,
                    "ops_before": 0,
                    "ops_after": 0,
                },
            )
            entry[side] = row["forward_bytes"] + row["backward_bytes"]
            entry[f"waste_{side}"] = row["waste_bytes"]
            entry[f"ops_{side}"] = row["ops"]
    # communication a recompute key runs again in backward, per key
    keys: dict[tuple[str, str], dict] = {}
    for side, acc in accounts.items():
        for rerun in by_key([c.rerun for c in acc.collectives if c.rerun is not None]):
            entry = keys.setdefault(
                (rerun["key"], rerun["via"]),
                {"key": rerun["key"], "via": rerun["via"], "before": 0, "after": 0, "ops_before": 0, "ops_after": 0},
            )
            entry[side] = rerun["received_bytes"]
            entry[f"ops_{side}"] = rerun["ops"]
    return {
        "before_total": accounts["before"].received_bytes,
        "after_total": accounts["after"].received_bytes,
        "waste_before": accounts["before"].waste_bytes,
        "waste_after": accounts["after"].waste_bytes,
        "kinds": list(kinds.values()),
        "recompute_before": accounts["before"].recompute_bytes,
        "recompute_after": accounts["after"].recompute_bytes,
        "recompute_keys": sorted(keys.values(), key=lambda k: (-max(k["before"], k["after"]), k["key"])),
    }


@dataclass
class RankDiff:
    """The final graphs of one rank (or of the two files named) compared."""

    rank: int | None
    before: DumpFile
    after: DumpFile
    stages: dict
    nodes: dict
    memory: dict
    recompute: list[dict]
    strategies: list[dict]
    communication: dict = field(default_factory=dict)
    compute: dict = field(default_factory=dict)  # FLOPs and recompute overhead (irlint cost)

    def to_dict(self) -> dict:
        return {
            "rank": self.rank,
            "before": {"file": self.before.display, "stage": self.before.stage.label},
            "after": {"file": self.after.display, "stage": self.after.stage.label},
            "stages": self.stages,
            "nodes": self.nodes,
            "memory": self.memory,
            "recompute_changed": self.recompute,
            "in_strategy_changed": self.strategies,
            "communication": self.communication,
            "compute": self.compute,
        }


def compare_files(
    before_file: DumpFile, before: IRFile, after_file: DumpFile, after: IRFile, stages: dict, rank: int | None
) -> RankDiff:
    match = match_nodes(before, after)
    mem_before, mem_after = cached_account(before), cached_account(after)
    rows: dict[str, dict] = {}
    for side, report in (("before", mem_before), ("after", mem_after)):
        for layer in report.layers():
            row = rows.setdefault(
                layer.layer, {"layer": layer.layer, "before": 0, "after": 0, "tensors_before": 0, "tensors_after": 0}
            )
            row[side] = layer.kept_bytes
            row[f"tensors_{side}"] = layer.tensors
    order = [r.layer for r in mem_before.layers()] + [r.layer for r in mem_after.layers()]
    layers = sorted(
        rows.values(),
        key=lambda r: (
            r["layer"] == "outside",
            int(r["layer"]) if r["layer"].isdigit() else 0,
            order.index(r["layer"]),
        ),
    )
    recompute, strategies = [], []
    for b, a in match.pairs:
        if before[b]["op"] in _BOOKKEEPING or node_key(before, b)[0] != "forward":
            continue
        was, now = recompute_state(before, b), recompute_state(after, a)
        if was != now:
            recompute.append(
                {**_node_ref(after, a), "before_line": before[b].get("line", 0), "before": was, "after": now}
            )
        s_was, s_now = in_strategy(before, b), in_strategy(after, a)
        if s_was != s_now:
            strategies.append(
                {**_node_ref(after, a), "before_line": before[b].get("line", 0), "before": s_was, "after": s_now}
            )
    nodes = {
        "matched": len(match.pairs),
        "matched_by_unique_id": match.by_unique_id,
        "unique_ids_stable": match.unique_ids_stable,
        "before_only": len(match.before_only),
        "after_only": len(match.after_only),
        "before_only_nodes": [_node_ref(before, k) for k in match.before_only[:UNMATCHED_LISTED]],
        "after_only_nodes": [_node_ref(after, k) for k in match.after_only[:UNMATCHED_LISTED]],
    }
    memory = {
        "before_total": mem_before.total_kept_bytes,
        "after_total": mem_after.total_kept_bytes,
        # at the pipeline stage's peak (each chunk's micro batches in flight then): the unit of the
        # findings' bytes_at_stake; the totals without a pipeline
        "before_peak": mem_before.peak_kept_bytes,
        "after_peak": mem_after.peak_kept_bytes,
        "layers": layers,
    }
    from ..accounts.compute import change as compute_change

    return RankDiff(
        rank,
        before_file,
        after_file,
        stages,
        nodes,
        memory,
        recompute,
        strategies,
        communication_change(before, after),
        compute_change(before, after),
    )
