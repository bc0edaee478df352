/* SPDX-License-Identifier: Apache-2.0 */
// host/serve/stop_strings.h: a request's stop strings ("stop": ["\n\n", "END"]) applied to
// text as it streams out of the detokenizer.
//
// OpenAI's rule: the output ends before the first occurrence of any stop string, which is
// not part of it. A stop string may span several tokens, so text that could be the start
// of one is held back until the next piece shows whether it is; a client therefore never
// sees the beginning of a stop string that later completes. Held-back text is released as
// soon as it cannot begin a stop string any more, or at the end of generation (flush).
//
// Pieces are whole UTF-8 (tokenizer/stream.h gives them so); what is emitted is cut only
// at the start of a stop string or of a possible one, which starts with a lead byte, so
// emitted text stays whole UTF-8 too.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tdm::server {

class StopMatcher {
public:
    // Empty strings are ignored (they would stop before anything).
    explicit StopMatcher(std::vector<std::string> stops);

    // Appends generated text; returns the text that is now safe to show. Once a stop string
    // is found, stopped() is true, the returned text ends just before it, and later calls
    // return nothing.
    std::string push(std::string_view piece);

    // The end of generation without a stop string: the text held back.
    std::string flush();

    bool stopped() const { return stopped_; }
    // The stop string that ended the output ("" while none has).
    const std::string& matched() const { return matched_; }
    // Bytes held back now (for tests and for a server's accounting).
    size_t held() const { return pending_.size(); }

private:
    std::vector<std::string> stops_;
    std::string pending_;
    std::string matched_;
    bool stopped_ = false;
};

}  // namespace tdm::server
