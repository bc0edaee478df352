// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/regression_main.cpp: the main() a harness is linked with in the normal build
// (any compiler, no libFuzzer): runs LLVMFuzzerTestOneInput once on every file named on the
// command line or found (recursively) in a named directory, as `fuzzer DIR...` replays a
// corpus. Paths that do not exist are skipped, but there must be at least one input. A harness check that fails aborts, so a ctest run of this driver over the seed
// corpus and the saved crash inputs (tests/fuzz/regressions/<harness>/) fails on a regression.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace fs = std::filesystem;

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s FILE_OR_DIR...\n", argv[0]);
        return 2;
    }
    if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
    std::vector<fs::path> inputs;
    for (int i = 1; i < argc; ++i) {
        const fs::path p(argv[i]);
        std::error_code ec;
        if (fs::is_directory(p, ec)) {
            for (const auto& e : fs::recursive_directory_iterator(p))
                if (e.is_regular_file()) inputs.push_back(e.path());
        } else if (fs::is_regular_file(p, ec)) {
            inputs.push_back(p);
        } else {  // a harness without committed seeds or saved crashes has no such directory
            std::fprintf(stderr, "%s: %s: not there, skipped\n", argv[0], argv[i]);
        }
    }
    std::sort(inputs.begin(), inputs.end());  // a stable order makes a failure easy to re-run
    if (inputs.empty()) {
        std::fprintf(stderr, "%s: no inputs found in the given directories\n", argv[0]);
        return 2;
    }
    for (const fs::path& p : inputs) {
        std::ifstream in(p, std::ios::binary);
        std::stringstream ss;
        ss << in.rdbuf();
        const std::string bytes = ss.str();
        std::fprintf(stderr, "running %s (%zu bytes)\n", p.c_str(), bytes.size());
        LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    }
    std::printf("%zu inputs ran without a failed check\n", inputs.size());
    return 0;
}
