"""Time of the recompute rules (RC001-RC004) on one dump, as ratios to `grep -c PrimFunc FILE`
(written to a file) and to the dump's own parse, in the same run; best of --repeat.

Usage: python bench/recompute_rules_time.py FILE [--tree REPO]   (REPO: an irlint checkout, default
this one; its rules are loaded from REPO/rules, a module or a package, so two trees compare)."""
from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

p = argparse.ArgumentParser()
p.add_argument("file")
p.add_argument("--tree", default=str(Path(__file__).resolve().parent.parent))
p.add_argument("--repeat", type=int, default=3)
args = p.parse_args()
sys.path.insert(0, args.tree)
from irlint.read.reader import read_ir  # noqa: E402
from irlint.rule import Rule  # noqa: E402

rules_pkg = types.ModuleType("tree_rules")   # the tree's rules/, apart from any installed irlint.rules
rules_pkg.__path__ = [str(Path(args.tree) / "rules")]
sys.modules["tree_rules"] = rules_pkg
family = importlib.import_module("tree_rules.recompute")
modules = [family] + [importlib.import_module(f"tree_rules.recompute.{m.stem}")
                      for m in Path(family.__file__).parent.glob("*.py") if hasattr(family, "__path__")]
rules = sorted({c for m in modules for c in vars(m).values()
                if isinstance(c, type) and issubclass(c, Rule) and str(getattr(c, "code", "")).startswith("RC")},
               key=lambda c: c.code)

best = {"rules": 1e9, "grep": 1e9, "parse": 1e9}
counts = {}
with tempfile.TemporaryFile("w") as out:   # GNU grep stops at the first match when stdout is /dev/null
    for _ in range(args.repeat):
        t = time.perf_counter()
        ir = read_ir(args.file)
        best["parse"] = min(best["parse"], time.perf_counter() - t)
        t = time.perf_counter()
        counts = {c.code: sum(1 for _ in c().check(ir)) for c in rules}
        best["rules"] = min(best["rules"], time.perf_counter() - t)
        t = time.perf_counter()
        subprocess.run(["grep", "-c", "PrimFunc", args.file], stdout=out, check=True)
        best["grep"] = min(best["grep"], time.perf_counter() - t)
print(f"{args.tree}: rules {best['rules']:.3f} s = {best['rules'] / best['grep']:.1f}x grep -c "
      f"({best['grep']:.3f} s) = {best['rules'] / best['parse']:.3f}x the parse ({best['parse']:.2f} s); "
      f"findings {counts}")
