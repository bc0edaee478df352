# SPDX-License-Identifier: Apache-2.0
# Shader variants: tandem_shader(<name> <source> [DEFINES...]).
# Names encode types: <op>_<weight type>_<access path>; the host picks them in
# host/ops/ (the op's file). A shader without variants is not listed here: it is
# built under its file name (shaders/CMakeLists.txt).
# The weight types of the matmul, get_rows and matmul_id families are what the
# host answers to tdm_host_api.query_weight_type (host/plugin/capabilities.cpp
# looks the variants up by name).

foreach(wt f32 f16 bf16 q8_0 q4_0 q5_0 q5_1 q4_K q5_K q6_K)
  string(TOUPPER ${wt} WT)
  tandem_shader(matmul_${wt}_tex matmul.comp WTYPE_${WT} WEIGHTS_TEXEL)
  tandem_shader(matmul_${wt}_buf matmul.comp WTYPE_${WT})
  tandem_shader(matmul_rl_${wt}_tex matmul_rl.comp WTYPE_${WT} WEIGHTS_TEXEL)
  tandem_shader(matmul_rl_${wt}_buf matmul_rl.comp WTYPE_${WT})
  tandem_shader(matmul_mv_${wt}_tex matmul_mv.comp WTYPE_${WT} WEIGHTS_TEXEL)
  tandem_shader(matmul_mv_${wt}_buf matmul_mv.comp WTYPE_${WT})
  # several weights times one x in one dispatch (host/ops/matmul_group.cpp)
  tandem_shader(matmul_group_${wt}_tex matmul.comp WTYPE_${WT} WEIGHTS_TEXEL GROUP)
  tandem_shader(matmul_group_${wt}_buf matmul.comp WTYPE_${WT} GROUP)
  tandem_shader(matmul_rl_group_${wt}_tex matmul_rl.comp WTYPE_${WT} WEIGHTS_TEXEL GROUP)
  tandem_shader(matmul_rl_group_${wt}_buf matmul_rl.comp WTYPE_${WT} GROUP)
  tandem_shader(matmul_mv_group_${wt}_tex matmul_mv.comp WTYPE_${WT} WEIGHTS_TEXEL GROUP)
  tandem_shader(matmul_mv_group_${wt}_buf matmul_mv.comp WTYPE_${WT} GROUP)
  # gate and up with act(gate) * up as the epilogue (host/ops/matmul_glu.cpp)
  tandem_shader(matmul_mv_glu_${wt}_tex matmul_mv.comp WTYPE_${WT} WEIGHTS_TEXEL GROUP GLU)
  tandem_shader(matmul_mv_glu_${wt}_buf matmul_mv.comp WTYPE_${WT} GROUP GLU)
  tandem_shader(get_rows_${wt}_tex get_rows.comp WTYPE_${WT} WEIGHTS_TEXEL)
  tandem_shader(get_rows_${wt}_buf get_rows.comp WTYPE_${WT})
  tandem_shader(matmul_id_${wt}_tex matmul_id.comp WTYPE_${WT} WEIGHTS_TEXEL)
  tandem_shader(matmul_id_${wt}_buf matmul_id.comp WTYPE_${WT})
endforeach()

tandem_shader(attention_tex attention.comp KV_TEXEL)
tandem_shader(attention_buf attention.comp)
# Split-KV first pass (GPUs; attention_combine.comp is the second): host/ops/attention_split.cpp.
tandem_shader(attention_split_tex attention.comp KV_TEXEL SPLIT)
tandem_shader(attention_split_buf attention.comp SPLIT)
# Attention over activations: K/V through RGBA32F texel views (CPU devices) or storage.
tandem_shader(attention_full_tex attention_full.comp ACT_TEXEL)
tandem_shader(attention_full_buf attention_full.comp)
# Recurrent-state and MoE ops: <op>_<tex|buf> = activations read through texel
# views (CPU devices) or storage buffers.
foreach(path tex buf)
  if(path STREQUAL "tex")
    set(act ACT_TEXEL)
  else()
    set(act "")
  endif()
  tandem_shader(conv1d_causal_${path} conv1d_causal.comp ${act})
  tandem_shader(gated_delta_rule_${path} gated_delta_rule.comp ${act})
  tandem_shader(gated_delta_rule_chunked_${path} gated_delta_rule_chunked.comp ${act})
  tandem_shader(moe_sum_${path} moe_sum.comp ${act})
endforeach()
# Q8_0 weights times int8 activations (host/ops/matmul_q8.cpp).
tandem_shader(matmul_q8_rl_tex matmul_q8_rl.comp WTYPE_Q8_0 WEIGHTS_TEXEL)
tandem_shader(matmul_q8_rl_buf matmul_q8_rl.comp WTYPE_Q8_0)
