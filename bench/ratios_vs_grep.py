"""Issue 19's four ratios: whole irlint runs against `grep -rc . FOLDER > FILE` on the same folder,
interleaved in the same rounds (grep, irlint, grep, irlint ...), medians of wall and CPU time.

    nice python3 bench/ratios_vs_grep.py [--rounds 5] [--irlint PATH] [--out DIR]
    nice python3 bench/ratios_vs_grep.py --irlint "new=.venv/bin/irlint" \
        --irlint "no-dedup=.venv/bin/irlint --no-dedup" --irlint "main=/tmp/main-venv/bin/irlint"

Several --irlint NAME=COMMAND run one after the other after each grep, so every variant is
compared with the same grep runs (and, round by round, with the first variant). --rev NAME=REV installs a git revision of this repository as
users get it (a wheel, byte-compiled by pip, in a venv under OUT/venvs/NAME) and runs that: an
editable checkout recompiles every module on each start where PYTHONDONTWRITEBYTECODE is set.

    nice python3 bench/ratios_vs_grep.py --rev now=HEAD --rev before=92ab2b6

Cases (folders made under --out on first use, reused after):
  stages    `irlint --all-stages --no-cache -q` on a 16-layer single-rank save_graphs folder
            (bench/gen_dump.py --layers 16 from corpus/full-folder-1layer: 592 MB, 98 stage files)
  ranks     `irlint --no-cache -q` on a 256-rank semi_auto_parallel folder
            (bench/gen_rank_folder.py --ranks 256 from corpus/par-mismatch-ffn_col_col)
  ranks-all `irlint --all-stages --no-cache -q` on that 256-rank folder
  rank      `irlint --no-cache -q` on the 16-layer folder as one rank folder (reads its validate)
  ranks32   (memory check) `irlint --all-stages --no-cache -q` on 32 ranks of the same job

CPU is user + system time of the process and its workers (wait4); peak RSS is the largest process
of the tree. Every irlint run writes its report with -o, grep its counts to a file.

--fresh copies the 16-layer folder anew before the rounds (OUT/fresh/gen16) and runs the rank and
stages cases on the copy. On these machines grep reads files just written (as after a save_graphs
run) about a third faster than files that have sat in the page cache for a while (0.10-0.11 s
against 0.13-0.17 s for gen16), while irlint, which reads one file, hardly changes: the ratios
are then at their least favourable to irlint.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from harness import BENCH as HERE
from harness import CORPUS, grep, run, summary

TARGETS = {"stages": 10, "ranks": 3, "ranks-all": 15, "rank": 1.5}


def folders(out: Path) -> dict[str, Path]:
    gen16, ranks, ranks32 = out / "gen16", out / "rank256", out / "rank32"
    if not (gen16 / "21_validate_0076.ir").exists():
        subprocess.run(
            [
                sys.executable,
                str(HERE / "gen_dump.py"),
                "--input",
                str(CORPUS / "full-folder-1layer"),
                "--layers",
                "16",
                "--out",
                str(gen16),
            ],
            check=True,
        )
    for folder, n in ((ranks, 256), (ranks32, 32)):
        if not (folder / f"rank_{n - 1}").exists():
            subprocess.run(
                [sys.executable, str(HERE / "gen_rank_folder.py"), "--ranks", str(n), "--out", str(folder)], check=True
            )
    return {"stages": gen16, "ranks": ranks, "ranks-all": ranks, "rank": gen16, "ranks32": ranks32}


def installed(out: Path, name: str, rev: str) -> str:
    """The irlint program of git revision ``rev`` installed from its wheel (made once per commit)."""
    repo = HERE.parent
    commit = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", rev], check=True, capture_output=True, text=True
    ).stdout.strip()
    venv = out / "venvs" / name
    program = venv / "bin" / "irlint"
    stamp = venv / "commit.txt"
    if program.exists() and stamp.exists() and stamp.read_text() == commit:
        return str(program)
    tree = out / "venvs" / f"{name}-src"
    shutil.rmtree(tree, ignore_errors=True)
    shutil.rmtree(venv, ignore_errors=True)
    tree.mkdir(parents=True)
    # piped, not held here: a forked child's peak RSS starts at this process's size
    git = subprocess.Popen(["git", "-C", str(repo), "archive", "--format=tar", commit], stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", str(tree)], stdin=git.stdout, check=True)
    git.stdout.close()
    if git.wait():
        sys.exit(f"git archive {commit} failed")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run(
        [str(venv / "bin" / "pip"), "wheel", "-q", "--no-deps", "-w", str(tree / "dist"), str(tree)],
        check=True,
        env=env,
    )
    wheel = next((tree / "dist").glob("irlint-*.whl"))
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(wheel)], check=True, env=env)
    stamp.write_text(commit)
    return str(program)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", type=Path, default=Path("/work/scratch/speed"))
    ap.add_argument(
        "--irlint",
        action="append",
        default=[],
        help="NAME=COMMAND (COMMAND: the irlint program and options), repeatable",
    )
    ap.add_argument(
        "--rev",
        action="append",
        default=[],
        help="NAME=REV: a git revision of this repository, installed from its wheel, repeatable",
    )
    ap.add_argument("--cases", default="rank,ranks,ranks-all,stages,ranks32")
    ap.add_argument(
        "--fresh", action="store_true", help="copy the 16-layer folder anew first: grep at its fastest (see above)"
    )
    args = ap.parse_args()
    args.out = args.out.resolve()
    variants = {}
    for spec in args.rev:
        name, _, rev = spec.partition("=")
        variants[name] = [installed(args.out, name, rev or name)]
    for spec in args.irlint or ([] if args.rev else [shutil.which("irlint") or "irlint"]):
        name, _, command = spec.partition("=") if "=" in spec.split()[0] else ("irlint", "", spec)
        variants[name or "irlint"] = command.split()
    os.chdir("/")  # python -m or a stray irlint/ in the current folder would shadow the installed one
    where = folders(args.out)
    if args.fresh:
        copy = args.out / "fresh" / "gen16"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(where["stages"], copy)
        where["stages"] = where["rank"] = copy
    cases = args.cases.split(",")
    flags = {"stages": ["--all-stages"], "ranks-all": ["--all-stages"], "ranks32": ["--all-stages"]}
    times: dict[str, dict[str, list]] = {c: {"grep": [], **{v: [] for v in variants}} for c in cases}
    report = args.out / "report.txt"
    for r in range(args.rounds):
        for case in cases:
            folder = str(where[case])
            times[case]["grep"].append(grep([folder], args.out / "grep.txt"))
            for name, command in variants.items():
                argv = [*command, "--no-cache", "-q", *flags.get(case, []), folder, "-o", str(report)]
                res = run(argv)
                if res.code not in (0, 1):
                    sys.exit(f"{' '.join(argv)}: exit code {res[3]}")
                times[case][name].append(res)
                print(
                    f"round {r + 1} {case}: grep {times[case]['grep'][-1].wall:.2f} s, {name} {res.wall:.2f} s "
                    f"(CPU {res.cpu:.2f} s)",
                    file=sys.stderr,
                    flush=True,
                )
    print(
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {args.rounds} rounds, load at the end "
        f"{os.getloadavg()[0]:.1f}; " + "; ".join(f"{n} = {' '.join(c)}" for n, c in variants.items())
    )
    print(
        "| case | irlint | folder | grep wall (CPU) | irlint wall (CPU) | peak RSS | wall ratio | CPU ratio | target |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---|")
    for case, name in ((c, n) for c in cases for n in variants):
        g, i = times[case]["grep"], times[case][name]
        (gw, gc), (iw, ic) = ((s.wall, s.cpu) for s in (summary(g), summary(i)))
        rss = summary(i).rss_mb
        ratios = statistics.median(b.wall / a.wall for a, b in zip(g, i))
        target = TARGETS.get(case)
        verdict = "" if target is None else f"<= {target}: {'met' if ratios <= target else 'missed'}"
        print(
            f"| {case} | {name} | {where[case].name} | {gw:.2f} s ({gc:.2f}) | {iw:.2f} s ({ic:.2f}) | {rss:.0f} MB | "
            f"{ratios:.2f} | {ic / gc:.2f} | {verdict} |"
        )
    # several variants: each against the first, round by round (the same rounds, the same load)
    names = list(variants)
    for case, name in ((c, n) for c in cases for n in names[1:]):
        first, runs = times[case][names[0]], times[case][name]
        wall = statistics.median(b.wall / a.wall for a, b in zip(first, runs))
        cpu = statistics.median(b.cpu / a.cpu for a, b in zip(first, runs))
        print(f"{case}: {name} / {names[0]} per round, median: wall {wall:.3f}, CPU {cpu:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
