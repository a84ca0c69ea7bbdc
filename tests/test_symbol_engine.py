"""MindSpore 2.10's symbolic shapes in a dump (issue 30): ``subgraph symbol engine:`` before a
subgraph and the ``symbol engine details:`` block after the last one, read with no diagnostic, on
real compiles with a dynamic number of tokens (tests/fixtures/corpus-gen/par_symbolic_gen.py)."""

from __future__ import annotations

import pytest
from conftest import CORPUS, quiet_config

from irlint.read.reader import read_ir
from irlint.runner.engine import lint

CASES = ("par-symbolic-ffn_dynamic_tokens", "par-symbolic-moe_dynamic_tokens")


@pytest.mark.parametrize("case", CASES)
def test_symbol_engine_lines_are_read_and_kept(case):
    ir = read_ir(str(CORPUS / case / "rank_0" / "21_validate_0082.ir"))
    assert ir.diagnostics == []
    ((name, relations),) = ir.symbol_engines.items()
    assert name.startswith("SymbolEngine_") and " " not in name
    assert len(relations) == 1 and "= ShapeCalcReduceSumGrad(" in relations[0] and "s3<[1,inf]|=s2>" in relations[0]
    # the subgraph the engine belongs to names it; its address is not kept
    owners = [s for s in ir.subgraphs.values() if s.attrs.get("symbol_engine") == name]
    assert [s.name for s in owners] == ["@" + name.removeprefix("SymbolEngine_")]
    assert ir.attrs.get(name) is None  # not taken for a "name {" block of key: value lines


def test_an_empty_engine_block_and_engines_named_on_several_subgraphs():
    ir = read_ir(str(CORPUS / CASES[0] / "rank_0" / "step_parallel_begin_0019.ir"))
    assert ir.diagnostics == []
    ((name, relations),) = ir.symbol_engines.items()
    assert relations == []
    assert len([s for s in ir.subgraphs.values() if s.attrs.get("symbol_engine") == name]) == 2


def test_lint_of_the_dynamic_shape_folders_is_clean():
    report = lint([str(CORPUS / c) for c in CASES], quiet_config())
    assert [str(d) for d in report.diagnostics] == [] and report.findings == []
    assert len(report.files) == 2


def test_the_engine_address_is_a_process_value_two_ranks_share_the_graph(tmp_path):
    """``subgraph symbol engine: … : 0x<address>`` names the process like ``subgraph instance``:
    files that differ only there hold one graph."""
    import io
    import re

    from irlint.runner.dedup import graph_hash

    text = (CORPUS / CASES[1] / "rank_0" / "21_validate_0082.ir").read_bytes()
    other = re.sub(rb"(subgraph symbol engine: \S+ : )0x[0-9a-f]+", rb"\g<1>0xdeadbeef", text)
    assert other != text
    assert graph_hash(io.BytesIO(other)) == graph_hash(io.BytesIO(text))
    changed = other.replace(b"ShapeCalcReduceSumGrad", b"ShapeCalcOther")
    assert graph_hash(io.BytesIO(changed)) != graph_hash(io.BytesIO(text))


def test_several_engine_blocks_after_one_details_line(ir_from_text):
    """Engines of several graphs (a MoE model's), blank lines between their blocks."""
    text = (CORPUS / CASES[0] / "rank_0" / "21_validate_0082.ir").read_text(encoding="utf-8")
    head, _, _ = text.partition("symbol engine details:")
    ir = ir_from_text(
        head + "symbol engine details:\nSymbolEngine_a {\n  s1 = ShapeCalc(s0)\n}\n\n"
        "SymbolEngine_b {\n  [s2, 4] = Reshape([s1], [-1, 4])\n  s3 = ScalarMul(s2, 2)\n}\n"
    )
    assert ir.diagnostics == []
    assert ir.symbol_engines == {
        "SymbolEngine_a": ["s1 = ShapeCalc(s0)"],
        "SymbolEngine_b": ["[s2, 4] = Reshape([s1], [-1, 4])", "s3 = ScalarMul(s2, 2)"],
    }
