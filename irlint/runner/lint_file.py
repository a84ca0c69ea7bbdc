"""Linting one file: its cached result, or read it, say what evidence it lacks, run its rules (``sandbox``) and
free its model; the cache entry of that result. Also reading one dump whole for the commands that show it."""

from __future__ import annotations

import functools
import gc
import os
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..diagnostics import NO_ATTRIBUTES, NO_SCOPES, UNREADABLE, Diagnostic
from ..findings import Finding
from ..rule import Rule, builtin_package
from .discover import DumpFile
from .hashes import content_hash, content_sample
from .sandbox import run_rule
from .streams import damage_of, open_dump

if TYPE_CHECKING:
    from ..model import IRFile
    from .cache import LintCache


# Called with each file a lint reads in this process, its model and what its rules found, before the
# model is freed: what a command takes from the models besides the findings (irlint fix, what it checks
# the config against) without reading the dumps again.
READ_HOOKS: list[Callable[[DumpFile, IRFile, list[Finding]], None]] = []


def check_one(
    f: DumpFile, rules: list[Rule], digest: str | None, cache_dir: str | None, timeout: float = 0
) -> tuple[str | None, list[Finding], list[Diagnostic]]:
    path, display = f.path, f.display
    if cache_dir is not None and digest is None:
        try:
            digest = content_hash(path)
        except OSError:
            digest = None
        if digest is not None:
            from .cache import LintCache

            # same content under a new stat (a copy, a touch): still a hit
            hit = LintCache(cache_dir).get(cache_key(LintCache, digest, f, rules), display, sample(path))
            if hit is not None:
                return digest, hit[0], hit[1]
    from ..read.reader import read_ir  # here: a fully cached run never loads the parser

    try:
        stream = open_dump(path, f.compression)
    except OSError as exc:
        return None, [], [Diagnostic(display, 0, UNREADABLE, f"cannot read: {exc.strerror or exc}")]
    with stream:
        # findings and diagnostics name the file one way, as it is displayed
        ir = read_ir(display, display, stream=stream)
        ir.stage = f.stage
        findings: list[Finding] = []
        diagnostics = list(ir.diagnostics)
        if damage_of(stream):  # what came before the damage was read; the reader says where it ended
            diagnostics.append(Diagnostic(display, 0, UNREADABLE, f"cannot read to the end: {damage_of(stream)}"))
        missing = missing_evidence(ir, display)
        diagnostics.extend(missing)
        # an analyze_fail.ir holds graphs before autodiff, recompute and parallel passes: no rule's
        # evidence (its IR013 diagnostic says so)
        judgeable = ir.failure is None and not any(d.code == NO_ATTRIBUTES for d in missing)
        for rule in rules if judgeable else ():
            findings.extend(run_rule(rule, ir, display, diagnostics, timeout))
        for hook in READ_HOOKS:  # while the model and its source are still there
            hook(f, ir, findings)
    if any(d.code == UNREADABLE for d in diagnostics):
        digest = None  # an I/O error is not a property of the content: never cached
    # Free this file's model before the next file is read, or a worker's memory grows with every
    # file. Reference counting frees it unless a rule (a plugin, say) left a reference cycle
    # through it; only then does a full collection run: it walks every live object, the parser's
    # caches included (costly per file even with nothing to free).
    refs = model_refs(ir)
    del ir
    if any(ref() is not None for ref in refs):
        gc.collect()
    return digest, findings, diagnostics


def missing_evidence(ir, display: str) -> list[Diagnostic]:
    """What a dump written with MS_DEV_DUMP_IR_FORMAT=0 (no attributes, no types) or =1 (no scope
    lines) lacks, when none of its nodes has it."""
    cnodes = [d for d in ir.nodes.values() if d.get("kind") == "cnode"]
    if not cnodes:
        return []
    if not any(
        d.get("out_type") is not None or d.get("cnode_attrs") or d.get("primitive_attrs") or d.get("primal_attrs")
        for d in cnodes
    ):
        return [
            Diagnostic(
                display,
                0,
                NO_ATTRIBUTES,
                f"no attributes or types on any of its {len(cnodes)} nodes (written with "
                f"MS_DEV_DUMP_IR_FORMAT=0?): recompute tags, dtypes, shapes and strategies are not "
                f"in it, so no rule can judge it; dump again without that variable",
            )
        ]
    if not any(d.get("scope") for d in cnodes):
        return [
            Diagnostic(
                display,
                0,
                NO_SCOPES,
                "no scope lines (written with MS_DEV_DUMP_IR_FORMAT=1?): verdicts are given from "
                "attributes, types and parameter names (layers from the weights' names), but "
                "scopes, select_recompute keys in hints and Cell.recompute() cells cannot be "
                "given (`irlint explain IR016`)",
            )
        ]
    return []


def model_refs(ir) -> tuple[weakref.ref, ...]:
    """Weak references to a checked file's model and, when a rule asked for it, its networkx graph,
    after dropping networkx's cached views: each refers back to its graph, a cycle made by every
    rule that reads ``graph.out_edges``."""
    graph = ir._graph
    if graph is None:
        return (weakref.ref(ir),)
    for name in _cached_views(graph.__class__):
        graph.__dict__.pop(name, None)
    return weakref.ref(ir), weakref.ref(graph)


@functools.cache
def _cached_views(cls: type) -> tuple[str, ...]:
    return tuple(
        name
        for klass in cls.__mro__
        for name, value in vars(klass).items()
        if isinstance(value, functools.cached_property)
    )


def path_free(rule: Rule) -> bool:
    """Whether a rule's findings on a file depend on its content only, not on ``ir.path`` (nor the
    rank that path names): true of the built-in rules, and of a plugin rule that declares
    ``path_free = True``. Only then are its results given to another file of the same graph
    (``irlint.runner.dedup``) or found in the cache by content."""
    cls = type(rule)
    return cls.__module__.startswith(builtin_package().__name__ + ".") or getattr(cls, "path_free", False) is True


def cache_key(store: LintCache | type[LintCache], digest: str, f: DumpFile, rules: list[Rule]) -> str:
    stage = f.stage.label
    if not all(path_free(r) for r in rules):  # results of this file only
        stage += "\0" + os.path.realpath(f.path)
    return store.key(digest, rules, stage)


def sample(path: str) -> str:
    try:
        return content_sample(path)
    except OSError:
        return "unreadable"  # matches no entry


def remember(
    store: LintCache | None,
    f: DumpFile,
    todo: dict[str, list[Rule]],
    digest: str | None,
    findings: list[Finding],
    diags: list[Diagnostic],
    graph: str | None = None,
) -> None:
    # bad input is never cached: a run on it writes nothing but what the user named
    if store is not None and digest is not None and not diags:
        store.remember_hash(f.path, digest)
        store.put(cache_key(store, digest, f, todo[f.path]), (findings, diags), f.display, sample(f.path), graph)


def read_dump(f: DumpFile) -> IRFile:
    """Read one discovered dump whole (decompressed, or from standard input) for the commands that
    show the model rather than lint it. Raises OSError when it cannot be opened; damage found
    while reading becomes a diagnostic."""
    from ..read.reader import read_ir

    with open_dump(f.path, f.compression) as stream:
        ir = read_ir(f.display, f.display, stream=stream)
        if damage_of(stream):
            ir.diagnostics.append(Diagnostic(f.display, 0, UNREADABLE, f"cannot read to the end: {damage_of(stream)}"))
    ir.stage = f.stage
    # the source traces are read on demand (select keys, a cell's bprop), after this stream is closed
    ir.reopen = functools.partial(open_dump, f.path, f.compression)
    return ir
