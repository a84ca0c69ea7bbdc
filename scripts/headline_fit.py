"""Check that every finding's one-line texts are whole, over every case folder.

    python scripts/headline_fit.py            # exit 1 and a line per failure when one does not fit

Cases: each folder directly under ../shared/corpus and each folder two levels under tests/fixtures
(as scripts/outputs_equal.py takes them), each linted from its own folder (``irlint .``, so a
rank folder's findings are named ``rank_0/...``), with the configuration found there.
Per finding: its headline has no ellipsis and at most 160 characters; its concise line keeps the
fix when the rule states one, and so does the message of the CI formats (github, gitlab, junit);
the message of its concise line (after ``path:line:col: ``), and of the CI formats, has at most 200
characters; a concise line passes 200 only when its path alone leaves no room.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpus"
sys.path.insert(0, str(REPO))

HEADLINE_MAX = 160
MESSAGE_MAX = 200


def cases() -> list[Path]:
    found = sorted(p for p in CORPUS.iterdir() if p.is_dir()) if CORPUS.is_dir() else []
    fixtures = REPO / "tests" / "fixtures"
    found += sorted(p for p in fixtures.glob("*/*") if p.is_dir() and "corpus-gen" not in p.parts)
    return found


def lint_here(case: Path):
    """The report ``irlint .`` gives in ``case`` (its configuration, no cache, one process)."""
    from irlint.cli.options import load_config_for
    from irlint.runner.discover import discover_inputs, forget_buffers
    from irlint.runner.engine import lint_files

    old = os.getcwd()
    os.chdir(case)
    try:
        forget_buffers()
        config, _ = load_config_for(None, ".")
        config.cache, config.jobs, config.plugins = False, 1, False
        found = discover_inputs(["."], None, False)
        return lint_files(found.files, found.diagnostics, config)
    finally:
        os.chdir(old)


def problems(case: Path) -> Iterator[str]:
    """What does not fit among the findings of one case, one text per failure."""
    from irlint.headline import fix_forms
    from irlint.reporters import RenderContext
    from irlint.reporters.concise import render, short_text

    report = lint_here(case)
    lines = render(report, RenderContext()).splitlines()
    for f, line in zip(report.findings, lines, strict=False):
        head = f.headline
        if "…" in head or len(head) > HEADLINE_MAX:
            yield f"{f.code} headline ({len(head)} chars): {head}"
        prefix = f"{f.file}:{max(f.line, 1)}:{max(f.column, 1)}: "
        message = line[len(prefix) :] if line.startswith(prefix) else line
        if "…" in message:
            yield f"{f.code} concise line cut: {line}"
        if f.fix and not any(f"fix: {fix}" in message for fix in fix_forms(f.fix)):
            yield f"{f.code} concise line without its fix ({f.fix!r}): {line}"
        if len(message) > MESSAGE_MAX:
            yield f"{f.code} concise message of {len(message)} chars: {line}"
        if len(line) > MESSAGE_MAX and len(prefix) + len(f.code) + len(f.severity) < MESSAGE_MAX - 100:
            yield f"{f.code} concise line of {len(line)} chars: {line}"
        ci = short_text(f)
        if (f.fix and not any(f"fix: {fix}" in ci for fix in fix_forms(f.fix))) or len(ci) > MESSAGE_MAX or "…" in ci:
            yield f"{f.code} CI message ({len(ci)} chars) without its whole fix: {ci}"


def main() -> int:
    bad = findings = 0
    for case in cases():
        for text in problems(case):
            bad += 1
            print(f"{case.relative_to(REPO.parent)}: {text}")
        findings += 1
    print(f"{bad} failure{'s' if bad != 1 else ''} over {findings} cases", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
