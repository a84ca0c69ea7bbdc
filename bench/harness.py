"""The one harness of bench/: time commands against grep over the same bytes, in the same rounds.

- The baseline is grep (``grep`` below): ``grep -c`` of a file or ``grep -rc`` of a folder, its
  counts written to a file (with standard output on /dev/null GNU grep stops at the first match).
- A command runs in a process of its own (``run``): wall time, CPU time (user + system of it and
  its children, from wait4) and the peak RSS of the largest process of its tree.
- A Python callable runs in this process (``timed``): wall time and this process's CPU time.
- ``rounds`` interleaves them: each round runs the baseline first, then the others, their order
  reversed every other round, so a noisy machine weighs on each alike. Figures are medians
  (``summary``), and ``table`` prints wall and CPU side by side with the ratio to the baseline.

Each script of bench/ is a few lines on top of this; see bench/README.md for what each measures.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
CORPUS = ROOT.parent / "shared" / "corpus"
if not CORPUS.is_dir():
    CORPUS = Path("/work/shared/corpus")
FIXTURES = ROOT / "tests" / "fixtures" / "corpus"


@dataclass(frozen=True)
class Sample:
    wall: float  # seconds
    cpu: float  # seconds, user + system
    rss_mb: float = 0.0  # peak RSS of the largest process (0 for in-process timings)
    code: int = 0  # exit code (0 for in-process timings)


def run(argv: Sequence[str], env: dict | None = None, stdout=None) -> Sample:
    """One command in a new process, its output to ``stdout`` (default: discarded)."""
    start = time.perf_counter()
    proc = subprocess.Popen(list(argv), stdout=stdout or subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Sample(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode)


def grep(paths: Sequence[str | Path], sink: str | Path, pattern: str = ".") -> Sample:
    """The baseline: grep counting ``pattern`` over ``paths`` (recursively in folders) into ``sink``."""
    flag = "-rc" if any(Path(p).is_dir() for p in paths) else "-c"
    with open(sink, "w") as out:
        return run(["grep", flag, pattern, *map(str, paths)], stdout=out)


def timed(fn: Callable[[], object]) -> Sample:
    """One call of ``fn`` in this process."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return Sample(time.perf_counter() - wall, time.process_time() - cpu)


def rounds(jobs: dict[str, Callable[[], Sample]], n: int, log: bool = True) -> dict[str, list[Sample]]:
    """``n`` rounds of every job; the first job is the baseline and opens each round."""
    names = list(jobs)
    out: dict[str, list[Sample]] = {name: [] for name in names}
    for r in range(n):
        for name in [names[0], *(names[1:] if r % 2 == 0 else names[:0:-1])]:
            out[name].append(jobs[name]())
            if log:
                s = out[name][-1]
                print(f"round {r + 1}/{n} {name}: {s.wall:.3f} s (CPU {s.cpu:.3f} s)", file=sys.stderr, flush=True)
    return out


def summary(samples: list[Sample]) -> Sample:
    """Median wall and CPU, the largest peak RSS, the worst exit code."""
    return Sample(
        statistics.median(s.wall for s in samples),
        statistics.median(s.cpu for s in samples),
        max(s.rss_mb for s in samples),
        max(s.code for s in samples),
    )


def table(results: dict[str, list[Sample]], baseline: str | None = None) -> str:
    """A markdown table of medians, each with its ratios to the baseline (the first job by default)."""
    base = summary(results[baseline or next(iter(results))])
    lines = ["| run | wall (CPU), median | peak RSS | x baseline wall | x baseline CPU |", "|---|---:|---:|---:|---:|"]
    for name, samples in results.items():
        s = summary(samples)
        rss = f"{s.rss_mb:.0f} MB" if s.rss_mb else ""
        lines.append(
            f"| {name} | {s.wall:.3f} s ({s.cpu:.3f}) | {rss} | {s.wall / base.wall:.2f} | "
            f"{s.cpu / base.cpu if base.cpu else float('nan'):.2f} |"
        )
    return "\n".join(lines)


def compile_installed() -> None:
    """Byte-compile irlint as pip does for an install: an editable checkout under
    PYTHONDONTWRITEBYTECODE would otherwise compile every module on each start, inside the figures."""
    import importlib.util

    dirs = []
    for name in ("irlint", "irlint.rules"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            dirs.extend(spec.submodule_search_locations)
    subprocess.run([sys.executable, "-m", "compileall", "-q", *dirs], stdout=subprocess.DEVNULL, check=False)
