/* SPDX-License-Identifier: Apache-2.0 */
// host/serve/server_metrics.h: the counters behind GET /metrics, in Prometheus' text
// format (tandem_* names; histograms with cumulative buckets, _sum and _count).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "serve/backend.h"

namespace tdm::server {

class ServerMetrics {
public:
    void request_done(const std::string& endpoint, int status);
    void generation_done(uint64_t prompt_tokens, uint64_t cached_tokens, uint64_t generated_tokens,
                         uint64_t drafted, uint64_t accepted);
    // A generation the goodput controller drafted for: what it chose, and the speedup over
    // plain steps it measured.
    void controller_done(const ControllerStats& c, double measured_speedup);
    void time_to_first_token(double seconds);
    void time_per_output_token(double seconds);
    void generation_timed_out();

    // Gauges are read when the text is made: requests waiting for a place in the engine and
    // running (HTTP's view), and the engine's own.
    std::string text(uint32_t waiting, uint32_t running, const EngineGauges& engine) const;

private:
    // Upper bounds in seconds; the last bucket (+Inf) is implicit.
    static constexpr std::array<double, 12> kBounds = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                       0.5,   1.0,  2.5,   5.0,  10.0, 30.0};
    struct Histogram {
        std::array<uint64_t, kBounds.size() + 1> counts{};
        double sum = 0;
        uint64_t count = 0;
        void add(double seconds);
    };
    static void write_histogram(std::string& out, const char* name, const char* help, const Histogram& h);

    mutable std::mutex mutex_;
    std::map<std::pair<std::string, int>, uint64_t> requests_;
    uint64_t prompt_tokens_ = 0, cached_tokens_ = 0, generated_tokens_ = 0, drafted_ = 0, accepted_ = 0;
    uint64_t timed_out_ = 0;
    ControllerStats controller_;
    double measured_speedup_sum_ = 0;
    uint64_t controlled_ = 0;  // generations in controller_
    Histogram ttft_, tpot_;
};

}  // namespace tdm::server
