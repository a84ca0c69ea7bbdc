"""The reader's part for ``analyze_fail.ir``, the dump of a failed compile: MindSpore's message
between two banners, the ``#------------------------> N`` marks of the evaluation stack, and the
IR013 diagnostic that says where evaluation failed and why no rule runs."""

from __future__ import annotations

import re

from .. import diagnostics as D
from ..model import CompileFailure
from .state import ReaderState

# 2.3 and later: a banner before MindSpore's message, another before the graphs, then notes
FAILURE_MESSAGE = "# The following shows the last analyze fail log message"
FAILURE_GRAPHS = "# The following shows the IR when the function graphs evaluation fails"
FAILURE_NOTES = ("# You can search the last -", "# Refer to https://www.mindspore.cn/search")
FAILURE_END = "No more function graphs."
_GRAPHS_START = (FAILURE_GRAPHS, "# IR entry", "subgraph ")  # what ends the message, at the latest
FAILURE_OPENING = "# 1.This file shows the parsed IR info when graph evaluating failed"  # 2.0-2.2
_MESSAGE_FRAME = re.compile(r"-+\Z|- Caught exception:\Z|# =+\Z")


class FailureMessage(ReaderState):
    """Part of the reader (``reader._Reader``): a failed compile's message."""

    def compile_failure(self, lineno: int) -> CompileFailure:
        if self.ir.failure is None:
            self.ir.failure = CompileFailure(line=lineno)
        return self.ir.failure

    def message_line(self, line: str, lineno: int) -> bool:
        """MindSpore's message, kept as printed, up to the banner before the graphs."""
        if line.startswith(_GRAPHS_START):
            self.end_message()
            return False
        if not self.message:
            failure = self.ir.failure
            assert failure is not None  # the banner that opened the message made it
            failure.line = lineno
        self.message.append(line)
        return True

    def end_message(self) -> None:
        self.divert = None
        lines = self.message
        while lines and (not lines[-1].strip() or lines[-1].startswith("# ===")):
            lines.pop()  # the rule of the next banner
        # after the rule of the banner that opened it
        start = next((i for i, ln in enumerate(lines) if ln.strip() and not ln.startswith("# ===")), len(lines))
        failure = self.ir.failure
        assert failure is not None  # the banner that opened the message made it
        failure.line += start
        failure.message = "\n".join(lines[start:])
        self.message = []

    def failure_diagnostic(self, failure: CompileFailure) -> None:
        nodes = self.ir.nodes
        # a mark is followed by the record it marks; a mark whose record was not read names nothing
        failure.failed_at = [
            key
            for line, key in self.marks
            if nodes.get(key, {}).get("kind") in ("cnode", "return") and nodes[key]["line"] > line
        ]
        said = next(
            (ln.strip() for ln in failure.message.splitlines() if ln.strip() and not _MESSAGE_FRAME.match(ln.strip())),
            "",
        )
        parts = ["analyze_fail.ir: MindSpore could not compile this graph"]
        if said:
            parts.append(f' ("{said}")')
        line = failure.line
        if failure.failed_at:
            node = nodes[failure.failed_at[-1]]
            line = node["line"]
            parts.append(f"; evaluation failed at {node['id']} {node['op']} in {node['graph']}")
        parts.append(
            "; no rule runs on it: the rules read the graphs of later passes (autodiff, recompute, "
            "parallel), which a failed compile never reaches"
        )
        if failure.message:
            parts.append("; `irlint inspect` prints the whole message")
        self.diag(line, D.COMPILE_FAILURE, "".join(parts), said)
