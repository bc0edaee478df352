// SPDX-License-Identifier: Apache-2.0
// plugins/dflash/plugin.cpp: tdm_plugin_negotiate, init and the descriptor table of the dflash
// plugin: the DFlash block draft head (head/) for Qwen3 and Llama targets. The plugin speaks
// ABI 3 only (extensions tdm.target_features and tdm.block_draft). In init it checks every op
// it builds graphs from (query_op) and refuses to register naming the first one missing.
#include <tandem/cpp/tandem.hpp>

#include "head/dflash.h"

namespace dflash {
namespace {

using tdm::sdk::DraftHeadDesc;
using tdm::sdk::Err;

constexpr const char* kPluginName = "dflash";

const char* const kTypes[] = {"dflash", "draft-dflash", nullptr};  // the second: llama.cpp's spelling
// targets whose forward passes can hand out the input of their layers (z-lab's published
// heads are for Qwen3 and Llama 3.1)
const char* const kTargets[] = {"qwen3", "llama", nullptr};
// The names of files holding a DFlash head: GGUF general.architecture "dflash" (llama.cpp's,
// read) and "dflash-draft" (a fork's layout, refused by name in create); z-lab's HF config
// names "DFlashDraftModel" in "architectures" (its model_type is the target's)
const char* const kFiles[] = {"dflash", "dflash-draft", "DFlashDraftModel", nullptr};

constexpr tdm_draft_head_desc kHead = DraftHeadDesc("dflash")
                                          .spec_types(kTypes)
                                          .target_archs(kTargets)
                                          .source_archs(kFiles)
                                          .callbacks(dflash_create, dflash_load, dflash_build_step, dflash_destroy);

tdm_status init(const tdm_host_api* api, tdm_registry* reg, char* err, size_t err_size) {
    const Err e(err, err_size);
    tdm::sdk::Host host;
    TDM_SDK_TRY(host.init(api, kPluginName, e));
    TDM_SDK_TRY(dflash_require_ops(host, e));
    return host.register_draft_head(reg, kHead, e);
}

constexpr tdm_plugin_api kPlugin = tdm::sdk::PluginApi(kPluginName)
                                       .version("0.1.0")
                                       .description("the DFlash block draft head (z-lab's HF layout, llama.cpp's "
                                                    "GGUF) for Qwen3 and Llama targets")
                                       .init(init);

}  // namespace
}  // namespace dflash

TDM_SDK_PLUGIN_ENTRY(dflash::kPlugin, 3, 3)
