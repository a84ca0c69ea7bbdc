"""Planning a lint: which stage files each rule reads, per compile of each save_graphs folder."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from ..diagnostics import TRUNCATED, UNREADABLE
from ..model.stages import FRONTEND
from ..rule import Rule
from ..run_rule import RunRule
from .discover import DumpFile

if TYPE_CHECKING:
    from .config import Config
    from .discover import Discovery


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
    ordered = sorted((f for f in files if f.placed and f.stage.seq is not None), key=lambda f: f.stage.seq or 0)
    groups: list[list[DumpFile]] = []
    seen: set[tuple] = set()
    last_index = -1
    for f in ordered:
        stage = (f.stage.family, f.stage.label, f.stage.index)  # graph_build_0 and _1: one compile
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


def fallback_plan(
    files: list[DumpFile],
    rules: list[Rule],
    done: dict[str, list[Rule]],
    incomplete: set[str],
    all_stages: bool = False,
) -> dict[str, list[Rule]]:
    """For the rules whose chosen file was incomplete (truncated, unreadable), the next stage file
    that holds their evidence, as if the incomplete file were not there; runs not yet done only."""
    folder_files = [f for f in files if not f.explicit and f.path not in incomplete]
    todo = plan(folder_files, rules, all_stages)
    extra: dict[str, list[Rule]] = {}
    for path, path_rules in todo.items():
        wanted = [
            r for r in path_rules if r not in done.get(path, []) and any(r in done.get(p, []) for p in incomplete)
        ]
        if wanted:
            extra[path] = wanted
    return extra


def why_nothing_checked(rules, checked, found: Discovery, config: Config) -> str:
    """Why a run checked nothing ('' when it checked something): it must not pass as clean."""
    if not rules:
        return (
            "no rule is selected (the --select, --extend-select and --ignore options and the config's "
            "select/ignore leave none; `irlint rules` lists them)"
        )
    if checked:
        return ""
    if rules and all(isinstance(r, RunRule) for r in rules):  # run-level rules only: say what each waits for
        return "the selected rules have nothing to check without " + ", ".join(
            f"{r.needs if not r.wants_run(config) else f'a run of {r.min_files} or more distinct graphs'} ({r.code})"
            for r in rules
        )
    if not found.files:
        return "no graph IR dump was read"
    stages = sorted({f.stage.label for f in found.files})
    wanted = list(dict.fromkeys(s for r in rules for s in r.stages))
    return (
        f"no selected rule reads the stage{'s' if len(stages) != 1 else ''} of the {len(found.files)} dump "
        f"file{'s' if len(found.files) != 1 else ''} found ({', '.join(stages)}); the rules read "
        f"{', '.join(wanted) or 'any stage'}. Name a file to run every rule on it, or use --all-stages"
    )
