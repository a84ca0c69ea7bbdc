"""The one way irlint writes a byte count (binary units), a FLOP count (decimal units) or a share for
people (text and HTML): three significant figures (``165 KiB``, ``1.21 GiB``, ``3.34 GFLOP``), a share
to a tenth of a percent (``12.5%``, ``<0.1%``). Machine formats carry the exact counts."""

from __future__ import annotations

_UNITS = ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB")


def human_bytes(n: int | float | None) -> str:
    """``n`` bytes for a person: exact under 1 KiB (``912 bytes``), else three significant figures
    of the largest binary unit it reaches (``5.50 KiB``, ``165 KiB``, ``1.21 GiB``); ``? bytes``
    when unknown. A negative count (a change) keeps its sign."""
    return _scaled(n, 1024, _UNITS)


def human_share(part: int | float, whole: int | float) -> str:
    """``part`` of ``whole`` in percent, to a tenth (``12.5%``); ``<0.1%`` for a share too small to show,
    ``0%`` for none (or no whole)."""
    if not whole or not part:
        return "0%"
    pct = 100 * part / whole
    return f"{pct:.1f}%" if pct >= 0.1 else "<0.1%"


def _scaled(n: int | float | None, base: int, units: tuple[str, ...]) -> str:
    """``n`` in the largest of ``units`` (each ``base`` times the one before) it reaches, three
    significant figures; exact below ``base``; ``?`` when unknown; the sign of a change kept."""
    if n is None:
        return f"? {units[0]}"
    sign = "-" if n < 0 else ""
    n = abs(n)
    if n < base:
        return f"{sign}{n:g} {units[0]}" if isinstance(n, float) else f"{sign}{n} {units[0]}"
    value, unit = float(n), 0
    while value >= base and unit < len(units) - 1:
        value /= base
        unit += 1
    if round(value, 2 if value < 10 else 1 if value < 100 else 0) >= base and unit < len(units) - 1:
        value /= base  # 1023.9 KiB rounds to 1024 KiB: say 1.00 MiB
        unit += 1
    digits = 2 if value < 10 else 1 if value < 100 else 0
    return f"{sign}{value:.{digits}f} {units[unit]}"


def percent_change(before: int, after: int) -> str:
    """The change from ``before`` to ``after`` in percent (``-42.1%``, ``+3%``); ``new`` from 0."""
    if before == 0:
        return "0%" if after == 0 else "new"
    change = (after - before) * 100 / before
    text = f"{change:+.1f}" if abs(change) < 10 else f"{change:+.0f}"
    return text.replace(".0", "") + "%" if text.endswith(".0") else text + "%"


_SI_FLOP = ("FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP", "EFLOP")


def human_flops(n: int | float | None) -> str:
    """``n`` floating-point operations for a person: exact under 1,000 (``512 FLOP``), else three
    significant figures of the largest decimal unit it reaches (``1.67 MFLOP``, ``3.34 GFLOP``)."""
    return _scaled(n, 1000, _SI_FLOP)


def spans(numbers, dash: str = "–") -> list[str]:
    """[0, 1, 2, 5, 7, 8] -> ['0–2', '5', '7–8']: runs of consecutive numbers, each once."""
    out: list[str] = []
    start: int | None = None
    prev = 0
    for n in sorted(set(numbers)):
        if start is None:
            start = prev = n
        elif n == prev + 1:
            prev = n
        else:
            out.append(f"{start}{dash}{prev}" if prev != start else str(start))
            start = prev = n
    if start is not None:
        out.append(f"{start}{dash}{prev}" if prev != start else str(start))
    return out


def layer_spans(layers, dash: str = "–") -> str:
    """``0–2, 5, outside``: a list of layer names, the decoder layers as runs, any other name after."""
    return ", ".join([*spans([int(x) for x in layers if x.isdigit()], dash), *[x for x in layers if not x.isdigit()]])
