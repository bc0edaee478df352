// SPDX-License-Identifier: Apache-2.0
// plugins/llama/plugin.cpp: tdm_plugin_negotiate, init and the descriptor table of the
// llama plugin: Llama 3.x dense targets (text/), GGUF "llama" and HF LlamaForCausalLM.
// In init it checks, when the host can be asked (query_op), every op it builds graphs
// from, and refuses to register naming the first one missing.
#include <tandem/cpp/tandem.hpp>

#include "text/arch.h"

namespace llama {
namespace {

using tdm::sdk::ArchDesc;
using tdm::sdk::Err;

constexpr const char* kPluginName = "llama";

const char* const kLlamaGguf[] = {"llama", nullptr};
const char* const kLlamaHf[] = {"llama", nullptr};

constexpr tdm_arch_desc kLlama = ArchDesc("llama")
                                     .gguf_names(kLlamaGguf)
                                     .hf_model_types(kLlamaHf)
                                     .callbacks(llama_create, llama_load, llama_build_graph, llama_destroy);

tdm_status init(const tdm_host_api* api, tdm_registry* reg, char* err, size_t err_size) {
    const Err e(err, err_size);
    tdm::sdk::Host host;
    TDM_SDK_TRY(host.init(api, kPluginName, e));
    TDM_SDK_TRY(llama_require_ops(host, e));
    return host.register_arch(reg, kLlama, e);
}

constexpr tdm_plugin_api kPlugin = tdm::sdk::PluginApi(kPluginName)
                                       .version("0.1.0")
                                       .description("Llama 3.x dense targets (GGUF llama, HF LlamaForCausalLM)")
                                       .init(init);

}  // namespace
}  // namespace llama

TDM_SDK_PLUGIN_ENTRY(llama::kPlugin, 2, 3)
