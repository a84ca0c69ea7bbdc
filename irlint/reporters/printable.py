"""Text from a dump or a file name made safe to print: control characters shown as escapes.

A dump line, a source trace or a file name may hold a terminal escape (``ESC]0;title BEL``), a
backspace, a carriage return or a newline. Printed as they are, they drive the terminal, split a
``file:line: message`` line in two (the second parsed as a finding by a problem matcher) or make
JUnit XML ill-formed (XML 1.0 has no way to write most of them). So every report made for people,
editors and CI shows them as ``\\x1b``, ``\\r``, ``\\n``; a bidirectional control (which reorders
what a line shows) as ``\\u202e``. irlint's own line breaks in a message or a
hint stay; in a file name nothing is irlint's, and a newline is escaped too. JSON and SARIF escape what
they must themselves; HTML is escaped here too (markup escaping leaves the controls as they are).
"""

from __future__ import annotations

import dataclasses
import re

from ..findings import Report

# C0 but tab and newline, DEL, C1 (0x9b is a one-byte CSI for some terminals), and the bidirectional
# controls (U+202E, U+2066 ...), which reorder what a line shows ("Trojan Source")
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_IN_TEXT = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")
_IN_NAME = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# fields that hold a file name; fields never printed as text (what makes a finding the same, the
# facts machine formats and the fix plan carry as the rule gave them)
_NAME_FIELDS = frozenset({"file", "path"})
_KEPT_FIELDS = frozenset({"identity", "facts", "fixes", "waste", "stake", "fix_cost"})


def _escape(m: re.Match) -> str:
    c = m.group()
    return _NAMED.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")


def printable_text(text: str) -> str:
    """A message, an excerpt, a dump line: control characters escaped, but newlines and tabs."""
    return _IN_TEXT.sub(_escape, text) if _IN_TEXT.search(text) else text


def printable_name(name: str) -> str:
    """A file name: every control character escaped, a newline too."""
    return _IN_NAME.sub(_escape, name) if _IN_NAME.search(name) else name


def printable_report(report: Report) -> Report:
    """The report with every text field escaped (the same object when nothing needed it)."""
    findings = [_printable(f) for f in report.findings]
    diagnostics = [_printable(d) for d in report.diagnostics]
    files = [printable_name(p) for p in report.files]
    notes = [printable_text(n) for n in report.notes]
    suppressed = [(_printable(f), printable_text(why)) for f, why in report.suppressed]
    shared = {printable_name(k): printable_name(v) for k, v in report.shared.items()}
    if (
        _same(findings, report.findings)
        and _same(diagnostics, report.diagnostics)
        and files == report.files
        and notes == report.notes
        and suppressed == report.suppressed
        and shared == report.shared
    ):
        return report
    return dataclasses.replace(
        report,
        findings=findings,
        diagnostics=diagnostics,
        files=files,
        notes=notes,
        suppressed=suppressed,
        shared=shared,
    )


def _same(new: list, old: list) -> bool:
    return all(a is b for a, b in zip(new, old))


def _printable(value, name: str = ""):
    """A dataclass (a finding, its related nodes, a diagnostic) with its text fields escaped; any
    other value as it is."""
    if isinstance(value, str):
        return printable_name(value) if name in _NAME_FIELDS else printable_text(value)
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        items = tuple(_printable(v, name) for v in value)
        return value if all(a is b for a, b in zip(items, value)) else items
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {}
        for f in dataclasses.fields(value):
            if f.name in _KEPT_FIELDS or not f.init:
                continue
            old = getattr(value, f.name)
            new = _printable(old, f.name)
            if new is not old:
                changes[f.name] = new
        return dataclasses.replace(value, **changes) if changes else value
    return value


class PrintableSources:
    """A report's dump lines (``SourceLines``), escaped as they are handed out."""

    def __init__(self, sources) -> None:
        self._sources = sources

    def __getattr__(self, name: str):
        return getattr(self._sources, name)

    def line(self, path: str, number: int) -> str:
        return printable_text(self._sources.line(path, number))

    def whole_lines(self, path: str, numbers: set[int]) -> dict[int, str]:
        return {n: printable_text(t) for n, t in self._sources.whole_lines(path, numbers).items()}


def printable_data(value, name: str = ""):
    """JSON-like data (dicts, lists, strings) shown as text: strings escaped, those under a "file"
    key as file names."""
    if isinstance(value, str):
        return printable_name(value) if name in _NAME_FIELDS else printable_text(value)
    if isinstance(value, dict):
        return {k: printable_data(v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(printable_data(v, name) for v in value)
    return value
