"""SARIF 2.1.0 for code scanning (GitHub upload-sarif and other viewers)."""

from __future__ import annotations

import json
from pathlib import Path, PurePath
from typing import Any
from urllib.parse import quote

from .. import __version__
from ..findings import Report
from . import RenderContext, rule_classes
from .concise import diagnostic_severity

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVEL = {"error": "error", "warning": "warning", "info": "note"}
FINGERPRINT_KEY = "irlintFingerprint/v2"  # v2: without the stage name (v1 had it)


def uri(path: str) -> str:
    """A URI reference: file:// for an absolute path, else relative; percent-encoded either way."""
    p = PurePath(path)
    if p.is_absolute():
        return Path(path).as_uri()
    return quote(p.as_posix(), safe="/")


def _location(file: str, line: int, column: int = 0) -> dict:
    physical: dict = {"artifactLocation": {"uri": uri(file)}}
    if line > 0:
        physical["region"] = {"startLine": line, **({"startColumn": column} if column > 0 else {})}
    return {"physicalLocation": physical}


def _rule(cls) -> dict:
    doc = cls.doc()
    first = doc.split("\n\n", 1)[0].strip()
    return {
        "id": cls.code,
        "name": cls.name,
        "shortDescription": {"text": cls.summary or first},
        "fullDescription": {"text": first or cls.summary},
        "help": {"text": doc, "markdown": doc},
        "defaultConfiguration": {"level": LEVEL.get(cls.severity, "warning"), "enabled": bool(cls.default_enabled)},
        "properties": {"tags": ["mindspore-ir"], "stages": list(cls.stages)},
    }


def as_dict(report: Report, ctx: RenderContext) -> dict:
    classes = rule_classes(report, ctx)
    index = {c.code: i for i, c in enumerate(classes)}
    results = []
    reasons = {id(f): reason for f, reason in report.suppressed}
    for f in [*report.findings, *(f for f, _ in report.suppressed)]:
        location = _location(f.file, f.line, f.column)
        if f.scope or f.node:
            location["logicalLocations"] = [
                {"name": f.node or f.op, "fullyQualifiedName": f.scope or f.node, "kind": "function"}
            ]
        text = f.full_message + (f"\nFix: {f.hint}" if f.hint else "")
        result: dict[str, Any] = {
            "ruleId": f.code,
            "level": LEVEL.get(f.severity, "warning"),
            "message": {"text": text},
            "locations": [location],
            "partialFingerprints": {FINGERPRINT_KEY: f.fingerprint},
            "properties": {
                "rule": f.rule,
                "op": f.op,
                "graph": f.graph,
                "node": f.node,
                "stage": f.stage,
                "headline": f.headline,
                "layer": f.layer,
                "modelPath": f.model_path,
                **({"ranks": list(f.ranks)} if f.ranks else {}),
                **({"occurrences": [o.occurrence() for o in f.members]} if f.members else {}),
            },
        }
        if f.code in index:
            result["ruleIndex"] = index[f.code]
        if id(f) in reasons:  # silenced by the configuration: shown as suppressed, as SARIF viewers expect
            result["suppressions"] = [{"kind": "external", "status": "accepted", "justification": reasons[id(f)]}]
        if f.related or f.source:
            result["relatedLocations"] = []
            for i, r in enumerate(f.related):
                loc = _location(r.file, r.line)
                loc["id"] = i
                label = (
                    f"{r.node} {r.op}".strip()
                    + (f" in {r.graph}" if r.graph else "")
                    + (f" ({r.note})" if r.note else "")
                    + (f" {r.scope}" if r.scope else "")
                )
                loc["message"] = {"text": label}
                result["relatedLocations"].append(loc)
            if f.source:  # the model line that made the node (its source trace)
                loc = _location(f.source[0], f.source[1])
                loc["id"] = len(result.setdefault("relatedLocations", []))
                loc["message"] = {"text": f"model code that made {f.node} {f.op}".rstrip()}
                result["relatedLocations"].append(loc)
        # one result per root cause, its other occurrences as related locations: a code-scanning
        # alert per layer would be the 30 alerts for one mistake this grouping removes
        for o in f.members[1:]:
            loc = _location(o.file, o.line, o.column)
            loc["id"] = len(result.setdefault("relatedLocations", []))
            loc["message"] = {
                "text": f"also here: {o.node} {o.op}"
                + (f" in layer {o.layer}" if o.layer.isdigit() else "")
                + (f" {o.scope}" if o.scope else "")
            }
            result["relatedLocations"].append(loc)
        results.append(result)
    notifications = [
        {
            "level": LEVEL[diagnostic_severity(d.code)],
            "message": {"text": d.message},
            "descriptor": {"id": d.code},
            "locations": [_location(d.file, d.line)],
        }
        for d in report.diagnostics
    ]
    # an input that could not be read (an error notification) means the run did not fully succeed
    successful = not any(n["level"] == "error" for n in notifications)
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "irlint",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "rules": [_rule(c) for c in classes],
                    }
                },
                "invocations": [{"executionSuccessful": successful, "toolExecutionNotifications": notifications}],
                "results": results,
            }
        ],
    }


def render(report: Report, ctx: RenderContext) -> str:
    return json.dumps(as_dict(report, ctx), indent=2, ensure_ascii=False) + "\n"
