// The truncation finding lists the rules that lost the most findings first: that is what a reader
// fixes first, and a short list stays readable.
#include "audit/report/finding_cap.h"

#include <fmt/format.h>

#include <algorithm>

namespace tg::audit {

void FindingCap::CountDropped(std::string_view rule, Severity severity) {
  ++dropped_;
  ++by_rule_[{std::string(rule), severity}];
}

void FindingCap::Merge(const FindingCap& other) {
  dropped_ += other.dropped_;
  for (const auto& [key, n] : other.by_rule_) by_rule_[key] += n;
}

std::string FindingCap::Summary() const {
  return fmt::format("{} more finding(s) not listed: at most {} are listed (--max-findings)",
                     dropped_, max_);
}

Finding FindingCap::TruncationFinding() const {
  constexpr std::size_t kListedRules = 20;
  std::vector<std::pair<std::uint64_t, const std::pair<std::string, Severity>*>> order;
  order.reserve(by_rule_.size());
  for (const auto& [key, n] : by_rule_) order.emplace_back(n, &key);
  // Largest count first; ties keep rule order (the map's), so the message is deterministic.
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string counts;
  for (std::size_t i = 0; i < order.size() && i < kListedRules; ++i) {
    counts += fmt::format("{}{} {} ({})", i == 0 ? "" : ", ", order[i].first,
                          order[i].second->first, SeverityName(order[i].second->second));
  }
  if (order.size() > kListedRules) {
    counts += fmt::format(", and {} more rule(s)", order.size() - kListedRules);
  }
  Finding f;
  f.rule = std::string(kTruncatedRule);
  f.severity = Severity::kError;
  f.message =
      fmt::format("{}; by rule: {}. An audit whose findings were not all listed does not pass",
                  Summary(), counts);
  f.fix = fmt::format(
      "fix the findings listed first, or raise --max-findings (at most {}) to list more",
      kMaxMaxFindings);
  return f;
}

}  // namespace tg::audit
