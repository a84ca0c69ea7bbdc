"""irlint's built-in rules: one module per rule or small family.

This folder is the package ``irlint.rules`` (pyproject.toml maps it there, in the wheel and in an
editable install); it has no second name, so its classes are never loaded twice.
"""

if __name__ != "irlint.rules":
    raise ImportError(
        f"irlint's built-in rules are the package irlint.rules, not {__name__!r}: "
        "import irlint.rules (pip install -e . in a source checkout)"
    )
