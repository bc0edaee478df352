// SPDX-License-Identifier: Apache-2.0
// split_merge.glsl: merging the softmax state of the next key split into a running one,
// the one arithmetic that attention_combine.comp (split passes) and attention.comp's fold
// (a workgroup walking every split of a token itself, host/ops/attention_split.cpp) share:
//   m' = max(m, m_s), alpha = exp(m - m'), beta = exp(m_s - m'),
//   l' = l * alpha + l_s * beta, a' = a * alpha + a_s * beta (each output dim).
// `precise` keeps the compiler from contracting these into fused multiply-adds in one
// shader and not the other: both give a query the same bits (batch invariance: a decode
// row runs the split passes, a wide batch's row the fold).

struct SplitWeights {
    float m, alpha, beta;
};

SplitWeights split_weights(float m, float m_s) {
    SplitWeights w;
    w.m = max(m, m_s);
    precise float alpha = exp(m - w.m);
    precise float beta = exp(m_s - w.m);
    w.alpha = alpha;
    w.beta = beta;
    return w;
}

float split_merge(float a, float a_s, SplitWeights w) {
    precise float r = a * w.alpha + a_s * w.beta;
    return r;
}

vec4 split_merge(vec4 a, vec4 a_s, SplitWeights w) {
    precise vec4 r = a * w.alpha + a_s * w.beta;
    return r;
}
