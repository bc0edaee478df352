/* SPDX-License-Identifier: Apache-2.0 */
// host/cli/version.h: what `tandem --version` prints: the release, the plugin ABI
// versions this host loads, and the commit the executable was built from.
#pragma once

#include <string>

namespace tdm::cli {

// "tandem 0.3.0\nplugin ABI 1..3.1\ncommit 0123456789ab\n": ABI majors 1 to 3, the last up to
// its minor 1. The commit ends in "-modified" when the tree had uncommitted changes, and is
// "unknown" outside a git checkout.
std::string version_text();

}  // namespace tdm::cli
