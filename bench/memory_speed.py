"""The activation-memory account next to reading the dump, against grep over the file, in the same
rounds (bench/harness.py). Run: ``python bench/memory_speed.py DUMP.ir [--rounds 3]``."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from harness import grep, rounds, table, timed

from irlint.accounts.memory import account
from irlint.read.reader import read_ir

p = argparse.ArgumentParser()
p.add_argument("dump")
p.add_argument("--rounds", "--repeat", type=int, default=3)
args = p.parse_args()
ir = read_ir(args.dump)
with tempfile.NamedTemporaryFile() as sink:
    results = rounds(
        {
            "grep": lambda: grep([args.dump], sink.name, "PrimFunc_"),
            "read_ir": lambda: timed(lambda: read_ir(args.dump)),
            "memory account": lambda: timed(lambda: (ir.__dict__.pop("_memory_report", None), account(ir))),
        },
        args.rounds,
    )
size = Path(args.dump).stat().st_size
print(
    f"{args.dump}: {size / 2**20:.1f} MiB, {ir.cnode_count} cnodes, {len(account(ir).kept)} kept tensors\n"
    + table(results)
)
