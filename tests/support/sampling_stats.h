/* SPDX-License-Identifier: Apache-2.0 */
// tests/support/sampling_stats.h: a chi-square goodness-of-fit check for the statistical
// sampling tests. Draws use fixed seeds, so each test is deterministic: the bound only has
// to be loose enough that a correct sampler with that seed passes, and a biased one (wrong
// residual, missing renormalisation) lands orders of magnitude above it.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <vector>

namespace tdm::test {

// Pearson's statistic for `counts` (n draws in all) against `probs`. Bins with
// probability 0 must have no draws (any draw there fails outright).
inline double chi_square(const std::vector<int64_t>& counts, const std::vector<double>& probs) {
    int64_t n = 0;
    for (int64_t c : counts) n += c;
    double chi2 = 0.0;
    for (size_t i = 0; i < counts.size(); ++i) {
        const double expected = probs[i] * static_cast<double>(n);
        if (expected == 0.0) {
            if (counts[i] != 0) return INFINITY;
            continue;
        }
        const double d = static_cast<double>(counts[i]) - expected;
        chi2 += d * d / expected;
    }
    return chi2;
}

// Mean + 10 standard deviations of the chi-square distribution with `df` degrees of
// freedom: about its 1e-6 upper quantile for the df used here (4..9).
inline double chi_square_bound(int df) { return df + 10.0 * std::sqrt(2.0 * df); }

inline ::testing::AssertionResult fits(const std::vector<int64_t>& counts, const std::vector<double>& probs) {
    int df = -1;
    for (double p : probs) df += p > 0.0 ? 1 : 0;
    const double chi2 = chi_square(counts, probs);
    const double bound = chi_square_bound(df);
    if (chi2 <= bound) return ::testing::AssertionSuccess() << "chi2 " << chi2 << " <= " << bound;
    return ::testing::AssertionFailure() << "chi2 " << chi2 << " > " << bound << " (df " << df << ")";
}

// Two samples of equal size, as counts per outcome (plain vs speculative runs): Pearson's
// two-sample statistic over the outcomes with at least 10 draws in both together, and how
// many such outcomes there are (its degrees of freedom, near enough).
struct TwoSampleChiSquare {
    double chi2 = 0.0;
    int cells = 0;
};
template <class Key>
TwoSampleChiSquare two_sample_chi_square(const std::map<Key, int>& a, const std::map<Key, int>& b) {
    std::map<Key, int> all = a;
    for (const auto& [k, v] : b) all[k] += 0;
    TwoSampleChiSquare r;
    for (const auto& [k, v] : all) {
        const auto ia = a.find(k), ib = b.find(k);
        const double x = ia == a.end() ? 0.0 : ia->second, y = ib == b.end() ? 0.0 : ib->second;
        if (x + y < 10) continue;
        r.chi2 += (x - y) * (x - y) / (x + y);
        ++r.cells;
    }
    return r;
}

}  // namespace tdm::test
