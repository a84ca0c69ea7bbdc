"""Two small rules for the CLI/reporter tests, so those tests pin the output formats whatever the
real rules find. Installed with the ``tiny_rules`` fixture (tests import it from here)."""

from __future__ import annotations

import pytest

import irlint.rule
import irlint.runner.engine
from irlint.rule import Rule

FIXTURES = __import__("pathlib").Path(__file__).parent / "fixtures"
DUMP = "fixtures/corpus/s2_ffn_3d_reshape_blocks/21_validate_0076.ir"
FOLDER = "fixtures/corpus/s2_ffn_3d_reshape_blocks"


class ForwardMatMul(Rule):
    """What it finds: forward MatMul nodes.

    Why it matters: a test rule; it proves the reporters print the dump line and the chain.

    How to fix: nothing to fix.

    Example: ``%2(x) = PrimFunc_MatMul(%0, %1, Bool(0), Bool(1))``
    """

    code = "TS001"
    name = "forward-matmul"
    severity = "warning"
    summary = "Forward MatMul (test rule)."
    stages = ("validate",)

    def check(self, ir):
        for key in ir.nodes_by_op("MatMul"):
            if ir.is_backward(key):
                continue
            out = ir[key].get("out_type")
            shape = "x".join(map(str, out.shape)) if out is not None and out.shape else "?"
            yield self.finding(
                ir,
                key,
                f"MatMul gives {shape}, with a comma, 100% and a: colon",
                hint="Nothing to do: this is a test rule.",
                related=list(ir.consumers(key))[:2],
            )


class EveryReturn(Rule):
    """What it finds: Return nodes. Off by default."""

    code = "TS002"
    name = "every-return"
    severity = "info"
    summary = "Return node (test rule, off by default)."
    default_enabled = False

    def check(self, ir):
        for key in [k for k, kind in ir.graph.nodes(data="kind") if kind == "return"]:
            yield self.finding(ir, key, "a return")


TINY = [ForwardMatMul, EveryReturn]


@pytest.fixture
def tiny_rules(monkeypatch):
    """Only the two test rules, and the working directory at tests/ for stable relative paths."""
    monkeypatch.setattr(irlint.rule, "load_rules", lambda plugins=True: list(TINY))
    monkeypatch.setattr(irlint.runner.engine, "load_rules", lambda plugins=True: list(TINY))
    monkeypatch.chdir(FIXTURES.parent)
    monkeypatch.delenv("NO_COLOR", raising=False)
    return TINY
