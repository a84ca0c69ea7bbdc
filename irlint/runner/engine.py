"""A lint run: discover files, plan the stage files each rule needs (``plan``), check them (``check``: the cache,
same-graph classes, the worker pool, one file at a time in ``lint_file``), then apply severities and suppressions and
merge what the ranks of one folder show alike."""

from __future__ import annotations

import dataclasses
import os
from collections import defaultdict

from ..diagnostics import NOTE_CODES, PLUGIN_FAILED, Diagnostic
from ..findings import Finding, Report
from ..rule import Rule, load_rules, plugin_problems
from .check import check_files
from .config import Config, selector_matches, validate
from .discover import DumpFile, InputError, discover, discover_inputs, rank_folder
from .lint_file import read_dump
from .plan import INCOMPLETE, compiles, fallback_plan, plan
from .same_graph import same_graphs
from .workers import capped_jobs

# the runner's API, and names the commands import from here
__all__ = [
    "INCOMPLETE",
    "active_rules",
    "capped_jobs",
    "check_files",
    "compiles",
    "discover",
    "lint",
    "lint_files",
    "plan",
    "read_dump",
    "same_graphs",
]


def active_rules(config: Config) -> list[Rule]:
    return [
        cls()
        for cls in load_rules(plugins=config.plugins)
        if config.rule_enabled(cls.code, cls.name, cls.default_enabled)
    ]


def lint(paths, config: Config | None = None, *, stdin_name: str | None = None) -> Report:
    """Lint dump files and folders (``paths``: a list of paths, or one path; ``-`` is standard
    input, shown as ``stdin_name``). Raises ``discover.InputError`` for a path that cannot be used
    and ``config.ConfigError`` for a setting that cannot be (an unknown rule selector, severity …)."""
    config = config or Config()
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]  # one path, not its characters
    paths = [os.fspath(p) for p in paths]
    if not paths:
        raise InputError("no path given")
    validate(config, load_rules(plugins=config.plugins))
    found_inputs = discover_inputs(paths, stdin_name)
    for raw, why in found_inputs.unusable.items():
        raise InputError(f"{raw}: {why}")
    return lint_files(found_inputs.files, found_inputs.diagnostics, config)


def lint_files(files: list[DumpFile], diagnostics: list[Diagnostic], config: Config) -> Report:
    from .runs import check_runs, split_rules

    rules = active_rules(config)
    per_file, run_rules = split_rules(rules)
    todo = first_plan = plan(files, per_file, config.all_stages)
    by_path = {f.path: f for f in files}
    report = Report(diagnostics=list(diagnostics), files=[], rules=rules)
    if config.cache and files:
        from .cache import default_dir, unsafe_folder  # here: --no-cache loads no cache

        folder = default_dir(config.cache_dir)
        why = unsafe_folder(folder)
        if why:  # entries there could have been planted by anyone who can write it
            report.notes.append(f"cache folder {folder} not used: {why}")
            config = dataclasses.replace(config, cache=False)
    if config.plugins:
        # a plugin whose rules did not load must not let a CI run pass as if they had run
        report.diagnostics.extend(Diagnostic("<plugins>", 0, PLUGIN_FAILED, problem) for problem in plugin_problems())
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
            report.notes.extend(
                f"{d.file}: {d.code} {d.message}"
                for d in diags
                if d.code in NOTE_CODES and f"{d.file}: {d.code} {d.message}" not in report.notes
            )
            diags = [d for d in diags if d.code not in NOTE_CODES]
            report.diagnostics.extend(diags)
            if any(d.code in INCOMPLETE for d in diags):
                incomplete.add(f.path)
            for finding in findings:
                sev = config.severity_for(finding.code, finding.rule, finding.severity)
                silent = config.suppressed(finding.code, finding.rule, finding.scope, finding.model_path)
                (silenced if silent else found).append((f, finding.with_(severity=sev)))
        # a truncated final stage must not hide what the complete earlier stages show
        todo = fallback_plan(files, per_file, done, incomplete, config.all_stages) if incomplete else {}
    for f, finding in check_runs(files, run_rules, config, report.diagnostics, read, shared, first_plan):
        sev = config.severity_for(finding.code, finding.rule, finding.severity)
        silent = config.suppressed(finding.code, finding.rule, finding.scope, finding.model_path)
        (silenced if silent else found).append((f, finding.with_(severity=sev)))
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
        # every entry that matches is in use (a second one naming the same findings is not unused)
        used.update(
            id(s) for s in config.suppress if s.matches(finding.code, finding.rule, finding.scope, finding.model_path)
        )
        reason = (entry.reason or f"[[suppress]] {entry.describe()}") if entry else ""
        report.suppressed.append((finding, reason))
    # like an unused noqa: an entry that silenced nothing has a pattern that names nothing (any more);
    # an entry for rules that did not run (--select RC001, an RC002 entry) could not have matched
    ran = [(r.code, r.name) for r in rules]
    report.unused_suppressions = [
        s
        for s in config.suppress
        if id(s) not in used and (not s.rule or any(selector_matches(s.rule, code, name) for code, name in ran))
    ]
    report.notes.extend(
        f"[[suppress]] entry {s.describe()} matched no finding in this run"
        for s in report.unused_suppressions
        if report.files
    )
    return report


def _group(
    found: list[tuple[DumpFile, Finding]],
    stages: dict[str, tuple[str, ...]] | None = None,
    incomplete: set[str] | frozenset[str] = frozenset(),
) -> list[Finding]:
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
        if f.explicit and not f.placed:
            singles.append((f, finding))
        else:
            # stage files named one by one (a pre-commit hook passes them so) are their folder's stages
            folder = os.path.dirname(f.path) if f.explicit else f.folder
            per_folder[(f.explicit, folder, finding.problem)].append((f, finding))
    kept: list[tuple[DumpFile, Finding]] = []
    for seen in per_folder.values():
        # the problem as the best stage file shows it (all of that file's findings of it); named
        # files of that same stage (two dumps side by side) each keep theirs
        best = max(seen, key=lambda x: rank(x[0], x[1].rule))[0]
        kept.extend(x for x in seen if x[0] is best or (best.explicit and x[0].stage.label == best.stage.label))
    merged: dict[tuple, list[tuple[DumpFile, Finding]]] = defaultdict(list)
    for f, finding in kept + singles:
        folder = rank_folder(f)
        key = (folder if not f.explicit else f.path, finding.fingerprint_text, f.explicit)
        merged[key].append((f, finding))
    out = []
    for group in merged.values():
        group.sort(key=lambda x: x[0].rank if x[0].rank is not None else -1)
        f, finding = group[0]
        ranks = tuple(sorted({g[0].rank for g in group if g[0].rank is not None}))
        out.append(finding.with_(ranks=ranks) if len(ranks) > 1 else finding)
    out.sort(key=lambda x: (x.file, x.line, x.code))
    return out
