/* SPDX-License-Identifier: Apache-2.0 */
// tests/support/plugin_registry.h: the plugins of the build tree, as the tests that run
// in-tree models or drafters load them. Not for tests of loading itself (plugin/), which
// build their own PluginSearch. Links only into test programs that link tdm_runtime.
#pragma once

#include "plugin/registry.h"

namespace tdm::test {

// The build tree's plugins (not whatever TANDEM_PLUGIN_PATH points at), loaded on first
// use and kept for the process; a failure to load is a test failure.
Registry& build_tree_plugins();

}  // namespace tdm::test
