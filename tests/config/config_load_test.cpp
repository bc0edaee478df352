// SPDX-License-Identifier: Apache-2.0
// tests/config/config_load_test.cpp: TOML -> Config, and the rejection of every kind of bad
// input (unknown keys, wrong types, syntax, ranges) with messages that name the key, the
// line and what was expected. To add a case: write the TOML inline and check the Config
// field, or check the error with fails_with(load(...), {needles}).
#include "config/config.h"

#include "formats/expect_error.h"

#include <gtest/gtest.h>

namespace tdm::test {
namespace {

Result<Config> load(std::string_view text) { return load_config_text(text, "test.toml"); }

Config load_ok(std::string_view text) {
    auto c = load(text);
    EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().message());
    return c.ok() ? *c : Config{};
}

TEST(ConfigLoad, an_empty_file_gives_the_defaults) { EXPECT_EQ(load_ok(""), Config{}); }

TEST(ConfigLoad, reads_every_section) {
    const Config c = load_ok(R"(
[device]
select = "RADV"
validate = true
profile = true
memory_limit = "6GiB"

[model]
path = "/models/qwen3-8b.gguf"
draft_path = "/models/qwen3-0.6b.gguf"
mtp_head_path = "/models/head.gguf"
n_ctx = 8192
kv_type = "f32"
n_batch = 256
chat = true
chat_template = "chatml"
check_weights = false
host_rows = "on"
host_rows_share = 0.25

[chat_template]
user_prefix = "<|user|>\n"
generation_prompt = "<|assistant|>\n"

[sampling]
temperature = 0
top_k = 0
top_p = 0.9
min_p = 0.1
repeat_penalty = 1.1
repeat_last_n = -1
seed = 42

[speculative]
type = ["mtp", "ngram-simple"]
draft_max = 8
draft_min = 2
skip_streak = 4
auto = true
fixed = true
ngram_size_n = 4
ngram_size_m = 16
ngram_min_hits = 2
ngram_cache = "/var/cache/tandem/ngrams.bin"
trace = "/tmp/trace.ndjson"

[plugins]
paths = ["/opt/tandem/plugins", "~/plugins"]
disable = ["glm-ocr"]

[log]
level = "debug"
)");
    EXPECT_EQ(c.device.select, "RADV");
    EXPECT_TRUE(c.device.validate);
    EXPECT_TRUE(c.device.profile);
    EXPECT_EQ(c.device.memory_limit, 6ull << 30);
    EXPECT_EQ(c.model.path, "/models/qwen3-8b.gguf");
    EXPECT_EQ(c.model.draft_path, "/models/qwen3-0.6b.gguf");
    EXPECT_EQ(c.model.mtp_head_path, "/models/head.gguf");
    EXPECT_EQ(c.model.n_ctx, 8192);
    EXPECT_EQ(c.model.kv_type, "f32");
    EXPECT_EQ(c.model.kv_memory, 0u);
    EXPECT_EQ(c.model.n_batch, 256);
    EXPECT_TRUE(c.model.chat);
    EXPECT_EQ(c.model.chat_template, "chatml");
    EXPECT_FALSE(c.model.check_weights);
    EXPECT_EQ(c.model.host_rows, "on");
    EXPECT_EQ(c.model.host_rows_share, 0.25f);
    EXPECT_EQ(c.chat_template.user_prefix, "<|user|>\n");
    EXPECT_EQ(c.chat_template.generation_prompt, "<|assistant|>\n");
    EXPECT_FALSE(c.chat_template.system_prefix.has_value());
    EXPECT_FALSE(c.chat_template.empty());
    EXPECT_EQ(c.sampling.temperature, 0.0f);
    EXPECT_EQ(c.sampling.top_k, 0);
    EXPECT_FLOAT_EQ(c.sampling.top_p, 0.9f);
    EXPECT_FLOAT_EQ(c.sampling.min_p, 0.1f);
    EXPECT_FLOAT_EQ(c.sampling.repeat_penalty, 1.1f);
    EXPECT_EQ(c.sampling.repeat_last_n, -1);
    EXPECT_EQ(c.sampling.seed, 42);
    EXPECT_EQ(c.speculative.type, (std::vector<std::string>{"mtp", "ngram-simple"}));
    EXPECT_EQ(c.speculative.draft_max, 8);
    EXPECT_EQ(c.speculative.draft_min, 2);
    EXPECT_EQ(c.speculative.skip_streak, 4);
    EXPECT_TRUE(c.speculative.auto_select);
    EXPECT_TRUE(c.speculative.fixed);
    EXPECT_EQ(c.speculative.ngram_size_n, 4);
    EXPECT_EQ(c.speculative.ngram_size_m, 16);
    EXPECT_EQ(c.speculative.ngram_min_hits, 2);
    EXPECT_EQ(c.speculative.ngram_cache, "/var/cache/tandem/ngrams.bin");
    EXPECT_EQ(c.speculative.trace, "/tmp/trace.ndjson");
    EXPECT_EQ(c.plugins.paths, (std::vector<std::string>{"/opt/tandem/plugins", "~/plugins"}));
    EXPECT_EQ(c.plugins.disable, (std::vector<std::string>{"glm-ocr"}));
    EXPECT_EQ(c.log.level, "debug");
}

TEST(ConfigLoad, speculative_type_also_takes_a_comma_separated_string) {
    EXPECT_EQ(load_ok("[speculative]\ntype = \"draft, ngram-mod\"\n").speculative.type,
              (std::vector<std::string>{"draft", "ngram-mod"}));
    EXPECT_EQ(load_ok("[speculative]\ntype = \"mtp\"\n").speculative.type, (std::vector<std::string>{"mtp"}));
}

TEST(ConfigLoad, memory_sizes_take_strings_or_byte_counts) {
    EXPECT_EQ(load_ok("[device]\nmemory_limit = 4096\n").device.memory_limit, 4096u);
    EXPECT_EQ(load_ok("[device]\nmemory_limit = \"1.5G\"\n").device.memory_limit, 3ull << 29);
    EXPECT_EQ(load_ok("[model]\nkv_memory = \"512MiB\"\n").model.kv_memory, 512ull << 20);
}

TEST(ConfigLoad, draft_vocab_is_auto_all_or_a_count_as_integer_or_string) {
    EXPECT_EQ(Config{}.speculative.draft_vocab, "auto");
    EXPECT_EQ(load_ok("[speculative]\ndraft_vocab = 32768\n").speculative.draft_vocab, "32768");
    EXPECT_EQ(load_ok("[speculative]\ndraft_vocab = \"all\"\n").speculative.draft_vocab, "all");
    EXPECT_EQ(load_ok("[speculative]\ndraft_vocab = 0\n").speculative.draft_vocab, "0");
    EXPECT_EQ(draft_vocab_count("auto"), std::nullopt);
    EXPECT_EQ(draft_vocab_count("all"), 0);
    EXPECT_EQ(draft_vocab_count("0"), 0);
    EXPECT_EQ(draft_vocab_count("32768"), 32768);
    EXPECT_EQ(draft_vocab_count("2147483647"), 2147483647);
    for (const char* bad : {"", "-1", "2147483648", "99999999999", "32k", " 1", "Auto"})
        EXPECT_EQ(draft_vocab_count(bad), std::nullopt) << bad;
    EXPECT_TRUE(fails_with(load("[speculative]\ndraft_vocab = -5\n"),
                           "key 'speculative.draft_vocab' at line 2: '-5' is not auto, all or a token count"));
    EXPECT_TRUE(fails_with(load("[speculative]\ndraft_vocab = \"most\"\n"), "'most' is not auto, all or a token count"));
    EXPECT_TRUE(fails_with(load("[speculative]\ndraft_vocab = 1.5\n"), "speculative.draft_vocab"));
}

TEST(ConfigLoad, draft_tree_is_steps_topk_and_nodes_up_to_64) {
    EXPECT_EQ(Config{}.speculative.draft_tree, "");
    EXPECT_EQ(load_ok("[speculative]\ndraft_tree = \"4,2,8\"\n").speculative.draft_tree, "4,2,8");
    const auto t = draft_tree_shape("4,2,8");
    ASSERT_TRUE(t);
    EXPECT_EQ(t->steps, 4u);
    EXPECT_EQ(t->topk, 2u);
    EXPECT_EQ(t->nodes, 8u);
    EXPECT_TRUE(draft_tree_shape("63,1,64"));
    for (const char* bad : {"", "4,2", "4,2,1", "4,2,65", "0,2,8", "4,0,8", "4,2,8,", "4, 2,8", "a,b,c"})
        EXPECT_FALSE(draft_tree_shape(bad)) << bad;
    EXPECT_TRUE(fails_with(load("[speculative]\ndraft_tree = \"4,2,99\"\n"),
                           "'4,2,99' is not STEPS,TOPK,NODES"));
}

TEST(ConfigLoad, device_select_takes_an_index_as_integer_or_string) {
    EXPECT_EQ(load_ok("[device]\nselect = 1\n").device.select, "1");
    EXPECT_EQ(load_ok("[device]\nselect = \"1\"\n").device.select, "1");
}

TEST(ConfigLoad, dotted_keys_and_inline_tables_are_ordinary_toml) {
    const Config c = load_ok("sampling.top_k = 7\nlog = { level = \"info\" }\n");
    EXPECT_EQ(c.sampling.top_k, 7);
    EXPECT_EQ(c.log.level, "info");
}

// ---------------------------------------------------------------------------------------
// Rejections
// ---------------------------------------------------------------------------------------

TEST(ConfigLoad, rejects_an_unknown_key_naming_it_its_line_and_the_likely_key) {
    const char* text = "[speculative]\ndraft_max = 4\n\ndrft_max = 8\n";
    auto c = load(text);
    EXPECT_TRUE(fails_with(c, "test.toml: unknown key 'speculative.drft_max' at line 4 (did you mean 'draft_max'?)"));
}

TEST(ConfigLoad, rejects_an_unknown_key_without_a_suggestion_when_nothing_is_close) {
    auto c = load("[model]\nflux_capacitor = 1\n");
    ASSERT_TRUE(fails_with(c, "unknown key 'model.flux_capacitor' at line 2"));
    EXPECT_EQ(c.error().message().find("did you mean"), std::string::npos);
}

TEST(ConfigLoad, rejects_an_unknown_section_with_a_suggestion) {
    EXPECT_TRUE(fails_with(load("\n[speculatve]\ndraft_max = 4\n"),
                           "unknown section 'speculatve' at line 2 (did you mean 'speculative'?)"));
}

TEST(ConfigLoad, a_key_outside_its_section_points_to_the_section) {
    EXPECT_TRUE(fails_with(load("temperature = 0.5\n"),
                           "unknown key 'temperature' at line 1 (did you mean 'sampling.temperature' under [sampling]?)"));
}

TEST(ConfigLoad, rejects_a_nested_table_inside_a_section) {
    EXPECT_TRUE(fails_with(load("[sampling.extra]\nx = 1\n"), "unknown key 'sampling.extra'"));
}

TEST(ConfigLoad, rejects_a_section_that_is_not_a_table) {
    EXPECT_TRUE(fails_with(load("device = \"gpu0\"\n"), "'device' at line 1 must be a section ([device]), found string"));
}

TEST(ConfigLoad, rejects_wrong_types_naming_key_expected_found_and_line) {
    EXPECT_TRUE(fails_with(load("[sampling]\n\ntop_k = \"40\"\n"),
                           "key 'sampling.top_k' at line 3: expected integer, found string"));
    EXPECT_TRUE(fails_with(load("[sampling]\ntop_k = 4.5\n"),
                           "key 'sampling.top_k' at line 2: expected integer, found floating-point"));
    EXPECT_TRUE(fails_with(load("[sampling]\ntemperature = \"hot\"\n"),
                           "key 'sampling.temperature' at line 2: expected number, found string"));
    EXPECT_TRUE(fails_with(load("[device]\nvalidate = 1\n"),
                           "key 'device.validate' at line 2: expected boolean, found integer"));
    EXPECT_TRUE(fails_with(load("[model]\npath = [\"a\"]\n"), "key 'model.path' at line 2: expected string, found array"));
    EXPECT_TRUE(fails_with(load("[device]\nmemory_limit = 1.5\n"),
                           "key 'device.memory_limit' at line 2: expected string or integer, found floating-point"));
    EXPECT_TRUE(fails_with(load("[plugins]\npaths = \"/opt\"\n"),
                           "key 'plugins.paths' at line 2: expected array of strings, found string"));
    EXPECT_TRUE(fails_with(load("[plugins]\ndisable = [\"a\", 2]\n"),
                           "key 'plugins.disable[1]' at line 2: expected string, found integer"));
    EXPECT_TRUE(fails_with(load("[model]\nn_ctx = 1979-05-27\n"), "expected integer, found date"));
}

TEST(ConfigLoad, rejects_syntax_errors_with_line_and_column) {
    auto c = load("[model]\npath = \"unterminated\n");
    ASSERT_TRUE(fails_with(c, "test.toml: TOML syntax error at line 2, column"));
    EXPECT_TRUE(fails_with(load("[model]\nn_ctx = 1\nn_ctx = 2\n"), "TOML syntax error at line 3"));  // duplicate
    EXPECT_TRUE(fails_with(load("[sampling\n"), "TOML syntax error at line 1"));
}

TEST(ConfigLoad, rejects_values_out_of_range) {
    EXPECT_TRUE(fails_with(load("[model]\nn_ctx = -1\n"), "key 'model.n_ctx' at line 2: -1 is below the minimum 0"));
    EXPECT_TRUE(fails_with(load("[sampling]\ntemperature = -0.5\n"),
                           "key 'sampling.temperature' at line 2: -0.5 is negative"));
    EXPECT_TRUE(fails_with(load("[sampling]\ntop_p = 1.5\n"), "key 'sampling.top_p' at line 2: 1.5 is outside [0, 1]"));
    EXPECT_TRUE(fails_with(load("[sampling]\ntop_p = -0.1\n"), "-0.1 is outside [0, 1]"));
    EXPECT_TRUE(fails_with(load("[sampling]\nmin_p = 2\n"), "key 'sampling.min_p' at line 2: 2 is outside [0, 1]"));
    EXPECT_TRUE(fails_with(load("[sampling]\nrepeat_penalty = 0\n"), "sampling.repeat_penalty"));
    EXPECT_TRUE(fails_with(load("[sampling]\nrepeat_last_n = -2\n"), "sampling.repeat_last_n"));
    EXPECT_TRUE(fails_with(load("[sampling]\nseed = -7\n"), "sampling.seed"));
    EXPECT_TRUE(fails_with(load("[model]\nn_batch = 0\n"), "model.n_batch"));
    EXPECT_TRUE(fails_with(load("[model]\nkv_type = \"q8_0\"\n"), "key 'model.kv_type' at line 2: 'q8_0' is not one of f16, f32"));
    EXPECT_TRUE(fails_with(load("[log]\nlevel = \"loud\"\n"), "'loud' is not one of trace, debug, info, warn, error, off"));
    EXPECT_TRUE(fails_with(load("[speculative]\ndraft_max = 0\n"), "speculative.draft_max"));
    EXPECT_TRUE(fails_with(load("[speculative]\nngram_size_n = 0\n"), "speculative.ngram_size_n"));
}

TEST(ConfigLoad, rejects_integers_too_large_for_the_setting) {
    EXPECT_TRUE(fails_with(load("[model]\nn_ctx = 99999999999\n"),
                           "key 'model.n_ctx' at line 2: 99999999999 is out of range"));
}

TEST(ConfigLoad, rejects_infinite_and_nan_numbers) {
    EXPECT_TRUE(fails_with(load("[sampling]\ntemperature = inf\n"), "sampling.temperature"));
    EXPECT_TRUE(fails_with(load("[sampling]\ntop_p = nan\n"), "not a finite number"));
    EXPECT_TRUE(fails_with(load("[sampling]\ntemperature = 1e300\n"), "out of range"));
}

TEST(ConfigLoad, rejects_bad_memory_sizes_naming_the_key) {
    EXPECT_TRUE(fails_with(load("[device]\nmemory_limit = \"8 gigs\"\n"),
                           {"key 'device.memory_limit' at line 2", "unknown unit"}));
    EXPECT_TRUE(fails_with(load("[model]\nkv_memory = -5\n"), "key 'model.kv_memory' at line 2: -5 is negative"));
}

TEST(ConfigLoad, rejects_inconsistent_settings) {
    EXPECT_TRUE(fails_with(load("[speculative]\ndraft_max = 4\ndraft_min = 8\n"),
                           "key 'speculative.draft_min' at line 3: draft_min (8) is larger than draft_max (4)"));
    EXPECT_TRUE(fails_with(load("[model]\nn_ctx = 4096\nkv_memory = \"2GiB\"\n"),
                           "keys 'model.n_ctx' (line 2) and 'model.kv_memory' (line 3) both size the context"));
    // kv_memory = 0 means "unused", so it does not conflict.
    EXPECT_EQ(load_ok("[model]\nn_ctx = 100\nkv_memory = 0\n").model.n_ctx, 100);
}

TEST(ConfigLoad, rejects_bad_drafter_lists) {
    EXPECT_TRUE(fails_with(load("[speculative]\ntype = [\"mtp\", \"mtp\"]\n"), "'mtp' is listed twice"));
    // one type in its two spellings is one drafter, chained twice
    EXPECT_TRUE(fails_with(load("[speculative]\ntype = [\"ngram_simple\", \"ngram-simple\"]\n"),
                           "'ngram-simple' is listed twice"));
    EXPECT_TRUE(fails_with(load("[speculative]\ntype = \"none,mtp\"\n"), "'none' cannot be combined"));
    EXPECT_TRUE(fails_with(load("[speculative]\ntype = \"mtp,,draft\"\n"), "'' is not a drafter name"));
    EXPECT_TRUE(fails_with(load("[speculative]\ntype = [\"Draft Model\"]\n"), "'Draft Model' is not a drafter name"));
}

TEST(ConfigLoad, rejects_a_content_placeholder_inside_a_template_part) {
    EXPECT_TRUE(fails_with(load("[chat_template]\nuser_prefix = \"<u>{content}</u>\"\n"),
                           "key 'chat_template.user_prefix' at line 2: contains '{content}'"));
}

TEST(ConfigLoad, reports_every_problem_sorted_by_line) {
    auto c = load("[sampling]\ntop_p = 3\n[model]\nn_ctx = \"big\"\n[speculative]\ndrft_max = 1\n");
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.error().message(),
              "test.toml: key 'sampling.top_p' at line 2: 3 is outside [0, 1]\n"
              "test.toml: key 'model.n_ctx' at line 4: expected integer, found string\n"
              "test.toml: unknown key 'speculative.drft_max' at line 6 (did you mean 'draft_max'?)");
}

// ---------------------------------------------------------------------------------------
// validate_config (command-line overrides) and the key list
// ---------------------------------------------------------------------------------------

TEST(ConfigLoad, validate_config_applies_the_same_rules_without_lines) {
    EXPECT_TRUE(validate_config(Config{}).ok());
    Config c;
    c.sampling.top_p = 1.5f;
    c.model.kv_type = "bf16";
    c.model.host_rows = "yes";
    c.model.host_rows_share = -0.5f;
    c.model.int8_matmul = "auto";
    EXPECT_TRUE(fails_with(validate_config(c), {"sampling.top_p: 1.5 is outside [0, 1]",
                                                "model.kv_type: 'bf16' is not one of f16, f32",
                                                "model.host_rows: 'yes' is not one of auto, on, off",
                                                "model.host_rows_share: -0.5 is outside [0, 1]",
                                                "model.int8_matmul: 'auto' is not one of on, off"}));
}

TEST(ConfigLoad, the_server_section_loads_and_its_ranges_are_checked) {
    auto c = load("[server]\nhost = \"0.0.0.0\"\nport = 9000\napi_key = \"k\"\nalias = \"m\"\nparallel = 8\n"
                  "queue = 0\ntimeout = 30\nmax_body = 4096\nrequest_timeout = 120\nshutdown_timeout = 5\n"
                  "max_connections = 100\nmax_connections_per_client = 10\nmax_images = 2\nmax_image_bytes = 1000\n");
    ASSERT_TRUE(c.ok()) << c.error().message();
    EXPECT_EQ(c->server.host, "0.0.0.0");
    EXPECT_EQ(c->server.port, 9000);
    EXPECT_EQ(c->server.api_key, "k");
    EXPECT_EQ(c->server.alias, "m");
    EXPECT_EQ(c->server.parallel, 8);
    EXPECT_EQ(c->server.queue, 0);
    EXPECT_EQ(c->server.timeout, 30);
    EXPECT_EQ(c->server.max_body, 4096);
    EXPECT_EQ(c->server.request_timeout, 120);
    EXPECT_EQ(c->server.shutdown_timeout, 5);
    EXPECT_EQ(c->server.max_connections, 100);
    EXPECT_EQ(c->server.max_connections_per_client, 10);
    EXPECT_EQ(c->server.max_images, 2);
    EXPECT_EQ(c->server.max_image_bytes, 1000);
    auto bad = load("[server]\nport = 70000\nparallel = 0\nmax_body = 10\nrequest_timeout = -1\n"
                    "shutdown_timeout = -1\nmax_connections = 0\nmax_images = -1\n");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message().find("server.port"), std::string::npos) << bad.error().message();
    EXPECT_NE(bad.error().message().find("server.parallel"), std::string::npos) << bad.error().message();
    EXPECT_NE(bad.error().message().find("server.max_body"), std::string::npos) << bad.error().message();
    EXPECT_NE(bad.error().message().find("server.request_timeout"), std::string::npos) << bad.error().message();
    EXPECT_NE(bad.error().message().find("server.shutdown_timeout"), std::string::npos) << bad.error().message();
    EXPECT_NE(bad.error().message().find("server.max_connections"), std::string::npos) << bad.error().message();
    EXPECT_NE(bad.error().message().find("server.max_images"), std::string::npos) << bad.error().message();
}

TEST(ConfigLoad, config_keys_lists_each_section_key_once) {
    const std::vector<std::string> keys = config_keys();
    EXPECT_EQ(keys.size(), 5u + 15u + 7u + 10u + 14u + 2u + 1u + 14u + 5u);
    EXPECT_EQ(keys.front(), "device.select");
    EXPECT_NE(std::find(keys.begin(), keys.end(), "speculative.auto"), keys.end());
    std::vector<std::string> sorted = keys;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());
}

}  // namespace
}  // namespace tdm::test
