"""The reader's state: what one file's reading keeps between lines, and the services every part of
the reader uses (diagnostics, decoding). The parts build on it one way: ``failure`` and ``records``
on this state, ``lines`` on both, ``loop`` on ``lines``, and ``reader._Reader`` on ``loop``."""

from __future__ import annotations

from collections.abc import Callable

from .. import diagnostics as D
from ..diagnostics import Diagnostic, excerpt
from ..model import IRFile, Subgraph
from .assemble import Records

MAX_UTF8_REPORTED = 20


class ReaderState:
    """One file's reading state."""

    def __init__(self, ir: IRFile, name: str):
        self.ir = ir
        self.name = name
        self.rec = Records()
        self.sub: Subgraph | None = None
        self.local: dict[str, int] = {}  # %N -> key within the open subgraph
        self.current: dict | None = None  # the record whose comment lines follow
        self.current_key = -1
        self.type_lines = 0
        self.section: dict | None = None  # "key: value" lines go here (# Attrs, subgraph attr)
        self.pending_sub_attrs: dict = {}
        self.bad_utf8 = 0
        self.bad_run: list[Diagnostic] = []  # the open run of consecutive bad lines
        self.block: str | None = None  # a top-level "name {" block such as "jit config {"
        self.symbol_details = False  # after "symbol engine details:": its blocks are symbol engines
        self.in_order = False  # the "# Order:" listing after a subgraph
        self.eof_line = 0
        self.param_data: dict[int, dict] = {}  # key -> data of a parameter, for a later, typed declaration
        # while a construct of several lines is open (the message of an analyze_fail.ir, a subgraph
        # header printed one parameter per line), its method sees each line first: True, taken
        self.divert: Callable[[str, int], bool] | None = None
        self.message: list[str] = []
        self.marks: list[tuple[int, int]] = []  # "#-----> N" lines: (line, key of the next record)
        self.split_header: tuple[str, int, list[tuple[str, int]]] | None = None
        self.open_record: tuple[int, str, bool] | None = None  # the last node record: line, text, a Return?
        self.typed_records = 0  # nodes other than a Return with their type line
        self.untyped_records: list[tuple[int, str]] = []  # records without a type line

    def diag(self, line: int, code: str, message: str, text: str = "") -> None:
        new = Diagnostic(self.name, line, code, message, excerpt(text))
        if code in D.LINE_CODES and line > 0:
            run = self.bad_run
            if run and run[-1].line <= line <= run[-1].line + 1:
                # a run of bad lines (megabytes of junk) keeps its first line, one line of each kind
                # and its last line: all that its one diagnostic says (D.line_run_diagnostic)
                if run[-1].line > run[0].line and any(d.code == run[-1].code for d in run[:-1]):
                    run[-1] = new
                else:
                    run.append(new)
                return
            self.close_run()
            self.bad_run = [new]
            return
        self.close_run()
        self.ir.diagnostics.append(new)

    def close_run(self) -> None:
        run = self.bad_run
        if run:
            if run[-1].line > run[0].line:
                self.ir.diagnostics.append(D.line_run_diagnostic(run))
            else:
                self.ir.diagnostics.extend(run)  # bad lines, all on one line
            self.bad_run = []

    def decode(self, raw: bytes, lineno: int) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            self.bad_utf8 += 1
            if self.bad_utf8 <= MAX_UTF8_REPORTED:
                self.diag(lineno, D.INVALID_UTF8, f"invalid UTF-8 at byte {exc.start} of the line; replaced")
            return raw.decode("utf-8", "replace")
