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
COMPILE_FAILURE = "IR013"
DUPLICATE_GRAPH = "IR014"
NO_ATTRIBUTES = "IR015"
NO_SCOPES = "IR016"  # a note, not an input problem: the verdicts stand (see NOTE_CODES)
UNFINISHED = "IR017"

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
    COMPILE_FAILURE: "compile-failure",
    DUPLICATE_GRAPH: "duplicate-graph",
    NO_ATTRIBUTES: "no-attributes",
    NO_SCOPES: "no-scopes",
    UNFINISHED: "unfinished-compile",
}
# said about a file on standard error, not counted as an input problem (exit code unchanged)
NOTE_CODES = frozenset({NO_SCOPES})


# What each input problem means, for `irlint explain IR0xx`.
EXPLANATIONS = {
    UNREADABLE: "The file or folder could not be opened or listed (permissions, I/O error).",
    NOT_IR: "The file does not start like a graph dump ('# IR entry:'); it was not read. actor_set/ "
    "listings, .pb, .dot and .dat files in a folder are skipped without this.",
    INVALID_UTF8: "A line holds bytes that are not UTF-8; they were replaced and the line was read.",
    LINE_TOO_LONG: "A node record over 4 MiB was skipped, not parsed; source-trace lines of any length are fine.",
    BAD_RECORD: "A record the grammar does not accept (a cut-off line, an unknown construct, an attribute "
    "block cut before its '}'), or a line of a record holding a NUL, an escape or another control "
    "byte (a tab aside); it was skipped and reading went on at the next record. Also a node "
    "record without its type line in a dump that prints types (the record is read, its types "
    "are unknown).",
    UNKNOWN_LINE: "A line of no known kind; it was skipped.",
    TRUNCATED: "The file ends inside a subgraph or record: the run that wrote it was probably killed. "
    "What is there was read.",
    COUNT_MISMATCH: "irlint read a different number of CNodes than the file's 'Total number of cnodes' header.",
    BINARY: "The file holds NUL bytes: not a text dump.",
    UNRESOLVED: "A node input refers to a node or parameter the file does not define.",
    RULE_FAILED: "A rule raised an error on this file; the other rules still ran. Report it to the rule's author.",
    NO_ATTRIBUTES: "The dump has no attributes and no types on any node (written with "
    "MS_DEV_DUMP_IR_FORMAT=0): what was asked to recompute, what was recomputed, dtypes, shapes "
    "and strategies are not in it, so no rule can judge it. Dump again without the variable "
    "(or with MS_DEV_DUMP_IR_FORMAT=2).",
    NO_SCOPES: "The dump has no '# Fullname with scope' lines (written with MS_DEV_DUMP_IR_FORMAT=1). The "
    "verdicts stand (recompute tags, copies, dtypes, shapes and parameter names are there), but "
    "findings name no scope; nodes are told apart, and matched across decoder layers (bytes across "
    "layers), by the weights they are computed from (model.layers.N.…). What only scopes tell "
    "cannot be given: the select_recompute keys of a hint, recompute asked for with "
    "Cell.recompute() (seen only as a 'recompute_' scope prefix), the per-layer table of "
    "`irlint memory`. Not an input problem: the exit code is not changed.",
    PLUGIN_FAILED: "A third-party rule plugin (entry point group irlint.rules) could not be loaded, or its "
    "rule code clashes with another rule's; its rules did not run.",
    COMPILE_FAILURE: "The file is an analyze_fail.ir: MindSpore could not compile the graph (type inference "
    "failed) and dumped the graphs it was evaluating. The diagnostic gives MindSpore's message "
    "and the node whose evaluation failed (the last '------------------------>' mark); "
    "`irlint inspect` prints the whole message. The graphs are read, but no rule runs on them: "
    "the rules read graphs after automatic differentiation, recompute and parallel passes, "
    "which a failed compile never reaches.",
    UNFINISHED: "A rank's dumps stop before its final front-end graph (no validate file, no kernel graph) "
    "while another rank of the same run wrote one: that rank's compile stopped there (MindSpore raised an "
    "error after that stage, or the process was killed; its log says which). Its files are read and "
    "linted, but what they hold is a graph the step never ran: its findings and figures (the device "
    "peak of `irlint memory` among them) are of an unfinished compile.",
    DUPLICATE_GRAPH: "Two subgraphs of the file print the same name (an analyze_fail.ir prints the entry graph "
    "of the evaluation stack and the graph it calls under one name). Both are kept: the later "
    "one is read as '@name#2', and each one's nodes are wired within their own graph; a call "
    "of '@name' refers to the first.",
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
        return {
            "file": self.file,
            "line": self.line,
            "kind": self.kind,
            "code": self.code,
            "message": self.message,
            "excerpt": self.excerpt,
        }


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
    return Diagnostic(
        run[0].file,
        first,
        code,
        f"{last - first + 1} consecutive lines {what} (lines {first}-{last}: {kinds}{why})",
        run[0].excerpt,
    )
