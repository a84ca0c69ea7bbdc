"""Write the skeleton of a new built-in rule, the files CONTRIBUTING.md's "Add a rule" touches:

    python scripts/add_rule.py CODE NAME [--family recompute|redistribution] [--summary TEXT] [--severity S]

- the rule, ``rules/[FAMILY/]NAME.py`` (NAME with ``_`` for ``-``): its class with the docstring in
  four parts, ``stages``, one VALID and one INVALID example (``Invalid(snippet, Says(node, cause))``)
  and a ``check`` that yields a finding on the example's op, to be replaced by the real evidence;
- its test, ``tests/test_rule_NAME.py``: the INVALID example found, the VALID one clean, and a
  place for the fixture test the rule's specification asks for;
- its docs entry comes from its docstring: ``python scripts/gen_rule_docs.py`` writes
  ``docs/rules/CODE.md`` and the site's nav (``tests/test_docs.py`` fails until it is run).

Nothing is overwritten: the script stops if the code or name is taken, or a file exists. It
prints what is left to do (the specification, a fixture with its MANIFEST.json, the snapshots).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CODE = re.compile(r"[A-Z]{2}\d{3}")
NAME = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)+")
FAMILIES = ("recompute", "redistribution")

# the smallest dump the reader reads without a diagnostic: one op on a graph input
EXAMPLE = """# IR entry: @g
# Total subgraphs: 1

# Total params: 1
# Params:
%para1_x: <Tensor[Float32], (2, 4)> : [2, 4]
Node counting information:
Total number of nodes: 3
Total number of cnodes: 2
subgraph attr:
subgraph instance: g : 0x55860104edc0
subgraph @g() {{
  %0(CNode_1) = PrimFunc_{op}(%para1_x) {{instance name: op}} cnode_primal_attrs: {{unique_id: "1"}}
      : (<Tensor[Float32], (2, 4)>) -> (<Tensor[Float32], (2, 4)>)
      # Fullname with scope: (Default/network-Net/{op}-op0)
  Return(%0)
      : (<Tensor[Float32], (2, 4)>)
      # Fullname with scope: (Default/network-Net/Return-op0)
}}
"""

RULE = '''"""{title}"""

from __future__ import annotations

from collections.abc import Iterator

from irlint.findings import Finding
from irlint.model import IRFile
from irlint.rule import Invalid, Rule, Says

# trimmed from the corpus case the rule's specification names (replace these)
FLAGGED = """\\
{flagged}"""
CLEAN = """\\
{clean}"""


class {cls}(Rule):
    """What it finds:
    {summary_cap}.

    Why it matters:
    What it costs (memory, communication, compute) and where that is seen.

    How to fix:
    The change, and the fix the finding gives (``fixes``: a key, a strategy, a config).

    Example:
    The INVALID snippet below.
    """

    code = "{code}"
    name = "{name}"
    severity = "{severity}"
    summary = "{summary_cap}"
    stages = ("validate",)  # where its evidence is final, best first
    default_enabled = False  # on once its findings have been checked on the corpus
    INVALID = [Invalid(FLAGGED, Says("%0", "{cause}"))]
    VALID = [CLEAN]

    def check(self, ir: IRFile) -> Iterator[Finding]:
        for key in ir.nodes_by_op("{op}"):
            yield self.finding(ir, key, "the evidence, with the figures", cause="{cause}")
'''

TEST = '''"""{code} ({name}): its examples, and the cases its specification names."""

from __future__ import annotations

from irlint.rule import example_text, load_rules

RULE = next(cls for cls in load_rules(plugins=False) if cls.code == "{code}")


def test_the_invalid_example_is_found_and_the_valid_one_is_clean(ir_from_text):
    flagged = [f for f in RULE().check(ir_from_text(example_text(RULE.INVALID[0])))]
    assert [f.code for f in flagged] == ["{code}"]
    assert list(RULE().check(ir_from_text(example_text(RULE.VALID[0])))) == []
'''


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("code", help="two capitals and three digits, e.g. RC005")
    parser.add_argument("name", help="kebab-case, e.g. recompute-tag-on-weight")
    parser.add_argument("--family", choices=FAMILIES, help="the rules/ folder it joins (none: rules/)")
    parser.add_argument("--summary", default="", help="one line, as `irlint rules` lists it")
    parser.add_argument("--severity", choices=("error", "warning", "info"), default="info")
    parser.add_argument("--op", default="Cast", help="the op the skeleton's example and check use")
    args = parser.parse_args(argv)
    if not CODE.fullmatch(args.code) or not NAME.fullmatch(args.name):
        print("add_rule: CODE is like RC005 and NAME like recompute-tag-on-weight", file=sys.stderr)
        return 2
    sys.path.insert(0, str(REPO))
    from irlint.rule import load_rules

    taken = [(c.code, c.name) for c in load_rules(plugins=False) if args.code == c.code or args.name == c.name]
    if taken:
        print(f"add_rule: taken by a built-in rule: {taken[0][0]} {taken[0][1]}", file=sys.stderr)
        return 2
    module = args.name.replace("-", "_")
    folder = REPO / "rules" / args.family if args.family else REPO / "rules"
    files = {
        folder / f"{module}.py": RULE,
        REPO / "tests" / f"test_rule_{module}.py": TEST,
    }
    there = [str(p.relative_to(REPO)) for p in files if p.exists()]
    if there:
        print(f"add_rule: exists already: {', '.join(there)}", file=sys.stderr)
        return 2
    summary = args.summary.rstrip(".") or "what the rule finds, in one line"
    fields = {
        "code": args.code,
        "name": args.name,
        "severity": args.severity,
        "cls": "".join(part.capitalize() for part in args.name.split("-")),
        "title": f"{args.code} ({args.name}): {summary}.",
        "summary": summary[0].lower() + summary[1:],
        "summary_cap": summary[0].upper() + summary[1:],
        "cause": "the cause, in a clause",
        "op": args.op,
        "flagged": EXAMPLE.format(op=args.op),
        "clean": EXAMPLE.format(op="ReLU"),
    }
    for path, template in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(template.format(**fields), encoding="utf-8")
        print(f"wrote {path.relative_to(REPO)}")
    print(
        "left to do: the case in ../shared/corpus/FINDINGS*.md; a fixture under tests/fixtures/ with its "
        "MANIFEST.json; the rule's evidence and fixes (CONTRIBUTING.md, 'Add a rule'); the real snippets; "
        "python scripts/gen_rule_docs.py (its docs page); the README's rules table and a CHANGELOG line; snapshots of the fixtures it fires on"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
