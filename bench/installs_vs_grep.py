"""Whole irlint runs from several installs (venvs) on one dump folder against grep over it, in the
same rounds (bench/harness.py). Cold: `irlint --no-cache -q FOLDER -o FILE`; --warm adds the default
run on a filled cache (one cache folder per install).

    python3 bench/installs_vs_grep.py FOLDER before=/work/envs/a-venv after=/work/envs/b-venv
    python3 bench/installs_vs_grep.py --rounds 21 --warm FOLDER base=... new=...
    python3 bench/installs_vs_grep.py --warm FOLDER now=$VIRTUAL_ENV      # cold and warm of one install
"""

from __future__ import annotations

import argparse
import os
import tempfile

from harness import grep, rounds, run, table

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("folder")
ap.add_argument("installs", nargs="+", metavar="NAME=VENV")
ap.add_argument("--rounds", type=int, default=11)
ap.add_argument("--warm", action="store_true", help="also time the default run on a warm cache")
args = ap.parse_args()
out = tempfile.mkdtemp(prefix="irlint-installs-")
jobs = {"grep": lambda: grep([args.folder], os.path.join(out, "grep.txt"))}
for spec in args.installs:
    name, venv = spec.split("=", 1)
    irlint = os.path.join(venv, "bin", "irlint")
    env = dict(os.environ, IRLINT_CACHE_DIR=os.path.join(out, f"cache-{name}"))
    cold = [irlint, "--no-cache", "-q", args.folder, "-o", os.path.join(out, f"{name}.txt")]
    jobs[name] = lambda cold=cold, env=env: run(cold, env)
    if args.warm:
        warm = [irlint, "-q", args.folder, "-o", os.path.join(out, f"{name}-warm.txt")]
        run(warm, env)
        jobs[f"{name} warm"] = lambda warm=warm, env=env: run(warm, env)
print(f"{args.folder}: {args.rounds} rounds\n" + table(rounds(jobs, args.rounds)))
