// SPDX-License-Identifier: Apache-2.0
// host/cli/cli_spec.cpp: every command and option of the `tandem` CLI, with the
// help text users read. llama.cpp spellings where an option exists there
// (-m, -p, -n, -c, -b, -md, --temp, --draft-max, --spec-type ...).
#include "cli/commands.h"

#include <limits>

namespace tdm::cli {
namespace {

using K = ValueKind;

// The ranges below are what each value's consumer holds: a Config int, an int32 token
// count, a uint32 KV length. A value outside is refused, never wrapped.
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

OptionSpec ranged(OptionSpec o, int64_t min_value, int64_t max_value) {
    o.min_value = min_value;
    o.max_value = max_value;
    return o;
}

OptionSpec one_of(OptionSpec o, std::vector<std::string> choices) {
    o.choices = std::move(choices);
    return o;
}

OptionSpec output_format(std::string help) {
    return one_of({{"--output-format"}, K::string, "FMT", std::move(help), "text"}, {"text", "json"});
}

// The same option in `run`, `bench` and `info`.
OptionSpec draft_max_option(std::string help) {
    return ranged({{"--draft-max", "--draft", "--draft-n"}, K::integer, "N", std::move(help), "16", "", false, false,
                   "draft-max"},
                  1, kMaxDraftMax);
}

OptionGroup global_options() {
    return {"global",
            {
                {{"-v", "--version"}, K::flag, "", "Print the version, the plugin ABI versions this host loads and "
                 "the git commit it was built from, then exit."},
                {{"--config"}, K::string, "FILE", "Read settings from this TOML file instead of the first of "
                 "$XDG_CONFIG_HOME/tandem/tandem.toml and /etc/tandem/tandem.toml. Command-line options override it."},
                {{"-dev", "--device"}, K::string, "SEL", "Vulkan device: an index from `tandem devices` or part of "
                 "its name. Default: the best device (a GPU before a CPU device such as lavapipe).", "", "TANDEM_DEVICE"},
                {{"--validate"}, K::flag, "", "Enable the Vulkan validation layer (slow; reports API misuse).", "",
                 "TANDEM_VALIDATE"},
                {{"--profile"}, K::flag, "", "Time every GPU dispatch and print a per-op table at the end.", "",
                 "TANDEM_PROFILE"},
                {{"--profile-json"}, K::string, "FILE", "Time every GPU dispatch and write each run of a graph (a "
                 "forward pass, a draft step) to FILE as one JSON line, node by node: op, shape, weight type, "
                 "workgroups, bytes read, microseconds, GB/s."},
                {{"--no-tune"}, K::flag, "", "Do not time the matmul work splits of a model's shapes at its first "
                 "load on a GPU (see `tandem tune`); the defaults or an earlier tuning are used."},
                {{"--memory-limit"}, K::string, "SIZE", "Most device memory tandem may allocate (\"8GiB\"); "
                 "a model whose weights and KV cache exceed it is refused before loading, and any allocation beyond "
                 "it fails with an error naming it."},
                {{"--plugin-path"}, K::string, "DIR", "Also search this directory for plugins (repeatable); searched "
                 "before TANDEM_PLUGIN_PATH and the install directory.", "", "", false, true},
                {{"--plugin-disable"}, K::string, "NAME", "Do not load the plugin of this name (repeatable).", "", "",
                 false, true},
                {{"--no-plugin-scan"}, K::flag, "", "Open plugins in this process without first loading each in a "
                 "child process (for trusted plugin directories; a crashing plugin then takes tandem down).", "",
                 "TANDEM_NO_PLUGIN_SCAN"},
                one_of({{"--log-level"}, K::string, "LEVEL", "trace, debug, info, warn, error or off.", "",
                        "TANDEM_LOG"},
                       {"trace", "debug", "info", "warn", "error", "off"}),
            }};
}

OptionGroup model_options() {
    return {"model",
            {
                {{"-m", "--model"}, K::string, "FILE", "Model: a GGUF file or a Hugging Face directory "
                 "(config.json + *.safetensors + tokenizer.json). Default: [model] path of the config file."},
                ranged({{"-c", "--ctx-size"}, K::integer, "N", "Context length in tokens (KV cache size): 0 = the "
                        "model's trained length, otherwise at least 16 (one KV block), rounded up to a multiple of "
                        "16. A context whose KV cache and weights do not fit the device's memory is refused with the largest that "
                        "does.", "4096"},
                       0, kInt32Max),
                {{"--kv-memory"}, K::string, "SIZE", "Size the KV cache by memory instead (\"2GiB\"); not together "
                 "with -c."},
                one_of({{"--kv-type"}, K::string, "TYPE", "KV cache element type: f16 or f32.", "f16"}, {"f16", "f32"}),
                ranged({{"-b", "--batch-size"}, K::integer, "N", "Prompt tokens per prefill pass.", "512"}, 1,
                       kInt32Max),
                {{"--no-check-weights"}, K::flag, "", "Load weights even if they hold NaN or infinity (skips the "
                 "scan that otherwise refuses such a model)."},
                one_of({{"--host-rows"}, K::string, "MODE", "Tables read only by token rows (Gemma 4 E2B/E4B's "
                        "per-layer embeddings) in host memory, uploading the rows of each batch: on, off, or auto "
                        "(on a CPU device, and on a GPU for a table of at least --host-rows-share of its memory).",
                        "auto"},
                       {"auto", "on", "off"}),
                {{"--host-rows-share"}, K::number, "F", "With --host-rows auto: the share of device memory from "
                 "which a table stays in host memory.", "0.1"},
                one_of({{"--int8-matmul"}, K::string, "MODE", "on: multiply Q8_0 weights with activations "
                        "quantized to 8 bits, in integers (as llama.cpp's CPU backend does). Plain and speculative "
                        "decoding still give the same tokens; the logits move by the error of 8-bit activations. "
                        "Off by default: slower than f32 activations on lavapipe (docs/BENCHMARKS.md).",
                        "off"},
                       {"on", "off"}),
            }};
}

OptionGroup prompt_options() {
    return {"prompt",
            {
                {{"-p", "--prompt"}, K::string, "TEXT", "Prompt text (one of -p, -f, --prompt-tokens)."},
                {{"-f", "--file"}, K::string, "FILE", "Read the prompt from a file."},
                ranged({{"--prompt-tokens"}, K::size_list, "IDS", "Prompt given as token ids (\"1,2,3\"); needs no "
                        "tokenizer."},
                       0, kInt32Max),
                {{"--chat", "-cnv", "--conversation"}, K::flag, "", "Wrap the prompt in the model's chat template "
                 "as one user turn and open the assistant's turn.", "", "", false, false, "chat"},
                {{"--no-chat", "-no-cnv", "--no-conversation"}, K::flag, "", "Use the prompt as it is, even when the "
                 "config file sets [model] chat = true.", "", "", false, false, "no-chat"},
                {{"-sys", "--system-prompt"}, K::string, "TEXT", "System message for --chat."},
                {{"--chat-template"}, K::string, "NAME", "Built-in template: chatml, chatml-thinking, "
                 "chatml-no-thinking, gemma, gemma4, glm4, llama3 (default: the model's family)."},
            }};
}

// n_predict: the -n entry (`tandem chat` bounds each reply, by default not at all).
OptionGroup generation_options(OptionSpec n_predict = ranged({{"-n", "--n-predict"}, K::integer, "N", "Tokens to "
                                                              "generate; -1 = until end of generation or a full "
                                                              "context (other negative values are refused).", "128"},
                                                             -1, kInt32Max)) {
    return {"generation",
            {
                n_predict,
                {{"--ignore-eos"}, K::flag, "", "Do not stop at end-of-generation tokens (the tokenizer's eos and end-of-turn "
                 "tokens, and an HF checkpoint's eos_token_id lists in config.json and generation_config.json)."},
                {{"--temp"}, K::number, "T", "Temperature; 0 = greedy (always the likeliest token).", "0.8"},
                ranged({{"--top-k"}, K::integer, "N", "Keep the N likeliest tokens; 0 = off.", "40"}, 0, kInt32Max),
                {{"--top-p"}, K::number, "P", "Keep the likeliest tokens up to probability mass P; 1 = off.", "0.95"},
                {{"--min-p"}, K::number, "P", "Drop tokens below P x the likeliest token's probability; 0 = off.",
                 "0.05"},
                {{"--repeat-penalty"}, K::number, "X", "Penalise recently seen tokens; 1 = off.", "1.0"},
                ranged({{"--repeat-last-n"}, K::integer, "N", "Window of the repeat penalty; -1 = all, 0 = off.",
                        "64"},
                       -1, kInt32Max),
                {{"--presence-penalty"}, K::number, "X", "OpenAI's presence penalty (-2 .. 2): subtract X from the logit "
                 "of every token already in the reply; 0 = off.", "0.0"},
                {{"--frequency-penalty"}, K::number, "X", "OpenAI's frequency penalty (-2 .. 2): subtract X times the "
                 "number of times a token is already in the reply; 0 = off.", "0.0"},
                {{"-l", "--logit-bias"}, K::string, "TOKEN(+|-)BIAS", "Add BIAS (-100 .. 100) to the token's logit, "
                 "such as 15043+1 or 2-100 (repeatable).", "", "", false, true},
                ranged({{"-s", "--seed"}, K::integer, "N", "Random seed; -1 = random (the seed used is printed).",
                        "-1"},
                       -1, kInt64Max),
                {{"--no-warmup"}, K::flag, "", "Skip the warm-up at load: a few untimed passes on a scratch "
                 "sequence (the decode step; with drafters their first round, and for n-gram drafters verify "
                 "passes of 2, 4 and 8 rows) that compile what the first tokens would otherwise wait for. The output is the same "
                 "either way; its time is reported (warmup_ms)."},
            }};
}

OptionGroup speculative_options() {
    return {"speculative decoding",
            {
                {{"-md", "--model-draft", "--draft-model"}, K::string, "FILE", "A small draft model with the same "
                 "vocabulary (speculative type `draft`), or a drafter's own file such as a Gemma 4 assistant or "
                 "an EAGLE-3 or DFlash head, GGUF or HF directory (drafts as that head, found by the file's "
                 "architecture; name it with --spec-type eagle3|dflash if the directory's config.json does not).", "", "", false, false, "model-draft"},
                {{"--mtp-head"}, K::string, "FILE", "An MTP/NextN head shipped as its own file (speculative type "
                 "mtp); by default the head is read from the target's own file."},
                {{"--spec-type"}, K::string, "LIST", "Drafters to use, comma-separated, in order of preference (the goodput "
                 "controller asks first the one measured to pay best; --spec-fixed: in this order): draft, "
                 "ngram-simple, ngram-map-k, ngram-map-k4v, ngram-mod, ngram-cache, mtp (also nextn, draft-mtp), "
                 "or one a plugin registers. `tandem plugins` lists them. none: plain decoding (turns off tandem "
                 "chat's default, the model's own draft head)."},
                draft_max_option(fmt::format("Most tokens drafted per round (at most {}): the limit of the "
                                             "draft length the controller chooses, or the length itself with "
                                             "--spec-fixed.", kMaxDraftMax)),
                ranged({{"--draft-min", "--draft-n-min"}, K::integer, "N", "Skip drafting when fewer than N are "
                        "proposed (at most --draft-max); the controller never asks for fewer.", "0", "", false,
                        false, "draft-min"},
                       0, kMaxDraftMax),
                ranged({{"--spec-skip-streak"}, K::integer, "N", "After N rounds with nothing accepted, do one plain "
                        "step before drafting again; 0 = off.", "0"},
                       0, kInt32Max),
                {{"--spec-auto"}, K::flag, "", "Without --spec-type, draft with the head the model carries "
                 "(MTP/NextN) if it has one. The draft length is the goodput controller's, as by default: "
                 "each round it drafts as far as measured acceptance and cost say pays (a draft head starts "
                 "with a trial of 1, an n-gram drafter at its match), and stops drafting when it does not."},
                {{"--spec-fixed"}, K::flag, "", "Draft --draft-max tokens every round instead of letting the "
                 "goodput controller choose (experiments, sweeps of the draft length)."},
                one_of({{"--mtp-hidden"}, K::string, "WHICH", "MTP heads: the target hidden they read: post-norm "
                        "(llama.cpp, vLLM) or pre-norm (mlx-lm).", "post-norm"},
                       {"post-norm", "pre-norm"}),
                {{"--draft-vocab"}, K::string, "N|auto|all", "MTP heads: draft over the first N token ids only "
                 "(cheaper LM head; output unchanged). auto: each round, the smallest prefix (4096, 6144, 8192, "
                 "...) outside which at most 5% of the sequence's last 1024 tokens lie; all (or 0): every id.",
                 "auto"},
                {{"--draft-tree"}, K::string, "STEPS,TOPK,NODES", "Draft trees: drafters that grow them "
                 "(ngram-simple, ngram-map-k4v, draft heads, draft models, bench spec --force-acceptance) "
                 "propose up to STEPS levels, TOPK children per node, NODES nodes (2 to 64, the round's first "
                 "token included), verified in one pass, greedy or sampling. Under the goodput controller a "
                 "CPU device verifies chains and a GPU measures which pays; --spec-fixed forces trees."},
                {{"--spec-trace"}, K::string, "FILE", "Write one JSON line per speculative round."},
                ranged({{"--spec-ngram-size-n"}, K::integer, "N", "n-gram drafters: length of the lookup key.",
                        "12"},
                       1, kInt32Max),
                ranged({{"--spec-ngram-size-m"}, K::integer, "N", "n-gram drafters: length of the drafted "
                        "continuation.", "48"},
                       1, kInt32Max),
                ranged({{"--spec-ngram-min-hits"}, K::integer, "N", "n-gram drafters: occurrences before a key "
                        "drafts.", "1"},
                       1, kInt32Max),
                {{"-lcs", "--lookup-cache-static", "--spec-ngram-cache"}, K::string, "FILE", "ngram-cache: static "
                 "n-gram statistics file (created if absent, saved at exit).", "", "", false, false,
                 "lookup-cache-static"},
            }};
}

OptionGroup prompt_cache_options() {
    return {"prompt cache",
            {
                {{"--prompt-cache"}, K::string, "FILE", "Save the processed prompt's state (KV, recurrent states, "
                 "drafter state) to FILE, zstd-compressed; a later run whose prompt starts with the same tokens "
                 "restores it and prefills only the rest. A file for another model or KV type, or a corrupt one, is "
                 "refused with a warning (and replaced)."},
                {{"--prompt-cache-ro"}, K::flag, "", "With --prompt-cache: read FILE but never write it."},
            }};
}

OptionGroup output_options() {
    return {"output",
            {
                output_format("text, or json (one JSON object with tokens, text, timings and statistics)."),
                {{"--dump-logits"}, K::string, "FILE", "Write raw little-endian f32 logits: one row of n_vocab for "
                 "each generated token (row i produced token i; the first is the prompt's last position)."},
                {{"--logits-all"}, K::flag, "", "With --dump-logits: first a row for every prompt position."},
            }};
}

// Images for a model with an image encoder (`run --image`, `ocr`).
OptionSpec mmproj_option() {
    return {{"--mmproj"}, K::string, "FILE", "The image encoder's weights as their own file (llama.cpp calls it the "
            "multimodal projector). Default: the model's own (GLM-OCR's HF directory holds its vision tower)."};
}

}  // namespace

const ProgramSpec& program_spec() {
    static const ProgramSpec spec = [] {
        ProgramSpec p;
        p.name = "tandem";
        p.summary = "A Vulkan LLM inference runtime built around speculative decoding: a drafter proposes tokens, the "
                    "target verifies them in one batched pass, and the output is exactly what the target alone "
                    "would produce. Models, drafters and draftless drafters are plugins (`tandem plugins`). "
                    "Run `tandem demo` for a first look, or `tandem COMMAND --help` for a command's options.";
        p.global = {global_options()};
        p.no_command_flag = "version";

        CommandSpec run{"run", "generate text from a model (plain or speculative)",
                        "Generate from a prompt. Greedy with --temp 0. With a drafter (-md FILE or --spec-type) the "
                        "output is identical to plain decoding, only faster. Prints the text, then timings and "
                        "speculative statistics on stderr; --output-format json prints one JSON object instead."};
        run.groups = {model_options(), prompt_options(), generation_options(), speculative_options(),
                      prompt_cache_options(), output_options(),
                      {"output constraint",
                       {{{"--grammar"}, K::string, "FILE|TEXT", "The output must be a sentence of this GBNF "
                         "grammar (llama.cpp's format): a file, or the grammar itself. Each token is chosen among "
                         "those the grammar allows, and generation stops once the output is complete (stop: "
                         "constraint). Greedy output is the same with and without drafters."},
                        {{"--json-schema"}, K::string, "FILE|TEXT", "The output must be JSON valid against this "
                         "schema: a file, or the schema itself. As --grammar otherwise."}}},
                      {"images",
                       {{{"--image"}, K::string, "FILE", "A PNG or JPEG image for a model with an image encoder "
                         "(GLM-OCR); repeat for several. The images come first in one user turn of the chat "
                         "template, then the -p/-f text. `tandem ocr` reads PDFs and runs page by page.",
                         "", "", false, true},
                        mmproj_option()}}};

        CommandSpec ocr{"ocr", "read documents with an OCR model (GLM-OCR): images and PDFs, page by page",
                        "Document OCR. Each PNG or JPEG file is one page, each PDF one page per page (rendered at "
                        "--pdf-dpi); every page is one prompt: the page's image and the task's prompt (Text "
                        "Recognition:, Formula Recognition:, Table Recognition:, or fields of a JSON template), "
                        "decoded greedily unless --temp is given, until the end of the answer (-n limits it). With "
                        "a drafter (--spec-type mtp: GLM-OCR's own MTP layer) the text is identical, only faster. "
                        "Pages come out as they are done: markdown (a heading per page when there are several), "
                        "text (pages separated by form feeds), or json (one document: per page text, tokens, "
                        "image size and tokens, timings of render, preprocess, encode, prefill and decode, and "
                        "speculative statistics). A page that fails is reported on stderr and the others still "
                        "come out; the exit status is then 1. Defaults come from [ocr] in the config file."};
        ocr.groups = {model_options(),
                      {"ocr",
                       {mmproj_option(),
                        one_of({{"--task"}, K::string, "TASK", "What to read: text, formula, table, or json (fill the "
                                "fields of --schema).", "text"},
                               {"text", "formula", "table", "json"}),
                        {{"--schema"}, K::string, "JSON", "--task json: a JSON template of the fields to fill, with "
                         "empty values ('{\"name\": \"\", \"total\": \"\"}')."},
                        one_of({{"--output-format"}, K::string, "FMT", "markdown, text, or json.", "markdown"},
                               {"markdown", "text", "json"}),
                        {{"-o", "--output"}, K::string, "FILE", "Write the result to FILE instead of stdout."},
                        {{"--pdf-dpi"}, K::number, "DPI", "Resolution PDF pages are rendered at (GLM-OCR's SDK uses "
                         "200).", "200"}}},
                      generation_options(ranged({{"-n", "--n-predict"}, K::integer, "N", "Most tokens per page; -1 = "
                                                  "until the end of the answer or a full context.", "-1"},
                                                 -1, kInt32Max)),
                      speculative_options()};
        ocr.positionals = {{"FILE", "PNG, JPEG or PDF files.", true, true}};

        CommandSpec chat{"chat", "talk with a model: multi-turn, streaming, speculative by default",
                         "An interactive conversation in the model's chat template. Each turn resumes from the KV "
                         "cache of the previous ones, so only the new text is prefilled; replies stream as they "
                         "come, and are the tokens `tandem run` gives for the whole conversation so far. "
                         "Speculative decoding is on by default when the model carries a draft head (MTP/NextN); "
                         "-md or --spec-type choose drafters, --spec-type none turns it off. Ctrl-C stops the "
                         "current reply (what was generated stays in the conversation); Ctrl-D or Ctrl-C at the "
                         "prompt ends the session (exit status 0). A line ending in \\ continues on the next. "
                         "Commands: /help, /clear (forget the conversation and the KV cache), /stats (speculative "
                         "statistics so far), /exit. When standard input is not a terminal, each line is a message "
                         "(or a command) and each reply is printed followed by a newline, without prompts; --json "
                         "prints one JSON object per line instead: per turn turn, n_prompt, prompt_tokens, "
                         "n_cached, tokens, text, stop_reason, timings and speculative; per command command and "
                         "output or error."};
        chat.groups = {model_options(),
                       {"chat",
                        {{{"-sys", "--system-prompt"}, K::string, "TEXT", "System message at the start of the "
                          "conversation (kept by /clear)."},
                         {{"--chat-template"}, K::string, "NAME", "Built-in template: chatml, chatml-thinking, "
                          "chatml-no-thinking, gemma, gemma4, glm4, llama3 (default: the model's family)."},
                         {{"--json"}, K::flag, "", "One JSON object per turn and per command on stdout (NDJSON)."}}},
                       generation_options(ranged({{"-n", "--n-predict"}, K::integer, "N", "Most tokens per reply; "
                                                   "-1 = until the end of the turn or a full context.", "-1"},
                                                  -1, kInt32Max)),
                       speculative_options()};

        CommandSpec serve{"serve", "serve a model over an OpenAI-compatible HTTP API",
                          "Serve the model over HTTP: POST /v1/chat/completions and /v1/completions (OpenAI's API, "
                          "whole or streamed as server-sent events), GET /v1/models, llama-server's POST /tokenize "
                          "and /detokenize, GET /health and Prometheus GET /metrics. Up to --parallel requests run "
                          "at once, batched into one forward pass per step, each in a KV slot of --ctx-size tokens; "
                          "a finished request's slot keeps its KV, so a request sharing a prefix with an earlier "
                          "one (a conversation's next turn, the same system prompt) prefills only what is new. Up "
                          "to --queue more wait, and beyond that the answer is 503 with Retry-After. Speculative "
                          "decoding as in `tandem chat` (the model's draft head by default, drafting for every request, "
                          "in one graph per step where the head allows it); a request may turn it off or pick a "
                          "loaded drafter with \"speculative\": {\"type\": NAME, \"draft_max\": N}. "
                          "A model with an image encoder (GLM-OCR, or --mmproj) reads images in chat requests as "
                          "image_url parts with data: URLs (PNG or JPEG), and PDFs as file parts (each page an image, "
                          "rendered at --pdf-dpi); URLs are never fetched. "
                          "The generation options below are the defaults a request's fields override. SIGTERM or "
                          "Ctrl-C stops accepting requests, finishes the admitted ones and exits. See docs/SERVER.md."};
        serve.groups = {model_options(),
                        {"server",
                         {{{"--host"}, K::string, "ADDR", "Address to listen on (0.0.0.0: every interface).",
                           "127.0.0.1"},
                          ranged({{"--port"}, K::integer, "N", "TCP port; 0 = any free port (printed).", "8080"}, 0,
                                 65535),
                          {{"--api-key"}, K::string, "KEY", "Require 'Authorization: Bearer KEY' on every endpoint "
                           "but /health.", "", "TANDEM_API_KEY"},
                          {{"--alias"}, K::string, "NAME", "The model's id in /v1/models and responses (default: the "
                           "model file's name)."},
                          ranged({{"-np", "--parallel"}, K::integer, "N", "Requests generating at once, each "
                                  "in a KV slot of --ctx-size tokens (KV memory grows with N).", "4"},
                                 1, 256),
                          ranged({{"--queue"}, K::integer, "N", "Requests that may wait for a place to run; more "
                                  "get 503.", "16"},
                                 0, 4096),
                          ranged({{"--timeout"}, K::integer, "SECONDS", "Longest wait in the queue before a 503.",
                                  "600"},
                                 1, 86400),
                          ranged({{"--request-timeout"}, K::integer, "SECONDS", "Longest a request may spend in the engine "
                                  "(from leaving the queue: KV wait, prefill, generation); past it the answer is what it made so far, finish_reason \"length\" (0: no limit).",
                                  "0"},
                                 0, 86400),
                          ranged({{"--max-body"}, K::integer, "BYTES", "Largest request body; a larger one gets 413.",
                                  "8388608"},
                                 1024, int64_t(1) << 30),
                          ranged({{"--shutdown-timeout"}, K::integer, "SECONDS", "On SIGTERM or SIGINT: stop "
                                  "accepting, close idle and slow connections at once, let the admitted requests "
                                  "finish for up to this long, then cut them and exit.", "30"},
                                 0, 86400),
                          ranged({{"--max-connections"}, K::integer, "N", "Connections open at once; more are "
                                  "answered 503 and closed.", "256"},
                                 1, 65536),
                          ranged({{"--max-connections-per-client"}, K::integer, "N", "Connections open at once "
                                  "from one client address; more are answered 503 and closed.", "64"},
                                 1, 65536),
                          ranged({{"--max-images"}, K::integer, "N", "Images (image_url parts and PDF pages) one "
                                  "chat request may hold, for a model with an image encoder; more get 400.", "16"},
                                 0, 1024),
                          ranged({{"--max-image-bytes"}, K::integer, "BYTES", "Bytes of one request's images and "
                                  "files in all (after base64); more get 400.", "20971520"},
                                 0, int64_t(1) << 30),
                          {{"--pdf-dpi"}, K::number, "DPI", "Resolution the pages of a chat request's PDF file "
                           "parts are rendered at, as `tandem ocr` renders them (GLM-OCR's SDK uses 200).", "200"},
                          mmproj_option(),
                          {{"--chat-template"}, K::string, "NAME", "Built-in template: chatml, chatml-thinking, "
                           "chatml-no-thinking, gemma, gemma4, glm4, llama3 (default: the model's family)."}}},
                        generation_options(ranged({{"-n", "--n-predict"}, K::integer, "N", "Default max_tokens; -1 "
                                                    "= until the end of the turn or a full context.", "-1"},
                                                   -1, kInt32Max)),
                        speculative_options()};

        CommandSpec info{"info", "describe a model file: architecture, plugin, hyper-parameters, tensors, tokenizer",
                         "Describe a model file: its architecture and the plugin that handles it, the "
                         "hyper-parameters, the tensor table (names, shapes, types), the quantization mix and the "
                         "tokenizer. Needs no device."};
        info.groups = {{"info",
                        {{{"--tensors"}, K::flag, "", "List every tensor (default: the first and last 8)."},
                         ranged({{"--draft-max"}, K::integer, "N", "Size the recurrent-state checkpoints shown for "
                                 "speculative decoding with this draft length.", "16", "", false, false,
                                 "draft-max"},
                                1, kMaxDraftMax),
                         output_format("text or json.")}}};
        info.positionals = {{"FILE", "GGUF file or Hugging Face directory."}};

        CommandSpec tokenize{"tokenize", "print the tokens of a text",
                             "Tokenize TEXT with a model's tokenizer (-m) or a tokenizer.json (--tokenizer) and "
                             "print one token per line: id and piece. Special-token text such as <|im_start|> is "
                             "matched."};
        tokenize.groups = {{"tokenize",
                            {{{"-m", "--model"}, K::string, "FILE", "Use this model's tokenizer (default: [model] "
                              "path of the config file)."},
                             {{"--tokenizer"}, K::string, "FILE", "Use a tokenizer.json (or a directory holding one)."},
                             {{"--ids"}, K::flag, "", "Print only the ids, comma-separated."},
                             {{"--add-special"}, K::flag, "", "Add BOS/EOS as the tokenizer does for a whole prompt."},
                             {{"--no-parse-special"}, K::flag, "", "Treat special-token text as plain text."},
                             output_format("text or json.")}}};
        tokenize.positionals = {{"TEXT", "Text to tokenize.", true, true}};

        CommandSpec plugins{"plugins", "list the loaded plugins, their ABI versions and what they register",
                            "List the plugins found on the search path, their ABI versions and what each registers "
                            "(architectures, draft heads, drafters). Each plugin is first loaded in a child process "
                            "(`tandem __scan-plugin`), whose report is cached by file in $XDG_CACHE_HOME/tandem/"
                            "plugin-scan.json; this command lists those reports and opens no plugin itself. A plugin "
                            "that crashes, hangs (TANDEM_PLUGIN_SCAN_TIMEOUT seconds, default 10), takes more memory "
                            "(TANDEM_PLUGIN_SCAN_MEMORY MiB, default 4096) or CPU time or fails to load "
                            "there is listed with the reason and never loaded; other commands open only the plugins "
                            "they use. --no-plugin-scan opens them all in this process instead."};
        plugins.groups = {{"plugins", {output_format("text or json.")}}};

        CommandSpec devices{"devices", "list the Vulkan devices and their capabilities",
                            "List the Vulkan devices with the capabilities tandem uses, and mark the one it would "
                            "pick."};
        devices.groups = {{"devices", {output_format("text or json.")}}};

        CommandSpec synth{"synth", "write a synthetic model with random weights in a real layout",
                          "Write a model with random weights in the exact layout of a real architecture (tensor "
                          "names, metadata, tokenizer), for demos, tests and benchmarks. The synthesizer of the "
                          "plugin that provides the architecture writes it (`tandem plugins` lists them)."};
        synth.groups = {{"synth",
                         {{{"--arch"}, K::string, "ARCH", "Architecture: qwen3, qwen35, qwen35moe, gemma4, "
                           "gemma4-assistant, glm4, llama, eagle3 or dflash (in-tree), or any whose plugin has a synthesizer.", "qwen3"},
                          {{"--preset"}, K::string, "NAME",
                           "Shape. qwen3: tiny, small, or 0.6b (Qwen3-0.6B's shape); qwen35: tiny or 0.8b "
                           "(Qwen3.5-0.8B's shape); qwen35moe: tiny-moe; gemma4: tiny-e2b, tiny-31b, tiny-26b, e2b, "
                           "e4b, 26b-a4b or 31b; gemma4-assistant: the assistant of that gemma4 preset; glm4: tiny, "
                           "small or glm-ocr (GLM-OCR's text shape); llama: tiny, 1b (Llama 3.2 1B's shape) or 8b "
                           "(Llama 3.1 8B's). Default: tiny (tiny-moe for qwen35moe, tiny-e2b for gemma4 and "
                           "gemma4-assistant)."},
                          {{"-o", "--output"}, K::string, "PATH", "Output GGUF file (or directory with --format hf).",
                           "", "", true},
                          {{"--type"}, K::string, "TYPE", "Matrix type: f32, f16, bf16, q8_0, q4_0, q5_0, q5_1, q4_K, q5_K, q6_K "
                           "(gemma4, glm4, llama, eagle3, dflash: bf16 with --format hf; gemma4-assistant: bf16).", "q8_0"},
                          {{"--format"}, K::string, "FMT", "gguf, or hf (safetensors directory; f32/f16/bf16 only). "
                           "dflash: hf unless given.", "gguf"},
                          ranged({{"--seed"}, K::integer, "N", "Seed of the weights.", "1"}, 0, kInt64Max),
                          {{"--tied"}, K::boolean, "BOOL", "Tie the LM head to the token embedding (default: the "
                           "preset's)."},
                          {{"--mtp"}, K::boolean, "BOOL", "qwen35, glm4: include the MTP head (default: true)."},
                          {{"--bias"}, K::boolean, "BOOL", "glm4: q/k/v attention biases, as GLM-4-0414 and GLM-4 "
                           "chat files have (default: false)."},
                          {{"--rope-scaling"}, K::boolean, "BOOL", "llama, eagle3: llama3 rope scaling (rope_freqs.weight "
                           "in GGUF, rope_scaling in config.json) (default: true for llama, false for eagle3)."},
                          {{"--target"}, K::string, "FILE", "eagle3, dflash: the target model (GGUF or HF directory) "
                           "the head drafts for; its width, heads, layers and vocabulary shape the head."},
                          ranged({{"--block-size"}, K::integer, "N", "dflash: rows per draft block (2 to 64; default "
                                  "16)."},
                                 2, 64),
                          // text, as the run option of this name is (one id, one type); the synthesizer reads N
                          {{"--draft-vocab"}, K::string, "N", "eagle3: rows of the head's draft vocabulary (its LM "
                           "head and d2t), drawn from the target's ids by the seed: a multiple of 4 up to the "
                           "target's vocabulary (published heads map about 32,000). Default: half the target's."},
                          {{"--vision"}, K::boolean, "BOOL", "glm4: include GLM-OCR's vision tower at the preset's "
                           "size, and the image tokens in the vocabulary. HF: model.visual.*, vision_config and "
                           "preprocessor_config.json in the directory; GGUF: llama.cpp's mmproj file "
                           "mmproj-NAME.gguf beside the model (use it with --mmproj). Default: false."},
                          ranged({{"--layers"}, K::integer, "N", "Override the number of layers (1 to 1024; dflash: "
                                  "draft layers, default 2)."}, 1,
                                 1024),
                          ranged({{"--draft-of-seed"}, K::integer, "N", "Write a draft model for the target of this "
                                  "seed: the target's weights plus noise (--perturbation), same vocabulary."},
                                 0, kInt64Max),
                          {{"--perturbation"}, K::number, "X", "Relative noise of a draft model.", "0.02"},
                          {{"--residual-decay"}, K::number, "X", "qwen3: scale layer i's attention and MLP outputs by "
                           "X^i, so that a draft of the first layers agrees with its target more often (e.g. "
                           "0.5).", "1"},
                          {{"--repeating"}, K::flag, "", "Weights whose greedy output repeats (for n-gram tests)."},
                          ranged({{"--repeat-period"}, K::integer, "N", "With --repeating: the period of the "
                                  "output (ids cycle in groups of N).", "5"},
                                 1, kInt32Max)}}};

        CommandSpec demo{"demo", "synthesize a small model in the cache directory (once), time plain vs speculative "
                         "decoding",
                         "The quick start: writes a small synthetic Qwen3 model to $XDG_CACHE_HOME/tandem/demo "
                         "(once; random weights built so that its output repeats), warms up (the first run compiles "
                         "shaders and builds graphs), then times plain and speculative decoding (the ngram-simple "
                         "drafter) on the same prompt, median of 5 runs each, and prints tokens/s of both, the "
                         "speedup, the acceptance, tokens per target pass, and whether both produced the same "
                         "tokens. The text is meaningless; it shows the runtime working end to end on this "
                         "machine's Vulkan device."};
        demo.groups = {{"demo",
                        {ranged({{"-n", "--n-predict"}, K::integer, "N", "Tokens to generate per run (16 to 1024).",
                                 "64"},
                                16, 1024),
                         {{"--json"}, K::flag, "", "Print the figures as one JSON object (plain_tokens_per_s, "
                          "spec_tokens_per_s, speedup, acceptance_rate, tokens_per_target_pass, same_tokens, ...)."}}}};

        CommandSpec bench{"bench", "benchmarks: ops, decode, spec, serve (JSON with --json)",
                          "Benchmarks. `tandem bench ops`: dispatch overhead and matvec bandwidth per weight type and "
                          "batch width. `tandem bench decode -m FILE`: prefill and decode tokens/s. `tandem bench spec "
                          "-m FILE ...`: plain vs speculative decoding per prompt (matched, acceptance, speedup). "
                          "`tandem bench serve -m FILE [--concurrency 1,4,8,16]`: the server's batching engine under "
                          "C clients at once (each sends its next request when one ends): aggregate tokens/s, time to "
                          "first token and per output token (p50, p99); with --spec-type, speculative; with --vs-plain, plain "
                          "and speculative in turn, and the median speedup of the pairs. `tandem bench image FILE...`: what "
                          "preparing pages for a vision encoder costs (decoding PNG, JPEG or PDF pages, the smart "
                          "resize, patches) and how many image tokens each page becomes."};
        bench.groups = {model_options(), speculative_options(),
                        {"bench",
                         {{{"--json"}, K::flag, "", "Print JSON."},
                          ranged({{"--prompt-len"}, K::integer, "N", "Prompt tokens (decode/spec benchmarks).",
                                  "32"},
                                 1, kInt32Max),
                          ranged({{"--gen-tokens"}, K::integer, "N", "Tokens generated per prompt.", "32"}, 1,
                                 kInt32Max),
                          ranged({{"--prompts"}, K::integer, "N", "Prompts (spec benchmark).", "4"}, 1, kInt32Max),
                          one_of({{"--prompt-kind"}, K::string, "KIND", "Spec benchmark prompts: random (ids below "
                                  "4096, uniform); zipf (ids by a Zipf law in id order, as text's BPE ids roughly "
                                  "are); listing (S, the target's own continuation L of S with one token changed, S "
                                  "again); list (S L S L S).", "random"},
                                 {"random", "zipf", "listing", "list"}),
                          {{"--force-acceptance"}, K::number, "A", "Spec benchmark: drafts are the target's own "
                           "future tokens, each accepted with probability A. With a drafter (--spec-type mtp, -md) "
                           "that drafter still runs and is timed; only its tokens are replaced."},
                          {{"--bracket"}, K::flag, "", "Spec benchmark: run each prompt's plain decode again "
                           "after its speculative run and compare with the mean of the two (a machine whose speed "
                           "drifts then biases no pair; a third more time)."},
                          ranged({{"--seed"}, K::integer, "N", "Seed of the benchmark prompts.", "1"}, 0, kInt64Max),
                          {{"--concurrency"}, K::string, "LIST", "Serve benchmark: clients at once, per run.",
                           "1,4,8,16"},
                          ranged({{"--requests"}, K::integer, "N", "Serve benchmark: requests per run (default: "
                                  "twice the clients, at least 4)."},
                                 1, kInt32Max),
                          {{"--vs-plain"}, K::flag, "", "Serve benchmark: run each level plain and speculative in "
                           "turn and report the median of the pairs' speedups (the machine's speed may drift)."},
                          ranged({{"--pairs"}, K::integer, "N", "Serve benchmark: plain/speculative pairs per level "
                                  "with --vs-plain.", "3"},
                                 1, 100),
                          {{"--types"}, K::string, "LIST", "Ops benchmark: weight types.", "f16,q8_0,q4_K"},
                          ranged({{"--batches"}, K::size_list, "LIST", "Ops benchmark: batch widths.", "1,4,8,16"},
                                 1, kInt32Max),
                          {{"--matrix"}, K::string, "ROWSxCOLS", "Ops benchmark: weight shape (output rows x input "
                           "columns).", "4096x4096"},
                          ranged({{"--attention-tokens"}, K::size_list, "LIST", "Ops benchmark: also time attention "
                                  "over activations (a vision encoder's) at these token counts, 16 heads of 64 "
                                  "(GLM-OCR's ViT); e.g. 1024,5476."},
                                 1, 1 << 20),
                          ranged({{"--iterations"}, K::integer, "N", "Timed runs per measurement (median "
                                  "reported).", "9"},
                                 1, kInt32Max),
                          {{"--pdf-dpi"}, K::number, "DPI", "Image benchmark: resolution PDF pages are rendered at "
                           "(GLM-OCR's SDK uses 200).", "200"},
                          {{"--preprocessor"}, K::string, "FILE", "Image benchmark: a Hugging Face "
                           "preprocessor_config.json for the resize budget, patch size and normalisation (default: "
                           "GLM-OCR's)."}}}};
        bench.positionals = {{"WHAT", "ops, decode, spec, serve or image."},
                             {"FILE", "image: PNG, JPEG or PDF files.", false, true}};

        CommandSpec tune{"tune", "measure the fastest matmul work split per weight shape on this device",
                         "Time every work split of the matmul kernel (rows per subgroup x subgroups per workgroup) "
                         "on each weight shape and keep the fastest in this device's table beside the pipeline "
                         "cache. Splits never change results: every split must give the same bits as the default, "
                         "or tuning stops with an error. On a GPU, a model's shapes are tuned at its first load "
                         "anyway (unless --no-tune); this command tunes on demand, on any device. Shapes: a "
                         "model's (-m), --matrix, or a default set of common decode shapes."};
        tune.groups = {{"model",
                        {{{"-m", "--model"}, K::string, "FILE", "Tune the shapes of this model's weights."}}},
                       {"tune",
                        {{{"--json"}, K::flag, "", "Print JSON: per shape the chosen split, its time and the "
                          "default's, and every candidate's time."},
                         {{"--matrix"}, K::string, "LIST", "Weight shapes ROWSxCOLS, comma-separated (e.g. "
                          "1024x1024,3072x1024); COLS a multiple of 256."},
                         {{"--types"}, K::string, "LIST", "Weight types of the --matrix or default shapes.",
                          "q8_0,q4_K"},
                         {{"--splits"}, K::string, "LIST", "Only these splits, ROWSxSUBGROUPS[uUNROLL] (e.g. "
                          "1x4,2x4u2; the unroll counts in the mv layout only); the first is the reference the "
                          "others must match."},
                         {{"--retune"}, K::flag, "", "Measure shapes the table already has."},
                         ranged({{"--iterations"}, K::integer, "N", "Timed runs per split (median).", "7"}, 1,
                                1000)}}};

        p.commands = {run, ocr, chat, serve, info, tokenize, plugins, devices, synth, demo, bench, tune};
        return p;
    }();
    return spec;
}

}  // namespace tdm::cli
