// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/config_toml.cpp: tandem.toml loading (config/config.h, toml++ underneath) on
// arbitrary text. A file that loads must also pass validate_config (the same rules the
// command line's overrides are checked with); one that does not gets a message that names
// the file.
// Seeds: the default tandem.toml uncommented, and tests/fuzz/corpus/config_toml/.
#include "config/config.h"
#include "fuzz_support.h"

#include <string>

using namespace tdm;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    auto cfg = load_config_text(fuzz::as_text(data, size), "fuzz.toml");
    if (!cfg.ok()) {
        FUZZ_CHECK(cfg.error().message().find("fuzz.toml") != std::string::npos);
        return 0;
    }
    FUZZ_CHECK(validate_config(*cfg).ok());
    return 0;
}
