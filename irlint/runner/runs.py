"""The run-level pass of a lint: each run-level rule (``irlint.run_rule``) gets the files of each run, as the
plan picks them, after the per-file pass."""

from __future__ import annotations

from collections.abc import Iterator

from ..diagnostics import RULE_FAILED, Diagnostic
from ..findings import Finding
from ..run_rule import RunFile, RunRule
from .config import Config
from .discover import DumpFile, case_of
from .plan import plan


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
) -> Iterator[tuple[DumpFile, Finding]]:
    """(file, finding) of each run-level rule over each run; a rule that fails is reported as a
    diagnostic and the others still run. The paths of the files read are added to ``read``. Files that
    hold the same graph (``shared``: path -> the path of the file read for it) are read once; a run with
    fewer distinct graphs than the rule's ``min_files`` is not read for it."""
    from .lint_file import read_dump

    same = shared or {}
    models: dict[str, object] = {}
    for rule in rules:
        if not rule.wants_run(config):
            continue
        planned = plan(files, [rule], config.all_stages)
        chosen = [f for f in files if f.path in planned]
        runs: dict[str, list[DumpFile]] = {}
        for f in chosen:
            runs.setdefault(case_of(f), []).append(f)
        for members in runs.values():
            if len({same.get(f.path, f.path) for f in members}) < rule.min_files:
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
                if ir.nodes and ir.failure is None:  # type: ignore[attr-defined]
                    run.append(RunFile(f, ir))  # type: ignore[arg-type]
            if not run:
                continue
            by_path = {r.file.path: r.file for r in run}
            try:
                for finding in rule.check_run(run, config):
                    yield by_path.get(finding.file, run[0].file), finding
            except Exception as exc:  # noqa: BLE001 - one rule's failure must not stop the lint
                diagnostics.append(
                    Diagnostic(run[0].file.display, 0, RULE_FAILED, f"{rule.code} {rule.name} failed: {exc!r}")
                )
