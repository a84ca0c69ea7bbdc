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
FINGERPRINT_KEY = "irlintFingerprint/v3"  # v3: with the model (v2 without it, v1 with the stage name)


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


RELATED_MAX = 100  # related locations GitHub code scanning shows of one result


def docs_url() -> str:
    """The documentation site the package's metadata names (``[project.urls] Documentation``), ""
    when it names none: a rule's ``helpUri`` is its page there."""
    from importlib import metadata

    try:
        urls = metadata.metadata("irlint").get_all("Project-URL") or []
    except metadata.PackageNotFoundError:
        return ""
    for entry in urls:
        label, _, url = entry.partition(",")
        if label.strip().lower() in ("documentation", "docs") and url.strip().startswith(("https://", "http://")):
            return url.strip().rstrip("/") + "/"
    return ""


def _rule(cls, docs: str = "") -> dict:
    doc = cls.doc()
    first = doc.split("\n\n", 1)[0].strip()
    return {
        "id": cls.code,
        "name": cls.name,
        "shortDescription": {"text": cls.summary or first},
        "fullDescription": {"text": first or cls.summary},
        **({"helpUri": f"{docs}rules/{cls.code}/"} if docs else {}),
        "help": {"text": doc, "markdown": doc},
        "defaultConfiguration": {"level": LEVEL.get(cls.severity, "warning"), "enabled": bool(cls.default_enabled)},
        "properties": {"tags": ["mindspore-ir"], "stages": list(cls.stages)},
    }


def _escaped(text: str, link: bool = False) -> str:
    """Message text with its literal brackets escaped (SARIF 3.11.6: a message with embedded links),
    and a link's text its parentheses too."""
    text = text.replace("[", "\\[").replace("]", "\\]")
    return text.replace("(", "\\(").replace(")", "\\)") if link else text


def _link_text(loc: dict, label: str) -> str:
    """A related location as the message names it: ``%10 TupleGetItem`` (line 228), its label's
    first words; the location's own message has the whole label."""
    region = loc["physicalLocation"].get("region", {})
    words = label.split(" in ")[0].split(" (")[0]
    return words + (f" line {region['startLine']}" if region.get("startLine") else "")


def _related_total(f) -> int:
    return len(f.related) + (1 if f.source else 0) + max(len(f.members) - 1, 0)


def _related(f) -> list[tuple[dict, str]]:
    """(location, label) of the key related locations of a finding, at most ``RELATED_MAX``: the
    nodes of its first chain, the model code that made the node, its other occurrences (one
    result per root cause: an alert per layer would be the alerts this grouping removes), the node
    heading each further chain, then the rest of those chains while there is room."""
    from .text import CHAIN_HEAD, first_chain

    def node(r) -> tuple[dict, str]:
        label = (
            f"{r.node} {r.op}".strip()
            + (f" in {r.graph}" if r.graph else "")
            + (f" ({r.note})" if r.note else "")
            + (f" {r.scope}" if r.scope else "")
        )
        return _location(r.file, r.line), label

    chain = len(first_chain(f.related)) if f.related else 0
    key = [node(r) for r in f.related[:chain]]
    if f.source:  # the model line that made the node (its source trace)
        key.append((_location(f.source[0], f.source[1]), f"model code that made {f.node} {f.op}".rstrip()))
    for o in f.members[1:]:
        key.append(
            (
                _location(o.file, o.line, o.column),
                f"also here: {o.node} {o.op}"
                + (f" in layer {o.layer}" if o.layer.isdigit() else "")
                + (f" {o.scope}" if o.scope else ""),
            )
        )
    rest = f.related[chain:]
    heads = [node(r) for r in rest if CHAIN_HEAD.match(r.note)]
    others = [node(r) for r in rest if not CHAIN_HEAD.match(r.note)]
    return (key + heads + others)[:RELATED_MAX]


def as_dict(report: Report, ctx: RenderContext) -> dict:
    classes = rule_classes(report, ctx)
    docs = docs_url()
    index = {c.code: i for i, c in enumerate(classes)}
    results = []
    reasons = {id(f): reason for f, reason in report.suppressed}
    for f in [*report.findings, *(f for f, _ in report.suppressed)]:
        location = _location(f.file, f.line, f.column)
        if f.scope or f.node:
            location["logicalLocations"] = [
                {"name": f.node or f.op, "fullyQualifiedName": f.scope or f.node, "kind": "function"}
            ]
        related = _related(f)
        text = _escaped(f.full_message + (f"\nFix: {f.hint}" if f.hint else ""))
        if related:  # GitHub shows the related locations a message links to, and only those
            text += "\nContext: " + ", ".join(
                f"[{_escaped(_link_text(loc, label), link=True)}]({i})" for i, (loc, label) in enumerate(related)
            )
            if len(related) < _related_total(f):
                text += f" (+{_related_total(f) - len(related)} more in --format json)"
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
        if related:
            result["relatedLocations"] = []
            for i, (loc, label) in enumerate(related):
                result["relatedLocations"].append({**loc, "id": i, "message": {"text": label}})
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
                        "rules": [_rule(c, docs) for c in classes],
                    }
                },
                "invocations": [{"executionSuccessful": successful, "toolExecutionNotifications": notifications}],
                "results": results,
            }
        ],
    }


def render(report: Report, ctx: RenderContext) -> str:
    return json.dumps(as_dict(report, ctx), indent=2, ensure_ascii=False) + "\n"
