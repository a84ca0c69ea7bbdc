"""Where the grammar lives: inside the installed package, or the top-level folder of a checkout.

Kept apart from ``irlint.read.parser`` so that the cache can hash the grammar without importing Lark.
"""

from __future__ import annotations

import os


def grammar_text() -> str:
    """The grammar, from the installed package or, in a source checkout, the top-level folder."""
    # os.path, not pathlib: every lint reads the grammar, and pathlib's imports are a share of a start
    package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    for folder in (os.path.join(package, "grammar"), os.path.join(os.path.dirname(package), "grammar")):
        path = os.path.join(folder, "ir.lark")
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                return f.read()
    raise FileNotFoundError("irlint's grammar (grammar/ir.lark) is missing from the installation")
