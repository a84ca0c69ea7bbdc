"""The worker pool: how many processes a run uses, starting them (forked, with the parser built) and ending them."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from ..diagnostics import UNREADABLE, Diagnostic
from ..findings import Finding
from .config import Config
from .discover import DumpFile
from .sandbox import worker_signals

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor


# below this much input, starting worker processes costs more than it saves
PARALLEL_MIN_BYTES = 8 * 1024 * 1024


def jobs_for(files: list[DumpFile], config: Config) -> int:
    jobs = min(capped_jobs(config.effective_jobs()), len(files))
    if jobs <= 1 or sum(f.size for f in files) < PARALLEL_MIN_BYTES:
        return 1
    return jobs


def capped_jobs(jobs: int) -> int:
    """More processes than cores only add memory and switching: at most one per core."""
    return max(1, min(jobs, _cores()))


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def start_pool(jobs: int, reads: bool = True) -> ProcessPoolExecutor:
    """Worker processes; when they will read (``reads``), what every first read does (the reader's
    imports, the parser) is done here first, once, instead of in each worker."""
    # imported here: a run answered from the cache starts no process, and skips their import time
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    if reads:
        from ..read.reader import warm

        warm()

    # fork starts a worker in milliseconds, with the rules and grammar already loaded
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork") if sys.platform == "linux" and "fork" in methods else None
    return ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=worker_signals)


def picklable(value) -> bool:
    import pickle

    try:
        pickle.dumps(value)
    except Exception:  # noqa: BLE001 - whatever pickling raises, the value cannot cross
        return False
    return True


def stop_pool(pool: ProcessPoolExecutor, wait: bool) -> None:
    """End the workers. After an error, Ctrl-C or SIGTERM, they are killed rather than waited for:
    none may outlive irlint."""
    if not wait:
        for process in list(getattr(pool, "_processes", {}).values()):
            try:
                process.terminate()
            except Exception:  # noqa: BLE001 - already gone
                pass
    pool.shutdown(wait=True, cancel_futures=True)


def result_of(job, f: DumpFile) -> tuple[str | None, list[Finding], list[Diagnostic]]:
    from concurrent.futures.process import BrokenProcessPool

    try:
        return job.result()
    except BrokenProcessPool:
        # a worker was killed (out of memory, a signal): every file it had not finished is named
        return (
            None,
            [],
            [
                Diagnostic(
                    f.display,
                    0,
                    UNREADABLE,
                    "not checked: a worker process ended unexpectedly (out of memory? killed?)",
                )
            ],
        )
