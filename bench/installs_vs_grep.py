"""Wall time of whole irlint runs from several installs (venvs) on one dump folder, as ratios to a
`grep -rc` of it measured in the same rounds (grep writes to a file: with stdout on /dev/null GNU
grep stops at the first match). The installs run in alternating order, so that a noisy machine
weighs on each alike; each round starts with grep.

    python3 bench/installs_vs_grep.py FOLDER before=/work/envs/a-venv after=/work/envs/b-venv
    python3 bench/installs_vs_grep.py --rounds 21 --warm FOLDER base=... new=...

Cold: `irlint --no-cache -q FOLDER -o FILE`; --warm adds the default run on a filled cache (one
cache folder per install). Prints min and median per install.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time


def _wall(cmd: list[str], env: dict) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder")
    ap.add_argument("installs", nargs="+", metavar="NAME=VENV")
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--warm", action="store_true", help="also time the default run on a warm cache")
    args = ap.parse_args()
    out = tempfile.mkdtemp(prefix="irlint-installs-")
    runs: dict[str, tuple[list[str], dict]] = {}
    for spec in args.installs:
        name, venv = spec.split("=", 1)
        irlint = os.path.join(venv, "bin", "irlint")
        env = dict(os.environ, IRLINT_CACHE_DIR=os.path.join(out, f"cache-{name}"))
        runs[name] = ([irlint, "--no-cache", "-q", args.folder, "-o", os.path.join(out, f"{name}.txt")], env)
        if args.warm:
            warm = [irlint, "-q", args.folder, "-o", os.path.join(out, f"{name}-warm.txt")]
            subprocess.run(warm, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
            runs[f"{name} warm"] = (warm, env)
    grep = ["sh", "-c", f"grep -rc . '{args.folder}' > '{os.path.join(out, 'grep.txt')}'"]
    times: dict[str, list[float]] = {"grep -rc": []} | {name: [] for name in runs}
    names = list(runs)
    for r in range(args.rounds):
        times["grep -rc"].append(_wall(grep, dict(os.environ)))
        for name in (names if r % 2 == 0 else names[::-1]):
            times[name].append(_wall(*runs[name]))
    g_min, g_med = min(times["grep -rc"]), statistics.median(times["grep -rc"])
    print(f"{args.folder}: {args.rounds} rounds")
    for name, t in times.items():
        print(f"  {name:24s} min {min(t):.3f} s (x{min(t) / g_min:.2f})   "
              f"median {statistics.median(t):.3f} s (x{statistics.median(t) / g_med:.2f})")
    shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
