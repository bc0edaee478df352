/* SPDX-License-Identifier: Apache-2.0 */
// host/common/log.h: one log function with levels and a subsystem tag.
// Plugins log through the host API table, which lands here too.
// Level is set by TANDEM_LOG (trace|debug|info|warn|error|off) or set_log_level().
#pragma once

#include <fmt/core.h>

#include <string_view>

namespace tdm {

enum class LogLevel { trace = 0, debug = 1, info = 2, warn = 3, error = 4, off = 5 };

void log_message(LogLevel level, std::string_view subsystem, std::string_view message);
void set_log_level(LogLevel level);
LogLevel log_level();
bool parse_log_level(std::string_view s, LogLevel* out);

template <class... Args>
void log(LogLevel level, std::string_view subsystem, fmt::format_string<Args...> f, Args&&... args) {
    if (level < log_level()) return;
    log_message(level, subsystem, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace tdm

#define TDM_LOG_DEBUG(sub, ...) ::tdm::log(::tdm::LogLevel::debug, sub, __VA_ARGS__)
#define TDM_LOG_INFO(sub, ...) ::tdm::log(::tdm::LogLevel::info, sub, __VA_ARGS__)
#define TDM_LOG_WARN(sub, ...) ::tdm::log(::tdm::LogLevel::warn, sub, __VA_ARGS__)
#define TDM_LOG_ERROR(sub, ...) ::tdm::log(::tdm::LogLevel::error, sub, __VA_ARGS__)
