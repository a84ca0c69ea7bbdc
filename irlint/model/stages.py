"""Which compile stage a dump file is, from its name (MindSpore writes one file per stage)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

FRONTEND = "frontend"  # NN_name_SSSS.ir
OPT_PASS = "opt_pass"  # opt_pass_K_name_SSSS.ir (optimizer sub-passes)
BACKEND = "backend"  # hwopt_*, graph_build_*, graph_before_reset_id_*, trace_code_graph_*
OTHER = "other"  # after_grad, before_lift_*, level-3 sub-pass files ...

# A copied or renamed dump may lose the sequence number, gain a prefix (rank0_…, result_…, myrun-…)
# or a suffix (….backup.ir, .IR): the stage is the part MindSpore wrote, wherever it is in the name.
_SEQ = r"(?:_(?P<seq>\d{4,}))?"
_STAGES = [
    (r"opt_pass_(?P<index>\d+)_(?P<name>[\w\-]+?)" + _SEQ, OPT_PASS),
    (r"(?P<index>\d+)_(?P<name>[A-Za-z][\w\-]*?)" + _SEQ, FRONTEND),
    (r"(?P<name>hwopt_[\w\-]+?)" + _SEQ, BACKEND),
    (r"(?P<name>graph_build)_(?P<index>\d+)" + _SEQ, BACKEND),
    (r"(?P<name>graph_before_reset_id)_(?P<index>\d+)" + _SEQ, BACKEND),
]
# the name ends there (as MindSpore writes it), or a copy's own suffix follows (….backup)
_PATTERNS = [(re.compile(p + r"\Z"), family) for p, family in _STAGES]
_TRACE = re.compile(r"(?P<name>trace_code_graph)_(?P<seq>\d+)\Z")
_WORD_START = re.compile(r"(?<=[_\-.\s])")
_RANK_PREFIX = re.compile(r"[A-Za-z]+\d+_")
_OTHER = re.compile(r"(?P<name>.+?)_(?P<seq>\d{4,})\Z")
# how compressed dumps are named (the stage is read from the name without it)
COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz", ".zst")


@dataclass(frozen=True, slots=True)
class Stage:
    """``name`` is the stage without numbers (``validate``, ``add_recomputation``,
    ``hwopt_common_final_graph_0``); ``seq`` is MindSpore's global dump sequence number, which
    orders the files of one compile; ``family`` says which part of the pipeline wrote it."""

    name: str
    family: str
    seq: int | None = None
    index: int | None = None

    @property
    def known(self) -> bool:
        """Whether the file name placed the dump in the pipeline (else every rule reads it)."""
        return self.family != OTHER or self.seq is not None

    @property
    def label(self) -> str:
        return self.name if self.family != OPT_PASS else f"opt_pass_{self.index}_{self.name}"


def stage_of(filename: str) -> Stage:
    base = filename.replace("\\", "/").rsplit("/", 1)[-1]
    lowered = base.lower()
    for suffix in COMPRESSED_SUFFIXES:
        if lowered.endswith(suffix):
            base, lowered = base[: -len(suffix)], lowered[: -len(suffix)]
            break
    m = _TRACE.match(base)
    if m:
        return _stage(m, BACKEND)
    stem = base[:-3] if lowered.endswith(".ir") else base
    # the name as MindSpore wrote it, from its start or after a prefix a copy added; then followed
    # by a suffix a copy added
    starts = [0, *(m.start() for m in _WORD_START.finditer(stem))]
    for suffixed in (False, True):
        patterns = _with_suffix() if suffixed else _PATTERNS
        for start in starts:
            for pattern, family in patterns:
                m = pattern.match(stem, start)
                # inside a name, only with MindSpore's sequence number (net_1_model.ir is no stage
                # file) or after a rank prefix (rank0_21_validate.ir)
                if m and (start == 0 or m.group("seq") or _RANK_PREFIX.fullmatch(stem, 0, start)):
                    return _stage(m, family)
    m = _OTHER.match(stem)
    if m:
        return _stage(m, OTHER)
    return Stage(stem, OTHER)


@cache
def _with_suffix() -> tuple[Any, ...]:
    """``_PATTERNS`` followed by a copy's suffix: compiled on the first name that gets this far
    (a renamed copy, a stage of no family), not by every run."""
    return tuple((re.compile(p + r"(?=[.\s(~])"), family) for p, family in _STAGES)


def _stage(m: re.Match[str], family: str) -> Stage:
    groups = m.groupdict()
    index, seq = groups.get("index"), groups.get("seq")
    return Stage(groups["name"], family, int(seq) if seq else None, int(index) if index else None)
