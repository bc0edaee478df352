/* SPDX-License-Identifier: Apache-2.0 */
// host/config/config_rules.h: the range and consistency rules of a Config, shared by the
// file loader (which adds line numbers) and validate_config (which does not). Internal to
// host/config. Not here: type checks, which only the TOML reader can make.
#pragma once

#include "config/config.h"

#include <string>
#include <vector>

namespace tdm::config_detail {

struct Issue {
    std::string key;        // "sampling.top_p": the setting at fault
    std::string message;    // "1.5 is outside [0, 1]"
    std::string other_key;  // for a rule between two keys, the second one ("" if none)
};

std::vector<Issue> check_rules(const Config& config);

}  // namespace tdm::config_detail
