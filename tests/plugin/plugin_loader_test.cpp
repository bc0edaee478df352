// SPDX-License-Identifier: Apache-2.0
// tests/plugin/plugin_loader_test.cpp: loading plugins, version negotiation and
// the errors for broken plugins (tests/plugins/*.c).
#include <gtest/gtest.h>

#include <filesystem>

#include "plugin/abi_structs.h"
#include "plugin/plugin_loader.h"

namespace tdm {
namespace {

std::string test_plugin(const char* name) {
    return std::string(TANDEM_TEST_PLUGIN_DIR) + "/tandem-test-" + name + ".so";
}

std::string hostile_plugin(const char* name) {
    return std::string(TANDEM_TEST_HOSTILE_PLUGIN_DIR) + "/tandem-hostile-" + name + ".so";
}

TEST(PluginLoader, error_buffer_filled_without_a_nul_is_read_to_its_end_and_no_further) {
    Registry reg;
    auto st = load_plugin_file(reg, hostile_plugin("unterminated_error"));
    ASSERT_FALSE(st.ok());
    const std::string& m = st.error().message();
    EXPECT_NE(m.find("init failed: " + std::string(1024, 'x')), std::string::npos) << m.size();
    EXPECT_EQ(m.find(std::string(1025, 'x')), std::string::npos);
}

TEST(PluginLoader, strings_without_a_nul_before_a_guard_page_are_cut_or_refused_never_overread) {
    // the plugin's init checks that each bad name it passes is refused, and fails if not;
    // any read past a bound hits its guard page and crashes this test
    Registry reg;
    auto st = load_plugin_file(reg, hostile_plugin("hostile_strings"));
    ASSERT_TRUE(st.ok()) << st.error().message();
    const DrafterEntry* ok = reg.find_drafter("hostile-ok");
    ASSERT_NE(ok, nullptr);
    EXPECT_STREQ(ok->desc->name, "hostile-ok");
    const PluginRecord& p = *reg.plugins().front();
    EXPECT_EQ(p.version, std::string(kPluginNameMax, 'v') + "...");
    EXPECT_EQ(p.description, std::string(kPluginTextMax, 'd') + "...");
    EXPECT_EQ(p.provides, std::vector<std::string>{"drafter hostile-ok"});
}

TEST(PluginLoader, plugin_names_refuses_unterminated_empty_and_endless_lists) {
    const std::string long_name(kPluginNameMax + 10, 'a');  // NUL-terminated, but too long to be a name
    EXPECT_FALSE(plugin_name(long_name.c_str(), "x").ok());
    EXPECT_FALSE(plugin_name("", "x").ok());
    EXPECT_EQ(*plugin_name("qwen3", "x"), "qwen3");
    std::vector<const char*> endless(kPluginListMax + 1, "t");
    endless.push_back(nullptr);
    auto r = plugin_names(endless.data(), "spec_types");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("NULL-terminated"), std::string::npos) << r.error().message();
    const char* two[] = {"a", "b", nullptr};
    EXPECT_EQ(*plugin_names(two, "x"), (std::vector<std::string>{"a", "b"}));
}

TEST(PluginLoader, plugin_built_against_abi_1_loads_in_current_host) {
    Registry reg;
    auto st = load_plugin_file(reg, test_plugin("echo_drafter"));
    ASSERT_TRUE(st.ok()) << st.error().message();
    const DrafterEntry* d = reg.find_drafter("echo");
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->plugin->name, "echo");
    EXPECT_EQ(d->plugin->abi, 1u);
    void* obj = nullptr;
    char err[128];
    ASSERT_EQ(d->desc->create(nullptr, nullptr, &obj, err, sizeof err), TDM_OK);
    const int32_t hist[] = {5, 6, 7};
    int32_t out[8];
    EXPECT_EQ(d->desc->propose(obj, hist, 3, out, 8), 4u);
    EXPECT_EQ(out[3], 7);
    d->desc->destroy(obj);
}

TEST(PluginLoader, plugin_with_a_future_abi_is_refused_naming_both_versions) {
    Registry reg;
    auto st = load_plugin_file(reg, test_plugin("bad_abi"));
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message().find("speaks ABI 7..9"), std::string::npos) << st.error().message();
    EXPECT_NE(st.error().message().find("offers ABI 1..3"), std::string::npos) << st.error().message();
}

TEST(PluginLoader, shared_object_without_entry_point_is_refused) {
    Registry reg;
    auto st = load_plugin_file(reg, test_plugin("no_entry"));
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message().find("does not export tdm_plugin_negotiate"), std::string::npos)
        << st.error().message();
}

TEST(PluginLoader, failing_init_is_reported_and_its_registrations_are_dropped) {
    Registry reg;
    auto st = load_plugin_file(reg, test_plugin("failing_init"));
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message().find("init failed: the answer is not 42 today"), std::string::npos)
        << st.error().message();
    EXPECT_EQ(reg.find_drafter("never-registered"), nullptr);
}

TEST(PluginLoader, missing_file_is_an_error_not_a_crash) {
    Registry reg;
    auto st = load_plugin_file(reg, "/nonexistent/tandem-nothing.so");
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message().find("cannot load plugin"), std::string::npos);
}

TEST(PluginLoader, searching_a_directory_skips_broken_plugins_and_records_why) {
    // copy the test plugins under tandem-*.so names into a search directory
    PluginSearch s;
    s.dirs = {TANDEM_TEST_PLUGIN_DIR};
    s.use_env = false;
    s.use_default_dirs = false;
    auto reg = load_plugins(s);
    ASSERT_TRUE(reg.ok()) << reg.error().message();
    EXPECT_NE((*reg)->find_drafter("echo"), nullptr);
    std::vector<std::string> broken;
    for (const auto& p : (*reg)->plugins())
        if (!p->error.empty()) broken.push_back(std::filesystem::path(p->path).filename().string());
    std::sort(broken.begin(), broken.end());
    EXPECT_EQ(broken, (std::vector<std::string>{"tandem-test-bad_abi.so", "tandem-test-failing_init.so",
                                                "tandem-test-no_entry.so", "tandem-test-short_descriptor.so"}));
}

TEST(PluginLoader, in_tree_qwen_plugin_registers_qwen3_for_gguf_and_hf) {
    PluginSearch s;
    s.use_env = false;
    auto reg = load_plugins(s);  // the build tree's plugin directory
    ASSERT_TRUE(reg.ok()) << reg.error().message();
    const ArchEntry* a = (*reg)->find_arch_gguf("qwen3");
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->plugin->name, "qwen-nextn");
    EXPECT_EQ((*reg)->find_arch_hf("qwen3"), a);
    EXPECT_NE((*reg)->describe_architectures().find("qwen3"), std::string::npos);
}

}  // namespace
}  // namespace tdm
