"""A lint run: discover files, choose the stage files each rule needs, read them, run rules."""
from __future__ import annotations

import gc
import re
import sys
from collections import defaultdict
from typing import TYPE_CHECKING, Iterator

from .cache import LintCache, content_hash, default_dir
from .config import Config
from .diagnostics import PLUGIN_FAILED, RULE_FAILED, UNREADABLE, Diagnostic
from .discover import DumpFile, discover
from .findings import Finding, Report
from .rule import Rule, load_rules, plugin_problems

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

_RANK_DIR = re.compile(r"(^|[\\/])rank_\d+(?=[\\/]|$)")


def active_rules(config: Config) -> list[Rule]:
    return [cls() for cls in load_rules(plugins=config.plugins)
            if config.rule_enabled(cls.code, cls.name, cls.default_enabled)]


def choose_files(rule: Rule, files: list[DumpFile], all_stages: bool) -> list[DumpFile]:
    """The files of one save_graphs folder in which ``rule`` reads its final evidence: the
    latest file of the first stage in ``rule.stages`` that the folder holds."""
    if all_stages or not rule.stages:
        return list(files)
    for name in rule.stages:
        hits = [f for f in files if f.stage.name == name or f.stage.label == name]
        if hits:
            return [max(hits, key=lambda f: (f.stage.seq or -1, f.display))]
    return []


def plan(files: list[DumpFile], rules: list[Rule], all_stages: bool = False) -> dict[str, list[Rule]]:
    """display path -> rules to run on it. A file named directly gets every rule."""
    todo: dict[str, list[Rule]] = defaultdict(list)
    folders: dict[str, list[DumpFile]] = defaultdict(list)
    for f in files:
        if f.explicit:
            todo[f.path].extend(rules)
        else:
            folders[f.folder].append(f)
    for folder_files in folders.values():
        for rule in rules:
            for f in choose_files(rule, folder_files, all_stages):
                if rule not in todo[f.path]:
                    todo[f.path].append(rule)
    return dict(todo)


def check_files(files: list[DumpFile], todo: dict[str, list[Rule]], config: Config
                ) -> Iterator[tuple[DumpFile, list[Finding], list[Diagnostic]]]:
    """Per file, in order: what its rules found (before severities and suppressions) and the
    diagnostics of reading it. Results come from the cache when the file, the rules and irlint
    are unchanged; otherwise the file is read and checked, in worker processes when that pays:
    a worker returns findings, not the graph, which would cost more to send than to build."""
    cache_dir = str(default_dir(config.cache_dir)) if config.cache else None
    store = LintCache(cache_dir) if cache_dir is not None else None
    results: dict[int, tuple[list[Finding], list[Diagnostic]]] = {}
    misses: list[tuple[int, DumpFile, str | None]] = []   # (index, file, content hash)
    for i, f in enumerate(files):
        digest = store.known_hash(f.path) if store else None
        hit = store.get(store.key(digest, (f.path, f.display), todo[f.path])) if digest else None
        if hit is not None:
            results[i] = hit
        else:
            misses.append((i, f, digest))
    jobs = _jobs_for([f for _, f, _ in misses], config)
    if jobs > 1 and not _picklable([todo[f.path] for _, f, _ in misses]):
        jobs = 1  # rules defined where a worker cannot import them run here
    pool = _pool(jobs) if jobs > 1 else None
    try:
        futures = {}
        # biggest first, so that one large file does not start last and run alone
        for i, f, digest in sorted(misses, key=lambda m: -m[1].size):
            args = (f.path, f.display, todo[f.path], digest, cache_dir)
            futures[i] = pool.submit(_check_one, *args) if pool else args
        for i, f in enumerate(files):
            if i in results:
                findings, diags = results[i]
            else:
                job = futures[i]
                digest, findings, diags = job.result() if pool else _check_one(*job)
                # bad input is never cached: a run on it writes nothing but what the user named
                if store is not None and digest is not None and not diags:
                    store.remember_hash(f.path, digest)
                    store.put(store.key(digest, (f.path, f.display), todo[f.path]), (findings, diags))
            _progress(config, f)
            yield f, findings, diags
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
        if store is not None and store.written:
            store.prune()


def _check_one(path: str, display: str, rules: list[Rule], digest: str | None, cache_dir: str | None
               ) -> tuple[str | None, list[Finding], list[Diagnostic]]:
    if cache_dir is not None and digest is None:
        try:
            digest = content_hash(path)
        except OSError:
            digest = None
        if digest is not None:
            # same content under a new stat (a copy, a touch): still a hit
            hit = LintCache(cache_dir).get(LintCache.key(digest, (path, display), rules))
            if hit is not None:
                return digest, hit[0], hit[1]
    from .reader import read_ir  # here: a fully cached run never loads the parser

    ir = read_ir(path, display)
    findings: list[Finding] = []
    diagnostics = list(ir.diagnostics)
    for rule in rules:
        try:
            findings.extend(rule.check(ir))
        except Exception as exc:  # one broken rule (a plugin, a construct it never met) must not stop the lint
            diagnostics.append(Diagnostic(display, 0, RULE_FAILED, f"rule {rule.code} ({rule.name}) failed on this file: "
                                                                  f"{type(exc).__name__}: {exc}"))
    if any(d.code == UNREADABLE for d in diagnostics):
        digest = None  # an I/O error is not a property of the content: never cached
    # a rule (a plugin, say) may leave reference cycles through the model: free this file's
    # graph before the next one is read, or a worker's memory grows with every file
    del ir
    gc.collect()
    return digest, findings, diagnostics


# below this much input, starting worker processes costs more than it saves
PARALLEL_MIN_BYTES = 8 * 1024 * 1024


def _jobs_for(files: list[DumpFile], config: Config) -> int:
    jobs = min(config.effective_jobs(), len(files))
    if jobs <= 1 or sum(f.size for f in files) < PARALLEL_MIN_BYTES:
        return 1
    return jobs


def _pool(jobs: int) -> ProcessPoolExecutor:
    # imported here: a run answered from the cache starts no process, and skips their import time
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # fork starts a worker in milliseconds, with the rules and grammar already loaded
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork") if sys.platform == "linux" and "fork" in methods else None
    return ProcessPoolExecutor(max_workers=jobs, mp_context=ctx)


def _picklable(value) -> bool:
    import pickle

    try:
        pickle.dumps(value)
    except Exception:
        return False
    return True


def _progress(config: Config, f: DumpFile) -> None:
    callback = getattr(config, "progress", None)
    if callback is not None:
        callback(f.display, f.size)


def lint(paths: list[str], config: Config | None = None) -> Report:
    """Lint dump files and folders. Raises ``discover.InputError`` for a path that cannot be used."""
    config = config or Config()
    files, diagnostics = discover(list(paths))
    rules = active_rules(config)
    todo = plan(files, rules, config.all_stages)
    by_path = {f.path: f for f in files}
    report = Report(diagnostics=list(diagnostics), files=[f.display for f in files], rules=rules)
    if config.plugins:
        # a plugin whose rules did not load must not let a CI run pass as if they had run
        report.diagnostics.extend(Diagnostic("<plugins>", 0, PLUGIN_FAILED, problem)
                                  for problem in plugin_problems())
    to_read = [by_path[p] for p in todo]
    found: list[tuple[DumpFile, Finding]] = []
    for f, findings, diags in check_files(to_read, todo, config):
        report.diagnostics.extend(diags)
        for finding in findings:
            sev = config.severity_for(finding.code, finding.rule, finding.severity)
            if config.suppressed(finding.code, finding.rule, finding.scope):
                continue
            found.append((f, finding.with_(severity=sev)))
    report.findings = _group(found, {r.name: r.stages for r in rules})
    return report


def _group(found: list[tuple[DumpFile, Finding]], stages: dict[str, tuple[str, ...]] | None = None
           ) -> list[Finding]:
    """One finding per problem per folder, then ranks merged. When several stage files show the
    same problem (``--all-stages``), the rule's preferred stage wins, then the latest file."""
    stages = stages or {}

    def rank(f: DumpFile, rule: str) -> tuple[int, int]:
        preferred = stages.get(rule, ())
        names = (f.stage.name, f.stage.label)
        index = next((i for i, name in enumerate(preferred) if name in names), len(preferred))
        return (-index, f.stage.seq or -1)

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
        key = (folder if not f.explicit else f.path, finding.fingerprint, f.explicit)
        merged[key].append((f, finding))
    out = []
    for group in merged.values():
        group.sort(key=lambda x: (x[0].rank if x[0].rank is not None else -1))
        f, finding = group[0]
        ranks = tuple(sorted({g[0].rank for g in group if g[0].rank is not None}))
        out.append(finding.with_(ranks=ranks) if len(ranks) > 1 else finding)
    out.sort(key=lambda x: (x.file, x.line, x.code))
    return out
