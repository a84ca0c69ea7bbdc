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


# What each input problem means, for `irlint explain IR0xx`.
EXPLANATIONS = {
    UNREADABLE: "The file or folder could not be opened or listed (permissions, I/O error).",
    NOT_IR: "The file does not start like a graph dump ('# IR entry:'); it was not read. actor_set/ "
            "listings, .pb, .dot and .dat files in a folder are skipped without this.",
    INVALID_UTF8: "A line holds bytes that are not UTF-8; they were replaced and the line was read.",
    LINE_TOO_LONG: "A node record over 4 MiB was skipped, not parsed; source-trace lines of any length are fine.",
    BAD_RECORD: "A record the grammar does not accept (a cut-off line, an unknown construct); it was "
                "skipped and reading went on at the next record.",
    UNKNOWN_LINE: "A line of no known kind; it was skipped.",
    TRUNCATED: "The file ends inside a subgraph or record: the run that wrote it was probably killed. "
               "What is there was read.",
    COUNT_MISMATCH: "irlint read a different number of CNodes than the file's 'Total number of cnodes' header.",
    BINARY: "The file holds NUL bytes: not a text dump.",
    UNRESOLVED: "A node input refers to a node or parameter the file does not define.",
    RULE_FAILED: "A rule raised an error on this file; the other rules still ran. Report it to the rule's author.",
    PLUGIN_FAILED: "A third-party rule plugin (entry point group irlint.rules) could not be loaded, or its "
                   "rule code clashes with another rule's; its rules did not run.",
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


# Problems of a single line; a run of such lines (random bytes pasted into a dump) is one problem.
LINE_CODES = frozenset({INVALID_UTF8, LINE_TOO_LONG, BAD_RECORD, UNKNOWN_LINE})
_SKIPPING = (UNKNOWN_LINE, BAD_RECORD, LINE_TOO_LONG)


def merge_line_runs(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """One diagnostic per run of two or more consecutive bad lines, with the count and the kinds;
    a bad line on its own keeps its diagnostic as it is."""
    out: list[Diagnostic] = []
    run: list[Diagnostic] = []

    def close() -> None:
        if run and run[-1].line > run[0].line:
            out.append(line_run_diagnostic(run))
        else:
            out.extend(run)
        run.clear()

    for d in diagnostics:
        if d.code in LINE_CODES and d.line > 0:
            if run and d.file == run[-1].file and run[-1].line <= d.line <= run[-1].line + 1:
                run.append(d)
                continue
            close()
            run.append(d)
        else:
            close()
            out.append(d)
    close()
    return out


def line_run_diagnostic(run: list[Diagnostic]) -> Diagnostic:
    """The one diagnostic of a run of bad lines: its first and last lines, and its kinds in order."""
    first, last = run[0].line, run[-1].line
    codes = list(dict.fromkeys(d.code for d in run))
    code = next((c for c in codes if c in _SKIPPING), codes[0])
    what = "skipped" if code in _SKIPPING else "read with replacement characters"
    kinds = ", ".join(KINDS[c] for c in codes)
    # why the first line was refused: a skipped record's own type line follows it in the run
    why = f"; line {first}: {run[0].message}" if run[0].code == BAD_RECORD else ""
    return Diagnostic(run[0].file, first, code,
                      f"{last - first + 1} consecutive lines {what} (lines {first}-{last}: {kinds}{why})", run[0].excerpt)
