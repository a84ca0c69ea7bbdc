#!/usr/bin/env python3
"""Generate large, realistic MindSpore IR dump folders for benchmarking irlint.

Takes a real ``save_graphs`` folder (MindSpore 2.10 text dumps) that contains
decoder layer 0 (and possibly a few more layers) and writes a copy in which
layer 0 is replicated up to ``--layers N`` decoder layers, in every stage
file.  See bench/gen_dump.md.

Only the standard library is used.  The output is a pure function of the
input files and the command-line arguments (byte-identical on re-runs).

Usage examples::

    python3 bench/gen_dump.py --out /tmp/dump80                      # 80 layers
    python3 bench/gen_dump.py --layers 3 --out /tmp/d3 --check
    python3 bench/gen_dump.py --target-size 1G --ranks 2 --out /tmp/d1g
    python3 bench/gen_dump.py --check-only /tmp/d3                   # re-check
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import random
import re
import shutil
import sys
import time
from collections import defaultdict

DEFAULT_INPUT = "/work/shared/corpus/full-folder-1layer"
IR_MAGIC = "# IR entry:"
FILE_ENC = dict(encoding="utf-8", errors="surrogateescape", newline="")

# --------------------------------------------------------------------------
# Line-level regular expressions
# --------------------------------------------------------------------------
# A record (node or Return) starts with exactly two spaces.
REC_START = re.compile(r"  (?:%(\d+)\(|Return\()")
# Attribute lines of a record: types ("      : ...") and comments ("      # ...").
ATTR_LINE = re.compile(r"      [:#]")
IN_FILE = "      # In file "
SUBGRAPH_OPEN = re.compile(r"subgraph @.*\{\s*$")
# Node references inside a node's head (the def is handled separately).
NODE_REF = re.compile(r"%(\d+)")
# Parameter references: %para12_name (normal) and $(@graph:para12_name) (free variable).
PARA_TOKEN = re.compile(r"(?<=[%:])para(\d+)_([^\s,)]*)")
PARAM_DECL = re.compile(r"%para(\d+)_")
LAYER_SCOPE = re.compile(r"layers-CellList/(\d+)-")
LAYER_PARAM = re.compile(r"(?<![A-Za-z0-9_])layers\.(\d+)\.")
UID = re.compile(r'(?<![A-Za-z_])unique_id: "(\d+)"')
FUID = re.compile(r'forward_unique_id: "(\d+)"')
RID = re.compile(r"recompute_id: I64\((\d+)\)")
RSUB = re.compile(r"recompute_sub_graph: U64\((\d+)\)")

# Everything a layer copy must rewrite in the head lines of a record ...
HEAD_TOKENS = re.compile(
    r"(?P<para>(?<=[%:])para(?P<pnum>\d+)_(?P<pname>[^\s,)]*))"
    r"|%(?P<ref>\d+)"
    r"|(?P<lscope>layers-CellList/)0-"
    r"|(?<![A-Za-z0-9_])(?P<lparam>layers\.)0\."
    r'|(?P<fuid>forward_unique_id: ")(?P<fuidv>\d+)"'
    r'|(?P<fnn>forward_node_name: "[^"]*?_)(?P<fnnv>\d+)"'
    r'|(?<![A-Za-z_])(?P<uid>unique_id: ")(?P<uidv>\d+)"'
    r"|(?P<rid>recompute_id: I64\()(?P<ridv>\d+)\)"
    r"|(?P<rsub>recompute_sub_graph: U64\()(?P<rsubv>\d+)\)"
)
# ... and in its other (non "# In file") lines: scopes and ref_key=... names.
ATTR_TOKENS = re.compile(r"(?P<lscope>layers-CellList/)0-|(?<![A-Za-z0-9_])(?P<lparam>layers\.)0\.")
# Ops that only gather/plumb values: a reference to a layer-0 parameter does not
# make them layer-0 nodes unless every parameter they read is a layer-0 one.
PLUMBING_OPS = {"MakeTuple", "MakeList", "UpdateState", "Depend", "TupleGetItem", "call"}

SIZE_RE = re.compile(r"^\s*([0-9.]+)\s*([kKmMgGtT]?)i?[bB]?\s*$")


def parse_size(text):
    m = SIZE_RE.match(text)
    if not m:
        raise argparse.ArgumentTypeError("bad size %r (use e.g. 500M, 1G, 1.5G)" % text)
    mult = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[m.group(2).lower()]
    return int(float(m.group(1)) * mult)


def read_text(path):
    with open(path, "r", **FILE_ENC) as f:
        return f.read()


def is_graph_ir(path):
    try:
        with open(path, "rb") as f:
            return f.read(len(IR_MAGIC)) == IR_MAGIC.encode()
    except OSError:
        return False


# --------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------
class Rec:
    """One node record (or Return) of a subgraph: line range and facts."""

    __slots__ = (
        "start",
        "end",
        "head_end",
        "id",
        "is_ret",
        "refs",
        "params",
        "scope",
        "otype",
        "uid",
        "fuid",
        "op",
        "grad",
        "dup",
        "label",
    )


class Sub:
    __slots__ = ("open_line", "close_line", "recs", "pre_lines")


class Dump:
    """A parsed graph IR file: its lines, subgraphs and top-level params."""

    def __init__(self, text):
        self.ends_nl = text.endswith("\n")
        lines = text.split("\n")
        if self.ends_nl:
            lines.pop()
        self.lines = lines
        self.subs = []
        self.params = []  # (line index, number, layer id or None)
        self.hdr = {}  # header key -> line index
        self._parse()

    def _parse(self):
        lines = self.lines
        cur = None
        in_params = False
        first_sub_seen = False
        for i, line in enumerate(lines):
            if cur is not None:
                if line.startswith("}"):
                    cur.close_line = i
                    self._finish_sub(cur)
                    cur = None
                    continue
                m = REC_START.match(line)
                if m:
                    r = Rec()
                    r.start = i
                    r.id = int(m.group(1)) if m.group(1) is not None else None
                    r.is_ret = m.group(1) is None
                    cur.recs.append(r)
                elif not cur.recs:
                    cur.pre_lines.append(i)
                continue
            if line.startswith("subgraph @") and SUBGRAPH_OPEN.match(line):
                cur = Sub()
                cur.open_line = i
                cur.close_line = None
                cur.recs = []
                cur.pre_lines = []
                self.subs.append(cur)
                first_sub_seen = True
                in_params = False
                continue
            if first_sub_seen:
                continue
            # preamble
            if line.startswith("# Params:"):
                in_params = True
                continue
            if in_params:
                m = PARAM_DECL.match(line)
                if m:
                    name = line.split(": ", 1)[0]
                    lm = LAYER_PARAM.search(name)
                    self.params.append((i, int(m.group(1)), int(lm.group(1)) if lm else None))
                    continue
                in_params = False
            for key in ("# Total params:", "Total number of nodes:", "Total number of cnodes:"):
                if line.startswith(key):
                    self.hdr[key] = i
        if cur is not None:  # truncated file: body never closed
            cur.close_line = None
            self._finish_sub(cur)

    def _finish_sub(self, sub):
        lines = self.lines
        end_all = sub.close_line if sub.close_line is not None else len(lines)
        recs = sub.recs
        for n, r in enumerate(recs):
            r.end = recs[n + 1].start if n + 1 < len(recs) else end_all
            j = r.start + 1
            while j < r.end and not ATTR_LINE.match(lines[j]):
                j += 1
            r.head_end = j
            head = "\n".join(lines[r.start : r.head_end])
            if r.is_ret:
                body = head
                r.op = "Return"
            else:
                body = head.split(" = ", 1)[1] if " = " in head else head[head.find(")") + 1 :]
                r.op = re.split(r"[(\s]", body, 1)[0]
            r.refs = [int(x) for x in NODE_REF.findall(body)]
            r.params = [(int(a), b) for a, b in PARA_TOKEN.findall(body)]
            r.scope = ""
            r.otype = None
            for k in range(r.head_end, r.end):
                line = lines[k]
                if r.otype is None and line.startswith("      : "):
                    r.otype = line.rsplit(" -> ", 1)[-1].strip() if " -> " in line else None
                elif line.startswith("      # Fullname with scope: (") or line.startswith("      # Scope: ("):
                    r.scope = line.split("(", 1)[1]
                    break
            m = UID.search(head)
            r.uid = m.group(1) if m else None
            m = FUID.search(head)
            r.fuid = m.group(1) if m else None
            r.grad = "Gradients/" in r.scope
            r.dup = "duplicated: Bool(1)" in head
            r.label = None


# --------------------------------------------------------------------------
# Layer membership
# --------------------------------------------------------------------------
def label_layers(dump):
    """Set Rec.label to the decoder layer id a record belongs to (or None).

    Forward records (no forward_unique_id): (1) the scope names
    layers-CellList/K-...; else (2) the node reads parameters of layer K
    (layers.K.*) -- plumbing ops only if all the parameters they read are
    layer-K ones.  Backward records: (3) the layer of the forward node whose
    unique_id their forward_unique_id names, else rules 1-2.  The scope is not
    trusted for backward nodes: MindSpore 2.10 prints the gradient nodes of
    layers 1..N-1 with layer 0's scope (Gradients/.../layers-CellList/0-...),
    and many Linear/RMSNorm gradients with the scope of another cell
    (lm_head-Linear/Grad_MatMul, norm_out-RMSNorm/Grad_Mul).  Finally (4)
    "sandwiched" plumbing: an unlabelled node whose node inputs and consumers
    are all layer-K nodes (or such nodes) joins layer K.  Return records are
    never labelled."""

    def by_scope_or_params(r):
        m = LAYER_SCOPE.search(r.scope)
        if m:
            return int(m.group(1))
        if r.params:
            ls = set()
            nonlayer = 0
            for _, name in r.params:
                lm = LAYER_PARAM.search(name)
                if lm:
                    ls.add(int(lm.group(1)))
                else:
                    nonlayer += 1
            if len(ls) == 1 and (nonlayer == 0 or r.op not in PLUMBING_OPS):
                return ls.pop()
        return None

    uid_label = {}
    for sub in dump.subs:
        for r in sub.recs:
            if r.is_ret or r.fuid:
                continue
            r.label = by_scope_or_params(r)
            if r.label is not None and r.uid:
                uid_label[r.uid] = r.label
    for sub in dump.subs:
        for r in sub.recs:
            if r.fuid and not r.is_ret:
                lab = uid_label.get(r.fuid)
                r.label = lab if lab is not None else by_scope_or_params(r)
    for sub in dump.subs:
        _vote_grad(sub)
        _sandwich(sub)


def _neighbours(recs):
    idx = {}
    for n, r in enumerate(recs):
        if r.id is not None:
            idx[r.id] = n
    nb = defaultdict(set)
    for n, r in enumerate(recs):
        for ref in r.refs:
            j = idx.get(ref)
            if j is not None:
                nb[n].add(j)
                nb[j].add(n)
    return idx, nb


def _vote_grad(sub):
    """Backward nodes without forward_unique_id (backend-inserted Casts,
    MakeTuple/AddN of gradients): their layer-K scope is not trustworthy, so
    take the layer of their labelled neighbours when that is unambiguous and
    fall back to the scope otherwise."""
    recs = sub.recs
    pending = {n for n, r in enumerate(recs) if r.grad and not r.fuid and not r.is_ret}
    if not pending:
        return
    _, nb = _neighbours(recs)
    scope_label = {n: recs[n].label for n in pending}
    for n in pending:
        recs[n].label = None
    changed = True
    while changed:
        changed = False
        for n in sorted(pending):
            labs = {recs[j].label for j in nb[n] if j not in pending and recs[j].label is not None}
            if len(labs) == 1:
                recs[n].label = labs.pop()
                pending.discard(n)
                changed = True
    for n in pending:
        recs[n].label = scope_label[n]


def _sandwich(sub):
    recs = sub.recs
    idx = {}
    for n, r in enumerate(recs):
        if r.id is not None:
            idx[r.id] = n
    cons = defaultdict(list)
    for n, r in enumerate(recs):
        for ref in r.refs:
            if ref in idx:
                cons[idx[ref]].append(n)
    cand = {n for n, r in enumerate(recs) if r.label is None and not r.is_ret and r.refs and cons.get(n)}
    changed = True
    while changed:
        changed = False
        for n in sorted(cand):
            labs = set()
            ok = True
            for ref in recs[n].refs:
                j = idx.get(ref)
                if j is None:
                    ok = False
                    break
                if recs[j].label is not None:
                    labs.add(recs[j].label)
                elif j not in cand:
                    ok = False
                    break
            if ok:
                for c in cons[n]:
                    if recs[c].label is not None:
                        labs.add(recs[c].label)
                    elif c not in cand:
                        ok = False
                        break
            if not ok or len(labs) > 1:
                cand.discard(n)
                changed = True
    # give each surviving candidate the layer of a labelled neighbour
    changed = True
    while changed and cand:
        changed = False
        for n in sorted(cand):
            labs = {recs[idx[ref]].label for ref in recs[n].refs if recs[idx[ref]].label is not None}
            labs |= {recs[c].label for c in cons[n] if recs[c].label is not None}
            if len(labs) == 1:
                recs[n].label = labs.pop()
                cand.discard(n)
                changed = True


# --------------------------------------------------------------------------
# Planning
# --------------------------------------------------------------------------
class Cfg:
    def __init__(
        self, n_layers, src_layers, uid_stride, uid_base, rid_stride, rsub_stride, gap, chain, keep_bwd_scope=False
    ):
        self.n_layers = n_layers
        self.src_layers = src_layers
        self.new_layers = list(range(src_layers, n_layers))
        self.uid_stride = uid_stride
        self.uid_base = uid_base
        self.rid_stride = rid_stride
        self.rsub_stride = rsub_stride
        self.gap = gap
        self.chain = chain
        self.keep_bwd_scope = keep_bwd_scope


class SubPlan:
    """Emission order and id mapping for one subgraph."""

    def __init__(self):
        self.templates = []  # record indices of layer-0 records (copied)
        self.tset = set()  # their ids
        self.after = {}  # record index -> list of template indices copied after it
        self.newid = {}  # (old id, layer) -> new id; layer 0/None = original
        self.chain = None  # (X id, Y id, Z id, anchor index of Y's segment)
        self.n_out = 0  # records (nodes + Return) emitted
        self.ok = True


def plan_sub(sub, cfg, stats):
    p = SubPlan()
    recs = sub.recs
    ids = [r.id for r in recs if r.id is not None]
    if len(ids) != len(set(ids)):
        stats["warnings"].append("duplicate node ids in a subgraph; copied without layer copies")
        p.ok = False
    p.templates = [n for n, r in enumerate(recs) if r.label == 0] if p.ok else []
    p.tset = {recs[n].id for n in p.templates}
    if not cfg.new_layers:
        p.templates = []
    if not p.templates:
        p.n_out = len(recs)
        return p
    # segments of layer records (any layer), split where more than cfg.gap
    # non-layer records separate two layer records
    pos = [n for n, r in enumerate(recs) if r.label is not None]
    segs = []
    start = prev = pos[0]
    for n in pos[1:]:
        if n - prev - 1 > cfg.gap:
            segs.append((start, prev))
            start = n
        prev = n
    segs.append((start, prev))
    seg_of = {}
    for a, b in segs:
        tmpl = [n for n in p.templates if a <= n <= b]
        if tmpl:
            p.after[b] = tmpl
            for n in tmpl:
                seg_of[n] = b
    if cfg.chain:
        p.chain = find_chain(recs, p, cfg, seg_of)
        stats["chain"].append(p.chain is not None)
    _number(p, recs, cfg)
    if p.chain is not None and not _valid_order(p, recs, cfg):
        stats["warnings"].append("layer chaining would break definition order; copies read layer 0's inputs instead")
        p.chain = None
        stats["chain"][-1] = False
    if not _valid_order(p, recs, cfg):
        # cannot happen for a source that defines before use; be safe anyway
        stats["warnings"].append("definition order could not be kept; subgraph copied without layer copies")
        p.templates, p.tset, p.after = [], set(), {}
        p.newid = {}
        p.n_out = len(recs)
    return p


def find_chain(recs, p, cfg, seg_of):
    """Find X (layer 0's hidden-state input), Y (layer 0's output) and Z (the
    last existing layer's output): copy K then reads Y of copy K-1 (the first
    copy reads Z) instead of X, and non-layer consumers of Z after the copies
    read the last copy's Y.  Returns None unless the choice is unambiguous."""
    idx = {r.id: n for n, r in enumerate(recs) if r.id is not None}
    cons = defaultdict(list)
    for n, r in enumerate(recs):
        for ref in r.refs:
            if ref in idx:
                cons[idx[ref]].append(n)
    last = cfg.src_layers - 1
    # the forward part: records before the first gradient node
    first_grad = next((n for n, r in enumerate(recs) if r.fuid or r.grad), len(recs))

    def fwd(n):
        return n < first_grad and not recs[n].dup

    fwd_t = [n for n in p.templates if fwd(n)]
    xc = set()
    for n in fwd_t:
        for ref in recs[n].refs:
            j = idx.get(ref)
            if j is not None and recs[j].label is None and recs[j].otype:
                xc.add(j)

    def data_reader(c):
        # a forward node that uses the value (UpdateState only orders side effects)
        return fwd(c) and recs[c].op != "UpdateState"

    yc = [n for n in fwd_t if recs[n].otype and any(recs[c].label != 0 and data_reader(c) for c in cons[n])]
    zc = [
        n
        for n, r in enumerate(recs)
        if r.label == last and r.otype and fwd(n) and any(recs[c].label is None and data_reader(c) for c in cons[n])
    ]
    found = []
    for x in sorted(xc):
        t = recs[x].otype
        if not t.startswith("(<Tensor"):
            continue
        ys = [y for y in yc if recs[y].otype == t]
        zs = [z for z in zc if recs[z].otype == t]
        if ys and zs:
            # the layer output is the last such node in the forward order
            found.append((x, ys[-1], zs[-1]))
    if len(found) != 1:
        return None
    x, y, z = found[0]
    return (recs[x].id, recs[y].id, recs[z].id, seg_of[y])


def _emit_order(p, recs, cfg):
    """Yield (record index, layer or None) in output order."""
    for n in range(len(recs)):
        yield n, None
        tmpl = p.after.get(n)
        if tmpl:
            for k in cfg.new_layers:
                for t in tmpl:
                    yield t, k


def _number(p, recs, cfg):
    newid = {}
    c = 0
    total = 0
    for n, k in _emit_order(p, recs, cfg):
        total += 1
        r = recs[n]
        if r.id is not None:
            newid[(r.id, k)] = c
            c += 1
    p.newid = newid
    p.n_out = total


def resolve_orig(p, r_label, pos, ref):
    ch = p.chain
    if ch is not None and ref == ch[2] and r_label is None and pos > ch[3]:
        return ch[1], -1  # last copy's Y
    return ref, None


def resolve_copy(p, cfg, ref, k):
    if ref in p.tset:
        return ref, k
    ch = p.chain
    if ch is not None and ref == ch[0]:
        if k == cfg.new_layers[0]:
            return ch[2], None
        return ch[1], k - 1
    return ref, None


def _key(p, cfg, key):
    ref, k = key
    if k == -1:
        k = cfg.new_layers[-1]
    return (ref, k)


def _valid_order(p, recs, cfg):
    defined = set()
    known = set(p.newid)
    for n, k in _emit_order(p, recs, cfg):
        r = recs[n]
        for ref in r.refs:
            if k is None:
                key = _key(p, cfg, resolve_orig(p, r.label, n, ref))
            else:
                key = _key(p, cfg, resolve_copy(p, cfg, ref, k))
            if key in known and key not in defined:
                return False
        if r.id is not None:
            defined.add((r.id, k))
    return True


# --------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------
def compile_template(lines, r, keep_bwd_scope=False):
    """Split a layer-0 record into literal strings and substitution tokens."""
    pieces = []
    lit = []

    def flush():
        if lit:
            pieces.append("".join(lit))
            lit.clear()

    for j in range(r.start, r.end):
        line = lines[j]
        if j >= r.head_end and (
            line.startswith(IN_FILE) or (keep_bwd_scope and "# " in line and "(Gradients/" in line)
        ):
            lit.append(line)
            lit.append("\n")
            continue
        rx = HEAD_TOKENS if j < r.head_end else ATTR_TOKENS
        pos = 0
        first = j == r.start
        for m in rx.finditer(line):
            lit.append(line[pos : m.start()])
            g = m.groupdict()
            if g.get("para") is not None:
                flush()
                pieces.append(("para", int(g["pnum"]), g["pname"]))
            elif g.get("ref") is not None:
                flush()
                if first and m.start() == 2:
                    pieces.append(("def", int(g["ref"])))
                else:
                    pieces.append(("ref", int(g["ref"])))
            elif g.get("lscope") is not None:
                lit.append(g["lscope"])
                flush()
                pieces.append(("layer", "-"))
            elif g.get("lparam") is not None:
                lit.append(g["lparam"])
                flush()
                pieces.append(("layer", "."))
            elif g.get("fuid") is not None:
                lit.append(g["fuid"])
                flush()
                pieces.append(("fuid", g["fuidv"], '"'))
            elif g.get("fnn") is not None:
                lit.append(g["fnn"])
                flush()
                pieces.append(("fuid", g["fnnv"], '"'))
            elif g.get("uid") is not None:
                lit.append(g["uid"])
                flush()
                pieces.append(("uid", int(g["uidv"]), '"'))
            elif g.get("rid") is not None:
                lit.append(g["rid"])
                flush()
                pieces.append(("rid", int(g["ridv"]), ")"))
            elif g.get("rsub") is not None:
                lit.append(g["rsub"])
                flush()
                pieces.append(("rsub", int(g["rsubv"]), ")"))
            else:  # pragma: no cover
                lit.append(m.group(0))
            pos = m.end()
        lit.append(line[pos:])
        lit.append("\n")
    flush()
    return pieces


class FileCtx:
    def __init__(self, dump, cfg, plans):
        self.dump = dump
        self.cfg = cfg
        self.plans = plans
        self.parmap = {}  # old param number -> new
        self.newpara = {}  # (old layer-0 param number, layer) -> new number
        self.par_after = {}  # params-list line index -> list of (old num, layer)
        self.inserted = 0
        self.l0_uids = set()
        for sub in dump.subs:
            for r in sub.recs:
                if r.label == 0 and r.uid:
                    self.l0_uids.add(r.uid)
        self._plan_params()

    def _plan_params(self):
        cfg = self.cfg
        params = self.dump.params
        runs = []
        cur = []
        for entry in params:
            if entry[2] is not None:
                cur.append(entry)
            else:
                if cur:
                    runs.append(cur)
                cur = []
        if cur:
            runs.append(cur)
        for run in runs:
            tmpl = [e for e in run if e[2] == 0]
            if tmpl and cfg.new_layers:
                self.par_after[run[-1][0]] = [(e[1], k, e[0]) for k in cfg.new_layers for e in tmpl]
        c = 0
        for i, num, _ in params:
            c += 1
            self.parmap[num] = c
            for old, k, _ in self.par_after.get(i, ()):
                c += 1
                self.newpara[(old, k)] = c
        self.inserted = c - len(params)
        self.max_top = max((e[1] for e in params), default=0)

    def para(self, num):
        if num in self.parmap:
            return self.parmap[num]
        if num > self.max_top:
            return num + self.inserted
        return num

    def sub_para(self, line):
        if self.inserted == 0 or "para" not in line or line.startswith("# In file"):
            return line
        return PARA_TOKEN.sub(lambda m: "para%d_%s" % (self.para(int(m.group(1))), m.group(2)), line)


def render_copy(pieces, ctx, p, k, ci):
    cfg = ctx.cfg
    out = []
    app = out.append
    ks = str(k)
    for pc in pieces:
        if pc.__class__ is str:
            app(pc)
            continue
        kind = pc[0]
        if kind == "ref":
            key = _key(p, cfg, resolve_copy(p, cfg, pc[1], k))
            nid = p.newid.get(key)
            app("%" + (str(nid) if nid is not None else str(pc[1])))
        elif kind == "def":
            app("%" + str(p.newid[(pc[1], k)]))
        elif kind == "layer":
            app(ks + pc[1])
        elif kind == "para":
            num, name = pc[1], pc[2]
            newnum = ctx.newpara.get((num, k))
            if newnum is not None:
                app("para%d_%s" % (newnum, LAYER_PARAM.sub(lambda m: "layers.%s." % ks, name)))
            else:
                app("para%d_%s" % (ctx.para(num), name))
        elif kind == "uid":
            app("%d%s" % (pc[1] + (cfg.uid_base + ci) * cfg.uid_stride, pc[2]))
        elif kind == "fuid":
            if pc[1] in ctx.l0_uids:
                app("%d%s" % (int(pc[1]) + (cfg.uid_base + ci) * cfg.uid_stride, pc[2]))
            else:
                app(pc[1] + pc[2])
        elif kind == "rid":
            app("%d%s" % (pc[1] + ci * cfg.rid_stride, pc[2]))
        elif kind == "rsub":
            app("%d%s" % (pc[1] + ci * cfg.rsub_stride, pc[2]))
    return "".join(out)


def render_orig(lines, r, n, ctx, p):
    """Re-emit an original record with renumbered node and parameter ids."""
    out = []
    remap = bool(p.newid)
    for j in range(r.start, r.end):
        line = lines[j]
        if j < r.head_end:
            if remap:
                first = j == r.start

                def sub_ref(m, first=first):
                    if first and m.start() == 2:
                        return "%" + str(p.newid[(r.id, None)])
                    key = _key(p, ctx.cfg, resolve_orig(p, r.label, n, int(m.group(1))))
                    nid = p.newid.get(key)
                    return "%" + str(nid) if nid is not None else m.group(0)

                line = NODE_REF.sub(sub_ref, line)
            line = ctx.sub_para(line)
        out.append(line)
        out.append("\n")
    return "".join(out)


class Writer:
    def __init__(self, path):
        self.f = open(path, "w", **FILE_ENC)
        self.buf = []
        self.size = 0
        self.total = 0

    def write(self, s):
        self.buf.append(s)
        self.size += len(s)
        if self.size > (1 << 22):
            self.flush()

    def flush(self):
        if self.buf:
            data = "".join(self.buf)
            self.f.write(data)
            self.total += len(data)
            self.buf = []
            self.size = 0

    def close(self, drop_last_newline=False):
        self.flush()
        self.f.flush()
        if drop_last_newline:
            end = self.f.tell()
            if end > 0:
                self.f.truncate(end - 1)
        self.f.close()


def analyse(path, cfg):
    """Parse and plan one file.  Returns (dump, ctx, plans, stats) or None if
    the file has nothing to replicate."""
    stats = {"warnings": [], "chain": [], "copies": 0, "est_layer_bytes": 0}
    text = read_text(path)
    if not text.startswith(IR_MAGIC):
        return None, stats
    dump = Dump(text)
    del text
    label_layers(dump)
    has_l0 = any(r.label == 0 for s in dump.subs for r in s.recs) or any(e[2] == 0 for e in dump.params)
    if not has_l0 or not cfg.new_layers:
        return None, stats
    plans = [plan_sub(sub, cfg, stats) for sub in dump.subs]
    ctx = FileCtx(dump, cfg, plans)
    # bytes one extra layer adds (for --target-size)
    lines = dump.lines
    est = 0
    for sub, p in zip(dump.subs, plans):
        for tmpl in p.after.values():
            for n in tmpl:
                r = sub.recs[n]
                est += sum(len(lines[j]) + 1 for j in range(r.start, r.end))
    for i, lst in ctx.par_after.items():
        per = len(lst) // max(1, len(cfg.new_layers))
        est += per * (len(lines[i]) + 1)
    stats["est_layer_bytes"] = est
    return (dump, ctx, plans), stats


def generate_file(src, dst, cfg):
    """Write one output file.  Returns a stats dict."""
    t0 = time.time()
    res, stats = analyse(src, cfg)
    os.makedirs(os.path.dirname(dst) or ".", exist_ok=True)
    if os.path.lexists(dst):
        os.remove(dst)  # --force: never write through an old hard link
    if res is None:
        shutil.copyfile(src, dst)
        stats["bytes"] = os.path.getsize(dst)
        stats["copied"] = True
        stats["secs"] = time.time() - t0
        return stats
    dump, ctx, plans = res
    lines = dump.lines
    old_c = new_c = None
    added = sum(p.n_out - len(s.recs) for s, p in zip(dump.subs, plans))
    stats["copies"] = added
    w = Writer(dst)
    hdr_line = {v: k for k, v in dump.hdr.items()}
    sub_at = {s.open_line: (s, p) for s, p in zip(dump.subs, plans)}
    i = 0
    nlines = len(lines)
    while i < nlines:
        line = lines[i]
        if i in sub_at:
            sub, p = sub_at[i]
            w.write(ctx.sub_para(line) + "\n")
            for j in sub.pre_lines:
                w.write(lines[j] + "\n")
            tcache = {}
            for n, r in enumerate(sub.recs):
                w.write(render_orig(lines, r, n, ctx, p))
                tmpl = p.after.get(n)
                if not tmpl:
                    continue
                pieces = []
                for t in tmpl:
                    if t not in tcache:
                        tcache[t] = compile_template(lines, sub.recs[t], cfg.keep_bwd_scope)
                    pieces.append(tcache[t])
                for ci, k in enumerate(cfg.new_layers, 1):
                    for pc in pieces:
                        w.write(render_copy(pc, ctx, p, k, ci))
            if sub.close_line is None:
                break
            i = sub.close_line
            continue
        key = hdr_line.get(i)
        if key == "# Total params:":
            m = re.search(r"(\d+)\s*$", line)
            if m:
                line = line[: m.start(1)] + str(int(m.group(1)) + ctx.inserted) + line[m.end(1) :]
        elif key == "Total number of cnodes:":
            m = re.search(r"(\d+)\s*$", line)
            if m:
                old_c = int(m.group(1))
                new_c = old_c + added
                line = line[: m.start(1)] + str(new_c) + line[m.end(1) :]
        elif key == "Total number of nodes:":
            m = re.search(r"(\d+)\s*$", line)
            c_line = dump.hdr.get("Total number of cnodes:")
            if m and c_line is not None:
                mc = re.search(r"(\d+)\s*$", lines[c_line])
                oc = int(mc.group(1)) if mc else 0
                if oc > 0:
                    nn = int(round(int(m.group(1)) * (oc + added) / oc))
                    line = line[: m.start(1)] + str(nn) + line[m.end(1) :]
        w.write(ctx.sub_para(line) + "\n")
        extra = ctx.par_after.get(i)
        if extra:
            for old, k, src_line in extra:
                s = PARAM_DECL.sub("%%para%d_" % ctx.newpara[(old, k)], lines[src_line], count=1)
                s = LAYER_PARAM.sub("layers.%d." % k, s)
                w.write(s + "\n")
        i += 1
    w.close(drop_last_newline=not dump.ends_nl)
    stats["bytes"] = os.path.getsize(dst)
    stats["copied"] = False
    stats["secs"] = time.time() - t0
    return stats


# --------------------------------------------------------------------------
# Self-check
# --------------------------------------------------------------------------
def check_file(path, max_problems=20):
    """Check one graph IR file with plain regexes.  Returns (problems, number
    of unique_id values carried by more than one node).  The latter is only
    informational: real dumps already repeat some unique_ids (cloned nodes)."""
    probs = []

    def bad(lineno, msg):
        if len(probs) < max_problems:
            probs.append("%s:%d: %s" % (path, lineno, msg))

    hdr_c = None
    hdr_params = None
    n_param_lines = 0
    count = 0
    in_sub = False
    in_head = False
    in_params = False
    declared = set()
    defined = set()
    expect = 0
    cur_def = None
    uids = {}
    pending = []
    with open(path, "r", **FILE_ENC) as f:
        first = f.readline()
        if not first.startswith(IR_MAGIC):
            return [], 0
        for lineno, line in enumerate(f, 2):
            if in_sub:
                if line.startswith("}"):
                    in_sub = in_head = False
                    continue
                m = REC_START.match(line)
                if m:
                    count += 1
                    in_head = True
                    body = line
                    if m.group(1) is not None:
                        cur_def = int(m.group(1))
                        if cur_def != expect:
                            bad(lineno, "node id %%%d, expected %%%d" % (cur_def, expect))
                        expect = cur_def + 1
                        body = line[m.end() :]
                        eq = body.find(" = ")
                        body = body[eq + 3 :] if eq >= 0 else body
                        um = UID.search(body)
                        if um:
                            uids[um.group(1)] = uids.get(um.group(1), 0) + 1
                    else:
                        cur_def = None
                elif in_head and not ATTR_LINE.match(line):
                    body = line
                else:
                    in_head = False
                    continue
                for x in NODE_REF.findall(body):
                    if int(x) not in defined:
                        bad(lineno, "%%%s used before it is defined" % x)
                for num, _ in PARA_TOKEN.findall(body):
                    if int(num) not in declared:
                        pending.append((lineno, int(num)))
                if m and cur_def is not None:
                    defined.add(cur_def)
                continue
            if line.startswith("subgraph @") and SUBGRAPH_OPEN.match(line):
                in_sub = True
                in_params = False
                defined = set()
                expect = 0
                for num in re.findall(r"%para(\d+)_", line):
                    declared.add(int(num))
                continue
            if line.startswith("# Params:"):
                in_params = True
                continue
            if in_params:
                m = PARAM_DECL.match(line)
                if m:
                    declared.add(int(m.group(1)))
                    n_param_lines += 1
                    continue
                in_params = False
            if line.startswith("Total number of cnodes:"):
                hdr_c = int(line.split(":")[1])
            elif line.startswith("# Total params:"):
                hdr_params = int(line.split(":")[1])
    for lineno, num in pending:
        if num not in declared:
            bad(lineno, "para%d_ is not declared" % num)
    if hdr_c is not None and hdr_c != count:
        bad(0, "Total number of cnodes: %d, but %d node/Return lines" % (hdr_c, count))
    if hdr_params is not None and hdr_params != n_param_lines:
        bad(0, "# Total params: %d, but %d parameter lines" % (hdr_params, n_param_lines))
    return probs, sum(1 for v in uids.values() if v > 1)


def check_tree(root, jobs=1):
    todo = [os.path.join(root, p) for p in list_files(root)]
    total = 0
    dup = 0
    results = _map(check_file, todo, jobs)
    for path, (probs, ndup) in zip(todo, results):
        total += len(probs)
        dup += ndup
        for pr in probs:
            print("CHECK " + pr)
    print(
        "check: %d graph files under %s, %d problem(s); %d unique_id value(s) shared by several nodes "
        "in the same file (informational: the real dumps do this too)" % (len(todo), root, total, dup)
    )
    return total


# --------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------
def list_files(root, patterns=None):
    """Relative paths of the graph IR files under root (actor_set/ skipped)."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "actor_set")
        for fn in sorted(filenames):
            rel = os.path.relpath(os.path.join(dirpath, fn), root)
            if patterns:
                if not any(fnmatch.fnmatch(rel, pat) or fnmatch.fnmatch(fn, pat) for pat in patterns):
                    continue
                out.append(rel)
            elif is_graph_ir(os.path.join(dirpath, fn)):
                out.append(rel)
    return sorted(out)


def scan_globals(paths):
    """Max unique_id / recompute ids and the number of decoder layers present."""
    max_uid = max_rid = max_rsub = 0
    layers = -1
    for path in paths:
        if not is_graph_ir(path):
            continue
        text = read_text(path)
        for x in re.findall(r'unique_id: "(\d+)"', text):
            max_uid = max(max_uid, int(x))
        for x in RID.findall(text):
            max_rid = max(max_rid, int(x))
        for x in RSUB.findall(text):
            max_rsub = max(max_rsub, int(x))
        for x in set(LAYER_SCOPE.findall(text)) | set(LAYER_PARAM.findall(text)):
            layers = max(layers, int(x))
    return max_uid, max_rid, max_rsub, layers + 1


def _stride(v):
    return 10 ** len(str(max(v, 1)))


def _gen_job(args):
    src, dst, cfg = args
    try:
        return generate_file(src, dst, cfg)
    except Exception as e:  # never crash: copy the file through unchanged
        shutil.copyfile(src, dst)
        return {
            "warnings": ["generator failed (%s: %s); copied unchanged" % (type(e).__name__, e)],
            "chain": [],
            "copies": 0,
            "bytes": os.path.getsize(dst),
            "copied": True,
            "secs": 0,
        }


def _est_job(args):
    src, cfg = args
    try:
        res, stats = analyse(src, cfg)
    except Exception:
        res, stats = None, {"est_layer_bytes": 0}
    return os.path.getsize(src), stats["est_layer_bytes"]


def _map(fn, items, jobs):
    if jobs > 1 and len(items) > 1:
        import multiprocessing as mp

        with mp.get_context("fork").Pool(jobs) as pool:
            return pool.map(fn, items, chunksize=1)
    return [fn(x) for x in items]


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--input", default=DEFAULT_INPUT, help="real save_graphs folder (default %(default)s)")
    ap.add_argument("--out", help="output folder (created; must be empty or absent)")
    ap.add_argument("--layers", type=int, default=80, help="total decoder layers in the output (default 80)")
    ap.add_argument(
        "--files",
        action="append",
        help="stage files to emit: glob(s) relative to --input, comma-separated, repeatable "
        "(default: every graph IR file, actor_set/ skipped)",
    )
    ap.add_argument("--ranks", type=int, default=1, help="write rank_0/ .. rank_{R-1}/ (default 1: no rank folders)")
    ap.add_argument(
        "--rank-mode",
        choices=("hardlink", "copy"),
        default="hardlink",
        help="how rank_1.. are made from rank_0 (default hardlink; falls back to copy)",
    )
    ap.add_argument(
        "--target-size",
        type=parse_size,
        help="choose --layers so that the output (all ranks) is about this size, e.g. 1G",
    )
    ap.add_argument("--seed", type=int, default=0, help="seed for the unique_id offset of the copies (default 0)")
    ap.add_argument(
        "--gap",
        type=int,
        default=4,
        help="layer-0 nodes separated by more than this many other nodes form separate blocks, "
        "each followed by its own copies (default 4)",
    )
    ap.add_argument("--no-chain", action="store_true", help="do not chain layer K's input to layer K-1's output")
    ap.add_argument(
        "--keep-backward-scope",
        action="store_true",
        help="leave 'Gradients/...layers-CellList/0-...' scopes of backward copies as they are, "
        "as MindSpore 2.10 prints them for every layer (default: rewrite to K like forward scopes)",
    )
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="worker processes (default 2)")
    ap.add_argument("--check", action="store_true", help="check every output file after writing")
    ap.add_argument("--check-only", metavar="DIR", help="only check the graph IR files under DIR")
    ap.add_argument("--force", action="store_true", help="allow a non-empty --out folder")
    a = ap.parse_args(argv)

    if a.check_only:
        return 1 if check_tree(a.check_only, a.jobs) else 0
    if not a.out:
        ap.error("--out is required")
    if os.path.exists(a.out) and os.listdir(a.out) and not a.force:
        ap.error("%s is not empty (use --force)" % a.out)
    if a.ranks < 1:
        ap.error("--ranks must be >= 1")

    t0 = time.time()
    patterns = None
    if a.files:
        patterns = [p.strip() for item in a.files for p in item.split(",") if p.strip()]
    rels = list_files(a.input, patterns=patterns)
    if not rels:
        ap.error("no files selected under %s" % a.input)
    srcs = [os.path.join(a.input, r) for r in rels]
    max_uid, max_rid, max_rsub, src_layers = scan_globals(srcs)
    found_layers = src_layers
    if src_layers < 1:
        print("warning: no decoder layer found in the input; files are copied unchanged", file=sys.stderr)
        src_layers = 1
    rng = random.Random(a.seed)
    uid_base = rng.randrange(0, 100)

    def make_cfg(n):
        return Cfg(
            n_layers=max(n, src_layers),
            src_layers=src_layers,
            uid_stride=_stride(max_uid),
            uid_base=uid_base,
            rid_stride=_stride(max_rid),
            rsub_stride=_stride(max_rsub + 1),
            gap=a.gap,
            chain=not a.no_chain,
            keep_bwd_scope=a.keep_backward_scope,
        )

    n_layers = a.layers
    if a.target_size:
        cfg1 = make_cfg(src_layers + 1)
        est = _map(_est_job, [(s, cfg1) for s in srcs], a.jobs)
        base = sum(e[0] for e in est)
        per_layer = sum(e[1] for e in est)
        per_rank = a.target_size / a.ranks
        if per_layer <= 0:
            n_layers = src_layers
        else:
            n_layers = src_layers + max(0, int(round((per_rank - base) / per_layer)))
        print(
            "target %d bytes over %d rank(s): source %d bytes + %d bytes per added layer -> %d layers"
            % (a.target_size, a.ranks, base, per_layer, n_layers)
        )
    if n_layers <= src_layers:
        print("note: the input already has %d layer(s); nothing to add, files are copied unchanged" % src_layers)
    cfg = make_cfg(n_layers if found_layers else src_layers)

    root0 = os.path.join(a.out, "rank_0") if a.ranks > 1 else a.out
    jobs = [(s, os.path.join(root0, r), cfg) for s, r in zip(srcs, rels)]
    os.makedirs(root0, exist_ok=True)
    results = _map(_gen_job, jobs, a.jobs)
    total = 0
    nchain = nsub = 0
    for rel, st in zip(rels, results):
        total += st["bytes"]
        nsub += len(st["chain"])
        nchain += sum(st["chain"])
        for wmsg in sorted(set(st["warnings"])):
            print("warning: %s: %s" % (rel, wmsg), file=sys.stderr)
    modified = sum(1 for st in results if not st.get("copied"))
    t_gen = time.time() - t0
    for r in range(1, a.ranks):
        rroot = os.path.join(a.out, "rank_%d" % r)
        for rel in rels:
            s = os.path.join(root0, rel)
            d = os.path.join(rroot, rel)
            os.makedirs(os.path.dirname(d), exist_ok=True)
            if os.path.lexists(d):
                os.remove(d)
            if a.rank_mode == "hardlink":
                try:
                    os.link(s, d)
                    continue
                except OSError:
                    pass
            shutil.copyfile(s, d)
    t_all = time.time() - t0
    print(
        "wrote %d file(s) x %d rank(s) to %s: %d layers (source has %d), %d file(s) with layer copies, "
        "%.1f MB per rank, %.1f MB total; layer chaining in %d of %d subgraph(s) with copies; %.1fs"
        % (
            len(rels),
            a.ranks,
            a.out,
            cfg.n_layers if found_layers else 0,
            found_layers,
            modified,
            total / 1e6,
            total * a.ranks / 1e6,
            nchain,
            nsub,
            t_all,
        )
    )
    if a.ranks > 1:
        print(
            "rank_1.. are %s of rank_0 (%.1fs for rank_0)"
            % ("hard links" if a.rank_mode == "hardlink" else "copies", t_gen)
        )
    if a.check:
        t1 = time.time()
        probs = check_tree(root0, a.jobs)
        print("check took %.1fs" % (time.time() - t1))
        return 1 if probs else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
