"""Wall time of `irlint diff BEFORE AFTER` (cold: no cache; and on a warm lint cache) against the
irlint lints of the two sides and a `grep -rc` of both folders (written to a file), measured in
the same rounds, so that a noisy machine weighs on each alike.

    python3 bench/gen_dump.py --input tests/fixtures/corpus/llama-recompute-modes --layers 64 --out /tmp/d64
    python3 bench/diff_vs_grep.py /tmp/d64 /tmp/d64 --rounds 7

A diff lints both sides (each rule on its final stage file) and then reads the final graph of
each rank once more, for the node matching and the memory account.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def _wall(cmd: list[str], env: dict) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--irlint", default=os.path.join(os.path.dirname(sys.executable), "irlint"))
    args = ap.parse_args()
    out = tempfile.mkdtemp(prefix="irlint-diff-bench-")
    env = dict(os.environ, IRLINT_CACHE_DIR=os.path.join(out, "cache"))
    runs = {
        "grep -rc both": (["sh", "-c", f"grep -rc . '{args.before}' '{args.after}' > '{out}/grep.txt'"], env),
        "lint both (cold)": (["sh", "-c", f"'{args.irlint}' -n -q '{args.before}' -o '{out}/a.txt'; "
                                          f"'{args.irlint}' -n -q '{args.after}' -o '{out}/b.txt'"], env),
        "diff json (cold)": ([args.irlint, "diff", "-n", args.before, args.after, "--format", "json",
                              "-o", f"{out}/diff.json"], env),
        "diff json (warm)": ([args.irlint, "diff", args.before, args.after, "--format", "json",
                              "-o", f"{out}/diff-warm.json"], env),
        "diff html (cold)": ([args.irlint, "diff", "-n", args.before, args.after, "--format", "html",
                              "-o", f"{out}/diff.html"], env),
    }
    _wall(runs["diff json (warm)"][0], env)   # fills the cache
    times: dict[str, list[float]] = {name: [] for name in runs}
    names = list(runs)
    for r in range(args.rounds):
        for name in (names if r % 2 == 0 else [names[0]] + names[1:][::-1]):
            times[name].append(_wall(*runs[name]))
    g_min, g_med = min(times["grep -rc both"]), statistics.median(times["grep -rc both"])
    print(f"{args.before} -> {args.after}: {args.rounds} rounds")
    for name, t in times.items():
        print(f"  {name:20s} min {min(t):.3f} s (x{min(t) / g_min:.2f})   "
              f"median {statistics.median(t):.3f} s (x{statistics.median(t) / g_med:.2f})")
    shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
