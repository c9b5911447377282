// The cap on how many findings an audit (and `logscan`) lists. A manifest of a few MB can hold
// hundreds of thousands of findings (one bare container yields four), and each listed finding
// costs memory and output; GitHub code scanning refuses a SARIF run of more than 25 000 results.
// So the first `max` findings in input order are kept; past them a finding is only counted, by
// rule and severity. When any was not kept, one last error finding (kTruncatedRule, never
// suppressed) says how many, by rule: a truncated audit does not pass.
//
// FindingCap is a plain value type; not thread-safe (one audit fills it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "audit/report/finding.h"

namespace tg::audit {

// The default of --max-findings, and its documented range (cli/option_checks.cc).
inline constexpr std::size_t kDefaultMaxFindings = 25000;
inline constexpr std::size_t kMinMaxFindings = 1;
inline constexpr std::size_t kMaxMaxFindings = 100000;

// The rule id of the finding that reports a truncation (audit/report/rule_ids.h lists it).
inline constexpr std::string_view kTruncatedRule = "audit.findings-truncated";

class FindingCap {
 public:
  // `max` findings are kept; callers check the range (kMinMaxFindings..kMaxMaxFindings).
  explicit FindingCap(std::size_t max = kDefaultMaxFindings) : max_(max) {}

  std::size_t max() const { return max_; }
  // Findings counted and not kept.
  std::uint64_t dropped() const { return dropped_; }
  bool truncated() const { return dropped_ > 0; }
  // Counts of the findings not kept, by (rule, severity), in rule order.
  const std::map<std::pair<std::string, Severity>, std::uint64_t>& dropped_by_rule() const {
    return by_rule_;
  }

  // Counts one finding that is not kept.
  void CountDropped(std::string_view rule, Severity severity);
  // Adds the counts of `other` (the cap of an earlier stage of the same audit).
  void Merge(const FindingCap& other);

  // Keeps the first max() elements of `v` and counts the rest. `finding` maps an element to its
  // Finding (identity for std::vector<Finding>). Input order is kept. The capacity is kept too:
  // callers trim after every document, and a reallocation each time would cost O(max) per call.
  template <typename T, typename Get>
  void Trim(std::vector<T>* v, Get finding) {
    if (v->size() <= max_) return;
    for (std::size_t i = max_; i < v->size(); ++i) {
      const Finding& f = finding((*v)[i]);
      CountDropped(f.rule, f.severity);
    }
    v->erase(v->begin() + static_cast<std::ptrdiff_t>(max_), v->end());
  }
  void Trim(std::vector<Finding>* v) {
    Trim(v, [](const Finding& f) -> const Finding& { return f; });
  }

  // The error finding that reports the truncation (rule kTruncatedRule), naming how many were not
  // listed, the cap, and the counts by rule (the largest 20, then how many rules more). Only
  // meaningful when truncated().
  Finding TruncationFinding() const;
  // "375000 more finding(s) not listed: at most 25000 are listed (--max-findings)": the SARIF
  // tool notification's text.
  std::string Summary() const;

 private:
  std::size_t max_;
  std::uint64_t dropped_ = 0;
  std::map<std::pair<std::string, Severity>, std::uint64_t> by_rule_;
};

}  // namespace tg::audit
