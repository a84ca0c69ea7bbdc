"""The graph model: nodes, attributes, edges in argument order, and the helpers rules use."""

from __future__ import annotations

from pathlib import Path

from irlint.model import IRFile
from irlint.read.reader import read_ir

CORPUS = Path(__file__).parent / "fixtures" / "corpus"
S2 = CORPUS / "s2_ffn_3d_reshape_blocks" / "opt_pass_19_add_recomputation_0033.ir"
JIT = CORPUS / "ffn-jit-grad" / "01_type_inference_0001.ir"


def _by_id(ir, node_id, graph=None):
    return next(
        k
        for k, d in ir.graph.nodes(data=True)
        if d.get("id") == node_id and d["kind"] == "cnode" and (graph is None or d["graph"] == graph)
    )


def test_node_attributes_from_a_real_record():
    ir = read_ir(str(S2))
    silu = ir[_by_id(ir, "%6")]
    assert silu["op"] == "SiLU" and silu["raw_op"] == "PrimFunc_SiLU"
    assert silu["line"] == 96 and silu["instance"] == "silu"
    assert silu["primitive_attrs"] == {"recompute": True}
    assert silu["cnode_attrs"] == {"recompute": True}
    assert silu["primal_attrs"] == {"unique_id": "6527"}
    assert (
        silu["scope"] == "Default/network-FeedForwardNet/feed_forward-LlamaFeedForward/w1-Linear/activation-LlamaSiLU"
    )
    assert (silu["out_type"].dtype, silu["out_type"].shape) == ("Float32", (16, 64))
    assert silu["graph"] == "@112_29_1_llm_common_TrainStep_construct_222"


def test_edges_are_in_argument_order_with_constants_as_nodes():
    ir = read_ir(str(S2))
    matmul = _by_id(ir, "%2")
    producers = ir.producers(matmul)
    assert [ir[p].get("id") for p in producers[:2]] == ["%0", "%1"]
    assert [ir[p]["value"] for p in producers[2:]] == [False, True]
    assert all(ir[p]["kind"] == "const" for p in producers[2:])


def test_consumers_and_passthrough_walk():
    ir = read_ir(str(S2))
    silu = _by_id(ir, "%6")
    assert [ir[c]["id"] for c in ir.consumers(silu)] == ["%7"]
    # through the Reshape: the forward Mul and the backward Mul that keeps the tensor alive
    reached = {ir[c]["id"]: ir.is_backward(c) for c in ir.through_passthrough(silu)}
    assert reached == {"%8": False, "%27": True}
    up = [ir[p]["id"] for p in ir.through_passthrough(_by_id(ir, "%8"), direction="up")]
    assert up == ["%2", "%6"]


def test_backward_nodes_and_their_forward_nodes():
    ir = read_ir(str(S2))
    grad = _by_id(ir, "%24")  # SiLUGrad, derived from SiLU unique_id 6527
    assert ir.is_backward(grad) and not ir.is_backward(_by_id(ir, "%6"))
    assert ir[ir.forward_of(grad)]["id"] == "%6"
    assert ir.nodes_by_op("SiLUGrad") == [grad]


def test_source_trace_is_read_on_demand():
    ir = read_ir(str(S2))
    trace = ir.trace(_by_id(ir, "%0"))
    assert trace[0] == "# Corresponding code candidate:"
    assert trace[-1].endswith("x = self.reshape(x, (-1, self.in_channels))/")
    assert len(trace) == 11


def test_subgraph_calls_have_edges_into_and_out_of_the_callee():
    ir = read_ir(str(JIT))
    g = ir.graph
    kinds = {}
    for _, _, kind in g.edges(data="kind"):
        kinds[kind] = kinds.get(kind, 0) + 1
    assert kinds.get("call_in", 0) > 0 and kinds.get("call_out", 0) > 0 and kinds.get("callee", 0) > 0
    call = next(k for k, d in g.nodes(data=True) if d.get("op") == "call" and d["raw_op"].startswith("call @"))
    callee = g.nodes[call]["raw_op"].split()[1]
    sub = ir.subgraphs[callee]
    outs = [u for u, _, kind in g.in_edges(call, data="kind") if kind == "call_out"]
    assert outs == [sub.return_node]
    ins = {v for _, v, kind in g.out_edges(ir.producers(call)[0], data="kind") if kind == "call_in"}
    assert ins and ins <= set(sub.params)


def test_every_reference_resolves_in_real_dumps():
    for path in sorted((CORPUS / "ffn-jit-grad").glob("*.ir")):
        ir = read_ir(str(path))
        assert not [d for d in ir.diagnostics if d.code == "IR010"], path


def test_a_record_spanning_lines_keeps_its_first_line_and_its_inputs():
    ir = read_ir(str(CORPUS / "llama-recompute-modes" / "graph_build_0_0094.ir"))
    k = _by_id(ir, "%407")  # MaskedFill of a printed tensor that spans lines 5612-5619
    assert ir[k]["line"] == 5612 and ir[k]["op"] == "MaskedFill"
    producers = ir.producers(k)
    assert ir[producers[1]]["id"] == "%400" and ir[producers[0]]["value"].name == "Tensor"
    assert ir[k]["scope"].endswith("MaskedFill-op2")


PAR = CORPUS / "par-fixed-mm_col_row_mp8" / "rank_0" / "21_validate_0082.ir"


def test_parallel_strategy_block_is_read():
    # semi_auto_parallel dumps end a sharded op's record with an unnamed {in_strategy: ...} block
    ir = read_ir(str(PAR))
    assert ir.diagnostics == []
    mm2 = ir[_by_id(ir, "%4")]
    assert mm2["op"] == "MatMul" and mm2["instance"] == "mm2"
    assert mm2["parallel_info"] == {"in_strategy": ((1, 8), (8, 1))}
    assert mm2["primitive_attrs"] == {"in_strategy": ((1, 8), (8, 1))}
    assert mm2["primal_attrs"]["unique_id"] == "3774"


def test_a_stream_reads_like_the_file_and_keeps_its_traces():
    import io

    from_file = read_ir(str(S2))
    stream = io.BytesIO(S2.read_bytes())
    from_stream = read_ir("<stdin>", stream=stream)
    assert from_stream.diagnostics == []
    assert from_stream.cnode_count == from_file.cnode_count
    silu = _by_id(from_stream, "%6")
    assert from_stream.trace(silu) == from_file.trace(_by_id(from_file, "%6")) != []


def test_the_graph_is_the_one_networkx_itself_builds():
    # the reader fills networkx's adjacency dicts directly (irlint/assemble.py); networkx's own
    # add_nodes_from/add_edges_from must give an equal graph, with nodes and edges in the same order
    import networkx as nx

    for path in (S2, JIT):
        ir = read_ir(str(path))
        g = ir.graph
        ref = nx.MultiDiGraph()
        ref.add_nodes_from(g.nodes(data=True))
        ref.add_edges_from(g.edges(keys=True, data=True))
        assert list(g.nodes(data=True)) == list(ref.nodes(data=True))
        assert list(g.edges(keys=True, data=True)) == list(ref.edges(keys=True, data=True))
        for n in g:
            assert sorted(g.in_edges(n, keys=True), key=repr) == sorted(ref.in_edges(n, keys=True), key=repr)
        assert g.number_of_edges() == ref.number_of_edges() == ir.edge_count > 0
        assert all(g.has_edge(u, v, k) for u, v, k in ref.edges(keys=True))


def test_the_networkx_graph_shares_the_models_dicts():
    # rules read ir.nodes/succ/pred (networkx is not imported for them); a plugin's ir.graph is a
    # MultiDiGraph over the same dicts: what it changes, the accessors see, and the other way round
    import networkx as nx

    ir = read_ir(str(S2))
    g = ir.graph
    assert isinstance(g, nx.MultiDiGraph) and ir.graph is g
    assert g._node is ir.nodes and g._succ is g._adj is ir.succ and g._pred is ir.pred
    assert list(g.nodes) == list(ir.nodes) and g.number_of_edges() == ir.edge_count

    mul = _by_id(ir, "%6")
    before = ir.producers(mul)
    extra = max(ir.nodes) + 1
    g.add_node(extra, kind="const", graph="@g", id="", name="", line=0, op="Constant", scope="", value=1)
    g.add_edge(extra, mul, key=len(before), kind="data")
    assert ir[extra]["value"] == 1
    assert ir.producers(mul) == [*before, extra] and mul in ir.consumers(extra)
    ir.succ[extra][mul][len(before)]["kind"] = "control"  # and the other way round
    assert list(g.in_edges(mul, keys=True, data="kind"))[-1] == (extra, mul, len(before), "control")
    assert ir.producers(mul) == before


def test_a_model_pickles_and_copies_with_its_graph_shared():
    import copy
    import pickle

    import networkx as nx

    ir = read_ir(str(S2))
    for plain in (pickle.loads(pickle.dumps(ir)), copy.deepcopy(ir)):
        assert list(plain.nodes.items()) == list(ir.nodes.items()) and plain.edge_count == ir.edge_count
        assert plain.graph._node is plain.nodes and plain.graph._pred is plain.pred
    ir.graph
    for copied in (pickle.loads(pickle.dumps(ir)), copy.deepcopy(ir)):
        assert copied.graph._node is copied.nodes and copied.graph._succ is copied.succ is copied.graph._adj
        assert list(copied.graph.edges(keys=True, data=True)) == list(ir.graph.edges(keys=True, data=True))

    g = nx.MultiDiGraph()
    g.add_node(0, kind="cnode", op="Mul", graph="@g", id="%0", line=1)
    g.add_node(1, kind="param", graph="@g", id="%para1_x", line=1)
    g.add_edge(1, 0, key=0, kind="data")
    of = IRFile.from_graph("x.ir", g)
    assert of.graph is g and of.nodes is g._node and of.producers(0) == [1] and of.cnode_count == 1


def test_a_return_of_a_printed_tensor_spanning_lines_is_one_record():
    # MindSpore 2.10 early stage files (RoPE's arange): ``Return(Tensor(shape=[16], ... value=[ 0. ...``
    # continued on the next line; before, 3 lines were skipped with IR005
    ir = read_ir(
        str(Path(__file__).parent / "fixtures" / "dump-formats" / "wrapped-return" / "01_type_inference_0001.ir")
    )
    assert ir.diagnostics == []
    sg = ir.subgraphs["@130_3↓arange_1143"]
    (value,) = ir.producers(sg.return_node)
    assert ir[sg.return_node]["line"] == 18 and ir[value]["value"].name == "Tensor"
    assert "@131_✓2↓arange_1140" in ir.subgraphs  # the record after it is read as usual
