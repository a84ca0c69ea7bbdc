"""GitLab Code Quality report (a JSON array of issues), for the ``codequality`` artifact of a job."""

from __future__ import annotations

import hashlib
import json
from collections import Counter

from ..findings import Report
from . import RenderContext
from .concise import diagnostic_severity, short_text

SEVERITY = {"error": "critical", "warning": "major", "info": "info"}


def render(report: Report, ctx: RenderContext) -> str:
    issues = []
    seen: Counter = Counter()
    for f in report.findings:
        # GitLab needs a fingerprint unique in the report: the same problem twice gets its count
        seen[f.fingerprint] += 1
        fingerprint = hashlib.sha256(f"{f.fingerprint}:{seen[f.fingerprint]}".encode()).hexdigest()[:32]
        issues.append(
            {
                "description": f"{f.code} {short_text(f)}",
                "check_name": f"{f.code} {f.rule}",
                "fingerprint": fingerprint,
                "severity": SEVERITY.get(f.severity, "major"),
                "location": {"path": f.file, "lines": {"begin": max(f.line, 1)}},
            }
        )
    for d in report.diagnostics:
        ident = f"{d.file}\0{d.line}\0{d.code}\0{d.message}"
        issues.append(
            {
                "description": f"{d.code} {d.message}",
                "check_name": f"{d.code} {d.kind}",
                "fingerprint": hashlib.sha256(ident.encode()).hexdigest()[:32],
                "severity": SEVERITY[diagnostic_severity(d.code)],
                "location": {"path": d.file, "lines": {"begin": max(d.line, 1)}},
            }
        )
    return json.dumps(issues, indent=2, ensure_ascii=False) + "\n"
