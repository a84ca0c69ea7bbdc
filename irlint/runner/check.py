"""Checking the planned files: answered by the cache, or read (once per class of the same graph) here or in
worker processes; results in the files' order."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Union

from ..diagnostics import Diagnostic
from ..findings import Finding
from ..rule import Rule
from . import same_graph, workers
from .config import Config
from .discover import DumpFile
from .lint_file import cache_key, check_one, remember, sample
from .same_graph import cached_classes, classes, shareable
from .streams import is_buffered
from .workers import result_of, start_pool, stop_pool

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

    from .cache import LintCache


# (content hash, findings, diagnostics) of one file read: the hash is None when it must not be cached
Outcome = tuple[str | None, list[Finding], list[Diagnostic]]
# (index in the files, file, content hash if known) of a file the cache did not answer
Miss = tuple[int, DumpFile, str | None]
# check_one's arguments (the file is read here), or the worker's future
Job = Union[tuple, "Future[Outcome]"]


def check_files(
    files: list[DumpFile],
    todo: dict[str, list[Rule]],
    config: Config,
    shared: dict[str, str] | None = None,
    cached: set[str] | None = None,
) -> Iterator[tuple[DumpFile, list[Finding], list[Diagnostic]]]:
    """Per file, in order: what its rules found (before severities and suppressions) and the
    diagnostics of reading it. Results come from the cache when the file, the rules and irlint
    are unchanged; otherwise the file is read and checked, in worker processes when that pays:
    a worker returns findings, not the graph, which would cost more to send than to build.
    Files that hold the same graph (``irlint.runner.dedup``) are read once, unless ``config.dedup`` is
    off; ``shared`` then receives each such file's path -> the path of the file that was read
    (or, for files the cache answers, that would have been). ``cached`` receives the paths of the
    files the cache answered."""
    run = _Run(files, todo, config, shared, cached)
    finished = False
    try:
        run.schedule()
        for i, f in enumerate(files):
            findings, diags = run.result(i)
            progress(config, f)
            yield f, findings, diags
        finished = True
    finally:
        run.close(finished)


class _Run:
    """One ``check_files``: what the cache answered, where each other file is read (here, or in a worker once the
    pool starts), the classes of files that share a graph, and each class's result, kept until the last of its
    files has taken it."""

    def __init__(
        self,
        files: list[DumpFile],
        todo: dict[str, list[Rule]],
        config: Config,
        shared: dict[str, str] | None,
        cached: set[str] | None,
    ):
        self.files, self.todo, self.shared, self.cached = files, todo, shared, cached
        self.dedup = getattr(config, "dedup", True)
        self.cache_dir: str | None = None
        self.store: LintCache | None = None
        if config.cache:  # the cache's modules are loaded only then
            from .cache import LintCache, default_dir

            self.cache_dir = str(default_dir(config.cache_dir))
            self.store = LintCache(self.cache_dir)
        self.timeout = config.rule_timeout
        self.results: dict[int, tuple[list[Finding], list[Diagnostic]]] = {}  # answered by the cache
        self.misses: list[Miss] = []
        for i, f in enumerate(files):
            digest = self._known_hash(f)
            hit = self._cache_hit(f, digest) if digest else None
            if hit is not None:
                self.results[i] = hit
            else:
                self.misses.append((i, f, digest))
        # standard input (or a pipe) was read into this process: it is checked here, and not cached
        self.to_pool = [m for m in self.misses if not is_buffered(m[1].path)]
        self.jobs = workers.jobs_for([f for _, f, _ in self.to_pool], config)
        if self.jobs > 1 and not workers.picklable([todo[f.path] for _, f, _ in self.to_pool]):
            self.jobs = 1  # rules defined where a worker cannot import them run here
        self.pool: ProcessPoolExecutor | None = None
        self.waiting: list[tuple[int, DumpFile, tuple]] = []  # read here, unless a pool starts
        self.work: dict[int, Job] = {}
        self.digests = {i: digest for i, _, digest in self.misses}
        self.rep_of: dict[int, int] = {}  # a file -> the file of its class that is read
        self.graph_at: dict[int, str] = {}  # a file -> its masked graph hash, where hashing made classes
        self.uses: dict[int, int] = {}  # a file that is read -> the files that take its result
        self.outcomes: dict[int, Outcome] = {}
        self.cached_rep: dict[int, int] = {}  # a file the cache answered -> the file it shares a graph with

    def _known_hash(self, f: DumpFile) -> str | None:
        if self.store is None or is_buffered(f.path):
            return None
        return self.store.known_hash(f.path)

    def _cache_hit(self, f: DumpFile, digest: str) -> tuple[list[Finding], list[Diagnostic]] | None:
        assert self.store is not None
        return self.store.get(cache_key(self.store, digest, f, self.todo[f.path]), f.display, sample(f.path))

    def schedule(self) -> None:
        """Hand out the files to read: biggest first, so that one large file does not start last and run alone;
        with deduplication, one file per class, once hashing has made the classes."""
        to_read: Iterable[Miss] = sorted(self.misses, key=lambda m: -m[1].size)
        if self.dedup and len(self.misses) > 1:
            if (
                self.jobs > 1
                and len(self.to_pool) > self.jobs
                and sum(f.size for _, f, _ in self.to_pool) >= same_graph.POOL_HASH_MIN_BYTES
            ):
                # the workers hash too, then read what hashing leaves (with a cache, maybe nothing)
                self.pool = start_pool(self.jobs, reads=self.store is None)
            to_read = classes(
                list(to_read), self.todo, self.store, self.results, self.rep_of, self.digests, self.pool, self.graph_at
            )
        for i, f, digest in to_read:
            self._submit(i, f, digest)
        for rep in self.rep_of.values():
            self.uses[rep] = self.uses.get(rep, 1) + 1  # itself and its members
        # files answered by the cache share a graph as they did when the cache was filled
        if self.store is not None and self.dedup:
            self.cached_rep = cached_classes(
                self.files, self.todo, self.store, self.results, self.digests, self.graph_at, self.rep_of
            )

    def _submit(self, i: int, f: DumpFile, digest: str | None) -> None:
        """Read file ``i`` here or in a worker; the pool starts once the files to read here (one per class)
        add up to enough work for it."""
        args = (f, self.todo[f.path], digest, self.cache_dir if not is_buffered(f.path) else None, self.timeout)
        if self.jobs <= 1 or is_buffered(f.path):
            self.work[i] = args
        elif self.pool is not None:
            self.work[i] = self.pool.submit(check_one, *args)
        else:
            self.work[i] = args
            self.waiting.append((i, f, args))
            if len(self.waiting) > 1 and sum(w[1].size for w in self.waiting) >= workers.PARALLEL_MIN_BYTES:
                self.pool = start_pool(self.jobs)
                for j, _, queued in self.waiting:
                    self.work[j] = self.pool.submit(check_one, *queued)

    def result(self, i: int) -> tuple[list[Finding], list[Diagnostic]]:
        """File ``i``'s findings and diagnostics: the cache's, its class's (given to it by ``dedup``) or its own."""
        f, rep = self.files[i], self.rep_of.get(i)
        if i in self.results:
            findings, diags = self.results[i]
            if self.shared is not None and i in self.cached_rep:
                self.shared[f.path] = self.files[self.cached_rep[i]].path
            if self.cached is not None:
                self.cached.add(f.path)
        elif rep is not None and shareable(self._outcome(rep)[2]):
            findings, diags = self._as_member(i, rep)
            if self.shared is not None:
                self.shared[f.path] = self.files[rep].path
            remember(self.store, f, self.todo, self.digests.get(i), findings, diags, self.graph_at.get(i))
        else:
            if rep is not None:  # its class's file could not be read whole: read on its own
                self.work[i] = (f, self.todo[f.path], self.digests.get(i), self.cache_dir, self.timeout)
            digest, findings, diags = self._outcome(i)
            remember(self.store, f, self.todo, digest, findings, diags, self.graph_at.get(i))
        self._taken(i, rep)
        return findings, diags

    def _as_member(self, i: int, rep: int) -> tuple[list[Finding], list[Diagnostic]]:
        from . import dedup  # only runs whose files share a graph pay for it

        _, rep_findings, rep_diags = self._outcome(rep)
        member, read = self.files[i], self.files[rep]
        return dedup.as_member(
            rep_findings, rep_diags, (read.display, read.stage.label), (member.display, member.stage.label)
        )

    def _outcome(self, i: int) -> Outcome:
        """What reading file ``i`` gave (here, or in its worker); kept while other files will take it."""
        if i in self.outcomes:
            return self.outcomes[i]
        job = self.work[i]
        got = check_one(*job) if isinstance(job, tuple) else result_of(job, self.files[i])
        if self.uses.get(i):
            self.outcomes[i] = got
        return got

    def _taken(self, i: int, rep: int | None) -> None:
        for used in (i, rep):  # a class's result is kept until the last file that takes it
            if used is not None and used in self.uses:
                self.uses[used] -= 1
                if not self.uses[used]:
                    self.outcomes.pop(used, None)

    def close(self, finished: bool) -> None:
        """End the workers (killed unless the run finished) and keep the cache within its size."""
        if self.pool is not None:
            stop_pool(self.pool, wait=finished)
        if self.store is not None and self.store.written:
            self.store.prune()


def progress(config: Config, f: DumpFile) -> None:
    callback = getattr(config, "progress", None)
    if callback is not None:
        callback(f.display, f.size)
