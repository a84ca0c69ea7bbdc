"""Modules moved into the package's rooms keep their old import names (plugins and scripts use them)."""
from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from irlint._moved import MOVED


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_module_name_is_the_moved_module_itself(old):
    module = importlib.import_module(old)
    assert module is importlib.import_module(MOVED[old])
    assert module.__name__ == MOVED[old] and module.__spec__.name == MOVED[old]


def test_old_names_work_in_a_fresh_interpreter():
    code = ("from irlint.engine import lint; from irlint.memory import account; import irlint.values as v; "
            "import irlint.read.values as w; assert v is w; print(lint.__module__, account.__module__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["irlint.runner.engine", "irlint.accounts.memory"]


def test_an_unknown_old_name_is_still_an_import_error():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("irlint.no_such_module")
