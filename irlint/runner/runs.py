"""The run-level pass of a lint: each run-level rule (``irlint.run_rule``) gets the files of each run, as the
plan picks them, after the per-file pass."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..diagnostics import RULE_FAILED, Diagnostic
from ..findings import Finding
from ..run_rule import RunFile, RunRule
from .config import Config
from .discover import DumpFile, case_of
from .plan import plan

if TYPE_CHECKING:
    from ..model import IRFile


def split_rules(rules: list) -> tuple[list, list[RunRule]]:
    """(per-file rules, run-level rules)."""
    runs = [r for r in rules if isinstance(r, RunRule)]
    return [r for r in rules if not isinstance(r, RunRule)], runs


def check_runs(
    files: list[DumpFile],
    rules: list[RunRule],
    config: Config,
    diagnostics: list[Diagnostic],
    read: set[str],
    shared: dict[str, str] | None = None,
    first_plan: dict[str, list] | None = None,
) -> Iterator[tuple[DumpFile, Finding]]:
    """(file, finding) of each run-level rule over each run; a rule that fails is reported as a
    diagnostic and the others still run. The paths of the files read are added to ``read``. Files that
    hold the same graph (``shared``: path -> the path of the file read for it) are read once; a run with
    fewer distinct graphs than the rule's ``min_files`` is not read for it."""
    from .lint_file import read_dump

    same = shared or {}
    models: dict[str, IRFile] = {}
    store = _store(config)
    for rule in rules:
        if not rule.wants_run(config):
            continue
        planned = _planned(files, rule, config, first_plan)
        chosen = [f for f in files if f.path in planned]
        runs: dict[str, list[DumpFile]] = {}
        for f in chosen:
            runs.setdefault(case_of(f), []).append(f)
        for members in runs.values():
            if len({same.get(f.path, f.path) for f in members}) < rule.min_files:
                continue
            members.sort(key=lambda f: f.path)
            keys = _keys(store, rule, config, members) if store is not None else None
            hits = _hits(store, keys, members) if keys else None
            if hits is not None:
                read.update(f.path for f in members)  # checked, from the cache
                yield from hits
                continue
            run = []
            for f in members:
                ir = models.get(same.get(f.path, f.path))
                if ir is None:
                    try:
                        ir = models[same.get(f.path, f.path)] = read_dump(f)
                    except OSError:
                        continue  # the per-file pass reports it
                    read.add(f.path)
                if ir.nodes and ir.failure is None:
                    run.append(RunFile(f, ir))
            if not run:
                continue
            by_path = {name: r.file for r in run for name in (r.file.path, r.file.display)}
            found: list[tuple[DumpFile, Finding]] = []
            try:
                found = [(by_path.get(x.file, run[0].file), x) for x in rule.check_run(run, config)]
            except Exception as exc:  # noqa: BLE001 - one rule's failure must not stop the lint
                diagnostics.append(
                    Diagnostic(run[0].file.display, 0, RULE_FAILED, f"{rule.code} {rule.name} failed: {exc!r}")
                )
                continue
            if keys and len(run) == len(members):
                for f, key in zip(members, keys):
                    store.put(key, ([x for g, x in found if g is f], []), f.display)
            yield from found


def _planned(files: list[DumpFile], rule: RunRule, config: Config, first_plan: dict[str, list] | None) -> set[str]:
    """The files the plan picks for ``rule``: those the per-file pass planned for a rule of the same stages
    (``first_plan``, the lint's plan), else a plan of its own."""
    stages = tuple(rule.stages)
    if first_plan:
        same = {path for path, rules in first_plan.items() if any(tuple(r.stages) == stages for r in rules)}
        if same:
            return same
    return set(plan(files, [rule], config.all_stages))


def _store(config: Config):
    if not config.cache:
        return None
    from .cache import LintCache, default_dir  # only a lint with a cache loads it

    return LintCache(default_dir(config.cache_dir))


def _keys(store, rule: RunRule, config: Config, members: list[DumpFile]) -> list[str] | None:
    """One cache key per file of the run: the rule, its settings, irlint, and every file's content, rank and
    stage (a run's findings depend on all of them); None when a file's content hash is not known."""
    from hashlib import sha256

    from .discover import is_buffered
    from .hashes import rules_hash, tool_hash
    from .same_graph import stored_hash

    if any(is_buffered(f.path) for f in members):
        return None  # standard input is never cached
    digests = []
    for f in members:
        digest = store.known_hash(f.path)
        if digest is None:  # not hashed by the per-file pass (no per-file rule read it)
            digest = stored_hash(f.path)
            if digest is None:
                return None
            store.remember_hash(f.path, digest)
        digests.append(digest)
    run = "\0".join(f"{d}:{f.rank}:{f.stage.label}" for d, f in zip(digests, members))
    ident = "\0".join(("run", tool_hash(), rules_hash([rule]), repr(rule.settings(config)), run))
    whole = sha256(ident.encode("utf-8", "surrogateescape")).hexdigest()
    return [sha256(f"{whole}\0{i}".encode()).hexdigest() for i in range(len(members))]


def _hits(store, keys: list[str], members: list[DumpFile]) -> list[tuple[DumpFile, Finding]] | None:
    """The run's findings from the cache, when every file of it has its entry."""
    out = []
    for f, key in zip(members, keys):
        hit = store.get(key, f.display)
        if hit is None:
            return None
        out += [(f, x) for x in hit[0]]
    return out
