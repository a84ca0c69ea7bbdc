"""irlint: a static linter for MindSpore IR graph dumps."""

from __future__ import annotations

__version__ = "0.1.0"

from .findings import Finding, Related, Report
from .runner.config import Config
from .runner.engine import lint

__all__ = ["Config", "Finding", "Related", "Report", "lint", "__version__"]
