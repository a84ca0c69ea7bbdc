#!/usr/bin/env python3
"""Time irlint on a generated Llama-scale dump folder, against grep as the baseline of the same run.

    python bench/bench.py              # 80 layers (bench/gen_dump.py), 3 repeats, median
    python bench/bench.py --small      # 3 layers, 1 repeat: a quick check

Measures (each repeated, median wall time, median CPU time and the largest peak RSS):
  (a) grep -rc recompute FOLDER                      the baseline: reading every byte once
  (b) irlint FOLDER --format json                    default rules and stage choice, cold cache
  (c) irlint FOLDER --format json --all-stages       every stage file, cold cache
  (g) grep -c recompute FILE                         the baseline of (d)
  (d) irlint inspect FILE --format json              full parse of the largest file (>= --big-size)
  (e) irlint FOLDER --format json                    again, unchanged input: from the cache
  (pa) (pb) (pe) (pc)                                (a) (b) (e) (c) on a real semi_auto_parallel
                                                     folder of 8 ranks (--parallel; rank_0 is copied
                                                     to rank_1..7 when the folder has fewer)
Generated input is kept in bench/out/ (git-ignored); results go to bench/results.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import harness

HERE = Path(__file__).resolve().parent
GEN = HERE / "gen_dump.py"
ROOT = HERE.parent
PARALLEL = ROOT.parent / "shared" / "corpus" / "par-mismatch-ffn_col_col"
RANKS = 8
# issue 12 (2-core machine, ratios within one run)
TARGETS = {
    "b_over_a_max": 3.0,
    "c_over_a_max": 15.0,
    "d_mb_s_per_core_min": 60.0,
    "e_over_b_max": 0.1,
    "b_peak_rss_max_mb": 1024.0,
    "d_peak_rss_max_x_file": 3.0,
}


def generate(out: Path, *args: str) -> Path:
    """Run gen_dump.py once; a finished folder is marked and reused by later runs."""
    done = out / ".complete"
    if done.exists():
        return out
    if out.exists():
        shutil.rmtree(out)
    cmd = [sys.executable, str(GEN), "--out", str(out), *args]
    print("generating:", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    done.write_text(" ".join(args) + "\n")
    return out


def dump_files(folder: Path) -> list[Path]:
    out = []
    for p in folder.rglob("*"):
        if p.is_file() and "actor_set" not in p.parts and not p.name.startswith("."):
            with open(p, "rb") as f:
                if f.read(11) == b"# IR entry:":
                    out.append(p)
    return out


def run(cmd: list[str], env: dict | None = None) -> tuple[float, float, float]:
    """Wall seconds, peak RSS in MB (largest process of the tree), CPU seconds (user + system of the
    tree): bench/harness.py's run, the output to a file (GNU grep stops at the first match when its
    output is /dev/null)."""
    with tempfile.TemporaryFile() as out:
        s = harness.run(cmd, env, stdout=out)
    if s.code not in (0, 1):
        raise SystemExit(f"failed ({s.code}): {' '.join(cmd)}")
    return s.wall, s.rss_mb, s.cpu


def machine() -> dict:
    cpu = ""
    try:
        cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "")
    except OSError:
        pass
    return {
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "nproc": os.cpu_count(),
        "python": platform.python_version(),
        "cpu": cpu or platform.processor(),
        "platform": platform.platform(),
    }


def parallel_folder(source: Path, out: Path) -> Path:
    """A real semi_auto_parallel folder with RANKS ranks: the folder itself when it has them, else
    a copy whose missing ranks are real copies of rank_0 (hard links would share one cache entry)."""
    ranks = sorted(p for p in source.glob("rank_*") if p.is_dir())
    if len(ranks) >= RANKS:
        return source
    dest = out / f"{source.name}-x{RANKS}"
    if (dest / ".complete").exists():
        return dest
    shutil.rmtree(dest, ignore_errors=True)
    for r in range(RANKS):
        src = source / f"rank_{r}" if (source / f"rank_{r}").is_dir() else ranks[0]
        shutil.copytree(src, dest / f"rank_{r}")
    (dest / ".complete").write_text(str(source) + "\n")
    return dest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int, default=80, help="decoder layers of the generated folder (default 80)")
    ap.add_argument(
        "--big-size",
        default="110M",
        help="(d) reads the largest file; if it is smaller than this, one stage file is generated "
        "with enough layers to reach it (default 110M)",
    )
    ap.add_argument(
        "--parallel", default=str(PARALLEL), help=f"a real multi-rank folder for (pa)-(pc) (default {PARALLEL.name})"
    )
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--small", action="store_true", help="3 layers, 1 repeat, no big file: a quick check")
    ap.add_argument("--out", default=str(HERE / "out"), help="where generated input is kept (default bench/out)")
    ap.add_argument("--results", default=str(HERE / "results.json"))
    a = ap.parse_args(argv)
    if not GEN.exists():
        raise SystemExit("bench/gen_dump.py is missing")
    if a.small:
        a.layers, a.repeat = 3, 1
    out = Path(a.out)
    folder = generate(out / f"dump{a.layers}", "--layers", str(a.layers))
    files = dump_files(folder)
    folder_bytes = sum(p.stat().st_size for p in files)
    largest = max(files, key=lambda p: p.stat().st_size)
    big = largest
    if not a.small:
        want = _size(a.big_size)
        if largest.stat().st_size < want:
            bigdir = generate(
                out / f"big-{largest.name}-{a.big_size}", "--files", largest.name, "--target-size", a.big_size
            )
            big = max(dump_files(bigdir), key=lambda p: p.stat().st_size)
    big_bytes = big.stat().st_size
    par = parallel_folder(Path(a.parallel), out)
    par_bytes = sum(p.stat().st_size for p in dump_files(par))
    print(
        f"folder: {folder} ({len(files)} dump files, {folder_bytes / 1e6:.1f} MB); "
        f"(d) file: {big} ({big_bytes / 1e6:.1f} MB); parallel: {par} ({par_bytes / 1e6:.1f} MB)",
        flush=True,
    )

    irlint = [sys.executable, "-m", "irlint"]
    cmds = {
        "a": ["grep", "-rc", "recompute", str(folder)],
        "b": [*irlint, str(folder), "--format", "json"],
        "e": [*irlint, str(folder), "--format", "json"],
        "c": [*irlint, str(folder), "--format", "json", "--all-stages"],
        "g": ["grep", "-c", "recompute", str(big)],
        "d": [*irlint, "inspect", str(big), "--format", "json"],
        "pa": ["grep", "-rc", "recompute", str(par)],
        "pb": [*irlint, str(par), "--format", "json"],
        "pe": [*irlint, str(par), "--format", "json"],
        "pc": [*irlint, str(par), "--format", "json", "--all-stages"],
    }
    samples: dict[str, list[tuple[float, float, float]]] = {k: [] for k in cmds}
    with tempfile.TemporaryDirectory(prefix="irlint-bench-cache-") as tmp:
        env = {**os.environ, "IRLINT_CACHE_DIR": tmp}
        # pip byte-compiles an installed irlint; an editable checkout under PYTHONDONTWRITEBYTECODE
        # would compile its modules on every start instead and add that to every figure
        harness.compile_installed()
        for i in range(a.repeat):
            for name in cmds:
                if name in ("b", "c", "pb", "pc"):  # cold: an empty cache; (e) follows (b) and reads what (b) wrote
                    shutil.rmtree(tmp, ignore_errors=True)
                    os.makedirs(tmp, exist_ok=True)
                wall, rss, cpu = run(cmds[name], env)
                samples[name].append((wall, rss, cpu))
                print(
                    f"  run {i + 1}/{a.repeat} ({name:>2}) {wall:8.2f} s  {cpu:8.2f} s CPU  {rss:8.1f} MB peak RSS",
                    flush=True,
                )

    med = {k: statistics.median(w for w, _, _ in v) for k, v in samples.items()}
    cpu = {k: statistics.median(c for _, _, c in v) for k, v in samples.items()}
    rss = {k: max(r for _, r, _ in v) for k, v in samples.items()}
    figures = {
        "b_over_a": med["b"] / med["a"],
        "c_over_a": med["c"] / med["a"],
        "e_over_b": med["e"] / med["b"],
        "d_over_g": med["d"] / med["g"],
        "d_mb_s_per_core": big_bytes / 1e6 / med["d"],
        "d_mb_s_per_cpu_second": big_bytes / 1e6 / cpu["d"],
        "c_mb_s": folder_bytes / 1e6 / med["c"],
        "d_peak_rss_x_file": rss["d"] * 1024 * 1024 / big_bytes,
        "pb_over_pa": med["pb"] / med["pa"],
        "pc_over_pa": med["pc"] / med["pa"],
        "pe_over_pb": med["pe"] / med["pb"],
    }
    met = {
        "b_over_a": figures["b_over_a"] <= TARGETS["b_over_a_max"],
        "c_over_a": figures["c_over_a"] <= TARGETS["c_over_a_max"],
        "d_mb_s_per_core": figures["d_mb_s_per_core"] >= TARGETS["d_mb_s_per_core_min"],
        "e_over_b": figures["e_over_b"] <= TARGETS["e_over_b_max"],
        "b_peak_rss": rss["b"] <= TARGETS["b_peak_rss_max_mb"],
        "d_peak_rss": figures["d_peak_rss_x_file"] <= TARGETS["d_peak_rss_max_x_file"],
    }
    result = {
        "machine": machine(),
        "layers": a.layers,
        "repeat": a.repeat,
        "small": a.small,
        "folder": {"path": str(folder), "files": len(files), "bytes": folder_bytes},
        "big_file": {"path": str(big), "bytes": big_bytes},
        "parallel": {"path": str(par), "bytes": par_bytes},
        "commands": {k: " ".join(v) for k, v in cmds.items()},
        "median_s": med,
        "median_cpu_s": cpu,
        "peak_rss_mb": rss,
        "samples": samples,
        "figures": figures,
        "targets": TARGETS,
        "met": met,
    }
    Path(a.results).write_text(json.dumps(result, indent=2) + "\n")
    print()
    for k in cmds:
        print(
            f"({k:>2}) {med[k]:8.2f} s median  {cpu[k]:8.2f} s CPU  {rss[k]:8.1f} MB peak RSS   {result['commands'][k]}"
        )
    ok = lambda key: "met" if met[key] else "MISSED"  # noqa: E731
    print(f"(b)/(a) = {figures['b_over_a']:.2f}  (target <= 3)       {ok('b_over_a')}")
    print(
        f"(c)/(a) = {figures['c_over_a']:.2f}  (target <= 15)      {ok('c_over_a')}  "
        f"({figures['c_mb_s']:.1f} MB/s over the whole folder)"
    )
    print(
        f"(d)     = {figures['d_mb_s_per_core']:.1f} MB/s on one core, wall (target >= 60)  {ok('d_mb_s_per_core')};  "
        f"{figures['d_mb_s_per_cpu_second']:.1f} MB per CPU second;  (d)/(g) = {figures['d_over_g']:.1f}"
    )
    print(f"(e)/(b) = {figures['e_over_b']:.3f}  (target <= 0.1)     {ok('e_over_b')}")
    print(
        f"RSS (b) = {rss['b']:.0f} MB (target <= 1024)  {ok('b_peak_rss')};  "
        f"RSS (d) = {figures['d_peak_rss_x_file']:.2f} x file (target <= 3)  {ok('d_peak_rss')}"
    )
    print(
        f"parallel: (pb)/(pa) = {figures['pb_over_pa']:.1f}, (pc)/(pa) = {figures['pc_over_pa']:.1f}, "
        f"(pe)/(pb) = {figures['pe_over_pb']:.3f}"
    )
    print(f"written: {a.results}")
    if a.small:
        print("(--small: interpreter start-up dominates every figure; the targets are for the full run)")
        return 0
    return 0 if all(met.values()) else 1


def _size(text: str) -> int:
    m = re.fullmatch(r"\s*([0-9.]+)\s*([kKmMgG]?)i?[bB]?\s*", text)
    if not m:
        raise SystemExit(f"bad size {text!r}")
    return int(float(m.group(1)) * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()])


if __name__ == "__main__":
    sys.exit(main())
