/* SPDX-License-Identifier: Apache-2.0 */
// tests/fuzz/metadata_queries.h: asks a model source for a key through every metadata
// accessor of the plugin host API (tdm_host_api.meta_*), as a plugin's hparams reader does,
// and checks what comes back. Shared by the GGUF and the HF config harnesses.
#pragma once

#include "formats/model_source.h"

#include <string_view>

namespace tdm::fuzz {

// Every accessor for `key`; aborts (FUZZ_CHECK) when an answer breaks the API's contract.
void query_metadata(const ModelSource& source, std::string_view key);

// The keys the in-tree plugins read (plugins/qwen-nextn), as GGUF and as config.json spell them.
void query_plugin_keys(const ModelSource& source);

}  // namespace tdm::fuzz
