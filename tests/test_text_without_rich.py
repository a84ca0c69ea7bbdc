"""The text report to a file or pipe (no colour, no width) is written without rich: byte for byte
what rich prints, for any text a finding may hold; rich lays out what it alone decides."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

from irlint.diagnostics import Diagnostic
from irlint.findings import Finding, Related, Report
from irlint.reporters import UNLIMITED_WIDTH, RenderContext, render
from irlint.reporters import text as text_reporter

VALIDATE = Path(__file__).parent / "fixtures" / "corpus" / "s2_ffn_3d_reshape_blocks" / "21_validate_0076.ir"

# what dumps, rules and file names may hold: wide, zero-width and combining characters, the
# control characters rich drops, line breaks of str.splitlines, tabs, markup brackets
ALPHABET = [
    "a",
    "Z",
    "0",
    " ",
    " ",
    "%",
    "/",
    "(",
    ")",
    ",",
    ":",
    "'",
    "\\",
    "[",
    "]",
    "[bold]",
    "[/]",
    "…",
    "│",
    "↳",
    "✗",
    "漢",
    "ｱ",
    "😀",
    "\u0301",
    "\u200b",
    "\u00ad",
    "\n",
    "\t",
    "\r",
    "\r\n",
    "\x07",
    "\x08",
    "\x0b",
    "\x0c",
    "\x1b",
    "\x1b[31m",
    "\x00",
    "\x1c",
    "\x85",
    "\u2028",
    "\x7f",
    "é",
]


def _text(rng: random.Random, most: int = 30) -> str:
    return "".join(
        rng.choice(ALPHABET) if rng.random() < 0.3 else rng.choice("abcdefgh ") for _ in range(rng.randint(0, most))
    )


def _tame(rng: random.Random) -> str:
    """Text without tabs and breaks of str.splitlines other than \\n: what the plain writer takes."""
    return _text(rng).translate(dict.fromkeys(map(ord, "\t\x1c\x85\u2028"), " "))


def _report(rng: random.Random, tame: bool) -> tuple[Report, RenderContext]:
    pick = _tame if tame else _text
    files = [pick(rng) or "f.ir" for _ in range(rng.randint(1, 3))]
    findings = []
    for _ in range(rng.randint(0, 6)):
        file = rng.choice(files)
        related = tuple(
            Related(
                rng.choice(files),
                rng.randint(1, 99999),
                pick(rng),
                pick(rng),
                pick(rng),
                graph=rng.choice(["", "g", pick(rng)]),
                note=rng.choice(["", pick(rng)]),
            )
            for _ in range(rng.randint(0, 4))
        )
        findings.append(
            Finding(
                code=rng.choice(["RC001", "RC002", "XP001"]),
                rule="r",
                severity=rng.choice(["error", "warning", "info", "x"]),
                file=file,
                line=rng.randint(0, 10 ** rng.randint(1, 7)),
                graph=rng.choice(["", "g", pick(rng)]),
                node=pick(rng),
                op=pick(rng),
                scope=rng.choice(["", pick(rng)]),
                message=pick(rng) + "x",
                hint=rng.choice(["", pick(rng), pick(rng) + "\n", "a\n\nb"]),
                column=rng.randint(1, 3),
                related=related,
                ranks=rng.choice([(), (0, 1, 2, 5)]),
                bytes_at_stake=rng.choice([None, rng.randint(0, 9)]),
            )
        )
    diagnostics = [
        Diagnostic(rng.choice(files), rng.randint(0, 99), "IR001", pick(rng)) for _ in range(rng.randint(0, 2))
    ]

    class Named:
        code, name = "XP001", rng.choice(["every-return", "x" * rng.randint(1, 60)] + ([] if tame else [pick(rng)]))

    report = Report(
        findings=findings, diagnostics=diagnostics, files=files[: rng.randint(0, len(files))], rules=[Named]
    )
    ctx = RenderContext(quiet=rng.random() < 0.3, statistics=rng.random() < 0.15, baselined=rng.choice([0, 2]))
    for f in findings:  # the dump lines a report shows, as if read from the files
        for where, line in [(f.file, f.line), *((r.file, r.line) for r in f.related)]:
            ctx.sources._lines.setdefault(where, {})[line] = rng.choice(["", pick(rng)])
    return report, ctx


def _outcome(report: Report, ctx: RenderContext) -> str:
    try:
        return render(report, "text", ctx)
    except Exception as exc:  # rich's markup refuses a rule named "[/]": both ways alike
        return repr(exc)


def _with_rich(report: Report, ctx: RenderContext, monkeypatch) -> str:
    with monkeypatch.context() as m:
        m.setattr(text_reporter, "plain_text", lambda blocks: None)
        return _outcome(report, ctx)


@pytest.mark.slow
@pytest.mark.parametrize("tame", [True, False], ids=["no-tabs", "anything"])
def test_plain_text_is_what_rich_prints(tame, monkeypatch):
    rng = random.Random(19 + tame)
    plain_used = 0
    for _ in range(200):
        report, ctx = _report(rng, tame)
        blocks_were_plain = text_reporter.plain_text(text_reporter._blocks(report, ctx)) is not None
        plain_used += blocks_were_plain
        assert _outcome(report, ctx) == _with_rich(report, ctx, monkeypatch)
    if tame:
        assert plain_used > 160  # the case taken without rich is the common one


def test_lines_near_the_width_limit_are_left_to_rich():
    long = "w " * (UNLIMITED_WIDTH // 2) + "漢" * 10
    for message, hint in [(long, ""), ("m", long), ("m", "x" * (UNLIMITED_WIDTH - 5))]:
        f = Finding("RC001", "r", "warning", "f.ir", 3, "", "%1", "Mul", "s" * UNLIMITED_WIDTH, message, hint=hint)
        report, ctx = Report(findings=[f], files=["f.ir"]), RenderContext()
        ctx.sources._lines["f.ir"] = {3: "漢" * (UNLIMITED_WIDTH // 2)}
        assert text_reporter.plain_text(text_reporter._blocks(report, ctx)) is None  # rendered by rich


def test_a_real_report_is_the_same_both_ways(monkeypatch):
    from irlint.runner.config import Config
    from irlint.runner.engine import lint

    report = lint([str(VALIDATE)], Config())
    assert report.findings
    for ctx in (RenderContext(), RenderContext(quiet=True), RenderContext(statistics=True)):
        assert text_reporter.plain_text(text_reporter._blocks(report, ctx)) is not None
        assert render(report, "text", ctx) == _with_rich(report, ctx, monkeypatch)


def test_a_report_to_a_file_loads_no_rich(tmp_path):
    code = (
        "import sys\nfrom irlint.cli import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "print('rich' in sys.modules)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, "--no-cache", str(VALIDATE), "-o", str(tmp_path / "r.txt")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.stdout.strip() == "False", proc.stderr
    assert "RC002" in (tmp_path / "r.txt").read_text(encoding="utf-8")
