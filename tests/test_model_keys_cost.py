"""The select keys' file walks are done only where an answer needs them: a key from a node's own
scope below a layer is not checked against every cell of the file (``dump_cells``), because that scope
is one of them; and the model class is counted once per printed scope."""

from __future__ import annotations

import pytest
from conftest import TESTS

from irlint.model import IRFile
from irlint.model.keys import dump_cells, key_exists, node_select_key, primitive_name, select_key
from irlint.model.layers import Places, printed_layer
from irlint.rule import load_rules
from irlint.runner.discover import discover
from irlint.runner.engine import read_dump
from irlint.runner.sandbox import run_rule

RECOMPUTE = TESTS / "fixtures" / "recompute"
# mcore (TeleChat3, DeepSeek-V3 MLA, Qwen3-MoE), legacy Llama with and without a pipeline, GLM, aliased
# scopes, plain MindSpore
FILES = [
    "mf-telechat3-pp2_irlint_fix_round0/rank_0/21_validate_0095.ir.gz",
    "mf-deepseek3-pp2_irlint_fix_round0/rank_0/21_validate_0095.ir.gz",
    "mf-qwen3-moe-dp4_mp2_ep2_experts/rank_0/21_validate_0095.ir.gz",
    "mf-pp2_interleave_irlint_fix_round0/rank_4/21_validate_0093.ir.gz",
    "mf-glm2-select/21_validate_0076.ir",
    "aliased-scopes-l4/21_validate_0076.ir.gz",
    "ms271-attn-ffn/19_validate_0072.ir",
    "lenet-pool_twice_blocked/31_validate_0035.ir",
]


def _ir(name: str) -> IRFile:
    (f,) = discover([str(RECOMPUTE / name)])[0]
    return read_dump(f)


@pytest.mark.parametrize("name", FILES)
def test_a_key_from_a_printed_layer_scope_names_cells_the_dump_shows(name):
    ir = _ir(name)
    places = Places.of(ir)
    checked = 0
    for k in ir.cnodes():
        if not (printed_layer(ir[k].get("scope", "")) or "").isdigit():
            continue
        key = select_key(places.cell_scope(k), primitive_name(ir, k)[0], ir[k]["op"])
        if key is not None:
            checked += 1
            assert key_exists(ir, key), (ir.describe(k), key)
            assert node_select_key(ir, k)[0] == key
    # the walk the answers above skip still agrees with them
    assert dump_cells(ir) or not checked


def test_a_lint_whose_keys_come_from_printed_scopes_walks_no_cells():
    ir = _ir("aliased-scopes-l4/21_validate_0076.ir.gz")
    diagnostics: list = []
    found = [f for rule in load_rules(plugins=False) for f in run_rule(rule(), ir, ir.path, diagnostics, 0)]
    assert any(f.fixes.recompute for f in found), "the fixture's findings name keys"
    assert "_recompute_dump_cells" not in ir.__dict__
