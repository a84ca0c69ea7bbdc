"""Shared test fixtures: the corpus fixture folders and helpers to read or lint IR text."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from irlint.read.reader import read_ir
from irlint.runner.config import Config
from irlint.runner.engine import lint

TESTS = Path(__file__).resolve().parent
CORPUS = TESTS / "fixtures" / "corpus"
SHARED_CORPUS = TESTS.parent.parent / "shared" / "corpus"


def pytest_configure(config):
    # Without ../shared/corpus (a clone of the project alone) its cases are not collected, so their
    # snapshots are unused: report them instead of failing the run. With it, stale snapshots still fail.
    if not SHARED_CORPUS.is_dir():
        config.option.warn_unused_snapshots = True


def portable(finding: dict, root: Path) -> dict:
    """A finding's dict with file paths relative to ``root``, so that a snapshot does not depend on
    where the checkout is."""

    def rel(path: str) -> str:
        return Path(os.path.relpath(path, root)).as_posix()  # "../unseen/x" for a sibling folder

    finding["file"] = rel(finding["file"])
    for r in finding["related"]:
        r["file"] = rel(r["file"])
    return finding


@pytest.fixture
def corpus() -> Path:
    """tests/fixtures/corpus: real MindSpore 2.10 dumps, one folder per case."""
    return CORPUS


@pytest.fixture
def ir_from_text(tmp_path):
    """Write IR text to a file named like a stage dump and read it (``read_ir``)."""

    def make(text: str, name: str = "21_validate_0076.ir"):
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return read_ir(str(path))

    return make


def quiet_config(**kw) -> Config:
    """A lint configuration for tests: no cache, no worker processes, no third-party plugins."""
    kw.setdefault("cache", False)
    kw.setdefault("jobs", 1)
    kw.setdefault("plugins", False)
    return Config(**kw)


@pytest.fixture
def lint_paths():
    def run(paths, **kw):
        return lint([str(p) for p in paths], quiet_config(**kw))

    return run


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """No test writes to the user's real cache folder."""
    monkeypatch.setenv("IRLINT_CACHE_DIR", str(tmp_path_factory.mktemp("irlint-cache")))


@pytest.fixture(autouse=True)
def _no_columns(monkeypatch):
    """The account reports fold to COLUMNS when it is set: outputs pinned by tests do not depend on
    the shell that runs them."""
    monkeypatch.delenv("COLUMNS", raising=False)


@pytest.fixture
def grammar_parses(monkeypatch) -> Iterator[list[tuple[str, str]]]:
    """Each (text, start rule) the grammar parses from now on, in order (by the fast parser, or by
    Lark when it refuses the piece), with the reader's memo tables emptied (so every template is new)."""
    from irlint.read import fast_parse, record

    fast = fast_parse.parse
    seen: list[tuple[str, str]] = []

    def recording(text, start):
        seen.append((text, start))
        return fast(text, start)

    monkeypatch.setattr(fast_parse, "parse", recording)
    record.clear_memos()
    yield seen
    record.clear_memos()  # what was memoised while recording is dropped with the recorder
