"""Whether output goes to a terminal, whether it is coloured, and the console tables print on."""

from __future__ import annotations

import os
import sys

from ..reporters import UNLIMITED_WIDTH


def on_terminal(stream) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (ValueError, OSError):  # closed
        return False


def use_color(choice: str, tty: bool) -> bool:
    if choice != "auto":
        return choice == "always"
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return tty


def console():
    from rich.console import Console

    tty = on_terminal(sys.stdout)
    color = use_color("auto", tty)
    # not a terminal: tables as wide as their content, nothing cut
    return Console(force_terminal=color, no_color=not color, width=None if tty else UNLIMITED_WIDTH, highlight=False)
