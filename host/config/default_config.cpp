// SPDX-License-Identifier: Apache-2.0
// host/config/default_config.cpp: the commented tandem.toml that packaging installs as
// /etc/tandem/tandem.toml. Every key is listed, commented out, with its default, so the
// file documents the schema and changes nothing until a line is uncommented. Tests check
// that it loads, that uncommenting it yields the defaults, and that it lists every key.
#include "config/config.h"

namespace tdm {

std::string_view default_config_text() {
    return R"toml(# tandem.toml: settings for tandem. Every key is shown commented out with its
# default; uncomment a line to change it. Options given on the command line override
# this file. tandem reads the first of: --config FILE, $XDG_CONFIG_HOME/tandem/tandem.toml
# (~/.config/tandem/tandem.toml), /etc/tandem/tandem.toml. Reference: docs/CONFIG.md.
#
# Memory sizes are a byte count or a number with a unit: "512MiB", "8GiB", "1.5G"
# (K/M/G/T and KiB/MiB/GiB/TiB are powers of 1024; KB/MB/GB/TB powers of 1000).

[device]
# Which Vulkan device: "" for the first suitable one, an index ("1"), or a part of the
# device name ("7900").
# select = ""
# Enable the Vulkan validation layers (slow; for debugging).
# validate = false
# Record GPU timestamps for every dispatch and print a profile.
# profile = false
# Most device memory tandem may allocate; 0 = no limit.
# memory_limit = 0
# On a GPU, time the matmul work splits of a model's weight shapes the first time they
# are loaded (a few seconds, once; kept beside the pipeline cache). `tandem tune` does it
# on demand.
# tune = true

[model]
# Target model: a GGUF file or a safetensors directory.
# path = ""
# A separate draft model (speculative type "draft").
# draft_path = ""
# An MTP / NextN / assistant head shipped as its own file (speculative type "mtp").
# mtp_head_path = ""
# An image encoder's weights as their own file (--mmproj); "" = the model's own (GLM-OCR's
# HF directory holds its vision tower).
# mmproj_path = ""
# Context length in tokens; 0 = the model's trained length, otherwise at least 16 (one
# KV block). A context whose weights and KV cache do not fit the device is refused.
# n_ctx = 4096
# KV cache element type: "f16" or "f32".
# kv_type = "f16"
# A KV cache budget instead of n_ctx: the context is made as long as fits (0 = unused).
# Set either n_ctx or kv_memory, not both.
# kv_memory = 0
# Prompt tokens processed per prefill pass.
# n_batch = 512
# Wrap the prompt in the chat template (--chat; --no-chat turns it off).
# chat = false
# A built-in chat template: "chatml", "chatml-thinking", "chatml-no-thinking", "gemma",
# "gemma4", "glm4"; "" = the one the model's files call for.
# chat_template = ""
# Refuse weights that hold NaN or infinity when the model loads (a damaged file would
# otherwise generate nonsense); false skips the scan.
# check_weights = true
# Before the first token (`tandem run`, `chat`, `serve`, `ocr`), run a few untimed passes
# on a scratch sequence that is then freed, so that compiling the decode step's and the
# first speculative round's pipelines and graphs is paid at load, not by the first reply
# (--no-warmup turns it off; the output is the same either way).
# warmup = true
# Where tables read only by token rows live (Gemma 4 E2B/E4B's per-layer embeddings,
# 2.3 GiB in Q8_0): "on" keeps them in host memory and uploads the rows of each batch,
# "off" puts them in device memory, "auto" keeps them in host memory on a CPU device and
# when a table is at least host_rows_share of the device's memory.
# host_rows = "auto"
# host_rows_share = 0.1
# Multiply Q8_0 weights with activations quantized to 8 bits, in integers ("on"), or
# with f32 activations ("off": faster on lavapipe). Plain and speculative decoding give
# the same tokens either way.
# int8_matmul = "off"

[chat_template]
# Replace parts of the chat template. A turn renders as <role>_prefix, the message,
# <role>_suffix; parts left unset keep the template's own. Example (ChatML):
# system_prefix = "<|im_start|>system\n"
# system_suffix = "<|im_end|>\n"
# user_prefix = "<|im_start|>user\n"
# user_suffix = "<|im_end|>\n"
# assistant_prefix = "<|im_start|>assistant\n"
# assistant_suffix = "<|im_end|>\n"
# generation_prompt = "<|im_start|>assistant\n"

[sampling]
# 0 = greedy (always the likeliest token).
# temperature = 0.8
# Keep the k likeliest tokens; 0 = off.
# top_k = 40
# Keep the likeliest tokens whose probabilities add up to top_p; 1 = off.
# top_p = 0.95
# Drop tokens less likely than min_p times the likeliest; 0 = off.
# min_p = 0.05
# Penalise tokens seen in the last repeat_last_n tokens; 1 = off.
# repeat_penalty = 1.0
# -1 = the whole context, 0 = off.
# repeat_last_n = 64
# OpenAI's penalties (-2 .. 2): logit -= count * frequency_penalty + (count > 0) *
# presence_penalty, count = how often the token is in this reply so far; 0 = off.
# presence_penalty = 0.0
# frequency_penalty = 0.0
# Add BIAS (-100 .. 100) to a token's logit, as llama.cpp's --logit-bias TOKEN+BIAS:
# ["15043+1", "2-100"] raises token 15043 and all but bans token 2.
# logit_bias = []
# -1 = a random seed (printed, so the run can be repeated).
# seed = -1

[speculative]
# Drafters, in order of preference, as a list or a comma-separated string: "draft",
# "mtp", "nextn", "ngram-simple", "ngram-map-k", "ngram-map-k4v", "ngram-mod",
# "ngram-cache", or one a plugin provides. Empty = none (see auto).
# type = []
# Most tokens drafted per round (1 to 1024): the limit of the goodput controller, which
# chooses the draft length each round from measured acceptance and cost (0 where drafting
# does not pay), or the draft length itself with fixed = true.
# draft_max = 16
# Skip a round's draft when fewer tokens than this were proposed.
# draft_min = 0
# After this many rounds in a row with no draft token accepted, skip drafting for one
# round; 0 = off.
# skip_streak = 0
# With type empty, use a drafter the target model itself carries (an MTP / NextN head).
# auto = false
# Draft draft_max tokens every round (experiments, sweeps) instead of letting the goodput
# controller choose.
# fixed = false
# n-gram drafters: lookup key length, drafted length, hits needed before drafting.
# ngram_size_n = 12
# ngram_size_m = 48
# ngram_min_hits = 1
# ngram-cache: a static n-gram statistics file.
# ngram_cache = ""
# Write a per-round acceptance trace (NDJSON) to this file; "" = off.
# trace = ""
# MTP / NextN heads: the target hidden state they read. post-norm (the input of the
# LM head, as llama.cpp and vLLM feed it) or pre-norm (the residual stream before the
# final norm, as mlx-lm's MTP does).
# mtp_hidden = "post-norm"
# Draft heads (MTP / NextN): compute draft logits over the first N token ids only; the LM
# head is most of a draft step's cost. Output stays exact, but tokens at or above N can no
# longer be drafted: with Qwen3's tokenizer and N = 32768 that is 5% of English text and
# 45% of Chinese (docs/SPECULATIVE.md). "auto": each round, the smallest N of 4096, 6144,
# 8192, 12288, ... outside which at most 5% of the sequence's last 1024 tokens (prompt
# and output) lie, else the whole vocabulary. "all" or 0: the whole vocabulary.
# draft_vocab = "auto"
# Draft trees, "STEPS,TOPK,NODES": drafters that grow trees propose at most STEPS levels,
# TOPK children per node, NODES nodes with the round's first token (2 to 64), verified in
# one pass, greedy or sampling. Growing them: ngram-simple, ngram-map-k4v, draft heads and
# draft models. Under the goodput controller a CPU device verifies chains and a GPU the one
# measured to pay; fixed = true forces trees. "" = chains.
# draft_tree = ""

[plugins]
# Extra directories searched for plugins, before the built-in ones.
# paths = []
# Plugins not to load, by name.
# disable = []

[log]
# trace, debug, info, warn, error or off.
# level = "warn"

[server]
# `tandem serve`: the address to listen on (0.0.0.0: every interface) and the TCP port
# (0: any free port).
# host = "127.0.0.1"
# port = 8080
# Require "Authorization: Bearer KEY" on every endpoint but /health; "" = none.
# api_key = ""
# The model's id in /v1/models and responses; "" = the model file's name.
# alias = ""
# Requests generating at once, each in a KV slot of [model] n_ctx tokens.
# parallel = 4
# Requests that may wait for a place; more get 503 with Retry-After.
# queue = 16
# Seconds a request may wait for a place before a 503.
# timeout = 600
# Seconds a request may generate; past them it ends with what it made so far
# (finish_reason "length"). 0 = no limit.
# request_timeout = 0
# Largest request body in bytes; a larger one gets 413.
# max_body = 8388608
# On SIGTERM or SIGINT: seconds the admitted requests may still run (idle and slow
# connections close at once); past them they are cut and the server exits.
# shutdown_timeout = 30
# Connections open at once, in all and from one client address; more get 503.
# max_connections = 256
# max_connections_per_client = 64
# Images (image_url content parts, data: URLs, and the pages of PDF file parts) in one chat
# request, and their bytes in all after base64, for a model with an image encoder
# (GLM-OCR); more get 400. PDF pages are rendered at [ocr] pdf_dpi (serve --pdf-dpi).
# max_images = 16
# max_image_bytes = 20971520

[ocr]
# `tandem ocr`: what to read from each page: text, formula, table, or json (fill the
# fields of `schema`, a JSON template with empty values).
# task = "text"
# schema = ""
# How the pages come out: markdown (pages under "## FILE, page N" headings), json (one
# object per page with timings and speculative statistics), or text (pages one after
# another).
# output_format = "markdown"
# Resolution PDF pages are rendered at (GLM-OCR's SDK uses 200), by `tandem ocr` and for
# the file parts of `tandem serve`'s chat requests.
# pdf_dpi = 200
# Context of each page in tokens, instead of [model] n_ctx (-c overrides it): an A4 page at
# 200 dpi is about 5,000 image tokens, GLM-OCR's largest 6,144. 0 = the model's trained length.
# n_ctx = 16384
)toml";
}

}  // namespace tdm
