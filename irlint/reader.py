"""Streams a dump file line by line into an ``IRFile``.

Lines are classified by prefix; only the structured pieces of a record (the call, attribute
blocks, type line, parameter and subgraph headers) go to the Lark grammar. Source-trace lines,
most of a file's bytes, are not decoded: a node keeps their byte range and reads them on demand.
A line that cannot be read becomes a diagnostic and reading resumes at the next line.
"""
from __future__ import annotations

import gc
import re
from typing import Any, BinaryIO

import networkx as nx

from . import diagnostics as D
from .diagnostics import Diagnostic, excerpt
from .discover import is_dump_start
from .model import IRFile, Subgraph
from .stages import stage_of
from .syntax import GrammarError, parse_attrs, parse_call, parse_header, parse_param, parse_types
from .values import Call, FreeVar, GraphRef, Ref

MAX_RECORD_BYTES = 4 * 1024 * 1024   # a node record longer than this is skipped, not parsed
MAX_CONTINUATION_LINES = 100_000     # a multi-line tensor value that never closes

_NODE = re.compile(r"  (%\d+)\(([^\s)]*)\) = (.*)\Z", re.S)
_ATTR_MARKERS = (" {instance name: ", " primitive_attrs: {", " cnode_attrs: {", " cnode_primal_attrs: {")
_ORDER_ITEM = re.compile(r"#\s+\d+: ")
_PARA_INDEX = re.compile(r"%para(\d+)_")
_KEY_VALUE = re.compile(r"([\w.\-]+) ?: ?(.*)\Z")   # 2.10 "key: value", 1.x-2.2 "key : value"
_GRAPH_FLAG = re.compile(r"([A-Za-z_]\w*): (-?\d+)\Z")  # "switch_input: 1", "indirect: 1" before "subgraph attr:"
# Header comments of every version: "# IR entry: @g" (2.1+), "#IR entry      : @g" (1.x, 2.0),
# "#Total subgraph : 3", "#attrs         :", "# order:".
_HASH_KEY = re.compile(r"#\s*([A-Za-z][A-Za-z ]*?)\s*:\s*(.*)\Z")
_HASH_KEYS = {"ir entry": "entry", "total subgraphs": "total_subgraphs", "total subgraph": "total_subgraphs",
              "total params": "total_params", "attrs": "attrs", "order": "order", "params": "", "parameters": "",
              "num of function graphs in stack": "", "num of total function graphs": ""}
# analyze_fail.ir (a graph dump written when type inference fails) opens with numbered notes,
# a "# ====" rule, and marks the failing node with "#------------------------> N".
_NOTE = re.compile(r"#\s*(?:\d+\.\S|=+\Z|-+>)")

TRACE = b"      # In file "
TYPE = b"      : "
SCOPES = (b"      # Fullname with scope: (", b"      # Scope: (")
NODE_COMMENT = b"      # "
CANDIDATE = b"      # Corresponding "
_RECORD_STARTS = (b"  %", b"  Return(", b"      : ", b"      # ", b"}", b"subgraph ", b"# ", b"%para")


class _Lines:
    """Lines of a binary file, with one line of push-back."""

    def __init__(self, f: BinaryIO):
        self._it = iter(f)
        self._back: list[bytes] = []

    def __iter__(self) -> "_Lines":
        return self

    def __next__(self) -> bytes:
        if self._back:
            return self._back.pop()
        return next(self._it)

    def push(self, raw: bytes) -> None:
        self._back.append(raw)


def normalize_op(raw: str) -> str:
    return raw[9:] if raw.startswith("PrimFunc_") else raw


def read_ir(path: str, display: str | None = None, stream: BinaryIO | None = None) -> IRFile:
    """Read one dump. Never raises for bad content; I/O errors become a diagnostic too.

    ``stream``: read this seekable binary stream instead of opening ``path`` (standard input,
    a decompressed dump); source traces are then read back from it.
    """
    ir = IRFile.empty(path)
    ir.source = stream
    # Reading only adds objects, and the cyclic collector would rescan the growing graph again
    # and again (a third of the time on a 100 MB dump); it runs once the read is over.
    collecting = gc.isenabled()
    gc.disable()
    try:
        if stream is not None:
            stream.seek(0)
            _Reader(ir, display or path).run(stream)
        else:
            with open(path, "rb") as f:
                _Reader(ir, display or path).run(f)
    except OSError as exc:
        ir.diagnostics.append(Diagnostic(display or path, 0, D.UNREADABLE, f"cannot read: {exc.strerror or exc}"))
    finally:
        if collecting:
            gc.enable()
    return ir


class _Reader:
    def __init__(self, ir: IRFile, name: str):
        self.ir = ir
        self.name = name
        self.g: nx.MultiDiGraph = ir.graph
        self.nodes: list[tuple[int, dict]] = []
        self.pending_edges: list[tuple[Any, int, int, str]] = []  # (ref, consumer, pos, graph)
        self.calls: list[tuple[int, str, tuple, str]] = []  # (call node, callee graph, args refs, graph)
        self.next_key = 0
        self.sub: Subgraph | None = None
        self.local: dict[str, int] = {}       # %N -> key within the open subgraph
        self.params: dict[str, int] = {}      # %paraN_x -> key (parameter names are file-unique)
        self.by_name: dict[tuple[str, str], int] = {}  # (graph, name) -> key, for $(@g:name)
        self.graph_nodes: dict[str, int] = {}
        self.current: dict | None = None      # the record whose comment lines follow
        self.current_key = -1
        self.type_lines = 0
        self.section: dict | None = None      # "key: value" lines go here (# Attrs, subgraph attr)
        self.pending_sub_attrs: dict = {}
        self.bad_utf8 = 0
        self.block: str | None = None        # a top-level "name {" block such as "jit config {"
        self.in_order = False                # the "# Order:" listing after a subgraph

    # --- helpers ----------------------------------------------------------------------------------
    def diag(self, line: int, code: str, message: str, text: str = "") -> None:
        self.ir.diagnostics.append(Diagnostic(self.name, line, code, message, excerpt(text)))

    def decode(self, raw: bytes, lineno: int) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            self.bad_utf8 += 1
            if self.bad_utf8 <= 20:
                self.diag(lineno, D.INVALID_UTF8, f"invalid UTF-8 at byte {exc.start} of the line; replaced")
            return raw.decode("utf-8", "replace")

    def new_key(self) -> int:
        key = self.next_key
        self.next_key += 1
        return key

    def graph_node(self, name: str) -> int:
        key = self.graph_nodes.get(name)
        if key is None:
            key = self.new_key()
            self.graph_nodes[name] = key
            self.nodes.append((key, {"kind": "subgraph", "graph": name, "id": name, "name": name[1:],
                                     "line": 0, "op": "subgraph", "scope": ""}))
        return key

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
        self.loop(f)
        self.finish()

    def loop(self, f: BinaryIO) -> None:
        lineno = 0
        offset = 0
        traces = self.ir.traces
        trace_start = -1       # byte offset where the open trace region starts
        trace_line = 0
        it = _Lines(f)
        for raw in it:
            lineno += 1
            start = offset
            offset += len(raw)
            # Source traces: most of the bytes. Only remember where they are.
            if raw.startswith(TRACE) or raw.startswith(CANDIDATE) or raw.startswith(b"# In file "):
                if trace_start < 0:
                    trace_start, trace_line = start, lineno
                if not raw.isascii():
                    try:
                        raw.decode("utf-8")
                    except UnicodeDecodeError:
                        self.decode(raw, lineno)
                continue
            if trace_start >= 0:
                if self.current_key >= 0 and raw.startswith(NODE_COMMENT):
                    pass  # a "Corresponding ... candidate" block keeps the region open
                else:
                    if self.current_key >= 0:
                        traces[self.current_key] = (trace_line, trace_start, start)
                    trace_start = -1
            if len(raw) > MAX_RECORD_BYTES:
                self.diag(lineno, D.LINE_TOO_LONG, f"line of {len(raw):,} bytes skipped",
                          raw[:80].decode("utf-8", "replace"))
                self.current, self.current_key = None, -1
                continue
            line = self.decode(raw, lineno).rstrip("\r\n")
            if line.startswith("  %"):
                first = lineno   # a record's line is its first line, however many it spans
                if line.count("(") != line.count(")") or line.count("[") != line.count("]"):
                    line, extra, offset = self.continuation(line, it, offset, lineno)
                    lineno += extra
                self.node_line(line, first)
            elif line.startswith("      "):
                self.comment_line(line, lineno)
            else:
                self.top_line(line, lineno)
        if trace_start >= 0 and self.current_key >= 0:
            traces[self.current_key] = (trace_line, trace_start, offset)
        self.eof_line = lineno

    def continuation(self, line: str, it: "_Lines", offset: int, lineno: int) -> tuple[str, int, int]:
        """A node line holding a printed tensor continues until its brackets close. A line that
        starts a new record ends it early (the broken record is then reported, not swallowed)."""
        parts = [line]
        depth = line.count("(") - line.count(")") + line.count("[") - line.count("]")
        size = len(line)
        extra = 0
        for raw in it:
            if raw.startswith(_RECORD_STARTS):
                it.push(raw)
                break
            extra += 1
            offset += len(raw)
            text = self.decode(raw, lineno + extra).rstrip("\r\n")
            parts.append(text.strip())
            size += len(text)
            depth += text.count("(") - text.count(")") + text.count("[") - text.count("]")
            if depth <= 0 or size > MAX_RECORD_BYTES or extra >= MAX_CONTINUATION_LINES:
                break
        return " ".join(parts), extra, offset

    # --- line kinds ----------------------------------------------------------------------------------
    def top_line(self, line: str, lineno: int) -> None:
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
        if line.startswith(("  Return(", "  return(")):  # 1.x prints "return("
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
        m = _HASH_KEY.match(line)
        key = _HASH_KEYS.get(" ".join(m.group(1).split()).lower()) if m else None
        if key is None:
            if _NOTE.match(line):
                return
            self.diag(lineno, D.UNKNOWN_LINE, "unknown comment line; skipped", line)
            return
        self.section = None
        value = m.group(2)
        if key == "entry":
            self.ir.entry = value.strip()
        elif key in ("total_subgraphs", "total_params"):
            self.header_int(key, value, line, lineno)
        elif key == "attrs":
            self.section = self.ir.attrs
        elif key == "order":
            self.in_order = True

    def header_int(self, key: str, text: str, line: str, lineno: int) -> None:
        try:
            self.ir.header[key] = int(text.strip())
        except ValueError:
            self.diag(lineno, D.BAD_RECORD, f"expected a number for {key}", line)

    def param_line(self, line: str, lineno: int) -> None:
        try:
            name, fields = parse_param(line)
        except GrammarError as exc:
            self.diag(lineno, D.BAD_RECORD, f"parameter line: {exc}", line)
            return
        types = [f for f in fields if isinstance(f, Call) and f.bracket == "<"]
        out_type = None
        if types:
            try:
                out_type = parse_types(f"({_type_source(line)})")[0][0]
            except (GrammarError, IndexError):
                out_type = None
        key = self.params.get(name)
        if key is None:
            key = self.new_key()
            self.params[name] = key
            data = {"kind": "param", "graph": self.ir.entry or "", "id": name, "name": name[1:], "line": lineno,
                    "op": "Parameter", "scope": "", "out_type": out_type,
                    "has_default": "has_default" in fields}
            self.nodes.append((key, data))
            self.by_name[(data["graph"], data["name"])] = key
        else:
            data = self.node_data(key)
            if data is not None and data.get("out_type") is None:
                data["out_type"] = out_type

    def node_data(self, key: int) -> dict | None:
        for k, d in reversed(self.nodes):
            if k == key:
                return d
        return None

    def subgraph_header(self, line: str, lineno: int) -> None:
        if self.sub is not None and not self.sub.closed:
            self.diag(lineno, D.TRUNCATED, f"subgraph {self.sub.name} has no closing '}}'", line)
            self.close_subgraph(lineno)
        try:
            name, parent, params = parse_header(line)
        except GrammarError as exc:
            self.diag(lineno, D.BAD_RECORD, f"subgraph header: {exc}", line)
            name, parent, params = f"@?line{lineno}", None, ()
        sub = Subgraph(name=name, line=lineno, parent=parent, attrs=self.pending_sub_attrs)
        self.pending_sub_attrs = {}
        self.section = None
        self.ir.subgraphs[name] = sub
        self.sub = sub
        self.local = {}
        for p in params:
            pname = str(p)
            key = self.params.get(pname)
            if key is None:
                key = self.new_key()
                self.params[pname] = key
                self.nodes.append((key, {"kind": "param", "graph": name, "id": pname, "name": pname[1:],
                                         "line": lineno, "op": "Parameter", "scope": "", "out_type": None}))
                self.by_name[(name, pname[1:])] = key
            sub.params.append(key)

    def close_subgraph(self, lineno: int) -> None:
        if self.sub is None:
            self.diag(lineno, D.UNKNOWN_LINE, "'}' outside a subgraph; skipped", "}")
            return
        self.sub.closed = True
        self.sub = None
        self.local = {}

    def node_line(self, line: str, lineno: int) -> None:
        self.current, self.current_key = None, -1
        m = _NODE.match(line)
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
            self.diag(lineno, D.BAD_RECORD, "node outside a subgraph; skipped", line)
            return
        cut = len(rest)
        marks = []
        for marker in _ATTR_MARKERS:
            pos = rest.find(marker)
            if pos >= 0:
                marks.append((pos, marker))
                cut = min(cut, pos)
        head = rest[:cut].rstrip()
        try:
            callee, args = parse_call(head)
            blocks = self.attr_blocks(rest, sorted(marks))
        except GrammarError as exc:
            col = (exc.column or 1) + (len(line) - len(rest))
            self.diag(lineno, D.BAD_RECORD, f"unparseable record ({exc}); skipped", line[max(0, col - 20):])
            return
        is_return = node_id == "Return"
        if type(callee) is str:  # Ref and GraphRef are str subclasses: they are calls
            raw_op = callee
            op = normalize_op(callee)
        elif _bracket_attrs(callee):
            # analyze_fail.ir prints a primitive's attributes in brackets: Depend[side_effect_propagate: I64(1)](..)
            raw_op = callee.name
            op = normalize_op(raw_op)
            blocks.setdefault("primitive_attrs", {}).update(kv for d in callee.args for kv in d.items())
        else:
            raw_op = str(callee) if not isinstance(callee, GraphRef) else f"call {callee}"
            op = "call"
        key = self.new_key()
        graph = self.sub.name
        data = {
            "kind": "return" if is_return else "cnode",
            "graph": graph,
            "id": node_id,
            "name": name,
            "line": lineno,
            "op": "Return" if is_return else op,
            "raw_op": raw_op,
            "instance": blocks.get("instance"),
            "primitive_attrs": blocks.get("primitive_attrs", {}),
            "cnode_attrs": blocks.get("cnode_attrs", {}),
            "primal_attrs": blocks.get("cnode_primal_attrs", {}),
            "parallel_info": blocks.get("parallel_info", {}),
            "in_types": (),
            "out_type": None,
            "scope": "",
            "args": args,
        }
        self.nodes.append((key, data))
        self.sub.nodes.append(key)
        if is_return:
            self.sub.return_node = key
        else:
            if node_id in self.local:
                self.diag(lineno, D.BAD_RECORD, f"{node_id} defined twice in {graph}", line)
            self.local[node_id] = key
            if name:
                self.by_name[(graph, name)] = key
        for pos, arg in enumerate(args):
            self.pending_edges.append((arg, key, pos, graph))
        if isinstance(callee, GraphRef):
            self.calls.append((key, str(callee), args, graph))
        elif isinstance(callee, (Ref, FreeVar)):
            self.pending_edges.append((callee, key, -1, graph))
        self.current, self.current_key = data, key
        self.type_lines = 0

    def attr_blocks(self, rest: str, marks: list[tuple[int, str]]) -> dict:
        blocks: dict[str, Any] = {}
        for i, (pos, marker) in enumerate(marks):
            end = marks[i + 1][0] if i + 1 < len(marks) else len(rest)
            text = rest[pos:end].strip()
            if marker == " {instance name: ":
                close = text.rfind("}")
                blocks["instance"] = text[len("{instance name: "): close if close > 0 else len(text)].strip()
            else:
                label, _, body = text.partition(": ")
                first, *extra = _brace_groups(body)
                blocks[label] = parse_attrs(first)
                # Parallel dumps print the op's strategies last, as an unnamed block: {in_strategy: ...}
                for group in extra:
                    blocks.setdefault("parallel_info", {}).update(parse_attrs(group))
        return blocks

    def comment_line(self, line: str, lineno: int) -> None:
        data = self.current
        body = line[6:]
        if body.startswith(": "):
            if data is None:
                self.diag(lineno, D.UNKNOWN_LINE, "type line without a node; skipped", line)
                return
            self.type_lines += 1
            if self.type_lines == 1:
                try:
                    ins, outs = parse_types(body[2:].strip())
                except GrammarError as exc:
                    self.diag(lineno, D.BAD_RECORD, f"type line: {exc}", line)
                    return
                if outs is None:       # Return: "(<T>)" is its input
                    data["in_types"] = ins
                    data["out_type"] = ins[0] if ins else None
                else:
                    data["in_types"] = ins
                    data["out_type"] = outs[0] if len(outs) == 1 else (outs[0] if outs else None)
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

    # --- end of file ----------------------------------------------------------------------------------
    def finish(self) -> None:
        if self.sub is not None and not self.sub.closed:
            self.diag(getattr(self, "eof_line", 0), D.TRUNCATED,
                      f"file ends inside subgraph {self.sub.name} (truncated dump?)")
        g = self.g
        g.add_nodes_from(self.nodes)
        edges = []
        local_maps: dict[str, dict[str, int]] = {}
        for sub in self.ir.subgraphs.values():
            local_maps[sub.name] = {g.nodes[k]["id"]: k for k in sub.nodes if g.nodes[k]["kind"] == "cnode"}
        unresolved = 0
        const_nodes = []
        for arg, consumer, pos, graph in self.pending_edges:
            src = self.resolve(arg, graph, local_maps)
            if src is None:
                if isinstance(arg, (Ref, FreeVar)):
                    unresolved += 1
                    if unresolved <= 20:
                        data = g.nodes[consumer]
                        self.diag(data["line"], D.UNRESOLVED, f"{arg} is not defined in {graph}")
                    continue
                if pos < 0:
                    continue
                key = self.new_key()
                const_nodes.append((key, {"kind": "const", "graph": graph, "id": "", "name": "", "line": g.nodes[consumer]["line"],
                                          "op": "Constant", "scope": "", "value": arg}))
                src = key
            if pos < 0:
                edges.append((src, consumer, "callee", {"kind": "callee"}))
            else:
                edges.append((src, consumer, pos, {"kind": "data"}))
        g.add_nodes_from(const_nodes)
        for call, callee, args, graph in self.calls:
            sub = self.ir.subgraphs.get(callee)
            gkey = self.graph_node(callee)
            if gkey not in g:
                g.add_node(gkey, **dict(self.nodes[-1][1]))
            edges.append((gkey, call, "callee", {"kind": "callee"}))
            if sub is None:
                continue
            for i, arg in enumerate(args[: len(sub.params)]):
                src = self.resolve(arg, graph, local_maps)
                if src is not None:
                    edges.append((src, sub.params[i], ("in", i), {"kind": "call_in"}))
            if sub.return_node is not None:
                edges.append((sub.return_node, call, "out", {"kind": "call_out"}))
        g.add_edges_from(edges)
        self.check_counts()

    def resolve(self, arg: Any, graph: str, local_maps: dict[str, dict[str, int]]) -> int | None:
        if isinstance(arg, Ref):
            s = str(arg)
            if s.startswith("%para"):
                key = self.params.get(s)
                if key is None:
                    # early stages print a parameter's declared and referenced names differently
                    # ("%para1_args" vs "%para1_Parameter_3"); the number is what identifies it
                    m = _PARA_INDEX.match(s)
                    key = self.params_by_index().get(m.group(1)) if m else None
                return key
            key = local_maps.get(graph, {}).get(s)
            return key
        if isinstance(arg, FreeVar):
            return self.by_name.get((arg.graph, arg.name))
        if isinstance(arg, GraphRef):
            name = str(arg)
            if name.startswith("@@"):
                name = name[1:]
            key = self.graph_nodes.get(name)
            if key is None:
                key = self.graph_node(name)
                self.g.add_node(key, **self.nodes[-1][1])
            return key
        return None

    def params_by_index(self) -> dict[str, int]:
        if not hasattr(self, "_para_index"):
            self._para_index = {}
            for name, key in self.params.items():
                m = _PARA_INDEX.match(name)
                if m:
                    self._para_index.setdefault(m.group(1), key)
        return self._para_index

    def check_counts(self) -> None:
        header = self.ir.header
        if "total_cnodes" in header and not any(d.code == D.TRUNCATED for d in self.ir.diagnostics):
            if self.ir.cnode_count != header["total_cnodes"]:
                self.diag(0, D.COUNT_MISMATCH,
                          f"read {self.ir.cnode_count} cnodes, the header says {header['total_cnodes']}")
        if "total_subgraphs" in header and len(self.ir.subgraphs) < header["total_subgraphs"]:
            if not any(d.code == D.TRUNCATED for d in self.ir.diagnostics):
                self.diag(getattr(self, "eof_line", 0), D.TRUNCATED,
                          f"read {len(self.ir.subgraphs)} of {header['total_subgraphs']} subgraphs (truncated dump?)")


def _brace_groups(text: str) -> list[str]:
    """``{a: 1} {b: 2}`` -> its top-level brace groups; anything else comes back whole."""
    if text.count("{") < 2:
        return [text]
    groups: list[str] = []
    depth, start, quote, prev = 0, 0, "", ""
    for i, ch in enumerate(text):
        if quote:
            if ch == quote and prev != "\\":
                quote = ""
        elif ch == '"':
            quote = ch
        elif ch == "{":
            if depth == 0:
                if text[start:i].strip():
                    return [text]
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                groups.append(text[start:i + 1])
                start = i + 1
        prev = ch
    if depth or text[start:].strip() or not groups:
        return [text]
    return groups


def _bracket_attrs(callee: Any) -> bool:
    return (isinstance(callee, Call) and callee.bracket == "[" and type(callee.name) is str and bool(callee.args)
            and all(isinstance(a, dict) for a in callee.args))


def _type_source(line: str) -> str:
    """The ``<...>`` type of a parameter line: ``%para1_x: <T> : [..]`` -> ``<T>``."""
    start = line.find("<")
    depth = 0
    for i in range(start, len(line)):
        c = line[i]
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
            if depth == 0:
                return line[start: i + 1]
    return line[start:]
