"""Dumps of older MindSpore versions (1.1 - 2.3), as the MindSpore documentation publishes them,
read as graphs: no diagnostics, every node with what its version prints (see fixtures/versions/README.md)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from irlint.cli import main
from irlint.reader import read_ir
from irlint.values import GraphRef, Ref, TensorType

VERSIONS = Path(__file__).parent / "fixtures" / "versions"

# file -> (subgraphs, cnodes including Return lines, graph parameters), counted by hand in the file
COUNTS = {
    "1.1_execute.ir": (1, 3, 2),
    "1.3_execute.ir": (1, 3, 2),
    "1.6_abstract_specialize.ir": (3, 9, 6),
    "2.0_abstract_specialize.ir": (3, 9, 6),
    "2.1_validate.ir": (3, 12, 5),
    "2.1_analyze_fail.ir": (1, 7, 2),
    "2.3_execute.ir": (3, 12, 5),
}


def _read(name: str):
    return read_ir(str(VERSIONS / name))


def _node(ir, graph: str, node_id: str) -> tuple[int, dict]:
    for key, data in ir.graph.nodes(data=True):
        if data["graph"] == graph and data["id"] == node_id and data["kind"] in ("cnode", "return"):
            return key, data
    raise AssertionError(f"{graph} {node_id} not read")


def _producer_ids(ir, key: int) -> list[str]:
    return [ir.graph.nodes[p]["id"] for p in ir.producers(key)]


def test_every_fixture_is_listed():
    assert sorted(p.name for p in VERSIONS.glob("*.ir")) == sorted(COUNTS)


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_reads_without_diagnostics_and_counts(name):
    ir = _read(name)
    assert ir.diagnostics == []
    subgraphs, cnodes, params = COUNTS[name]
    assert len(ir.subgraphs) == subgraphs
    assert ir.cnode_count == cnodes
    assert sum(1 for _, k in ir.graph.nodes(data="kind") if k == "param") == params
    if "total_cnodes" in ir.header:  # 2.3 prints MindSpore's own count
        assert ir.header["total_cnodes"] == cnodes
    for sub in ir.subgraphs.values():
        assert sub.closed and sub.return_node is not None


@pytest.mark.parametrize("name", ["1.1_execute.ir", "1.3_execute.ir"])
def test_1x_header_types_and_lowercase_return(name):
    ir = _read(name)
    assert ir.entry == "@6_5_1_construct_wrapper.15"
    assert ir.header == {"total_params": 2, "total_subgraphs": 1}
    assert ir.attrs == {"check_set_strategy_valid_once_only": "1"}
    assert ir.subgraphs["@6_5_1_construct_wrapper.15"].attrs == {"check_set_strategy_valid_once_only": "1"}
    g = "@6_5_1_construct_wrapper.15"
    key, mul = _node(ir, g, "%1")
    assert (mul["op"], mul["name"], mul["scope"]) == ("Mul", "[CNode]10", "")   # 1.x prints no scope line
    assert mul["args"] == (Ref("%0"), Ref("%para2_y"))
    assert _producer_ids(ir, key) == ["%0", "%para2_y"]
    assert mul["primitive_attrs"] == {"output_names": ["output"], "input_names": ["x", "y"]}
    # "<Tensor[Float32]x[const vector][]>": a Float32 scalar
    scalar = TensorType("Tensor", "Float32", (), "<Tensor[Float32] x[const vector][]>")
    assert mul["in_types"] == (scalar, scalar) and mul["out_type"] == scalar
    ret_key, ret = _node(ir, g, "Return")
    assert ret["raw_op"] == "return" and ret["op"] == "Return" and _producer_ids(ir, ret_key) == ["%1"]
    params = {d["id"]: d for _, d in ir.graph.nodes(data=True) if d["kind"] == "param"}
    assert params["%para1_x"]["out_type"] == scalar
    assert ir.trace(key)[-1].strip() == "# In file demo.py(15)/        x = x * y/"


def test_1_6_instance_names_calls_and_parentless_subgraphs():
    ir = _read("1.6_abstract_specialize.ir")
    assert ir.entry == "@1_construct_wrapper.21"
    assert ir.header == {"total_params": 2, "total_subgraphs": 3}
    assert ir.subgraphs["@2_construct.22"].attrs == {"Undeterminate": "0"}
    key, sub = _node(ir, "@2_construct.22", "%0")
    assert (sub["op"], sub["instance"], sub["name"]) == ("Sub", "sub", "a")
    tensor = sub["args"][1]
    assert tensor.name == "Tensor" and tensor.kw("dtype") == "Float32" and tensor.kw("value") == 1
    assert sub["in_types"][0] == TensorType("Tensor", "Float32", (), "<Tensor[Float32] x()>")
    key, call = _node(ir, "@2_construct.22", "%2")
    assert call["op"] == "call" and call["name"] == "[CNode]5"
    callee = [u for u, _, kind in ir.graph.in_edges(key, data="kind") if kind == "callee"]
    assert [ir.graph.nodes[u]["graph"] for u in callee] == ["@3_func.23"]
    assert [ir.graph.nodes[u]["id"] for u, _, kind in ir.graph.in_edges(key, data="kind") if kind == "call_out"] == ["Return"]


def test_2_0_scope_lines_and_order_listing():
    ir = _read("2.0_abstract_specialize.ir")
    assert ir.entry == "@1_Default_wrapper.24"
    assert ir.header == {"total_subgraphs": 3, "total_params": 2}
    key, mul = _node(ir, "@2_Default.23", "%3")
    assert (mul["op"], mul["instance"], mul["scope"]) == ("Mul", "mul", "Default")
    assert _producer_ids(ir, key) == ["%1", "%2"]
    assert mul["out_type"] == TensorType("Tensor", "Float32", (), "<Tensor[Float32], ()>")
    _, ret = _node(ir, "@1_Default_wrapper.24", "Return")
    assert ret["scope"] == "Default"


def test_2_1_graph_flags_before_subgraph_attr_and_control_flow():
    ir = _read("2.1_validate.ir")
    assert ir.attrs == {"check_set_strategy_valid_once_only": "1", "auto_parallel_finish_pre_action": "1"}
    true_branch = "@21_3_✓__main___Net_construct.296"
    assert ir.subgraphs[true_branch].attrs == {"switch_input": "1", "defer_inline": "0", "undeterminate": "0"}
    g = "@20_1___main___Net_construct.295"
    _, cast = _node(ir, g, "%2")
    assert cast["op"] == "Cast" and cast["args"] == (Ref("%1"), "Bool")
    assert cast["primitive_attrs"]["DstT"] == "Bool" and cast["scope"] == "Default"
    assert cast["out_type"].dtype == "Bool"
    _, partial = _node(ir, g, "%3")
    assert partial["op"] == "Partial" and partial["args"][0] == GraphRef(true_branch)
    key, switch = _node(ir, g, "%5")
    assert switch["op"] == "Switch" and _producer_ids(ir, key) == ["%2", "%3", "%4"]


def test_2_1_analyze_fail_ir():
    ir = _read("2.1_analyze_fail.ir")
    g = "@__main___Net_construct.1"
    assert list(ir.subgraphs) == [g]
    key, call = _node(ir, g, "%3")
    assert call["op"] == "call" and call["scope"] == "Default"   # "#scope: (Default)"
    assert _producer_ids(ir, key) == ["%1", "%1", "%2"]
    assert call["out_type"].kind == "null"
    key, depend = _node(ir, g, "%6")
    # "Depend[side_effect_propagate: I64(1)](None, %5)": the bracket holds the primitive's attributes
    assert depend["op"] == "Depend" and depend["primitive_attrs"] == {"side_effect_propagate": 1}
    assert "%5" in _producer_ids(ir, key)
    _, first = _node(ir, g, "%1")
    assert first["args"] == (Ref("%para1_x"), 1)


def test_2_3_counts_parameters_and_cnode_attrs():
    ir = _read("2.3_execute.ir")
    assert ir.header["total_cnodes"] == 12 and ir.attrs["jit_level"] == ""
    branch = "@20_4_✓__main___Net_construct_311"
    assert ir.subgraphs[branch].attrs == {"indirect": "1", "defer_inline": "0", "undeterminate": "0"}
    key, div = _node(ir, branch, "%0")
    assert div["op"] == "Div" and div["raw_op"] == "PrimFunc_Div" and div["scope"] == "Default/Div-op1"
    assert _producer_ids(ir, key) == ["%para4_Parameter_319", "%para3_Parameter_320"]
    _, sub = _node(ir, "@19_1___main___Net_construct_304", "%0")
    assert sub["cnode_attrs"] == {"checkpoint": True, "is_dynamic_len": False} and sub["name"] == "CNode_310$a"


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_inspect_and_json_run(name):
    path = str(VERSIONS / name)
    inspected = CliRunner().invoke(main, ["inspect", path, "--format", "json"])
    assert inspected.exit_code == 0, inspected.output
    row = json.loads(inspected.output.splitlines()[0])
    assert row["cnodes"] == COUNTS[name][1] and row["diagnostics"] == []
    linted = CliRunner().invoke(main, [path, "--format", "json", "--no-cache"])
    assert linted.exit_code in (0, 1), linted.output
    report = json.loads(linted.stdout)   # a note on standard error for dumps without scope lines
    assert report["diagnostics"] == [] and report["summary"]["files"] == 1
