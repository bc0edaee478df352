/* SPDX-License-Identifier: Apache-2.0 */
// tests/models/gemma4/gemma4_assistant_harness.h: a Gemma 4 target and its assistant, loaded from files
// (whoever wrote them: the tests' own writers, gemma4_tiny_assistant.h, or the gemma4
// synthesizer), the assistant as the target's draft head, and the two end-to-end checks every
// such pair must pass:
//   - its drafts after rounds that accepted 0..k drafts equal the independent reference's
//     (tests/support/gemma4_assistant_reference.h);
//   - greedy speculative output with it equals plain greedy output, on prompts and generations
//     that cross the sliding window.
// Both with the target's sliding-window layers in rings of 32 positions (passes of at most 16
// rows), so the assistant's reads of the target's window cross the ring's wrap.
//
//   AssistantPair p = load_assistant_pair(dir + "/t.gguf", dir + "/a.gguf");
//   check_drafts_match_reference(p, "tiny-e2b gguf");
//   check_speculative_equals_plain(p, "tiny-e2b gguf", 4);
#pragma once

#include "kv/kv_pool.h"
#include "model/model.h"
#include "plugin/registry.h"
#include "speculative/draft_head.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tdm::test::g4 {

struct AssistantPair {
    std::string target_path, assistant_path;
    std::unique_ptr<Model> model;
    std::unique_ptr<KvPool> kv;  // 256 positions, sliding-window layers in rings
};

// Loads the target (test failures on error; model or kv is then null).
AssistantPair load_assistant_pair(const std::string& target_path, const std::string& assistant_path);

// The assistant file as the target's draft head, found by the file's architecture as the CLI
// finds it.
Result<std::unique_ptr<DraftHeadDrafter>> make_assistant(const AssistantPair& p);

// The checks above; `what` names the case in failure messages. n_prompts of 3, 12, 21, 30
// tokens (at most 4), 40 tokens generated each.
void check_drafts_match_reference(AssistantPair& p, const std::string& what);
void check_speculative_equals_plain(AssistantPair& p, const std::string& what, int n_prompts);

}  // namespace tdm::test::g4
