"""One import name per module: the names from before irlint/ was split into rooms are gone
(0.1.0 was never released), and the top-level rules/ folder is the package irlint.rules only."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    "old", ["irlint.engine", "irlint.syntax", "irlint.memory", "irlint.memory_cli", "irlint.reader", "irlint.config"]
)
def test_an_old_module_name_is_not_importable(old):
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(old)


def test_the_built_in_rules_have_one_name():
    import irlint.rules

    from irlint.rule import load_rules

    assert Path(irlint.rules.__file__).parent.name == "rules"
    assert {tuple(r.__module__.split(".")[:2]) for r in load_rules(plugins=False)} == {("irlint", "rules")}
    # the source tree's folder, imported under its own name, refuses rather than loading a second copy
    done = subprocess.run([sys.executable, "-c", "import rules"], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 1 and "ImportError: irlint's built-in rules are the package irlint.rules" in done.stderr


def test_no_test_bench_or_script_imports_an_old_name():
    old = (
        "irlint.engine",
        "irlint.syntax",
        "irlint.record",
        "irlint.scanner",
        "irlint.values",
        "irlint.reader",
        "irlint.memory",
        "irlint.comm",
        "irlint.discover",
        "irlint.cache",
        "irlint.config",
        "from rules",
    )
    sources = [p for folder in ("irlint", "rules", "tests", "bench", "scripts") for p in (REPO / folder).rglob("*.py")]
    here = Path(__file__).resolve()
    found = [
        f"{p.relative_to(REPO)}: {name}"
        for p in sources
        if p.resolve() != here
        for name in old
        if f"{name}." in p.read_text(encoding="utf-8") or f"{name} " in p.read_text(encoding="utf-8")
    ]
    assert found == []
