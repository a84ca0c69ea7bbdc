"""One JSON object per line (ruff's ``json-lines``): each finding as in ``json``, then each input
problem, then each finding a ``[[suppress]]`` entry silenced; ``type`` says which. For tools that stream or grep."""

from __future__ import annotations

import json

from ..findings import Report
from . import RenderContext
from .json import as_dict


def render(report: Report, ctx: RenderContext) -> str:
    data = as_dict(report, ctx)
    lines = [{"type": "finding", **f} for f in data["findings"]]
    lines += [{"type": "diagnostic", **d} for d in data["diagnostics"]]
    lines += [{"type": "suppressed", **f} for f in data["suppressed"]]
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
