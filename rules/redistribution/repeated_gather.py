"""The PC001 finding of one producer output gathered more than once by identical gathers, one per
consumer."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from irlint.accounts.received import GATHER_OPS, received_bytes, step_received_bytes, waste_entry
from irlint.findings import CommWaste, Finding, WastedBytes, scope_path
from irlint.model import IRFile
from irlint.rule import Rule
from irlint.units import human_share

from .chain import Chain, waste_finding
from .discovery import end_note
from .fix_search import hint_for
from .layouts import strategy
from .steps import step_text
from .wording import fmt, note, size, who


def repeated_gathers(rule: Rule, ir: IRFile, chains: list[Chain]) -> Iterator[Finding]:
    """Identical gathers of one producer output, one per consumer."""
    groups: dict[tuple[Any, ...], list[Chain]] = {}
    for chain in chains:
        first = chain.nodes[0]
        data = ir[first]
        if data["op"] not in GATHER_OPS:
            continue
        attrs = data.get("primitive_attrs") or {}
        sig = (
            ir.producers(first)[:1][0] if ir.producers(first) else None,
            data["op"],
            attrs.get("group"),
            attrs.get("rank_size"),
            str(data.get("out_type")),
        )
        groups.setdefault(sig, []).append(chain)
    for (producer_key, op, _group, ranks, _out), same in groups.items():
        if len(same) < 2 or producer_key is None:
            continue
        gathers = [c.nodes[0] for c in same]
        moved = sum(received_bytes(ir, g) or 0 for g in gathers[1:])
        if not moved:
            # step_parallel_end prints one gather per consumer before CSE merges them, with
            # global shapes and no output type: nothing is received twice at run time
            continue
        consumers = [c for ch in same for c, _ in ch.consumers]
        # the group's size, not its name: names differ from rank to rank
        message = (
            f"{who(ir, same[0].producer)} output {ir[gathers[0]].get('in_types', ('?',))[0]} is gathered "
            f"{len(gathers)} times by identical {op}s (group of {ranks or '?'}), once for each of "
            f"{', '.join(who(ir, c) for c in consumers)}; {size(moved)} received again"
        )
        reader = same[0].consumers[0] if same[0].consumers else (None, 0)
        hint = "one gather would serve every consumer; better, let them read the producer's layout: " + hint_for(
            ir, same[0].source, reader[0], reader[1]
        )
        related = [end_note(ir, same[0].source, "producer")]
        related += [note(ir, g, step_text(ir, g, costs=True)) for g in gathers[1:]]
        related += [end_note(ir, c, "consumer") for c in consumers]
        identity = (
            "repeated-gather",
            op,
            scope_path(ir[same[0].source].get("scope", "")),
            tuple(sorted(scope_path(ir[c].get("scope", "")) for c in consumers)),
        )
        total = step_received_bytes(ir)
        message += f"; {human_share(moved, total)} of the {size(total)} this step's collectives receive per rank"
        facts: dict[str, Any] = {
            "kinds": ["repeated-gather"],
            "gathers": len(gathers),
            "surviving_bytes": ir[gathers[0]]["out_type"].nbytes if ir[gathers[0]].get("out_type") else None,
            "producer_strategy": fmt(strategy(ir, same[0].producer)),
        }
        yield waste_finding(
            rule,
            ir,
            gathers[1],
            message,
            facts,
            CommWaste(bytes=moved, step_received=total, moved=moved),
            wasted=[WastedBytes(**waste_entry(ir, g, received_bytes(ir, g) or 0)) for g in gathers[1:]],
            hint=hint,
            related=related,
            identity=identity,
            cause=f"one output gathered {len(gathers)} times by identical {op}s",
            fix="one gather for every consumer",
            waste_kinds=["repeated-gather"],
        )
