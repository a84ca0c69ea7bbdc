"""Reporters: turn a Report into text for people, editors, CI and tools. One module per format;
each has ``render(report, ctx) -> str`` and never reads dumps except node lines by number."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..findings import Report
from .source import SourceLines

FORMATS = ("text", "concise", "json", "sarif", "github", "junit")
UNLIMITED_WIDTH = 100_000   # rich needs a width; tables are sized to their content, so this is "no limit"


@dataclass
class RenderContext:
    rules: list = field(default_factory=list)   # rule classes known to this run (SARIF metadata)
    color: bool = False
    # columns to wrap to (a terminal); None: full lines, nothing cut or wrapped (files, pipes)
    width: int | None = None
    quiet: bool = False
    statistics: bool = False
    sources: SourceLines = field(default_factory=SourceLines)
    # findings hidden by --baseline (shown in the text summary so nobody wonders where they went)
    baselined: int = 0


def renderer(fmt: str) -> Callable[[Report, RenderContext], str]:
    from importlib import import_module

    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}")
    return import_module(f"{__name__}.{fmt}").render


def render(report: Report, fmt: str, ctx: RenderContext | None = None) -> str:
    return renderer(fmt)(report, ctx or RenderContext())


def rule_classes(report: Report, ctx: RenderContext) -> list:
    """The rules to describe: those that ran plus any other the context knows, by code."""
    seen: dict[str, type] = {}
    for r in list(report.rules) + list(ctx.rules):
        cls = r if isinstance(r, type) else type(r)
        seen.setdefault(cls.code, cls)
    return sorted(seen.values(), key=lambda c: c.code)


def ranks_text(ranks: tuple[int, ...]) -> str:
    """(0, 1, 2, 3, 6) -> 'ranks 0-3,6'."""
    parts, start, prev = [], None, None
    for r in sorted(ranks):
        if start is None:
            start = prev = r
        elif r == prev + 1:
            prev = r
        else:
            parts.append(f"{start}-{prev}" if prev != start else str(start))
            start = prev = r
    if start is not None:
        parts.append(f"{start}-{prev}" if prev != start else str(start))
    return "ranks " + ",".join(parts)
