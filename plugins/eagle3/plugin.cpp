// SPDX-License-Identifier: Apache-2.0
// plugins/eagle3/plugin.cpp: tdm_plugin_negotiate, init and the descriptor table of the eagle3
// plugin: the EAGLE-3 draft head (head/) for the attention targets of the other plugins. The
// plugin speaks ABI 3 only (extension tdm.target_features, own-token outputs). In init it
// checks every op it builds graphs from (query_op) and refuses to register naming the first
// one missing.
#include <tandem/cpp/tandem.hpp>

#include "head/eagle3.h"

namespace eagle3 {
namespace {

using tdm::sdk::DraftHeadDesc;
using tdm::sdk::Err;

constexpr const char* kPluginName = "eagle3";

// llama.cpp spells the type draft-eagle3
const char* const kTypes[] = {"eagle3", "draft-eagle3", nullptr};
// targets whose forward passes can hand out the input of their layers
const char* const kTargets[] = {"llama", "qwen3", "qwen35", "qwen35moe", "glm4", nullptr};
// GGUF general.architecture of a file holding the head alone (HF heads say "llama": they are
// attached with --spec-type eagle3 -md DIR)
// GGUF general.architecture, and the HF "architectures" names of the EAGLE authors' and
// SpecForge's heads (model_type "llama") and of speculators' configs
const char* const kFiles[] = {"eagle3", "LlamaForCausalLMEagle3", "Eagle3Speculator", nullptr};

constexpr tdm_draft_head_desc kHead = DraftHeadDesc("eagle3")
                                          .spec_types(kTypes)
                                          .target_archs(kTargets)
                                          .source_archs(kFiles)
                                          .callbacks(eagle3_create, eagle3_load, eagle3_build_step, eagle3_destroy);

tdm_status init(const tdm_host_api* api, tdm_registry* reg, char* err, size_t err_size) {
    const Err e(err, err_size);
    tdm::sdk::Host host;
    TDM_SDK_TRY(host.init(api, kPluginName, e));
    TDM_SDK_TRY(eagle3_require_ops(host, e));
    return host.register_draft_head(reg, kHead, e);
}

constexpr tdm_plugin_api kPlugin = tdm::sdk::PluginApi(kPluginName)
                                       .version("0.1.0")
                                       .description("the EAGLE-3 draft head (HF and llama.cpp GGUF layouts) for "
                                                    "Llama, Qwen3, Qwen3.5 and GLM-4 targets")
                                       .init(init);

}  // namespace
}  // namespace eagle3

TDM_SDK_PLUGIN_ENTRY(eagle3::kPlugin, 3, 3)
