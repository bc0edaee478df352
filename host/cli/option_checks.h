/* SPDX-License-Identifier: Apache-2.0 */
// host/cli/option_checks.h: the checks of a command line that the parser cannot make
// option by option: options that exclude each other, values that need the file system
// (plugin directories), and naming the option, not only the config key, when a
// command-line value breaks a config rule. Not here: the per-option ranges and choices
// (cli_spec.cpp and args.cpp), the config rules themselves (config/config_rules.cpp).
#pragma once

#include "cli/args.h"
#include "config/config.h"

#include <string>
#include <vector>

namespace tdm::cli {

// Options given together that contradict each other, where one would silently win:
// -p / -f / --prompt-tokens, -c / --kv-memory, --chat / --no-chat; and an empty --spec-type.
Status check_option_conflicts(const ParsedArgs& args);

// Every plugin directory named on the command line or in the config must exist.
Status check_plugin_dirs(const ParsedArgs& args, const Config& config);

// validate_config's message with each key set on the command line named as typed:
// "sampling.top_k: ..." becomes "--top-k (sampling.top_k): ...".
std::string name_command_line_options(const std::string& message, const ParsedArgs& args);

// Names given to --plugin-disable ([plugins] disable) that match no plugin found, with the
// names that were found; empty when every name matched. `found` are the plugin names known
// after loading (loaded ones and those recorded as broken) and the names the search
// directories' files suggest (tandem-NAME.so), since a disabled plugin is never opened.
std::string unknown_disabled_plugins(const std::vector<std::string>& disabled, const std::vector<std::string>& found);

}  // namespace tdm::cli
