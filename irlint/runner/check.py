"""Checking the planned files: answered by the cache, or read (once per class of the same graph) here or in
worker processes; results in the files' order."""
from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..diagnostics import Diagnostic
from ..findings import Finding
from ..rule import Rule
from . import same_graph, workers
from .cache import LintCache, default_dir
from .config import Config
from .discover import DumpFile, is_buffered
from .lint_file import cache_key, check_one, remember, sample
from .same_graph import cached_classes, classes, shareable
from .workers import result_of, start_pool, stop_pool

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor


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
        hit = store.get(cache_key(store, digest, f, todo[f.path]), f.display, sample(f.path)) \
            if digest else None
        if hit is not None:
            results[i] = hit
        else:
            misses.append((i, f, digest))
    # standard input (or a pipe) was read into this process: it is checked here, and not cached
    to_pool = [m for m in misses if not is_buffered(m[1].path)]
    jobs = workers.jobs_for([f for _, f, _ in to_pool], config)
    if jobs > 1 and not workers.picklable([todo[f.path] for _, f, _ in to_pool]):
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
                futures[i] = pool.submit(check_one, *args)
            else:
                futures[i] = args   # here, unless a pool starts
                waiting.append((i, f, digest))
                if len(waiting) > 1 and sum(w[1].size for w in waiting) >= workers.PARALLEL_MIN_BYTES:
                    pool = start_pool(jobs)
                    for w in waiting:
                        futures[w[0]] = pool.submit(check_one, *futures[w[0]])

        # biggest first, so that one large file does not start last and run alone; with
        # deduplication, one file per class, once hashing has made the classes
        ordered = sorted(misses, key=lambda m: -m[1].size)
        if getattr(config, "dedup", True) and len(misses) > 1:
            if jobs > 1 and len(to_pool) > jobs and sum(f.size for _, f, _ in to_pool) >= same_graph.POOL_HASH_MIN_BYTES:
                # the workers hash too, then read what hashing leaves (with a cache, maybe nothing)
                pool = start_pool(jobs, reads=store is None)
            for i, f, digest in classes(ordered, todo, store, results, rep_of, digests, pool, graph_at):
                submit(i, f, digest)
        else:
            for i, f, digest in ordered:
                submit(i, f, digest)
        for rep in rep_of.values():
            uses[rep] = uses.get(rep, 1) + 1   # itself and its members
        # files answered by the cache share a graph as they did when the cache was filled
        cached_rep = cached_classes(files, todo, store, results, digests, graph_at, rep_of) \
            if store is not None and getattr(config, "dedup", True) else {}

        def outcome(i: int):
            if i in outcomes:
                return outcomes[i]
            job = futures[i]
            got = check_one(*job) if isinstance(job, tuple) else result_of(job, files[i])
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
            elif rep is not None and shareable(outcome(rep)[2]):
                from . import dedup   # only runs whose files share a graph pay for it

                _, rep_findings, rep_diags = outcome(rep)
                findings, diags = dedup.as_member(rep_findings, rep_diags,
                                                  (files[rep].display, files[rep].stage.label),
                                                  (f.display, f.stage.label))
                if shared is not None:
                    shared[f.path] = files[rep].path
                remember(store, f, todo, digests.get(i), findings, diags, graph_at.get(i))
            else:
                if rep is not None:   # its class's file could not be read whole: read on its own
                    futures[i] = (f, todo[f.path], digests.get(i), cache_dir, timeout)
                digest, findings, diags = outcome(i)
                remember(store, f, todo, digest, findings, diags, graph_at.get(i))
            for used in (i, rep):   # a class's result is kept until the last file that takes it
                if used in uses:
                    uses[used] -= 1
                    if not uses[used]:
                        outcomes.pop(used, None)
            progress(config, f)
            yield f, findings, diags
        finished = True
    finally:
        if pool is not None:
            stop_pool(pool, wait=finished)
        if store is not None and store.written:
            store.prune()

def progress(config: Config, f: DumpFile) -> None:
    callback = getattr(config, "progress", None)
    if callback is not None:
        callback(f.display, f.size)
