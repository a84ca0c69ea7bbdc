"""Settings of a lint run: rule selection, severities, suppressions, stage choice."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field


@dataclass
class Suppression:
    """Silence a rule (or every rule, when ``rule`` is empty) for nodes whose scope matches."""

    scope: str
    rule: str = ""
    reason: str = ""

    def matches(self, code: str, name: str, scope: str) -> bool:
        if self.rule and not _selector_matches(self.rule, code, name):
            return False
        return re.search(self.scope, scope) is not None


@dataclass
class Config:
    select: list[str] = field(default_factory=list)          # empty: the default set
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    severity: dict[str, str] = field(default_factory=dict)   # selector -> error|warning|info
    suppress: list[Suppression] = field(default_factory=list)
    all_stages: bool = False
    jobs: int = 0            # 0: one process per core
    cache: bool = True
    cache_dir: str | None = None
    plugins: bool = True

    def rule_enabled(self, code: str, name: str, default: bool) -> bool:
        if self.select:
            on = any(_selector_matches(s, code, name) for s in self.select)
        else:
            on = default
        if any(_selector_matches(s, code, name) for s in self.extend_select):
            on = True
        if any(_selector_matches(s, code, name) for s in self.ignore):
            # a more specific select beats a broader ignore, as in ruff
            best_ignore = max(_specificity(s, code, name) for s in self.ignore)
            best_select = max([_specificity(s, code, name) for s in self.select + self.extend_select] or [-1])
            on = best_select > best_ignore
        return on

    def severity_for(self, code: str, name: str, default: str) -> str:
        best, value = -1, default
        for selector, sev in self.severity.items():
            spec = _specificity(selector, code, name)
            if spec > best:
                best, value = spec, sev
        return value

    def suppressed(self, code: str, name: str, scope: str) -> bool:
        return any(s.matches(code, name, scope) for s in self.suppress)

    def effective_jobs(self) -> int:
        return self.jobs if self.jobs > 0 else (os.cpu_count() or 1)


def _selector_matches(selector: str, code: str, name: str) -> bool:
    return _specificity(selector, code, name) >= 0


def _specificity(selector: str, code: str, name: str) -> int:
    """-1 when the selector does not match; longer matches are more specific."""
    s = selector.strip()
    if not s:
        return -1
    if s.upper() == "ALL":
        return 0
    if s == name or s.upper() == code.upper():
        return 100
    if code.upper().startswith(s.upper()):
        return len(s)
    return -1
