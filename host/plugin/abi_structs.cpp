// SPDX-License-Identifier: Apache-2.0
// host/plugin/abi_structs.cpp: the minimum struct sizes of each released ABI.
//
// A row is frozen when its version ships: ABI 4 adds a column, it never edits
// one. The static_asserts catch the moment a field is appended to a struct
// after its current version's size was frozen here: then add a version.
#include "plugin/abi_structs.h"

namespace tdm {
namespace {

struct MinSizes {
    uint32_t v1, v2, v3;
};

// v1: the ABI 1 release (tandem.h TDM_V1_SIZEOF_*); v2: the ABI 2 release; v3: this one.
constexpr MinSizes kTensorInfo{TDM_V1_SIZEOF_TENSOR_INFO, 48, 48};
constexpr MinSizes kTensorShape{TDM_V1_SIZEOF_TENSOR_SHAPE, 40, 40};
constexpr MinSizes kOpDesc{TDM_V1_SIZEOF_OP_DESC, 160, 160};
constexpr MinSizes kWeightRequest{TDM_V1_SIZEOF_WEIGHT_REQUEST, 128, 128};
constexpr MinSizes kBatchDesc{TDM_V1_SIZEOF_BATCH_DESC, 12, 12};
constexpr MinSizes kAttentionLayer{TDM_V1_SIZEOF_ATTENTION_LAYER, 20, 20};
constexpr MinSizes kRecurrentState{TDM_V1_SIZEOF_RECURRENT_STATE, 16, 16};
constexpr MinSizes kModelInfo{TDM_V1_SIZEOF_MODEL_INFO, 56, 56};
constexpr MinSizes kArchDesc{TDM_V1_SIZEOF_ARCH_DESC, 64, 64};
constexpr MinSizes kDraftHeadInfo{TDM_V1_SIZEOF_DRAFT_HEAD_INFO, 48, 48};  // v3's flags fill padding
constexpr MinSizes kDraftHeadDesc{TDM_V1_SIZEOF_DRAFT_HEAD_DESC, TDM_V2_SIZEOF_DRAFT_HEAD_DESC, 72};
constexpr MinSizes kDrafterDesc{TDM_V1_SIZEOF_DRAFTER_DESC, 96, 96};
constexpr MinSizes kPluginApi{TDM_V1_SIZEOF_PLUGIN_API, 48, 48};
constexpr MinSizes kHostLimits{40, 40, 40};  // [v2]: v1 plugins never pass one

static_assert(sizeof(tdm_tensor_info) == kTensorInfo.v3);
static_assert(sizeof(tdm_tensor_shape) == kTensorShape.v3);
static_assert(sizeof(tdm_op_desc) == kOpDesc.v3);
static_assert(sizeof(tdm_weight_request) == kWeightRequest.v3);
// draft_vocab is ABI 3's: the host writes struct_size, and a plugin built before
// it reads the first 12 bytes (its heads then pick their own draft vocabulary)
static_assert(offsetof(tdm_batch_desc, draft_vocab) == kBatchDesc.v3 && sizeof(tdm_batch_desc) == 16);
static_assert(sizeof(tdm_attention_layer) == kAttentionLayer.v3);
static_assert(sizeof(tdm_recurrent_state) == kRecurrentState.v3);
// flags is ABI 3's: the host writes struct_size, so a plugin of an earlier release
// fills the first 56 bytes and leaves flags 0 (no TDM_MODEL_* flag)
static_assert(offsetof(tdm_model_info, flags) == kModelInfo.v3 && sizeof(tdm_model_info) == 64);
static_assert(sizeof(tdm_arch_desc) == kArchDesc.v3);
static_assert(sizeof(tdm_draft_head_info) == kDraftHeadInfo.v3);
static_assert(offsetof(tdm_draft_head_info, flags) + sizeof(uint32_t) <= kDraftHeadInfo.v2);
static_assert(sizeof(tdm_draft_head_desc) == kDraftHeadDesc.v3);
static_assert(offsetof(tdm_draft_head_desc, source_archs) == kDraftHeadDesc.v2);
static_assert(sizeof(tdm_drafter_desc) == kDrafterDesc.v3);
static_assert(sizeof(tdm_plugin_api) == kPluginApi.v3);
static_assert(sizeof(tdm_host_limits) == kHostLimits.v3);
static_assert(offsetof(tdm_weight_request, parts) == TDM_V1_SIZEOF_WEIGHT_REQUEST);
// Written by the host, read by the plugin up to struct_size: 3.1 appended one field to each.
static_assert(offsetof(tdm_negotiate, plugin_abi_minor) == TDM_V3_0_SIZEOF_NEGOTIATE);
static_assert(TDM_V3_0_SIZEOF_NEGOTIATE == TDM_V1_SIZEOF_NEGOTIATE);
static_assert(offsetof(tdm_host_api, abi_minor) == TDM_V3_0_SIZEOF_HOST_API);

constexpr uint32_t pick(MinSizes m, uint32_t abi) { return abi >= 3 ? m.v3 : abi >= 2 ? m.v2 : m.v1; }

}  // namespace

template <> uint32_t abi_min_size<tdm_tensor_info>(uint32_t abi) { return pick(kTensorInfo, abi); }
template <> uint32_t abi_min_size<tdm_tensor_shape>(uint32_t abi) { return pick(kTensorShape, abi); }
template <> uint32_t abi_min_size<tdm_op_desc>(uint32_t abi) { return pick(kOpDesc, abi); }
template <> uint32_t abi_min_size<tdm_weight_request>(uint32_t abi) { return pick(kWeightRequest, abi); }
template <> uint32_t abi_min_size<tdm_batch_desc>(uint32_t abi) { return pick(kBatchDesc, abi); }
template <> uint32_t abi_min_size<tdm_attention_layer>(uint32_t abi) { return pick(kAttentionLayer, abi); }
template <> uint32_t abi_min_size<tdm_recurrent_state>(uint32_t abi) { return pick(kRecurrentState, abi); }
template <> uint32_t abi_min_size<tdm_model_info>(uint32_t abi) { return pick(kModelInfo, abi); }
template <> uint32_t abi_min_size<tdm_arch_desc>(uint32_t abi) { return pick(kArchDesc, abi); }
template <> uint32_t abi_min_size<tdm_draft_head_info>(uint32_t abi) { return pick(kDraftHeadInfo, abi); }
template <> uint32_t abi_min_size<tdm_draft_head_desc>(uint32_t abi) { return pick(kDraftHeadDesc, abi); }
template <> uint32_t abi_min_size<tdm_drafter_desc>(uint32_t abi) { return pick(kDrafterDesc, abi); }
template <> uint32_t abi_min_size<tdm_plugin_api>(uint32_t abi) { return pick(kPluginApi, abi); }
template <> uint32_t abi_min_size<tdm_host_limits>(uint32_t abi) { return pick(kHostLimits, abi); }

// tdm.encoder came with ABI 3 at version 1: its structs' minimum sizes are version 1's.
static_assert(sizeof(tdm_encoder_desc) == 64 && sizeof(tdm_encoder_info) == 104,
              "tdm.encoder version 1 structs changed size: append fields and keep these minimums");
template <> uint32_t abi_min_size<tdm_encoder_desc>(uint32_t) { return 64; }
template <> uint32_t abi_min_size<tdm_encoder_info>(uint32_t) { return 104; }

std::string plugin_message(const char* buf, size_t cap, std::string_view fallback) {
    if (!buf || cap == 0) return std::string(fallback);
    const size_t n = strnlen(buf, cap);
    if (n == 0) return std::string(fallback);
    return std::string(buf, n);
}

std::string plugin_string(const char* s, size_t max, std::string_view fallback) {
    if (!s) return std::string(fallback);
    const size_t n = strnlen(s, max);
    if (n < max) return std::string(s, n);
    return std::string(s, max) + "...";
}

Result<std::string> plugin_name(const char* s, std::string_view what) {
    if (!s) return Error::coded(TDM_ERR_INVALID_ARGUMENT, "{}: null name", what);
    const size_t n = strnlen(s, kPluginNameMax);
    if (n == 0) return Error::coded(TDM_ERR_INVALID_ARGUMENT, "{}: empty name", what);
    if (n == kPluginNameMax)
        return Error::coded(TDM_ERR_INVALID_ARGUMENT, "{}: name '{}...' is not NUL-terminated within {} bytes", what,
                            std::string(s, 32), kPluginNameMax);
    return std::string(s, n);
}

Result<std::vector<std::string>> plugin_names(const char* const* list, std::string_view what) {
    std::vector<std::string> out;
    for (size_t i = 0; list && list[i]; ++i) {
        if (i == kPluginListMax)
            return Error::coded(TDM_ERR_LIMIT, "{}: more than {} names (is the list NULL-terminated?)", what,
                                kPluginListMax);
        out.push_back(TDM_TRY(plugin_name(list[i], fmt::format("{} entry {}", what, i))));
    }
    return out;
}

}  // namespace tdm
