"""A lint run: discover files, choose the stage files each rule needs, read them, run rules."""
from __future__ import annotations

import dataclasses
import functools
import gc
import os
import signal
import sys
import threading
import weakref
from collections import defaultdict
from collections.abc import Iterator
from typing import TYPE_CHECKING

from .cache import LintCache, content_hash, content_sample, default_dir, unsafe_folder
from .config import Config, validate
from ..diagnostics import (NO_ATTRIBUTES, NO_SCOPES, NOTE_CODES, PLUGIN_FAILED, RULE_FAILED, TRUNCATED, UNREADABLE,
                          Diagnostic)
from .discover import discover  # noqa: F401 - part of the API
from .discover import DumpFile, InputError, damage_of, discover_inputs, is_buffered, open_dump
from .discover import RANK_DIR as _RANK_DIR
from ..findings import Finding, Report
from ..rule import PLUGIN_RULES, Rule, _builtin_package, load_rules, plugin_output, plugin_problems
from ..model.stages import FRONTEND

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor



def active_rules(config: Config) -> list[Rule]:
    return [cls() for cls in load_rules(plugins=config.plugins)
            if config.rule_enabled(cls.code, cls.name, cls.default_enabled)]


def choose_files(rule: Rule, files: list[DumpFile], all_stages: bool) -> list[DumpFile]:
    """The files of one save_graphs folder in which ``rule`` reads its final evidence: the
    latest file of the first stage in ``rule.stages`` that the folder holds. A dump whose name
    does not say its stage is read by every rule: irlint cannot know it is not the final one."""
    if all_stages or not rule.stages:
        return list(files)
    unplaced = [f for f in files if not f.placed]
    for name in rule.stages:
        hits = [f for f in files if f.placed and (f.stage.name == name or f.stage.label == name)]
        if hits:
            return [max(hits, key=lambda f: (f.stage.seq or -1, f.display)), *unplaced]
    return unplaced


def compiles(files: list[DumpFile]) -> list[list[DumpFile]]:
    """The files of one folder split by compile: MindSpore numbers every dump of a process in one
    sequence, so a compile's files are a run in that order, and a later compile (another graph, a
    recompile) starts again at an earlier stage or repeats one. Files without a sequence number
    (renamed copies) form one group of their own."""
    ordered = sorted((f for f in files if f.placed and f.stage.seq is not None), key=lambda f: f.stage.seq)
    groups: list[list[DumpFile]] = []
    seen: set[tuple] = set()
    last_index = -1
    for f in ordered:
        stage = (f.stage.family, f.stage.label, f.stage.index)   # graph_build_0 and _1: one compile
        index = f.stage.index if f.stage.family == FRONTEND and f.stage.index is not None else None
        if not groups or stage in seen or (index is not None and index < last_index):
            groups.append([])
            seen, last_index = set(), -1
        groups[-1].append(f)
        seen.add(stage)
        if index is not None:
            last_index = index
    rest = [f for f in files if not (f.placed and f.stage.seq is not None)]
    if rest:
        groups.append(rest)
    return groups


def plan(files: list[DumpFile], rules: list[Rule], all_stages: bool = False) -> dict[str, list[Rule]]:
    """path -> rules to run on it. A file named directly gets every rule; in a folder, each rule
    reads the final stage file of each compile."""
    todo: dict[str, list[Rule]] = defaultdict(list)
    folders: dict[str, list[DumpFile]] = defaultdict(list)
    for f in files:
        if f.explicit:
            todo[f.path].extend(rules)
        else:
            folders[f.folder].append(f)
    for folder_files in folders.values():
        unplaced = [f for f in folder_files if not f.placed]
        for group in compiles([f for f in folder_files if f.placed]):
            for rule in rules:
                for f in choose_files(rule, group, all_stages):
                    if rule not in todo[f.path]:
                        todo[f.path].append(rule)
        for f in unplaced:
            if rules:
                todo[f.path].extend(rule for rule in rules if rule not in todo[f.path])
    return {f.path: todo[f.path] for f in files if f.path in todo}


# a chosen stage file with one of these was not read completely: its rules also read the next stage
INCOMPLETE = (TRUNCATED, UNREADABLE)


def fallback_plan(files: list[DumpFile], rules: list[Rule], done: dict[str, list[Rule]],
                  incomplete: set[str], all_stages: bool = False) -> dict[str, list[Rule]]:
    """For the rules whose chosen file was incomplete (truncated, unreadable), the next stage file
    that holds their evidence, as if the incomplete file were not there; runs not yet done only."""
    folder_files = [f for f in files if not f.explicit and f.path not in incomplete]
    todo = plan(folder_files, rules, all_stages)
    extra: dict[str, list[Rule]] = {}
    for path, path_rules in todo.items():
        wanted = [r for r in path_rules if r not in done.get(path, [])
                  and any(r in done.get(p, []) for p in incomplete)]
        if wanted:
            extra[path] = wanted
    return extra


def check_files(files: list[DumpFile], todo: dict[str, list[Rule]], config: Config,
                shared: dict[str, str] | None = None, cached: set[str] | None = None
                ) -> Iterator[tuple[DumpFile, list[Finding], list[Diagnostic]]]:
    """Per file, in order: what its rules found (before severities and suppressions) and the
    diagnostics of reading it. Results come from the cache when the file, the rules and irlint
    are unchanged; otherwise the file is read and checked, in worker processes when that pays:
    a worker returns findings, not the graph, which would cost more to send than to build.
    Files that hold the same graph (``irlint.runner.dedup``) are read once, unless ``config.dedup`` is
    off; ``shared`` then receives each such file's path -> the path of the file that was read
    (or, for files the cache answers, that would have been). ``cached`` receives the paths of the
    files the cache answered."""
    cache_dir = str(default_dir(config.cache_dir)) if config.cache else None
    store = LintCache(cache_dir) if cache_dir is not None else None
    timeout = config.rule_timeout
    results: dict[int, tuple[list[Finding], list[Diagnostic]]] = {}
    misses: list[tuple[int, DumpFile, str | None]] = []   # (index, file, content hash)
    for i, f in enumerate(files):
        digest = store.known_hash(f.path) if store and not is_buffered(f.path) else None
        hit = store.get(_cache_key(store, digest, f, todo[f.path]), f.display, _sample(f.path)) \
            if digest else None
        if hit is not None:
            results[i] = hit
        else:
            misses.append((i, f, digest))
    # standard input (or a pipe) was read into this process: it is checked here, and not cached
    to_pool = [m for m in misses if not is_buffered(m[1].path)]
    jobs = _jobs_for([f for _, f, _ in to_pool], config)
    if jobs > 1 and not _picklable([todo[f.path] for _, f, _ in to_pool]):
        jobs = 1  # rules defined where a worker cannot import them run here
    # the pool starts once the files to read (one per class) add up to enough work for it
    pool: ProcessPoolExecutor | None = None
    waiting: list[tuple[int, DumpFile, str | None]] = []
    finished = False
    digests = {i: digest for i, _, digest in misses}
    rep_of: dict[int, int] = {}   # a file -> the file of its class that is read
    graph_at: dict[int, str] = {}   # a file -> its masked graph hash, where hashing made classes
    uses: dict[int, int] = {}   # a file that is read -> the files that take its result
    outcomes: dict[int, tuple[str | None, list[Finding], list[Diagnostic]]] = {}
    try:
        futures = {}

        def submit(i: int, f: DumpFile, digest: str | None) -> None:
            nonlocal pool
            args = (f, todo[f.path], digest, cache_dir if not is_buffered(f.path) else None, timeout)
            if jobs <= 1 or is_buffered(f.path):
                futures[i] = args
            elif pool is not None:
                futures[i] = pool.submit(_check_one, *args)
            else:
                futures[i] = args   # here, unless a pool starts
                waiting.append((i, f, digest))
                if len(waiting) > 1 and sum(w[1].size for w in waiting) >= PARALLEL_MIN_BYTES:
                    pool = _pool(jobs)
                    for w in waiting:
                        futures[w[0]] = pool.submit(_check_one, *futures[w[0]])

        # biggest first, so that one large file does not start last and run alone; with
        # deduplication, one file per class, once hashing has made the classes
        ordered = sorted(misses, key=lambda m: -m[1].size)
        if getattr(config, "dedup", True) and len(misses) > 1:
            if jobs > 1 and len(to_pool) > jobs and sum(f.size for _, f, _ in to_pool) >= POOL_HASH_MIN_BYTES:
                # the workers hash too, then read what hashing leaves (with a cache, maybe nothing)
                pool = _pool(jobs, reads=store is None)
            for i, f, digest in _classes(ordered, todo, store, results, rep_of, digests, pool, graph_at):
                submit(i, f, digest)
        else:
            for i, f, digest in ordered:
                submit(i, f, digest)
        for rep in rep_of.values():
            uses[rep] = uses.get(rep, 1) + 1   # itself and its members
        # files answered by the cache share a graph as they did when the cache was filled
        cached_rep = _cached_classes(files, todo, store, results, digests, graph_at, rep_of) \
            if store is not None and getattr(config, "dedup", True) else {}

        def outcome(i: int):
            if i in outcomes:
                return outcomes[i]
            job = futures[i]
            got = _check_one(*job) if isinstance(job, tuple) else _result(job, files[i])
            if uses.get(i):
                outcomes[i] = got
            return got

        for i, f in enumerate(files):
            rep = rep_of.get(i)
            if i in results:
                findings, diags = results[i]
                if shared is not None and i in cached_rep:
                    shared[f.path] = files[cached_rep[i]].path
                if cached is not None:
                    cached.add(f.path)
            elif rep is not None and _shareable(outcome(rep)[2]):
                from . import dedup   # only runs whose files share a graph pay for it

                _, rep_findings, rep_diags = outcome(rep)
                findings, diags = dedup.as_member(rep_findings, rep_diags,
                                                  (files[rep].display, files[rep].stage.label),
                                                  (f.display, f.stage.label))
                if shared is not None:
                    shared[f.path] = files[rep].path
                _remember(store, f, todo, digests.get(i), findings, diags, graph_at.get(i))
            else:
                if rep is not None:   # its class's file could not be read whole: read on its own
                    futures[i] = (f, todo[f.path], digests.get(i), cache_dir, timeout)
                digest, findings, diags = outcome(i)
                _remember(store, f, todo, digest, findings, diags, graph_at.get(i))
            for used in (i, rep):   # a class's result is kept until the last file that takes it
                if used in uses:
                    uses[used] -= 1
                    if not uses[used]:
                        outcomes.pop(used, None)
            _progress(config, f)
            yield f, findings, diags
        finished = True
    finally:
        if pool is not None:
            stop_pool(pool, wait=finished)
        if store is not None and store.written:
            store.prune()


def _result(job, f: DumpFile) -> tuple[str | None, list[Finding], list[Diagnostic]]:
    from concurrent.futures.process import BrokenProcessPool

    try:
        return job.result()
    except BrokenProcessPool:
        # a worker was killed (out of memory, a signal): every file it had not finished is named
        return None, [], [Diagnostic(f.display, 0, UNREADABLE,
                                     "not checked: a worker process ended unexpectedly (out of memory? killed?)")]


def _remember(store: LintCache | None, f: DumpFile, todo: dict[str, list[Rule]], digest: str | None,
              findings: list[Finding], diags: list[Diagnostic], graph: str | None = None) -> None:
    # bad input is never cached: a run on it writes nothing but what the user named
    if store is not None and digest is not None and not diags:
        store.remember_hash(f.path, digest)
        store.put(_cache_key(store, digest, f, todo[f.path]), (findings, diags), f.display, _sample(f.path),
                  graph)


def _cached_classes(files: list[DumpFile], todo: dict[str, list[Rule]], store: LintCache, results: dict,
                    digests: dict, graph_at: dict[int, str], rep_of: dict[int, int]) -> dict[int, int]:
    """A file answered by the cache -> the file of this run it shares its graph with (by the graph
    hash stored with its entry), as a run that read them would have found: the file read for its
    class, else the first of the class."""
    stage_free = _stage_free(todo)

    def class_key(i: int, graph: str) -> tuple:
        f = files[i]
        return graph, tuple(id(r) for r in todo[f.path]), "" if stage_free[f.path] else f.stage.label

    first: dict[tuple, int] = {}
    for i, graph in graph_at.items():   # files read (or given a read file's result) in this run
        if i not in rep_of:
            first.setdefault(class_key(i, graph), i)
    out: dict[int, int] = {}
    for i in sorted(results):
        f = files[i]
        digest = digests.get(i) or store.known_hash(f.path)
        graph = store.graph_by_key.get(_cache_key(store, digest, f, todo[f.path])) if digest else None
        if graph is None:
            continue
        rep = first.setdefault(class_key(i, graph), i)
        if rep != i:
            out[i] = rep
    return out


def _shareable(diags: list[Diagnostic]) -> bool:
    """An I/O error or a damaged stream is a property of one file, not of its graph."""
    return not any(d.code == UNREADABLE for d in diags)


def _stored_hash(path: str) -> str | None:
    """sha256 of a file as stored (the cache's content key); None when it cannot be read (it is
    then read on its own, which names the problem)."""
    try:
        return content_hash(path)
    except OSError:
        return None


def _graph_hash(path: str, compression: str | None) -> str | None:
    """``dedup.graph_hash`` of a file's text; None when it cannot be read or decompressed."""
    from . import dedup

    try:
        with open_dump(path, compression) as stream:
            return dedup.graph_hash(stream)
    except Exception:  # noqa: BLE001 - unreadable or damaged
        return None


# hashing this much is shared with the worker processes (hashing is bound by one core)
POOL_HASH_MIN_BYTES = 64 * 1024 * 1024


def _classes(misses: list[tuple[int, DumpFile, str | None]], todo: dict[str, list[Rule]],
             store: LintCache | None, results: dict, rep_of: dict[int, int], digests: dict | None = None,
             pool: ProcessPoolExecutor | None = None, graph_at: dict[int, str] | None = None
             ) -> Iterator[tuple[int, DumpFile, str | None]]:
    """The files to read, one per class of the same graph and the same rules (hashed by ``pool``
    when given). Files of the same bytes are found first (``_same_bytes``), and each new content
    is hashed with the process-specific values masked. Every other member of a class goes to
    ``rep_of``; ``graph_at`` gets each file's masked hash."""
    stage_free = _stage_free(todo)
    own = {path for path, rules in todo.items() if not all(path_free(r) for r in rules)}
    for m in misses:
        if is_buffered(m[1].path) or m[1].path in own:   # read here, or a rule that reads the path
            yield m
    hashed = [m for m in misses if not is_buffered(m[1].path) and m[1].path not in own]
    order, graph_of = _same_bytes(hashed, todo, store, results, digests, pool)
    first: dict[tuple, int] = {}
    for i, f, digest, content in order:
        graph = graph_of[content] if content is not None else None
        if graph is None:
            yield i, f, digest
            continue
        if graph_at is not None:
            graph_at[i] = graph
        key = (graph, tuple(id(r) for r in todo[f.path]), "" if stage_free[f.path] else f.stage.label)
        rep = first.setdefault(key, i)
        if rep != i:
            rep_of[i] = rep
        else:
            yield i, f, digest


def _same_bytes(hashed: list[tuple[int, DumpFile, str | None]], todo: dict[str, list[Rule]],
                store: LintCache | None, results: dict, digests: dict | None,
                pool: ProcessPoolExecutor | None) -> tuple[list[tuple], dict]:
    """(index, file, content hash, content) of each file still to check, and content -> its masked
    hash (None when it cannot be read). With a cache, a file's content is its stored sha256, the
    key the cache finds results by (into ``digests``; a file found in the cache that way is
    answered there, ``results``). Without one, no file needs that hash: a file whose size (and
    compression) no other shares is a content of its own, and the others are compared with the
    first of their size (``_same_or_hashed``)."""
    def mapper(fn, *args):
        return pool.map(fn, *args, chunksize=max(1, min(32, len(args[0]) // 64))) if pool else map(fn, *args)

    def masked(files: dict) -> Iterator[tuple]:
        """(content, masked hash) for each content -> file of ``files`` (a pool starts at once)."""
        return zip(files, mapper(_graph_hash, [f.path for f in files.values()],
                                 [f.compression for f in files.values()]))

    order = []
    new: dict = {}   # content -> its first file
    if store is None:
        groups: dict[tuple, list[tuple[int, DumpFile]]] = defaultdict(list)
        for i, f, _ in hashed:
            groups[(f.size, f.compression)].append((i, f))
        # the files of a size after its first, a few at a time: each is compared with the first
        runs = [(group[0], group[k:k + COMPARE_RUN]) for group in groups.values()
                for k in range(1, len(group), COMPARE_RUN)]
        same = mapper(_same_or_hashed, [first.path for (_, first), _ in runs],
                      [[f.path for _, f in run] for _, run in runs])
        for group in groups.values():
            new[group[0][0]] = group[0][1]
        # the masked hashes of the firsts are computed while the other files are compared
        masked_new = masked(new)
        content_of = {i: i for i in new}
        stored: dict[str, int] = {}   # sha256 -> the first file that has it
        more: dict = {}
        for ((first, _), run), got in zip(runs, same):
            for (i, f), answer in zip(run, got):
                content_of[i] = first if answer is True else None if answer is None else stored.setdefault(answer, i)
                if content_of[i] == i:
                    more[i] = f
        graph_of = dict(masked_new)
        graph_of.update(masked(more))
        return [(i, f, digest, content_of[i]) for i, f, digest in hashed], graph_of
    unknown = [f.path for _, f, digest in hashed if digest is None]
    stored = iter(mapper(_stored_hash, unknown))
    for i, f, digest in hashed:
        fresh = digest is None
        if fresh:
            digest = next(stored)
        if digest is None:
            order.append((i, f, None, None))
            continue
        if digests is not None:
            digests[i] = digest
        if fresh:
            hit = store.get(_cache_key(store, digest, f, todo[f.path]), f.display, _sample(f.path))
            if hit is not None:   # the same bytes under a new stat (a copy, a touch)
                results[i] = hit
                store.remember_hash(f.path, digest)
                continue
        new.setdefault(digest, f)
        order.append((i, f, digest, digest))
    return order, dict(masked(new))


# bytes compared a piece at a time: two pieces this size stay in the processor's cache (256 KiB
# pieces, kept, compare at a third of the speed here)
COMPARE_BYTES = 64 * 1024
# files of one size compared in one task
COMPARE_RUN = 32


def _same_or_hashed(first: str, paths: list[str]) -> list[bool | str | None]:
    """For each of ``paths`` (files of the size of ``first``): True when it holds the bytes of
    ``first``, otherwise its sha256 (None when it cannot be read). Once two differ from ``first``
    the rest are hashed without a comparison: files of one size then mostly differ (ranks that
    print their own values of one length), and one that is hashed anyway still gets its class
    from its masked hash."""
    buffers = _compare_buffers()
    answers: list[bool | str | None] = []
    differ = 0
    for path in paths:
        if differ < 2:
            try:
                if _equal_files(first, path, *buffers):
                    answers.append(True)
                    continue
            except OSError:   # either file: this one is hashed on its own
                pass
            differ += 1
        answers.append(_stored_hash(path))
    return answers


_buffers = threading.local()


def _compare_buffers() -> tuple[bytearray, bytearray]:
    # one pair per thread: fresh ones for every file cost page faults
    pair = getattr(_buffers, "pair", None)
    if pair is None or len(pair[0]) != COMPARE_BYTES:
        pair = _buffers.pair = (bytearray(COMPARE_BYTES), bytearray(COMPARE_BYTES))
    return pair


def _equal_files(a: str, b: str, mine: bytearray, theirs: bytearray) -> bool:
    """Whether files ``a`` and ``b`` hold the same bytes, read into ``mine`` and ``theirs`` (of one size)."""
    with open(a, "rb", buffering=0) as x, open(b, "rb", buffering=0) as y:
        while True:
            n, m = _fill(x, mine), _fill(y, theirs)
            if n != m:
                return False
            if n < len(mine):
                return mine[:n] == theirs[:n]
            if mine != theirs:
                return False


def _fill(raw, buf: bytearray) -> int:
    """Bytes read into ``buf``: all of it unless the file ends first (a raw read may return less)."""
    view = memoryview(buf)
    got = 0
    while got < len(buf):
        n = raw.readinto(view[got:])
        if not n:
            break
        got += n
    return got


def same_graphs(files: list[DumpFile], todo: dict[str, list[Rule]]) -> dict[str, str]:
    """Path of each file to read that holds the same graph, for the same rules, as an earlier
    one -> the path of that one (what a lint with deduplication reads in its place)."""
    rep_of: dict[int, int] = {}
    chosen = [f for f in files if f.path in todo]
    for _ in _classes([(i, f, None) for i, f in enumerate(chosen)], todo, None, {}, rep_of):
        pass
    return {chosen[i].path: chosen[rep].path for i, rep in rep_of.items()}


def path_free(rule: Rule) -> bool:
    """Whether a rule's findings on a file depend on its content only, not on ``ir.path`` (nor the
    rank that path names): true of the built-in rules, and of a plugin rule that declares
    ``path_free = True``. Only then are its results given to another file of the same graph
    (``irlint.runner.dedup``) or found in the cache by content."""
    cls = type(rule)
    return cls.__module__.startswith(_builtin_package().__name__ + ".") or getattr(cls, "path_free", False) is True


def _cache_key(store: LintCache | type[LintCache], digest: str, f: DumpFile, rules: list[Rule]) -> str:
    stage = f.stage.label
    if not all(path_free(r) for r in rules):   # results of this file only
        stage += "\0" + os.path.realpath(f.path)
    return store.key(digest, rules, stage)


def _stage_free(todo: dict[str, list[Rule]]) -> dict[str, bool]:
    """Per path: whether its rules read the file's stage only to label findings, which
    ``dedup.as_member`` relabels. True of the built-in rules; a plugin may read ``ir.stage``, so
    files of different stages are one class only for built-in rules."""
    package = _builtin_package().__name__ + "."
    return {path: all(type(r).__module__.startswith(package) for r in rules) for path, rules in todo.items()}


def _sample(path: str) -> str:
    try:
        return content_sample(path)
    except OSError:
        return "unreadable"   # matches no entry


def stop_pool(pool: ProcessPoolExecutor, wait: bool) -> None:
    """End the workers. After an error, Ctrl-C or SIGTERM, they are killed rather than waited for:
    none may outlive irlint."""
    if not wait:
        for process in list(getattr(pool, "_processes", {}).values()):
            try:
                process.terminate()
            except Exception:  # noqa: BLE001 - already gone
                pass
    pool.shutdown(wait=True, cancel_futures=True)


class RuleTimeout(BaseException):
    """A rule ran past ``rule-timeout`` on one file (a BaseException: a rule's ``except Exception``
    cannot swallow it)."""


def _check_one(f: DumpFile, rules: list[Rule], digest: str | None, cache_dir: str | None,
               timeout: float = 0) -> tuple[str | None, list[Finding], list[Diagnostic]]:
    path, display = f.path, f.display
    if cache_dir is not None and digest is None:
        try:
            digest = content_hash(path)
        except OSError:
            digest = None
        if digest is not None:
            # same content under a new stat (a copy, a touch): still a hit
            hit = LintCache(cache_dir).get(_cache_key(LintCache, digest, f, rules), display, _sample(path))
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
        if damage_of(stream):   # what came before the damage was read; the reader says where it ended
            diagnostics.append(Diagnostic(display, 0, UNREADABLE, f"cannot read to the end: {damage_of(stream)}"))
        missing = missing_evidence(ir, display)
        diagnostics.extend(missing)
        # an analyze_fail.ir holds graphs before autodiff, recompute and parallel passes: no rule's
        # evidence (its IR013 diagnostic says so)
        judgeable = ir.failure is None and not any(d.code == NO_ATTRIBUTES for d in missing)
        for rule in rules if judgeable else ():
            findings.extend(_run_rule(rule, ir, display, diagnostics, timeout))
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
    if not any(d.get("out_type") is not None or d.get("cnode_attrs") or d.get("primitive_attrs")
               or d.get("primal_attrs") for d in cnodes):
        return [Diagnostic(display, 0, NO_ATTRIBUTES,
                           f"no attributes or types on any of its {len(cnodes)} nodes (written with "
                           f"MS_DEV_DUMP_IR_FORMAT=0?): recompute tags, dtypes, shapes and strategies are not "
                           f"in it, so no rule can judge it; dump again without that variable")]
    if not any(d.get("scope") for d in cnodes):
        return [Diagnostic(display, 0, NO_SCOPES,
                           "no scope lines (written with MS_DEV_DUMP_IR_FORMAT=1?): verdicts are given from "
                           "attributes, types and parameter names (layers from the weights' names), but "
                           "scopes, select_recompute keys in hints and Cell.recompute() cells cannot be "
                           "given (`irlint explain IR016`)")]
    return []


def model_refs(ir) -> tuple[weakref.ref, ...]:
    """Weak references to a checked file's model and, when a rule asked for it, its networkx graph,
    after dropping networkx's cached views: each refers back to its graph, a cycle made by every
    rule that reads ``graph.out_edges``."""
    graph = ir._graph
    if graph is None:
        return (weakref.ref(ir),)
    for name in _cached_views(type(graph)):
        graph.__dict__.pop(name, None)
    return weakref.ref(ir), weakref.ref(graph)


@functools.cache
def _cached_views(cls: type) -> tuple[str, ...]:
    return tuple(name for klass in cls.__mro__ for name, value in vars(klass).items()
                 if isinstance(value, functools.cached_property))


def _run_rule(rule: Rule, ir, display: str, diagnostics: list[Diagnostic], timeout: float) -> list[Finding]:
    """What one rule found; a rule that raises, exits, hangs past ``timeout`` seconds or yields
    something other than a Finding becomes an IR011 diagnostic, and the other rules still run.
    A plugin's rule runs in a forked process of its own: one that ends it (``os._exit``, a crash)
    is reported, not mistaken for the end of the lint."""
    if type(rule) in PLUGIN_RULES and _CAN_FORK:
        found, problem = _checked_in_child(rule, ir, timeout)
    elif type(rule) in PLUGIN_RULES:
        with plugin_output():
            found, problem = _checked(rule, ir, timeout)
    else:
        found, problem = _checked(rule, ir, timeout)
    if problem:
        diagnostics.append(Diagnostic(display, 0, RULE_FAILED,
                                      f"rule {rule.code} ({rule.name}) failed on this file: {problem}"))
    return found


def _checked(rule: Rule, ir, timeout: float) -> tuple[list[Finding], str]:
    found: list[Finding] = []
    problem = ""
    try:
        with _time_limit(timeout):
            for item in rule.check(ir):
                if isinstance(item, Finding):
                    found.append(item)
                elif not problem:
                    problem = f"yielded {type(item).__name__} {_short(item)} instead of a Finding"
    except RuleTimeout:
        problem = f"did not finish within {timeout:g} s (rule-timeout)"
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - one broken rule (a plugin, a construct it never met) must not stop the lint
        problem = f"{type(exc).__name__}: {exc}"
    return found, problem


_CAN_FORK = hasattr(os, "fork") and sys.platform == "linux"
# a child that outlives its own rule-timeout by this much (SIGALRM blocked, stuck in C) is killed
CHILD_GRACE_SECONDS = 10


def _checked_in_child(rule: Rule, ir, timeout: float) -> tuple[list[Finding], str]:
    """``_checked`` in a forked child, which sends back its findings through a pipe."""
    import pickle
    import select

    for stream in (sys.stdout, sys.stderr):   # or the child would print the parent's pending output again
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:   # the child: whatever happens, it never returns into the parent's code
        try:
            os.setpgid(0, 0)   # a group of its own: what the rule forks is ended with it
            os.close(read_end)
            _worker_signals()   # ends on SIGTERM and with its parent; Ctrl-C is the parent's
            try:
                with plugin_output():   # never into the report (the child's standard output is the parent's)
                    data = pickle.dumps(_checked(rule, ir, timeout))
            except BaseException as exc:  # noqa: BLE001 - unpicklable findings, RuleTimeout past the loop
                data = pickle.dumps(([], f"{type(exc).__name__}: {exc}"))
            with os.fdopen(write_end, "wb") as out:
                out.write(data)
        finally:
            os._exit(0)
    try:
        os.setpgid(pid, pid)   # (also here: the child may not have got to it yet)
    except OSError:
        pass
    os.close(write_end)
    chunks = []
    deadline = None if timeout <= 0 else timeout + CHILD_GRACE_SECONDS
    killed = ended = False
    try:
        with os.fdopen(read_end, "rb", buffering=0) as pipe:
            while True:
                ready, _, _ = select.select([pipe], [], [], deadline)
                if not ready:
                    killed = True
                    break
                chunk = pipe.read(1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
        ended = not killed
    finally:
        if not ended:   # past the deadline, or Ctrl-C / SIGTERM in the parent: the child goes too
            _kill_group(pid)
        _, status = os.waitpid(pid, 0)
        _kill_group(pid, reaped=True)   # and anything the rule forked that is still there
    if killed:
        return [], f"did not finish within {timeout:g} s (rule-timeout); its process was killed"
    try:
        found, problem = pickle.loads(b"".join(chunks))
    except Exception:   # noqa: BLE001 - nothing, or part of a message: the process ended mid-rule
        return [], f"its process ended before the rule finished ({_exit_status(status)})"
    return found, problem


def _kill_group(pid: int, reaped: bool = False) -> None:
    """SIGKILL to a rule's process and the processes it started. Once the rule's process is reaped,
    its number may be another process's: only its group, which lives on while a member does."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        if not reaped:   # the child had not made its group yet
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def _exit_status(status: int) -> str:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            return f"killed by {signal.Signals(number).name}"
        except ValueError:
            return f"killed by signal {number}"
    return f"exit status {os.waitstatus_to_exitcode(status)}"


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


class _time_limit:
    """SIGALRM after ``seconds`` in the main thread of a process (the CLI, a worker); elsewhere
    (an API call from another thread, Windows) no limit."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.armed = (seconds > 0 and hasattr(signal, "setitimer")
                      and threading.current_thread() is threading.main_thread())

    def __enter__(self):
        if self.armed:
            self.previous = signal.signal(signal.SIGALRM, _alarm)
            signal.setitimer(signal.ITIMER_REAL, self.seconds)
        return self

    def __exit__(self, *exc):
        if self.armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous)
        return False


def _alarm(signum, frame):
    raise RuleTimeout()


# below this much input, starting worker processes costs more than it saves
PARALLEL_MIN_BYTES = 8 * 1024 * 1024


def _jobs_for(files: list[DumpFile], config: Config) -> int:
    jobs = min(capped_jobs(config.effective_jobs()), len(files))
    if jobs <= 1 or sum(f.size for f in files) < PARALLEL_MIN_BYTES:
        return 1
    return jobs


def capped_jobs(jobs: int) -> int:
    """More processes than cores only add memory and switching: at most one per core."""
    return max(1, min(jobs, _cores()))


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _pool(jobs: int, reads: bool = True) -> ProcessPoolExecutor:
    """Worker processes; when they will read (``reads``), what every first read does (the reader's
    imports, the parser) is done here first, once, instead of in each worker."""
    # imported here: a run answered from the cache starts no process, and skips their import time
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    if reads:
        from ..read.reader import warm

        warm()

    # fork starts a worker in milliseconds, with the rules and grammar already loaded
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork") if sys.platform == "linux" and "fork" in methods else None
    return ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_worker_signals)


def _worker_signals() -> None:
    # a forked worker inherits the CLI's handlers: it ends on SIGTERM, and leaves Ctrl-C to the parent,
    # which stops the pool
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _end_with_parent()


def _end_with_parent() -> None:
    """Linux: SIGTERM this worker when the process that started it dies, even by SIGKILL or the
    OOM killer, which leave no chance to clean up."""
    if sys.platform != "linux":
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() == 1:   # the parent died before prctl took effect
        os._exit(1)


def _picklable(value) -> bool:
    import pickle

    try:
        pickle.dumps(value)
    except Exception:  # noqa: BLE001 - whatever pickling raises, the value cannot cross
        return False
    return True


def _progress(config: Config, f: DumpFile) -> None:
    callback = getattr(config, "progress", None)
    if callback is not None:
        callback(f.display, f.size)


def lint(paths, config: Config | None = None, *, stdin_name: str | None = None) -> Report:
    """Lint dump files and folders (``paths``: a list of paths, or one path; ``-`` is standard
    input, shown as ``stdin_name``). Raises ``discover.InputError`` for a path that cannot be used
    and ``config.ConfigError`` for a setting that cannot be (an unknown rule selector, severity …)."""
    config = config or Config()
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]   # one path, not its characters
    paths = [os.fspath(p) for p in paths]
    if not paths:
        raise InputError("no path given")
    validate(config, load_rules(plugins=config.plugins))
    found_inputs = discover_inputs(paths, stdin_name)
    for raw, why in found_inputs.unusable.items():
        raise InputError(f"{raw}: {why}")
    return lint_files(found_inputs.files, found_inputs.diagnostics, config)


def lint_files(files: list[DumpFile], diagnostics: list[Diagnostic], config: Config) -> Report:
    rules = active_rules(config)
    todo = plan(files, rules, config.all_stages)
    by_path = {f.path: f for f in files}
    report = Report(diagnostics=list(diagnostics), files=[], rules=rules)
    if config.cache and files:
        folder = default_dir(config.cache_dir)
        why = unsafe_folder(folder)
        if why:   # entries there could have been planted by anyone who can write it
            report.notes.append(f"cache folder {folder} not used: {why}")
            config = dataclasses.replace(config, cache=False)
    if config.plugins:
        # a plugin whose rules did not load must not let a CI run pass as if they had run
        report.diagnostics.extend(Diagnostic("<plugins>", 0, PLUGIN_FAILED, problem)
                                  for problem in plugin_problems())
    found: list[tuple[DumpFile, Finding]] = []
    silenced: list[tuple[DumpFile, Finding]] = []
    done: dict[str, list[Rule]] = {}
    incomplete: set[str] = set()
    read: set[str] = set()
    shared: dict[str, str] = {}
    cached: set[str] = set()
    while todo:
        for f, findings, diags in check_files([by_path[p] for p in todo], todo, config, shared, cached):
            read.add(f.path)
            done.setdefault(f.path, []).extend(todo[f.path])
            report.notes.extend(f"{d.file}: {d.code} {d.message}" for d in diags
                                if d.code in NOTE_CODES and f"{d.file}: {d.code} {d.message}" not in report.notes)
            diags = [d for d in diags if d.code not in NOTE_CODES]
            report.diagnostics.extend(diags)
            if any(d.code in INCOMPLETE for d in diags):
                incomplete.add(f.path)
            for finding in findings:
                sev = config.severity_for(finding.code, finding.rule, finding.severity)
                silent = config.suppressed(finding.code, finding.rule, finding.scope, finding.model_path)
                (silenced if silent else found).append((f, finding.with_(severity=sev)))
        # a truncated final stage must not hide what the complete earlier stages show
        todo = fallback_plan(files, rules, done, incomplete, config.all_stages) if incomplete else {}
    # only files that were read count as checked
    report.files = [f.display for f in files if f.path in read]
    report.shared = {by_path[member].display: by_path[rep].display for member, rep in shared.items()}
    report.cache_hits = len(cached)
    report.findings = _group(found, {r.name: r.stages for r in rules}, incomplete)
    if getattr(config, "group", True):
        from .group import by_root_cause

        report.findings = by_root_cause(report.findings)
    used: set[int] = set()
    for finding in _group(silenced, {r.name: r.stages for r in rules}, incomplete):
        entry = config.suppression_for(finding.code, finding.rule, finding.scope, finding.model_path)
        if entry is not None:
            used.add(id(entry))
        reason = (entry.reason or f"[[suppress]] {entry.describe()}") if entry else ""
        report.suppressed.append((finding, reason))
    # like an unused noqa: an entry that silenced nothing has a pattern that names nothing (any more)
    report.unused_suppressions = [s for s in config.suppress if id(s) not in used]
    report.notes.extend(f"[[suppress]] entry {s.describe()} matched no finding in this run"
                        for s in report.unused_suppressions if report.files)
    return report


def _group(found: list[tuple[DumpFile, Finding]], stages: dict[str, tuple[str, ...]] | None = None,
           incomplete: set[str] = frozenset()) -> list[Finding]:
    """One finding per problem per folder, then ranks merged. When several stage files show the
    same problem (``--all-stages``, or the stage read in place of one cut short), a file read whole
    wins (a cut file's chain may be cut too), then the rule's preferred stage, then the latest file."""
    stages = stages or {}

    def rank(f: DumpFile, rule: str) -> tuple[bool, int, int]:
        preferred = stages.get(rule, ())
        names = (f.stage.name, f.stage.label)
        index = next((i for i, name in enumerate(preferred) if name in names), len(preferred))
        return (f.path not in incomplete, -index, f.stage.seq or -1)

    per_folder: dict[tuple, list[tuple[DumpFile, Finding]]] = defaultdict(list)
    singles: list[tuple[DumpFile, Finding]] = []
    for f, finding in found:
        if f.explicit:
            singles.append((f, finding))
        else:
            per_folder[(f.folder, finding.problem)].append((f, finding))
    kept: list[tuple[DumpFile, Finding]] = []
    for seen in per_folder.values():
        # the problem as the best stage file shows it (all of that file's findings of it)
        best = max(seen, key=lambda x: rank(x[0], x[1].rule))[0]
        kept.extend(x for x in seen if x[0] is best)
    merged: dict[tuple, list[tuple[DumpFile, Finding]]] = defaultdict(list)
    for f, finding in kept + singles:
        folder = _RANK_DIR.sub(r"\1rank_*", f.folder) if f.rank is not None else f.folder
        key = (folder if not f.explicit else f.path, finding.fingerprint_text, f.explicit)
        merged[key].append((f, finding))
    out = []
    for group in merged.values():
        group.sort(key=lambda x: (x[0].rank if x[0].rank is not None else -1))
        f, finding = group[0]
        ranks = tuple(sorted({g[0].rank for g in group if g[0].rank is not None}))
        out.append(finding.with_(ranks=ranks) if len(ranks) > 1 else finding)
    out.sort(key=lambda x: (x.file, x.line, x.code))
    return out



def read_dump(f: DumpFile):
    """Read one discovered dump whole (decompressed, or from standard input) for the commands that
    show the model rather than lint it. Raises OSError when it cannot be opened; damage found
    while reading becomes a diagnostic."""
    from ..read.reader import read_ir

    with open_dump(f.path, f.compression) as stream:
        ir = read_ir(f.display, f.display, stream=stream)
        if damage_of(stream):
            ir.diagnostics.append(Diagnostic(f.display, 0, UNREADABLE, f"cannot read to the end: {damage_of(stream)}"))
    ir.stage = f.stage
    return ir
