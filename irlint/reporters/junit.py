"""JUnit XML for CI test reports: one testcase per linted dump file, failing when it has findings,
in error when it has input problems (a file not read, or lines skipped: a truncated dump must not
pass as a green test)."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict

from ..findings import Report
from . import RenderContext


def render(report: Report, ctx: RenderContext) -> str:
    findings: dict[str, list] = defaultdict(list)
    for f in report.findings:
        findings[f.file].append(f)
    unreadable: dict[str, list] = defaultdict(list)
    for d in report.diagnostics:
        unreadable[d.file].append(d)
    files = list(dict.fromkeys([*report.files, *findings, *unreadable]))
    suite = ET.Element("testsuite", name="irlint", tests=str(len(files)),
                       failures=str(sum(1 for p in files if findings.get(p))),
                       errors=str(sum(1 for p in files if unreadable.get(p))),
                       skipped="0")
    for path in files:
        case = ET.SubElement(suite, "testcase", classname="irlint", name=path, file=path)
        if findings.get(path):
            items = findings[path]
            failure = ET.SubElement(case, "failure", type=",".join(sorted({f.code for f in items})),
                                    message=f"{len(items)} finding{'s' if len(items) != 1 else ''}")
            failure.text = "\n".join(
                f"{f.file}:{f.line}:{f.column}: {f.code} [{f.severity}] {f.message}"
                + (f"\n    fix: {f.hint}" if f.hint else "") for f in items)
        if unreadable.get(path):
            error = ET.SubElement(case, "error", type=unreadable[path][0].code, message=unreadable[path][0].message)
            error.text = "\n".join(f"{d.file}:{d.line}: {d.code} {d.message}" for d in unreadable[path])
    root = ET.Element("testsuites", name="irlint", tests=suite.get("tests"), failures=suite.get("failures"),
                      errors=suite.get("errors"))
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
