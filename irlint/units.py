"""The one way irlint writes a byte count for people (text and HTML): binary units, three
significant figures (``165 KiB``, ``1.21 GiB``). Machine formats carry the exact bytes."""
from __future__ import annotations

_UNITS = ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB")


def human_bytes(n: int | float | None) -> str:
    """``n`` bytes for a person: exact under 1 KiB (``912 bytes``), else three significant figures
    of the largest binary unit it reaches (``5.50 KiB``, ``165 KiB``, ``1.21 GiB``); ``? bytes``
    when unknown. A negative count (a change) keeps its sign."""
    if n is None:
        return "? bytes"
    sign = "-" if n < 0 else ""
    n = abs(n)
    if n < 1024:
        return f"{sign}{n:g} bytes" if isinstance(n, float) else f"{sign}{n} bytes"
    value, unit = float(n), 0
    while value >= 1024 and unit < len(_UNITS) - 1:
        value /= 1024
        unit += 1
    if round(value, 2 if value < 10 else 1 if value < 100 else 0) >= 1024 and unit < len(_UNITS) - 1:
        value /= 1024   # 1023.9 KiB rounds to 1024 KiB: say 1.00 MiB
        unit += 1
    digits = 2 if value < 10 else 1 if value < 100 else 0
    return f"{sign}{value:.{digits}f} {_UNITS[unit]}"


def percent_change(before: int, after: int) -> str:
    """The change from ``before`` to ``after`` in percent (``-42.1%``, ``+3%``); ``new`` from 0."""
    if before == 0:
        return "0%" if after == 0 else "new"
    change = (after - before) * 100 / before
    text = f"{change:+.1f}" if abs(change) < 10 else f"{change:+.0f}"
    return text.replace(".0", "") + "%" if text.endswith(".0") else text + "%"


_SI = ("", "k", "M", "G", "T", "P", "E")


def human_flops(n: int | float | None) -> str:
    """``n`` floating-point operations for a person: exact under 1,000 (``512 FLOP``), else three
    significant figures of the largest decimal unit it reaches (``1.67 MFLOP``, ``3.34 GFLOP``)."""
    if n is None:
        return "? FLOP"
    sign = "-" if n < 0 else ""
    n = abs(n)
    if n < 1000:
        return f"{sign}{n:g} FLOP" if isinstance(n, float) else f"{sign}{n} FLOP"
    value, unit = float(n), 0
    while value >= 1000 and unit < len(_SI) - 1:
        value /= 1000
        unit += 1
    if round(value, 2 if value < 10 else 1 if value < 100 else 0) >= 1000 and unit < len(_SI) - 1:
        value /= 1000
        unit += 1
    digits = 2 if value < 10 else 1 if value < 100 else 0
    return f"{sign}{value:.{digits}f} {_SI[unit]}FLOP"
