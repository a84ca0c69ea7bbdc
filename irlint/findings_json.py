"""Findings and diagnostics as plain JSON values and back (the cache's entries), checked on the way back: a value of
the wrong shape raises ValueError. The file an entry is about is stored as a placeholder, so a finding read back
names the file by whatever it is called in this run."""

from __future__ import annotations

from typing import Any

from .diagnostics import Diagnostic
from .findings import Finding, Related, WastedBytes

# Finding fields that are tuples of arbitrary plain values (identity, extra) keep their types: a
# tuple is {"t": [...]}, a dict {"d": {...}}, so a finding read back has the same fingerprint.
_HERE = ""  # stands for the file the entry is about, whatever it is called in this run


def _plain(value):
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise TypeError("not a finite number")
        return value
    if isinstance(value, tuple):
        return {"t": [_plain(v) for v in value]}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"d": {k: _plain(v) for k, v in value.items()}}
    raise TypeError(f"{type(value).__name__} is not a plain value")


def _unplain(value):
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, list):
        return [_unplain(v) for v in value]
    if isinstance(value, dict) and len(value) == 1:
        if isinstance(value.get("t"), list):
            return tuple(_unplain(v) for v in value["t"])
        if isinstance(value.get("d"), dict):
            return {k: _unplain(v) for k, v in value["d"].items()}
    raise ValueError("not a cache value")


_FINDING_TEXT = (
    "code",
    "rule",
    "severity",
    "graph",
    "node",
    "op",
    "scope",
    "message",
    "hint",
    "stage",
    "layer",
    "model_path",
    "model",
    "cause",
    "fix",
    "snippet",
)
_RELATED_TEXT = ("node", "op", "scope", "graph", "note")


def _file_data(name: str, display: str) -> str:
    return _HERE if name == display else name


def _file_name(stored, display: str) -> str:
    if not isinstance(stored, str):
        raise ValueError("file")
    return display if stored == _HERE else stored


def finding_data(f: Finding, display: str) -> dict:
    data = {k: getattr(f, k) for k in _FINDING_TEXT}
    data.update(
        file=_file_data(f.file, display),
        line=f.line,
        column=f.column,
        ranks=list(f.ranks),
        bytes_at_stake=f.bytes_at_stake,
        source=list(f.source) if f.source else None,
        identity=_plain(f.identity),
        extra=_plain(f.extra),
        waste_kinds=list(f.waste_kinds),
        wasted=[[w.graph, w.node, w.op, w.bytes] for w in f.wasted],
        related=[
            {**{k: getattr(r, k) for k in _RELATED_TEXT}, "file": _file_data(r.file, display), "line": r.line}
            for r in f.related
        ],
    )
    for k in _FINDING_TEXT:
        if not isinstance(data[k], str):
            raise TypeError(k)
    return data


def finding_from_data(data, display: str) -> Finding:
    if not isinstance(data, dict):
        raise ValueError("finding")
    identity, extra = _unplain(data["identity"]), _unplain(data["extra"])
    ranks = as_list(data["ranks"])
    stake = data.get("bytes_at_stake")
    source = data.get("source")
    if source is not None:
        if not (isinstance(source, list) and len(source) == 2 and isinstance(source[0], str) and _is_int(source[1])):
            raise ValueError("finding")
        source = (source[0], source[1])
    if not (
        isinstance(identity, tuple)
        and isinstance(extra, tuple)
        and all(_is_int(r) for r in ranks)
        and (stake is None or _is_int(stake))
    ):
        raise ValueError("finding")
    kinds, wasted = as_list(data["waste_kinds"]), [as_list(w) for w in as_list(data["wasted"])]
    if not (
        all(isinstance(k, str) for k in kinds)
        and all(len(w) == 4 and all(isinstance(x, str) for x in w[:3]) and _is_int(w[3]) for w in wasted)
    ):
        raise ValueError("finding")
    texts: dict[str, Any] = {k: _text(data, k) for k in _FINDING_TEXT}
    return Finding(
        **texts,
        file=_file_name(data["file"], display),
        line=_int(data, "line"),
        column=_int(data, "column"),
        ranks=tuple(ranks),
        identity=identity,
        bytes_at_stake=stake,
        source=source,
        waste_kinds=tuple(kinds),
        wasted=tuple(WastedBytes(*w) for w in wasted),
        extra=extra,
        related=tuple(_related(r, display) for r in as_list(data["related"])),
    )


def _related(data, display: str) -> Related:
    if not isinstance(data, dict):
        raise ValueError("related")
    return Related(
        **{k: _text(data, k) for k in _RELATED_TEXT}, file=_file_name(data["file"], display), line=_int(data, "line")
    )


def diagnostic_data(d: Diagnostic, display: str) -> dict:
    return {
        "file": _file_data(d.file, display),
        "line": d.line,
        "code": d.code,
        "message": d.message,
        "excerpt": d.excerpt,
    }


def diagnostic_from_data(data, display: str) -> Diagnostic:
    if not isinstance(data, dict):
        raise ValueError("diagnostic")
    return Diagnostic(
        _file_name(data["file"], display),
        _int(data, "line"),
        _text(data, "code"),
        _text(data, "message"),
        _text(data, "excerpt"),
    )


def as_list(value) -> list:
    if not isinstance(value, list):
        raise ValueError("not a list")
    return value


def _text(data: dict, key: str) -> str:
    if not isinstance(data[key], str):
        raise ValueError(key)
    return data[key]


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int(data: dict, key: str) -> int:
    if not _is_int(data[key]):
        raise ValueError(key)
    return data[key]
