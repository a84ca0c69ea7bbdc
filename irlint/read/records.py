"""The reader's records: subgraph headers (also 2.0's, one parameter a line), parameter lines,
node records parsed with the grammar (``irlint.read.record``) into the rows ``assemble`` builds the
model from, their type lines and 1.7-2.1's strategy lines."""

from __future__ import annotations

import re
from collections.abc import Iterator

from .. import diagnostics as D
from ..model import Subgraph
from .record import (
    MAX_SHARED_TYPE_LINES,
    NODE_LINE,
    TYPE_LINES_READ,
    GrammarError,
    parse_node,
    parse_param_line,
    parse_type_line,
)
from .state import ReaderState
from .syntax import parse_attrs, parse_header
from .values import Call, FreeVar, GraphRef, Ref, TensorType

# 2.0 prints a subgraph's parameters one per line: "        , %para2_y : <Tensor[Float32], ()>"
_HEADER_PARAM = re.compile(r"\s+(?:, )?(%para\S* ?:.*)\Z")
MAX_HEADER_LINES = 100_000

# The attributes of a node that has none: one dict for all (read-only, as every parsed value is).
NO_ATTRS: dict = {}


class RecordParsing(ReaderState):
    """Part of the reader (``reader._Reader``): subgraphs and nodes."""

    def param_line(self, line: str, lineno: int) -> None:
        try:
            name, out_type, has_default = parse_param_line(line)
        except GrammarError as exc:
            self.diag(lineno, D.BAD_RECORD, f"parameter line: {exc}", line)
            return
        key = self.rec.params.get(name)
        if key is None:
            key = self.new_param(name, self.ir.entry or "", lineno, out_type)
            self.param_data[key]["has_default"] = has_default
        else:
            known = self.param_data.get(key)
            if known is not None and known.get("out_type") is None:
                known["out_type"] = out_type

    def new_param(self, name: str, graph: str, lineno: int, out_type: TensorType | None = None) -> int:
        """The record of a parameter named for the first time (a header's or a parameter line's): its key."""
        rec = self.rec
        key = rec.new_key()
        rec.params[name] = key
        data = {
            "kind": "param",
            "graph": graph,
            "id": name,
            "name": name[1:],
            "line": lineno,
            "op": "Parameter",
            "scope": "",
            "out_type": out_type,
        }
        rec.nodes.append((key, data))
        self.param_data[key] = data
        return key

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
        assert self.split_header is not None  # set with the divert that calls this
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

    def open_subgraph(self, line: str, lineno: int, quoted: str | None = None, types: dict | None = None) -> None:
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
            self.diag(
                lineno,
                D.DUPLICATE_GRAPH,
                f"subgraph {name} printed again (first at line {first.line}); read as {name}#{n}",
                quoted or line,
            )
            name = f"{name}#{n}"
        sub = Subgraph(name=name, line=lineno, parent=parent, attrs=self.pending_sub_attrs)
        self.pending_sub_attrs = {}
        self.section = None
        self.ir.subgraphs[name] = sub
        self.sub = sub
        self.local = self.rec.locals[name] = {}
        for p in params:
            pname = str(p)
            key = self.rec.params.get(pname)
            if key is None:
                key = self.new_param(pname, name, lineno)
            sub.params.append(key)
            if types and pname in types:
                known = self.param_data.get(key)
                if known is not None and known.get("out_type") is None:
                    known["out_type"], known["has_default"] = types[pname]

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
        if self.open_record is not None:  # end_record, inline: this runs once a record
            if not self.type_lines:
                self.untyped_records.append(self.open_record[:2])
            elif not self.open_record[2]:
                self.typed_records += 1
            self.open_record = None
        if self.sub is None:
            if self.split_header is not None:
                self.header_line("", lineno)  # a split header that never closed: its nodes follow
            if self.sub is None:
                self.diag(lineno, D.BAD_RECORD, "node outside a subgraph; skipped", line)
                return
        try:
            callee, args, raw_op, op, blocks = parse_node(rest)
        except GrammarError as exc:
            col = (exc.column or 1) + (len(line) - len(rest))
            self.diag(lineno, D.BAD_RECORD, f"unparseable record ({exc}); skipped", line[max(0, col - 20) :])
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
            if (
                op == "call"
                and type(callee) is Call
                and callee.bracket == "["
                and isinstance(callee.name, (Ref, FreeVar))
            ):
                rec.value_calls.extend((key, called, args, graph) for called in _graph_refs(callee.args))
                callee = callee.name
            rec.uses.append((args, key, graph, callee if isinstance(callee, (Ref, FreeVar)) else None, lineno))
            if op == "Partial" and args and isinstance(args[0], GraphRef):
                rec.partials.append((key, str(args[0]), args[1:], graph))
        self.current, self.current_key = data, key
        self.type_lines = 0
        self.open_record = (lineno, line, is_return)

    def end_record(self) -> None:
        """The record read last is over: did it have its type line?"""
        if self.open_record is not None:
            lineno, line, is_return = self.open_record
            if not self.type_lines:
                self.untyped_records.append((lineno, line))
            elif not is_return:  # MS_DEV_DUMP_IR_FORMAT=0 types a Return only
                self.typed_records += 1
            self.open_record = None

    def first_type_line(self, data: dict, body: str, line: str | bytes, lineno: int) -> None:
        """The types of the current node, ``data``; ``line`` (its bytes, from a whole record) is only
        quoted when the grammar rejects it."""
        try:
            data["in_types"], data["out_type"] = types = parse_type_line(body)
        except GrammarError as exc:
            self.diag(lineno, D.BAD_RECORD, f"type line: {exc}", line if isinstance(line, str) else line.decode())
            return
        if type(line) is bytes and len(TYPE_LINES_READ) < MAX_SHARED_TYPE_LINES:
            TYPE_LINES_READ[line[8:]] = types

    def strategy_line(self, data: dict, line: str, lineno: int) -> None:
        """1.7-2.1 parallel dumps: the strategy block of the current node ``data`` on its own line,
        the type line glued after it: `` {in_strategy: ((2, 1), (1, 4))}      : (<T>, <T>) -> (<T>)``."""
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
        data["parallel_info"] = {**data["parallel_info"], **block}  # the parsed dict may be shared
        if rest:
            self.type_lines += 1
            if self.type_lines == 1:
                self.first_type_line(data, rest[1:].strip(), line, lineno)


def _graph_refs(values: tuple) -> Iterator[str]:
    """The graphs named in a called value's brackets: ``@@g``, the members of ``@FuncUnion(@a, @b)``."""
    for value in values:
        if isinstance(value, GraphRef):
            yield value[1:] if value.startswith("@@") else str(value)
        elif isinstance(value, Call):
            yield from _graph_refs(value.args)
