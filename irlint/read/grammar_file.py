"""Where the grammar lives: inside the installed package, or the top-level folder of a checkout.

Kept apart from ``irlint.read.parser`` so that the cache can hash the grammar without importing Lark.
"""

from __future__ import annotations

from pathlib import Path


def grammar_text() -> str:
    """The grammar, from the installed package or, in a source checkout, the top-level folder."""
    package = Path(__file__).resolve().parent.parent
    for folder in (package / "grammar", package.parent / "grammar"):
        if (folder / "ir.lark").is_file():
            return (folder / "ir.lark").read_text(encoding="utf-8")
    raise FileNotFoundError("irlint's grammar (grammar/ir.lark) is missing from the installation")
