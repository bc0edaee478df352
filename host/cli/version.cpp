// SPDX-License-Identifier: Apache-2.0
// host/cli/version.cpp
#include "cli/version.h"

#include <fmt/format.h>

#include "tandem/tandem.h"
#include "tandem_git_commit.h"  // generated at build time (cmake/git_commit.cmake)

namespace tdm::cli {

std::string version_text() {
    return fmt::format("tandem {}\nplugin ABI {}..{}.{}\ncommit {}\n", TANDEM_VERSION, TDM_ABI_VERSION_MIN,
                       TDM_ABI_VERSION, TDM_ABI_MINOR_VERSION, TANDEM_GIT_COMMIT);
}

}  // namespace tdm::cli
