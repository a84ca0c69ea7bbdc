"""`irlint diff BEFORE AFTER` (cold: no cache; and on a warm lint cache) against the lints of the two
sides and grep over both folders, in the same rounds (bench/harness.py).

    python3 bench/gen_dump.py --input tests/fixtures/corpus/llama-recompute-modes --layers 64 --out /tmp/d64
    python3 bench/diff_vs_grep.py /tmp/d64 /tmp/d64 --rounds 7

A diff lints both sides (each rule on its final stage file) and then reads the final graph of
each rank once more, for the node matching and the memory account.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

from harness import grep, rounds, run, table

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("before")
ap.add_argument("after")
ap.add_argument("--rounds", type=int, default=7)
ap.add_argument("--irlint", default=os.path.join(os.path.dirname(sys.executable), "irlint"))
args = ap.parse_args()
out = tempfile.mkdtemp(prefix="irlint-diff-bench-")
env = dict(os.environ, IRLINT_CACHE_DIR=os.path.join(out, "cache"))
irlint, sides = args.irlint, [args.before, args.after]
warm = [irlint, "diff", *sides, "--format", "json", "-o", f"{out}/diff-warm.json"]
run(warm, env)  # fills the cache
jobs = {
    "grep both": lambda: grep(sides, f"{out}/grep.txt"),
    "lint both (cold)": lambda: run(
        [
            "sh",
            "-c",
            f"'{irlint}' -n -q '{args.before}' -o '{out}/a.txt'; '{irlint}' -n -q '{args.after}' -o '{out}/b.txt'",
        ],
        env,
    ),
    "diff json (cold)": lambda: run([irlint, "diff", "-n", *sides, "--format", "json", "-o", f"{out}/diff.json"], env),
    "diff json (warm)": lambda: run(warm, env),
    "diff html (cold)": lambda: run([irlint, "diff", "-n", *sides, "--format", "html", "-o", f"{out}/diff.html"], env),
}
print(f"{args.before} -> {args.after}: {args.rounds} rounds\n" + table(rounds(jobs, args.rounds)))
