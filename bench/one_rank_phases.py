"""Where a default lint of one rank folder spends its time, phase by phase, in fresh processes.

    /path/to/venv/bin/python bench/one_rank_phases.py FOLDER [--runs 9]

Runs the irlint installed in that interpreter (`irlint --no-cache -q FOLDER -o FILE`) in a new
process per run, each timed from inside: the imports before the command starts, the imports during
it (the reader, Lark, the rule modules), and within those the dataclasses created, the regular
expressions compiled and the cyclic collections; then discovery, loading the rules, reading, the
rules, the report. Prints the median of each, in ms, beside the process's whole wall time (which
adds the interpreter's own start, about 9 ms here). Hooks cost a little: read the figures as
shares, and measure the whole command with ratios_vs_grep.py.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

# runs inside the measured process: wraps what it times, then calls the command's main()
_PROBE = r"""
import time
T0 = time.perf_counter()
import gc, json, re, sys, dataclasses
acc = {"dataclasses": 0.0, "regex compile": 0.0, "gc": 0.0}
def timed(key, f):
    def w(*a, **k):
        s = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            acc[key] = acc.get(key, 0.0) + time.perf_counter() - s
    return w
dataclasses._process_class = timed("dataclasses", dataclasses._process_class)
re._compile = timed("regex compile", re._compile)
started = [0.0]
def on_gc(phase, info):
    if phase == "start":
        started[0] = time.perf_counter()
    else:
        acc["gc"] += time.perf_counter() - started[0]
gc.callbacks.append(on_gc)
gc.set_threshold(*json.loads(sys.argv[2]))
folder, out = sys.argv[1], sys.argv[3]
sys.argv = ["irlint", "--no-cache", "-q", folder, "-o", out]
import irlint.cli as cli
T1 = time.perf_counter()
import irlint.cli.check as cmd
import irlint.runner.check as check
import irlint.runner.lint_file as lint_file
for mod, name, key in ((cmd, "discover_inputs", "discover"), (cmd.rule_module, "load_rules", "load rules"),
                       (lint_file, "run_rule", "rules"), (cmd, "render", "report"),
                       (cmd, "load_config_for", "config"), (cmd, "_lint_with_progress", "lint files"),
                       (cmd, "write_output", "write the report")):
    setattr(mod, name, timed(key, getattr(mod, name)))
import builtins
real_import = builtins.__import__
depth = [0]
def counting_import(*a, **k):
    depth[0] += 1
    s = time.perf_counter()
    try:
        return real_import(*a, **k)
    finally:
        depth[0] -= 1
        if depth[0] == 0:
            acc["imports during the lint"] = acc.get("imports during the lint", 0.0) + time.perf_counter() - s
builtins.__import__ = counting_import
orig_check_one = check.check_one
def check_one(*a, **k):
    # check_one imports the reader (an import during the lint), then calls its read_ir: timed once
    import irlint.read.reader as reader
    if not getattr(reader.read_ir, "timed", False):
        reader.read_ir = timed("read", reader.read_ir)
        reader.read_ir.timed = True
    return orig_check_one(*a, **k)
check.check_one = check_one
try:
    cli.main()
except SystemExit:
    pass
T2 = time.perf_counter()
acc = {k: v * 1000 for k, v in acc.items()}
acc["imports before the command"] = (T1 - T0) * 1000
acc["the command"] = (T2 - T1) * 1000
print(json.dumps(acc))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder")
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--gc-threshold", default="200000,30,30", help="as the irlint program sets it")
    ap.add_argument("--out", default="/tmp/irlint-one-rank-phases.txt", help="the report file")
    args = ap.parse_args()
    threshold = json.dumps([int(x) for x in args.gc_threshold.split(",")])
    rows: dict[str, list[float]] = {}
    walls = []
    for _ in range(args.runs):
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-c", _PROBE, args.folder, threshold, args.out], capture_output=True, text=True, cwd="/"
        )
        walls.append((time.perf_counter() - start) * 1000)
        if proc.returncode != 0:
            sys.exit(proc.stderr)
        for key, value in json.loads(proc.stdout.strip().splitlines()[-1]).items():
            rows.setdefault(key, []).append(value)
    print(f"{args.runs} runs of {sys.executable}, medians in ms")
    print(f"{'whole process (wall)':34} {statistics.median(walls):7.1f}")
    order = [
        "imports before the command",
        "the command",
        "imports during the lint",
        "discover",
        "load rules",
        "config",
        "lint files",
        "read",
        "rules",
        "report",
        "write the report",
        "dataclasses",
        "regex compile",
        "gc",
    ]
    for key in order + sorted(set(rows) - set(order)):
        if key in rows:
            indent = "  " if key not in ("imports before the command", "the command") else ""
            print(f"{indent + key:34} {statistics.median(rows[key]):7.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
