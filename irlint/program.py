"""The ``irlint`` program's entry (console script, ``python -m irlint``): ``irlint.cli.run``, loaded
after the collector is set for a program that allocates far more than it frees. Loading the
command's modules keeps everything it allocates: with the default thresholds, the young-generation
collections during those imports find nothing and cost ~3 ms of every run (bench/README.md).
Importing ``irlint`` or ``irlint.cli`` as a library leaves the thresholds alone."""

import gc

gc.set_threshold(200_000, 30, 30)  # as irlint.cli.run sets them for the lint itself

from .cli import run  # noqa: E402 - after the thresholds: that is the point of this module

__all__ = ["run"]
