"""The exit codes of every command, and the one way a command stops on a problem."""

from __future__ import annotations

import sys
from typing import NoReturn

import click

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report Ctrl-C
EXIT_TERMINATED = 128 + 15  # SIGTERM
EXIT_CODES_HELP = (
    "Exit codes: 0 no findings (or only info ones), 1 findings, 2 usage error, nothing checked, "
    "any input problem (IR0xx), unusable input or internal error, 130 interrupted (Ctrl-C), "
    "143 terminated (SIGTERM)."
)


def fail(message: str) -> NoReturn:
    click.echo(f"irlint: {message}", err=True)
    sys.exit(EXIT_ERROR)


def read_or_fail(path: str, what: str) -> str:
    """The text of a file a command option names; exits 2 when it cannot be read."""
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"{path}: cannot read {what}: {getattr(exc, 'strerror', None) or exc}")
