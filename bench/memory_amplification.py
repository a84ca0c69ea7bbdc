"""Peak memory of reading one dump, against its size: real dumps, and crafted ones built to
amplify (records of a million repeated operands, a flood of minimal node records).

    python bench/memory_amplification.py [CORPUS_DIR] [--quick]

Each file is read (``read_ir``: parse and model, no rules) in a fresh interpreter; its peak RSS (Linux)
minus that of an interpreter that only imported the reader, divided by the file's size, is the
amplification. grep over the same file is timed in the same run for scale (bench/harness.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from harness import CORPUS, FIXTURES, grep

S2 = FIXTURES / "s2_ffn_3d_reshape_blocks" / "21_validate_0076.ir"

_MEASURE = """
import json, sys, time
from irlint.read.reader import read_ir
start = time.perf_counter()
if sys.argv[1] != "-":
    ir = read_ir(sys.argv[1])
    edges = ir.graph.number_of_edges()
else:
    edges = 0
# VmHWM, not ru_maxrss: the latter keeps the peak of the process this one was forked from
peak = next(int(ln.split()[1]) * 1024 for ln in open("/proc/self/status") if ln.startswith("VmHWM:"))
print(json.dumps({"seconds": time.perf_counter() - start, "rss": peak, "edges": edges}))
"""


def measure(path: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", _MEASURE, path], capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


def crafted(folder: Path, records: int, operands: int) -> Path:
    """The s2 dump with ``records`` records ``%N(x0) = MakeTuple(%0, %0, ...)`` of ``operands`` operands."""
    lines = S2.read_bytes().split(b"\n")
    at = next(i for i, ln in enumerate(lines) if ln.startswith(b"  Return("))
    big = [b"  %%%d(x0) = MakeTuple(" % (9000 + i) + b", ".join([b"%0"] * operands) + b")" for i in range(records)]
    path = folder / f"maketuple_{records}x{operands}.ir"
    path.write_bytes(b"\n".join(lines[:at] + big + lines[at:]))
    return path


def minimal_nodes(folder: Path, count: int) -> Path:
    """The s2 dump with ``count`` minimal node records ``%N(x) = A(%0)``."""
    lines = S2.read_bytes().split(b"\n")
    at = next(i for i, ln in enumerate(lines) if ln.startswith(b"  Return("))
    path = folder / f"nodes_{count}.ir"
    path.write_bytes(b"\n".join(lines[:at] + [b"  %%%d(x) = A(%%0)" % (9000 + i) for i in range(count)] + lines[at:]))
    return path


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    quick = "--quick" in sys.argv
    corpus = Path(args[0]) if args else CORPUS
    base = measure("-")["rss"]
    print(f"interpreter with the reader imported: {base / 2**20:.0f} MB RSS")
    print(f"{'file':44} {'MB':>8} {'peak MB':>8} {'x size':>7} {'read s':>7} {'grep s':>7}")
    with tempfile.TemporaryDirectory() as tmp:
        files = [S2]
        if corpus.is_dir():
            real = sorted(corpus.rglob("*.ir"), key=lambda p: p.stat().st_size)
            files += real[-1:]
        files.append(minimal_nodes(Path(tmp), 30_000 if quick else 300_000))
        files.append(crafted(Path(tmp), 13, 95_000 if quick else 950_000))
        for path in files:
            got = measure(str(path))
            g = grep([path], Path(tmp) / "grep.txt").wall
            size = path.stat().st_size
            print(
                f"{path.name[:44]:44} {size / 2**20:8.1f} {got['rss'] / 2**20:8.0f} {(got['rss'] - base) / size:7.1f} "
                f"{got['seconds']:7.2f} {g:7.3f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
