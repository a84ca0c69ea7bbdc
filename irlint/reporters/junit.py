"""JUnit XML for CI test reports: one testcase per linted dump file, failing when it has warning or
error findings (as the exit code; info findings are listed in its ``system-out``), in error when it
has input problems (a file not read, or lines skipped: a truncated dump must not pass as a green
test). ``--exit-zero`` changes the exit code only: the test cases still show what was found."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict

from ..findings import Report
from . import RenderContext
from .concise import short_text

FAILING = ("error", "warning")  # as the exit code: info findings never fail a run


def _line(f) -> str:
    return f"{f.file}:{f.line}:{f.column}: {f.code} [{f.severity}] {short_text(f)}"


def _rank_folder(path: str) -> tuple[str, int] | None:
    """(the path with its rank_N/ folder as rank_*, N): files of one run's ranks side by side."""
    import re

    found = list(re.finditer(r"(?:^|(?<=[\\/]))rank_(\d+)(?=[\\/])", path))
    if not found:
        return None
    m = found[-1]
    return path[: m.start()] + "rank_*" + path[m.end() :], int(m.group(1))


def _files_of(f, files: list[str]) -> list[str]:
    """The checked files a finding is about: its occurrences', and for a finding merged across the
    ranks of a run (reported on its first rank's file), the same file of each other rank it names."""
    own = list(dict.fromkeys(o.file for o in f.occurrences))
    if len(f.ranks) > 1:
        places = {at[0] for at in map(_rank_folder, (o.file for o in f.occurrences)) if at}
        for path in files:
            at = _rank_folder(path)
            if at and at[0] in places and at[1] in f.ranks and path not in own:
                own.append(path)
    return own


def render(report: Report, ctx: RenderContext) -> str:
    findings: dict[str, list] = defaultdict(list)
    notes: dict[str, list] = defaultdict(list)  # info findings: shown, but they do not fail the run
    for f in report.findings:
        # every file of the finding fails (or notes it), not only the one it is reported on: a rank
        # whose finding was merged into rank 0's must not pass
        for path in _files_of(f, report.files):
            (findings if f.severity in FAILING else notes)[path].append(f)
    unreadable: dict[str, list] = defaultdict(list)
    for d in report.diagnostics:
        unreadable[d.file].append(d)
    files = list(dict.fromkeys([*report.files, *findings, *notes, *unreadable]))
    suite = ET.Element(
        "testsuite",
        name="irlint",
        tests=str(len(files)),
        failures=str(sum(1 for p in files if findings.get(p))),
        errors=str(sum(1 for p in files if unreadable.get(p))),
        skipped="0",
    )
    for path in files:
        case = ET.SubElement(suite, "testcase", classname="irlint", name=path, file=path)
        if findings.get(path):
            items = findings[path]
            failure = ET.SubElement(
                case,
                "failure",
                type=",".join(sorted({f.code for f in items})),
                message=f"{len(items)} finding{'s' if len(items) != 1 else ''}",
            )
            failure.text = "\n".join(_line(f) for f in items)
        if unreadable.get(path):
            error = ET.SubElement(case, "error", type=unreadable[path][0].code, message=unreadable[path][0].message)
            error.text = "\n".join(f"{d.file}:{d.line}: {d.code} {d.message}" for d in unreadable[path])
        if notes.get(path):
            out = ET.SubElement(case, "system-out")
            out.text = "\n".join(_line(f) for f in notes[path])
    if report.suppressed:
        properties = ET.Element("properties")
        ET.SubElement(properties, "property", name="suppressed", value=str(len(report.suppressed)))
        suite.insert(0, properties)
    root = ET.Element(
        "testsuites",
        name="irlint",
        tests=suite.get("tests", ""),
        failures=suite.get("failures", ""),
        errors=suite.get("errors", ""),
    )
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
