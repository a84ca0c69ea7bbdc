"""The lines the ``memory`` and ``comm`` reports say alike in text and in HTML: each report's
headline (the device that keeps the most, the share of redistribution waste), the rule columns of
the memory table, and the notes under it."""

from __future__ import annotations

from ..units import human_bytes

AT_STAKE_NOTE = (
    "At stake: the kept bytes the findings of a default lint of the same file are about, by rule "
    "(what the fix they name would free; `irlint` on the same path lists them)."
)
AT_STAKE_PIPELINE_NOTE = (
    "In a pipeline stage the at-stake figures are at the stage's peak, as the peak row: a layer's bytes per "
    "micro batch times its chunk's micro batches in flight then; they add up to what the fixes take off the peak."
)


def largest_device(entries: list[dict]) -> dict | None:
    """The file (a rank, a pipeline stage: one device) that keeps the most at its peak: the
    headline figure. A sum over files would name bytes no device holds."""
    return max(entries, key=lambda e: e["peak_kept_bytes"], default=None)


def memory_headline(entries: list[dict]) -> str:
    """``Largest device: 76.6 KiB kept for backward at its peak (rank 0, 2 of 4 micro batches in
    flight)``, for the text and HTML reports."""
    e = largest_device(entries)
    if e is None:
        return ""
    where = f"rank {e['rank']}" if e["rank"] is not None else e["file"]
    flight = (
        f", {e['micro_batches_in_flight']} of {e['micro_batches']} micro batches in flight"
        if e["micro_batches"] > 1
        else ""
    )
    if len(entries) == 1:  # the file is named on the next line
        return (
            f"Kept for backward: {human_bytes(e['peak_kept_bytes'])}"
            + (" at its peak" if flight else "")
            + (f" ({flight[2:]})" if flight else "")
        )
    return (
        f"Largest device: {human_bytes(e['peak_kept_bytes'])} kept for backward"
        + (" at its peak" if flight else "")
        + f" ({where}{flight})"
    )


def rule_codes(entries: list[dict]) -> list[str]:
    """The rules whose findings are about some kept bytes of these files: one column each."""
    return sorted({code for e in entries for code in e.get("at_stake_bytes", {})})


def comm_headline(entries: list[dict]) -> str:
    """The share of the busiest device's communication that the PC findings name as waste
    (``Redistribution waste: 36.0 KiB of 54.0 KiB received per rank and step (67%), rank 0``)."""
    e = max(entries, key=lambda e: e["received_bytes"] or 0)
    total, waste = e["received_bytes"] or 0, e["waste_bytes"] or 0
    share = f" ({waste / total:.0%})" if total else ""
    where = (f", rank {e['rank']}" if e["rank"] is not None else "") if len(entries) > 1 else ""
    return (
        f"Redistribution waste: {human_bytes(waste)} of {human_bytes(total)} received per rank and step{share}{where}"
    )
