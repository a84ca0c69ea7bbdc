"""Baselines: adopt irlint on existing dumps and fail only on findings that are new.

A baseline stores fingerprints (which never contain node ids, line numbers or the stage file read,
so they survive a re-dump and a final stage file cut short) with a count, plus rule/file/scope so
a person can read what was accepted.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from ..findings import Finding

if TYPE_CHECKING:
    from pathlib import Path

# 2: fingerprints name the model (Finding.model); a baseline of format 1 is matched without it
FORMAT_VERSION = 2


class Accepted(Counter):
    """fingerprint -> how many findings with it a baseline accepts, and the baseline's format."""

    version: int = FORMAT_VERSION


class BaselineError(Exception):
    """A baseline file that cannot be read or written (exit code 2)."""


def write_baseline(path: str | Path, findings: list[Finding]) -> int:
    # one entry per occurrence: a later run whose group lost or gained a layer is matched layer by layer
    entries = [
        {
            "fingerprint": o.fingerprint,
            "code": o.code,
            "rule": o.rule,
            "file": o.file,
            "scope": o.scope,
            "model_path": o.model_path,
            "model": o.model,
            "message": o.message,
        }
        for f in findings
        for o in f.occurrences
    ]
    entries.sort(key=lambda e: (e["code"], e["file"], e["scope"], e["fingerprint"]))
    data = {"irlint-baseline": FORMAT_VERSION, "findings": entries}
    import json  # only a run with a baseline pays for it

    from ..reporters import write_output

    try:
        write_output(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    except OSError as exc:
        raise BaselineError(f"{path}: cannot write baseline: {exc.strerror or exc}") from None
    return len(entries)


def read_baseline(path: str | Path) -> Accepted:
    """fingerprint -> how many findings with it are accepted."""
    import json
    from pathlib import Path

    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise BaselineError(f"{path}: cannot read baseline: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise BaselineError(f"{path}: not a baseline (invalid JSON: {exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("findings"), list):
        raise BaselineError(f"{path}: not an irlint baseline (written with --write-baseline)")
    counts = Accepted()
    version = data.get("irlint-baseline")
    counts.version = version if isinstance(version, int) and not isinstance(version, bool) else 1
    for entry in data["findings"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("fingerprint"), str):
            raise BaselineError(f"{path}: every entry needs a 'fingerprint'")
        counts[entry["fingerprint"]] += 1
    return counts


def new_findings(findings: list[Finding], accepted: Counter) -> list[Finding]:
    """Findings not covered by the baseline; each baseline entry covers one occurrence, and a
    grouped finding keeps the occurrences that are new. A baseline of format 1 was written before
    fingerprints named the model: its entries are matched without it (``unmodelled_fingerprint``),
    and those written before fingerprints left out the stage name by ``staged_fingerprint``."""
    left = Counter(accepted)
    legacy = getattr(accepted, "version", FORMAT_VERSION) < 2
    out = []
    for f in findings:
        new = []
        for o in f.occurrences:
            forms = [o.fingerprint, o.unmodelled_fingerprint, o.staged_fingerprint] if legacy else [o.fingerprint]
            fp = next((x for x in forms if left[x] > 0), None)
            if fp is not None:
                left[fp] -= 1
            else:
                new.append(o)
        if len(new) == len(f.occurrences):
            out.append(f)
        elif len(new) == 1:
            out.append(new[0])
        elif new:
            from .group import by_root_cause

            out.extend(by_root_cause(new))
    return out


def hidden_counts(before: list[Finding], after: list[Finding]) -> tuple[int, int]:
    """(findings the baseline hid whole, occurrences it hid of findings still shown): a group with
    part of its layers in the baseline is shown with the rest, its hidden occurrences counted."""
    shown = {id(o) for f in after for o in f.occurrences}
    whole = sum(1 for f in before if not any(id(o) in shown for o in f.occurrences))
    partly = sum(
        1 for f in before if any(id(o) in shown for o in f.occurrences) for o in f.occurrences if id(o) not in shown
    )
    return whole, partly
