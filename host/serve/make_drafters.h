/* SPDX-License-Identifier: Apache-2.0 */
// host/serve/make_drafters.h: building the drafter chain (serve/drafter_chain.h) from
// --spec-type / -md and the [speculative] settings, for `tandem serve`, `run`, `chat`, `ocr`
// and `bench`. Not how a built chain is handed to requests (serve/drafter_chain.h).
//
// In the serving module, not in cli/, so that a front end other than the CLI can build the
// chain it serves with (serving must not depend on the CLI); the CLI's commands build theirs
// here too. What the builder needs from the program (its settings, plugins, device, model
// loading and KV sizing) comes through DrafterHost, which the CLI's App implements.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "config/config.h"
#include "kv/kv_pool.h"
#include "model/model.h"
#include "plugin/registry.h"
#include "serve/drafter_chain.h"

namespace tdm {

namespace vk {
class Device;
class PipelineManager;
}  // namespace vk

// What building drafters needs from the program it runs in.
class DrafterHost {
public:
    virtual ~DrafterHost() = default;
    virtual const Config& config() const = 0;
    virtual Result<Registry*> registry() = 0;
    virtual Result<vk::Device*> device() = 0;
    virtual Result<vk::PipelineManager*> pipelines() = 0;
    // A draft model (-md), loaded as the program loads its models.
    virtual Result<std::unique_ptr<Model>> load_model(const std::string& path) = 0;
    // A KV pool sized from the settings for a model (speculative: room for verify passes).
    virtual Result<std::unique_ptr<KvPool>> make_kv(const Model& model, bool speculative, uint32_t n_seq = 1) = 0;
};

// Whether a loaded plugin has a draft head for the target's architecture (the
// file may still lack its layers).
Result<bool> draft_head_available(DrafterHost& host, const Model& target);

// Creates the drafters for `target` in the configured order. Errors: an
// unknown type (the message lists what the plugins provide), `draft` without
// a draft model, an incompatible draft vocabulary, a draft head the file does
// not carry. `target_kv` is the pool draft heads may read. With no type given,
// the head the model carries (MTP/NextN) drafts if --spec-auto asks for it, or
// by default when `carried_head_by_default` (tandem chat) and speculation is
// not off; a head that cannot be built then means plain decoding.
// `sequences`: how many sequences may draft at once (a draft head's KV holds one each).
Result<DrafterChain> make_drafters(DrafterHost& host, const Model& target, const KvPool& target_kv,
                                   bool carried_head_by_default = false, uint32_t sequences = 1);

}  // namespace tdm
