"""Cost of the activation-memory account next to reading the dump, as ratios to a baseline
measured in the same run (``grep -c`` of the file written to a file: with stdout on /dev/null GNU
grep stops at the first match). Run: ``python bench/memory_speed.py DUMP.ir [--repeat 3]``."""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from irlint.accounts.memory import account  # noqa: E402
from irlint.read.reader import read_ir  # noqa: E402


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("dump")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    with tempfile.TemporaryFile() as sink:
        grep = best(lambda: subprocess.run(["grep", "-c", "PrimFunc_", args.dump], stdout=sink, check=True), args.repeat)
    read = best(lambda: read_ir(args.dump), args.repeat)
    ir = read_ir(args.dump)
    acc = best(lambda: (ir.__dict__.pop("_memory_report", None), account(ir)), args.repeat)
    report = account(ir)
    size = Path(args.dump).stat().st_size
    print(f"{args.dump}: {size / 2**20:.1f} MiB, {ir.cnode_count} cnodes, {len(report.kept)} kept tensors")
    print(f"grep -c (baseline)  {grep:8.3f} s  1.0")
    print(f"read_ir             {read:8.3f} s  {read / grep:6.1f} x grep")
    print(f"memory.account      {acc:8.3f} s  {acc / grep:6.1f} x grep  ({acc / read:.2f} x read_ir)")


if __name__ == "__main__":
    main()
