// The rule ids `truegreen audit dockerfile|k8s|image` can report, so that a suppression naming an
// id that no audit emits (a typo, a hadolint DLxxxx id, a rule that was renamed) is pointed out
// instead of silently suppressing nothing. tests/hostile_audit_test.cc checks that every rule id
// literal in src/audit appears here.
//
// Failure behaviour: none (pure look-ups). Thread safety: the table is immutable.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "audit/report/report_format.h"

namespace tg::audit {

// Every rule id of the three audits, sorted.
const std::vector<std::string_view>& AuditRuleIds();
// Whether `id` is one of them (exact match). Pure, like the rest of this header.
bool IsAuditRuleId(std::string_view id);

// The known id nearest to `id` by edit distance (at most 3 edits), or "" when none is that close
// or `id` is longer than 80 bytes (the suggestion costs |id| x |known| per known id).
std::string ClosestAuditRuleId(std::string_view id);

// One warning per suppression whose rule is not an audit rule id:
// "<file>:<line>: unknown rule id 'X': no audit reports it, so this suppression matches nothing
// (did you mean 'Y'?)". At most `max_listed` are returned, then one line counting the rest.
std::vector<std::string> UnknownRuleWarnings(const Suppressions& s, std::size_t max_listed = 20);

}  // namespace tg::audit
