"""The reader's line kinds outside a node record: file and subgraph headers, header comments of
every MindSpore version, sections (``# Attrs``, ``subgraph attr:``), and the indented type and
scope lines of a node."""

from __future__ import annotations

import re

from .. import diagnostics as D
from .failure import FAILURE_END, FAILURE_GRAPHS, FAILURE_MESSAGE, FAILURE_NOTES, FAILURE_OPENING, FailureMessage
from .records import RecordParsing

_KEY_VALUE = re.compile(r"([\w.\-]+) ?: ?(.*)\Z")  # 2.10 "key: value", 1.x-2.2 "key : value"
_GRAPH_FLAG = re.compile(r"([A-Za-z_]\w*): (-?\d+)\Z")  # "switch_input: 1", "indirect: 1" before "subgraph attr:"
_ORDER_ITEM = re.compile(r"#\s+\d+: ")
# Header comments of every version: "# IR entry: @g" (2.1+), "#IR entry      : @g" (1.x, 2.0),
# "#Total subgraph : 3", "#attrs         :", "# order:".
_HASH_KEY = re.compile(r"[A-Za-z][A-Za-z ]*")  # the key before the first ":", whitespace stripped
_HASH_KEYS = {
    "ir entry": "entry",
    "total subgraphs": "total_subgraphs",
    "total subgraph": "total_subgraphs",
    "total params": "total_params",
    "attrs": "attrs",
    "order": "order",
    "params": "",
    "parameters": "",
    "num of function graphs in stack": "stack",
    "num of total function graphs": "",
    "the total of function graphs in evaluation stack": "stack",
    "the rest function graphs are the following": "",
}
# analyze_fail.ir (a graph dump written when type inference fails) opens with numbered notes,
# a "# ====" rule, and marks the failing node with "#------------------------> N".
_NOTE = re.compile(r"#\s*(?:\d+\.\S|=+\Z|-+>)")
_MARK = re.compile(r"#-+> *\d+\Z")


class LineKinds(RecordParsing, FailureMessage):
    """Part of the reader (``reader._Reader``): what a line is, handed to the records and the failure message."""

    def top_line(self, line: str, lineno: int) -> None:
        current, current_key = self.current, self.current_key
        self.current, self.current_key = None, -1
        if not line.strip():
            self.section = None
            self.in_order = False
            return
        if self.in_order and not line.startswith(("subgraph ", "%para", "# IR entry")):
            return  # the order listing repeats the nodes (tensor values span lines)
        if self.block is not None:
            if line == "}":
                self.block = None
            elif self.block in self.ir.symbol_engines:
                self.ir.symbol_engines[self.block].append(line.strip())
            else:
                m = _KEY_VALUE.match(line)
                if m:
                    self.ir.attrs.setdefault(self.block, {})[m.group(1)] = m.group(2)
            return
        if line.endswith(" {") and self.sub is None and not line.startswith("subgraph "):
            self.block = line[:-2].strip()
            if self.symbol_details:  # "SymbolEngine_<graph> {": one relation of symbolic shapes a line
                self.ir.symbol_engines[self.block] = []
            return
        # 1.x prints "return(", 2.0's analyze_fail.ir "Primitive::Return{prim_type=1}("
        if line.startswith(("  Return(", "  return(", "  Primitive::Return{")):
            self.return_line(line, lineno)
            return
        if line.startswith("subgraph @"):
            self.symbol_details = False  # the details follow the last subgraph: engine blocks end here
            self.subgraph_header(line, lineno)
            return
        if line == "}":
            self.close_subgraph(lineno)
            return
        if line.startswith("%para"):
            self.param_line(line, lineno)
            return
        if line.startswith("#"):
            self.hash_line(line, lineno)
            return
        if line.startswith("subgraph attr:"):
            self.section = self.pending_sub_attrs
            return
        if line.startswith("subgraph instance:"):
            self.section = None
            return
        # MindSpore 2.10 with symbolic shapes (dynamic-shape graphs, MoE token dispatch): the engine
        # of the subgraph that follows, "subgraph symbol engine: SymbolEngine_<graph> : 0xADDRESS",
        # and after the last subgraph "symbol engine details:" with one "SymbolEngine_<graph> {" block each
        if line.startswith("subgraph symbol engine:"):
            self.section = None
            self.pending_sub_attrs["symbol_engine"] = line.split(":", 1)[1].rsplit(" : ", 1)[0].strip()
            return
        if line == "symbol engine details:":
            self.section = None
            self.symbol_details = True
            return
        if line.startswith("Node counting information"):
            self.section = None
            return
        if line == FAILURE_END and self.ir.failure is not None:
            return
        if current is not None and line.startswith(" {"):
            self.current, self.current_key = current, current_key  # the record goes on
            self.strategy_line(current, line, lineno)
            return
        for label, key in (("Total number of nodes:", "total_nodes"), ("Total number of cnodes:", "total_cnodes")):
            if line.startswith(label):
                self.header_int(key, line[len(label) :], line, lineno)
                return
        if self.section is not None:
            m = _KEY_VALUE.match(line)
            if m:
                self.section[m.group(1)] = m.group(2)
                return
        elif self.sub is None:
            m = _GRAPH_FLAG.match(line)
            if m:
                self.pending_sub_attrs[m.group(1)] = m.group(2)
                return
        self.diag(lineno, D.UNKNOWN_LINE, "unknown line kind; skipped", line)

    def hash_line(self, line: str, lineno: int) -> None:
        if line.startswith("# IR entry:"):
            self.ir.entry = line.split(":", 1)[1].strip()
        elif line.startswith("# Total subgraphs:"):
            self.header_int("total_subgraphs", line.split(":", 1)[1], line, lineno)
        elif line.startswith("# Total params:"):
            self.header_int("total_params", line.split(":", 1)[1], line, lineno)
        elif line.startswith("# Attrs:"):
            self.section = self.ir.attrs
        elif line.startswith("# Order:"):
            self.section = None
            self.in_order = True
        elif line.startswith(("# Params:", "# Parameters:", "# SideEffect", "# Corresponding")) or _ORDER_ITEM.match(
            line
        ):
            self.section = None  # informational lines with nothing a rule reads
        else:
            self.other_hash_line(line, lineno)

    def other_hash_line(self, line: str, lineno: int) -> None:
        """Header and comment lines as other MindSpore versions spell them."""
        # split at the colon, not with one regex: its spaces could be key or padding (quadratic)
        head, colon, value = line[1:].partition(":")
        head = head.strip()
        key = _HASH_KEYS.get(" ".join(head.split()).lower()) if colon and _HASH_KEY.fullmatch(head) else None
        if key is None:
            if line.startswith((FAILURE_MESSAGE, FAILURE_GRAPHS, FAILURE_OPENING)):
                self.compile_failure(lineno)
                if line.startswith(FAILURE_MESSAGE):
                    self.divert = self.message_line
                return
            if _NOTE.match(line):
                if _MARK.match(line):
                    self.marks.append((lineno, self.rec.next_key))
                return
            if self.ir.failure is not None and line.startswith(FAILURE_NOTES):
                return
            self.diag(lineno, D.UNKNOWN_LINE, "unknown comment line; skipped", line)
            return
        self.section = None
        value = value.lstrip()
        if key == "entry":
            self.ir.entry = value.strip()
        elif key in ("total_subgraphs", "total_params"):
            self.header_int(key, value, line, lineno)
        elif key == "attrs":
            self.section = self.ir.attrs
        elif key == "order":
            self.in_order = True
        elif key == "stack":  # "# The total of function graphs in evaluation stack: 3/5 (Ignored 2 internal frames)."
            self.compile_failure(lineno).stack_depth = value.strip()

    def header_int(self, key: str, text: str, line: str, lineno: int) -> None:
        try:
            self.ir.header[key] = int(text.strip())
        except ValueError:
            self.diag(lineno, D.BAD_RECORD, f"expected a number for {key}", line)

    def comment_line(self, line: str, lineno: int) -> None:
        data = self.current
        body = line[6:]
        if body.startswith(":"):  # 2.0's analyze_fail.ir prints ":(<T>) -> (<T>)"
            if data is None:
                self.diag(lineno, D.UNKNOWN_LINE, "type line without a node; skipped", line)
                return
            self.type_lines += 1
            if self.type_lines == 1:
                self.first_type_line(data, body[1:].strip(), line, lineno)
            return
        if body.startswith(("# Fullname with scope: (", "# Scope: (")):
            if data is not None:
                scope = body.split("(", 1)[1]
                data["scope"] = scope[:-1] if scope.endswith(")") else scope
            return
        if body.startswith("#"):
            rest = body[1:].lstrip()
            if data is not None and rest[:6].lower() == "scope:":
                # 2.0 "# scope: (Default)", analyze_fail "#scope: (Default)" or "#scope: Default"
                scope = rest[6:].strip()
                data["scope"] = scope[1:-1] if scope.startswith("(") and scope.endswith(")") else scope
            return  # "Corresponding ... candidate:", "SideEffect": nothing a rule reads
        self.diag(lineno, D.UNKNOWN_LINE, "unknown indented line; skipped", line)
