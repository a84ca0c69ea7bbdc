"""The recompute rules (RC001-RC004) on one dump against grep over the file and the dump's own
parse, in the same rounds (bench/harness.py).

Usage: python bench/recompute_rules_time.py FILE [--tree REPO]   (REPO: an irlint checkout, default
this one; its rules are loaded from REPO/rules, a module or a package, so two trees compare)."""

from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
import types
from pathlib import Path

from harness import ROOT, grep, rounds, table, timed

p = argparse.ArgumentParser()
p.add_argument("file")
p.add_argument("--tree", default=str(ROOT))
p.add_argument("--rounds", "--repeat", type=int, default=3)
args = p.parse_args()
sys.path.insert(0, args.tree)
from irlint.read.reader import read_ir  # noqa: E402
from irlint.rule import Rule  # noqa: E402

rules_pkg = types.ModuleType("tree_rules")  # the tree's rules/, apart from any installed irlint.rules
rules_pkg.__path__ = [str(Path(args.tree) / "rules")]
sys.modules["tree_rules"] = rules_pkg
family = importlib.import_module("tree_rules.recompute")
modules = [family] + [
    importlib.import_module(f"tree_rules.recompute.{m.stem}")
    for m in Path(family.__file__).parent.glob("*.py")
    if hasattr(family, "__path__")
]
rules = sorted(
    {
        c
        for m in modules
        for c in vars(m).values()
        if isinstance(c, type) and issubclass(c, Rule) and str(getattr(c, "code", "")).startswith("RC")
    },
    key=lambda c: c.code,
)
ir = read_ir(args.file)
counts = {c.code: sum(1 for _ in c().check(ir)) for c in rules}
with tempfile.NamedTemporaryFile() as sink:
    results = rounds(
        {
            "grep": lambda: grep([args.file], sink.name, "PrimFunc"),
            "parse": lambda: timed(lambda: read_ir(args.file)),
            "rules": lambda: timed(lambda: [sum(1 for _ in c().check(ir)) for c in rules]),
        },
        args.rounds,
    )
print(f"{args.tree}: findings {counts}\n" + table(results))
