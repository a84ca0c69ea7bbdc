"""The stable JSON contract for tools (``version`` is the format version; keys are only added)."""

from __future__ import annotations

import json

from .. import __version__
from ..findings import Finding, Report
from ..fixplan import fix_plan
from . import RenderContext

FORMAT_VERSION = 1


def finding_dict(f: Finding) -> dict:
    """One finding as the JSON report lists it (``irlint diff`` lists the same)."""
    d = f.to_dict()
    d["related"] = [{k: r[k] for k in ("file", "line", "node", "op", "scope", "graph", "note")} for r in d["related"]]
    return d


def as_dict(report: Report, ctx: RenderContext) -> dict:
    findings = [finding_dict(f) for f in report.findings]
    return {
        "version": FORMAT_VERSION,
        "tool": {"name": "irlint", "version": __version__},
        "findings": findings,
        "diagnostics": [d.to_dict() for d in report.diagnostics],
        "fix_plan": fix_plan(report.findings),
        "suppressed": [{**finding_dict(f), "suppression": {"reason": reason}} for f, reason in report.suppressed],
        "summary": {
            "files": len(report.files),
            "findings": len(report.findings),
            "by_rule": report.by_rule(),
            "diagnostics": len(report.diagnostics),
            "baselined": ctx.baselined,
            "suppressed": len(report.suppressed),
            # files checked that were read, not given another file's findings (same graph)
            "graphs_read": report.graphs_read,
            # a finding grouped by root cause counts once in "findings", each occurrence here
            "occurrences": sum(len(f.occurrences) for f in report.findings),
            "unused_suppressions": [s.describe() for s in report.unused_suppressions],
        },
    }


def render(report: Report, ctx: RenderContext) -> str:
    return json.dumps(as_dict(report, ctx), indent=2, ensure_ascii=False) + "\n"
