"""Write irlint/read/parser_tables.py: the LALR tables of grammar/ir.lark, made once here instead of
at every start of irlint (Lark's own serialized form, as a Python literal).

    python scripts/parser_tables.py           # after editing the grammar or upgrading Lark
    python scripts/parser_tables.py --check   # exit 1 if the shipped tables are not those of this grammar and Lark

irlint uses the shipped tables only when their key (grammar text, parser options, Lark version) is
that of the grammar it reads and the Lark it runs with; otherwise it builds the parser as before.
"""
from __future__ import annotations

import argparse
import pprint
import sys
from collections import deque
from pathlib import Path

import lark
from lark.grammar import Rule
from lark.lark import _LOAD_ALLOWED_OPTIONS
from lark.lexer import TerminalDef

ROOT = Path(__file__).resolve().parent.parent
TABLES = ROOT / "irlint" / "read" / "parser_tables.py"


def tables_source(grammar: str) -> str:
    from irlint.read.syntax import build_parser, tables_key

    # as Lark.save does for its cache: options given again at load time (the transformer) are left out
    data, memo = build_parser(grammar).memo_serialize([TerminalDef, Rule])
    data["options"] = {k: v for k, v in data["options"].items() if k not in _LOAD_ALLOWED_OPTIONS}
    data["parser"]["parser"] = _canonical(data["parser"]["parser"], data["options"]["start"])
    return (
        '"""The LALR tables of grammar/ir.lark, as Lark serializes a parser. Written by\n'
        'scripts/parser_tables.py: do not edit; run it again after changing the grammar or Lark."""\n'
        "# fmt: off\n"
        f"KEY = {tables_key(grammar, lark.__version__)!r}\n"
        f"LARK = {lark.__version__!r}\n"
        f"DATA = {pprint.pformat(data, width=120, sort_dicts=False)}\n"
        f"MEMO = {pprint.pformat(memo, width=120, sort_dicts=False)}\n"
    )


def _canonical(table: dict, starts: list[str]) -> dict:
    """The serialized LALR table with symbols numbered by name and states in the order a walk
    from the start states meets them: Lark numbers both in the order of sets, which differs
    from run to run, and the file should change only when the grammar or Lark does."""
    name = table["tokens"]
    token_id = {t: i for i, t in enumerate(sorted(name.values()))}
    order: list[int] = []
    seen: set[int] = set()
    todo = deque(table["start_states"][s] for s in starts)
    while todo:
        state = todo.popleft()
        if state in seen:
            continue
        seen.add(state)
        order.append(state)
        for token, (action, arg) in sorted(table["states"][state].items(), key=lambda kv: name[kv[0]]):
            if action == 0:   # a shift (or goto): arg is the next state
                todo.append(arg)
    if len(order) != len(table["states"]):
        raise SystemExit("some LALR states are not reachable from a start state: unexpected table layout")
    state_id = {old: new for new, old in enumerate(order)}
    return {
        "tokens": {i: t for t, i in token_id.items()},
        "states": {
            state_id[old]: {
                token_id[name[token]]: (action, state_id[arg] if action == 0 else arg)
                for token, (action, arg) in sorted(table["states"][old].items(), key=lambda kv: name[kv[0]])
            }
            for old in order
        },
        "start_states": {s: state_id[table["start_states"][s]] for s in starts},
        "end_states": {s: state_id[table["end_states"][s]] for s in starts},
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only compare with the file; exit 1 if it differs")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from irlint.read.grammar_file import grammar_text

    source = tables_source(grammar_text())
    current = TABLES.read_text(encoding="utf-8") if TABLES.exists() else None
    if args.check:
        if current != source:
            print(f"{TABLES.relative_to(ROOT)} is stale: run python scripts/parser_tables.py", file=sys.stderr)
            return 1
        return 0
    if current != source:
        TABLES.write_text(source, encoding="utf-8")
        print(f"wrote {TABLES.relative_to(ROOT)} (Lark {lark.__version__})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
