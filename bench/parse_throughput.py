"""Parse throughput of the reader on real dumps, against ``grep -c .`` over the same bytes.

    python bench/parse_throughput.py [CORPUS_DIR]   (default: ../shared/corpus, else tests/fixtures/corpus)

Prints MB/s for the largest file and for the whole corpus, each with grep's time measured in the
same run, median of 3.
"""
from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

from irlint.runner.discover import discover
from irlint.read.reader import read_ir

ROOT = Path(__file__).resolve().parents[1]


def _median(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _measure(label: str, paths: list[str]) -> None:
    size = sum(Path(p).stat().st_size for p in paths) / 1e6
    grep = _median(lambda: subprocess.run(["grep", "-c", ".", *paths], stdout=subprocess.DEVNULL, check=False))
    parse = _median(lambda: [read_ir(p) for p in paths])
    print(f"{label}: {len(paths)} file(s), {size:.1f} MB: irlint read {size / parse:.1f} MB/s "
          f"({parse:.2f} s), grep -c . {size / grep:.0f} MB/s ({grep:.3f} s), ratio {parse / grep:.0f}x")


def main() -> None:
    arg = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared" / "corpus"
    if not arg.is_dir():
        arg = ROOT / "tests" / "fixtures" / "corpus"
    files, _ = discover([str(arg)])
    paths = [f.path for f in files]
    largest = max(paths, key=lambda p: Path(p).stat().st_size)
    _measure(f"largest ({Path(largest).name})", [largest])
    _measure(f"corpus ({arg})", paths)


if __name__ == "__main__":
    main()
