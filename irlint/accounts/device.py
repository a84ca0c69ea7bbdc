"""The whole device: the peak of used device memory of one rank, predicted from its dump, and its parts.

Static for the whole step: the parameters, the optimizer states (``moments.*``, ``adam_m.*`` …), the gradient
accumulation buffers (``accu_grads.*``), the scalar states, and the constant tensors of the graph (a value node is
one device block each; the zero tensors of the gradient clearing are most of them).

Dynamic: the kernel outputs alive at each point of the execution order. A tensor lives from the node that makes it
to its last reader (views, tuple elements and subgraph calls share their source's storage, ``accounts.tensors``),
so the walk finds the peak wherever it is: at the forward/backward turn, in the loss's vocabulary-sized
temporaries on a pipeline's last stage, or in backward with the gradients and their AllReduce buffers alive when
there is no pipeline. Each subgraph is walked at its first call. A pipeline stage runs one micro batch through
that walk while the other micro batches in flight hold what their forward kept for backward: the activations and
the weight copies (fp16 casts of the weights, made again per micro batch), counted once more for each.

Sizes are the memory pool's blocks: the tensor's bytes plus 543, rounded down to 512.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from ..model import IRFile
from ..model.pipeline import schedules
from ..read.values import DTYPE_BYTES
from .memory import MemoryReport, cached_account
from .tensors import VIEW_OPS, Tensor, reader_inputs, sources, tensor_type

ALIGN = 512
# the parts of ``DevicePeak.parts``, in report order
PARTS = (
    "parameters",
    "optimizer_states",
    "gradients",
    "constants",
    "weight_copies",
    "activations",
    "temporaries",
)
STATIC_PARTS = PARTS[:4]  # the parts alive the whole step (``static_parts``)
SOURCE_FRONTEND = "frontend dump"

_OPTIMIZER_STATE = re.compile(r"(^|\.)(moments|adam_m|adam_v|exp_avg|exp_avg_sq|accum|mean_square|moment\d?)\.")
_ACCUMULATION = re.compile(r"(^|\.)(accu_grads|grad_accum\w*)\.")
_SCALAR_STATES = frozenset({"global_step", "learning_rate", "momentum", "beta1_power", "beta2_power"})
# ops that make no storage of their own: views of their input, tuple plumbing, effects, calls
_NO_STORAGE = VIEW_OPS | {"TupleGetItem", "MakeTuple", "UpdateState", "call", "Partial", "Return", "Send"}
# nodes that pass tensors on without reading them: the node reading their output, or a callee's body, reads
_NOT_READERS = VIEW_OPS | {"UpdateState", "MakeTuple", "TupleGetItem", "call", "Partial", "Return"}
# ops that write into their first input (a parameter) and return it
_IN_PLACE = frozenset({"Assign", "AssignAdd", "AssignSub", "ApplyMomentum", "Adam", "AdamWeightDecay", "ApplyAdam"})


def block(nbytes: int) -> int:
    """The memory pool's block for a tensor of ``nbytes``: 0 for none."""
    return (nbytes + ALIGN + 31) // ALIGN * ALIGN if nbytes > 0 else 0


@dataclass
class DevicePeak:
    """One rank's predicted peak of used device memory, its parts, and where it is."""

    bytes: int
    parts: dict[str, int]
    peak_at: str = ""  # the scope of the node running at the peak
    node: int | None = None  # that node
    source: str = SOURCE_FRONTEND
    micro_batches: int = 1
    in_flight: int = 1


def param_role(name: str) -> str:
    """The part a parameter of the top graph belongs to, from its name."""
    name = name.split("_", 1)[1] if re.match(r"para\d+_", name) else name
    name = name.lstrip("▸◂")
    if _ACCUMULATION.search(name):
        return "gradients"
    if _OPTIMIZER_STATE.search(name) or name in _SCALAR_STATES:
        return "optimizer_states"
    return "parameters"


def _const_bytes(value) -> int:
    kwargs = dict(getattr(value, "kwargs", ()) or ())
    if getattr(value, "name", None) != "Tensor" or "shape" not in kwargs:
        return 0
    n = DTYPE_BYTES.get(str(kwargs.get("dtype")), 0)
    for d in kwargs["shape"] or ():
        if not isinstance(d, int) or d < 0:
            return 0
        n *= d
    return n


def static_parts(ir: IRFile) -> dict[str, int]:
    """Parameters, optimizer states, accumulation buffers (the top graph's parameters with a default value)
    and constant tensors, in device blocks."""
    parts = dict.fromkeys(STATIC_PARTS, 0)
    for d in ir.nodes.values():
        kind = d["kind"]
        if kind == "param":
            if d.get("has_default") and d["graph"] == ir.entry and d.get("out_type") is not None:
                parts[param_role(d.get("name", ""))] += block(d["out_type"].nbytes or 0)
        elif kind == "const":
            parts["constants"] += block(_const_bytes(d.get("value")))
    return parts


def _callees(ir: IRFile, call: int) -> list[str]:
    """The subgraphs a call may run (``callee`` edges from subgraph values, a Partial's graph)."""
    out = []
    for src, keyed in ir.pred[call].items():
        if any(e.get("kind") == "callee" for e in keyed.values()):
            d = ir[src]
            if d["kind"] == "subgraph":
                out.append(d["graph"])
            elif d["kind"] == "cnode" and d["op"] == "Partial":
                args = d.get("args") or ()
                if args and str(args[0]) in ir.subgraphs:
                    out.append(str(args[0]))
    m = re.search(r"@Partial\((@[^,)\s]+)", ir[call].get("raw_op", ""))
    if m and m.group(1) in ir.subgraphs:
        out.append(m.group(1))
    return out


def execution_order(ir: IRFile) -> list[int]:
    """The cnodes of the step in the order they run: the top graph's in dump order, each subgraph's
    body at its first call."""
    order: list[int] = []
    done: set[str] = set()

    def walk(graph: str) -> None:
        done.add(graph)
        sub = ir.subgraphs.get(graph)
        if sub is None:
            return
        for n in sub.nodes:
            d = ir[n]
            if d["kind"] != "cnode":
                continue
            if d["op"] == "call":
                for g in _callees(ir, n):
                    if g not in done:
                        walk(g)
            order.append(n)

    top = ir.entry or (list(ir.subgraphs)[-1] if ir.subgraphs else None)
    if top is not None:
        walk(top)
    for g in ir.subgraphs:  # subgraphs no call reaches (a dump of a part)
        if g not in done:
            walk(g)
    return order


def _makes_storage(ir: IRFile, n: int) -> bool:
    d = ir[n]
    op = d["op"]
    if op in _NO_STORAGE or op in _IN_PLACE:
        return False
    t = d.get("out_type")
    return t is None or t.kind != "Ref"


def _fixed(d: dict) -> bool:
    return d["kind"] in ("const", "subgraph") or (d["kind"] == "param" and bool(d.get("has_default")))


def _from_parameters(ir: IRFile, order: list[int]) -> set[int]:
    """The nodes of ``order`` that read only parameters, constants and other such nodes (an AllGather of a
    sharded weight, a weight's cast): nothing of the step's data orders them."""
    out: set[int] = set()
    for n in order:
        d = ir[n]
        if d["op"] in _IN_PLACE or d["op"] in ("call", "Receive", "UpdateState"):
            continue
        ins = ir.pred[n]
        if ins and all(_fixed(ir[i]) or i in out for i in ins):
            out.add(n)
    return out


def liveness(
    ir: IRFile, order: list[int], repeated: dict[str, int] | None = None
) -> Iterator[tuple[Tensor, int, int, int]]:
    """(tensor, its block, the position it is made at, the position of its last reader) for each kernel
    output the step makes, positions in ``order``. ``repeated``: the subgraphs called once per micro batch
    (walked at their first call) -> the position of their last call."""
    pos = {n: i for i, n in enumerate(order)}
    start: dict[Tensor, int] = {}
    end: dict[Tensor, int] = {}
    size: dict[Tensor, int] = {}
    first_read: dict[Tensor, int] = {}
    late = _from_parameters(ir, order)
    storage = {n for n in order if _makes_storage(ir, n)}
    found: dict[int, list] = {}  # an argument's source tensors: many readers share an argument
    nodes = ir.nodes
    for i, n in enumerate(order):
        d = nodes[n]
        if n in storage:
            t = d.get("out_type")
            if t is not None and t.kind != "Tuple" and t.nbytes:
                key = Tensor(n, None)
                start[key], end[key], size[key] = i, i, block(t.nbytes)
        if d["op"] in _NOT_READERS:
            continue  # a reader only through the node that reads its output, or the callee's body
        for arg in reader_inputs(ir, n):
            srcs = found.get(arg)
            if srcs is None:
                srcs = found[arg] = [(t, g) for t, g in sources(ir, arg) if t.node in storage]
            for tensor, getitem in srcs:
                p = pos[tensor.node]
                if tensor not in size:
                    t = tensor_type(ir, tensor, getitem)
                    if t is None or not t.nbytes:
                        continue
                    start[tensor], end[tensor], size[tensor] = p, p, block(t.nbytes)
                last = i
                if repeated and d["graph"] in repeated and nodes[tensor.node]["graph"] not in repeated:
                    # made once, read by every micro batch's call of the half: alive until the last call
                    last = max(i, repeated[d["graph"]])
                if last > end[tensor]:
                    end[tensor] = last
                if tensor not in first_read:
                    first_read[tensor] = i
    for t, s in size.items():
        a = start[t]
        if t.node in late:
            # made from parameters and constants only: the backend schedules it just before its first reader
            a = max(a, first_read.get(t, a) - 1)
        yield t, s, a, end[t]


def _in_flight_others_by_part(ir: IRFile, report: MemoryReport) -> dict[str, int]:
    """What the other micro batches in flight at the peak hold (each chunk's forward keeps, times its micro
    batches in flight then, less the one running), by part."""
    chunks = {c["graph"]: c["in_flight_at_peak"] for c in report.chunks}
    out = {"activations": 0, "weight_copies": 0}
    for part, tensors in (("activations", report.kept), ("weight_copies", report.weight_copies)):
        for t in tensors:
            n = chunks.get(ir[t.tensor.node]["graph"], 1)  # outside the forward halves: once per step
            out[part] += block(t.nbytes) * max(n - 1, 0)
    return out


@dataclass
class Walk:
    """The execution order of one rank's step and what lives along it."""

    order: list[int]
    lifetimes: list[tuple[Tensor, int, int, int]]  # (tensor, block, made at, last read at), positions in order
    in_halves: list[bool]  # per position: inside a micro batch's halves, where the others in flight hold theirs
    others: dict[str, int]  # what the other micro batches in flight hold there, by part


def walk(ir: IRFile, report: MemoryReport | None = None) -> Walk:
    """The step's execution order with each kernel output's lifetime along it (computed once per file: the
    device peak and a pipeline stage's plan both walk it)."""
    cached = ir.__dict__.get("_device_walk")
    if cached is not None:
        return cached
    report = report if report is not None else cached_account(ir)
    order = execution_order(ir)
    stages = schedules(ir)
    halves = {g for s in stages for g in (s.forward, s.backward)}
    last_call: dict[str, int] = {}
    for i, n in enumerate(order):
        if ir[n]["op"] == "call":
            for g in _callees(ir, n):
                if g in halves:
                    last_call[g] = i
    lifetimes = list(liveness(ir, order, last_call))
    others = _in_flight_others_by_part(ir, report) if stages else {}
    w = ir.__dict__["_device_walk"] = Walk(order, lifetimes, [ir[n]["graph"] in halves for n in order], others)
    return w


def device_peak(ir: IRFile, report: MemoryReport | None = None) -> DevicePeak:
    """The predicted peak of used device memory of the rank ``ir`` is the final graph of (computed once per file)."""
    cached = ir.__dict__.get("_device_peak")
    if cached is not None:
        return cached
    report = report if report is not None else cached_account(ir)
    parts = static_parts(ir)
    w = walk(ir, report)
    order, lifetimes, others = w.order, w.lifetimes, w.others
    events: dict[int, int] = {}
    kept_nodes = {t.tensor for t in report.kept}
    copy_nodes = {t.tensor for t in report.weight_copies}
    for _, s, a, b in lifetimes:
        events[a] = events.get(a, 0) + s
        events[b + 1] = events.get(b + 1, 0) - s
    extra_bytes = sum(others.values())
    live = 0
    best, best_at = -1, -1
    for i in range(len(order)):
        live += events.get(i, 0)
        # inside a micro batch's halves the other micro batches in flight hold their kept tensors
        here = live + (extra_bytes if w.in_halves[i] else 0)
        if here > best:
            best, best_at = here, i
    # what is alive at the peak, by part
    alive = {"activations": 0, "weight_copies": 0, "temporaries": 0}
    for t, s, a, b in lifetimes:
        if a <= best_at <= b:
            part = "activations" if t in kept_nodes else "weight_copies" if t in copy_nodes else "temporaries"
            alive[part] += s
    if extra_bytes and best_at >= 0 and w.in_halves[best_at]:
        for part, n in others.items():
            alive[part] += n
    parts.update(alive)
    total = sum(parts.values())
    at = ir[order[best_at]].get("scope", "") if 0 <= best_at < len(order) else ""
    peak = DevicePeak(
        total,
        {k: parts[k] for k in PARTS},
        at,
        order[best_at] if 0 <= best_at < len(order) else None,
        micro_batches=report.micro_batches,
        in_flight=report.in_flight,
    )
    ir.__dict__["_device_peak"] = peak
    return peak


def peak_with_full_recompute(ir: IRFile, report: MemoryReport | None = None) -> int:
    """The device peak of the same step with full-layer recompute: the decoder layers' kept activations and
    weight copies are rebuilt in backward instead of kept (for this and every micro batch in flight), so
    the peak moves to what is left: the static parts, the rest of the walk (the embedding, head and loss,
    the optimizer update)."""
    report = report if report is not None else cached_account(ir)
    w = walk(ir, report)
    rebuilt = {t.tensor for t in (*report.kept, *report.weight_copies) if t.layer.isdigit()}
    events: dict[int, int] = {}
    for t, s, a, b in w.lifetimes:
        if t not in rebuilt:
            events[a] = events.get(a, 0) + s
            events[b + 1] = events.get(b + 1, 0) - s
    live = best = 0
    for i in range(len(w.order)):
        live += events.get(i, 0)
        best = max(best, live)
    return sum(static_parts(ir).values()) + best


_SIZE = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*(GB|MB|KB)\s*", re.IGNORECASE)
_UNITS = {"GB": 1024**3, "MB": 1024**2, "KB": 1024}


def parse_device_memory(text: str) -> int:
    """MindSpore's ``max_device_memory`` syntax (``58GB``, ``0.5GB``; MB and KB too; 1 GB = 1024³ bytes) as
    bytes; ValueError for anything else."""
    m = _SIZE.fullmatch(str(text))
    if m is None or float(m.group(1)) <= 0:
        raise ValueError(f"{text!r} is not a device memory size like 58GB or 0.5GB")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


def config_device_memory(text: str) -> str | None:
    """``context.max_device_memory`` of a MindFormers YAML config, as written, or None; ValueError when the
    text is no YAML."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        doc = YAML(typ="safe").load(text)
    except YAMLError as exc:
        raise ValueError(f"is not valid YAML: {getattr(exc, 'problem', None) or exc}") from None
    ctx = doc.get("context") if isinstance(doc, dict) else None
    found = ctx.get("max_device_memory") if isinstance(ctx, dict) else None
    return None if found is None else str(found)


def device_fields(ir: IRFile, report: MemoryReport | None = None) -> dict:
    """The JSON fields of ``irlint memory`` for one file's device peak."""
    peak = device_peak(ir, report)
    return {
        "device_peak_bytes": peak.bytes,
        "device_peak_parts": dict(peak.parts),
        "device_peak_at": peak.peak_at,
        "device_peak_source": peak.source,
    }


def stage_numbers(entries: list[dict], cases: list[str], assigned: list[int | None] | None = None) -> list[int | None]:
    """The pipeline stage of each file (of ``irlint memory``'s entries): the one MindSpore assigned its ops
    (``assigned``, ``irlint.model.pipeline.pipeline_stage``), else, within a run (``cases``), the files of
    pipeline stages ordered by their first decoder layer; None outside a pipeline."""
    out: list[int | None] = [None] * len(entries)
    runs: dict[str, list[int]] = {}
    for i, (e, case) in enumerate(zip(entries, cases)):
        if e.get("micro_batches", 1) > 1:
            if assigned and assigned[i] is not None:
                out[i] = assigned[i]  # a rank read alone is still its own stage
                continue
            runs.setdefault(case, []).append(i)
    for members in runs.values():
        firsts = {}
        for i in members:
            layers = [int(r["layer"]) for r in entries[i]["layers"] if str(r["layer"]).isdigit()]
            firsts[i] = min(layers) if layers else -1
        order = sorted(set(firsts.values()))
        for i in members:
            out[i] = order.index(firsts[i])
    return out
