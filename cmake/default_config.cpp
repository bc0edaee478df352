// SPDX-License-Identifier: Apache-2.0
// cmake/default_config.cpp: build-time tool that writes default_config_text() (the
// commented tandem.toml) to the file named on its command line; the build installs
// that file as <sysconfdir>/tandem/tandem.toml. Not installed itself.
#include <cstdio>

#include "config/config.h"

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s OUTPUT\n", argv[0]);
        return 2;
    }
    const std::string_view text = tdm::default_config_text();
    std::FILE* f = std::fopen(argv[1], "wb");
    if (!f) {
        std::perror(argv[1]);
        return 1;
    }
    const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    if (std::fclose(f) != 0 || !ok) {
        std::fprintf(stderr, "%s: write failed\n", argv[1]);
        return 1;
    }
    return 0;
}
