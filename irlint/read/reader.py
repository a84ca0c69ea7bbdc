"""Reads a dump file into an ``IRFile``: the driver of the three reading steps.

1. ``irlint.read.scanner`` finds the structural lines in large blocks of bytes, most node records as
   a whole (node, type and scope lines); source-trace lines, most of a file's bytes, are never
   looked at one by one: a node keeps their byte range and reads them on demand.
2. This module tells the line kinds apart (headers, subgraphs, nodes, type and scope lines) and
   keeps the state between them; ``irlint.read.record`` parses the structured parts with the grammar.
3. ``irlint.read.assemble`` turns the collected records into the networkx model.

A line that cannot be read becomes a diagnostic and reading resumes at the next line.
"""
from __future__ import annotations

import gc
import re
from typing import BinaryIO, Iterator

from .. import diagnostics as D
from .assemble import Records, assemble, check_counts
from ..diagnostics import Diagnostic, excerpt
from ..runner.discover import is_dump_start
from ..model import CompileFailure, IRFile, Subgraph
from .record import NODE_LINE, GrammarError, normalize_op, parse_node, parse_param_line, parse_type_line
from .scanner import RECORD_LIMIT, NodeRecord, TraceRun, scan
from .syntax import parse_attrs, parse_header
from .values import Call, FreeVar, GraphRef, Ref

__all__ = ["read_ir", "normalize_op", "MAX_RECORD_BYTES"]

MAX_RECORD_BYTES = RECORD_LIMIT      # a node record longer than this is skipped, not parsed
MAX_CONTINUATION_LINES = 100_000     # a multi-line tensor value that never closes
MAX_UTF8_REPORTED = 20

_KEY_VALUE = re.compile(r"([\w.\-]+) ?: ?(.*)\Z")   # 2.10 "key: value", 1.x-2.2 "key : value"
_GRAPH_FLAG = re.compile(r"([A-Za-z_]\w*): (-?\d+)\Z")  # "switch_input: 1", "indirect: 1" before "subgraph attr:"
_ORDER_ITEM = re.compile(r"#\s+\d+: ")
# Header comments of every version: "# IR entry: @g" (2.1+), "#IR entry      : @g" (1.x, 2.0),
# "#Total subgraph : 3", "#attrs         :", "# order:".
_HASH_KEY = re.compile(r"[A-Za-z][A-Za-z ]*")   # the key before the first ":", whitespace stripped
_HASH_KEYS = {"ir entry": "entry", "total subgraphs": "total_subgraphs", "total subgraph": "total_subgraphs",
              "total params": "total_params", "attrs": "attrs", "order": "order", "params": "", "parameters": "",
              "num of function graphs in stack": "stack", "num of total function graphs": "",
              "the total of function graphs in evaluation stack": "stack",
              "the rest function graphs are the following": ""}
# analyze_fail.ir (a graph dump written when type inference fails) opens with numbered notes,
# a "# ====" rule, and marks the failing node with "#------------------------> N".
_NOTE = re.compile(r"#\s*(?:\d+\.\S|=+\Z|-+>)")
_MARK = re.compile(r"#-+> *\d+\Z")
# 2.3 and later: a banner before MindSpore's message, another before the graphs, then notes
_FAILURE_MESSAGE = "# The following shows the last analyze fail log message"
_FAILURE_GRAPHS = "# The following shows the IR when the function graphs evaluation fails"
_FAILURE_NOTES = ("# You can search the last -", "# Refer to https://www.mindspore.cn/search")
_FAILURE_END = "No more function graphs."
_GRAPHS_START = (_FAILURE_GRAPHS, "# IR entry", "subgraph ")   # what ends the message, at the latest
_FAILURE_OPENING = "# 1.This file shows the parsed IR info when graph evaluating failed"   # 2.0-2.2
_MESSAGE_FRAME = re.compile(r"-+\Z|- Caught exception:\Z|# =+\Z")
# 2.0 prints a subgraph's parameters one per line: "        , %para2_y : <Tensor[Float32], ()>"
_HEADER_PARAM = re.compile(r"\s+(?:, )?(%para\S* ?:.*)\Z")
MAX_HEADER_LINES = 100_000

# The attributes of a node that has none: one dict for all (read-only, as every parsed value is).
NO_ATTRS: dict = {}

NODE_COMMENT = b"      # "
TYPE_LINE = b"      : "
_RECORD_STARTS = (b"  %", b"  Return(", b"      : ", b"      # ", b"}", b"subgraph ", b"# ", b"%para")


def read_ir(path: str, display: str | None = None, stream: BinaryIO | None = None) -> IRFile:
    """Read one dump. Never raises for bad content; I/O errors become a diagnostic too.

    ``stream``: read this seekable binary stream instead of opening ``path`` (standard input,
    a decompressed dump); source traces are then read back from it.
    """
    ir = IRFile.empty(path)
    ir.source = stream
    # Reading only adds objects, and the cyclic collector would rescan the growing graph again
    # and again (a third of the time on a 100 MB dump). Afterwards the new objects go straight to
    # the oldest generation (freeze + unfreeze): the first young collection would otherwise scan
    # the whole model once more (0.4 s for 100 MB); a full collection still sees them.
    collecting = gc.isenabled()
    gc.disable()
    try:
        if stream is not None:
            stream.seek(0)
            _Reader(ir, display or path).run(stream)
        else:
            with open(path, "rb", buffering=0) as f:
                _Reader(ir, display or path).run(f)
    except OSError as exc:
        ir.diagnostics.append(Diagnostic(display or path, 0, D.UNREADABLE, f"cannot read: {exc.strerror or exc}"))
    finally:
        if collecting:
            gc.freeze()
            gc.unfreeze()
            gc.enable()
    return ir


class _Reader:
    def __init__(self, ir: IRFile, name: str):
        self.ir = ir
        self.name = name
        self.rec = Records()
        self.sub: Subgraph | None = None
        self.local: dict[str, int] = {}       # %N -> key within the open subgraph
        self.current: dict | None = None      # the record whose comment lines follow
        self.current_key = -1
        self.type_lines = 0
        self.section: dict | None = None      # "key: value" lines go here (# Attrs, subgraph attr)
        self.pending_sub_attrs: dict = {}
        self.bad_utf8 = 0
        self.bad_run: list[Diagnostic] = []       # the open run of consecutive bad lines
        self.block: str | None = None        # a top-level "name {" block such as "jit config {"
        self.in_order = False                # the "# Order:" listing after a subgraph
        self.eof_line = 0
        self.param_data: dict[int, dict] = {}  # key -> data of a parameter, for a later, typed declaration
        # while a construct of several lines is open (the message of an analyze_fail.ir, a subgraph
        # header printed one parameter per line), its method sees each line first: True, taken
        self.divert = None
        self.message: list[str] = []
        self.marks: list[tuple[int, int]] = []   # "#-----> N" lines: (line, key of the next record)
        self.split_header: tuple[str, int, list[tuple[str, int]]] | None = None

    # --- helpers ----------------------------------------------------------------------------------
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
                self.ir.diagnostics.extend(run)   # bad lines, all on one line
            self.bad_run = []

    def decode(self, raw: bytes, lineno: int) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            self.bad_utf8 += 1
            if self.bad_utf8 <= MAX_UTF8_REPORTED:
                self.diag(lineno, D.INVALID_UTF8, f"invalid UTF-8 at byte {exc.start} of the line; replaced")
            return raw.decode("utf-8", "replace")

    def check_trace_utf8(self, run: TraceRun) -> None:
        if not run.text:
            return   # the scanner found the whole block valid
        for i, raw in enumerate(run.text.split(b"\n")[: run.lines]):
            if not raw.isascii():
                self.decode(raw, run.line + i)

    # --- main loop --------------------------------------------------------------------------------
    def run(self, f: BinaryIO) -> None:
        first = f.read(4096)
        if b"\x00" in first:
            self.diag(1, D.BINARY, "binary content (NUL bytes): not a text IR dump")
            return
        if not is_dump_start(first):
            if not first.strip():
                self.diag(1, D.NOT_IR, "empty file: not a graph IR dump")
            else:
                self.diag(1, D.NOT_IR, "not a graph IR dump (it does not start with '# IR entry:')",
                          first.split(b"\n", 1)[0].decode("utf-8", "replace"))
            return
        f.seek(0)
        try:
            self.loop(f)
        finally:
            self.close_run()
        self.finish()

    def loop(self, f: BinaryIO) -> None:
        traces = self.ir.traces
        trace_start = -1       # byte offset where the open trace region starts
        trace_line = trace_end = 0
        lineno = 0
        items = scan(f)
        for item in items:
            while True:   # runs again only for the line that ended a multi-line record
                if type(item) is NodeRecord:
                    # the common case, a whole record at once; the same steps as its lines one by one
                    if trace_start >= 0:
                        if self.current_key >= 0:
                            traces[self.current_key] = (trace_line, trace_start, item[1])
                        trace_start = -1
                    self.node_record(item)
                    if item[6] >= 0 and self.current_key >= 0:
                        trace_line, trace_start, trace_end = item[5:8]
                    lineno = item[8]
                    break
                if type(item) is TraceRun:
                    # Source traces: most of the bytes. Only remember where they are.
                    if trace_start < 0:
                        trace_start, trace_line = item.start, item.line
                    trace_end = item.end
                    lineno = item.line + item.lines - 1
                    self.check_trace_utf8(item)
                    break
                lineno, start, raw = item
                if trace_start >= 0:
                    if self.current_key >= 0 and raw.startswith(NODE_COMMENT):
                        pass  # a "Corresponding ... candidate" block keeps the region open
                    else:
                        if self.current_key >= 0:
                            traces[self.current_key] = (trace_line, trace_start, start)
                        trace_start = -1
                if len(raw) >= MAX_RECORD_BYTES:
                    self.diag(lineno, D.LINE_TOO_LONG, f"line of {len(raw) + 1:,} bytes skipped",
                              raw[:80].decode("utf-8", "replace"))
                    self.current, self.current_key = None, -1
                    break
                if raw.startswith(TYPE_LINE) and self.type_lines and self.current is not None and raw.isascii():
                    self.type_lines += 1   # a kernel graph's second and third type lines: no rule reads them
                    break
                # trailing blanks (an editor, a copy) and a UTF-8 byte order mark carry no meaning
                line = self.decode(raw, lineno).rstrip("\r \t")
                if lineno == 1:
                    line = line.lstrip("\ufeff")
                if self.divert is not None and self.divert(line, lineno):
                    break
                if line.startswith("  %"):
                    first = lineno   # a record's line is its first line, however many it spans
                    ended_by = None
                    if line.count("(") != line.count(")") or line.count("[") != line.count("]"):
                        line, lineno, ended_by = self.continuation(line, items, lineno)
                    self.node_line(line, first)
                    if ended_by is not None:
                        item = ended_by
                        continue
                elif line.startswith("      "):
                    self.comment_line(line, lineno)
                else:
                    self.top_line(line, lineno)
                break
        if trace_start >= 0 and self.current_key >= 0:
            traces[self.current_key] = (trace_line, trace_start, trace_end)
        self.eof_line = lineno

    def continuation(self, line: str, items: Iterator, lineno: int) -> tuple[str, int, object]:
        """A node line holding a printed tensor continues until its brackets close. A line that
        starts a new record ends it early (the broken record is then reported, not swallowed);
        that line is returned, to be read next."""
        parts = [line]
        depth = line.count("(") - line.count(")") + line.count("[") - line.count("]")
        size = len(line)
        extra = 0
        for item in items:
            if type(item) is not tuple or item[2].startswith(_RECORD_STARTS):
                return " ".join(parts), lineno, item
            extra += 1
            lineno = item[0]
            text = self.decode(item[2], lineno).rstrip("\r")
            parts.append(text.strip())
            size += len(text)
            depth += text.count("(") - text.count(")") + text.count("[") - text.count("]")
            if depth <= 0 or size > MAX_RECORD_BYTES or extra >= MAX_CONTINUATION_LINES:
                break
        return " ".join(parts), lineno, None

    def node_record(self, item: NodeRecord) -> None:
        lineno, _, node, types, scope = item[:5]
        self.node_line(node.decode().rstrip(" \t"), lineno)
        if self.current is None:   # not read: its other lines are reported as they always are
            for raw in types.splitlines():
                lineno += 1
                self.comment_line(raw.decode(), lineno)
            return
        if types:
            first = types.find(b"\n")
            self.type_lines = types.count(b"\n")
            self.first_type_line(types[8:first].decode().strip(), types[:first], lineno + 1)
        if scope is not None:
            scope = scope.decode().rstrip(" \t")
            self.current["scope"] = scope[:-1] if scope.endswith(")") else scope

    # --- line kinds ----------------------------------------------------------------------------------
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
            else:
                m = _KEY_VALUE.match(line)
                if m:
                    self.ir.attrs.setdefault(self.block, {})[m.group(1)] = m.group(2)
            return
        if line.endswith(" {") and self.sub is None and not line.startswith("subgraph "):
            self.block = line[:-2].strip()
            return
        # 1.x prints "return(", 2.0's analyze_fail.ir "Primitive::Return{prim_type=1}("
        if line.startswith(("  Return(", "  return(", "  Primitive::Return{")):
            self.return_line(line, lineno)
            return
        if line.startswith("subgraph @"):
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
        if line.startswith("Node counting information"):
            self.section = None
            return
        if line == _FAILURE_END and self.ir.failure is not None:
            return
        if current is not None and line.startswith(" {"):
            self.current, self.current_key = current, current_key   # the record goes on
            self.strategy_line(line, lineno)
            return
        for label, key in (("Total number of nodes:", "total_nodes"), ("Total number of cnodes:", "total_cnodes")):
            if line.startswith(label):
                self.header_int(key, line[len(label):], line, lineno)
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
        elif line.startswith(("# Params:", "# Parameters:", "# SideEffect", "# Corresponding")) or _ORDER_ITEM.match(line):
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
            if line.startswith((_FAILURE_MESSAGE, _FAILURE_GRAPHS, _FAILURE_OPENING)):
                self.compile_failure(lineno)
                if line.startswith(_FAILURE_MESSAGE):
                    self.divert = self.message_line
                return
            if _NOTE.match(line):
                if _MARK.match(line):
                    self.marks.append((lineno, self.rec.next_key))
                return
            if self.ir.failure is not None and line.startswith(_FAILURE_NOTES):
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
        elif key == "stack":   # "# The total of function graphs in evaluation stack: 3/5 (Ignored 2 internal frames)."
            self.compile_failure(lineno).stack_depth = value.strip()

    def header_int(self, key: str, text: str, line: str, lineno: int) -> None:
        try:
            self.ir.header[key] = int(text.strip())
        except ValueError:
            self.diag(lineno, D.BAD_RECORD, f"expected a number for {key}", line)

    def param_line(self, line: str, lineno: int) -> None:
        try:
            name, out_type, has_default = parse_param_line(line)
        except GrammarError as exc:
            self.diag(lineno, D.BAD_RECORD, f"parameter line: {exc}", line)
            return
        rec = self.rec
        key = rec.params.get(name)
        if key is None:
            key = rec.new_key()
            rec.params[name] = key
            data = {"kind": "param", "graph": self.ir.entry or "", "id": name, "name": name[1:], "line": lineno,
                    "op": "Parameter", "scope": "", "out_type": out_type, "has_default": has_default}
            rec.nodes.append((key, data))
            self.param_data[key] = data
        else:
            data = self.param_data.get(key)
            if data is not None and data.get("out_type") is None:
                data["out_type"] = out_type

    def subgraph_header(self, line: str, lineno: int) -> None:
        if self.sub is not None and not self.sub.closed:
            self.diag(lineno, D.TRUNCATED, f"subgraph {self.sub.name} has no closing '}}'", line)
            self.close_subgraph(lineno)
        if line.endswith("(") and self.divert is None:
            # 2.0: "subgraph @g(" / "        %para1_x : <T>" / "        , %para2_y : <T>" / "    ) {"
            self.split_header = (line, lineno, [])
            self.divert = self.header_line
            return
        self.open_subgraph(line, lineno)

    def header_line(self, line: str, lineno: int) -> bool:
        """A line after a subgraph header that ends with "(": one of its parameters or its end."""
        head, first, params = self.split_header
        m = _HEADER_PARAM.match(line)
        if m and len(params) < MAX_HEADER_LINES:
            params.append((m.group(1), lineno))
            return True
        self.divert, self.split_header = None, None
        stripped = line.strip()
        closed = stripped.startswith(")") and stripped.endswith("{")
        if not closed:
            self.diag(first, D.BAD_RECORD, "subgraph header without its closing ') {'", head)
        types = {}
        for text, at in params:
            try:
                name, out_type, has_default = parse_param_line(text)
            except GrammarError as exc:
                self.diag(at, D.BAD_RECORD, f"subgraph parameter: {exc}", text)
                continue
            types[name] = (out_type, has_default)
        self.open_subgraph(f"{head}{', '.join(types)}{stripped if closed else ') {'}", first, head, types)
        return closed

    def open_subgraph(self, line: str, lineno: int, quoted: str | None = None,
                      types: dict | None = None) -> None:
        try:
            name, parent, params = parse_header(line)
        except GrammarError as exc:
            self.diag(lineno, D.BAD_RECORD, f"subgraph header: {exc}", quoted or line)
            name, parent, params = f"@?line{lineno}", None, ()
        first = self.ir.subgraphs.get(name)
        if first is not None:
            # never one graph under two headers: the later one gets a name of its own
            n = 2
            while f"{name}#{n}" in self.ir.subgraphs:
                n += 1
            self.diag(lineno, D.DUPLICATE_GRAPH, f"subgraph {name} printed again (first at line {first.line}); "
                      f"read as {name}#{n}", quoted or line)
            name = f"{name}#{n}"
        sub = Subgraph(name=name, line=lineno, parent=parent, attrs=self.pending_sub_attrs)
        self.pending_sub_attrs = {}
        self.section = None
        self.ir.subgraphs[name] = sub
        self.sub = sub
        self.local = self.rec.locals[name] = {}
        rec = self.rec
        for p in params:
            pname = str(p)
            key = rec.params.get(pname)
            if key is None:
                key = rec.new_key()
                rec.params[pname] = key
                data = {"kind": "param", "graph": name, "id": pname, "name": pname[1:],
                        "line": lineno, "op": "Parameter", "scope": "", "out_type": None}
                rec.nodes.append((key, data))
                self.param_data[key] = data
            sub.params.append(key)
            if types and pname in types:
                data = self.param_data.get(key)
                if data is not None and data.get("out_type") is None:
                    data["out_type"], data["has_default"] = types[pname]

    def close_subgraph(self, lineno: int) -> None:
        if self.sub is None:
            self.diag(lineno, D.UNKNOWN_LINE, "'}' outside a subgraph; skipped", "}")
            return
        self.sub.closed = True
        self.sub = None
        self.local = {}

    def node_line(self, line: str, lineno: int) -> None:
        self.current, self.current_key = None, -1
        m = NODE_LINE.match(line)
        if m is None:
            self.diag(lineno, D.BAD_RECORD, "node line without '%N(name) = '", line)
            return
        node_id, name, rest = m.groups()
        self.record(lineno, node_id, name, rest, line)

    def return_line(self, line: str, lineno: int) -> None:
        self.current, self.current_key = None, -1
        self.record(lineno, "Return", "", line[2:], line)

    def record(self, lineno: int, node_id: str, name: str, rest: str, line: str) -> None:
        if self.sub is None:
            if self.split_header is not None:
                self.header_line("", lineno)   # a split header that never closed: its nodes follow
            if self.sub is None:
                self.diag(lineno, D.BAD_RECORD, "node outside a subgraph; skipped", line)
                return
        try:
            callee, args, raw_op, op, blocks = parse_node(rest)
        except GrammarError as exc:
            col = (exc.column or 1) + (len(line) - len(rest))
            self.diag(lineno, D.BAD_RECORD, f"unparseable record ({exc}); skipped", line[max(0, col - 20):])
            return
        is_return = node_id == "Return"
        rec = self.rec
        key = rec.next_key
        rec.next_key = key + 1
        graph = self.sub.name
        get = blocks.get
        data = {
            "kind": "return" if is_return else "cnode",
            "graph": graph,
            "id": node_id,
            "name": name,
            "line": lineno,
            "op": "Return" if is_return else op,
            "raw_op": raw_op,
            "instance": get("instance"),
            "primitive_attrs": get("primitive_attrs", NO_ATTRS),
            "cnode_attrs": get("cnode_attrs", NO_ATTRS),
            "primal_attrs": get("cnode_primal_attrs", NO_ATTRS),
            "parallel_info": get("parallel_info", NO_ATTRS),
            "in_types": (),
            "out_type": None,
            "scope": "",
            "args": args,
        }
        rec.nodes.append((key, data))
        self.sub.nodes.append(key)
        if is_return:
            self.sub.return_node = key
        else:
            if node_id in self.local:
                self.diag(lineno, D.BAD_RECORD, f"{node_id} defined twice in {graph}", line)
            self.local[node_id] = key
        if isinstance(callee, GraphRef):
            rec.calls.append((key, str(callee), args, graph))
            rec.uses.append((args, key, graph, None, lineno))
        else:
            # a value holding graphs, called: "%0[@@g](%1)", a Switch's "%5[@FuncUnion(@a, @b)]()";
            # linked to the value (below) and to each graph it may run
            if (op == "call" and type(callee) is Call and callee.bracket == "["
                    and isinstance(callee.name, (Ref, FreeVar))):
                rec.value_calls.extend((key, called, args, graph) for called in _graph_refs(callee.args))
                callee = callee.name
            rec.uses.append((args, key, graph, callee if isinstance(callee, (Ref, FreeVar)) else None, lineno))
            if op == "Partial" and args and isinstance(args[0], GraphRef):
                rec.partials.append((key, str(args[0]), args[1:], graph))
        self.current, self.current_key = data, key
        self.type_lines = 0

    def comment_line(self, line: str, lineno: int) -> None:
        data = self.current
        body = line[6:]
        if body.startswith(":"):   # 2.0's analyze_fail.ir prints ":(<T>) -> (<T>)"
            if data is None:
                self.diag(lineno, D.UNKNOWN_LINE, "type line without a node; skipped", line)
                return
            self.type_lines += 1
            if self.type_lines == 1:
                self.first_type_line(body[1:].strip(), line, lineno)
            return
        if body.startswith("# Fullname with scope: (") or body.startswith("# Scope: ("):
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

    def first_type_line(self, body: str, line: str | bytes, lineno: int) -> None:
        """The types of the current node; ``line`` (its bytes, from a whole record) is only quoted
        when the grammar rejects it."""
        data = self.current
        try:
            data["in_types"], data["out_type"] = parse_type_line(body)
        except GrammarError as exc:
            self.diag(lineno, D.BAD_RECORD, f"type line: {exc}", line if isinstance(line, str) else line.decode())

    def strategy_line(self, line: str, lineno: int) -> None:
        """1.7-2.1 parallel dumps: the strategy block on its own line, the type line glued after it:
        `` {in_strategy: ((2, 1), (1, 4))}      : (<T>, <T>) -> (<T>)``."""
        data = self.current
        depth, end = 0, -1
        for i, ch in enumerate(line):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    end = i + 1
                    break
        rest = line[end:].strip() if end > 0 else ""
        if end < 0 or (rest and not rest.startswith(":")):
            self.diag(lineno, D.UNKNOWN_LINE, "unknown line kind; skipped", line)
            return
        try:
            block = parse_attrs(line[:end].strip())
        except GrammarError as exc:
            self.diag(lineno, D.BAD_RECORD, f"strategy block: {exc}", line)
            return
        data["parallel_info"] = {**data["parallel_info"], **block}   # the parsed dict may be shared
        if rest:
            self.type_lines += 1
            if self.type_lines == 1:
                self.first_type_line(rest[1:].strip(), line, lineno)

    # --- analyze_fail.ir ----------------------------------------------------------------------------
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
            self.ir.failure.line = lineno
        self.message.append(line)
        return True

    def end_message(self) -> None:
        self.divert = None
        lines = self.message
        while lines and (not lines[-1].strip() or lines[-1].startswith("# ===")):
            lines.pop()   # the rule of the next banner
        # after the rule of the banner that opened it
        start = next((i for i, ln in enumerate(lines) if ln.strip() and not ln.startswith("# ===")), len(lines))
        self.ir.failure.line += start
        self.ir.failure.message = "\n".join(lines[start:])
        self.message = []

    def failure_diagnostic(self) -> None:
        failure = self.ir.failure
        nodes = self.ir.graph._node
        # a mark is followed by the record it marks; a mark whose record was not read names nothing
        failure.failed_at = [key for line, key in self.marks
                             if nodes.get(key, {}).get("kind") in ("cnode", "return") and nodes[key]["line"] > line]
        said = next((ln.strip() for ln in failure.message.splitlines()
                     if ln.strip() and not _MESSAGE_FRAME.match(ln.strip())), "")
        parts = ["analyze_fail.ir: MindSpore could not compile this graph"]
        if said:
            parts.append(f' ("{said}")')
        line = failure.line
        if failure.failed_at:
            node = nodes[failure.failed_at[-1]]
            line = node["line"]
            parts.append(f"; evaluation failed at {node['id']} {node['op']} in {node['graph']}")
        parts.append("; no rule runs on it: the rules read the graphs of later passes (autodiff, recompute, "
                     "parallel), which a failed compile never reaches")
        if failure.message:
            parts.append("; `irlint inspect` prints the whole message")
        self.diag(line, D.COMPILE_FAILURE, "".join(parts), said)

    # --- end of file ----------------------------------------------------------------------------------
    def finish(self) -> None:
        if self.divert is not None:   # the file ends in a message or a split header
            if self.split_header is not None:
                self.header_line("", self.eof_line)
            else:
                self.end_message()
        if self.sub is not None and not self.sub.closed:
            self.diag(self.eof_line, D.TRUNCATED, f"file ends inside subgraph {self.sub.name} (truncated dump?)")
        self.close_run()
        self.ir.diagnostics[:] = D.merge_line_runs(self.ir.diagnostics)
        assemble(self.ir, self.rec, self.diag)
        if self.ir.failure is not None:
            self.failure_diagnostic()
        check_counts(self.ir, self.eof_line, self.diag)


def _graph_refs(values: tuple) -> Iterator[str]:
    """The graphs named in a called value's brackets: ``@@g``, the members of ``@FuncUnion(@a, @b)``."""
    for value in values:
        if isinstance(value, GraphRef):
            yield value[1:] if value.startswith("@@") else str(value)
        elif isinstance(value, Call):
            yield from _graph_refs(value.args)
