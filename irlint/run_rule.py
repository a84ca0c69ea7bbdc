"""Run-level rules: a rule that sees every stage and rank file of one run at once (a pipeline's stages, the
ranks of one compile) instead of one file.

A run-level rule is a ``Rule`` (listed, selected, given severities and suppressed like any) whose ``check_run``
gets the run's files: the final file of each rank, as the plan picks it for a per-file rule of the same
``stages``. Its findings take the same path as every other finding (severities, suppressions, grouping, the
reports and the fix plan). ``check`` finds nothing: the per-file pass does not read files for it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, ClassVar, NamedTuple

from .findings import Finding
from .rule import Rule

if TYPE_CHECKING:
    from .model import IRFile
    from .runner.config import Config
    from .runner.discover import DumpFile


class RunFile(NamedTuple):
    """One file of a run: where it came from and its model."""

    file: DumpFile
    ir: IRFile


class RunRule(Rule):
    """A rule over all files of one run (see the module)."""

    needs: ClassVar[str] = ""  # what ``wants_run`` waits for, as the user gives it (an option)
    min_files: ClassVar[int] = 1  # the fewest distinct graphs in a run worth reading it for

    def check(self, ir: IRFile) -> Iterator[Finding]:
        return iter(())

    def wants_run(self, config: Config) -> bool:
        """Whether this lint gives the rule what it needs (e.g. a budget): else no file is read for it."""
        return True

    def settings(self, config: Config) -> tuple:
        """The settings the rule's findings depend on (part of their cache key)."""
        return ()

    def check_run(self, run: list[RunFile], config: Config) -> Iterator[Finding]:
        raise NotImplementedError
