"""The ``irlint`` command line: ``irlint [OPTIONS] PATH...`` and its commands, one module each
(``check``, ``rules``, ``explain``, ``config``, ``clean``, ``inspect``, ``memory``, ``comm``, ``cost``,
``diff``, ``fix``); ``app`` is the program around them (the group, signals, exit codes).

Exit codes: 0 no findings (or only info ones), 1 warning or error findings, 2 usage error, nothing
checked, any input problem (IR0xx), unusable input or internal error, 130 interrupted (Ctrl-C), 143
terminated (SIGTERM).
"""

from .app import main, run

__all__ = ["main", "run"]
