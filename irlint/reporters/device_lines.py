"""The device-peak lines of ``irlint memory``'s text and HTML reports: the largest device against the budget."""

from __future__ import annotations

from ..units import human_bytes
from . import ranks_text


def largest_peak(entries: list[dict]) -> dict | None:
    """The file whose predicted device peak is the largest."""
    return max((e for e in entries if "device_peak_bytes" in e), key=lambda e: e["device_peak_bytes"], default=None)


def where(e: dict) -> str:
    rank = f"rank {e['rank']}" if e.get("rank") is not None else e["file"]
    return rank + (f", stage {e['pipeline_stage']}" if e.get("pipeline_stage") is not None else "")


def parts_text(parts: dict[str, int]) -> str:
    shown = sorted(((v, k) for k, v in parts.items() if v), reverse=True)
    return ", ".join(f"{k.replace('_', ' ')} {human_bytes(v)}" for v, k in shown)


def device_headline(entries: list[dict], budget: int | None) -> str:
    """``Device peak: 64.9 MiB on rank 0, stage 0 (of 58 GiB max_device_memory: 0.1%) ...``."""
    e = largest_peak(entries)
    if e is None:
        return ""
    against = ""
    if budget:
        share = e["device_peak_bytes"] / budget
        verdict = "over by " + human_bytes(e["device_peak_bytes"] - budget) if share > 1 else f"{share:.0%}"
        against = f" against max_device_memory {human_bytes(budget)} ({verdict})"
    return (
        f"Device peak: {human_bytes(e['device_peak_bytes'])} on {where(e)}{against}; "
        f"{parts_text(e['device_peak_parts'])} (predicted from the {e['device_peak_source']})"
    )


def device_rows(entries: list[dict]) -> list[tuple[str, str]]:
    """(devices label, one line) per distinct figure, largest first: ranks of one stage with the same
    peak and parts share a line (``ranks 0–255``), so a cluster of one graph prints one."""
    groups: dict[tuple, list[dict]] = {}
    for e in sorted(entries, key=lambda e: -e.get("device_peak_bytes", 0)):
        if "device_peak_bytes" in e:
            text = f"{human_bytes(e['device_peak_bytes'])}: {parts_text(e['device_peak_parts'])}"
            groups.setdefault((e.get("pipeline_stage"), text), []).append(e)
    rows = []
    for (stage, text), group in groups.items():
        ranks = tuple(sorted(e["rank"] for e in group if e.get("rank") is not None))
        if len(group) > 1 and len(ranks) == len(group):
            label = ranks_text(ranks) + (f", stage {stage}" if stage is not None else "")
        else:
            label = ", ".join(where(e) for e in group)
        rows.append((label, text))
    return rows


def device_lines(out, entries: list[dict], budget: int | None) -> None:
    """The headline and, for several files, one line per device, to a rich console."""
    line = device_headline(entries, budget)
    if not line:
        return
    out.print(line, soft_wrap=True)
    rows = device_rows(entries)
    if len(rows) > 1:
        for label, text in rows:
            out.print(f"  {label}: {text}", soft_wrap=True)
