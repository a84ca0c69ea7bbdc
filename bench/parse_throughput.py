"""Parse throughput of the reader on real dumps, against grep over the same bytes (bench/harness.py).

    python bench/parse_throughput.py [CORPUS_DIR]   (default: ../shared/corpus, else tests/fixtures/corpus)

The largest file, then the whole corpus: MB/s of read_ir and of grep, medians of 3 rounds.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from harness import CORPUS, FIXTURES, grep, rounds, summary, timed

from irlint.read.reader import read_ir
from irlint.runner.discover import discover


def measure(label: str, paths: list[str]) -> None:
    size = sum(Path(p).stat().st_size for p in paths) / 1e6
    with tempfile.NamedTemporaryFile() as sink:
        res = rounds(
            {"grep": lambda: grep(paths, sink.name), "read_ir": lambda: timed(lambda: [read_ir(p) for p in paths])},
            3,
            log=False,
        )
    g, r = summary(res["grep"]), summary(res["read_ir"])
    print(
        f"{label}: {len(paths)} file(s), {size:.1f} MB: read_ir {size / r.wall:.1f} MB/s ({r.wall:.2f} s, CPU "
        f"{r.cpu:.2f} s), grep {size / g.wall:.0f} MB/s ({g.wall:.3f} s), ratio {r.wall / g.wall:.0f}x"
    )


folder = Path(sys.argv[1]) if len(sys.argv) > 1 else CORPUS if CORPUS.is_dir() else FIXTURES
paths = [f.path for f in discover([str(folder)])[0]]
measure(
    f"largest ({Path(max(paths, key=lambda p: Path(p).stat().st_size)).name})",
    [max(paths, key=lambda p: Path(p).stat().st_size)],
)
measure(f"corpus ({folder})", paths)
