// SPDX-License-Identifier: Apache-2.0
// host/config/logit_bias_text.cpp
#include "config/logit_bias_text.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <string>

namespace tdm {

Result<LogitBiasText> parse_logit_bias(std::string_view text) {
    const auto bad = [&] {
        return Error::format("'{}' is not a logit bias: write TOKEN+BIAS or TOKEN-BIAS, such as 15043+1 or 2-100",
                             text);
    };
    const size_t sign = text.find_first_of("+-");
    if (sign == 0 || sign == std::string_view::npos || sign + 1 == text.size()) return bad();
    LogitBiasText out;
    const std::string_view id = text.substr(0, sign);
    const auto [id_end, id_err] = std::from_chars(id.data(), id.data() + id.size(), out.token);
    if (id_err != std::errc() || id_end != id.data() + id.size() || out.token < 0) return bad();
    // from_chars for floats would also read "inf" and "nan"; a bias must be a number
    const std::string_view value = text.substr(sign + 1);
    if (value.front() == '-') return bad();  // one sign: "1+-1" is a typo, not -1
    double v = 0;
    const auto [v_end, v_err] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (v_err != std::errc() || v_end != value.data() + value.size() || !std::isfinite(v) ||
        std::fabs(v) > double(std::numeric_limits<float>::max()))
        return bad();
    out.bias = float(text[sign] == '-' ? -v : v);
    return out;
}

}  // namespace tdm
