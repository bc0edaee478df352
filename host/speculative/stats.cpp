// SPDX-License-Identifier: Apache-2.0
// host/speculative/stats.cpp
#include "speculative/stats.h"

#include <nlohmann/json.hpp>
#include <fmt/format.h>

namespace tdm {

std::string DrafterStats::line() const {
    return fmt::format("statistics {}: #calls(b,g,a) = {} {} {}, #gen drafts = {}, #acc drafts = {}, #gen tokens = "
                       "{}, #acc tokens = {}, dur(b,g,a) = {:.3f}, {:.3f}, {:.3f} ms",
                       name, calls_begin, calls_gen, calls_acc, gen_drafts, acc_drafts, gen_tokens, acc_tokens,
                       dur_begin_ms, dur_gen_ms, dur_acc_ms) +
           (failure.empty() ? std::string() : fmt::format(" (turned off: {})", failure));
}

nlohmann::json DrafterStats::json() const {
    return {{"name", name},
            {"calls_begin", calls_begin},
            {"calls_gen", calls_gen},
            {"calls_acc", calls_acc},
            {"gen_drafts", gen_drafts},
            {"acc_drafts", acc_drafts},
            {"gen_tokens", gen_tokens},
            {"acc_tokens", acc_tokens},
            {"dur_begin_ms", dur_begin_ms},
            {"dur_gen_ms", dur_gen_ms},
            {"dur_acc_ms", dur_acc_ms},
            {"failure", failure}};
}

double SpecStats::tokens_per_target_pass() const {
    const uint64_t passes = target_passes();
    return passes ? double(emitted) / double(passes) : 0.0;
}

void SpecStats::add_round(uint32_t n_drafted, uint32_t n_accepted) {
    ++rounds;
    drafted += n_drafted;
    accepted += n_accepted;
    if (drafted_at.size() < n_drafted) {
        drafted_at.resize(n_drafted, 0);
        accepted_at.resize(n_drafted, 0);
    }
    for (uint32_t i = 0; i < n_drafted; ++i) {
        drafted_at[i]++;
        if (i < n_accepted) accepted_at[i]++;
    }
}

void SpecStats::add_tree_round(uint32_t n_nodes, uint32_t depth) {
    ++rounds;
    drafted += n_nodes - 1;
    accepted += depth;
    ++tree_rounds;
    tree_nodes += n_nodes;
    if (tree_depths.size() <= depth) tree_depths.resize(depth + 1, 0);
    ++tree_depths[depth];
}

void ControllerStats::add(const ControllerStats& o) {
    on = on || o.on;
    off_steps += o.off_steps;
    probes += o.probes;
    chosen_rounds += o.chosen_rounds;
    chosen_k_sum += o.chosen_k_sum;
    predicted_sum += o.predicted_sum;
    if (o.plain_ms > 0) plain_ms = o.plain_ms;
}

double SpecStats::measured_speedup() const {
    const double ms = draft_ms + verify_ms + plain_ms;
    if (controller.plain_ms <= 0 || ms <= 0) return 0.0;
    return double(accepted + rounds + plain_steps) / ms * controller.plain_ms;
}

std::string SpecStats::report() const {
    std::string s = fmt::format("draft acceptance rate = {:.5f} ({} accepted / {} generated)\n", acceptance_rate(),
                                accepted, drafted);
    for (const auto& d : drafters) s += d.line() + "\n";
    s += fmt::format("rounds = {}, plain steps = {}, mean accepted length = {:.3f}, tokens per target pass = {:.3f}\n",
                     rounds, plain_steps, mean_accepted_length(), tokens_per_target_pass());
    s += fmt::format("time: draft {:.1f} ms, verify {:.1f} ms, accept {:.1f} ms, plain steps {:.1f} ms\n", draft_ms,
                     verify_ms, accept_ms, plain_ms);
    if (controller.on)
        s += fmt::format("controller: {} plain steps chosen ({} probes), mean k = {:.2f}, speedup estimated {:.2f}x, "
                         "measured {:.2f}x\n",
                         controller.off_steps, controller.probes, controller.mean_k(), controller.predicted_speedup(),
                         measured_speedup());
    if (constraint_cuts > 0)
        s += fmt::format("constraint: {} drafts cut at a token it forbids ({} draft tokens never verified)\n",
                         constraint_cuts, constraint_cut_tokens);
    if (tree_rounds > 0) {
        s += fmt::format("trees: {} rounds, {:.1f} nodes verified per round, accepted depth:", tree_rounds,
                         double(tree_nodes) / double(tree_rounds));
        for (size_t d = 0; d < tree_depths.size(); ++d) s += fmt::format(" {}:{}", d, tree_depths[d]);
        s += "\n";
    }
    if (tree_chains_chosen > 0) s += fmt::format("trees: {} chain rounds chosen instead\n", tree_chains_chosen);
    if (!drafted_at.empty()) {
        s += "acceptance by draft position:";
        for (size_t i = 0; i < drafted_at.size(); ++i)
            s += fmt::format(" {}:{:.2f}", i + 1, drafted_at[i] ? double(accepted_at[i]) / double(drafted_at[i]) : 0.0);
        s += "\n";
    }
    return s;
}

nlohmann::json SpecStats::json() const {
    nlohmann::json d = nlohmann::json::array();
    for (const auto& x : drafters) d.push_back(x.json());
    nlohmann::json hist = nlohmann::json::array();
    for (size_t i = 0; i < drafted_at.size(); ++i)
        hist.push_back({{"position", i + 1}, {"drafted", drafted_at[i]}, {"accepted", accepted_at[i]}});
    return {{"drafters", d},
            {"rounds", rounds},
            {"plain_steps", plain_steps},
            {"drafted_tokens", drafted},
            {"accepted_tokens", accepted},
            {"acceptance_rate", acceptance_rate()},
            {"mean_accepted_length", mean_accepted_length()},
            {"tokens_per_target_pass", tokens_per_target_pass()},
            {"acceptance_by_position", hist},
            {"draft_ms", draft_ms},
            {"verify_ms", verify_ms},
            {"accept_ms", accept_ms},
            {"plain_ms", plain_ms},
            {"plain_accept_ms", plain_accept_ms},
            {"constraint_cut_drafts", constraint_cuts},
            {"constraint_cut_tokens", constraint_cut_tokens},
            {"trees",
             {{"rounds", tree_rounds},
              {"nodes", tree_nodes},
              {"accepted_depth", tree_depths},
              {"chains_chosen", tree_chains_chosen}}},
            {"controller",
             {{"on", controller.on},
              {"off_steps", controller.off_steps},
              {"probes", controller.probes},
              {"rounds", controller.chosen_rounds},
              {"mean_k", controller.mean_k()},
              {"estimated_speedup", controller.predicted_speedup()},
              {"measured_speedup", measured_speedup()}}}};
}

}  // namespace tdm
