"""The dumps an account command (memory, comm, cost) reads, after the output guard: one prologue
for the three, so each reports unusable paths and refuses to write onto its inputs the same way."""

from __future__ import annotations

from ..diagnostics import Diagnostic
from ..runner.discover import STDIN, DumpFile, InputError, discover_inputs, final_files, forget_buffers, read_stdin
from .exits import fail
from .outputs import check_targets, prepare_output


def final_inputs(
    paths: tuple[str, ...] | list[str], output: str | None, follow_links: bool, stages: tuple[str, ...]
) -> tuple[list[DumpFile], list[Diagnostic]]:
    """``account_inputs``, keeping the final-stage file of each rank (the first of ``stages`` it has);
    exits 2 when there is none."""
    files, problems = account_inputs(paths, output, follow_links)
    chosen = final_files(files, stages)
    if not chosen:
        fail("no final-stage graph dump (" + ", ".join(stages) + ") found in " + ", ".join(paths))
    return chosen, problems


def account_inputs(
    paths: tuple[str, ...] | list[str], output: str | None, follow_links: bool
) -> tuple[list[DumpFile], list[Diagnostic]]:
    """(files, input problems) of ``paths``; exits 2 on input no command could use, or when
    ``output`` is a file the run reads. A path that cannot be used is one of the problems: the
    rest is reported."""
    try:
        forget_buffers()
        if STDIN in paths:
            read_stdin()
        check_targets({"output": output})
        if output:
            prepare_output(output)
        found = discover_inputs(list(paths), follow_links=follow_links)
        check_targets({"output": output}, found.files, paths)
    except InputError as exc:
        fail(str(exc))
    return found.files, found.diagnostics
