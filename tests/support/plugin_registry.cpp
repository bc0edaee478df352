// SPDX-License-Identifier: Apache-2.0
// tests/support/plugin_registry.cpp: the build tree's plugins, loaded once (plugin_registry.h).
#include "support/plugin_registry.h"

#include <gtest/gtest.h>

#include <memory>

#include "plugin/plugin_loader.h"

namespace tdm::test {

Registry& build_tree_plugins() {
    static std::unique_ptr<Registry> reg = [] {
        PluginSearch s;
        s.use_env = false;
        auto r = load_plugins(s);
        EXPECT_TRUE(r.ok()) << r.error().message();
        return std::move(r).value();
    }();
    return *reg;
}

}  // namespace tdm::test
