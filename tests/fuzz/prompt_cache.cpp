// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/prompt_cache.cpp: the header of a sequence-state file (a prompt cache,
// a chat's /save) as read_state_header() checks it before anything is allocated or
// the model is touched: the bytes are written to a scratch file and read back
// through a file descriptor, as load_sequence_state() does. A header it accepts must
// make sense: every claimed size within the file and the format's caps.
// Seeds: corpus/prompt_cache/: a header for a 2-layer model with one recurrent state
// and one drafter section (checksum right; its sizes need not add up, so the reader's
// later checks are reached too).
#include "fuzz_support.h"
#include "engine/state_file_format.h"

#include <fcntl.h>
#include <unistd.h>

using namespace tdm;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = fuzz::write_scratch_file("state.bin", fuzz::as_text(data, size));
    const int fd = open(path.c_str(), O_RDONLY);
    FUZZ_CHECK(fd >= 0);
    auto h = read_state_header(fd, size);
    close(fd);
    if (!h.ok()) {
        FUZZ_CHECK(!h.error().message().empty());
        return 0;
    }
    FUZZ_CHECK(h->payload_bytes <= size);
    FUZZ_CHECK(h->version <= kStateFormatVersion);
    FUZZ_CHECK(h->kv_element_bytes == 2 || h->kv_element_bytes == 4);
    // what it claims survives a round trip through the writer
    const std::string again = encode_state_header(*h);
    FUZZ_CHECK(again.size() <= size);
    return 0;
}
