"""Write irlint/read/standalone_parser.py: Lark's standalone LALR parser of grammar/ir.lark (Lark's
own parsing code and the parse tables, in one module), made once here instead of at every start.

    python scripts/standalone_parser.py           # after editing the grammar or upgrading Lark
    python scripts/standalone_parser.py --check   # exit 1 if the shipped parser is not that of this grammar and Lark

A lint then never imports the ``lark`` package (half of which is grammar compilation, Earley, CYK,
caching: 20 ms a start). irlint uses the shipped parser only when the grammar text and parser options
stored in it are those it reads; otherwise it builds the parser with the installed Lark as before.
The generated module is under the MPL-2.0, as Lark's standalone tool states in its header.
"""

from __future__ import annotations

import argparse
import pprint
import sys
from collections import deque
from pathlib import Path

import lark
from lark.lark import _LOAD_ALLOWED_OPTIONS
from lark.tools.standalone import gen_standalone

ROOT = Path(__file__).resolve().parent.parent
MODULE = ROOT / "irlint" / "read" / "standalone_parser.py"

_HEADER = (
    '"""irlint\'s parser of grammar/ir.lark: the standalone LALR parser Lark\'s tool generates (MPL-2.0,\n'
    "see below). Written by scripts/standalone_parser.py: do not edit; run it again after changing the\n"
    "grammar, the parser options (irlint.read.parser.PARSER_OPTIONS) or Lark.\n\n"
    "Apart from Lark's output: the parse table's states and symbols are numbered canonically (the file\n"
    "does not depend on the hash seed), the unused ``import pickle, zlib, base64`` is left out, Lark's\n"
    "logger (at level CRITICAL, which Lark never logs at) drops messages without importing logging,\n"
    "annotations are not evaluated (typing's subscripts cost 0.5 ms a lint), and GRAMMAR and OPTIONS at\n"
    'the end record what the parser was made from."""\n'
    "from __future__ import annotations\n"
    "# fmt: off\n"
    "# flake8: noqa\n"
)
# gen_standalone writes this for its compressed form only; a lint would pay 1-2 ms for it
_UNUSED_IMPORT = "import pickle, zlib, base64"
# Lark's logger (lark/utils.py) is set to CRITICAL, a level Lark never logs at: a logger that drops
# everything behaves the same without importing logging (3 ms a lint), nor adding a second handler
# to the "lark" logger of an installed Lark
_LOGGER = (
    "import logging\n",
    'logger: logging.Logger = logging.getLogger("lark")\n'
    "logger.addHandler(logging.StreamHandler())\n##\n\n##\n\nlogger.setLevel(logging.CRITICAL)\n",
)
_QUIET_LOGGER = (
    "",
    "class _QuietLogger:\n"
    "    def _drop(self, *args, **kwargs):\n"
    "        pass\n"
    "    debug = info = warning = error = exception = critical = _drop\n\n"
    "logger = _QuietLogger()\n",
)


def standalone_source(grammar: str) -> str:
    from irlint.read.parser import PARSER_OPTIONS

    starts = list(PARSER_OPTIONS["start"])
    chunks: list[str] = [_HEADER]

    def output(*args) -> None:
        if not args:
            chunks.append("\n")
            return
        (arg,) = args
        if isinstance(arg, dict):  # DATA, then MEMO
            if "options" in arg and "parser" in arg:
                # as Lark.save does: options given again at load time (the transformer) are left out
                arg["options"] = {k: v for k, v in arg["options"].items() if k not in _LOAD_ALLOWED_OPTIONS}
                arg["parser"]["parser"] = _canonical(arg["parser"]["parser"], starts)
            chunks.append(pprint.pformat(arg, width=120, sort_dicts=False) + "\n")
        elif arg != _UNUSED_IMPORT:
            chunks.append(f"{arg}\n")

    # no transformer here: irlint's is given at load time
    gen_standalone(lark.Lark(grammar, **PARSER_OPTIONS), output=output)
    chunks.append(
        "\n# What this parser was made from: irlint.read.parser uses it only for this grammar and these options.\n"
        f"GRAMMAR = {grammar!r}\n"
        f"OPTIONS = {pprint.pformat(PARSER_OPTIONS, width=120, sort_dicts=True)}\n"
    )
    source = "".join(chunks)
    for old, new in zip(_LOGGER, _QUIET_LOGGER):
        if source.count(old) != 1:
            raise SystemExit(f"Lark's standalone code changed: expected {old!r} once; update this script")
        source = source.replace(old, new)
    return source


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
            if action == 0:  # a shift (or goto): arg is the next state
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

    source = standalone_source(grammar_text())
    current = MODULE.read_text(encoding="utf-8") if MODULE.exists() else None
    if args.check:
        if current != source:
            print(f"{MODULE.relative_to(ROOT)} is stale: run python scripts/standalone_parser.py", file=sys.stderr)
            return 1
        return 0
    if current != source:
        MODULE.write_text(source, encoding="utf-8")
        print(f"wrote {MODULE.relative_to(ROOT)} (Lark {lark.__version__})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
