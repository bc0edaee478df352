// SPDX-License-Identifier: Apache-2.0
// plugins/gemma4/plugin.cpp: tdm_plugin_negotiate, init and the descriptor table of the
// gemma4 plugin: the Gemma 4 text decoder (text/) and its assistant drafter (assistant/). The
// plugin speaks ABI 3 only (stateless draft heads, the [v3] parameters of its ops). In init
// it checks every op it builds graphs from (query_op) and refuses to register naming the
// first one missing.
#include <tandem/cpp/tandem.hpp>

#include "assistant/assistant.h"
#include "text/arch.h"

namespace gemma4 {
namespace {

using tdm::sdk::ArchDesc;
using tdm::sdk::DraftHeadDesc;
using tdm::sdk::Err;

constexpr const char* kPluginName = "gemma4";

const char* const kGguf[] = {"gemma4", nullptr};
const char* const kHf[] = {"gemma4", "gemma4_text", nullptr};
const char* const kAssistantTypes[] = {"assistant", "mtp", "draft-mtp", nullptr};
const char* const kAssistantTargets[] = {"gemma4", nullptr};
const char* const kAssistantFiles[] = {"gemma4-assistant", "gemma4_assistant", nullptr};

constexpr tdm_arch_desc kGemma4 = ArchDesc("gemma4")
                                      .gguf_names(kGguf)
                                      .hf_model_types(kHf)
                                      .callbacks(gemma4_create, gemma4_load, gemma4_build_graph, gemma4_destroy);

constexpr tdm_draft_head_desc kAssistant =
    DraftHeadDesc("gemma4-assistant")
        .spec_types(kAssistantTypes)
        .target_archs(kAssistantTargets)
        .source_archs(kAssistantFiles)
        .callbacks(assistant_create, assistant_load, assistant_build_step, assistant_destroy);

tdm_status init(const tdm_host_api* api, tdm_registry* reg, char* err, size_t err_size) {
    const Err e(err, err_size);
    tdm::sdk::Host host;
    TDM_SDK_TRY(host.init(api, kPluginName, e));
    TDM_SDK_TRY(gemma4_require_ops(host, e));
    TDM_SDK_TRY(assistant_require_ops(host, e));
    TDM_SDK_TRY(host.register_arch(reg, kGemma4, e));
    return host.register_draft_head(reg, kAssistant, e);
}

constexpr tdm_plugin_api kPlugin = tdm::sdk::PluginApi(kPluginName)
                                       .version("0.1.0")
                                       .description("Gemma 4 text decoders (E2B, E4B, 26B-A4B, 31B) and the gemma4-assistant drafter")
                                       .init(init);

}  // namespace
}  // namespace gemma4

TDM_SDK_PLUGIN_ENTRY(gemma4::kPlugin, 3, 3)
