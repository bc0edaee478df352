/* SPDX-License-Identifier: Apache-2.0 */
// host/grammar/grammar_checks.h: checks on a whole compiled grammar that the parser cannot
// make one rule at a time. Not here: syntax errors (gbnf_parser.cpp).
#pragma once

#include "common/error.h"
#include "grammar/grammar_rules.h"

namespace tdm {

// Refuses a rule that can reach itself without consuming a character (directly, through
// other rules, or past rules that can match the empty string): the matcher expands rules
// until a character is on top of every stack, and such a rule would expand forever.
Status check_no_left_recursion(const CompiledGrammar& g);

}  // namespace tdm
