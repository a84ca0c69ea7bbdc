"""Dumps of MindSpore versions 1.1 - 2.7 as the MindSpore documentation publishes them (graph dumps
and the analyze_fail.ir of failed compiles), read whole: every node with what its version prints
(see fixtures/versions/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from irlint.cli import main
from irlint.read.reader import read_ir
from irlint.read.values import GraphRef, Ref, TensorType

VERSIONS = Path(__file__).parent / "fixtures" / "versions"

# file -> (subgraphs, cnodes including Return lines, graph parameters), counted by hand in the file
COUNTS = {
    "1.1_execute.ir": (1, 3, 2),
    "1.3_execute.ir": (1, 3, 2),
    "1.6_abstract_specialize.ir": (3, 9, 6),
    "2.0_abstract_specialize.ir": (3, 9, 6),
    "2.0_analyze_fail.ir": (2, 7, 4),
    "2.0_analyze_fail_parent.ir": (2, 5, 4),
    "2.1_validate.ir": (3, 12, 5),
    "2.1_analyze_fail.ir": (1, 7, 2),
    "2.3_execute.ir": (3, 12, 5),
    "2.3_analyze_fail.ir": (3, 24, 6),
    "2.7_analyze_fail.ir": (2, 15, 4),
}
# what the reader reports besides the graphs: an analyze_fail.ir is a compile failure (IR013), and
# 2.3 and later print the entry graph of the evaluation stack and the graph it calls under one name
DIAGNOSTICS = {
    "2.0_analyze_fail.ir": ["IR013"],
    "2.0_analyze_fail_parent.ir": ["IR013"],
    "2.1_analyze_fail.ir": ["IR013"],
    "2.3_analyze_fail.ir": ["IR014", "IR013"],
    "2.7_analyze_fail.ir": ["IR014", "IR013"],
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
    assert [d.code for d in ir.diagnostics] == DIAGNOSTICS.get(name, [])
    assert (ir.failure is not None) == ("analyze_fail" in name)
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
    assert (mul["op"], mul["name"], mul["scope"]) == ("Mul", "[CNode]10", "")  # 1.x prints no scope line
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
    assert [ir.graph.nodes[u]["id"] for u, _, kind in ir.graph.in_edges(key, data="kind") if kind == "call_out"] == [
        "Return"
    ]


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
    assert call["op"] == "call" and call["scope"] == "Default"  # "#scope: (Default)"
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
    expected = DIAGNOSTICS.get(name, [])
    inspected = CliRunner().invoke(main, ["inspect", path, "--format", "json"])
    assert inspected.exit_code == (2 if expected else 0), inspected.output
    row = json.loads(inspected.output.splitlines()[0])
    assert row["cnodes"] == COUNTS[name][1] and [d["code"] for d in row["diagnostics"]] == expected
    linted = CliRunner().invoke(main, [path, "--format", "json", "--no-cache"])
    assert linted.exit_code in ((2,) if expected else (0, 1)), linted.output
    report = json.loads(linted.stdout)  # a note on standard error for dumps without scope lines
    assert [d["code"] for d in report["diagnostics"]] == expected and report["summary"]["files"] == 1


def test_2_7_analyze_fail_message_and_evaluation_stack():
    # 2.3 and later: MindSpore's message first, between two banners, then the graphs
    ir = _read("2.7_analyze_fail.ir")
    failure = ir.failure
    assert failure.line == 5 and failure.stack_depth == "2"
    lines = failure.message.splitlines()
    assert lines[0] == "-" * 52 and lines[1] == "- Caught exception:"
    assert "The parameters number of the function is 2, but the number of provided arguments is 3." in lines
    assert lines[-2:] == ["        c = ops.mul(b, self.func(a, a, b))", "                       ^~~~~~~~~~~~~~~~~~"]
    # the "#------------------------> N" marks, in stack order: the last node is where evaluation failed
    marked = [(ir[k]["line"], ir[k]["graph"], ir[k]["id"]) for k in failure.failed_at]
    assert marked == [(48, "@__main___Net_construct_8", "%1"), (96, "@__main___Net_construct_8#2", "%7")]
    compile_failure = ir.diagnostics[-1]
    assert compile_failure.code == "IR013" and compile_failure.line == 96
    assert (
        '("The parameters number of the function is 2, but the number of provided arguments is 3.")'
        in compile_failure.message
        and "%7 call in @__main___Net_construct_8#2" in compile_failure.message
    )


def test_inspect_prints_the_message_of_a_failed_compile():
    path = str(VERSIONS / "2.7_analyze_fail.ir")
    table = CliRunner().invoke(main, ["inspect", path])
    assert table.exit_code == 2
    assert "2.7_analyze_fail.ir:5: MindSpore's message:" in table.output
    assert "    NodeInfo: In file /workspace/mindspore/test2.py:12~13, 4~28" in table.output
    row = json.loads(CliRunner().invoke(main, ["inspect", path, "--format", "json"]).output.splitlines()[0])
    assert row["failure"]["message"].startswith("-----") and row["failure"]["stack"] == "2"
    assert [(s["line"], s["node"]) for s in row["failure"]["evaluation_stack"]] == [(48, "%1"), (96, "%7")]
    # 2.0-2.2 print no message: the failure is still said, with the failing node
    row = json.loads(
        CliRunner()
        .invoke(main, ["inspect", str(VERSIONS / "2.0_analyze_fail.ir"), "--format", "json"])
        .output.splitlines()[0]
    )
    assert row["failure"]["message"] == "" and row["failure"]["evaluation_stack"][-1]["line"] == 45


def test_the_same_graph_name_twice_is_kept_twice():
    # the entry graph of the evaluation stack and the graph it calls print one name
    ir = _read("2.7_analyze_fail.ir")
    first, second = "@__main___Net_construct_8", "@__main___Net_construct_8#2"
    assert list(ir.subgraphs) == [first, second]
    assert (ir.subgraphs[first].line, ir.subgraphs[second].line) == (42, 65)
    assert [ir[k]["id"] for k in ir.subgraphs[second].params] == ["%para0_x", "%para0_y"]
    duplicate = ir.diagnostics[0]
    assert (duplicate.code, duplicate.line) == ("IR014", 65) and "first at line 42" in duplicate.message
    # each graph's nodes read their own graph's %0 and %1
    call_key, call = _node(ir, first, "%1")
    callee = [u for u, _, kind in ir.graph.in_edges(call_key, data="kind") if kind == "callee"]
    assert [(ir[u]["graph"], ir[u]["line"]) for u in callee] == [(first, 43)]
    assert _producer_ids(ir, call_key) == ["%para1_x", "%para2_y"]
    ret_key, _ = _node(ir, first, "Return")
    assert [ir[u]["line"] for u in ir.producers(ret_key)] == [48]
    mul_key, _ = _node(ir, second, "%8")
    assert [(ir[u]["graph"], ir[u]["line"]) for u in ir.producers(mul_key)] == [(second, 86), (second, 96)]
    assert len(ir.subgraphs[first].nodes) == 3 and len(ir.subgraphs[second].nodes) == 12


def test_the_same_graph_name_three_times(tmp_path):
    text = (VERSIONS / "2.3_analyze_fail.ir").read_text(encoding="utf-8")
    start = text.index("subgraph attr:\nsubgraph instance: __main___Net_construct_6 : 0x14bb64c18")
    end = text.index("subgraph attr:\nsubgraph instance: bias_add_14")
    path = tmp_path / "analyze_fail.ir"
    path.write_text(text[:end] + text[start:end] + text[end:], encoding="utf-8")
    ir = read_ir(str(path))
    assert list(ir.subgraphs)[:3] == [
        "@__main___Net_construct_6",
        "@__main___Net_construct_6#2",
        "@__main___Net_construct_6#3",
    ]
    assert [d.code for d in ir.diagnostics] == ["IR014", "IR014", "IR013"]
    assert ir.cnode_count == 24 + 8


def test_2_0_analyze_fail_split_headers_class_primitives_and_types():
    ir = _read("2.0_analyze_fail.ir")
    assert ir.failure is not None and ir.failure.stack_depth == "2"
    wrapper = ir.subgraphs["@Default_wrapper.8"]
    assert [ir[k]["id"] for k in wrapper.params] == ["%para1_x", "%para2_y"]
    scalar = TensorType("Tensor", "Float32", (), "<Tensor[Float32], ()>")
    assert ir[wrapper.params[1]]["out_type"] == scalar
    ret_key, ret = _node(ir, "@Default_wrapper.8", "Return")  # "Primitive::Return{prim_type=1}(%1)"
    assert ret["op"] == "Return" and _producer_ids(ir, ret_key) == ["%1"] and ret["scope"] == "Default"
    key, sub = _node(ir, "@Default.7", "%1")  # "DoSignaturePrimitive::S-Prim-Sub{prim_type=1}[..](..)"
    assert sub["op"] == "Sub" and sub["primitive_attrs"] == {"output_names": ["output"], "input_names": ["x", "y"]}
    assert sub["args"] == (Ref("%para3_x"), 1) and _producer_ids(ir, key) == ["%para3_x", ""]
    assert sub["in_types"][0] == scalar and sub["out_type"] == scalar  # ":(<T>, <T>) -> (<T>)"
    _, mul = _node(ir, "@Default.7", "%4")
    assert mul["op"] == "Mul" and mul["out_type"].kind == "null"


def test_2_0_analyze_fail_header_with_parent_and_defaults():
    ir = _read("2.0_analyze_fail_parent.ir")
    inner = ir.subgraphs["@Default.2"]
    assert inner.parent == "@Default_wrapper.1" and [ir[k]["id"] for k in inner.params] == ["%para4_x1"]
    wrapper = ir.subgraphs["@Default_wrapper.1"]
    bias = ir[wrapper.params[1]]
    assert bias["id"] == "%para2_bias" and bias["has_default"] is True and bias["out_type"].shape == (4,)
    key, bias_add = _node(ir, "@Default.2", "%2")
    assert bias_add["op"] == "BiasAdd" and _producer_ids(ir, key) == ["%1", "%para2_bias"]
    assert ir.failure.failed_at == [_node(ir, "@Default_wrapper.1", "%1")[0], key]


@pytest.mark.parametrize(
    "name, graph",
    [("2.1_validate.ir", "@20_1___main___Net_construct.295"), ("2.3_execute.ir", "@19_1___main___Net_construct_304")],
)
def test_a_switch_result_called_is_linked_to_the_switch_and_both_branches(name, graph):
    # "%6 = %5[@FuncUnion(@true_branch, @false_branch)]()": %5 is the Switch
    import networkx as nx

    ir = _read(name)
    call_key, call = _node(ir, graph, "%6")
    switch_key, switch = _node(ir, graph, "%5")
    assert call["op"] == "call" and switch["op"] == "Switch"
    branches = sorted(n for n in ir.subgraphs if n != graph)
    incoming = sorted((kind, ir[u]["kind"], ir[u]["graph"]) for u, _, kind in ir.graph.in_edges(call_key, data="kind"))
    assert incoming == sorted(
        [("callee", "cnode", graph)]
        + [("callee", "subgraph", b) for b in branches]
        + [("call_out", "return", b) for b in branches]
    )
    assert [u for u, _, kind in ir.graph.in_edges(call_key, data="kind") if kind == "callee"][0] == switch_key
    ret_key, _ = _node(ir, graph, "Return")
    reached = {(ir[a]["graph"], ir[a]["op"]) for a in nx.ancestors(ir.graph, ret_key)}
    assert {(graph, "Switch"), (graph, "Partial"), (branches[0], "Div"), (branches[0], "Mul")} <= reached
    assert {(b, "Return") for b in branches} <= reached
    assert ir.producers(call_key) == []  # no data inputs: the edges above are not data


def test_a_called_value_passes_its_arguments_to_the_last_parameters(tmp_path):
    # "%0[@@g](..)": the value may be a Partial that bound the first parameters already
    path = tmp_path / "value_call.ir"
    path.write_text(
        "# IR entry: @main\n# Total subgraphs: 2\n\n"
        "subgraph @g(%para1_a, %para2_b) {\n"
        "  %0(x) = Add(%para1_a, %para2_b)\n      : (<Tensor[Float32], ()>, <Tensor[Float32], ()>) -> (<Tensor[Float32], ()>)\n"
        "  Return(%0)\n      : (<Tensor[Float32], ()>)\n}\n\n"
        "subgraph @main(%para3_x, %para4_y) {\n"
        "  %0(p) = Partial(@g, %para3_x)\n      : (<Func, NoShape>, <Tensor[Float32], ()>) -> (<Func, NoShape>)\n"
        "  %1(c) = %0[@@g](%para4_y)\n      : (<Tensor[Float32], ()>) -> (<Tensor[Float32], ()>)\n"
        "  Return(%1)\n      : (<Tensor[Float32], ()>)\n}\n",
        encoding="utf-8",
    )
    ir = read_ir(str(path))
    assert ir.diagnostics == []
    call_key, _ = _node(ir, "@main", "%1")
    partial_key, _ = _node(ir, "@main", "%0")
    edges = {(kind, ir[u]["id"]) for u, _, kind in ir.graph.in_edges(call_key, data="kind")}
    assert edges == {("callee", "%0"), ("callee", "@g"), ("call_out", "Return"), ("data", "%para4_y")}
    assert [u for u, _, kind in ir.graph.in_edges(call_key, data="kind") if kind == "callee"][0] == partial_key
    b = next(k for k, d in ir.graph.nodes(data=True) if d["id"] == "%para2_b")
    assert [(ir[u]["id"], key) for u, _, key in ir.graph.in_edges(b, keys=True)] == [("%para4_y", ("in", 1))]


# MindSpore 1.7-2.1 sharding_propagation pages (docs/mindspore/source_en/design/sharding_propagation.md
# @ r1.7, the same lines to r2.1): the strategy block on its own line, the type line glued after it.
# The pages print an excerpt (between "…" lines); these are its lines %2 - %5 as printed, in a
# subgraph of their own with the two Loads they read.
_SHARDING_PAGE_LINES = """\
  %2(equivx) = MatMul(%0, %1) {instance name: matmul} primitive_attrs: {input_names: [x1, x2], out_strategy: None, transpose_x2: false, transpose_b: false, in_strategy: ((2, 1), (1, 4)), output_names: [output], transpose_a: false, transpose_x1: false}
 {in_strategy: ((2, 1), (1, 4))}      : (<Tensor[Float32], (32, 64)>, <Tensor[Float32], (64, 16)>) -> (<Tensor[Float32], (32, 16)>)
      # In file ./train.py(33)/        x = self.matmul(x, self.weight)/
  %3(equiv[CNode]453) = Load(%para4_dense1.bias, U)
      : (<Ref[Tensor(F32)], (16)>, <UMonad>) -> (<Tensor[Float32], (16)>)
  %4(equivx) = Add(%2, %3) {instance name: add} primitive_attrs: {output_names: [output], input_names: [x, y]}
 {in_strategy: ((2, 4), (4))}      : (<Tensor[Float32], (32, 16)>, <Tensor[Float32], (16)>) -> (<Tensor[Float32], (32, 16)>)
      # In file ./train.py(34)/        x = self.add(x, self.bias)/
  %5(equivx) = ReLU(%4) {instance name: relu} primitive_attrs: {output_names: [output], input_names: [x]}
 {in_strategy: ((2, 4))}      : (<Tensor[Float32], (32, 16)>) -> (<Tensor[Float32], (32, 16)>)
      # In file ./train.py(48)/        x = self.relu(x)/
"""


def test_strategy_line_with_the_type_line_glued_after_it(tmp_path):
    path = tmp_path / "step_parallel_begin_0041.ir"
    path.write_text(
        "#IR entry      : @1_construct_wrapper.298\n#Total subgraph: 1\n\n"
        "%para1_x : <Tensor[Float32], (32, 64)>\n%para2_dense1.weight : <Ref[Tensor(F32)], (64, 16)>\n"
        "%para4_dense1.bias : <Ref[Tensor(F32)], (16)>\n\n"
        "subgraph @1_construct_wrapper.298() {\n"
        "  %0(x) = Load(%para1_x, U)\n      : (<Tensor[Float32], (32, 64)>, <UMonad>) -> (<Tensor[Float32], (32, 64)>)\n"
        "  %1(w) = Load(%para2_dense1.weight, U)\n      : (<Ref[Tensor(F32)], (64, 16)>, <UMonad>) -> (<Tensor[Float32], (64, 16)>)\n"
        + _SHARDING_PAGE_LINES
        + "  Return(%5)\n      : (<Tensor[Float32], (32, 16)>)\n}\n",
        encoding="utf-8",
    )
    ir = read_ir(str(path))
    assert ir.diagnostics == [] and ir.cnode_count == 7
    g = "@1_construct_wrapper.298"
    key, matmul = _node(ir, g, "%2")
    assert matmul["parallel_info"] == {"in_strategy": ((2, 1), (1, 4))}
    assert matmul["primitive_attrs"]["in_strategy"] == ((2, 1), (1, 4))
    assert [t.shape for t in matmul["in_types"]] == [(32, 64), (64, 16)] and matmul["out_type"].shape == (32, 16)
    assert ir.trace(key) == ["# In file ./train.py(33)/        x = self.matmul(x, self.weight)/"]
    _, add = _node(ir, g, "%4")
    assert add["parallel_info"] == {"in_strategy": ((2, 4), (4,))} and add["out_type"].shape == (32, 16)
    relu_key, relu = _node(ir, g, "%5")
    assert relu["parallel_info"] == {"in_strategy": ((2, 4),)} and _producer_ids(ir, relu_key) == ["%4"]
    # the parsed strategy of one record is never another's
    assert add["parallel_info"] is not relu["parallel_info"]


def test_rules_do_not_run_on_a_compile_failure(tmp_path):
    # the same graphs, once as a stage dump (findings) and once after an analyze_fail.ir banner
    dump = Path(__file__).parent / "fixtures" / "corpus" / "s2_ffn_3d_reshape_blocks" / "21_validate_0076.ir"
    text = dump.read_text(encoding="utf-8")
    banner = (
        "# " + "=" * 95 + "\n# The following shows the IR when the function graphs evaluation fails to help "
        "locate the problem.\n# " + "=" * 95 + "\n\n"
    )
    failed = tmp_path / "analyze_fail.ir"
    failed.write_text(banner + text, encoding="utf-8")
    plain = CliRunner().invoke(main, [str(dump), "--format", "json", "--no-cache"])
    assert json.loads(plain.output)["findings"]
    result = CliRunner().invoke(main, [str(failed), "--format", "json", "--no-cache"])
    report = json.loads(result.output)
    assert result.exit_code == 2 and report["findings"] == []
    assert [d["code"] for d in report["diagnostics"]] == ["IR013"]
    assert "no rule runs on it" in report["diagnostics"][0]["message"]


def test_a_message_without_the_graph_banner_ends_at_the_graphs(tmp_path):
    text = (VERSIONS / "2.7_analyze_fail.ir").read_text(encoding="utf-8")
    cut = text.replace(
        "# The following shows the IR when the function graphs evaluation fails to help locate the problem.\n", ""
    )
    path = tmp_path / "analyze_fail.ir"
    path.write_text(cut, encoding="utf-8")
    ir = read_ir(str(path))
    # the graphs are read whole; the notes after the missing banner stay in the message
    assert ir.cnode_count == COUNTS["2.7_analyze_fail.ir"][1] and len(ir.subgraphs) == 2
    assert "FunctionGraph ID : func_7" in ir.failure.message.splitlines()
    assert ir.failure.message.splitlines()[-1].startswith("# Refer to https://www.mindspore.cn/search")
    assert [d.code for d in ir.diagnostics] == ["IR014", "IR013"]


def test_a_split_subgraph_header_that_never_closes(tmp_path):
    path = tmp_path / "analyze_fail.ir"
    path.write_text(
        "# 1.This file shows the parsed IR info when graph evaluating failed to help find the problem.\n"
        "subgraph @g(\n        %para1_x : <Tensor[Float32], ()>\n"
        "  %1(a) = Neg(%para1_x)\n      :(<Tensor[Float32], ()>) -> (<Tensor[Float32], ()>)\n"
        "  Primitive::Return{prim_type=1}(%1)\n      :(<Tensor[Float32], ()>)\n}\n",
        encoding="utf-8",
    )
    ir = read_ir(str(path))
    assert [(d.code, d.line) for d in ir.diagnostics] == [("IR005", 2), ("IR013", 1)]
    assert [ir[k]["id"] for k in ir.subgraphs["@g"].params] == ["%para1_x"]
    key, neg = _node(ir, "@g", "%1")
    assert neg["op"] == "Neg" and _producer_ids(ir, key) == ["%para1_x"] and neg["out_type"].shape == ()
