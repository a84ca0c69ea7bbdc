"""Problems with the input itself (as opposed to findings about the model in it)."""
from __future__ import annotations

from dataclasses import dataclass

# Codes of the IR0xx family: reserved for input and parse problems.
UNREADABLE = "IR001"
NOT_IR = "IR002"
INVALID_UTF8 = "IR003"
LINE_TOO_LONG = "IR004"
BAD_RECORD = "IR005"
UNKNOWN_LINE = "IR006"
TRUNCATED = "IR007"
COUNT_MISMATCH = "IR008"
BINARY = "IR009"
UNRESOLVED = "IR010"
RULE_FAILED = "IR011"
PLUGIN_FAILED = "IR012"

KINDS = {
    UNREADABLE: "unreadable",
    NOT_IR: "not-graph-ir",
    INVALID_UTF8: "invalid-utf8",
    LINE_TOO_LONG: "line-too-long",
    BAD_RECORD: "bad-record",
    UNKNOWN_LINE: "unknown-line",
    TRUNCATED: "truncated",
    COUNT_MISMATCH: "count-mismatch",
    BINARY: "binary-content",
    UNRESOLVED: "unresolved-reference",
    RULE_FAILED: "rule-failed",
    PLUGIN_FAILED: "plugin-failed",
}


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """A line irlint could not read as expected: it was skipped and the rest was read."""

    file: str
    line: int
    code: str
    message: str
    excerpt: str = ""

    @property
    def kind(self) -> str:
        return KINDS.get(self.code, self.code)

    def to_dict(self) -> dict:
        return {"file": self.file, "line": self.line, "kind": self.kind, "code": self.code,
                "message": self.message, "excerpt": self.excerpt}


def excerpt(text: str, limit: int = 80) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"
