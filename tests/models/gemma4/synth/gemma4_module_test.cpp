// SPDX-License-Identifier: Apache-2.0
// tests/models/gemma4/synth/gemma4_module_test.cpp: tandem-gemma4-synth.so through its C interface
// (sdk/include/tandem/synth.h), as `tandem synth --arch gemma4` opens it: the one exported entry
// point negotiates version 1, lists gemma4 and gemma4-assistant, writes a model and its assistant,
// and reports a refused option as an error with its message.
#include <gtest/gtest.h>

#include <tandem/synth.h>

#include "formats/model_source.h"
#include "support/fixtures.h"

#include <dlfcn.h>

#include <cstring>
#include <filesystem>
#include <string>

namespace {

struct Module {
    void* handle = nullptr;
    const tdm_synthesizer_api* api = nullptr;
    ~Module() {
        if (handle) dlclose(handle);
    }
};

void open_module(Module& m) {
    m.handle = dlopen(TANDEM_GEMMA4_SYNTH, RTLD_NOW | RTLD_LOCAL);
    ASSERT_TRUE(m.handle) << dlerror();
    auto negotiate = reinterpret_cast<tdm_synthesizer_negotiate_fn>(dlsym(m.handle, TDM_SYNTH_ENTRY_NAME));
    ASSERT_TRUE(negotiate);
    tdm_synth_negotiate n{};
    n.struct_size = sizeof n;
    n.host_version_min = TDM_SYNTH_VERSION_MIN;
    n.host_version_max = TDM_SYNTH_VERSION;
    ASSERT_EQ(negotiate(&n), TDM_OK);
    EXPECT_EQ(n.synth_version, 1u);
    m.api = n.api;
    ASSERT_TRUE(m.api);
}

tdm_status run(const Module& m, const std::string& output, std::vector<const char*> names,
               std::vector<const char*> values, std::string* message, const char* arch = "gemma4") {
    tdm_synth_request r{};
    r.struct_size = sizeof r;
    r.arch = arch;
    r.output = output.c_str();
    r.n_options = uint32_t(names.size());
    r.option_names = names.data();
    r.option_values = values.data();
    char buf[1024] = {};
    const tdm_status st = m.api->synthesize(&r, buf, sizeof buf);
    *message = buf;
    return st;
}

}  // namespace

TEST(Gemma4Module, negotiates_lists_gemma4_and_its_assistant_and_writes_both) {
    Module m;
    open_module(m);
    ASSERT_TRUE(m.api);
    EXPECT_STREQ(m.api->name, "gemma4");
    ASSERT_TRUE(m.api->archs && m.api->archs[0]);
    EXPECT_STREQ(m.api->archs[0], "gemma4");
    ASSERT_TRUE(m.api->archs[1]);
    EXPECT_STREQ(m.api->archs[1], "gemma4-assistant");
    EXPECT_EQ(m.api->archs[2], nullptr);

    const std::string path = tdm::test::make_temp_dir("gemma4-module") + "/m.gguf";
    std::string message;
    ASSERT_EQ(run(m, path, {"preset", "type"}, {"tiny-31b", "f32"}, &message), TDM_OK) << message;
    EXPECT_NE(message.find("gemma4 tiny-31b"), std::string::npos) << message;
    auto src = tdm::ModelSource::open(path);
    ASSERT_TRUE(src.ok()) << src.error().message();
    EXPECT_EQ((*src)->architecture(), "gemma4");

    const std::string never = path + ".never";
    EXPECT_EQ(run(m, never, {"repeating"}, {"true"}, &message), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(message.find("--repeating does not apply to gemma4"), std::string::npos) << message;
    EXPECT_FALSE(std::filesystem::exists(never));

    // the assistant of the same preset
    const std::string asst = path + ".assistant.gguf";
    ASSERT_EQ(run(m, asst, {"preset"}, {"tiny-31b"}, &message, "gemma4-assistant"), TDM_OK) << message;
    EXPECT_NE(message.find("gemma4-assistant tiny-31b"), std::string::npos) << message;
    auto a = tdm::ModelSource::open(asst);
    ASSERT_TRUE(a.ok()) << a.error().message();
    EXPECT_EQ((*a)->architecture(), "gemma4-assistant");
    EXPECT_EQ(run(m, never, {"mtp"}, {"true"}, &message, "gemma4-assistant"), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(message.find("--mtp does not apply to gemma4-assistant"), std::string::npos) << message;
}
