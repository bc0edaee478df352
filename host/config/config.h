/* SPDX-License-Identifier: Apache-2.0 */
// host/config/config.h: tandem's settings as a typed struct, read from a TOML file
// (tandem.toml). Every key, its default and the command-line flag that overrides it are
// documented in docs/CONFIG.md; default_config_text() is the same list as a commented file.
// Not here: command-line parsing (cli/args.h), applying settings (engine, device, plugins),
// checks that need a loaded model (whether a chat template name exists, n_ctx vs the
// model's trained length).
//
// Usage:
//   Config cfg = TDM_TRY(load_config(explicit_path));   // search order below, or defaults
//   ... apply command-line overrides to cfg ...
//   TDM_TRY(validate_config(cfg));                       // same range rules as the file
#pragma once

#include "common/error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tdm {

// The shortest context: one KV block (KvPoolConfig::block_size); longer ones are rounded up
// to whole blocks.
constexpr int kMinContextTokens = 16;
// The longest draft: a verify pass holds draft_max + 1 tokens, and the recurrent-state
// checkpoints of a sequence (draft_max + 2 of them) grow with it.
constexpr int kMaxDraftMax = 1024;

struct DeviceConfig {
    std::string select;         // "" = first suitable device; an index ("1") or a name substring
    bool validate = false;      // Vulkan validation layers
    bool profile = false;       // GPU timestamps per dispatch
    uint64_t memory_limit = 0;  // bytes of device memory tandem may use; 0 = no limit
    bool tune = true;           // time the matmul work splits of a model's shapes at its first load on a GPU

    bool operator==(const DeviceConfig&) const = default;
};

struct ModelConfig {
    std::string path;           // target model (GGUF file or safetensors directory)
    std::string draft_path;     // separate draft model
    std::string mtp_head_path;  // MTP / NextN / assistant head shipped as its own file
    std::string mmproj_path;    // an image encoder's weights as their own file; "" = the model's own
    int n_ctx = 4096;           // context length in tokens; 0 = the model's trained length, else >= 16
    std::string kv_type = "f16";  // KV cache element type: "f16" or "f32"
    uint64_t kv_memory = 0;     // KV budget in bytes; > 0 sizes the context to fit it instead of n_ctx
    int n_batch = 512;          // prompt tokens per prefill pass
    bool chat = false;          // interactive chat (conversation) mode
    std::string chat_template;  // built-in template name; "" = detect from the model
    bool check_weights = true;  // refuse weights holding NaN or infinity at load
    // Untimed passes at load that compile what the first tokens would (engine/warmup.h)
    bool warmup = true;
    // Tables read only by token rows (Gemma 4's per-layer embeddings) in host memory:
    // "auto" (a CPU device, or a table of at least host_rows_share of device memory), "on", "off"
    std::string host_rows = "auto";
    float host_rows_share = 0.1f;
    // Q8_0 matmuls with 8-bit activations, in integers: "on" or "off"
    std::string int8_matmul = "off";

    bool operator==(const ModelConfig&) const = default;
};

// Overrides for parts of the chat template. A role's turn renders as
// <role>_prefix + {content} + <role>_suffix; parts not set keep the built-in's.
struct ChatTemplateConfig {
    std::optional<std::string> system_prefix, system_suffix;
    std::optional<std::string> user_prefix, user_suffix;
    std::optional<std::string> assistant_prefix, assistant_suffix;
    std::optional<std::string> generation_prompt;  // opens the assistant's turn

    bool empty() const;  // nothing set
    bool operator==(const ChatTemplateConfig&) const = default;
};

// Defaults equal SamplerParams' (llama.cpp's); a test keeps them in step.
struct SamplingConfig {
    float temperature = 0.8f;     // 0 = greedy
    int top_k = 40;               // 0 = off
    float top_p = 0.95f;          // 1 = off
    float min_p = 0.05f;          // 0 = off
    float repeat_penalty = 1.0f;  // 1 = off
    int repeat_last_n = 64;       // 0 = off, -1 = the whole context
    float presence_penalty = 0.0f;   // 0 = off; -2 .. 2 (OpenAI's)
    float frequency_penalty = 0.0f;  // 0 = off; -2 .. 2 (OpenAI's)
    // llama.cpp's spelling, "TOKEN+BIAS" or "TOKEN-BIAS" (config/logit_bias_text.h)
    std::vector<std::string> logit_bias;
    int64_t seed = -1;            // -1 = random

    bool operator==(const SamplingConfig&) const = default;
};

struct SpeculativeConfig {
    // Drafters to use, in order of preference: "draft", "mtp", "nextn", "ngram-simple",
    // "ngram-map-k", "ngram-map-k4v", "ngram-mod", "ngram-cache", or a plugin's name.
    // Empty = none (unless auto_select finds one); "none" alone says so explicitly.
    std::vector<std::string> type;
    int draft_max = 16;         // most tokens drafted per round (1 .. kMaxDraftMax); the controller's limit
    int draft_min = 0;          // fewer than this proposed: skip the round's draft
    int skip_streak = 0;        // rounds with nothing accepted before one round skips drafting; 0 = off
    bool auto_select = false;   // key "auto": use a drafter the target model carries when type is empty
    // Key "fixed": draft draft_max tokens every round (today's experiments and sweeps) instead
    // of letting the goodput controller choose each round (speculative/goodput.h), which
    // treats draft_max and draft_min as its limits.
    bool fixed = false;
    int ngram_size_n = 12;      // n-gram drafters: length of the lookup key
    int ngram_size_m = 48;      // n-gram drafters: length of the drafted continuation
    int ngram_min_hits = 1;     // n-gram drafters: occurrences needed before drafting from a key
    std::string ngram_cache;    // ngram-cache: static n-gram statistics file
    std::string trace;          // NDJSON acceptance trace file; "" = off
    std::string mtp_hidden = "post-norm";  // MTP heads: the target hidden they read (post-norm, pre-norm)
    // Draft heads: draft logits over the first N token ids only. "auto": N chosen each
    // round from the ids of the sequence's text (speculative/draft_vocab.h); "all" or "0":
    // the whole vocabulary; else N. draft_vocab_count() reads it.
    std::string draft_vocab = "auto";
    // Draft trees, "STEPS,TOPK,NODES" (levels below the round's first token, children per
    // node expanded, nodes in all with the root, at most 64): drafters that grow trees
    // propose one per round (docs/SPECULATIVE.md "Trees"). "" = chains.
    // draft_tree_shape() reads it.
    std::string draft_tree;

    bool operator==(const SpeculativeConfig&) const = default;
};

// speculative.draft_vocab as a count of ids (0 = all); nullopt for "auto" and for a value
// that is neither (which the rules refuse).
std::optional<int64_t> draft_vocab_count(std::string_view value);

// speculative.draft_tree as {steps, topk, nodes}; nullopt for "" and for a value that is
// not three positive integers with nodes in 2 .. 64 (which the rules refuse).
struct DraftTreeSetting {
    uint32_t steps = 0, topk = 0, nodes = 0;
};
std::optional<DraftTreeSetting> draft_tree_shape(std::string_view value);

struct PluginsConfig {
    std::vector<std::string> paths;    // extra directories searched before the built-in ones
    std::vector<std::string> disable;  // plugin names not to load

    bool operator==(const PluginsConfig&) const = default;
};

struct LogConfig {
    std::string level = "warn";  // trace, debug, info, warn, error, off

    bool operator==(const LogConfig&) const = default;
};

// `tandem serve` (docs/SERVER.md).
struct ServerConfig {
    std::string host = "127.0.0.1";
    int port = 8080;              // 0 = any free port
    std::string api_key;          // "" = none
    std::string alias;            // the model's id; "" = the file's name
    int parallel = 4;             // requests generating at once (KV slots)
    int queue = 16;               // requests that may wait for a place
    int timeout = 600;            // seconds a request may wait for a place
    int request_timeout = 0;      // seconds a request may generate; 0 = no limit
    int64_t max_body = int64_t(8) << 20;  // bytes
    int shutdown_timeout = 30;    // seconds admitted requests may run on after SIGTERM
    int max_connections = 256;    // open at once
    int max_connections_per_client = 64;  // open at once from one address
    int max_images = 16;                  // image_url parts and PDF pages in one request
    int64_t max_image_bytes = int64_t(20) << 20;  // their bytes in one request (after base64)

    bool operator==(const ServerConfig&) const = default;
};

// `tandem ocr`: document OCR with an image encoder (GLM-OCR).
struct OcrConfig {
    std::string task = "text";             // text, formula, table, json (prompts of docs/models/glm-ocr.md §4)
    std::string schema;                    // task json: the JSON template of the fields to fill
    std::string output_format = "markdown";  // markdown, json, text
    float pdf_dpi = 200.0f;                // PDF pages are rendered at this resolution
    int n_ctx = 16384;                     // context of each page (an A4 page at 200 dpi is ~5,000 image tokens)

    bool operator==(const OcrConfig&) const = default;
};

struct Config {
    DeviceConfig device;
    ModelConfig model;
    ChatTemplateConfig chat_template;
    SamplingConfig sampling;
    SpeculativeConfig speculative;
    PluginsConfig plugins;
    LogConfig log;
    ServerConfig server;
    OcrConfig ocr;

    bool operator==(const Config&) const = default;
};

// ---- loading ---------------------------------------------------------------------------

// Parses TOML text. `name` labels errors (a path, or "<string>"). On failure the error lists
// every problem, one per line, sorted by line:
//   "tandem.toml: unknown key 'speculative.drft_max' at line 12 (did you mean 'draft_max'?)"
//   "tandem.toml: key 'sampling.top_k' at line 3: expected integer, found string"
//   "tandem.toml: key 'sampling.top_p' at line 4: 1.5 is outside [0, 1]"
//   "tandem.toml: TOML syntax error at line 2, column 9: ..."
Result<Config> load_config_text(std::string_view text, std::string_view name);

// Reads and parses a file; fails if it cannot be read (naming the path and the reason).
Result<Config> load_config_file(const std::string& path);

// The range and consistency rules, for a Config changed after loading (command-line
// overrides). Messages name the key: "sampling.top_p: 1.5 is outside [0, 1]".
Status validate_config(const Config& config);

// Every key the schema knows, "section.key", in documentation order.
std::vector<std::string> config_keys();

// ---- finding the file --------------------------------------------------------------------

// Where find_config looks. from_environment() reads XDG_CONFIG_HOME and HOME, and takes
// sysconf_dir from the TANDEM_SYSCONF_DIR compile definition (default /etc/tandem).
struct ConfigSearchPaths {
    std::string xdg_config_home;  // "" = unset
    std::string home;             // "" = unset
    std::string sysconf_dir;

    static ConfigSearchPaths from_environment();
};

// The default locations, most specific first: $XDG_CONFIG_HOME/tandem/tandem.toml (or
// $HOME/.config/tandem/tandem.toml when XDG_CONFIG_HOME is unset or not absolute), then
// <sysconf_dir>/tandem.toml.
std::vector<std::string> config_search_candidates(const ConfigSearchPaths& where);

// An explicit path must exist and be a file. Without one, the first default location that
// exists; none existing is fine (nullopt: run on defaults). A default location that exists
// but is not a regular file is an error rather than silently skipped.
Result<std::optional<std::string>> find_config(
    const std::optional<std::string>& explicit_path,
    const ConfigSearchPaths& where = ConfigSearchPaths::from_environment());

// find_config, then load_config_file, or the defaults when no file was found.
Result<Config> load_config(const std::optional<std::string>& explicit_path,
                           const ConfigSearchPaths& where = ConfigSearchPaths::from_environment());

// ---- the default file --------------------------------------------------------------------

// A commented tandem.toml listing every key with its default (packaging installs it as
// /etc/tandem/tandem.toml). Loads cleanly as is, and with every "# key = value" line
// uncommented gives the defaults.
std::string_view default_config_text();

}  // namespace tdm
