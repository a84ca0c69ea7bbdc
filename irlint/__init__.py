"""irlint: a static linter for MindSpore IR graph dumps."""

from __future__ import annotations

from typing import TYPE_CHECKING

__version__ = "0.1.0"

__all__ = ["Config", "Finding", "Related", "Report", "lint", "__version__"]

if TYPE_CHECKING:
    from .findings import Finding, Related, Report
    from .runner.config import Config
    from .runner.engine import lint

# the public names, imported on first use: the program (irlint.cli) imports the package first and
# must not pay for the engine before it has set up its own imports
_LAZY = {
    "Config": "runner.config",
    "Finding": "findings",
    "Related": "findings",
    "Report": "findings",
    "lint": "runner.engine",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
