"""Old module names kept for plugins and scripts written before irlint/ was split into rooms:
importing ``irlint.engine`` gives ``irlint.runner.engine`` itself (one module object, not a copy)."""
from __future__ import annotations

import sys
from importlib import import_module
from importlib.machinery import ModuleSpec

MOVED = {
    "irlint.assemble": "irlint.read.assemble",
    "irlint.baseline": "irlint.runner.baseline",
    "irlint.cache": "irlint.runner.cache",
    "irlint.comm": "irlint.accounts.comm",
    "irlint.comm_cli": "irlint.cli.comm",
    "irlint.config": "irlint.runner.config",
    "irlint.dedup": "irlint.runner.dedup",
    "irlint.diff": "irlint.runner.diff",
    "irlint.diff_cli": "irlint.cli.diff",
    "irlint.discover": "irlint.runner.discover",
    "irlint.engine": "irlint.runner.engine",
    "irlint.grammar_file": "irlint.read.grammar_file",
    "irlint.layers": "irlint.model.layers",
    "irlint.memory": "irlint.accounts.memory",
    "irlint.memory_cli": "irlint.cli.memory",
    "irlint.pipeline": "irlint.model.pipeline",
    "irlint.reader": "irlint.read.reader",
    "irlint.record": "irlint.read.record",
    "irlint.scanner": "irlint.read.scanner",
    "irlint.stages": "irlint.model.stages",
    "irlint.syntax": "irlint.read.syntax",
    "irlint.values": "irlint.read.values",
}


class _OldNames:
    """A meta path finder and loader (the protocol needs no base class: importlib.abc costs 5 ms)."""

    def __init__(self) -> None:
        self._specs: dict = {}

    def find_spec(self, fullname, path=None, target=None):
        return ModuleSpec(fullname, self) if fullname in MOVED else None

    def create_module(self, spec):
        module = import_module(MOVED[spec.name])
        self._specs[spec.name] = module.__spec__   # the import system stamps the old name's on it next
        return module

    def exec_module(self, module):
        for old, own in list(self._specs.items()):
            if own.name == module.__name__:
                module.__spec__ = self._specs.pop(old)


def install() -> None:
    if not any(isinstance(f, _OldNames) for f in sys.meta_path):
        sys.meta_path.append(_OldNames())
