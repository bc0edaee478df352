// SPDX-License-Identifier: Apache-2.0
// plugins/qwen-nextn/plugin.cpp: tdm_plugin_negotiate, init and the descriptor
// tables of the qwen-nextn plugin: Qwen3 dense (qwen3/), Qwen3.5/3.6 qwen35 and
// qwen35moe with their MTP head (qwen35/). The plugin speaks ABI 2 and 3 (with 3 its
// MTP head may declare batched drafting, tandem/ext/batched_draft.h). In
// init it checks, when the host can be asked (query_op), every op it builds
// graphs from, and refuses to register naming the first one missing.
#include <tandem/cpp/tandem.hpp>

#include "qwen3/arch.h"
#include "qwen35/arch.h"

namespace qwen {
namespace {

using tdm::sdk::ArchDesc;
using tdm::sdk::DraftHeadDesc;
using tdm::sdk::Err;

constexpr const char* kPluginName = "qwen-nextn";

const char* const kQwen3Gguf[] = {"qwen3", nullptr};
const char* const kQwen3Hf[] = {"qwen3", nullptr};
const char* const kQwen35Gguf[] = {"qwen35", nullptr};
const char* const kQwen35Hf[] = {"qwen3_5", "qwen3_5_text", nullptr};
const char* const kQwen35MoeGguf[] = {"qwen35moe", nullptr};
const char* const kQwen35MoeHf[] = {"qwen3_5_moe", "qwen3_5_moe_text", nullptr};
const char* const kMtpTypes[] = {"mtp", "nextn", "draft-mtp", nullptr};
const char* const kMtpTargets[] = {"qwen35", "qwen35moe", nullptr};

constexpr tdm_arch_desc kQwen3 = ArchDesc("qwen3")
                                     .gguf_names(kQwen3Gguf)
                                     .hf_model_types(kQwen3Hf)
                                     .callbacks(qwen3_create, qwen3_load, qwen3_build_graph, qwen3_destroy);
constexpr tdm_arch_desc kQwen35 = ArchDesc("qwen35")
                                      .gguf_names(kQwen35Gguf)
                                      .hf_model_types(kQwen35Hf)
                                      .callbacks(qwen35_create, qwen35_load, qwen35_build_graph, qwen35_destroy);
constexpr tdm_arch_desc kQwen35Moe = ArchDesc("qwen35moe")
                                         .gguf_names(kQwen35MoeGguf)
                                         .hf_model_types(kQwen35MoeHf)
                                         .callbacks(qwen35_create, qwen35_load, qwen35_build_graph, qwen35_destroy);
constexpr tdm_draft_head_desc kQwen35Mtp =
    DraftHeadDesc("qwen35-mtp")
        .spec_types(kMtpTypes)
        .target_archs(kMtpTargets)
        .callbacks(qwen35_mtp_create, qwen35_mtp_load, qwen35_mtp_build_step, qwen35_mtp_destroy);

tdm_status init(const tdm_host_api* api, tdm_registry* reg, char* err, size_t err_size) {
    const Err e(err, err_size);
    tdm::sdk::Host host;
    TDM_SDK_TRY(host.init(api, kPluginName, e));
    TDM_SDK_TRY(qwen3_require_ops(host, e));
    TDM_SDK_TRY(qwen35_require_ops(host, e));
    for (const tdm_arch_desc* a : {&kQwen3, &kQwen35, &kQwen35Moe}) TDM_SDK_TRY(host.register_arch(reg, *a, e));
    return host.register_draft_head(reg, kQwen35Mtp, e);
}

constexpr tdm_plugin_api kPlugin =
    tdm::sdk::PluginApi(kPluginName)
        .version("0.1.0")
        .description("Qwen3 dense and Qwen3.5/3.6 hybrid targets with their NextN/MTP heads")
        .init(init);

}  // namespace
}  // namespace qwen

TDM_SDK_PLUGIN_ENTRY(qwen::kPlugin, 2, 3)
