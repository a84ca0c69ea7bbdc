"""IR snippets for the recompute rules' VALID / INVALID examples, trimmed from the corpus dumps
(MindSpore 2.10, CPU): s7_ffn_3d_function_grad, s1_ffn_2d, s4_cast_rmsnorm, llama-cast, and the
fixtures attn-transpose-onecell (tests/fixtures/recompute)."""

# s7 31_validate: SiLU and Mul tagged, the Reshapes around them are not; backward reads the
# Reshape outputs, so no copy was made (RC001 and RC002 on SiLU and on Mul).
FFN_RESHAPE_BLOCKS = """\
# IR entry: @110_27_1_after_grad_211
# Total subgraphs: 1

# Total params: 4
# Params:
%para1_args0: <Tensor[Float32], (2, 8, 32)> : [2, 8, 32]
%para2_feed_forward.w1.weight: <Ref[Tensor[Float32]], (64, 32), ref_key=feed_forward.w1.weight, is_parameter>  :  has_default
%para3_feed_forward.w2.weight: <Ref[Tensor[Float32]], (32, 64), ref_key=feed_forward.w2.weight, is_parameter>  :  has_default
%para4_feed_forward.w3.weight: <Ref[Tensor[Float32]], (64, 32), ref_key=feed_forward.w3.weight, is_parameter>  :  has_default
Node counting information:
Total number of nodes: 26
Total number of cnodes: 13
subgraph attr:
subgraph instance: 110_27_1_after_grad_211 : 0x55860104edc0
subgraph @110_27_1_after_grad_211() {
  %0(equiv_9_x) = PrimFunc_Reshape(%para1_args0, (I64(-1), I64(32))) {instance name: reshape} cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "6265"}
      : (<Tensor[Float32], (2, 8, 32)>, <Tuple[Int64*2], TupleShape(NoShape, NoShape)>) -> (<Tensor[Float32], (16, 32)>)
      # Fullname with scope: (Default/Reshape-op7)
  %1(equiv_8_x) = PrimFunc_MatMul(%0, %para4_feed_forward.w3.weight, Bool(0), Bool(1)) cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "6204"}
      : (<Tensor[Float32], (16, 32)>, <Tensor[Float32], (64, 32)>, <Bool, NoShape>, <Bool, NoShape>) -> (<Tensor[Float32], (16, 64)>)
      # Fullname with scope: (Default/MatMul-op3)
  %2(equiv_15_CNode_184) = PrimFunc_Reshape(%1, (I64(2), I64(8), I64(64))) {instance name: reshape} cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "6200"}
      : (<Tensor[Float32], (16, 64)>, <Tuple[Int64*3], TupleShape(NoShape, NoShape, NoShape)>) -> (<Tensor[Float32], (2, 8, 64)>)
      # Fullname with scope: (Default/Reshape-op8)
  %3(equiv_12_x) = PrimFunc_MatMul(%0, %para2_feed_forward.w1.weight, Bool(0), Bool(1)) cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "6407"}
      : (<Tensor[Float32], (16, 32)>, <Tensor[Float32], (64, 32)>, <Bool, NoShape>, <Bool, NoShape>) -> (<Tensor[Float32], (16, 64)>)
      # Fullname with scope: (Default/MatMul-op4)
  %4(equiv_17_CNode_185) = PrimFunc_SiLU(%3) {instance name: silu} primitive_attrs: {recompute: Bool(1)} cnode_attrs: {recompute: Bool(1)} cnode_primal_attrs: {unique_id: "6453"}
      : (<Tensor[Float32], (16, 64)>) -> (<Tensor[Float32], (16, 64)>)
      # Fullname with scope: (Default/SiLU-op1)
  %5(equiv_16_CNode_186) = PrimFunc_Reshape(%4, (I64(2), I64(8), I64(64))) {instance name: reshape} cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "6356"}
      : (<Tensor[Float32], (16, 64)>, <Tuple[Int64*3], TupleShape(NoShape, NoShape, NoShape)>) -> (<Tensor[Float32], (2, 8, 64)>)
      # Fullname with scope: (Default/Reshape-op9)
  %6(equiv_4_CNode_187) = PrimFunc_Mul(%2, %5) {instance name: mul} primitive_attrs: {recompute: Bool(1)} cnode_attrs: {recompute: Bool(1)} cnode_primal_attrs: {unique_id: "5996"}
      : (<Tensor[Float32], (2, 8, 64)>, <Tensor[Float32], (2, 8, 64)>) -> (<Tensor[Float32], (2, 8, 64)>)
      # Fullname with scope: (Default/Mul-op1)
  %7(equiv_6_x) = PrimFunc_Reshape(%6, (I64(-1), I64(64))) {instance name: reshape} cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "6111"}
      : (<Tensor[Float32], (2, 8, 64)>, <Tuple[Int64*2], TupleShape(NoShape, NoShape)>) -> (<Tensor[Float32], (16, 64)>)
      # Fullname with scope: (Default/Reshape-op10)
  %8(equiv_5_x) = PrimFunc_MatMul(%7, %para3_feed_forward.w2.weight, Bool(0), Bool(1)) cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "6050"}
      : (<Tensor[Float32], (16, 64)>, <Tensor[Float32], (32, 64)>, <Bool, NoShape>, <Bool, NoShape>) -> (<Tensor[Float32], (16, 32)>)
      # Fullname with scope: (Default/MatMul-op5)
  %9(CNode_202) = PrimFunc_MatMul(%8, %7, Bool(1), Bool(0)) cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {forward_node_name: "MatMul_6050", forward_unique_id: "6050"}
      : (<Tensor[Float32], (16, 32)>, <Tensor[Float32], (16, 64)>, <Bool, NoShape>, <Bool, NoShape>) -> (<Tensor[Float32], (32, 64)>)
      # Fullname with scope: (Gradients/Default/Grad_MatMul/MatMul-op2)
  %10(CNode_203) = PrimFunc_Mul(%5, %2) cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {forward_node_name: "Mul_5996", forward_unique_id: "5996"}
      : (<Tensor[Float32], (2, 8, 64)>, <Tensor[Float32], (2, 8, 64)>) -> (<Tensor[Float32], (2, 8, 64)>)
      # Fullname with scope: (Gradients/Default/Grad_Mul/Mul-op1)
  %11(CNode_206) = MakeTuple(%8, %9, %10)
      : (<Tensor[Float32], (16, 32)>, <Tensor[Float32], (32, 64)>, <Tensor[Float32], (2, 8, 64)>) -> (<Tuple[Tensor[Float32]*3], TupleShape((16, 32), (32, 64), (2, 8, 64))>)
      # Fullname with scope: (Default/MakeTuple-op5)
  Return(%11)
      : (<Tuple[Tensor[Float32]*3], TupleShape((16, 32), (32, 64), (2, 8, 64))>)
      # Fullname with scope: (Default/Return-op0)
}
"""

# s7 22_environ_conv: the same tags before the recompute pass (no cnode_attrs decision yet, and no
# checkpoint marks: add_recomputation writes those).
FFN_BEFORE_PASS = FFN_RESHAPE_BLOCKS.replace(" cnode_attrs: {recompute: Bool(1)}", "").replace(
    " cnode_attrs: {checkpoint: Bool(1)}", ""
)

# s1 21_validate, 2-D FeedForward: SiLU and Mul carry recompute_id and have duplicated copies
# (read by backward through a recompute_depend Depend), so the recompute took effect.
FFN_2D_APPLIED = """\
# IR entry: @88_29_1_llm_common_TrainStep_construct_215
# Total subgraphs: 1

# Total params: 4
# Params:
%para1_inputs0: <Tensor[Float32], (16, 32)> : [16, 32]
%para2_network.feed_forward.w1.weight: <Ref[Tensor[Float32]], (64, 32), ref_key=network.feed_forward.w1.weight, is_parameter>  :  has_default
%para3_network.feed_forward.w2.weight: <Ref[Tensor[Float32]], (32, 64), ref_key=network.feed_forward.w2.weight, is_parameter>  :  has_default
%para4_network.feed_forward.w3.weight: <Ref[Tensor[Float32]], (64, 32), ref_key=network.feed_forward.w3.weight, is_parameter>  :  has_default
Node counting information:
Total number of nodes: 24
Total number of cnodes: 11
subgraph attr:
subgraph instance: 88_29_1_llm_common_TrainStep_construct_215 : 0x560b4fd1c090
subgraph @88_29_1_llm_common_TrainStep_construct_215() {
  %0(equiv_8_x) = PrimFunc_MatMul(%para1_inputs0, %para4_network.feed_forward.w3.weight, Bool(0), Bool(1)) cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "6221"}
      : (<Tensor[Float32], (16, 32)>, <Tensor[Float32], (64, 32)>, <Bool, NoShape>, <Bool, NoShape>) -> (<Tensor[Float32], (16, 64)>)
      # Fullname with scope: (Default/network-FeedForwardNet/feed_forward-LlamaFeedForward/w3-Linear/MatMul-op0)
  %1(equiv_12_x) = PrimFunc_MatMul(%para1_inputs0, %para2_network.feed_forward.w1.weight, Bool(0), Bool(1)) cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "6424"}
      : (<Tensor[Float32], (16, 32)>, <Tensor[Float32], (64, 32)>, <Bool, NoShape>, <Bool, NoShape>) -> (<Tensor[Float32], (16, 64)>)
      # Fullname with scope: (Default/network-FeedForwardNet/feed_forward-LlamaFeedForward/w1-Linear/MatMul-op0)
  %2(equiv_11_CNode_195) = PrimFunc_SiLU(%1) {instance name: silu} primitive_attrs: {recompute: Bool(1)} cnode_attrs: {recompute_sub_graph: U64(0), recompute_id: I64(1), recompute: Bool(1)} cnode_primal_attrs: {unique_id: "6328"}
      : (<Tensor[Float32], (16, 64)>) -> (<Tensor[Float32], (16, 64)>)
      # Fullname with scope: (Default/network-FeedForwardNet/feed_forward-LlamaFeedForward/w1-Linear/activation-LlamaSiLU/SiLU-op0)
  %3(equiv_4_CNode_196) = PrimFunc_Mul(%0, %2) {instance name: mul} primitive_attrs: {recompute: Bool(1)} cnode_attrs: {recompute_sub_graph: U64(1), recompute_id: I64(2), recompute: Bool(1)} cnode_primal_attrs: {unique_id: "6013"}
      : (<Tensor[Float32], (16, 64)>, <Tensor[Float32], (16, 64)>) -> (<Tensor[Float32], (16, 64)>)
      # Fullname with scope: (Default/network-FeedForwardNet/feed_forward-LlamaFeedForward/Mul-op0)
  %4(equiv_5_x) = PrimFunc_MatMul(%3, %para3_network.feed_forward.w2.weight, Bool(0), Bool(1)) cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "6067"}
      : (<Tensor[Float32], (16, 64)>, <Tensor[Float32], (32, 64)>, <Bool, NoShape>, <Bool, NoShape>) -> (<Tensor[Float32], (16, 32)>)
      # Fullname with scope: (Default/network-FeedForwardNet/feed_forward-LlamaFeedForward/w2-Linear/MatMul-op0)
  %5(CNode_217) = Depend(%1, %4) cnode_attrs: {recompute_depend: Bool(1)}
      : (<Tensor[Float32], (16, 64)>, <Tensor[Float32], (16, 32)>) -> (<Tensor[Float32], (16, 64)>)
      # Fullname with scope: (Default/Depend-op0)
  %6(CNode_218) = PrimFunc_SiLU(%5) {instance name: silu} primitive_attrs: {recompute: Bool(1)} cnode_attrs: {recompute_sub_graph: U64(0), recompute_id: I64(1), duplicated: Bool(1), need_cse_after_recompute: Bool(1)}
      : (<Tensor[Float32], (16, 64)>) -> (<Tensor[Float32], (16, 64)>)
      # Fullname with scope: (Default/network-FeedForwardNet/feed_forward-LlamaFeedForward/w1-Linear/activation-LlamaSiLU/SiLU-op1)
  %7(CNode_219) = PrimFunc_Mul(%0, %6) {instance name: mul} primitive_attrs: {recompute: Bool(1)} cnode_attrs: {recompute_sub_graph: U64(1), recompute_id: I64(2), duplicated: Bool(1), need_cse_after_recompute: Bool(1)}
      : (<Tensor[Float32], (16, 64)>, <Tensor[Float32], (16, 64)>) -> (<Tensor[Float32], (16, 64)>)
      # Fullname with scope: (Default/network-FeedForwardNet/feed_forward-LlamaFeedForward/Mul-op1)
  %8(CNode_213) = PrimFunc_MatMul(%4, %7, Bool(1), Bool(0)) cnode_attrs: {checkpoint: Bool(1), target_grad: Bool(1)} cnode_primal_attrs: {forward_node_name: "MatMul_6067", forward_unique_id: "6067"}
      : (<Tensor[Float32], (16, 32)>, <Tensor[Float32], (16, 64)>, <Bool, NoShape>, <Bool, NoShape>) -> (<Tensor[Float32], (32, 64)>)
      # Fullname with scope: (Gradients/Default/network-FeedForwardNet/feed_forward-LlamaFeedForward/w2-Linear/Grad_MatMul/MatMul-op2)
  %9(CNode_220) = MakeTuple(%4, %8)
      : (<Tensor[Float32], (16, 32)>, <Tensor[Float32], (32, 64)>) -> (<Tuple[Tensor[Float32]*2], TupleShape((16, 32), (32, 64))>)
      # Fullname with scope: (Default/MakeTuple-op0)
  Return(%9)
      : (<Tuple[Tensor[Float32]*2], TupleShape((16, 32), (32, 64))>)
      # Fullname with scope: (Default/Return-op0)
}
"""

_NORM_HEADER = """\
# IR entry: @1390_258_1_mindspore_nn_wrap_cell_wrapper_TrainOneStepCell_construct
# Total subgraphs: 1

# Total params: 2
# Params:
%para1_inputs0: <Tensor[Float32], (1, 16, 64)> : [1, 16, 64]
%para2_model.layers.1.attention_norm.weight: <Ref[Tensor[Float32]], (64), ref_key=model.layers.1.attention_norm.weight, is_parameter>  :  has_default
Node counting information:
Total number of nodes: 16
Total number of cnodes: 6
subgraph attr:
subgraph instance: 1390_258_1_mindspore_nn_wrap_cell_wrapper_TrainOneStepCell_construct : 0x55d1c0a2c0d0
subgraph @1390_258_1_mindspore_nn_wrap_cell_wrapper_TrainOneStepCell_construct() {
  %0(equiv_74_CNode_1200) = PrimFunc_Mul(%para1_inputs0, %para2_model.layers.1.attention_norm.weight) cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "30712"}
      : (<Tensor[Float32], (1, 16, 64)>, <Tensor[Float32], (64)>) -> (<Tensor[Float32], (1, 16, 64)>)
      # Fullname with scope: (Default/network-CausalLM/model-Model/layers-CellList/1-DecoderLayer/attention_norm-RMSNorm/Mul-op1)
"""

_NORM_FOOTER = """\
  %3(CNode_2001) = PrimFunc_Mul(%2, %0) cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {forward_node_name: "MatMul_30690", forward_unique_id: "30690"}
      : (<Tensor[Float16], (16, 64)>, <Tensor[Float32], (1, 16, 64)>) -> (<Tensor[Float32], (1, 16, 64)>)
      # Fullname with scope: (Gradients/Default/network-CausalLM/model-Model/layers-CellList/1-DecoderLayer/attention-Attention/wq-Linear/Grad_MatMul/MatMul-op1)
  %4(CNode_2002) = MakeTuple(%2, %3)
      : (<Tensor[Float16], (16, 64)>, <Tensor[Float32], (1, 16, 64)>) -> (<Tuple[Tensor*2], TupleShape((16, 64), (1, 16, 64))>)
      # Fullname with scope: (Default/MakeTuple-op0)
  Return(%4)
      : (<Tuple[Tensor*2], TupleShape((16, 64), (1, 16, 64))>)
      # Fullname with scope: (Default/Return-op0)
}
"""

# llama-cast 21_validate, layer 1: the RMSNorm's fp32 -> fp16 rcast tagged for recompute.
CAST_DOWN_TAGGED = (
    _NORM_HEADER
    + """\
  %1(equiv_73_CNode_1201) = PrimFunc_Cast(%0, I64(42)) {instance name: rcast} primitive_attrs: {output_names: [output], input_names: [x, dst_type], recompute: Bool(1)} cnode_attrs: {recompute: Bool(1)} cnode_primal_attrs: {unique_id: "30700"}
      : (<Tensor[Float32], (1, 16, 64)>, <Int64, NoShape>) -> (<Tensor[Float16], (1, 16, 64)>)
      # Fullname with scope: (Default/network-CausalLM/model-Model/layers-CellList/1-DecoderLayer/attention_norm-RMSNorm/Cast-op0)
  %2(equiv_72_CNode_1202) = PrimFunc_Reshape(%1, (I64(16), I64(64))) {instance name: reshape_flat} cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "30695"}
      : (<Tensor[Float16], (1, 16, 64)>, <Tuple[Int64*2], TupleShape(NoShape, NoShape)>) -> (<Tensor[Float16], (16, 64)>)
      # Fullname with scope: (Default/network-CausalLM/model-Model/layers-CellList/1-DecoderLayer/attention-Attention/wq-Linear/Reshape-op0)
"""
    + _NORM_FOOTER
)

# The same place with an up-cast (fp16 -> fp32) tagged: recomputing it saves memory.
CAST_UP_TAGGED = (
    CAST_DOWN_TAGGED.replace("%para1_inputs0: <Tensor[Float32]", "%para1_inputs0: <Tensor[Float16]")
    .replace(
        'PrimFunc_Mul(%para1_inputs0, %para2_model.layers.1.attention_norm.weight) cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "30712"}\n      : (<Tensor[Float32]',
        'PrimFunc_Mul(%para1_inputs0, %para2_model.layers.1.attention_norm.weight) cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "30712"}\n      : (<Tensor[Float16]',
    )
    .replace(
        "-> (<Tensor[Float32], (1, 16, 64)>)\n      # Fullname with scope: (Default/network-CausalLM/model-Model/layers-CellList/1-DecoderLayer/attention_norm-RMSNorm/Mul-op1)",
        "-> (<Tensor[Float16], (1, 16, 64)>)\n      # Fullname with scope: (Default/network-CausalLM/model-Model/layers-CellList/1-DecoderLayer/attention_norm-RMSNorm/Mul-op1)",
    )
    .replace("PrimFunc_Cast(%0, I64(42))", "PrimFunc_Cast(%0, I64(43))")
    .replace(
        ": (<Tensor[Float32], (1, 16, 64)>, <Int64, NoShape>) -> (<Tensor[Float16], (1, 16, 64)>)",
        ": (<Tensor[Float16], (1, 16, 64)>, <Int64, NoShape>) -> (<Tensor[Float32], (1, 16, 64)>)",
    )
)

# s4 21_validate: the loss ReduceMean is tagged, but only the graph output reads it.
LOSS_TAG_UNUSED = """\
# IR entry: @199_29_1_llm_common_TrainStep_construct_302
# Total subgraphs: 1

# Total params: 1
# Params:
%para1_inputs0: <Tensor[Float32], (2, 8, 48)> : [2, 8, 48]
Node counting information:
Total number of nodes: 12
Total number of cnodes: 5
subgraph attr:
subgraph instance: 199_29_1_llm_common_TrainStep_construct_302 : 0x55f0a6d3e2a0
subgraph @199_29_1_llm_common_TrainStep_construct_302() {
  %0(equiv_2_CNode_230) = PrimFunc_Square(%para1_inputs0) {instance name: square} cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "6105"}
      : (<Tensor[Float32], (2, 8, 48)>) -> (<Tensor[Float32], (2, 8, 48)>)
      # Fullname with scope: (Default/network-NormNet/Square-op0)
  %1(equiv_1_CNode_231) = PrimFunc_ReduceMean(%0, (), Bool(0)) {instance name: loss_mean} primitive_attrs: {recompute: Bool(1)} cnode_attrs: {recompute: Bool(1)} cnode_primal_attrs: {unique_id: "6101"}
      : (<Tensor[Float32], (2, 8, 48)>, <Tuple[], TupleShape()>, <Bool, NoShape>) -> (<Tensor[Float32], ()>)
      # Fullname with scope: (Default/network-NormNet/ReduceMean-op0)
  %2(CNode_260) = PrimFunc_PowTensorScalar(%para1_inputs0, I64(1)) cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {forward_node_name: "Square_6105", forward_unique_id: "6105"}
      : (<Tensor[Float32], (2, 8, 48)>, <Int64, NoShape>) -> (<Tensor[Float32], (2, 8, 48)>)
      # Fullname with scope: (Gradients/Default/network-NormNet/Grad_Square/PowTensorScalar-op0)
  %3(CNode_275) = MakeTuple(%1, %2)
      : (<Tensor[Float32], ()>, <Tensor[Float32], (2, 8, 48)>) -> (<Tuple[Tensor[Float32]*2], TupleShape((), (2, 8, 48))>)
      # Fullname with scope: (Default/MakeTuple-op0)
  Return(%3)
      : (<Tuple[Tensor[Float32]*2], TupleShape((), (2, 8, 48))>)
      # Fullname with scope: (Default/Return-op0)
}
"""

# s4-like Cell.recompute() cell: its Square was recomputed (copy read by backward), the loss
# ReduceMean is the cell's output, excluded by design (Bool(0)): never reported.
LOSS_CELL_OUTPUT = """\
# IR entry: @199_29_1_llm_common_TrainStep_construct_302
# Total subgraphs: 1

# Total params: 1
# Params:
%para1_inputs0: <Tensor[Float32], (2, 8, 48)> : [2, 8, 48]
Node counting information:
Total number of nodes: 14
Total number of cnodes: 6
subgraph attr:
subgraph instance: 199_29_1_llm_common_TrainStep_construct_302 : 0x55f0a6d3e2a0
subgraph @199_29_1_llm_common_TrainStep_construct_302() {
  %0(equiv_2_CNode_230) = PrimFunc_Square(%para1_inputs0) {instance name: square} cnode_attrs: {recompute_sub_graph: U64(0), recompute_id: I64(1), recompute: Bool(1), need_cse_after_recompute: Bool(1)} cnode_primal_attrs: {unique_id: "6105"}
      : (<Tensor[Float32], (2, 8, 48)>) -> (<Tensor[Float32], (2, 8, 48)>)
      # Fullname with scope: (recompute_Default/network-NormNet/ffn_norm-LlamaRMSNorm/Square-op0)
  %1(equiv_1_CNode_231) = PrimFunc_ReduceMean(%0, (), Bool(0)) {instance name: mean} cnode_attrs: {recompute: Bool(0), checkpoint: Bool(1), need_cse_after_recompute: Bool(1)} cnode_primal_attrs: {unique_id: "6101"}
      : (<Tensor[Float32], (2, 8, 48)>, <Tuple[], TupleShape()>, <Bool, NoShape>) -> (<Tensor[Float32], ()>)
      # Fullname with scope: (recompute_Default/network-NormNet/ffn_norm-LlamaRMSNorm/ReduceMean-op0)
  %2(CNode_250) = PrimFunc_Square(%para1_inputs0) {instance name: square} cnode_attrs: {recompute_sub_graph: U64(0), recompute_id: I64(1), duplicated: Bool(1), need_cse_after_recompute: Bool(1)}
      : (<Tensor[Float32], (2, 8, 48)>) -> (<Tensor[Float32], (2, 8, 48)>)
      # Fullname with scope: (recompute_Default/network-NormNet/ffn_norm-LlamaRMSNorm/Square-op1)
  %3(CNode_260) = PrimFunc_Mul(%2, %1) cnode_attrs: {checkpoint: Bool(1), target_grad: Bool(1)} cnode_primal_attrs: {forward_node_name: "ReduceMean_6101", forward_unique_id: "6101"}
      : (<Tensor[Float32], (2, 8, 48)>, <Tensor[Float32], ()>) -> (<Tensor[Float32], (2, 8, 48)>)
      # Fullname with scope: (Gradients/Default/network-NormNet/ffn_norm-LlamaRMSNorm/Grad_ReduceMean/Mul-op0)
  %4(CNode_275) = MakeTuple(%1, %3)
      : (<Tensor[Float32], ()>, <Tensor[Float32], (2, 8, 48)>) -> (<Tuple[Tensor[Float32]*2], TupleShape((), (2, 8, 48))>)
      # Fullname with scope: (Default/MakeTuple-op0)
  Return(%4)
      : (<Tuple[Tensor[Float32]*2], TupleShape((), (2, 8, 48))>)
      # Fullname with scope: (Default/Return-op0)
}
"""


_ATTN_HEADER = """\
# IR entry: @1729_292_1_mindspore_nn_wrap_cell_wrapper_TrainOneStepCell_construct_2283
# Total subgraphs: 1

# Total params: 3
# Params:
%para1_probs: <Tensor[Float16], (1, 4, 16, 16)> : [1, 4, 16, 16]
%para2_v: <Tensor[Float16], (1, 4, 16, 16)> : [1, 4, 16, 16]
%para3_dout: <Tensor[Float16], (16, 64)> : [16, 64]
Node counting information:
Total number of nodes: 20
Total number of cnodes: 6
subgraph attr:
subgraph instance: 1729_292_1_mindspore_nn_wrap_cell_wrapper_TrainOneStepCell_construct_2283 : 0x55d1c0a2c0d0
subgraph @1729_292_1_mindspore_nn_wrap_cell_wrapper_TrainOneStepCell_construct_2283() {
"""

# attn-transpose-onecell 21_validate, layer 0: the attention's second BatchMatMul is tagged
# (bmm2.recompute()), the head-merge Transpose and wo's Reshape are not; backward reads the
# Reshape, so no copy was made (RC001 naming both blocking ops).
ATTN_TRANSPOSE_BLOCKS = (
    _ATTN_HEADER
    + """\
  %0(equiv_52_o) = PrimFunc_BatchMatMul(%para1_probs, %para2_v, Bool(0), Bool(0)) {instance name: bmm2} primitive_attrs: {recompute: Bool(1)} cnode_attrs: {recompute: Bool(1)} cnode_primal_attrs: {unique_id: "43270"}
      : (<Tensor[Float16], (1, 4, 16, 16)>, <Tensor[Float16], (1, 4, 16, 16)>, <Bool, NoShape>, <Bool, NoShape>) -> (<Tensor[Float16], (1, 4, 16, 16)>)
      # Fullname with scope: (Default/network-CausalLM/model-Model/layers-CellList/0-DecoderLayer/attention-Attention/BatchMatMul-op1)
  %1(equiv_51_o) = PrimFunc_Transpose(%0, (I64(0), I64(2), I64(1), I64(3))) {instance name: merger_head_transpose} cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "43250"}
      : (<Tensor[Float16], (1, 4, 16, 16)>, <Tuple[Int64*4], TupleShape(NoShape, NoShape, NoShape, NoShape), elements_use_flags={[const vector]{1, 1, 1, 1}}>) -> (<Tensor[Float16], (1, 16, 4, 16)>)
      # Fullname with scope: (Default/network-CausalLM/model-Model/layers-CellList/0-DecoderLayer/attention-Attention/Transpose-op3)
  %2(equiv_223_CNode_1706) = PrimFunc_Reshape(%1, (I64(16), I64(64))) {instance name: reshape_flat} cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {unique_id: "48563"}
      : (<Tensor[Float16], (1, 16, 4, 16)>, <Tuple[Int64*2], TupleShape(NoShape, NoShape), elements_use_flags={[const vector]{1, 1}}>) -> (<Tensor[Float16], (16, 64)>)
      # Fullname with scope: (Default/network-CausalLM/model-Model/layers-CellList/0-DecoderLayer/attention-Attention/wo-Linear/Reshape-op0)
  %3(CNode_2176) = PrimFunc_MatMul(%para3_dout, %2, Bool(1), Bool(0)) cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {forward_node_name: "MatMul_43493", forward_unique_id: "43493"}
      : (<Tensor[Float16], (16, 64)>, <Tensor[Float16], (16, 64)>, <Bool, NoShape>, <Bool, NoShape>) -> (<Tensor[Float16], (64, 64)>)
      # Fullname with scope: (Gradients/Default/network-CausalLM/lm_head-Linear/Grad_MatMul/MatMul-op32)
  %4(CNode_2002) = MakeTuple(%2, %3)
      : (<Tensor[Float16], (16, 64)>, <Tensor[Float16], (64, 64)>) -> (<Tuple[Tensor*2], TupleShape((16, 64), (64, 64))>)
      # Fullname with scope: (Default/MakeTuple-op0)
  Return(%4)
      : (<Tuple[Tensor*2], TupleShape((16, 64), (64, 64))>)
      # Fullname with scope: (Default/Return-op0)
}
"""
)

# The same where backward no longer reads the Reshape (the wo gradient reads another tensor):
# nothing keeps the BatchMatMul's output, so its tag costs nothing (RC004's case, not RC001's).
ATTN_NOT_READ = ATTN_TRANSPOSE_BLOCKS.replace(
    "  %3(CNode_2176) = PrimFunc_MatMul(%para3_dout, %2,",
    "  %3(CNode_2176) = PrimFunc_MatMul(%para3_dout, %para3_dout,",
)

# attn-transpose-onecell 21_validate, layer 2: .recompute() on the one-op activation cell: the
# SiLU is the cell's output (Bool(0)), never recomputed, and backward's Grad_Mul reads it.
ONE_OP_CELL = """\
# IR entry: @1729_292_1_mindspore_nn_wrap_cell_wrapper_TrainOneStepCell_construct_2283
# Total subgraphs: 1

# Total params: 3
# Params:
%para1_gate: <Tensor[Float16], (1, 16, 176)> : [1, 16, 176]
%para2_up: <Tensor[Float16], (1, 16, 176)> : [1, 16, 176]
%para3_dout: <Tensor[Float16], (1, 16, 176)> : [1, 16, 176]
Node counting information:
Total number of nodes: 16
Total number of cnodes: 5
subgraph attr:
subgraph instance: 1729_292_1_mindspore_nn_wrap_cell_wrapper_TrainOneStepCell_construct_2283 : 0x55d1c0a2c0d0
subgraph @1729_292_1_mindspore_nn_wrap_cell_wrapper_TrainOneStepCell_construct_2283() {
  %0(equiv_327_CNode_1776) = PrimFunc_SiLU(%para1_gate) {instance name: silu} cnode_attrs: {recompute: Bool(0), checkpoint: Bool(1), need_cse_after_recompute: Bool(1)} cnode_primal_attrs: {unique_id: "40279"}
      : (<Tensor[Float16], (1, 16, 176)>) -> (<Tensor[Float16], (1, 16, 176)>)
      # Fullname with scope: (recompute_Default/network-CausalLM/model-Model/layers-CellList/2-DecoderLayer/feed_forward-FeedForward/activation-SiLU/SiLU-op0)
  %1(equiv_99_CNode_1778) = PrimFunc_Mul(%0, %para2_up) {instance name: mul} primitive_attrs: {recompute: Bool(1)} cnode_attrs: {recompute: Bool(1)} cnode_primal_attrs: {unique_id: "40149"}
      : (<Tensor[Float16], (1, 16, 176)>, <Tensor[Float16], (1, 16, 176)>) -> (<Tensor[Float16], (1, 16, 176)>)
      # Fullname with scope: (Default/network-CausalLM/model-Model/layers-CellList/2-DecoderLayer/feed_forward-FeedForward/Mul-op0)
  %2(CNode_1961) = PrimFunc_Mul(%0, %para3_dout) cnode_attrs: {checkpoint: Bool(1)} cnode_primal_attrs: {forward_node_name: "Mul_40149", forward_unique_id: "40149"}
      : (<Tensor[Float16], (1, 16, 176)>, <Tensor[Float16], (1, 16, 176)>) -> (<Tensor[Float16], (1, 16, 176)>)
      # Fullname with scope: (Gradients/Default/network-CausalLM/model-Model/layers-CellList/2-DecoderLayer/feed_forward-FeedForward/Grad_Mul/Mul-op1)
  %3(CNode_2002) = MakeTuple(%1, %2)
      : (<Tensor[Float16], (1, 16, 176)>, <Tensor[Float16], (1, 16, 176)>) -> (<Tuple[Tensor*2], TupleShape((1, 16, 176), (1, 16, 176))>)
      # Fullname with scope: (Default/MakeTuple-op0)
  Return(%3)
      : (<Tuple[Tensor*2], TupleShape((1, 16, 176), (1, 16, 176))>)
      # Fullname with scope: (Default/Return-op0)
}
"""

# s4 21_validate: the attention_norm down-cast was recomputed (recompute_id 2, duplicated copy
# read by backward through a recompute_depend Depend), so its Float32 input %0 stays alive.
CAST_DOWN_RECOMPUTED = (
    _NORM_HEADER.replace("Total number of cnodes: 6", "Total number of cnodes: 7")
    + """\
  %1(equiv_14_CNode_234) = PrimFunc_Cast(%0, I64(42)) {instance name: cast} primitive_attrs: {output_names: [output], input_names: [x, dst_type], recompute: Bool(1)} cnode_attrs: {recompute_sub_graph: U64(1), recompute_id: I64(2), recompute: Bool(1)} cnode_primal_attrs: {unique_id: "8390"}
      : (<Tensor[Float32], (1, 16, 64)>, <Int64, NoShape>) -> (<Tensor[Float16], (1, 16, 64)>)
      # Fullname with scope: (Default/network-NormNet/attention_norm-LlamaRMSNorm/Cast-op1)
  %2(CNode_328) = Depend(%0, %1) primitive_attrs: {side_effect_propagate: I64(1)} cnode_attrs: {recompute_depend: Bool(1)}
      : (<Tensor[Float32], (1, 16, 64)>, <Tensor[Float16], (1, 16, 64)>) -> (<Tensor[Float32], (1, 16, 64)>)
      # Fullname with scope: (Default/Depend-op4)
  %3(CNode_329) = PrimFunc_Cast(%2, I64(42)) {instance name: cast} primitive_attrs: {output_names: [output], input_names: [x, dst_type], recompute: Bool(1)} cnode_attrs: {recompute_sub_graph: U64(1), recompute_id: I64(2), duplicated: Bool(1), need_cse_after_recompute: Bool(1)}
      : (<Tensor[Float32], (1, 16, 64)>, <Int64, NoShape>) -> (<Tensor[Float16], (1, 16, 64)>)
      # Fullname with scope: (Default/network-NormNet/attention_norm-LlamaRMSNorm/Cast-op5)
  %4(CNode_330) = PrimFunc_Mul(%3, %1) cnode_attrs: {target_grad: Bool(1), checkpoint: Bool(1)} cnode_primal_attrs: {forward_node_name: "Mul_8387", forward_unique_id: "8387"}
      : (<Tensor[Float16], (1, 16, 64)>, <Tensor[Float16], (1, 16, 64)>) -> (<Tensor[Float16], (1, 16, 64)>)
      # Fullname with scope: (Gradients/Default/network-NormNet/attention_norm-LlamaRMSNorm/Grad_Mul/Mul-op6)
  %5(CNode_2002) = MakeTuple(%1, %4)
      : (<Tensor[Float16], (1, 16, 64)>, <Tensor[Float16], (1, 16, 64)>) -> (<Tuple[Tensor*2], TupleShape((1, 16, 64), (1, 16, 64))>)
      # Fullname with scope: (Default/MakeTuple-op0)
  Return(%5)
      : (<Tuple[Tensor*2], TupleShape((1, 16, 64), (1, 16, 64))>)
      # Fullname with scope: (Default/Return-op0)
}
"""
)
