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

FORMAT_VERSION = 1


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


def read_baseline(path: str | Path) -> Counter:
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
    counts: Counter = Counter()
    for entry in data["findings"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("fingerprint"), str):
            raise BaselineError(f"{path}: every entry needs a 'fingerprint'")
        counts[entry["fingerprint"]] += 1
    return counts


def new_findings(findings: list[Finding], accepted: Counter) -> list[Finding]:
    """Findings not covered by the baseline; each baseline entry covers one occurrence, and a
    grouped finding keeps the occurrences that are new. An entry written before fingerprints left
    out the stage name is matched by ``staged_fingerprint``."""
    left = Counter(accepted)
    out = []
    for f in findings:
        new = []
        for o in f.occurrences:
            fp = o.fingerprint if left[o.fingerprint] > 0 else o.staged_fingerprint
            if left[fp] > 0:
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
