"""The habits CONTRIBUTING.md asks of the code in irlint/ and rules/: a ``type: ignore`` says why on
its line, and a module's private names (``_name``) are not imported by another module."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GENERATED = {"standalone_parser.py"}  # Lark's, written by scripts/standalone_parser.py


def _sources() -> list[Path]:
    return [p for d in ("irlint", "rules") for p in sorted((REPO / d).rglob("*.py")) if p.name not in GENERATED]


def test_every_type_ignore_says_why():
    bare = [
        f"{p.relative_to(REPO)}:{n}"
        for p in _sources()
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"#\s*type:\s*ignore(\[[^\]]*\])?\s*$", line)
    ]
    assert bare == []


def test_no_module_imports_another_modules_private_names():
    crossing = [
        f"{p.relative_to(REPO)}: {a.name} from {'.' * node.level}{node.module or ''}"
        for p in _sources()
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom)
        for a in node.names
        if a.name.startswith("_") and not a.name.startswith("__")
    ]
    assert crossing == []
