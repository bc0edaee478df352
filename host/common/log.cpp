// SPDX-License-Identifier: Apache-2.0
// host/common/log.cpp: stderr logging through spdlog (colour when a terminal).
#include "common/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdlib>
#include <memory>

namespace tdm {
namespace {

LogLevel initial_level() {
    LogLevel level = LogLevel::warn;
    if (const char* env = std::getenv("TANDEM_LOG")) parse_log_level(env, &level);
    return level;
}

std::atomic<int>& level_ref() {
    static std::atomic<int> level{static_cast<int>(initial_level())};
    return level;
}

spdlog::logger& logger() {
    static std::shared_ptr<spdlog::logger> l = [] {
        auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
        auto lg = std::make_shared<spdlog::logger>("tandem", sink);
        lg->set_pattern("%^[%L]%$ %v");
        lg->set_level(spdlog::level::trace);
        return lg;
    }();
    return *l;
}

}  // namespace

bool parse_log_level(std::string_view s, LogLevel* out) {
    static const struct { const char* name; LogLevel level; } kNames[] = {
        {"trace", LogLevel::trace}, {"debug", LogLevel::debug}, {"info", LogLevel::info},
        {"warn", LogLevel::warn},   {"error", LogLevel::error}, {"off", LogLevel::off},
    };
    for (const auto& n : kNames) {
        if (s == n.name) {
            *out = n.level;
            return true;
        }
    }
    return false;
}

void set_log_level(LogLevel level) { level_ref().store(static_cast<int>(level)); }
LogLevel log_level() { return static_cast<LogLevel>(level_ref().load()); }

void log_message(LogLevel level, std::string_view subsystem, std::string_view message) {
    if (level < log_level() || level == LogLevel::off) return;
    static const spdlog::level::level_enum kMap[] = {spdlog::level::trace, spdlog::level::debug,
                                                     spdlog::level::info, spdlog::level::warn,
                                                     spdlog::level::err};
    logger().log(kMap[static_cast<int>(level)], "{}: {}", subsystem, message);
}

}  // namespace tdm
