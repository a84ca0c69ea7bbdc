"""The compute account (irlint/accounts/compute.py) and ``irlint cost``, against the analytic count.

The model's configuration is read from the generator that made the dumps
(``fixtures/corpus-gen/llama_tiny.py``, a copy of ``shared/corpus-gen/llama_tiny.py``) and the
arguments its MANIFEST names, never from the dump: the dump only decides which ops run.
"""
from __future__ import annotations

import ast
import json
import shlex
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import CORPUS, SHARED_CORPUS, TESTS
from irlint.accounts.compute import account, op_flops
from irlint.read.reader import read_ir

GENERATOR = TESTS / "fixtures" / "corpus-gen" / "llama_tiny.py"
SHARED_GENERATOR = TESTS.parent.parent / "shared" / "corpus-gen" / "llama_tiny.py"
LLAMA_CASES = ("llama-recompute-modes", "llama-2d", "llama-cast", "full-folder-1layer")


def generator_config(made_by: str) -> SimpleNamespace:
    """b, s, h, f and the number of layers of a tiny Llama, from the generator's source and the
    command line in a MANIFEST's ``made_by``."""
    tree = ast.parse(GENERATOR.read_text())
    defaults: dict[str, object] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument" and node.args:
            flag = ast.literal_eval(node.args[0])
            for kw in node.keywords:
                if kw.arg == "default":
                    defaults[flag.lstrip("-")] = ast.literal_eval(kw.value)
    argv = shlex.split(made_by)[1:]
    given = {argv[i].lstrip("-"): argv[i + 1] for i in range(len(argv) - 1) if argv[i].startswith("--")
             and not argv[i + 1].startswith("--")}
    args = SimpleNamespace(hidden=int(given.get("hidden", defaults["hidden"])),
                           seq=int(given.get("seq", defaults["seq"])), modes=given["modes"])
    names = values = batch = None
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Tuple) \
                and [getattr(t, "id", "") for t in node.targets[0].elts][:4] == ["H", "HEADS", "FF", "SEQ"]:
            names = [t.id for t in node.targets[0].elts]
            values = eval(compile(ast.Expression(node.value), "gen", "eval"), {"args": args})
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "tokens":
            shape = next(n for n in ast.walk(node.value) if isinstance(n, ast.Tuple))
            batch = ast.literal_eval(shape.elts[0])
    config = dict(zip(names, values))
    return SimpleNamespace(b=batch, s=config["SEQ"], h=config["H"], f=config["FF"],
                           layers=len(args.modes.split(",")))


def transformer_forward_flops(c: SimpleNamespace) -> int:
    """q/k/v/o and the SwiGLU projections, plus the two attention products (QKᵀ and PV)."""
    return 2 * c.b * c.s * c.h * (4 * c.h + 3 * c.f) + 4 * c.b * c.s ** 2 * c.h


def _case(name: str) -> Path:
    return CORPUS / name if (CORPUS / name).exists() else SHARED_CORPUS / name


def test_the_generator_copy_is_the_generator():
    if SHARED_GENERATOR.exists():
        assert GENERATOR.read_text() == SHARED_GENERATOR.read_text()


@pytest.mark.parametrize("case", LLAMA_CASES)
def test_forward_matmul_flops_per_layer_are_the_transformer_count(case):
    manifest = json.loads((_case(case) / "MANIFEST.json").read_text())
    config = generator_config(manifest["made_by"])
    acc = account(read_ir(str(_case(case) / "21_validate_0076.ir")))
    per_layer: dict[str, dict[str, int]] = {}
    for o in acc.ops:
        if o.kind == "matmul" and o.layer.isdigit():
            row = per_layer.setdefault(o.layer, {"forward": 0, "backward": 0})
            if o.direction in row:
                row[o.direction] += o.flops
    expected = transformer_forward_flops(config)
    assert sorted(per_layer, key=int) == [str(i) for i in range(config.layers)]
    for layer, row in per_layer.items():
        assert row["forward"] == expected, (layer, row)
        assert row["backward"] == 2 * expected, (layer, row)   # dX and dW of every product


@pytest.mark.parametrize("case", LLAMA_CASES)
def test_a_recomputed_copy_costs_what_its_forward_op_costs(case):
    ir = read_ir(str(_case(case) / "21_validate_0076.ir"))
    acc = account(ir)
    copies = [o for o in acc.ops if o.direction == "recompute"]
    for o in copies:
        assert o.original is not None and o.flops == op_flops(ir, o.original), ir.describe(o.node)
        assert o.layer == next(p.layer for p in acc.ops if p.node == o.original)


def test_the_whole_layer_copy_re_spends_the_forward_minus_the_last_projection():
    # layer 3 of llama-recompute-modes is Cell.recompute()d: every product is copied but w2's
    # (its output is the layer's, kept for the next layer), so the copies cost forward - 2·b·s·f·h
    c = generator_config(json.loads((_case("llama-recompute-modes") / "MANIFEST.json").read_text())["made_by"])
    acc = account(read_ir(str(_case("llama-recompute-modes") / "21_validate_0076.ir")))
    layers = {r.layer: r for r in acc.layers()}
    assert layers["3"].recompute_flops == transformer_forward_flops(c) - 2 * c.b * c.s * c.f * c.h
    assert all(layers[str(i)].recompute_flops == 0 for i in range(3))   # select recompute copies no product
    assert acc.total("recompute") == layers["3"].recompute_flops
    assert acc.recompute_share == layers["3"].recompute_flops / acc.step_flops


def test_each_recompute_key_prices_the_bytes_the_memory_account_saves():
    from irlint.accounts.memory import account as memory_account

    ir = read_ir(str(_case("llama-recompute-modes") / "21_validate_0076.ir"))
    acc = account(ir)
    saved = {r.layer: r.recompute_saved_bytes for r in memory_account(ir).layers()}
    rows = {r.key: r for r in acc.recompute}
    assert sum(r.saved_bytes for r in acc.recompute) == sum(saved.values())
    whole = rows["cell (whole layer)"]
    assert whole.layers == ["3"] and whole.saved_bytes == saved["3"]
    assert whole.matrix_flops == next(r for r in acc.layers() if r.layer == "3").recompute_flops
    # the SiLU key: layers 0 and 1 (layer 2 tags a cell MindSpore ignores); one (s, f) fp16 tensor each
    c = generator_config(json.loads((_case("llama-recompute-modes") / "MANIFEST.json").read_text())["made_by"])
    silu = rows["feed_forward\\.activation\\.silu"]
    assert silu.layers == ["0", "1"] and silu.saved_bytes == 2 * c.b * c.s * c.f * 2
    assert silu.flops == 2 * c.b * c.s * c.f and silu.matrix_flops == 0
