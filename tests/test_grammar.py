"""One test per construct of the text format, each from a real line of the corpus."""

from __future__ import annotations

import math

import pytest

from irlint.read.syntax import (
    GrammarError,
    parse_attrs,
    parse_call,
    parse_header,
    parse_param,
    parse_types,
    parse_value,
)
from irlint.read.values import Call, FreeVar, GraphRef, Ref


def test_primitive_call_with_refs_and_scalars():
    callee, args = parse_call("PrimFunc_MatMul(%0, %1, Bool(0), Bool(1))")
    assert callee == "PrimFunc_MatMul"
    assert args == (Ref("%0"), Ref("%1"), False, True)
    assert isinstance(args[0], Ref)


def test_call_with_tuple_constant_and_parameter():
    callee, args = parse_call("PrimFunc_Reshape(%para1_inputs0, (I64(-1), I64(32)))")
    assert args == (Ref("%para1_inputs0"), (-1, 32))


def test_subgraph_call():
    callee, args = parse_call("call @30_add_57(%para125_x, %para126_y)")
    assert isinstance(callee, GraphRef) and callee == "@30_add_57"
    assert args == (Ref("%para125_x"), Ref("%para126_y"))


def test_call_of_a_node_value_with_graph_annotation():
    callee, args = parse_call("%0[@@89_✗logsumexp_244]()")
    assert isinstance(callee, Call) and callee.name == Ref("%0")
    assert callee.args == (GraphRef("@@89_✗logsumexp_244"),)
    assert args == ()


def test_free_variable_call_and_argument():
    callee, args = parse_call("$(@5_grad___main___Net_construct_127:CNode_124)(%para39_grad___main___Net_construct)")
    assert callee == FreeVar("@5_grad___main___Net_construct_127", "CNode_124")
    _, args = parse_call("Partial(@16__tensor_env_get_110, $(@8_grad___main___NormNet_construct_36:CNode_86))")
    assert args == (GraphRef("@16__tensor_env_get_110"), FreeVar("@8_grad___main___NormNet_construct_36", "CNode_86"))


def test_return_of_a_free_variable_with_unicode_names():
    callee, args = parse_call("Return($(@10_↓deprecated_tensor_sum_36:para10_фres))")
    assert callee == "Return" and args == (FreeVar("@10_↓deprecated_tensor_sum_36", "para10_фres"),)


def test_switch_with_value_problem_and_graphs():
    _, args = parse_call("Switch(Bool(1), @49_✓deprecated_tensor_sum_104, ValueProblem[DeadNode])")
    assert args[0] is True and args[1] == GraphRef("@49_✓deprecated_tensor_sum_104")
    assert args[2] == Call("ValueProblem", ("DeadNode",), (), "[")


def test_monads_namespace_and_keyword_args():
    assert parse_value("UMonad[U]") == Call("UMonad", ("U",), (), "[")
    assert parse_value("IOMonad[I]") == Call("IOMonad", ("I",), (), "[")
    ns = parse_value("NameSpace[Entry: 'after_grad']")
    assert ns.name == "NameSpace" and ns.args == ({"Entry": "after_grad"},)


def test_scalar_kinds():
    _, args = parse_call("PrimFunc_Cast(%4, I64(43))")
    assert args[1] == 43
    assert parse_value("U64(7)") == 7
    assert parse_value("F32(1)") == 1.0 and isinstance(parse_value("F32(1)"), float)
    assert parse_value("None") is None
    assert parse_value("F32") == "F32"


def test_tensor_constant_spanning_lines_joined():
    text = (
        "PrimFunc_MaskedFill(Tensor(shape=[16, 1], dtype=Float32, value= [[ 1.00000000e+00] "
        "[ 1.00000000e+00] ... [ 1.00000000e+00]]), %400, Tensor(shape=[], dtype=Float32, value=0))"
    )
    _, args = parse_call(text)
    assert isinstance(args[0], Call) and args[0].name == "Tensor"
    assert args[0].kw("shape") == [16, 1] and args[0].kw("dtype") == "Float32"
    assert args[1] == Ref("%400") and args[2].kw("value") == 0


def test_attribute_blocks():
    assert parse_attrs(
        "{recompute_sub_graph: U64(0), recompute_id: I64(1), duplicated: Bool(1), need_cse_after_recompute: Bool(1)}"
    ) == {"recompute_sub_graph": 0, "recompute_id": 1, "duplicated": True, "need_cse_after_recompute": True}
    assert parse_attrs('{forward_node_name: "ReduceMean_6043", forward_unique_id: "6043"}') == {
        "forward_node_name": "ReduceMean_6043",
        "forward_unique_id": "6043",
    }
    assert parse_attrs("{IsFeatureMapOutput: Bool(1), IsFeatureMapInputList: (0, 1)}")["IsFeatureMapInputList"] == (
        0,
        1,
    )
    assert parse_attrs("{in_strategy: ((1, 1), (8, 1))}") == {"in_strategy": ((1, 1), (8, 1))}
    assert parse_attrs("{input_names: [x, dst_type], output_names: [output]}") == {
        "input_names": ["x", "dst_type"],
        "output_names": ["output"],
    }


def test_attribute_templates_do_not_leak_between_calls():
    a = parse_attrs('{unique_id: "1"}')
    b = parse_attrs('{unique_id: "2"}')
    assert (a, b) == ({"unique_id": "1"}, {"unique_id": "2"})


def test_type_line_with_tuple_and_ref_types():
    ins, outs = parse_types(
        "(<Tensor[Float32], (2, 8, 32)>, <Tuple[Int64*2], TupleShape(NoShape, NoShape), "
        "elements_use_flags={[const vector]{1, 1}}>) -> (<Tensor[Float32], (16, 32)>)"
    )
    assert (ins[0].kind, ins[0].dtype, ins[0].shape) == ("Tensor", "Float32", (2, 8, 32))
    assert ins[1].kind == "Tuple" and ins[1].shape is None
    assert outs[0].shape == (16, 32) and outs[0].nbytes == 16 * 32 * 4
    ins, _ = parse_types(
        "(<Ref[Tensor[Float16]], (512, 4096), ref_key=model.w, is_parameter>, <UMonad, NoShape>) "
        "-> (<Tensor[Float16], (512, 4096)>)"
    )
    assert (ins[0].kind, ins[0].dtype, ins[0].shape) == ("Ref", "Float16", (512, 4096))
    assert ins[1].kind == "UMonad"


def test_return_type_line_has_no_arrow():
    ins, outs = parse_types("(<Tuple[Tensor[Float32]], TupleShape(())>)")
    assert outs is None and ins[0].kind == "Tuple"


def test_kernel_graph_format_and_object_type_lines():
    ins, outs = parse_types(
        "(<Float32xDefaultFormat[const vector]{16, 1}>) -> (<Float32xDefaultFormat[const vector]{16, 1}>)"
    )
    assert len(ins) == 1 and len(outs) == 1
    ins, outs = parse_types("(Tensor, Tuple) -> (Tensor)")
    assert [t.kind for t in ins] == ["Tensor", "Tuple"]


def test_parameter_lines_front_end_and_kernel_graph():
    name, fields = parse_param("%para1_inputs0: <Tensor[Float32], (2, 8, 32)> : [2, 8, 32]")
    assert name == "%para1_inputs0" and fields[-1] == [2, 8, 32]
    name, fields = parse_param(
        "%para2_model.tok_embeddings.embedding_table: <Ref[Tensor[Float32]], (128, 64), "
        "ref_key=model.tok_embeddings.embedding_table, is_parameter, is_inplace>  :  has_default  :  "
        "<UnknownxDefaultFormat[const vector]{128, 64}>  :  IsWeight: true"
    )
    assert name == "%para2_model.tok_embeddings.embedding_table" and "has_default" in fields
    assert parse_param("%para1_args: <null>")[0] == "%para1_args"


def test_subgraph_headers():
    assert parse_header("subgraph @kernel_graph0() {") == ("@kernel_graph0", None, ())
    name, parent, params = parse_header(
        "subgraph @27_5↓_nll_loss_89 parent: [subgraph @26_4↓_nll_loss_110](%para153_фloss, %para154_фsmooth_loss) {"
    )
    assert name == "@27_5↓_nll_loss_89" and parent == "@26_4↓_nll_loss_110"
    assert params == (Ref("%para153_фloss"), Ref("%para154_фsmooth_loss"))


def test_names_with_dollar_and_triangle():
    _, args = parse_call("PrimFunc_Add(%para3_▲x, %para4_CNode_310$a)")
    assert args == (Ref("%para3_▲x"), Ref("%para4_CNode_310$a"))


@pytest.mark.parametrize("text", ["PrimFunc_MatMul(%0, %1", "PrimFunc_MatMul", "(%0)", "MatMul(%0))"])
def test_broken_calls_raise_grammar_errors(text):
    with pytest.raises(GrammarError):
        parse_call(text)


def test_none_arguments_keep_their_positions():
    _, args = parse_call("PrimFunc_SumExt(%3, None, Bool(0), None)")
    assert args == (Ref("%3"), None, False, None)
    assert parse_value("(1, 2,)") == (1, 2)  # a trailing comma adds nothing


# Whole records are memoised on their template (irlint.read.templates.memo_by_template): records that
# differ only in ids, strings, key=name values and I64(N) share one parse, refilled per record.
_RECOMPUTED = (
    "PrimFunc_MatMul(%{a}, %para{p}_model.layers.{l}.w, Bool(0), Bool(1)) {{instance name: matmul}} "
    "primitive_attrs: {{transpose_b: Bool(1)}} cnode_attrs: {{recompute_id: I64({r}), recompute: Bool(1)}} "
    'cnode_primal_attrs: {{unique_id: "{u}"}}'
)


def test_records_of_one_template_get_their_own_values():
    from irlint.read.record import parse_node

    for a, p, l, r, u in [(3, 4, 0, 981, 417488), (30, 41, 7, -12, 5), (3, 4, 0, 981, 417488)]:
        callee, args, raw_op, op, blocks = parse_node(_RECOMPUTED.format(a=a, p=p, l=l, r=r, u=u))
        assert (raw_op, op) == ("PrimFunc_MatMul", "MatMul")
        assert args == (Ref(f"%{a}"), Ref(f"%para{p}_model.layers.{l}.w"), False, True)
        assert all(type(x) is Ref for x in args[:2])
        assert blocks["cnode_attrs"] == {"recompute_id": r, "recompute": True}
        assert type(blocks["cnode_attrs"]["recompute_id"]) is int
        assert blocks["cnode_primal_attrs"] == {"unique_id": str(u)}
        assert blocks["instance"] == "matmul" and blocks["primitive_attrs"] == {"transpose_b": True}


def test_records_of_one_template_do_not_share_mutable_values():
    from irlint.read.record import parse_node

    # the first record of a template is refilled by walking its plan, the second compiles the
    # refill, the third runs it: none shares a dict with another
    text = _RECOMPUTED.replace("instance name: matmul", "instance name: matmul_seen_here_only")
    first, second, third = (parse_node(text.format(a=1, p=2, l=0, r=n, u=1))[4] for n in (7001, 7002, 7003))
    first["cnode_attrs"]["recompute"] = False
    second["primitive_attrs"]["transpose_b"] = False
    assert second["cnode_attrs"]["recompute"] is True and third["cnode_attrs"]["recompute"] is True
    assert third["primitive_attrs"]["transpose_b"] is True and first["primitive_attrs"]["transpose_b"] is True
    assert [b["cnode_attrs"]["recompute_id"] for b in (first, second, third)] == [7001, 7002, 7003]


def test_type_lines_with_parameter_names_keep_their_own_names():
    from irlint.read.record import parse_type_line

    for name in ("model.layers.0.attention.wq.weight", "model.layers.9.attention.wq.weight"):
        ins, out = parse_type_line(
            f"(<Ref[Tensor[Float32]], (16, 16), ref_key={name}>, <UMonad, NoShape>) -> (<Tensor[Float32], (16, 16)>)"
        )
        assert ins[0].kind == "Ref" and ins[0].dtype == "Float32" and ins[0].shape == (16, 16)
        assert f"ref_key={name}" in ins[0].raw and out.shape == (16, 16)


def test_type_entries_that_differ_in_their_shape_get_their_own_shape():
    from irlint.read.record import parse_type_line

    for dims, shape in [("1, 4096", (1, 4096)), ("8, 2", (8, 2)), ("-1, 3", (-1, 3)), ("7", (7,)), ("", ())]:
        ins, out = parse_type_line(
            f"(<Tensor[Float16], ({dims})>, <Tensor[Int32], ({dims})>) -> (<Tensor[Float16], ({dims})>)"
        )
        assert [(t.kind, t.dtype, t.shape, t.raw) for t in ins] == [
            ("Tensor", "Float16", shape, f"<Tensor[Float16], ({dims})>"),
            ("Tensor", "Int32", shape, f"<Tensor[Int32], ({dims})>"),
        ]
        assert out.shape == shape and out.nbytes == (None if -1 in shape else 2 * math.prod(shape))


def test_type_entries_that_differ_in_shape_element_type_and_names_are_parsed_once(grammar_parses):
    from irlint.read.record import parse_param_line, parse_type_line

    for dtype, dims, name in [
        ("Float32", "128, 16", "w.a"),
        ("Float16", "16", "w.b"),
        ("Int32", "", "w.c"),
        ("BFloat16", "-1, 8, 4", "model.layers.0.w"),
    ]:
        entry = f"<Ref[Tensor[{dtype}]], ({dims}), ref_key={name}, is_parameter>"
        ins, out = parse_type_line(f"({entry}, <UMonad, NoShape>) -> (<Tensor[{dtype}], ({dims})>)")
        shape = tuple(int(d) for d in dims.split(", ")) if dims else ()
        # the parse prints the keyword last
        assert (ins[0].kind, ins[0].dtype, ins[0].shape, ins[0].raw) == (
            "Ref",
            dtype,
            shape,
            f"<Ref[Tensor[{dtype}]], ({dims}), is_parameter, ref_key={name}>",
        )
        assert (out.kind, out.dtype, out.shape, out.raw) == ("Tensor", dtype, shape, f"<Tensor[{dtype}], ({dims})>")
        # a parameter's type is such an entry too
        assert parse_param_line(f"%para1_{name}: {entry}  :  has_default") == (f"%para1_{name}", ins[0], True)
    # one parse of each skeleton, of UMonad, of the parameter line with its type stood in
    assert len(grammar_parses) == 4
    # a number the grammar reads, not a name: not stood in
    ins, out = parse_type_line("(<Tensor[inf], (2)>) -> (<Tensor[None], (2)>)")
    assert (ins[0].dtype, out.dtype) == ("inf", "None")


def test_record_whose_only_block_is_the_strategy():
    # real MindFormers step_parallel_end: a MakeTuple carrying just the unnamed strategy block
    from irlint.read.record import parse_node

    line = "MakeTuple(%15, %16) {in_strategy: ((2, 4, 1, 1), (2, 4, 1, 1))}"
    callee, args, raw_op, op, blocks = parse_node(line)
    assert op == "MakeTuple" and [str(a) for a in args] == ["%15", "%16"]
    assert blocks == {"parallel_info": {"in_strategy": ((2, 4, 1, 1), (2, 4, 1, 1))}}
    with_attrs = parse_node(
        "MakeTuple(%15, %16) cnode_attrs: {need_cse_after_recompute: Bool(1)} {in_strategy: ((2, 4), (2, 4))}"
    )[4]
    assert with_attrs["parallel_info"] == {"in_strategy": ((2, 4), (2, 4))}
    assert with_attrs["cnode_attrs"] == {"need_cse_after_recompute": True}


@pytest.mark.parametrize(
    "text",
    [
        # a callee the grammar keeps as text: a keyword whose value holds strings, inside brackets
        'Unknown Kind[attr=["output"], other: "x"](%1)',
        'Unknown Kind[attr=("a", %2)](%1)',
    ],
)
def test_callee_text_is_the_same_from_a_template_and_from_its_own_parse(text):
    # a record's template blanks its strings (NUL-numbered placeholders); written back with repr,
    # the placeholders were escaped and never filled back ('\\x000' in the op)
    from irlint.read.record import _parse_node, parse_node

    direct = _parse_node(text)
    for _ in range(3):  # first of its template, recipe compiled, recipe run
        memoised = parse_node(text)
        assert memoised == direct
        assert "\x00" not in memoised[2] and "\\x00" not in memoised[2]


def test_primitive_printed_with_its_class():
    # MindSpore 2.0 analyze_fail.ir: "DoSignaturePrimitive::S-Prim-Sub{prim_type=1}[attributes](..)"
    from irlint.read.record import parse_node

    text = (
        'DoSignaturePrimitive::S-Prim-BiasAdd{prim_type=1}[output_names=["output"], format="NCHW", '
        'input_names=["x", "b"], data_format="NCHW"](%1, %para2_bias)'
    )
    for _ in range(2):
        callee, args, raw_op, op, blocks = parse_node(text)
        assert op == "BiasAdd" and args == (Ref("%1"), Ref("%para2_bias"))
        assert blocks["primitive_attrs"] == {
            "output_names": ["output"],
            "format": "NCHW",
            "input_names": ["x", "b"],
            "data_format": "NCHW",
        }
    assert parse_node("Primitive::Return{prim_type=1}(%1)")[3] == "Return"


def test_pieces_of_record_shapes_are_parsed_once(grammar_parses):
    # the same attribute block after one and after two node ids; the same arguments to two primitives
    from irlint.read.record import parse_node

    one = parse_node('PrimFunc_Mul(%1, %2) cnode_primal_attrs: {unique_id: "41"}')
    two = parse_node('PrimFunc_Add(%3, %4, %5) cnode_primal_attrs: {unique_id: "42"}')
    three = parse_node('PrimFunc_Sub(%6, %7) cnode_primal_attrs: {unique_id: "43"}')
    assert [(a[2], a[1], a[4]) for a in (one, two, three)] == [
        ("PrimFunc_Mul", (Ref("%1"), Ref("%2")), {"cnode_primal_attrs": {"unique_id": "41"}}),
        ("PrimFunc_Add", (Ref("%3"), Ref("%4"), Ref("%5")), {"cnode_primal_attrs": {"unique_id": "42"}}),
        ("PrimFunc_Sub", (Ref("%6"), Ref("%7")), {"cnode_primal_attrs": {"unique_id": "43"}}),
    ]
    # arguments are parsed one by one: a node reference once for the three calls, a scalar once more
    four = parse_node('PrimFunc_Cast(%8, I64(43)) cnode_primal_attrs: {unique_id: "44"}')
    assert four[1] == (Ref("%8"), 43) and type(four[1][1]) is int
    assert sorted(grammar_parses) == sorted(
        [("F(%\x000)", "call"), ("F(\x020)", "call"), ('{unique_id: "\x000"}', "attrs")]
    )


def test_tuple_entries_that_differ_in_their_numbers_are_parsed_once(grammar_parses):
    from irlint.read.record import parse_type_line

    for dims in ("8, 128", "1, 8", "16", "-1, 3"):
        ins, out = parse_type_line(
            f"(<Tuple[Tensor[Float32]*2], TupleShape(({dims}), ({dims}))>) "
            f"-> (<Tuple[Tensor[Float32]*2], TupleShape(({dims}), ({dims}))>)"
        )
        # the parse prints "*" back as a space: the text of the first, with these numbers
        raw = f"<Tuple[Tensor[Float32] 2], TupleShape(({dims}), ({dims}))>"
        assert [(t.kind, t.dtype, t.shape, t.raw) for t in (*ins, out)] == [("Tuple", None, None, raw)] * 2
    assert len(grammar_parses) == 2  # tuples of two numbers, of one number
    # a scalar is a value, not a number of a shape: printed back as the parse prints it
    ins, _ = parse_type_line("(<Tuple[Float32], TupleShape(F32(2))>) -> (<None>)")
    assert ins[0].raw == "<Tuple[Float32], TupleShape(2.0)>"


def test_records_that_differ_in_graph_names_share_one_parse(grammar_parses):
    # early stages name graphs and free variables in their calls: one shape, many names
    from irlint.read.record import parse_node
    from irlint.read.syntax import parse_header

    for g, outer, name in [
        ("@12_f_3", "@1_main_2", "para7_x"),
        ("@@13_g_4", "@2_ℵmain_5", "para8_фy.w"),
        ("@14_h", "@3_m", "CNode_9"),
    ]:
        callee, args, raw_op, op, _ = parse_node(f"call {g}(%1, $({outer}:{name}), {g})")
        assert (callee, raw_op, op) == (GraphRef(g), f"call {g}", "call")
        assert args == (Ref("%1"), FreeVar(outer, name), GraphRef(g))
        assert [type(a) for a in args] == [Ref, FreeVar, GraphRef] and type(args[1].graph) is str
        callee, args, raw_op, op, _ = parse_node(f"$({outer}:{name})(%2)")
        assert (callee, args, raw_op, op) == (FreeVar(outer, name), (Ref("%2"),), f"$({outer}:{name})", "call")
        assert parse_header(f"subgraph {g} parent: [subgraph {outer}](%para1_a, %para2_b) {{") == (
            g,
            outer,
            ("%para1_a", "%para2_b"),
        )
    assert sorted(start for _, start in grammar_parses) == ["call", "call", "header"]
    # a name that would not stay a string is not blanked: its own parse
    assert parse_node("F($(@1_m:1.50))")[1] == (FreeVar("@1_m", "1.5"),)


@pytest.mark.slow
def test_clear_memos_empties_every_memo_of_the_reader():
    # every lru_cache of the reader's parsing modules and record but the loaded parser, and every module-level table that
    # is empty when they are imported, counts as a memo (so a new one is caught here)
    import subprocess
    import sys
    from pathlib import Path

    from irlint.read import parser, record, syntax, templates, tree_values
    from irlint.read.reader import read_ir

    fresh = subprocess.run(
        [
            sys.executable,
            "-c",
            "from irlint.read import parser, record, syntax, templates, tree_values\n"
            "for m in (syntax, templates, tree_values, parser, record):\n"
            "    print(*[f'{m.__name__}.{k}' for k, v in vars(m).items() if type(v) is dict and not v])",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()

    def memos() -> dict[str, int]:
        found = {}
        for module in (syntax, templates, tree_values, parser, record):
            for name, value in vars(module).items():
                if hasattr(value, "cache_info") and value is not parser._parser:
                    found[f"{module.__name__}.{name}"] = value.cache_info().currsize
                elif f"{module.__name__}.{name}" in fresh:
                    found[f"{module.__name__}.{name}"] = len(value)
        return found

    fixtures = Path(__file__).parent / "fixtures"
    for path in sorted(fixtures.glob("corpus/*/*.ir")) + sorted(fixtures.glob("corpus/par-*/**/*.ir"))[:20]:
        read_ir(str(path))
    full = memos()
    assert len(full) >= 9 and all(full.values()), full  # each memo was in use
    record.clear_memos()
    assert memos() == dict.fromkeys(full, 0)
