"""Which compile stage a dump file is, from its name (MindSpore writes one file per stage)."""
from __future__ import annotations

import re
from dataclasses import dataclass

FRONTEND = "frontend"   # NN_name_SSSS.ir
OPT_PASS = "opt_pass"   # opt_pass_K_name_SSSS.ir (optimizer sub-passes)
BACKEND = "backend"     # hwopt_*, graph_build_*, graph_before_reset_id_*, trace_code_graph_*
OTHER = "other"         # after_grad, before_lift_*, level-3 sub-pass files ...

_PATTERNS = [
    (re.compile(r"opt_pass_(?P<index>\d+)_(?P<name>.+?)_(?P<seq>\d{4,})\.ir\Z"), OPT_PASS),
    (re.compile(r"(?P<index>\d+)_(?P<name>.+?)_(?P<seq>\d{4,})\.ir\Z"), FRONTEND),
    (re.compile(r"(?P<name>hwopt_.+?)_(?P<seq>\d{4,})\.ir\Z"), BACKEND),
    (re.compile(r"(?P<name>graph_build)_(?P<index>\d+)_(?P<seq>\d{4,})\.ir\Z"), BACKEND),
    (re.compile(r"(?P<name>graph_before_reset_id)_(?P<index>\d+)_(?P<seq>\d{4,})\.ir\Z"), BACKEND),
    (re.compile(r"(?P<name>trace_code_graph)_(?P<seq>\d+)\Z"), BACKEND),
    (re.compile(r"(?P<name>.+?)_(?P<seq>\d{4,})\.ir\Z"), OTHER),
]


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
    def label(self) -> str:
        return self.name if self.family != OPT_PASS else f"opt_pass_{self.index}_{self.name}"


def stage_of(filename: str) -> Stage:
    base = filename.replace("\\", "/").rsplit("/", 1)[-1]
    for pattern, family in _PATTERNS:
        m = pattern.match(base)
        if m:
            groups = m.groupdict()
            index = groups.get("index")
            return Stage(groups["name"], family, int(m.group("seq")), int(index) if index else None)
    stem = base[:-3] if base.endswith(".ir") else base
    return Stage(stem, OTHER)
