"""A lint run: discover files, choose the stage files each rule needs, read them, run rules."""
from __future__ import annotations

import re
from collections import defaultdict
from typing import Iterable

from .config import Config
from .discover import DumpFile, discover
from .findings import Finding, Report
from .model import IRFile
from .reader import read_ir
from .rule import Rule, load_rules

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


def read_files(files: list[DumpFile], config: Config) -> Iterable[IRFile]:
    for f in files:
        ir = read_ir(f.path, f.display)
        yield ir


def lint(paths: list[str], config: Config | None = None) -> Report:
    """Lint dump files and folders. Raises ``discover.InputError`` for a path that cannot be used."""
    config = config or Config()
    files, diagnostics = discover(list(paths))
    rules = active_rules(config)
    todo = plan(files, rules, config.all_stages)
    by_path = {f.path: f for f in files}
    report = Report(diagnostics=list(diagnostics), files=[f.display for f in files], rules=rules)
    to_read = [by_path[p] for p in todo]
    found: list[tuple[DumpFile, Finding]] = []
    for f, ir in zip(to_read, read_files(to_read, config)):
        report.diagnostics.extend(ir.diagnostics)
        for rule in todo[f.path]:
            for finding in rule.check(ir):
                sev = config.severity_for(finding.code, finding.rule, finding.severity)
                if config.suppressed(finding.code, finding.rule, finding.scope):
                    continue
                found.append((f, finding.with_(severity=sev)))
    report.findings = _group(found)
    return report


def _group(found: list[tuple[DumpFile, Finding]]) -> list[Finding]:
    """One finding per problem per folder (the latest stage wins), then ranks merged."""
    per_folder: dict[tuple, tuple[DumpFile, Finding]] = {}
    singles: list[tuple[DumpFile, Finding]] = []
    for f, finding in found:
        if f.explicit:
            singles.append((f, finding))
            continue
        key = (f.folder, finding.rule, finding.with_(stage="").fingerprint)
        best = per_folder.get(key)
        if best is None or (f.stage.seq or -1) > (best[0].stage.seq or -1):
            per_folder[key] = (f, finding)
    merged: dict[tuple, list[tuple[DumpFile, Finding]]] = defaultdict(list)
    for f, finding in list(per_folder.values()) + singles:
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
