"""Which compile stage a dump file is, from its name (MindSpore writes one file per stage)."""
from __future__ import annotations

import re
from dataclasses import dataclass

FRONTEND = "frontend"   # NN_name_SSSS.ir
OPT_PASS = "opt_pass"   # opt_pass_K_name_SSSS.ir (optimizer sub-passes)
BACKEND = "backend"     # hwopt_*, graph_build_*, graph_before_reset_id_*, trace_code_graph_*
OTHER = "other"         # after_grad, before_lift_*, level-3 sub-pass files ...

# A copied or renamed dump may lose the sequence number or gain a prefix (rank0_...) or an
# upper-case suffix; the stage name is still the part MindSpore wrote.
_IR = r"(?:_(?P<seq>\d{4,}))?\.[iI][rR]\Z"
_PATTERNS = [
    (re.compile(r"opt_pass_(?P<index>\d+)_(?P<name>.+?)" + _IR), OPT_PASS),
    (re.compile(r"(?P<index>\d+)_(?P<name>[A-Za-z].*?)" + _IR), FRONTEND),
    (re.compile(r"(?P<name>hwopt_.+?)" + _IR), BACKEND),
    (re.compile(r"(?P<name>graph_build)_(?P<index>\d+)" + _IR), BACKEND),
    (re.compile(r"(?P<name>graph_before_reset_id)_(?P<index>\d+)" + _IR), BACKEND),
    (re.compile(r"(?P<name>trace_code_graph)_(?P<seq>\d+)\Z"), BACKEND),
]
_COPY_PREFIX = re.compile(r"[A-Za-z]+\d+_")
_OTHER = re.compile(r"(?P<name>.+?)_(?P<seq>\d{4,})\.[iI][rR]\Z")
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
    # the name as MindSpore wrote it, then without a prefix a copy added (rank0_21_validate_0076.ir)
    prefix = _COPY_PREFIX.match(base)
    for start in (0, prefix.end()) if prefix else (0,):
        for pattern, family in _PATTERNS:
            m = pattern.match(base, start)
            if m:
                return _stage(m, family)
    m = _OTHER.match(base)
    if m:
        return _stage(m, OTHER)
    stem = base[:-3] if lowered.endswith(".ir") else base
    return Stage(stem, OTHER)


def _stage(m: re.Match, family: str) -> Stage:
    groups = m.groupdict()
    index, seq = groups.get("index"), groups.get("seq")
    return Stage(groups["name"], family, int(seq) if seq else None, int(index) if index else None)
