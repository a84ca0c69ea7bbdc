"""What a recompute fix costs in compute (issue 33, item 4): RC001/RC002 state the FLOPs the ops
their fix makes recomputed re-spend per step, against the step's FLOPs; checked against real
recompiles made by acting on irlint's own fix (round 0 -> round 1) and on the s2 -> s3 pair."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import CORPUS, TESTS

import irlint.cli
from irlint.findings_json import extra_data
from irlint.headline import MAX
from irlint.runner.config import Config
from irlint.runner.engine import lint

RECOMPUTE = TESTS / "fixtures" / "recompute"


def key(file: str) -> str:
    """A file by its rank folder and name, the same before and after."""
    parts = file.replace("\\", "/").split("/")
    return "/".join(parts[-2:]) if len(parts) > 1 and parts[-2].startswith("rank_") else parts[-1]


def cost_json(path) -> dict:
    """{file: (recompute FLOPs, step FLOPs)}, matrix and element-wise, as irlint cost counts them."""
    out = json.loads(CliRunner().invoke(irlint.cli.main, ["cost", str(path), "--format", "json"]).output)
    return {
        key(e["file"]): (
            e["recompute_flops"] + e["elementwise_flops"]["recompute"],
            e["step_flops"] + sum(e["elementwise_flops"].values()),
        )
        for e in out["files"]
    }


def fix_costs(path) -> dict:
    """{file: {(graph, node): flops}} over every occurrence's fix: the ops the fixes make recomputed
    (an op two findings' fixes share counted once), and the step FLOPs the findings state."""
    report = lint([str(path)], Config(group=False))
    ops: dict = {}
    steps: dict = {}
    for f in report.findings:
        c = extra_data(f).get("fix_cost")
        if f.code in ("RC001", "RC002"):
            assert c is not None, f.message
        if c:
            name = key(f.file)
            ops.setdefault(name, {}).update({(o["graph"], o["node"]): o["flops"] or 0 for o in c["ops"]})
            steps.setdefault(name, set()).add(c["step_flops"])
            assert c["flops"] == c["matrix_flops"] + c["elementwise_flops"]
            assert c["step_share"] == pytest.approx(c["flops"] / c["step_flops"])
    return {"ops": ops, "steps": steps}


@pytest.mark.parametrize(
    "before, after",
    [
        (CORPUS / "s2_ffn_3d_reshape_blocks", CORPUS / "s3_ffn_3d_reshape_fixed"),
        (RECOMPUTE / "mf-dp2_mp4_irlint_fix_round0", RECOMPUTE / "mf-dp2_mp4_irlint_fix_round1"),
        (RECOMPUTE / "mf-pp2_dp2_mp2_irlint_fix_round0", RECOMPUTE / "mf-pp2_dp2_mp2_irlint_fix_round1"),
    ],
)
def test_the_fix_costs_what_the_recompile_re_spends(before, after):
    # the compile made with the fix re-spends in its recomputed copies exactly the FLOPs the
    # findings priced: the copies of the ops they named, no more, no less
    found = fix_costs(before)
    assert found["ops"]
    was, now = cost_json(before), cost_json(after)
    for name, ops in found["ops"].items():
        assert sum(ops.values()) == now[name][0] - was[name][0] > 0
        # the step the share is of: irlint cost's matrix and element-wise FLOPs of the same file
        assert found["steps"][name] == {was[name][1]}


def test_s2_fixes_cost_one_operation_per_element_of_silu_and_mul():
    # x (2, 8, 32), hidden 64: the SiLU and the Mul each re-spend one operation per element of a
    # (16, 64) tensor; the Reshapes their keys add cost nothing
    report = lint([str(CORPUS / "s2_ffn_3d_reshape_blocks")], Config(group=False))
    priced = {f.op: extra_data(f)["fix_cost"] for f in report.findings if f.code == "RC002"}
    assert set(priced) == {"SiLU", "Mul"}
    for op, c in priced.items():
        assert (c["flops"], c["matrix_flops"], c["elementwise_flops"]) == (16 * 64, 0, 16 * 64)
        assert [o["op"] for o in c["ops"]][0] == op and all(o["flops"] == 0 for o in c["ops"][1:])
        finding = next(f for f in report.findings if f.op == op)
        assert "The fix re-spends 1.02 kFLOP per step (1.02 kFLOP element-wise, memory-bound)" in finding.hint


def test_the_headline_states_the_fix_cost_summed_over_layers_within_its_length():
    report = lint([str(RECOMPUTE / "mf-dp2_mp4_irlint_fix_round0")], Config())
    shown = [f for f in report.findings if "/step, " in f.headline]
    assert shown
    for f in report.findings:
        assert len(f.headline) <= MAX
    for f in shown:
        total = sum(extra_data(o)["fix_cost"]["flops"] for o in f.occurrences)
        from irlint.units import human_flops

        assert f"(+{human_flops(total)}/step, " in f.headline, f.headline
        assert len(f.occurrences) > 1  # grouped over the layers: the sum, not one layer's


def test_the_price_goes_before_the_fix_when_the_line_is_full():
    from irlint.findings import Finding, FixCost
    from irlint.headline import headline

    priced = FixCost(flops=5_000_000, matrix_flops=5_000_000, elementwise_flops=0, step_flops=10**9, step_share=0.005)
    f = Finding(
        code="RC002",
        rule="r",
        severity="warning",
        file="a.ir",
        line=1,
        node="%1",
        op="Mul",
        scope="",
        graph="g",
        message="m",
        cause="c" * 60,
        model_path="model.layers.0." + ".".join(["a_rather_long_cell_name"] * 2),
        fix="select_recompute + 'feed_forward\\.w2\\.reshape'",
        fix_cost=priced,
    )
    line = headline(f)
    assert len(line) <= MAX and "fix: select_recompute" in line and "/step" not in line
    short = f.with_(cause="short cause")
    assert headline(short).endswith("fix: select_recompute + 'feed_forward\\.w2\\.reshape' (+5.00 MFLOP/step, 0.5%)")
