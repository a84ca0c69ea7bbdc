"""Grouping the files to check that hold the same graph, for the same rules, into classes of which one file is
read (``dedup`` gives its result to the others): files of the same bytes first (compared a piece at a time, or
by their stored sha256 with a cache), then the graph hash of each new content with the process-specific values
masked (``dedup.graph_hash``)."""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..diagnostics import UNREADABLE, Diagnostic
from ..rule import Rule, builtin_package
from .discover import DumpFile
from .hashes import content_hash
from .lint_file import cache_key, path_free, sample
from .streams import is_buffered, open_dump

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

    from .cache import LintCache


# hashing this much is shared with the worker processes (hashing is bound by one core)
POOL_HASH_MIN_BYTES = 64 * 1024 * 1024


def classes(
    misses: list[tuple[int, DumpFile, str | None]],
    todo: dict[str, list[Rule]],
    store: LintCache | None,
    results: dict,
    rep_of: dict[int, int],
    digests: dict | None = None,
    pool: ProcessPoolExecutor | None = None,
    graph_at: dict[int, str] | None = None,
) -> Iterator[tuple[int, DumpFile, str | None]]:
    """The files to read, one per class of the same graph and the same rules (hashed by ``pool``
    when given). Files of the same bytes are found first (``_same_bytes``), and each new content
    is hashed with the process-specific values masked. Every other member of a class goes to
    ``rep_of``; ``graph_at`` gets each file's masked hash."""
    stage_free = _stage_free(todo)
    own = {path for path, rules in todo.items() if not all(path_free(r) for r in rules)}
    for m in misses:
        if is_buffered(m[1].path) or m[1].path in own:  # read here, or a rule that reads the path
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


def _same_bytes(
    hashed: list[tuple[int, DumpFile, str | None]],
    todo: dict[str, list[Rule]],
    store: LintCache | None,
    results: dict,
    digests: dict | None,
    pool: ProcessPoolExecutor | None,
) -> tuple[list[tuple], dict]:
    """(index, file, content hash, content) of each file still to check, and content -> its masked
    hash (None when it cannot be read). With a cache, a file's content is its stored sha256, the
    key the cache finds results by (into ``digests``; a file found in the cache that way is
    answered there, ``results``). Without one, no file needs that hash: a file whose size (and
    compression) no other shares is a content of its own, and the others are compared with the
    first of their size (``same_or_hashed``)."""

    def mapper(fn, *args):
        return pool.map(fn, *args, chunksize=max(1, min(32, len(args[0]) // 64))) if pool else map(fn, *args)

    def masked(files: dict) -> Iterator[tuple]:
        """(content, masked hash) for each content -> file of ``files`` (a pool starts at once)."""
        return zip(
            files, mapper(graph_hash_of, [f.path for f in files.values()], [f.compression for f in files.values()])
        )

    order: list[tuple] = []
    new: dict = {}  # content -> its first file
    if store is None:
        groups: dict[tuple, list[tuple[int, DumpFile]]] = defaultdict(list)
        for i, f, _ in hashed:
            groups[(f.size, f.compression)].append((i, f))
        # the files of a size after its first, a few at a time: each is compared with the first
        runs = [
            (group[0], group[k : k + COMPARE_RUN])
            for group in groups.values()
            for k in range(1, len(group), COMPARE_RUN)
        ]
        same = mapper(
            same_or_hashed, [first.path for (_, first), _ in runs], [[f.path for _, f in run] for _, run in runs]
        )
        for group in groups.values():
            new[group[0][0]] = group[0][1]
        # the masked hashes of the firsts are computed while the other files are compared
        masked_new = masked(new)
        content_of = {i: i for i in new}
        stored: dict[str, int] = {}  # sha256 -> the first file that has it
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
    hashed_now = iter(mapper(stored_hash, unknown))
    for i, f, digest in hashed:
        fresh = digest is None
        if fresh:
            digest = next(hashed_now)
        if digest is None:
            order.append((i, f, None, None))
            continue
        if digests is not None:
            digests[i] = digest
        if fresh:
            hit = store.get(cache_key(store, digest, f, todo[f.path]), f.display, sample(f.path))
            if hit is not None:  # the same bytes under a new stat (a copy, a touch)
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


def same_or_hashed(first: str, paths: list[str]) -> list[bool | str | None]:
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
            except OSError:  # either file: this one is hashed on its own
                pass
            differ += 1
        answers.append(stored_hash(path))
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
    for _ in classes([(i, f, None) for i, f in enumerate(chosen)], todo, None, {}, rep_of):
        pass
    return {chosen[i].path: chosen[rep].path for i, rep in rep_of.items()}


def _stage_free(todo: dict[str, list[Rule]]) -> dict[str, bool]:
    """Per path: whether its rules read the file's stage only to label findings, which
    ``dedup.as_member`` relabels. True of the built-in rules; a plugin may read ``ir.stage``, so
    files of different stages are one class only for built-in rules."""
    package = builtin_package().__name__ + "."
    return {path: all(type(r).__module__.startswith(package) for r in rules) for path, rules in todo.items()}


def cached_classes(
    files: list[DumpFile],
    todo: dict[str, list[Rule]],
    store: LintCache,
    results: dict,
    digests: dict,
    graph_at: dict[int, str],
    rep_of: dict[int, int],
) -> dict[int, int]:
    """A file answered by the cache -> the file of this run it shares its graph with (by the graph
    hash stored with its entry), as a run that read them would have found: the file read for its
    class, else the first of the class."""
    stage_free = _stage_free(todo)

    def class_key(i: int, graph: str) -> tuple:
        f = files[i]
        return graph, tuple(id(r) for r in todo[f.path]), "" if stage_free[f.path] else f.stage.label

    first: dict[tuple, int] = {}
    for i, graph in graph_at.items():  # files read (or given a read file's result) in this run
        if i not in rep_of:
            first.setdefault(class_key(i, graph), i)
    out: dict[int, int] = {}
    for i in sorted(results):
        f = files[i]
        digest = digests.get(i) or store.known_hash(f.path)
        stored = store.graph_by_key.get(cache_key(store, digest, f, todo[f.path])) if digest else None
        if stored is None:
            continue
        rep = first.setdefault(class_key(i, stored), i)
        if rep != i:
            out[i] = rep
    return out


def shareable(diags: list[Diagnostic]) -> bool:
    """An I/O error or a damaged stream is a property of one file, not of its graph."""
    return not any(d.code == UNREADABLE for d in diags)


def stored_hash(path: str) -> str | None:
    """sha256 of a file as stored (the cache's content key); None when it cannot be read (it is
    then read on its own, which names the problem)."""
    try:
        return content_hash(path)
    except OSError:
        return None


def graph_hash_of(path: str, compression: str | None) -> str | None:
    """``dedup.graph_hash`` of a file's text; None when it cannot be read or decompressed."""
    from . import dedup

    try:
        with open_dump(path, compression) as stream:
            return dedup.graph_hash(stream)
    except Exception:  # noqa: BLE001 - unreadable or damaged
        return None
